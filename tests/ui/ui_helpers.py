"""Helpers for the window tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox


class BoxAnswerer:
    """Clicks ``button`` on the next modal QMessageBox and remembers its text."""

    def __init__(self, button: QMessageBox.StandardButton, polls: int = 3000):
        self.button = button
        self.texts: list[str] = []
        self._left = polls  # stop polling after ~30 s so a missing box cannot haunt later tests
        self._poll()

    def _poll(self) -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox) and box.isVisible():
            self.texts.append(box.text())
            box.button(self.button).click()
            return
        self._left -= 1
        if self._left > 0:
            QTimer.singleShot(10, self._poll)


def train_cli(files: list[Path], project: Path, *args: str) -> None:
    """Create runs headless (fast set-up for tests that are about viewing, not training)."""
    cmd = [sys.executable, "-m", "workbench", "train", *map(str, files), "--project", str(project),
           "--progress", "none", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def proc_state(pid: int) -> str:
    """The Linux process state letter (R, S, T for stopped …)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()


def open_and_wait(window, qtbot, project: Path, timeout: int = 30000) -> bool:
    """``window.open_project(project)`` and wait until the window has taken the project over (the
    file is opened and its runs read on a worker); True when it is then the open project."""
    if not window.open_project(project, ask_first=False):
        return False
    qtbot.waitUntil(lambda: not window.is_opening(), timeout=timeout)
    return window.session.path == Path(project).expanduser().absolute()


def wait_for_curves(qtbot, plots, run_ids, timeout: int = 10000) -> None:
    """Until every run in ``run_ids`` has its stored points and all four plots are drawn: a stored
    run's points are read and built on a worker, then drawn a plot per turn of the event loop."""
    def drawn() -> bool:
        return (all(rid in plots.runs and plots.runs[rid].points.n > 0 for rid in run_ids)
                and not plots.drawing())
    qtbot.waitUntil(drawn, timeout=timeout)
