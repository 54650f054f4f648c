"""Corpus scans off the GUI thread: :class:`CorpusScanWorker` is a ``QObject`` living in its own
``QThread`` that runs the scan use case (:class:`workbench.tasks.corpus_scan.CorpusScanner`: list
and check the files, read each for its statistics) one job after another, turning its reports
into signals; cancel takes effect between ~1 MB chunks. Signals go only to ``@Slot`` methods of
GUI-thread objects (STYLE.md trap 2).
"""

from __future__ import annotations

import logging
import queue
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from PySide6.QtCore import (
    QObject,
    QThread,
    Signal,
    Slot,
)

from workbench.tasks.corpus_scan import CorpusScanner, ScanOptions, ScanReports, gpt2_findall
from workbench.ui.collector import collect_on_gui_thread

__all__ = ["CorpusScanWorker", "ScanJob", "ScanThread", "gpt2_findall"]

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------------
# corpus scanning


@dataclass(frozen=True)
class ScanJob:
    """Files or folders to add, with the reader options chosen for them."""

    job_id: int
    paths: tuple[str, ...]
    options: ScanOptions = ScanOptions()


#: Files per ``files_added`` signal, and how long the worker waits for the window to list one.
#: Listing one costs the window ~0.05 ms (2,000 a signal held it ~110 ms): 250 fit in a frame.
ADDED_BATCH = 250
ADDED_WAIT_S = 2.0
#: Refused files per ``files_rejected`` signal: a signal per file queued 5,000 refusals that the
#: window then handled in one stretch (~25 µs each: 0.12 s); paced as ``files_added`` is.
REJECTED_BATCH = 250


