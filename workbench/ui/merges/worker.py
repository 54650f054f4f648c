"""A cancellable background job for the merge browser (corpus frequencies, tokenizer diffs).

The work is a plain function ``fn(should_stop, progress) -> result`` (see
:mod:`workbench.analysis`); :class:`BackgroundJob` runs it in its own ``QThread`` and relays its
signals to the GUI thread through ``@Slot`` methods of a GUI-thread object (STYLE.md trap 2).
Starting a new job cancels the previous one and drops its late results (stale), but keeps its
thread referenced until it has ended (trap 4); :meth:`BackgroundJob.shutdown` joins them all.
The function must open its own database connection: SQLite connections stay on their thread.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

from workbench.errors import WorkbenchError

JobFn = Callable[[Callable[[], bool], Callable[[int, int, str], None]], Any]


class _Worker(QObject):
    progress = Signal(int, int, int, str)  # generation, done, total, what
    done = Signal(int, object)
    failed = Signal(int, str)

    def __init__(self, generation: int, fn: JobFn, stop: threading.Event):
        super().__init__()
        self.generation = generation
        self.fn = fn
        self.stop = stop

    @Slot()
    def run(self) -> None:
        gen = self.generation
        try:
            result = self.fn(self.stop.is_set, lambda done, total, what="": self.progress.emit(gen, int(done), int(total), what))
        except WorkbenchError as exc:
            self.failed.emit(gen, str(exc))
        except Exception as exc:  # noqa: BLE001 - shown as one line, never a traceback
            self.failed.emit(gen, f"{type(exc).__name__}: {exc}")
        else:
            self.done.emit(gen, None if self.stop.is_set() else result)


class BackgroundJob(QObject):
    """At most one live job; ``finished(None)`` means it was cancelled."""

    progress = Signal(int, int, str)
    finished = Signal(object)
    failed = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, name: str = "merge-job", parent: QObject | None = None):
        super().__init__(parent)
        self._name = name
        self._generation = 0
        self._live: dict[int, tuple[QThread, _Worker, threading.Event]] = {}

    def start(self, fn: JobFn) -> int:
        self.cancel()
        self._generation += 1
        gen = self._generation
        stop = threading.Event()
        qthread = QThread()
        qthread.setObjectName(f"{self._name}-{gen}")
        worker = _Worker(gen, fn, stop)
        worker.moveToThread(qthread)
        qthread.started.connect(worker.run)
        worker.progress.connect(self._on_progress)
        worker.done.connect(self._on_done)
        worker.failed.connect(self._on_failed)
        self._live[gen] = (qthread, worker, stop)
        qthread.start()
        self.running_changed.emit(True)
        return gen

    def is_running(self) -> bool:
        return self._generation in self._live

    def cancel(self) -> None:
        """Ask the current job to stop; its result is dropped whenever it arrives."""
        entry = self._live.get(self._generation)
        if entry is not None:
            entry[2].set()
            self._generation += 1  # anything still arriving from it is stale
            self.running_changed.emit(False)

    def _end(self, gen: int) -> None:
        entry = self._live.pop(gen, None)
        if entry is not None:
            entry[0].quit()
            entry[0].wait()

    @Slot(int, int, int, str)
    def _on_progress(self, gen: int, done: int, total: int, what: str) -> None:
        if gen == self._generation:
            self.progress.emit(done, total, what)

    @Slot(int, object)
    def _on_done(self, gen: int, result: object) -> None:
        current = gen == self._generation
        self._end(gen)
        if current:
            self.running_changed.emit(False)
            self.finished.emit(result)

    @Slot(int, str)
    def _on_failed(self, gen: int, message: str) -> None:
        current = gen == self._generation
        self._end(gen)
        if current:
            self.running_changed.emit(False)
            self.failed.emit(message)

    def shutdown(self, timeout_ms: int = 10000) -> None:
        """Cancel and join every thread (window close, test teardown)."""
        for qthread, _worker, stop in list(self._live.values()):
            stop.set()
        for qthread, _worker, _stop in list(self._live.values()):
            qthread.quit()
            qthread.wait(timeout_ms)
        self._live.clear()
        self._generation += 1
