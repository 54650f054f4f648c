"""Two runs, or a run and a reference tokenizer, compared: the use case behind the Merges tab's Compare view.

Tokens only in A, only in B, and shared ones with their rank shift come from
:func:`workbench.core.vocab_diff.diff_vocab`; the corpus words that split differently, most frequent
first, from :func:`workbench.core.vocab_diff.split_differences` over the words (runs of letters and
digits, and of punctuation) of A's training corpus (B's when A is a reference; all project corpora
when both are), each encoded after a space as inside running text. Left out: threads and caching
(the window's job runner runs it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from workbench.core.vocab_diff import SplitReport, VocabDiff, diff_vocab, split_differences
from workbench.corpus.counts import corpus_sources, corpus_word_counts
from workbench.store import ProjectStore

Source = tuple  # ("run", run_id) | ("ref", ref_id)

WORD_PRETOKENIZER = "whitespace"  # words and punctuation runs, whitespace dropped


@dataclass(frozen=True)
class DiffResult:
    a: Source
    b: Source
    vocab: VocabDiff
    words: SplitReport | None
    corpus_note: str


def diff_sources(path: str | Path, a: Source, b: Source, *, words: bool = True,
                 should_stop: Callable[[], bool] | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> DiffResult | None:
    """Load both tokenizers with a fresh read-only connection (any thread), diff their vocabularies
    and, when ``words``, compare how they split the corpus words; None when stopped."""
    with ProjectStore.open(Path(path), readonly=True) as store:
        def load(src: Source):
            return store.load_tokenizer(src[1]) if src[0] == "run" else store.load_reference(src[1])

        ta, tb = load(a), load(b)
        run_src = a if a[0] == "run" else b if b[0] == "run" else None
        if run_src is not None:
            wanted = set(store.run(run_src[1]).corpus_ids)
            refs = [c for c in store.corpora() if c.id in wanted]
            note = f"words of the training corpus of run {run_src[1]}, each encoded after a space"
        else:
            refs = list({c.path: c for c in store.corpora()}.values())
            note = "words of the project's corpus files, each encoded after a space"
    vocab = diff_vocab(ta, tb)
    report = None
    if words and refs:
        sources, warnings = corpus_sources([(c.path, c.reader_options) for c in refs],
                                           [c.fingerprint for c in refs])
        counts = corpus_word_counts(sources, pretokenizer=WORD_PRETOKENIZER, should_stop=should_stop,
                                    progress=progress)
        if counts is None:
            return None
        report = split_differences(ta, tb, counts, should_stop=should_stop, progress=progress)
        if report is None:
            return None
        if warnings:
            note += " (" + "; ".join(warnings) + ")"
    elif words:
        note = "no corpus files are recorded, so words were not compared"
    return DiffResult(a, b, vocab, report, note)
