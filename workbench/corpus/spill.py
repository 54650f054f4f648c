"""Counting within a memory bound: partial count tables spilled to disk, sorted, and merged.

:class:`SpillingCounts` adds count tables in corpus order (what :func:`~workbench.corpus.counts.
count_sources` produces, file by file and batch by batch). When the table in memory reaches
``cap`` distinct pre-tokens — the bound divided by :data:`BYTES_PER_ENTRY` — it is written to a
temporary *run* file sorted by pre-token, each row carrying where the pre-token first appeared
(the run's number and its position in that run), and memory starts empty again. At the end the
runs are merged (a k-way merge by pre-token adds the counts of each and keeps its earliest
appearance), then put back in order of first appearance by a second external merge — so the
result is *identical* to counting in memory, row order included (the ``first-seen`` tie-break reads
it). ``workbench count`` streams that into its table, so its peak memory depends on the bound, not
on the corpus; training gets the table as a dict (the trainer must hold it anyway).

The bound comes from ``--max-memory`` or ``WORKBENCH_COUNT_MEMORY`` (e.g. ``2G``, ``512M``), else
:data:`DEFAULT_SHARE` of the machine's RAM. :data:`BYTES_PER_ENTRY` is measured: the shared corpora's
count table holds ~99 bytes per distinct pre-token by ``sys.getsizeof`` (dict slot, key, count),
and the resident memory grows ~1.3–2× that while counting (allocator slack, the reader's chunks) —
see :mod:`workbench.tasks.calibration`. Two tables of ``cap`` entries can coexist for a moment
(the batch counter and the sum), so ``cap`` is half the bound over the per-entry bytes.

Left out: compressing run files; spilling while a trainer runs (training needs its table in memory;
train on a sample or count with the cluster recipe when it does not fit).
"""

from __future__ import annotations

import heapq
import itertools
import os
import re
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Iterator, Mapping

from workbench.corpus import records
from workbench.errors import WorkbenchError

BYTES_PER_ENTRY = 200
MAX_RUNS = 128  # runs merged at once (one open file each)
DEFAULT_SHARE = 0.5
MEMORY_ENV = "WORKBENCH_COUNT_MEMORY"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str, where: str = "--max-memory") -> int:
    """``"512M"``, ``"2G"``, ``"1.5GB"``, ``"100000"`` → bytes; one clear line otherwise."""
    match = _SIZE.match(str(text))
    if not match:
        raise WorkbenchError(f"{where} {text!r}: give a size such as 512M, 2G or a number of bytes")
    value = float(match.group(1)) * 1024 ** " kmgt".index((match.group(2) or " ").lower())
    if value < 1:
        raise WorkbenchError(f"{where} {text!r}: the bound must be at least 1 byte")
    return int(value)


def default_limit() -> int:
    """The counting bound: ``WORKBENCH_COUNT_MEMORY``, else :data:`DEFAULT_SHARE` of the RAM."""
    given = os.environ.get(MEMORY_ENV)
    if given:
        return parse_size(given, MEMORY_ENV)
    return int(_total_memory() * DEFAULT_SHARE)


