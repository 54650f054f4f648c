"""Scanning corpus files for the Corpus tab: list what a user added, check each file, and read it
for its statistics — big files in worker processes, so the caller's thread stays free.

:class:`CorpusScanner` owns the scan pool (:class:`workbench.corpus.scan_pool.ScanPool`, GPT-2's
split, as ``workbench count`` splits) and scans one request at a time through :meth:`scan`,
which reports through plain callbacks and stops between ~1 MB chunks when ``stopped()``. What it
leaves out: threads and queues (the window's ``ui/corpus/scan.py`` runs it on a thread of its
own and turns the callbacks into signals).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from workbench.corpus import CorpusSource, expand_paths, file_stats
from workbench.corpus.location import stored_path
from workbench.errors import BadRecord, WorkbenchError

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.05  # a file's progress is reported at most this often (and at its end)


def gpt2_findall() -> Callable[[str], Sequence[str]]:
    """The GPT-2 pre-tokens of a text in one C call (``findall``), as ``workbench count`` splits.

    The pre-tokenizer's own ``split`` yields spans from a Python generator: 1.9 million Python-level
    steps for the shared corpora, half of a scan's time. ``concurrent=True`` releases the GIL
    while the regex runs, so a window stays responsive during a 1 MB chunk.
    """
    from workbench.core.pretokenize import make_pretokenizer

    pattern = make_pretokenizer("gpt2").compiled()
    assert pattern is not None  # gpt2 is a regex pre-tokenizer; only metaspace has none
    return partial(pattern.findall, concurrent=True)


@dataclass(frozen=True)
class ScanOptions:
    """The reader options chosen for the files of one request."""

    field: str | None = None
    column: str | None = None
    encoding: str | None = None
    kind: str | None = None          # None: from the name, or sniffed when the name says nothing
    on_bad_record: str = "fail"


@dataclass
class ScanReports:
    """Where :meth:`CorpusScanner.scan` reports; every callback runs on the scanning thread."""

    added: Callable[[list[tuple[str, CorpusSource]]], None]  # (key, source) of the listed files, once
    rejected: Callable[[str, str, str, bool], None]  # path, reason, encoding to suggest (or ""), bad record
    progress: Callable[[str, int, int], None]        # key, bytes done, file size
    scanned: Callable[[str, object], None]           # key, CorpusStats
    failed: Callable[[str, str, str, bool], None]    # key, reason, encoding to suggest, bad record


class CorpusScanner:
    """Lists and scans corpus files; big files go to worker processes (see the module docstring)."""

    def __init__(self, split: Callable[[str], Sequence[str]] | None = None, *, pool_workers: int | None = None):
        from workbench.corpus.scan_pool import ScanPool

        # the second core; the caller's thread (a window's) keeps the GIL to itself. None: no pool.
        workers = pool_workers if pool_workers is not None else min(2, os.cpu_count() or 1)
        self._pool = ScanPool("gpt2", workers) if workers > 1 else None
        self._split = split

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def scan(self, paths: Sequence[str], options: ScanOptions, report: ScanReports,
             stopped: Callable[[], bool]) -> None:
        """List ``paths`` (folders expanded, each file checked), then read every file for its
        statistics, in order, until ``stopped()``. A file's key is its resolved path (a location: its URL)."""
        try:
            sources, rejected = expand_paths(list(paths), field=options.field, column=options.column,
                                             encoding=options.encoding, kind=options.kind,
                                             on_bad_record=options.on_bad_record)
        except Exception as exc:  # noqa: BLE001 - a bug here must not kill the scanning thread
            log.exception("listing corpus paths %s failed", list(paths))
            report.rejected(", ".join(paths), f"cannot read: {exc}", "", False)
            return
        for rejection in rejected:
            report.rejected(rejection.path, str(rejection), rejection.encoding or "", rejection.bad_record)
        keys = [stored_path(src.path) for src in sources]  # a location keeps its URL
        if sources:
            report.added(list(zip(keys, sources)))
        last = [0.0]  # one pace for all the files: 100,000 small ones sent a progress report each,
        # which piled up in the window between two redraws (the scanned report says a file is read)
        for key, src in zip(keys, sources):
            if stopped():
                break

            def progress(done: int, total: int, key: str = key, last: list = last) -> None:
                now = time.monotonic()
                if now - last[0] >= PROGRESS_EVERY_S and done < total:
                    last[0] = now
                    report.progress(key, int(done), int(total))

            try:
                stats = file_stats(src, split=self._split, progress=progress, should_stop=stopped, pool=self._pool)
            except WorkbenchError as exc:
                report.failed(key, str(exc), getattr(exc, "encoding", None) or "", isinstance(exc, BadRecord))
                continue
            except Exception as exc:  # noqa: BLE001
                log.exception("scanning corpus file %s failed", src.path)
                report.failed(key, f"{src.path}: cannot read it ({exc})", "", False)
                continue
            report.scanned(key, stats)
