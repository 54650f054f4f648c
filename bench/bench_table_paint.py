"""What one paint of the Merges, Vocabulary and Unigram piece tables costs the window's thread.

    python bench/bench_table_paint.py [--rounds 30] [--dir FOLDER]

Builds (once, kept in ``--dir``) a project with a real BPE run of 3,000 merges and a real Unigram
run of 2,000 pieces trained on the demo corpus (five languages), shows a real :class:`MergePanel` (offscreen,
1200 × 800) and times ``viewport().repaint()`` of each table in thread CPU: *fresh* right after a
model reset (every row read and formatted again: what follows a filter, a sort or another run) and
*warm* (the same rows painted again: a hover, a selection). Also the same paint of a bare model that
hands Qt constant strings, fonts and alignments — the floor, Qt's own drawing of 30 rows. Prints the
median and minimum of ``--rounds`` paints per case and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def build(folder: Path) -> Path:
    project = folder / "paint.tokproj"
    if project.exists():
        return project
    folder.mkdir(parents=True, exist_ok=True)
    from workbench.corpus.demo import demo_corpus_files

    tmp = project.with_suffix(".part")
    tmp.unlink(missing_ok=True)
    cli = [sys.executable, "-m", "workbench", "train", *map(str, demo_corpus_files()), "--project", str(tmp)]
    for extra in (["--merges", "3000"], ["--model", "unigram", "--vocab-size", "2000"]):
        subprocess.run([*cli, *extra], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tmp.rename(project)
    return project


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "wb-paint-bench")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}", flush=True)
    project = build(args.dir)

    from PySide6.QtCore import QAbstractTableModel, QEventLoop, QModelIndex, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv)

    from workbench.ui.merges import merge_model
    from workbench.ui.merges.panel import MergePanel
    from workbench.ui.merges.widgets import PlaceholderTableView, configure_table

    def spin(seconds: float) -> None:
        loop = QEventLoop()
        QTimer.singleShot(int(seconds * 1000), loop.quit)
        loop.exec()

    def until(cond, limit: float = 60.0) -> None:
        end = time.monotonic() + limit
        while not cond() and time.monotonic() < end:
            spin(0.05)

    def line(label: str, times: list[float]) -> None:
        print(f"{label:<28} median {1000 * statistics.median(times):5.1f} ms   min {1000 * min(times):5.1f} ms",
              flush=True)

    def measure(view, model, label: str) -> None:
        fresh, warm = [], []
        for _ in range(args.rounds):
            model.beginResetModel()  # as a filter's result does: no row read or formatted yet
            model._pages.clear()
            getattr(model, "_cells", {}).clear()
            model.endResetModel()
            app.processEvents()
            t = time.thread_time()
            view.viewport().repaint()
            fresh.append(time.thread_time() - t)
            t = time.thread_time()
            view.viewport().repaint()
            warm.append(time.thread_time() - t)
        line(f"{label}, fresh", fresh)
        line(f"{label}, warm", warm)

    panel = MergePanel()
    panel.resize(1200, 800)
    panel.show()
    panel.set_project(project)
    until(lambda: not panel.jobs.busy())
    panel._select_in_chooser(("run", 1))
    panel._set_source(("run", 1))
    until(lambda: not panel.jobs.busy() and not panel.model.busy)
    spin(0.3)
    measure(panel.table, panel.model, "merges (BPE, 3,000)")
    panel.tabs.setCurrentIndex(1)
    until(lambda: not panel.vocab.model.busy and panel.vocab.model.rowCount() > 0)
    spin(1.0)
    measure(panel.vocab.table, panel.vocab.model, "vocabulary (counted)")
    panel.tabs.setCurrentIndex(0)
    panel._select_in_chooser(("run", 2))
    panel._set_source(("run", 2))
    until(lambda: not panel.jobs.busy() and not panel.pieces.model.busy)
    spin(1.0)
    measure(panel.pieces.table, panel.pieces.model, "Unigram pieces")

    font, right = merge_model.mono_font(), merge_model._RIGHT
    width = panel.table.viewport().width()

    class Floor(QAbstractTableModel):
        """Constant text, font and alignment: Qt's own drawing of the same cells."""

        def rowCount(self, parent=QModelIndex()):  # noqa: N802
            return 0 if parent.isValid() else 1000

        def columnCount(self, parent=QModelIndex()):  # noqa: N802
            return 0 if parent.isValid() else 10

        def data(self, index, role=0):
            return "he1234" if role == 0 else font if role == 6 else right if role == 7 else None

    view = PlaceholderTableView()
    view.setModel(Floor())
    configure_table(view, {0: 64, 1: 110, 2: 110, 3: 150, 4: 90, 5: 48, 6: 48, 7: 72, 8: 80, 9: 150}, stretch=9)
    view.resize(width, panel.table.height())
    view.show()
    app.processEvents()
    floor = []
    for _ in range(args.rounds):
        t = time.thread_time()
        view.viewport().repaint()
        floor.append(time.thread_time() - t)
    line("floor (constant cells)", floor)
    panel.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}", flush=True)


if __name__ == "__main__":
    main()