def _total_memory() -> int:
    """The machine's RAM in bytes: ``sysconf`` where there is one (the MemTotal psutil reads too),
    so counting does not import psutil (1.3 MB of a small run's resident memory) to ask."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and size > 0:
            return pages * size
    except (AttributeError, ValueError, OSError):  # Windows has no sysconf
        pass
    import psutil

    return int(psutil.virtual_memory().total)


def cap_for(limit: int) -> int:
    """Distinct pre-tokens held in memory before a spill, for a bound of ``limit`` bytes."""
    return max(1, limit // (2 * BYTES_PER_ENTRY))


class SpillingCounts:
    """Count tables added in corpus order, within ``limit`` bytes (see the module docstring)."""

    def __init__(self, limit: int, folder: str | os.PathLike[str] | None = None):
        self.cap = cap_for(limit)
        self.current: dict[str, int] = {}
        self.runs: list[Path] = []
        self._folder = folder
        self._tmp: Path | None = None
        self.distinct = self.tokens = 0  # of the merged table, once merged
        self._files = 0  # merged files made (each gets a new name)

    # ---- adding --------------------------------------------------------------------------------
    def add(self, table: Mapping[str, int]) -> None:
        """Add a table (its words new to the sum go after the old ones) and spill if full."""
        current = self.current
        if not current:
            current.update(table)
        else:
            get = current.get
            for word, n in table.items():
                current[word] = get(word, 0) + n
        if len(current) >= self.cap:
            self.spill()

    def spill(self) -> None:
        """Write the table in memory as a run sorted by (escaped) pre-token, and empty it."""
        if not self.current:
            return
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="workbench-spill-", dir=self._folder))
            # Removed by close(), or when this object goes (a count that failed half-way).
            weakref.finalize(self, shutil.rmtree, str(self._tmp), True)
        run = len(self.runs)
        escape = records.escape_count_word
        rows = sorted((escape(word), n, i) for i, (word, n) in enumerate(self.current.items()))
        path = self._tmp / f"run{run:05d}.tsv"
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(f"{word}\t{n}\t{run}\t{i}\n" for word, n, i in rows)
        self.runs.append(path)
        self.current = {}
        if len(self.runs) >= MAX_RUNS:  # one open file per run when merging: keep them few
            self._compact()

    def _compact(self) -> None:
        """Merge every run into one (rows keep the earliest appearance they carry)."""
        assert self._tmp is not None
        self._files += 1
        path = self._tmp / f"merged{self._files:05d}.tsv"
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(f"{w}\t{n}\t{r}\t{i}\n" for w, n, r, i in _merged_by_word(self.runs))
        for old in self.runs:
            old.unlink()
        self.runs = [path]

    @property
    def spilled(self) -> bool:
        return bool(self.runs)

    # ---- results -------------------------------------------------------------------------------
    def result(self) -> dict[str, int]:
        """The whole table in order of first appearance (in memory: for training)."""
        if not self.runs:
            return self.current
        return dict(self.rows())

    def rows(self) -> Iterator[tuple[str, int]]:
        """``(pre-token, count)`` in order of first appearance, streamed from the runs; sets
        :attr:`distinct` and :attr:`tokens` before the first row comes out."""
        if not self.runs:
            self.distinct, self.tokens = len(self.current), sum(self.current.values())
            yield from self.current.items()
            return
        self.spill()
        by_first = self._by_first_runs()
        unescape = records.unescape_count_word

        for line in _by_first(by_first):
            _run, _index, word, n = line.rstrip("\n").split("\t")
            yield (unescape(word, "a spilled count") if "\\" in word else word), int(n)

    def _by_first_runs(self) -> list[Path]:
        """Pass 1: merge the runs by pre-token (counts added, earliest appearance kept), writing
        runs of at most ``cap`` rows sorted by that appearance."""
        assert self._tmp is not None
        out: list[Path] = []
        chunk: list[tuple[int, int, str, int]] = []
        distinct = tokens = 0

        def flush() -> None:
            assert self._tmp is not None
            chunk.sort()
            path = self._tmp / f"first{len(out):05d}.tsv"
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.writelines(f"{r}\t{i}\t{w}\t{n}\n" for r, i, w, n in chunk)
            out.append(path)
            chunk.clear()

        for word, total, run, index in _merged_by_word(self.runs):
            chunk.append((run, index, word, total))
            distinct += 1
            tokens += total
            if len(chunk) >= self.cap:
                flush()
                if len(out) >= MAX_RUNS:  # merged into one, as the spilled runs are
                    self._files += 1
                    merged = self._tmp / f"firstmerged{self._files:05d}.tsv"
                    with open(merged, "w", encoding="utf-8", newline="") as handle:
                        handle.writelines(_by_first(out))
                    for old in out:
                        old.unlink()
                    out[:] = [merged]
        if chunk:
            flush()
        self.distinct, self.tokens = distinct, tokens
        return out

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> SpillingCounts:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _first_key(line: str) -> tuple[int, int]:
    run, index, _rest = line.split("\t", 2)
    return int(run), int(index)


def _by_first(paths: list[Path]) -> Iterator[str]:
    """The lines of files sorted by (run, index), merged in that order."""
    handles = [open(p, encoding="utf-8", newline="") for p in paths]
    try:
        yield from heapq.merge(*handles, key=_first_key)
    finally:
        for handle in handles:
            handle.close()


def _merged_by_word(paths: list[Path]) -> Iterator[tuple[str, int, int, int]]:
    """``(escaped word, total count, run, index of its earliest appearance)`` over run files sorted
    by word, in word order."""
    handles = [open(p, encoding="utf-8", newline="") for p in paths]
    try:
        parsed = [map(_parse_run_row, h) for h in handles]
        for word, group in itertools.groupby(heapq.merge(*parsed), key=lambda row: row[0]):
            total, first = 0, None
            for _word, n, run, index in group:
                total += n
                if first is None or (run, index) < first:
                    first = (run, index)
            assert first is not None
            yield word, total, first[0], first[1]
    finally:
        for handle in handles:
            handle.close()


def _parse_run_row(line: str) -> tuple[str, int, int, int]:
    word, n, run, index = line.rstrip("\n").split("\t")
    return word, int(n), int(run), int(index)


def write_spilled_table(out: str | os.PathLike[str], counts: SpillingCounts, settings: Mapping) -> Path:
    """Write ``workbench count``'s table from ``counts`` without holding it whole: the header's row
    and token totals are known after the first merge pass, the rows stream from the second."""
    from workbench.corpus.counts_table import atomic_write_lines, render_header, render_row_pairs, write_counts_table

    if not counts.spilled:
        return write_counts_table(out, counts.current, settings)
    path = Path(out)
    if path.is_dir():
        raise WorkbenchError(f"{path}: is a folder: give a file name such as counts.wordcounts.tsv")
    if not path.parent.exists():
        raise WorkbenchError(f"{path}: the folder {path.parent} does not exist: create it or choose another path")
    rows = counts.rows()
    first = next(rows, None)  # runs the first merge pass: the totals are known from here on
    header = render_header({}, settings, totals=(counts.distinct, counts.tokens))
    body = itertools.chain([first] if first is not None else [], rows)
    atomic_write_lines(path, [header], render_row_pairs(body))
    return path
