"""Work that must not run on the GUI thread: corpus scans, one-off jobs, the training process.

* :class:`CorpusScanWorker` — a ``QObject`` living in its own ``QThread`` that validates and scans
  corpus files (:func:`workbench.corpus.expand_paths`, :func:`workbench.corpus.file_stats`) one job
  after another, reporting per file; cancel takes effect between ~1 MB chunks.
* :class:`TaskRunner` — runs a plain function in a fresh ``QThread`` (export, import) and calls
  back on the GUI thread.
* :class:`SplitPreviewer` — the training form's live pre-tokenizer preview, off the GUI thread
  because a custom pattern may backtrack for seconds; stale results are dropped.
* :class:`TrainingProcess` — ``workbench train … --progress json`` as a child ``QProcess``:
  reads the JSON progress lines, pauses with SIGSTOP/SIGCONT, cancels with SIGTERM (the child marks
  its run cancelled between two merges). A child process, not a thread: a pure-Python trainer in a
  thread competes with the GUI for the GIL (STYLE.md measured 2–3× the idle jitter).

Signals emitted in a worker thread are connected only to ``@Slot`` methods of GUI-thread objects
(STYLE.md trap 2); every thread is kept referenced and joined in :meth:`shutdown` (trap 4).
What it leaves out: widgets, and any decision about what to show.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from PySide6.QtCore import (
    QObject,
    QProcess,
    QProcessEnvironment,
    QRunnable,
    QThread,
    QThreadPool,
    QTimer,
    Signal,
    Slot,
)

from workbench.errors import WorkbenchError
from workbench.store.writer import is_writer_command

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


class CorpusScanWorker(QObject):
    """Validates and scans corpus files in its own thread, one job at a time.

    Lives in a ``QThread``; :meth:`submit` and :meth:`cancel` are called from the GUI thread and
    only touch thread-safe state (a ``queue.Queue`` and an int compared atomically under the GIL).
    """

    file_added = Signal(int, object)          # job id, CorpusSource (validated, not scanned yet)
    file_rejected = Signal(int, str, str)     # job id, path, one-line reason
    file_progress = Signal(str, int, int)     # key (resolved path), bytes done, file size
    file_scanned = Signal(str, object)        # key, CorpusStats
    file_failed = Signal(str, str)            # key, one-line reason found while reading
    job_finished = Signal(int, bool)          # job id, cancelled

    def __init__(self, splitter: Callable[[str], Sequence[str]] | None = None):
        super().__init__()
        self._jobs: queue.Queue[ScanJob | None] = queue.Queue()
        self._cancel_below = 0  # jobs with a smaller id are cancelled
        self._next_id = 1
        self._split = splitter

    def submit(self, paths: Sequence[str | Path], *, field: str | None = None, column: str | None = None,
               encoding: str | None = None) -> int:
        job = ScanJob(self._next_id, tuple(str(p) for p in paths), field or None, column or None, encoding or None)
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
                return
            stopped = lambda job_id=job.job_id: job_id < self._cancel_below  # noqa: E731
            if stopped():
                self.job_finished.emit(job.job_id, True)
                continue
            try:
                sources, rejected = expand_paths(list(job.paths), field=job.field, column=job.column,
                                                 encoding=job.encoding)
            except Exception as exc:  # noqa: BLE001 - a bug here must not kill the thread
                self.file_rejected.emit(job.job_id, ", ".join(job.paths), f"cannot read: {exc}")
                self.job_finished.emit(job.job_id, False)
                continue
            for message in rejected:
                self.file_rejected.emit(job.job_id, _path_of(message), message)
            for src in sources:
                self.file_added.emit(job.job_id, src)
            for src in sources:
                if stopped():
                    break
                key = str(Path(src.path).resolve())
                last = [0.0]

                def progress(done: int, total: int, key: str = key, last: list = last) -> None:
                    now = time.monotonic()
                    if now - last[0] >= 0.05 or done >= total:
                        last[0] = now
                        self.file_progress.emit(key, int(done), int(total))

                try:
                    stats = file_stats(src, split=self._split, progress=progress, should_stop=stopped)
                except WorkbenchError as exc:
                    self.file_failed.emit(key, str(exc))
                    continue
                except Exception as exc:  # noqa: BLE001
                    self.file_failed.emit(key, f"{src.path}: cannot read it ({exc})")
                    continue
                self.file_scanned.emit(key, stats)
            self.job_finished.emit(job.job_id, stopped())


def _path_of(message: str) -> str:
    """The file a corpus error message names (messages start with ``path:`` or ``path:line:``)."""
    head = message.split(": ", 1)[0]
    parts = head.rsplit(":", 1)
    if len(parts) == 2 and parts[1].isdigit():
        return parts[0]
    return head


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


# ---------------------------------------------------------------------------------------------------
# the training process


@dataclass(frozen=True)
class TrainOptions:
    """The training form's values, as the ``workbench train`` command takes them."""

    vocab_size: int | None = 1000
    merges: int | None = None
    units: str = "bytes"
    end_of_word: str = ""
    pretokenizer: str = "gpt2"
    normalize: str = "none"
    min_frequency: int = 1
    special: tuple[str, ...] = ()
    tie_break: str = "first-seen"
    name: str = ""


