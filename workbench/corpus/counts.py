"""Pre-token counts of corpus sources, as training counts them: the one counting path shared by
``workbench train``, the merge browser's corpus statistics and scripts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from workbench.core.count import (
    check_sequences,
    chunks_for,
    count_batches,
    split_lines,
)
from workbench.core.metrics import Progress, ShouldStop
from workbench.core.normalize import make_normalizer
from workbench.corpus.fingerprint import FileState, check_unchanged, file_state
from workbench.errors import WorkbenchError

# Each line (with its line break) is a sequence by default: what tokenizers' train(files) and
# sentencepiece do, and what makes a count independent of how the corpus is cut into files and
# partitions (so a cluster job gives the same table). "documents" keeps whole files / records.
DEFAULT_SEQUENCES = "lines"
PARALLEL_COUNT_BYTES = 8 << 20  # below this a second counting process costs more than it saves


def counting_workers(total_bytes: int) -> int:
    """The counting processes a run uses for a corpus of ``total_bytes`` on disk (two at most: the
    trainer is one process, and a second reader already keeps it fed; the pre-flight estimate
    divides the counting time by the same number)."""
    return 2 if total_bytes >= PARALLEL_COUNT_BYTES and (os.cpu_count() or 1) > 1 else 1

# Below this a file is counted rather than cached: counting 16 KB takes about what creating,
# renaming and later reading back a cache entry does, and 100,000 tiny entries would only fill
# the cache folder. Consecutive small files are counted together, as without a cache.
MIN_CACHED_BYTES = 16 << 10
# Test hook: "MARKER:K" pauses the first read that gets there before its K-th ~1 MB chunk (0: after
# the fingerprint, before the first byte) until the file MARKER, created then, is deleted (a minute
# at most), so a test can change the file at a known point of the read. Once per process.
READ_PAUSE_ENV = "WORKBENCH_TEST_READ_PAUSE"
# A corpus of several files each at most this big (on disk) is counted a file per process: each
# worker reads, decodes (zstd, JSON) and counts its own files and hands back one table per file.
# With one reader feeding the workers, reading a .jsonl.zst shard (a third of its cost) ran in the
# parent alone and the parent was the bottleneck (issue 22: 1 GB of shards, parent 3× a worker's CPU).
FILE_PER_PROCESS_BYTES = 256 << 20
_FILE_JOBS: list[tuple[Any, str, tuple[str, ...], str]] = []  # set before the pool forks


def _count_file_job(index: int, should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    src, pretokenizer, normalizer, sequences = _FILE_JOBS[index]
    return count_batches(source_batches(src, pretokenizer=pretokenizer, sequences=sequences, should_stop=should_stop),
                         pretokenizer=pretokenizer, normalizer=normalizer, should_stop=should_stop)


def count_files_in_processes(srcs: Sequence, *, pretokenizer: str, normalizer: tuple[str, ...], sequences: str,
                             workers: int, on_file: Callable[[int], None] | None = None,
                             should_stop: Callable[[], bool] | None = None,
                             flush_at: int = 0, flush: Callable[[dict[str, int]], None] | None = None
                             ) -> dict[str, int]:
    """:func:`~workbench.core.count.count_batches` over whole files, a file per worker process: the
    tables come back in file order and are added in it, so the result (row order included) is the
    one-reader count's. ``on_file(size)`` after each file; ``should_stop`` is asked every 0.2 s.
    Bounded memory as ``count_batches``: ``flush`` whenever the sum holds ``flush_at`` pre-tokens."""
    from collections import Counter

    from workbench.core.count import ordered_pool_map

    _FILE_JOBS[:] = [(src, pretokenizer, normalizer, sequences) for src in srcs]
    counts: Counter = Counter()
    try:
        # The trainer's own share of the files listens to should_stop between batches (a stopped
        # count is never used, so a file cut short there does no harm).
        results = ordered_pool_map(_count_file_job, range(len(srcs)), workers=workers,
                                   initargs=(pretokenizer, normalizer), should_stop=should_stop,
                                   own=lambda index: _count_file_job(index, should_stop))
        for src, table in zip(srcs, results):  # a stopped count ends early and is never used
            if not counts:
                counts = Counter(table)
            else:
                counts.update(table)  # in file order: first appearance is kept
            del table
            if on_file is not None:
                on_file(src.size)
            if flush is not None and 0 < flush_at <= len(counts):
                flush(dict(counts))
                counts = Counter()
    finally:
        _FILE_JOBS.clear()
    return dict(counts)


def _file_per_process(srcs: Sequence, processes: int, flush_at: int) -> bool:
    """Whether :func:`count_files_in_processes` may count ``srcs``: several files, none large, none
    read under ``skip`` (its report of skipped records lives in the reading process), no test pause,
    and — under a bound — a file's own table (≈ its size in entries at worst) far under the bound."""
    return (processes > 1 and len(srcs) > 1 and not os.environ.get(READ_PAUSE_ENV)
            and all(src.kind != "wordcounts" and getattr(src, "on_bad_record", "fail") != "skip"
                    and src.size <= FILE_PER_PROCESS_BYTES for src in srcs)
            and (flush_at <= 0 or max(src.size for src in srcs) * processes <= flush_at * 8))


