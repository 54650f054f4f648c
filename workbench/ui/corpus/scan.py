"""Corpus scans off the GUI thread: :class:`CorpusScanWorker` is a ``QObject`` living in its own
``QThread`` that validates and scans corpus files (:func:`workbench.corpus.expand_paths`,
:func:`workbench.corpus.file_stats`) one job after another, reporting per file; cancel takes effect
between ~1 MB chunks. Signals go only to ``@Slot`` methods of GUI-thread objects (STYLE.md trap 2).
"""

from __future__ import annotations

import logging
import queue
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from PySide6.QtCore import (
    QObject,
    QThread,
    Signal,
    Slot,
)

from workbench.corpus.location import stored_path
from workbench.errors import BadRecord, WorkbenchError

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------------
# corpus scanning


@dataclass(frozen=True)
class ScanJob:
    """Files or folders to add, with the reader options chosen for them."""

    job_id: int
    paths: tuple[str, ...]
    field: str | None = None
    column: str | None = None
    encoding: str | None = None
    kind: str | None = None          # None: from the name, or sniffed when the name says nothing
    on_bad_record: str = "fail"


class CorpusScanWorker(QObject):
    """Validates and scans corpus files in its own thread, one job at a time.

    Lives in a ``QThread``; :meth:`submit` and :meth:`cancel` are called from the GUI thread and
    only touch thread-safe state (a ``queue.Queue`` and an int compared atomically under the GIL).
    """

    # job id, [(key, CorpusSource)] of a job's files (validated, not scanned yet), in one signal: a
    # signal per file queued 100,000 events that the window then handled in one uninterrupted batch
    files_added = Signal(int, object)
    file_rejected = Signal(int, str, str, str, bool)  # job id, path, reason, encoding to suggest (or ""), bad record
    file_progress = Signal(str, int, int)     # key (resolved path), bytes done, file size
    file_scanned = Signal(str, object)        # key, CorpusStats
    file_failed = Signal(str, str, str, bool)  # key, reason found while reading, encoding to suggest, bad record
    job_finished = Signal(int, bool)          # job id, cancelled

    def __init__(self, splitter: Callable[[str], Sequence[str]] | None = None, *, pool_workers: int | None = None):
        super().__init__()
        import os

        from workbench.corpus.scan_pool import ScanPool

        # Big files go to worker processes (the second core; the GUI keeps the GIL to itself).
        # Their split is GPT-2's, what ``splitter`` is in the window; None: scan in this thread only.
        workers = pool_workers if pool_workers is not None else min(2, os.cpu_count() or 1)
        self._pool = ScanPool("gpt2", workers) if workers > 1 else None
        self._jobs: queue.Queue[ScanJob | None] = queue.Queue()
        self._cancel_below = 0  # jobs with a smaller id are cancelled
        self._next_id = 1
        self._split = splitter

    def submit(self, paths: Sequence[str | Path], *, field: str | None = None, column: str | None = None,
               encoding: str | None = None, kind: str | None = None, on_bad_record: str = "fail") -> int:
        job = ScanJob(self._next_id, tuple(str(p) for p in paths), field or None, column or None, encoding or None,
                      kind or None, on_bad_record)
        self._next_id += 1
        self._jobs.put(job)
        return job.job_id

    def cancel(self) -> None:
        """Stop the running job between two chunks and drop the queued ones."""
        self._cancel_below = self._next_id

    def stop(self) -> None:
        self.cancel()
        self._jobs.put(None)

    @Slot()
    def run(self) -> None:
        """The thread's loop (started by ``QThread.started``)."""
        from workbench.corpus import expand_paths, file_stats

        while True:
            job = self._jobs.get()
            if job is None:
                if self._pool is not None:
                    self._pool.close()
                return
            stopped = lambda job_id=job.job_id: job_id < self._cancel_below  # noqa: E731
            if stopped():
                self.job_finished.emit(job.job_id, True)
                continue
            try:
                sources, rejected = expand_paths(list(job.paths), field=job.field, column=job.column,
                                                 encoding=job.encoding, kind=job.kind,
                                                 on_bad_record=job.on_bad_record)
            except Exception as exc:  # noqa: BLE001 - a bug here must not kill the thread
                log.exception("listing corpus paths %s failed", list(job.paths))
                self.file_rejected.emit(job.job_id, ", ".join(job.paths), f"cannot read: {exc}", "", False)
                self.job_finished.emit(job.job_id, False)
                continue
            for rejection in rejected:
                self.file_rejected.emit(job.job_id, rejection.path, str(rejection), rejection.encoding or "",
                                        rejection.bad_record)
            keys = [stored_path(src.path) for src in sources]  # here, not on the GUI thread
            if sources:
                self.files_added.emit(job.job_id, list(zip(keys, sources)))
            for key, src in zip(keys, sources):
                if stopped():
                    break
                last = [0.0]

                def progress(done: int, total: int, key: str = key, last: list = last) -> None:
                    now = time.monotonic()
                    if now - last[0] >= 0.05 or done >= total:
                        last[0] = now
                        self.file_progress.emit(key, int(done), int(total))

                try:
                    stats = file_stats(src, split=self._split, progress=progress, should_stop=stopped,
                                       pool=self._pool)
                except WorkbenchError as exc:
                    self.file_failed.emit(key, str(exc), getattr(exc, "encoding", None) or "",
                                          isinstance(exc, BadRecord))
                    continue
                except Exception as exc:  # noqa: BLE001
                    log.exception("scanning corpus file %s failed", src.path)
                    self.file_failed.emit(key, f"{src.path}: cannot read it ({exc})", "", False)
                    continue
                self.file_scanned.emit(key, stats)
            self.job_finished.emit(job.job_id, stopped())


def gpt2_findall() -> Callable[[str], Sequence[str]]:
    """The GPT-2 pre-tokens of a text in one C call (``findall``), as ``workbench count`` splits.

    The pre-tokenizer's own ``split`` yields spans from a Python generator: 1.9 million Python-level
    steps for the shared corpora, half of a scan's time. ``concurrent=True`` releases the GIL
    while the regex runs, so the window stays responsive during a 1 MB chunk.
    """
    from functools import partial

    from workbench.core.pretokenize import make_pretokenizer

    pattern = make_pretokenizer("gpt2").compiled()
    assert pattern is not None  # gpt2 is a regex pre-tokenizer; only metaspace has none
    return partial(pattern.findall, concurrent=True)


class ScanThread:
    """Owns a :class:`CorpusScanWorker` and its ``QThread``; :meth:`shutdown` joins it."""

    def __init__(self, worker: CorpusScanWorker):
        self.worker = worker
        self.qthread = QThread()
        self.qthread.setObjectName("corpus-scan")
        worker.moveToThread(self.qthread)
        self.qthread.started.connect(worker.run)
        self.qthread.start()

    def shutdown(self, timeout_ms: int = 5000) -> None:
        if self.qthread.isRunning():
            self.worker.stop()
            self.qthread.quit()
            self.qthread.wait(timeout_ms)


