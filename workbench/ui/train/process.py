"""The training run as a child process: ``workbench train --spec RUN.json --progress json`` in a ``QProcess``.

The window hands the child one :class:`~workbench.tasks.spec.RunSpec` as a JSON file
(:func:`spec_command`): every corpus file with the reader options the Corpus tab checked it with,
so one run can mix text, JSONL, CSV and encodings, and nothing is sniffed twice.
:class:`TrainingProcess` reads the JSON progress lines, pauses, resumes and cancels (the child marks
its run cancelled between two merges). A child process, not a thread: a pure-Python trainer in a
thread competes with the GUI for the GIL (STYLE.md measured 2–3× the idle jitter). Pausing
suspends the child's process tree through ``psutil`` (SIGSTOP on POSIX, thread suspension on
Windows), except the run's writer process.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from PySide6.QtCore import (
    QObject,
    QProcess,
    QProcessEnvironment,
    QTimer,
    Signal,
    Slot,
)

from workbench.errors import WorkbenchError
from workbench.store.writer import is_writer_command
from workbench.tasks.extend import ExtendRequest
from workbench.tasks.spec import RunSpec

# ---------------------------------------------------------------------------------------------------
# the training process


def entry_point() -> list[str]:
    """How to start this app's own ``workbench`` entry point (a frozen app *is* the entry point)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "workbench"]


def write_spec(spec: RunSpec | ExtendRequest) -> Path:
    """The spec as a JSON file in the temp folder, for the child (the caller deletes it)."""
    fd, name = tempfile.mkstemp(prefix="workbench-run-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(spec.to_json())
    return Path(name)


def spec_command(spec_path: str | os.PathLike, *, estimate: bool = False) -> list[str]:
    """The full argv of a child that runs exactly the spec in ``spec_path`` (``estimate``: and
    records its pre-flight estimate, as the window showed one)."""
    return [*entry_point(), "train", "--spec", str(spec_path), "--progress", "json", "--json",
            *(["--estimate"] if estimate else [])]


def extend_command(spec_path: str | os.PathLike, reference: str = "") -> list[str]:
    """The argv of a child that runs the extension in ``spec_path`` (its report on stdout at the end)."""
    return [*entry_point(), "extend", "--spec", str(spec_path), "--progress", "json", "--json",
            *(["--reference", reference] if reference else [])]


@dataclass
class TrainOutcome:
    """How a child run ended."""

    run_id: int | None
    status: str            # finished | cancelled | failed | error (bad input) | crashed
    exit_code: int
    message: str = ""
    result: dict = field(default_factory=dict)
    field: str = ""        # the RunSpec field a bad-setting error is about (ConfigError.field)


class TrainingProcess(QObject):
    """One ``workbench train`` child at a time, driven from the GUI thread."""

    progress_line = Signal(dict)     # every JSON progress line (not `event`: that is QObject.event())
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
        self._error_field = ""
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
        return True  # psutil suspends processes on POSIX and Windows alike

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)

    # ---- control -------------------------------------------------------------------------------
    def start(self, argv: list[str]) -> None:
        if self._proc is not None:
            raise WorkbenchError("a training run is already in progress")
        self._buffer, self._stdout, self._errors, self._other = b"", b"", [], []
        self._error_field = ""
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
        _suspend_tree(self.pid)
        self._resume_state = self.state
        self._set_state("paused")
        return True

    def resume(self) -> bool:
        if self._proc is None or self.state != "paused" or not self.pid:
            return False
        _resume_tree(self.pid)
        self._set_state(getattr(self, "_resume_state", "training"))
        return True

    def cancel(self) -> None:
        """SIGTERM: the child stops between two merges and marks its run cancelled."""
        if self._proc is None:
            return
        self.cancel_requested = True
        if self.state == "paused" and self.pid:
            _resume_tree(self.pid)  # a stopped process cannot act on SIGTERM
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
        if kind == "error":  # a bad setting: its field, so the form can mark the control
            self._error_field = str(data.get("field", ""))
            return
        if kind == "reading" and self.state in ("starting", "reading"):
            self._set_state("reading")
        elif kind == "started":
            self.run_id = int(data["run_id"])
            if self.state != "paused" and self.state != "stopping":
                self._set_state("training")
            self.run_started.emit(self.run_id, int(data.get("target", 0)))
        self.progress_line.emit(data)

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
        for line in self._stdout.decode("utf-8", "replace").splitlines():
            if line.startswith("{"):
                try:
                    result = json.loads(line)
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
            outcome = TrainOutcome(run_id, "error", code, self._errors[-1], field=self._error_field)
        else:
            last = self._other[-1] if self._other else ""
            how = "was killed" if crashed else f"exited with code {code}"
            outcome = TrainOutcome(run_id, "crashed", code, f"the training process {how}" + (f": {last}" if last else ""))
        self._proc = None
        proc.deleteLater()
        self._set_state("idle")
        self.finished.emit(outcome)


def _tree(pid: int) -> list[psutil.Process]:
    """The training process and its descendants (the corpus-counting workers), writer excluded.

    The run's writer process is never suspended: it is idle while the trainer is, and stopped in
    the middle of a commit it would hold the project's write lock for the whole pause.
    """
    try:
        root = psutil.Process(pid)
        children = root.children(recursive=True)
    except psutil.Error:
        return []
    out = [root]
    for child in children:
        try:
            if is_writer_command([os.fsencode(a) for a in child.cmdline()]):
                continue
        except psutil.Error:
            continue  # gone (or not ours to look at): nothing to suspend
        out.append(child)
    return out


def _suspend_tree(pid: int) -> None:
    for proc in _tree(pid):
        try:
            proc.suspend()
        except psutil.Error:
            pass  # ended meanwhile


def _resume_tree(pid: int) -> None:
    for proc in _tree(pid):
        try:
            proc.resume()
        except psutil.Error:
            pass
