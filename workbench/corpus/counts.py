"""Pre-token counts of corpus sources, as training counts them: the one counting path shared by
``workbench train``, the merge browser's corpus statistics and scripts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from workbench.core.count import (
    check_sequences,
    chunks_for,
    count_batches,
    split_lines,
)
from workbench.core.metrics import Progress, ShouldStop
from workbench.core.normalize import make_normalizer
from workbench.errors import WorkbenchError

# Each line (with its line break) is a sequence by default: what tokenizers' train(files) and
# sentencepiece do, and what makes a count independent of how the corpus is cut into files and
# partitions (so a cluster job gives the same table). "documents" keeps whole files / records.
DEFAULT_SEQUENCES = "lines"


def corpus_sources(paths_and_options: Sequence[tuple[str, Mapping]], fingerprints: Sequence[str] = ()):
    """Open the project's corpus files again; returns ``(sources, warnings)``.

    A missing file raises :class:`WorkbenchError` naming it; a file whose fingerprint changed since
    training is read anyway, with a warning (its counts no longer describe the training corpus).
    """
    from workbench.corpus import fingerprint_matches, open_source

    sources, warnings = [], []
    for index, (path, options) in enumerate(paths_and_options):
        if not Path(path).exists():
            raise WorkbenchError(f"{path}: the corpus file is missing (moved or deleted since training): "
                                 "put it back to count token frequencies")
        opts = {k: v for k, v in dict(options).items() if k in ("field", "column", "encoding", "kind")}
        sources.append(open_source(path, **opts))
        if index < len(fingerprints) and fingerprints[index] and \
                not fingerprint_matches(path, fingerprints[index]):
            warnings.append(f"{Path(path).name} changed since training")
    return sources, warnings


def corpus_word_counts(sources: Sequence, *, pretokenizer: str, normalizer: Sequence[str] = (),
                       should_stop: ShouldStop | None = None,
                       progress: Progress | None = None,
                       sequences: str = DEFAULT_SEQUENCES) -> dict[str, int] | None:
    """``{pre-token: count}`` over the files, exactly as training counted them (None if stopped).

    Running text goes through the normalizer and pre-tokenizer; word-count tables are normalized
    and added as they are (their words are already pre-tokens), as :mod:`workbench.tasks.train` does.
    """

    stop = should_stop or (lambda: False)
    report = None if progress is None else (lambda done, total: progress(done, total, "reading the corpus"))
    # Display only (the vocabulary view, the run diff's word split): a table made with other
    # settings is shown as it is rather than refused.
    counts = count_sources(sources, pretokenizer=pretokenizer, normalizer=normalizer, progress=report,
                           should_stop=stop, sequences=sequences, check_tables=False)
    return None if stop() else counts


def source_batches(src, *, pretokenizer: str, sequences: str = DEFAULT_SEQUENCES,
                   should_stop: Callable[[], bool] | None = None) -> Iterator[list[str]]:
    """Batches of independent sequences of one running-text source (see :func:`count_sources`).

    ``lines``: every line with its ``"\n"`` (a record's text is cut into its lines too; the last
    line of a record ends where the record ends). ``documents``: a plain text file is one sequence,
    fed as chunks cut where the pre-tokenizer cannot notice (the carry ends with the file, so
    nothing joins two files); each JSONL record / CSV / Parquet cell is one sequence.
    """
    from workbench.corpus.readers import iter_documents, iter_text

    check_sequences(sequences)
    if src.kind == "text":
        if sequences == "lines":
            for chunk in iter_text(src, should_stop=should_stop):
                yield split_lines(chunk)
        else:
            for chunk in chunks_for(pretokenizer, iter_text(src, should_stop=should_stop)):
                yield [chunk]
        return
    for docs in iter_documents(src, should_stop=should_stop):
        if sequences == "lines":
            yield [line for doc in docs for line in split_lines(doc)]
        else:
            yield list(docs)


def count_sources(sources: Sequence, *, pretokenizer: str, normalizer: Sequence[str] = (), workers: int = 1,
                  progress: Callable[[int, int], None] | None = None,
                  should_stop: Callable[[], bool] | None = None,
                  sequences: str = DEFAULT_SEQUENCES, cache=None,
                  check_tables: bool = True) -> dict[str, int]:
    """``{pre-token: count}`` over corpus sources, as training counts them.

    Running text is cut into sequences (``sequences="lines"`` or ``"documents"``, see
    :func:`source_batches`), normalized and pre-tokenized one sequence at a time, so no pre-token
    crosses a sequence boundary and no separator is invented. Word-count tables are normalized and
    added as they are (their words are already pre-tokens); a ``workbench count`` table made with
    other settings is refused (``check_tables``). ``cache`` (a
    :class:`~workbench.corpus.count_cache.CountCache`) keeps each file's table, keyed by its
    fingerprint and every setting, so counting the same file again is a read.
    ``progress(bytes_done, bytes_total)`` follows the reading. Used by training and by the merge
    browser's corpus statistics, so both see the same table; the order of first appearance over
    the sources in order is kept (the ``first-seen`` tie-break depends on it).
    """
    from workbench.corpus import iter_word_counts
    from workbench.corpus.counts_table import check_counts_settings, read_counts_header

    check_sequences(sequences)
    total = sum(getattr(src, "size", 0) for src in sources) or 1
    done = 0

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(min(done, total), total)

    def count(srcs: Sequence) -> dict[str, int]:
        def batches() -> Iterator[list[str]]:
            for src in srcs:
                yield from source_batches(src, pretokenizer=pretokenizer, sequences=sequences,
                                          should_stop=should_stop)

        # Characters ≈ bytes for progress purposes; exact bytes are reported per file at the end.
        return count_batches(batches(), pretokenizer=pretokenizer, normalizer=tuple(normalizer),
                             workers=workers, on_batch=on_bytes, should_stop=should_stop)

    text_sources = [s for s in sources if s.kind != "wordcounts"]
    counts: dict[str, int] = {}
    if cache is None:
        counts = count(text_sources) if text_sources else {}
    else:
        for src in text_sources:
            if getattr(src, "on_bad_record", "fail") == "skip":
                # A cached table cannot say which records were skipped: read again, so the report is whole.
                add_counts(counts, count([src]))
                continue
            key = cache.key(src, pretokenizer=pretokenizer, normalizer=normalizer, sequences=sequences)
            table = cache.get(key)
            if table is None:
                table = count([src])
                if should_stop is not None and should_stop():
                    return add_counts(counts, table)  # a partial count is never cached
                cache.put(key, table)
            else:
                on_bytes(src.size)
            add_counts(counts, table)
    normalize = make_normalizer(tuple(normalizer))
    for src in sources:
        if src.kind == "wordcounts":
            if check_tables:
                settings = read_counts_header(src)
                if settings is not None:
                    check_counts_settings(settings, pretokenizer, normalizer, sequences, where=str(src.path))
            for word, n in iter_word_counts(src, should_stop=should_stop):
                word = normalize(word)
                counts[word] = counts.get(word, 0) + n
            on_bytes(src.size)
    return counts


def add_counts(into: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    """Add ``more`` to ``into`` in place (new words after the old: first appearance is kept)."""
    if not into:
        into.update(more)  # the first table: a C-level copy
        return into
    get = into.get
    for word, n in more.items():
        into[word] = get(word, 0) + n
    return into
