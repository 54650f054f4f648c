"""A Corpus tab without a main window scanning a folder while cyclic garbage holds Qt objects with
running timers: the scenario of the UI loops' segfault (``test_ui_corpus_panel.py``).

``python collector_child.py FOLDER``: prints one JSON line — the rows listed, the thread of every
collector pass and the thread each garbage object ended on. A fresh process, so the automatic
collector is on until a thread of ours starts, as it was in a test worker that had made no window.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import weakref
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QObject, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402


class Held(QObject):
    """Stands for a closed dialog or a replaced model: a Qt object with a timer, in a cycle."""


def main(folder: Path) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    from workbench.ui.corpus.panel import CorpusPanel

    files = folder / "many"
    files.mkdir()
    for i in range(400):
        (files / f"part{i:04d}.txt").write_text(f"line {i} of many\n", encoding="utf-8")
    passes: list[str] = []
    ended: list[str] = []
    gc.callbacks.append(lambda phase, _info: passes.append(threading.current_thread().name)
                        if phase == "start" else None)
    assert gc.isenabled()
    panel = CorpusPanel()
    panel.show()
    for _ in range(20):
        held = Held()
        held.me = held  # type: ignore[attr-defined]
        held.timer = QTimer(held)  # type: ignore[attr-defined]
        held.timer.start(5)  # type: ignore[attr-defined]
        weakref.finalize(held, lambda: ended.append(threading.current_thread().name))
    del held
    loop = QEventLoop()
    panel.scan_finished.connect(loop.quit)
    QTimer.singleShot(120_000, loop.quit)
    panel.add_paths([files], prompt=False)
    loop.exec()
    rows = panel.model.rowCount()
    gc.collect()  # what no pass found by now, on this thread
    panel.shutdown()
    panel.close()
    app.processEvents()
    print(json.dumps({"rows": rows, "passes": passes, "ended": ended}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