class CorpusScanWorker(QObject):
    """Validates and scans corpus files in its own thread, one job at a time.

    Lives in a ``QThread``; :meth:`submit` and :meth:`cancel` are called from the GUI thread and
    only touch thread-safe state (a ``queue.Queue`` and an int compared atomically under the GIL).
    """

    # job id, [(key, CorpusSource)] of a job's files (validated, not scanned yet), ADDED_BATCH per
    # signal: a signal per file queued 100,000 events that the window then handled in one
    # uninterrupted batch, and one signal of 100,000 files kept it ~0.4 s in one stretch. The next
    # batch is sent once the window has listed the last (:meth:`listed`), so each lands in a turn
    # of the event loop of its own; every file is listed before the first is read.
    files_added = Signal(int, object)
    # job id, [(path, reason, encoding to suggest (or ""), bad record)], REJECTED_BATCH per signal,
    # paced like files_added (the window calls :meth:`listed` for each)
    files_rejected = Signal(int, object)
    # [("progress", key, bytes done, file size) | ("scanned", key, CorpusStats)], in the order
    # reported, REPORT_BATCH a signal or what REPORT_WAIT_S gathered: a signal per file read was
    # ~250 queued calls per redraw interval of 100,000 small files, each its own ~40–60 µs of the
    # window's thread (see _Reports)
    file_reports = Signal(object)
    file_failed = Signal(str, str, str, bool)  # key, reason found while reading, encoding to suggest, bad record
    job_finished = Signal(int, bool)          # job id, cancelled

    def __init__(self, splitter: Callable[[str], Sequence[str]] | None = None, *, pool_workers: int | None = None):
        super().__init__()
        self._scanner = CorpusScanner(splitter, pool_workers=pool_workers)
        self._jobs: queue.Queue[ScanJob | None] = queue.Queue()
        self._cancel_below = 0  # jobs with a smaller id are cancelled
        self._next_id = 1
        # files_added batches sent (written by the worker only) and listed (by the window only)
        self._sent = self._listed = 0

    def listed(self) -> None:
        """The window has listed a batch of ``files_added`` (called on the GUI thread)."""
        self._listed += 1

    def _wait_for_window(self, stopped: Callable[[], bool]) -> None:
        """Until the window has listed the last batch sent, of this job or an earlier one (a window
        busy elsewhere gets ADDED_WAIT_S; one that does not answer is not waited for any longer)."""
        deadline = time.monotonic() + ADDED_WAIT_S
        while self._listed < self._sent and not stopped() and time.monotonic() < deadline:
            time.sleep(0.002)

    def _send_added(self, job_id: int, added: list, stopped: Callable[[], bool],
                    before: Callable[[], None] = lambda: None) -> None:
        before()  # the refusals gathered so far go first
        for start in range(0, len(added), ADDED_BATCH):
            self._wait_for_window(stopped)
            self._sent += 1
            self.files_added.emit(job_id, added[start:start + ADDED_BATCH])

    def _rejections(self, job_id: int, stopped: Callable[[], bool]) -> tuple[Callable[..., None], Callable[[], None]]:
        """A job's ``rejected`` report, gathering REJECTED_BATCH refusals a signal, and the function
        that sends what it has gathered (before the files added, and when the job ends)."""
        gathered: list[tuple[str, str, str, bool]] = []

        def send() -> None:
            if gathered:
                self._wait_for_window(stopped)
                self._sent += 1
                self.files_rejected.emit(job_id, gathered[:])
                gathered.clear()

        def rejected(path: str, reason: str, encoding: str, bad_record: bool) -> None:
            gathered.append((path, reason, encoding, bad_record))
            if len(gathered) >= REJECTED_BATCH:
                send()
        return rejected, send

    def submit(self, paths: Sequence[str | Path], *, field: str | None = None, column: str | None = None,
               encoding: str | None = None, kind: str | None = None, on_bad_record: str = "fail") -> int:
        job = ScanJob(self._next_id, tuple(str(p) for p in paths),
                      ScanOptions(field or None, column or None, encoding or None, kind or None, on_bad_record))
        self._next_id += 1
        self._jobs.put(job)
        return job.job_id

    def cancel(self) -> None:
        """Stop the running job between two chunks and drop the queued ones."""
        self._cancel_below = self._next_id

    def cancelled(self, job_id: int) -> bool:
        """Whether ``job_id`` was cancelled: its reports still queued for the window are stale."""
        return 0 < job_id < self._cancel_below

    def stop(self) -> None:
        self.cancel()
        self._jobs.put(None)

    @Slot()
    def run(self) -> None:
        """The thread's loop (started by ``QThread.started``)."""
        while True:
            job = self._jobs.get()
            if job is None:
                self._scanner.close()
                return
            stopped = lambda job_id=job.job_id: job_id < self._cancel_below  # noqa: E731
            if stopped():
                self.job_finished.emit(job.job_id, True)
                continue
            job_id = job.job_id
            rejected, send_rejected = self._rejections(job_id, stopped)
            reports = _Reports(self.file_reports.emit)

            def send_before(then: Callable[..., None], *args, reports: _Reports = reports) -> None:
                reports.send()  # what was read so far first: every signal keeps the order of the reports
                then(*args)

            report = ScanReports(
                added=partial(send_before, partial(self._send_added, job_id, stopped=stopped, before=send_rejected)),
                rejected=rejected, progress=reports.progress, scanned=reports.scanned,
                failed=partial(send_before, self.file_failed.emit))
            try:
                self._scanner.scan(job.paths, job.options, report, stopped)
            finally:
                reports.send()
                send_rejected()
            self.job_finished.emit(job_id, stopped())


#: Reports of files read gathered into one signal: at most this many, or what this many seconds gathered.
REPORT_BATCH = 500
REPORT_WAIT_S = 0.03


class _Reports:
    """A job's progress and scanned reports, gathered on the scan thread and sent in batches (a
    file's reports keep their order; :meth:`send` sends what is gathered, before any other signal)."""

    def __init__(self, emit: Callable[[list], None]):
        self.emit = emit
        self.gathered: list[tuple] = []
        self.since = time.monotonic()

    def progress(self, key: str, done: int, size: int) -> None:
        self._add(("progress", key, done, size))

    def scanned(self, key: str, stats: object) -> None:
        self._add(("scanned", key, stats))

    def _add(self, report: tuple) -> None:
        if not self.gathered:
            self.since = time.monotonic()
        self.gathered.append(report)
        if len(self.gathered) >= REPORT_BATCH or time.monotonic() - self.since >= REPORT_WAIT_S:
            self.send()

    def send(self) -> None:
        if self.gathered:
            batch, self.gathered = self.gathered, []
            self.emit(batch)


class ScanThread:
    """Owns a :class:`CorpusScanWorker` and its ``QThread``; :meth:`shutdown` joins it."""

    def __init__(self, worker: CorpusScanWorker):
        collect_on_gui_thread()  # before the thread can run a collector pass (ui/collector.py)
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


