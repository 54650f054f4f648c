"""``workbench --smoke-test DIR``: the window's own end-to-end check, for a frozen bundle or a fresh
install — open on the demo corpus, train through the Train tab (so the training child process and its
writer start through this very executable), export the run as ``DIR/tokenizer.json``, quit.

Exit status 0 when the run finished and the export was written, 1 otherwise (with one line on
stderr saying what failed). Left out: any judgement of the tokenizer itself (the test suite does that).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtWidgets import QApplication

TIMEOUT_S = 300.0


class SmokeTest(QObject):
    def __init__(self, window, out_dir: Path):
        super().__init__(window)
        self.window = window
        self.out_dir = out_dir
        self.status = 1
        self.started = False
        self.deadline = time.monotonic() + TIMEOUT_S
        self.timer = QTimer(self)
        self.timer.setInterval(200)
        self.timer.timeout.connect(self._tick)
        window.training.run_finished.connect(self._on_finished)

    def run(self, app: QApplication) -> int:
        self.timer.start()
        app.exec()
        return self.status

    @Slot()
    def _tick(self) -> None:
        if time.monotonic() > self.deadline:
            self._fail(f"no finished run within {TIMEOUT_S:.0f} s")
        elif not self.started:
            self.started = bool(self.window.training.start())  # False until the demo corpus is scanned

    @Slot(int, str)
    def _on_finished(self, run_id: int, status: str) -> None:
        if status != "finished" or not run_id:
            self._fail(f"the training run ended {status}")
            return
        from workbench.tasks.import_export import export_run

        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            project = self.window.session.path
            export_run(project, run_id, "hf", self.out_dir / "tokenizer.json", force=True)
        except Exception as exc:  # noqa: BLE001 - reported as the smoke test's one line
            self._fail(f"export failed: {exc}")
            return
        print(f"smoke test: run {run_id} finished, exported {self.out_dir / 'tokenizer.json'}", file=sys.stderr)
        self.status = 0
        self._quit()

    def _fail(self, why: str) -> None:
        print(f"smoke test failed: {why}", file=sys.stderr)
        self.status = 1
        self._quit()

    def _quit(self) -> None:
        """Close as a user would, minus the question about the untitled project (it is discarded)."""
        self.timer.stop()
        window = self.window

        def close() -> None:
            window.save_layout()
            window.shutdown()
            window.session.discard()
            app = QApplication.instance()
            if app is not None:
                app.exit(self.status)

        QTimer.singleShot(0, close)
