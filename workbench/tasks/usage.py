"""How often each vocabulary entry of a run (or reference) is used on the project's corpus.

The use case behind the Merges tab's Vocabulary and Unigram piece tables: the run's corpus files
are read again, split into pre-tokens exactly as training did (the run's ``sequences``), and each
distinct pre-token is encoded once with the run's tokenizer (:func:`workbench.core.metrics.vocab_usage`).
A reference tokenizer is counted on every corpus file of the project. A finished count is kept
(:func:`remember_usage`) under what it depends on (:func:`usage_cache_key`: the project, the
source, its vocabulary size and its corpus fingerprints), so the window shows it again at once.
Left out: threads (the window's job runner).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Callable

from workbench.core.metrics import VocabUsage, usage_pretokenizer, vocab_usage
from workbench.corpus.counts import corpus_sources, corpus_word_counts
from workbench.errors import WorkbenchError
from workbench.store import ProjectStore
from workbench.store.browse import corpus_fingerprints

Source = tuple  # ("run", run_id) | ("ref", ref_id)

log = logging.getLogger(__name__)

#: (project path, source, vocabulary size, corpus fingerprints) → (usage, warnings)
_USAGE_CACHE: dict[tuple, tuple[VocabUsage, list[str]]] = {}
_CACHE_LIMIT = 8


def usage_cache_key(conn: sqlite3.Connection | None, path: Path | None, source: Source | None,
                    size: int) -> tuple | None:
    """What a count depends on: (project, source, vocabulary size, corpus fingerprints); None if
    the fingerprints cannot be read (the count then runs instead of being reused)."""
    if source is None or path is None or conn is None:
        return None
    try:
        fps = corpus_fingerprints(conn, source)
    except Exception as exc:  # noqa: BLE001 - no cache key: the count runs instead of being reused
        log.warning("cannot read the corpus fingerprints of %s in %s: %s", source, path, exc)
        return None
    return (str(path), tuple(source), size, fps)


def cached_usage(key: tuple | None) -> tuple[VocabUsage, list[str]] | None:
    """A count made before for ``key`` (by the Vocabulary tab or the Unigram piece table)."""
    return _USAGE_CACHE.get(key) if key is not None else None


def remember_usage(key: tuple | None, result: tuple[VocabUsage, list[str]]) -> None:
    if key is None:
        return
    _USAGE_CACHE[key] = result
    while len(_USAGE_CACHE) > _CACHE_LIMIT:
        _USAGE_CACHE.pop(next(iter(_USAGE_CACHE)))


def count_usage(path: str | Path, source: Source, *, should_stop: Callable[[], bool] | None = None,
                progress: Callable[[int, int, str], None] | None = None) -> tuple[VocabUsage, list[str]] | None:
    """``(usage, warnings)`` — warnings name corpus files that changed or went missing since
    training — or None when stopped. Opens its own read-only connection (any thread)."""
    with ProjectStore.open(Path(path), readonly=True) as store:
        sequences = "documents"  # references and runs stored before sequences existed
        if source[0] == "run":
            tok = store.load_tokenizer(source[1])
            run = store.run(source[1])
            wanted = set(run.corpus_ids)
            sequences = run.settings.get("sequences", "documents")
            refs = [c for c in store.corpora() if c.id in wanted]
            what = "this run"
        else:
            tok = store.load_reference(source[1])
            refs = list({c.path: c for c in store.corpora()}.values())
            what = "this project"
    if not refs:
        raise WorkbenchError(f"{what} has no corpus files recorded, so there is nothing to count "
                             "(runs trained from the command line record theirs; add corpus files first)")
    sources, warnings = corpus_sources([(c.path, c.reader_options) for c in refs], [c.fingerprint for c in refs])
    pretokenizer, normalizer = usage_pretokenizer(tok)
    counts = corpus_word_counts(sources, pretokenizer=pretokenizer, normalizer=normalizer,
                                sequences=sequences, should_stop=should_stop, progress=progress)
    if counts is None:
        return None
    usage = vocab_usage(tok, counts, should_stop=should_stop, progress=progress)
    return None if usage is None else (usage, warnings)
