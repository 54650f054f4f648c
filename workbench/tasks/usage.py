"""How often each vocabulary entry of a run (or reference) is used on the project's corpus.

The use case behind the Merges tab's Vocabulary and Unigram piece tables: the run's corpus files
are read again, split into pre-tokens exactly as training did (the run's ``sequences``), and each
distinct pre-token is encoded once with the run's tokenizer (:func:`workbench.core.metrics.vocab_usage`).
A reference tokenizer is counted on every corpus file of the project. Left out: caching and
threads (the window's job runner does both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from workbench.core.metrics import VocabUsage, usage_pretokenizer, vocab_usage
from workbench.corpus.counts import corpus_sources, corpus_word_counts
from workbench.errors import WorkbenchError
from workbench.store import ProjectStore

Source = tuple  # ("run", run_id) | ("ref", ref_id)


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
