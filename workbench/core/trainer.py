"""What every trainer (BPE, WordPiece, Unigram) offers the code that runs it and stores it.

:mod:`workbench.tasks.train` drives a trainer without knowing which model it trains: it reads the
initial vocabulary (with each id's kind) to create the run, iterates :meth:`Trainer.run` — a plain
generator that can be stopped between two steps (napari's worker pattern) — and every ~100 ms
hands the trainer's :class:`TrainLog` to the store's ``RunWriter``, which reads only the entries
added since the last hand-over. At the end :meth:`Trainer.tokenizer` gives the result.

Events: :class:`~workbench.core.model.MergeEvent` (BPE, WordPiece) and :class:`StepEvent` (any
model, e.g. Unigram's pruning rounds) both satisfy :class:`TrainEvent` — ``step``, ``vocab_size``,
``token_count`` and one model-specific ``value`` (a merged pair's frequency, a WordPiece score, a
log-likelihood) whose meaning the trainer states in ``value_name``.

Left out: the algorithms (``bpe``, and later ``wordpiece`` and ``unigram``), how a run's settings
become a trainer (:mod:`workbench.tasks.train`), and the SQL (:mod:`workbench.store.writer`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Callable,
    Iterator,
    Mapping,
    NamedTuple,
    Protocol,
    Sequence,
    runtime_checkable,
)

if TYPE_CHECKING:  # the run writer's process imports this module for StepRecord and TrainLog only
    from workbench.core.model import Tokenizer

ShouldStop = Callable[[], bool]


class TrainingCancelled(Exception):
    """Stopped while the trainer was still being built (a long preparation, e.g. Unigram cutting
    millions of lines into words): there is no model to store yet."""


def stop_checker(should_stop: Callable[[], bool] | None, every: int = 4096) -> Callable[[int], None]:
    """``check(i)``: look at ``should_stop`` every ``every`` items of a long loop, and raise
    :class:`TrainingCancelled` when it says so (a cheap bit test otherwise)."""
    if should_stop is None:
        return lambda _i: None
    mask = every - 1

    def check(i: int) -> None:
        if not i & mask and should_stop():
            raise TrainingCancelled
    return check


@runtime_checkable
class TrainEvent(Protocol):
    """One step of training as a trainer reports it; ``step`` is 1-based."""

    @property
    def step(self) -> int: ...

    @property
    def vocab_size(self) -> int: ...  # vocabulary size after this step

    @property
    def token_count(self) -> int: ...  # tokens in the whole training corpus after this step

    @property
    def value(self) -> float: ...  # the model's number for this step (see Trainer.value_name)


@dataclass(frozen=True, slots=True)
class StepEvent:
    """A step of a model that does not merge pairs (Unigram's EM / pruning rounds)."""

    step: int
    vocab_size: int
    token_count: int
    value: float  # e.g. the corpus log-likelihood after this round


class LogSlice(NamedTuple):
    """The log entries ``start`` … ``end - 1``: what one store batch holds."""

    start: int
    end: int
    merges: Sequence[tuple[int, int, int]]
    frequencies: Sequence[int]
    token_counts: Sequence[int]
    pieces: Sequence[bytes]  # the piece of each entry's new id
    values: Sequence[float] = ()  # each entry's TrainLog.values, or () when the log keeps none
    extras: Sequence[tuple[int, str]] = ()  # (rank, JSON object text) of the entries that carry one


class StepRecord(NamedTuple):
    """A step that is not a merge, as the store's ``run_steps`` keeps it.

    ``phase`` is ``"em"``, ``"prune"`` or ``"final"`` (Unigram); ``value`` the model's number
    for the step (NaN when it has none — the store keeps NULL).
    """

    step: int
    phase: str
    vocab_size: int
    token_count: int
    value: float


@dataclass
class TrainLog:
    """The append-only record of a run, owned (and appended to) by its trainer.

    One entry per step, rank = index: ``merges[i]`` is ``(left, right, new)`` (the ids a merge
    joined and the id it made), ``frequencies[i]`` the integer the store keeps beside it (BPE: the
    pair's weighted count when merged), ``token_counts[i]`` the corpus token count after the step.
    ``vocab`` is the piece of every id, growing as merges add pieces; its first entries are the
    initial vocabulary. Entries are never changed or removed, so a reader that remembers how many
    it has taken can read just the new tail with :meth:`since` — that is how the store's writer
    costs the trainer nothing per step.

    The lists are public so a trainer's hot loop can append to them directly (a method call per
    merge is measurable there); ``token_counts`` is appended last, so ``len(log)`` never counts a
    half-written entry.

    Two optional records feed the store's ``run_steps`` table (schema 2):

    * ``values`` — a float per merge that ``frequencies`` cannot hold (WordPiece's likelihood
      score), appended before ``token_counts`` like the other columns. ``None`` (BPE) means none:
      the store then writes nothing per merge beyond the merges row.
    * ``steps`` — the steps of a model that does not merge (Unigram's EM rounds, pruning steps and
      final cut) as :class:`StepRecord`, appended once per step; such a model leaves ``merges``
      empty, so ``len(log)`` stays 0. A reader takes the new ones with :meth:`steps_since`.
    """

    vocab: list[bytes]
    merges: list[tuple[int, int, int]] = field(default_factory=list)
    frequencies: list[int] = field(default_factory=list)
    token_counts: list[int] = field(default_factory=list)
    values: list[float] | None = None
    steps: list[StepRecord] = field(default_factory=list)
    # ``extras``: (rank, JSON object text) for the rare merge whose row carries more (PickyBPE's
    # removals: the store's ``merges.extra``), appended in rank order before the merge's token count.
    extras: list[tuple[int, str]] | None = None

    def __len__(self) -> int:
        return len(self.token_counts)

    def append(self, merge: tuple[int, int, int], frequency: int, token_count: int) -> None:
        """Record one step (for trainers whose loop is not the bottleneck)."""
        self.merges.append(merge)
        self.frequencies.append(frequency)
        self.token_counts.append(token_count)

    def since(self, start: int) -> LogSlice:
        """Entries from ``start`` to the current end (empty when nothing is new)."""
        end = len(self)
        new = self.merges[start:end]
        vocab = self.vocab
        extras: Sequence[tuple[int, str]] = ()
        if self.extras:
            at = bisect.bisect_left(self.extras, (start, ""))
            extras = [e for e in self.extras[at:] if e[0] < end]
        return LogSlice(start, end, new, self.frequencies[start:end], self.token_counts[start:end],
                        [vocab[n] for _, _, n in new],
                        self.values[start:end] if self.values is not None else (), extras)

    def steps_since(self, start: int) -> list[StepRecord]:
        """The non-merge steps recorded after the first ``start`` (empty when nothing is new)."""
        return self.steps[start:]


class Trainer(Protocol):
    """What :mod:`workbench.tasks.train` needs from a trainer; :class:`~workbench.core.bpe.BpeTrainer`
    is the reference implementation.

    Constructed from a ``{pre-token: count}`` table (in order of first appearance) and the model's
    config; a bad setting found only then (a vocabulary smaller than the corpus alphabet, say)
    raises :class:`~workbench.errors.ConfigError` naming the RunSpec field.
    """

    # Read-only attributes (properties here, so plain attributes of an implementation match).
    @property
    def value_name(self) -> str: ...  # what TrainEvent.value means: "frequency", "score", "log_likelihood" …

    @property
    def log(self) -> TrainLog: ...

    @property
    def special_tokens(self) -> Mapping[str, int]: ...  # token → id (specials take the first ids)

    @property
    def initial_vocab(self) -> tuple[bytes, ...]: ...  # the vocabulary before the first step

    @property
    def initial_kinds(self) -> tuple[str, ...]: ...  # "special" or "base" for each initial id

    @property
    def initial_size(self) -> int: ...  # vocabulary size before the first step (Unigram: its seed pieces)

    @property
    def initial_token_count(self) -> int: ...  # corpus tokens before the first step

    @property
    def word_types(self) -> int: ...  # distinct pre-tokens trained on

    @property
    def target(self) -> int: ...  # steps the run is expected to make (progress, ETA); 0 = unknown

    def run(self, should_stop: ShouldStop | None = None) -> Iterator[TrainEvent]:
        """Train, yielding one event per step; returns early once ``should_stop()`` is true."""
        ...

    def tokenizer(self, name: str = "") -> Tokenizer:
        """The tokenizer as trained so far (callable mid-run)."""
        ...