def corpus_sources(paths_and_options: Sequence[tuple[str, Mapping]], fingerprints: Sequence[str] = ()):
    """Open the project's corpus files again; returns ``(sources, warnings)``.

    A missing file raises :class:`WorkbenchError` naming it; a file whose fingerprint changed since
    training is read anyway, with a warning (its counts no longer describe the training corpus).
    """
    from workbench.corpus import fingerprint_matches, open_source
    from workbench.corpus.location import is_url

    sources, warnings = [], []
    for index, (path, options) in enumerate(paths_and_options):
        if not is_url(path) and not Path(path).exists():  # a location says itself what is missing
            raise WorkbenchError(f"{path}: the corpus file is missing (moved or deleted since training): "
                                 "put it back to count token frequencies")
        opts = {k: v for k, v in dict(options).items() if k in ("field", "column", "encoding", "kind")}
        sources.append(open_source(path, **opts))
        if index < len(fingerprints) and fingerprints[index] and \
                not fingerprint_matches(path, fingerprints[index]):
            warnings.append(f"{path.rsplit('/', 1)[-1] if is_url(path) else Path(path).name} changed since training")
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
                   should_stop: Callable[[], bool] | None = None,
                   progress: Callable[[int, int], None] | None = None) -> Iterator[list[str]]:
    """Batches of independent sequences of one running-text source (see :func:`count_sources`).

    ``lines``: every line with its ``"\n"`` (a record's text is cut into its lines too; the last
    line of a record ends where the record ends). ``documents``: a plain text file is one sequence,
    fed as chunks cut where the pre-tokenizer cannot notice (the carry ends with the file, so
    nothing joins two files); each JSONL record / CSV / Parquet cell is one sequence.
    ``progress(position, size)`` is the reader's: where in the (possibly compressed) file it is.
    """
    from workbench.corpus.readers import iter_documents, iter_text

    check_sequences(sequences)
    if src.kind == "text":
        chunks = _paused_for_tests(iter_text(src, should_stop=should_stop, progress=progress))
        if sequences == "lines":
            for chunk in chunks:
                lines = split_lines(chunk)
                del chunk  # neither this chunk's text nor its lines stay alive while the next is read
                yield lines
                del lines
        else:
            for chunk in chunks_for(pretokenizer, chunks):
                yield [chunk]
        return
    for docs in _paused_for_tests(iter_documents(src, should_stop=should_stop, progress=progress)):
        if sequences == "lines":
            yield [line for doc in docs for line in split_lines(doc)]
        else:
            yield list(docs)