@dataclass(frozen=True)
class CorpusFile:
    """A corpus file with the reader options it was validated with."""

    path: str
    kind: str = "text"
    field: str | None = None
    column: str | int | None = None
    encoding: str | None = None


def entry_point() -> list[str]:
    """How to start this app's own ``workbench`` entry point (a frozen app *is* the entry point)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "workbench"]


def train_command(files: Sequence[CorpusFile], project: str | Path, options: TrainOptions) -> list[str]:
    """The full argv of the child; raises WorkbenchError when the files need conflicting options.

    ``workbench train`` applies ``--field``/``--column``/``--encoding`` to every file it is given,
    so files needing different values cannot go into one run: the message says which.
    """
    if not files:
        raise WorkbenchError("add corpus files first (Corpus panel): there is nothing to train on")

    def one(name: str, values: dict[str, set]) -> str | None:
        distinct = {v for v in values.get(name, set()) if v is not None}
        if len(distinct) > 1:
            shown = ", ".join(sorted(map(str, distinct)))
            raise WorkbenchError(f"the corpus files need different {name}s ({shown}); one run reads all files "
                                 f"with one {name}: remove the files that differ, or train on them separately")
        return str(next(iter(distinct))) if distinct else None

    seen: dict[str, set] = {"field": set(), "column": set(), "encoding": set()}
    for f in files:
        if f.kind == "jsonl":
            seen["field"].add(f.field)
        if f.kind in ("csv", "tsv", "parquet"):
            seen["column"].add(f.column)
        seen["encoding"].add(f.encoding)
    field_, column, encoding = one("field", seen), one("column", seen), one("encoding", seen)
    if encoding is not None and None in seen["encoding"] and len(seen["encoding"]) > 1:
        raise WorkbenchError(f"some corpus files are read as {encoding} and others as UTF-8; one run reads all files "
                             "with one encoding: train on them separately")
    o = options
    argv = [*entry_point(), "train", *[f.path for f in files], "--project", str(project)]
    if o.vocab_size is not None:
        argv += ["--vocab-size", str(o.vocab_size)]
    if o.merges is not None:
        argv += ["--merges", str(o.merges)]
    argv += ["--model", "bpe", "--units", o.units]
    if o.units == "chars" and o.end_of_word:
        argv += ["--end-of-word", o.end_of_word]
    argv += ["--pretokenizer", o.pretokenizer, "--normalize", o.normalize or "none",
             "--min-frequency", str(o.min_frequency), "--tie-break", o.tie_break]
    for token in o.special:
        argv += ["--special", token]
    if o.name:
        argv += ["--name", o.name]
    if field_ is not None:
        argv += ["--field", field_]
    if column is not None:
        argv += ["--column", column]
    if encoding is not None:
        argv += ["--encoding", encoding]
    argv += ["--progress", "json", "--json"]
    return argv


@dataclass
class TrainOutcome:
    """How a child run ended."""

    run_id: int | None
    status: str            # finished | cancelled | failed | error (bad input) | crashed
    exit_code: int
    message: str = ""
    result: dict = field(default_factory=dict)


class TrainingProcess(QObject):
    """One ``workbench train`` child at a time, driven from the GUI thread."""

    event = Signal(dict)             # every JSON progress line
    run_started = Signal(int, int)   # run id, target merges
    state_changed = Signal(str)      # idle | starting | reading | training | paused | stopping
    finished = Signal(object)        # TrainOutcome

    KILL_AFTER_MS = 10000

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._buffer = b""
        self._errors: list[str] = []
        self._other: list[str] = []
        self._stdout = b""
        self.run_id: int | None = None
        self.state = "idle"
        self.cancel_requested = False
        self.started_at = 0.0
        self._kill_timer = QTimer(self)
        self._kill_timer.setSingleShot(True)
        self._kill_timer.timeout.connect(self._kill)

    # ---- state ---------------------------------------------------------------------------------
    def is_active(self) -> bool:
        return self._proc is not None

    @property
    def pid(self) -> int | None:
        return int(self._proc.processId()) if self._proc is not None and self._proc.processId() else None

    @staticmethod
    def can_pause() -> bool:
        return hasattr(signal, "SIGSTOP")

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)

    # ---- control -------------------------------------------------------------------------------
    def start(self, argv: Sequence[str]) -> None:
        if self._proc is not None:
            raise WorkbenchError("a training run is already in progress")
        self._buffer, self._stdout, self._errors, self._other = b"", b"", [], []
        self.run_id = None
        self.cancel_requested = False
        proc = QProcess(self)
        env = QProcessEnvironment.systemEnvironment()
        env.insert("PYTHONUNBUFFERED", "1")
        env.insert("PYTHONIOENCODING", "utf-8")
        proc.setProcessEnvironment(env)
        proc.readyReadStandardError.connect(self._on_stderr)
        proc.readyReadStandardOutput.connect(self._on_stdout)
        proc.finished.connect(self._on_finished)
        proc.errorOccurred.connect(self._on_error)
        self._proc = proc
        self.started_at = time.monotonic()
        self._set_state("starting")
        proc.start(argv[0], list(argv[1:]))

    def pause(self) -> bool:
        if self._proc is None or self.state in ("paused", "stopping") or not self.can_pause() or not self.pid:
            return False
        _signal_tree(self.pid, signal.SIGSTOP)
        self._resume_state = self.state
        self._set_state("paused")
        return True

    def resume(self) -> bool:
        if self._proc is None or self.state != "paused" or not self.pid:
            return False
        _signal_tree(self.pid, signal.SIGCONT)
        self._set_state(getattr(self, "_resume_state", "training"))
        return True

    def cancel(self) -> None:
        """SIGTERM: the child stops between two merges and marks its run cancelled."""
        if self._proc is None:
            return
        self.cancel_requested = True
        if self.state == "paused" and self.pid:
            _signal_tree(self.pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        self._set_state("stopping")
        self._proc.terminate()
        self._kill_timer.start(self.KILL_AFTER_MS)

    def wait(self, timeout_ms: int = 15000) -> bool:
        """Block until the child has exited (used when the window closes)."""
        if self._proc is None:
            return True
        ok = self._proc.waitForFinished(timeout_ms)
        if not ok:
            self._kill()
            ok = self._proc.waitForFinished(3000) if self._proc is not None else True
        return ok

    @Slot()
    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()

    # ---- output --------------------------------------------------------------------------------
    @Slot()
    def _on_stderr(self) -> None:
        if self._proc is None:
            return
        self._buffer += bytes(self._proc.readAllStandardError().data())
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            self._line(raw.decode("utf-8", "replace").strip())

    @Slot()
    def _on_stdout(self) -> None:
        if self._proc is not None:
            self._stdout += bytes(self._proc.readAllStandardOutput().data())

    def _line(self, line: str) -> None:
        if not line:
            return
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                data = None
            if isinstance(data, dict) and "event" in data:
                self._event(data)
                return
        if line.startswith("workbench train: error:"):
            self._errors.append(line.split("error:", 1)[1].strip())
        else:
            self._other.append(line)
            del self._other[:-20]

    def _event(self, data: dict) -> None:
        kind = data.get("event")
        if kind == "reading" and self.state in ("starting", "reading"):
            self._set_state("reading")
        elif kind == "started":
            self.run_id = int(data["run_id"])
            if self.state != "paused" and self.state != "stopping":
                self._set_state("training")
            self.run_started.emit(self.run_id, int(data.get("target", 0)))
        self.event.emit(data)

    @Slot(QProcess.ProcessError)
    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._proc is not None:
            message = f"cannot start the training process ({self._proc.errorString()})"
            self._proc.deleteLater()
            self._proc = None
            self._set_state("idle")
            self.finished.emit(TrainOutcome(None, "crashed", -1, message))

    @Slot(int, QProcess.ExitStatus)
    def _on_finished(self, code: int, exit_status: QProcess.ExitStatus) -> None:
        proc = self._proc
        if proc is None:
            return
        self._kill_timer.stop()
        self._buffer += bytes(proc.readAllStandardError().data())
        self._stdout += bytes(proc.readAllStandardOutput().data())
        for raw in self._buffer.split(b"\n"):
            self._line(raw.decode("utf-8", "replace").strip())
        self._buffer = b""
        result: dict = {}
        for raw in self._stdout.decode("utf-8", "replace").splitlines():
            if raw.startswith("{"):
                try:
                    result = json.loads(raw)
                except json.JSONDecodeError:
                    pass
        run_id = result.get("run_id", self.run_id)
        crashed = exit_status == QProcess.ExitStatus.CrashExit
        if result.get("status"):
            outcome = TrainOutcome(run_id, str(result["status"]), code, "", result)
        elif self.cancel_requested:  # before errors: a cancel while reading is not a failure
            outcome = TrainOutcome(run_id, "cancelled", code, "cancelled before the run started"
                                   if run_id is None else "")
        elif self._errors:
            outcome = TrainOutcome(run_id, "error", code, self._errors[-1])
        else:
            last = self._other[-1] if self._other else ""
            how = "was killed" if crashed else f"exited with code {code}"
            outcome = TrainOutcome(run_id, "crashed", code, f"the training process {how}" + (f": {last}" if last else ""))
        self._proc = None
        proc.deleteLater()
        self._set_state("idle")
        self.finished.emit(outcome)


def _is_run_writer(proc_entry: Path) -> bool:
    try:
        return is_writer_command((proc_entry / "cmdline").read_bytes().split(b"\0"))
    except OSError:
        return False


def _signal_tree(pid: int, signum: int) -> None:
    """Signal the training process and its children (the corpus-counting workers) alike.

    Children are found through /proc where there is one; elsewhere only the process itself.
    The run's writer process is never stopped: it is idle while the trainer is, and stopped in
    the middle of a commit it would hold the project's write lock for the whole pause.
    """
    children: list[int] = []
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                # fields after the ")" that closes the command name: state, ppid, …
                fields = stat[stat.rfind(")") + 2:].split()
                if len(fields) > 1 and fields[1] == str(pid):
                    if signum == getattr(signal, "SIGSTOP", None) and _is_run_writer(entry):
                        continue
                    children.append(int(entry.name))
    for target in (pid, *children):
        try:
            os.kill(target, signum)
        except ProcessLookupError:
            pass
