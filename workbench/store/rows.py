"""Frozen rows the store hands out, so views and the CLI never see an ``sqlite3.Row``.

Timestamps are Unix seconds (``float``), JSON columns come back as ``dict``. Pieces are ``bytes``;
turning them into display text is the view's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

RUN_STATUSES = ("running", "finished", "cancelled", "interrupted", "failed")


@dataclass(frozen=True)
class CorpusRef:
    """A corpus file the project refers to (the text itself stays where it is)."""

    id: int
    path: str
    size: int
    mtime: float
    fingerprint: str
    reader_options: dict[str, Any]
    added: float


@dataclass(frozen=True)
class RunInfo:
    """One training run. ``status`` reads ``interrupted`` for a ``running`` run whose process died.

    ``damage`` is empty, or the one line saying which column of the run's row is damaged (a project
    edited outside the workbench): the run is still listed, its settings and timings read as empty,
    and nothing can be done with it (:mod:`workbench.store.validate`).
    """

    id: int
    name: str
    status: str
    settings: dict[str, Any]
    vocab_size: int
    merge_count: int
    started: float
    ended: float | None
    timings: dict[str, Any]
    error: str | None
    corpus_ids: tuple[int, ...]
    damage: str = ""

    @property
    def merges_nothing(self) -> bool:
        """A model whose steps are not merges (Unigram): it has no merge count to show."""
        return self.settings.get("model") == "unigram"


@dataclass(frozen=True, slots=True)
class MergeRow:
    """One merge with its pieces resolved, as the merge table shows it."""

    rank: int
    left: int
    right: int
    new_id: int
    frequency: int
    left_piece: bytes
    right_piece: bytes
    piece: bytes


@dataclass(frozen=True, slots=True)
class StepRow:
    """Metrics after one training step; ``extra`` holds metrics added after schema 1."""

    step: int
    vocab_size: int
    token_count: int
    frequency: int
    extra: Mapping[str, Any] = field(default_factory=dict)


#: What a ``run_steps`` row's ``phase`` says: a Unigram EM round, pruning step or final cut, or a
#: merge (WordPiece, whose likelihood score the merges row has no column for).
STEP_PHASES = ("em", "prune", "final", "merge")


@dataclass(frozen=True, slots=True)
class RunStepRow:
    """One ``run_steps`` row: a step that is not a merge, or a merge's float value (schema 2).

    ``value`` is the model's number for the step (Unigram: the corpus log-likelihood; WordPiece:
    the merged pair's likelihood score), ``None`` when the step has none (a pruning step).
    """

    step: int
    phase: str
    vocab_size: int
    token_count: int
    value: float | None


@dataclass(frozen=True)
class ReferenceInfo:
    """An imported reference tokenizer (``tokenizer.json``, ``.tiktoken``, GPT-2 files, ...)."""

    id: int
    name: str
    format: str
    source_path: str
    sha256: str
    vocab_size: int
    merge_count: int
    added: float