def count_sources(sources: Sequence, *, pretokenizer: str, normalizer: Sequence[str] = (), workers: int = 1,
                  progress: Callable[[int, int], None] | None = None,
                  should_stop: Callable[[], bool] | None = None,
                  sequences: str = DEFAULT_SEQUENCES, cache=None,
                  check_tables: bool = True, states: dict[str, FileState] | None = None,
                  memory_limit: int | None = None, into=None) -> dict[str, int]:
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

    Every file read is fingerprinted before and checked after (:func:`~workbench.corpus.fingerprint.
    check_unchanged`): a file written to while it was read fails the call with one line naming it —
    its counts are neither returned nor cached. ``states`` receives each file's
    :class:`~workbench.corpus.fingerprint.FileState` (by ``str(path)``), the fingerprint of exactly
    what was counted, for the caller to record. With a cache, files under :data:`MIN_CACHED_BYTES`
    are counted together as without one, and ``should_stop`` is asked before every file, so
    100,000 small files are one linear, cancellable pass.

    Bounded memory: with ``memory_limit`` (bytes), partial tables are spilled to disk, sorted, and
    merged at the end (:class:`~workbench.corpus.spill.SpillingCounts`): the result is the same
    table, row order included. ``into`` (a ``SpillingCounts``) receives the counts instead, for a
    caller that streams the table out (``workbench count``); the return value is then ``{}``. A
    file whose count spilled is not cached (its table was never whole in memory).
    """
    from workbench.corpus import iter_word_counts
    from workbench.corpus.counts_table import check_counts_settings, counts_settings, read_counts_header

    check_sequences(sequences)
    stop = should_stop or (lambda: False)
    seen: dict[str, FileState] = {} if states is None else states
    total = sum(getattr(src, "size", 0) for src in sources) or 1
    done = 0

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(min(done, total), total)

    def count(srcs: Sequence, processes: int) -> dict[str, int]:
        def batches() -> Iterator[list[str]]:
            for src in srcs:
                yield from source_batches(src, pretokenizer=pretokenizer, sequences=sequences,
                                          should_stop=should_stop)

        if _file_per_process(srcs, processes, flushing.get("flush_at", 0)):
            return count_files_in_processes(srcs, pretokenizer=pretokenizer, normalizer=tuple(normalizer),
                                            sequences=sequences, workers=processes, on_file=on_bytes,
                                            should_stop=should_stop, **flushing)
        # Characters ≈ bytes for progress purposes; exact bytes are reported per file at the end.
        return count_batches(batches(), pretokenizer=pretokenizer, normalizer=tuple(normalizer),
                             workers=processes, on_batch=on_bytes, should_stop=should_stop, **flushing)

    def before(srcs: Sequence) -> dict[str, FileState]:
        return {str(src.path): file_state(src.path) for src in srcs}

    def after(taken: Mapping[str, FileState]) -> None:
        if stop():
            return  # a stopped count is never used nor cached
        for path, state in taken.items():
            check_unchanged(path, state)
        seen.update(taken)

    def read_unchanged(srcs: Sequence, processes: int) -> dict[str, int]:
        taken = before(srcs)
        try:
            table = count(srcs, processes)
        except WorkbenchError:
            after(taken)  # a file cut mid-character is a file that changed, not a bad file
            raise
        after(taken)
        return table

    def uncached(srcs: Sequence) -> dict[str, int]:
        if not srcs:
            return {}
        return read_unchanged(srcs, workers if sum(src.size for src in srcs) >= PARALLEL_COUNT_BYTES else 1)

    from workbench.corpus.spill import SpillingCounts

    acc = into if into is not None else SpillingCounts(memory_limit) if memory_limit is not None else None
    spills = [0]

    def spill(table: dict[str, int]) -> None:
        assert acc is not None
        spills[0] += 1
        acc.add(table)

    flushing: dict[str, Any] = {"flush_at": acc.cap, "flush": spill} if acc is not None else {}

    def add(table: dict[str, int]) -> dict[str, int]:
        if acc is None:
            return add_counts(counts, table)
        acc.add(table)
        return counts

    def finished() -> dict[str, int]:
        if acc is None or into is not None:
            return counts
        try:
            return acc.result()
        finally:
            acc.close()

    text_sources = [s for s in sources if s.kind != "wordcounts"]
    counts: dict[str, int] = {}
    if cache is None:
        add(uncached(text_sources))
    else:
        settings = counts_settings(pretokenizer, normalizer, sequences)
        pending: list = []  # small files and files read under "skip", counted together in order
        for src in text_sources:
            if stop():
                return finished()
            # A cached table cannot say which records were skipped: read again, so the report is whole.
            if src.size < MIN_CACHED_BYTES or getattr(src, "on_bad_record", "fail") == "skip":
                pending.append(src)
                continue
            add(uncached(pending))
            pending = []
            if stop():
                return finished()
            taken = before([src])
            key = cache.key(src, pretokenizer=pretokenizer, normalizer=normalizer, sequences=sequences,
                            settings=settings, file_fingerprint=taken[str(src.path)].fingerprint)
            table = cache.get(key, label=str(src.path))
            if table is None:
                # A file changed while it was read fails in read_unchanged, before anything is cached.
                spilled_before = spills[0]
                table = read_unchanged([src], workers if src.size >= PARALLEL_COUNT_BYTES else 1)
                if stop():
                    add(table)
                    return finished()  # a partial count is never cached
                if spills[0] == spilled_before:
                    cache.put(key, table)
            else:
                seen.update(taken)  # the entry is the count of exactly these bytes
                on_bytes(src.size)
            add(table)
        add(uncached(pending))
    normalize = make_normalizer(tuple(normalizer))
    for src in sources:
        if src.kind == "wordcounts":
            if check_tables:
                table_settings = read_counts_header(src)
                if table_settings is not None:
                    check_counts_settings(table_settings, pretokenizer, normalizer, sequences, where=str(src.path))
            taken = before([src])
            words: dict[str, int] = {}
            try:
                for word, n in iter_word_counts(src, should_stop=should_stop):
                    word = normalize(word)
                    words[word] = words.get(word, 0) + n
            except WorkbenchError:
                after(taken)
                raise
            after(taken)
            add(words)
            on_bytes(src.size)
    return finished()


_PAUSED: list[bool] = []  # the hook pauses once per process


def _paused_for_tests(items: Iterator) -> Iterator:
    """``items``, with the pause of :data:`READ_PAUSE_ENV` before the chosen chunk (a no-op unset)."""
    hook = os.environ.get(READ_PAUSE_ENV)
    if not hook or _PAUSED:
        yield from items
        return
    marker, _, at = hook.rpartition(":")
    index = 0
    while True:
        if index == int(at) and not _PAUSED:
            _PAUSED.append(True)
            Path(marker).touch()
            deadline = time.monotonic() + 60.0
            while Path(marker).exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        try:
            item = next(items)
        except StopIteration:
            return
        yield item
        index += 1


def add_counts(into: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    """Add ``more`` to ``into`` in place (new words after the old: first appearance is kept)."""
    if not into:
        into.update(more)  # the first table: a C-level copy
        return into
    get = into.get
    for word, n in more.items():
        into[word] = get(word, 0) + n
    return into
