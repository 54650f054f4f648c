"""Jobs off the GUI thread shared by the tabs: one-off tasks and the live pre-tokenizer preview.

* :class:`TaskRunner` — runs a plain function in a fresh ``QThread`` (export, import) and calls
  back on the GUI thread.
* :class:`SplitPreviewer` — the training form's live pre-tokenizer preview, off the GUI thread
  because a custom pattern may backtrack for seconds; stale results are dropped.

Signals emitted in a worker thread are connected only to ``@Slot`` methods of GUI-thread objects
(STYLE.md trap 2); every thread is kept referenced and joined in :meth:`shutdown` (trap 4).
What it leaves out: widgets, and any decision about what to show.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import (
    QObject,
    QRunnable,
    QThread,
    QThreadPool,
    Signal,
    Slot,
)

from workbench.errors import WorkbenchError

# ---------------------------------------------------------------------------------------------------
# one-off jobs


class _TaskWorker(QObject):
    done = Signal(int, object)
    failed = Signal(int, str)

    def __init__(self, task_id: int, fn: Callable[[], Any]):
        super().__init__()
        self.task_id = task_id
        self.fn = fn

    @Slot()
    def run(self) -> None:
        try:
            result = self.fn()
        except WorkbenchError as exc:
            self.failed.emit(self.task_id, str(exc))
        except Exception as exc:  # noqa: BLE001 - shown to the user as one line
            self.failed.emit(self.task_id, f"{type(exc).__name__}: {exc}")
        else:
            self.done.emit(self.task_id, result)


class TaskRunner(QObject):
    """Run functions in worker threads; callbacks run on the GUI thread."""

    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._tasks: dict[int, tuple[QThread, _TaskWorker, Callable, Callable]] = {}
        self._next = 1

    def run(self, fn: Callable[[], Any], on_done: Callable[[Any], None], on_error: Callable[[str], None]) -> int:
        task_id = self._next
        self._next += 1
        qthread = QThread()
        worker = _TaskWorker(task_id, fn)
        worker.moveToThread(qthread)
        qthread.started.connect(worker.run)
        worker.done.connect(self._on_done)
        worker.failed.connect(self._on_failed)
        self._tasks[task_id] = (qthread, worker, on_done, on_error)
        qthread.start()
        self.busy_changed.emit(True)
        return task_id

    def busy(self) -> bool:
        return bool(self._tasks)

    @Slot(int, object)
    def _on_done(self, task_id: int, result: object) -> None:
        entry = self._finish(task_id)
        if entry:
            entry[2](result)

    @Slot(int, str)
    def _on_failed(self, task_id: int, message: str) -> None:
        entry = self._finish(task_id)
        if entry:
            entry[3](message)

    def _finish(self, task_id: int):
        entry = self._tasks.pop(task_id, None)
        if entry:
            entry[0].quit()
            entry[0].wait()
        self.busy_changed.emit(bool(self._tasks))
        return entry

    def shutdown(self) -> None:
        # Wait without a time limit: a QThread dropped while it still runs aborts the process
        # (STYLE.md, trap 4); an import or export finishing its last file is worth the wait.
        for qthread, *_ in list(self._tasks.values()):
            qthread.quit()
            qthread.wait()
        self._tasks.clear()


# ---------------------------------------------------------------------------------------------------
# live pre-tokenizer preview


class _PreviewSignals(QObject):
    ready = Signal(int, object, str)  # generation, list of pieces (or None), error


class _PreviewJob(QRunnable):
    def __init__(self, generation: int, spec: str, normalizer: str, text: str, signals: _PreviewSignals):
        super().__init__()
        self.generation, self.spec, self.normalizer, self.text, self.signals = generation, spec, normalizer, text, signals

    def run(self) -> None:
        from workbench.core.normalize import make_normalizer, parse_normalizer
        from workbench.core.pretokenize import make_pretokenizer

        try:
            pre = make_pretokenizer(self.spec)
            text = make_normalizer(parse_normalizer(self.normalizer))(self.text)
            pieces = pre.split(pre.prepare(text) if pre.name == "metaspace" else text)
        except WorkbenchError as exc:
            self.signals.ready.emit(self.generation, None, str(exc))
        except Exception as exc:  # noqa: BLE001
            self.signals.ready.emit(self.generation, None, f"{type(exc).__name__}: {exc}")
        else:
            self.signals.ready.emit(self.generation, pieces, "")


class SplitPreviewer(QObject):
    """Split a sample line with a pre-tokenizer off the GUI thread; only the newest result counts."""

    ready = Signal(object, str)  # pieces or None, error text

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._generation = 0
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(2)
        self._signals = _PreviewSignals()
        self._signals.ready.connect(self._on_ready)

    def request(self, spec: str, normalizer: str, text: str) -> None:
        self._generation += 1
        self._pool.start(_PreviewJob(self._generation, spec, normalizer, text, self._signals))

    @Slot(int, object, str)
    def _on_ready(self, generation: int, pieces: object, error: str) -> None:
        if generation == self._generation:  # drop stale results
            self.ready.emit(pieces, error)

    def shutdown(self) -> None:
        self._pool.waitForDone(2000)


