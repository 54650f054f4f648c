"""The Compare tab's three questions as whole use cases: tokenizers named by SRC, corpus files
named by path with their reader options — what a view (or a command) has in hand.

Each function opens the files (:func:`open_corpus_files`), loads the tokenizers
(:func:`workbench.tasks.sources.load_tokenizer`) and calls :mod:`workbench.tasks.compare`; each
takes ``should_stop`` / ``progress`` hooks and returns None when stopped. What it leaves out:
threads and widgets (the window runs these on its job runner), and the counting itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from workbench.core.expert_metrics import DEFAULT_ALPHA
from workbench.core.metrics import Progress, ShouldStop
from workbench.core.vocab_diff import SplitReport
from workbench.corpus import CorpusSource, open_source
from workbench.store import ProjectStore
from workbench.tasks.compare import (
    CompareResult,
    ResultCache,
    Sweep,
    compare_corpus,
    split_report,
    sweep_files,
    sweep_source,
)
from workbench.tasks.gini_pairs import NONE, gini_pairs, plan_pairs
from workbench.tasks.sources import load_tokenizer

#: A corpus file as the Compare tab keeps it: (path, reader options, language label or "").
FileChoice = tuple[str, Mapping, str]
READER_OPTIONS = ("field", "column", "encoding", "kind")


def open_corpus_files(files: Sequence[FileChoice]) -> tuple[list[CorpusSource], dict[str, str]]:
    """The files as corpus sources (their reader options applied; other keys ignored), and the
    language labels given to some of them, by path."""
    sources, labels = [], {}
    for path, options, lang in files:
        opts = {k: v for k, v in options.items() if k in READER_OPTIONS}
        sources.append(open_source(path, **opts))
        if lang:
            labels[path] = lang
    return sources, labels


def compare_files(tokenizers: Sequence[tuple[str, str]], files: Sequence[FileChoice], *, baseline: str | None,
                  parallel: bool, d: int, cache: ResultCache | None = None, should_stop: ShouldStop | None = None,
                  progress: Progress | None = None, alpha: float = DEFAULT_ALPHA,
                  basis: str = "declared", classic: str = NONE) -> CompareResult | None:
    """Every ``(name, SRC)`` tokenizer counted on every file (:func:`compare_corpus`, with its Rényi
    ``alpha`` and |V| ``basis``).

    ``classic`` (:data:`~workbench.tasks.gini_pairs.AUTO`, a SRC, or empty for none) pairs tokenizers
    with a classic BPE baseline for the Gini before → after view (:mod:`workbench.tasks.gini_pairs`):
    a project's classic BPE run that a frontier run needs is measured too, after the others."""
    sources, labels = open_corpus_files(files)
    pairs, extra = plan_pairs(list(tokenizers), classic)
    loaded = [(name, load_tokenizer(src)) for name, src in [*tokenizers, *extra]]
    result = compare_corpus(loaded, sources, labels=labels, baseline=baseline, parallel=parallel, d=d,
                            cache=cache if cache is not None else ResultCache.default(),
                            should_stop=should_stop, progress=progress, alpha=alpha, basis=basis)
    if result is not None and pairs:
        result.gini_pairs = gini_pairs(pairs, result.per_language, result.totals, parallel=parallel)
    return result


def sweep_file_set(src: str, files: Sequence[FileChoice], *, name: str, points: int, d: int,
                   cache: ResultCache | None = None, should_stop: ShouldStop | None = None,
                   progress: Progress | None = None) -> Sweep | None:
    """The vocabulary-size sweep of tokenizer ``src`` over the files as one held-out text."""
    sources, _labels = open_corpus_files(files)
    tokenizer, pruning = sweep_source(src)
    return sweep_files(tokenizer, sources, name=name, points=points, d=d, pruning=pruning,
                       cache=cache if cache is not None else ResultCache.default(),
                       should_stop=should_stop, progress=progress)


def split_files(a: str, b: str, files: Sequence[FileChoice], *, should_stop: ShouldStop | None = None,
                progress: Progress | None = None) -> SplitReport | None:
    """The words of the files that tokenizers ``a`` and ``b`` split differently."""
    sources, _labels = open_corpus_files(files)
    return split_report(load_tokenizer(a), load_tokenizer(b), sources, should_stop=should_stop, progress=progress)


def project_corpus_files(project: str | Path) -> list[tuple[str, dict]]:
    """The project's distinct corpus files with their reader options (the latest options of a
    file listed twice win), in first-added order: what the Compare tab lists."""
    with ProjectStore.open(Path(project), readonly=True) as store:
        seen: dict[str, dict] = {}
        for ref in store.corpora():
            seen[ref.path] = ref.reader_options
    return list(seen.items())
