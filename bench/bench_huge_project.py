"""How long the window's event loop stalls on a project with a run of millions of merges.

    python bench/bench_huge_project.py [--merges 10000000] [--pieces 1000000] [--dir FOLDER]

Builds (once, kept in ``--dir``) a project with a real BPE run extended by SQL to ``--merges``
merges and vocabulary entries, and a real Unigram run extended to ``--pieces`` pieces with a log
probability each. Then the real main window (offscreen) opens it while a 5 ms ``PreciseTimer``
records the longest gap between two ticks — the longest the window stood still — through each
phase: opening the project, the Merges tab's filter (substring and regex) and sort, the Vocabulary
tab's filter and sort, the Unigram piece table's filter and sort. Prints one line per phase:
wall time, longest stall, and the process's peak resident memory so far.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QEventLoop, QObject, Qt, QTimer, Slot  # noqa: E402

TICK_MS = 5


def build(folder: Path, merges: int, pieces: int) -> Path:
    """The project (built once per size: ~1 min per 10M rows)."""
    project = folder / f"huge-{merges}-{pieces}.tokproj"
    if project.exists():
        return project
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "c.txt"
    corpus.write_text("hello world, low lower lowest\n" * 50, encoding="utf-8")
    tmp = project.with_suffix(".part")
    tmp.unlink(missing_ok=True)
    cli = [sys.executable, "-m", "workbench"]
    subprocess.run([*cli, "train", str(corpus), "--project", str(tmp), "--merges", "5"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([*cli, "train", str(corpus), "--project", str(tmp), "--model", "unigram", "--vocab-size", "15"],
                   check=True, stdout=subprocess.DEVNULL)
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    base = conn.execute("SELECT max(id) + 1 FROM vocab WHERE run_id = 1").fetchone()[0]
    first = conn.execute("SELECT max(rank) + 1 FROM merges WHERE run_id = 1").fetchone()[0]
    conn.executemany("INSERT INTO merges VALUES (1, ?, 104, 101, ?, ?, 2, ?, 1000, NULL)",
                     ((first + k, base + k, merges - k, base + k + 1) for k in range(merges)))
    conn.executemany("INSERT INTO vocab VALUES (1, ?, ?, 'merge')", ((base + k, b"he%d" % k) for k in range(merges)))
    # the Unigram run: more pieces, one log probability each in its settings
    ubase = conn.execute("SELECT max(id) + 1 FROM vocab WHERE run_id = 2").fetchone()[0]
    conn.executemany("INSERT INTO vocab VALUES (2, ?, ?, 'base')",
                     ((ubase + k, "▁lo%d".encode() % k) for k in range(pieces)))
    settings = json.loads(conn.execute("SELECT settings FROM runs WHERE id = 2").fetchone()[0])
    scores = list(settings.get("scores") or [])
    scores += [-5.0 - k / pieces for k in range(pieces)]
    settings["scores"] = scores
    conn.execute("UPDATE runs SET settings = ? WHERE id = 2", (json.dumps(settings),))
    conn.commit()
    conn.close()
    tmp.rename(project)
    return project


class Probe(QObject):
    """The longest gap between two ticks of a 5 ms timer: how long the event loop stood still.

    ``longest_cpu`` is the window thread's own CPU time within that gap: on a loaded machine a gap
    can be mostly waiting (for a core, or for the GIL a worker holds) rather than work of its own.
    """

    def __init__(self):
        super().__init__()
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.longest = self.longest_cpu = 0.0
        self._last = self._last_cpu = 0.0

    def start(self) -> None:
        self.longest, self._last = 0.0, time.perf_counter()
        self.longest_cpu, self._last_cpu = 0.0, time.thread_time()
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        self._tick()
        return self.longest

    @Slot()
    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        if now - self._last > self.longest:
            self.longest, self.longest_cpu = now - self._last, cpu - self._last_cpu
        self._last, self._last_cpu = now, cpu


class FirstPaint(QObject):
    """When the window first painted after :meth:`arm` (an application-wide event filter)."""

    def __init__(self, window):
        super().__init__()
        self.window = window
        self.at: float | None = None

    def arm(self) -> None:
        from PySide6.QtWidgets import QApplication

        self.at = None
        QApplication.instance().installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if self.at is None and event.type() == QEvent.Type.Paint and hasattr(obj, "window") \
                and obj.window() is self.window:
            self.at = time.perf_counter()
        return False


def spin_until(cond, timeout_s: float = 600.0) -> bool:
    loop = QEventLoop()
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:
        QTimer.singleShot(2, loop.quit)
        loop.exec()
    return cond()


def phase(probe: Probe, name: str, action, done, painted: FirstPaint | None = None) -> None:
    probe.start()
    if painted is not None:
        painted.arm()
    t0 = time.perf_counter()
    QTimer.singleShot(0, action)  # inside the loop, so a blocking call shows as a stall
    spin_until(lambda: False, 0.05)
    ok = spin_until(done)
    wall = time.perf_counter() - t0
    longest = probe.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{name:<34} {wall:7.2f} s   longest stall {1000 * longest:7.0f} ms "
          f"({1000 * probe.longest_cpu:4.0f} ms CPU)   peak RSS {peak:6.0f} MB"
          + ("" if ok else "   (TIMED OUT)"), flush=True)
    if painted is not None:
        first = f"{1000 * (painted.at - t0):.0f} ms" if painted.at is not None else "none"
        print(f"    first paint after the open: {first}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--merges", type=int, default=10_000_000)
    ap.add_argument("--pieces", type=int, default=200_000)
    ap.add_argument("--open-only", action="store_true", help="stop once the Merges tab shows the long run")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "wb-huge-bench")
    args = ap.parse_args()
    t0 = time.perf_counter()
    project = build(args.dir, args.merges, args.pieces)
    print(f"project: {project.stat().st_size / 1e6:.0f} MB ({time.perf_counter() - t0:.0f} s to build or find)")

    from PySide6.QtWidgets import QApplication

    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    app = QApplication.instance() or QApplication(sys.argv)
    app.setOrganizationName("wb-bench")
    app.setApplicationName("wb-bench-huge")
    window = MainWindow(AppSettings())
    window.resize(1200, 800)
    window.show()
    probe = Probe()
    merges = window.merges
    model = merges.model

    training = window.training

    def train_drawn() -> bool:
        return bool(training.plots.runs) and not window.corpus.is_scanning()

    phase(probe, "open project (Train tab drawn)", lambda: window.open_project(project, ask_first=False), train_drawn,
          FirstPaint(window))
    phase(probe, "Train: the 10M-merge run's curves", lambda: training.history.select([1]),
          lambda: 1 in training.plots.runs and len(training.plots.curve_data(1, "frequency")[0]) > 0)

    def show_merges() -> None:
        window.show_panel("merges")
        merges._select_in_chooser(("run", 1))
        merges._set_source(("run", 1))

    phase(probe, "Merges tab, run 1 shown", show_merges, lambda: not model.busy and model.rowCount() > 0)
    if args.open_only:
        window.shutdown()
        return
    phase(probe, "merges: substring filter", lambda: merges.set_filter("he99999", regex=False),
          lambda: not model.busy)
    print(f"    {model.rowCount():,} rows")
    phase(probe, "merges: regex filter", lambda: merges.set_filter(r"^he9+$", regex=True), lambda: not model.busy)
    print(f"    {model.rowCount():,} rows")
    phase(probe, "merges: regex matching every row", lambda: merges.set_filter(r"he", regex=True),
          lambda: not model.busy)
    print(f"    {model.rowCount():,} rows")
    phase(probe, "merges: sort by frequency", lambda: model.sort(4, Qt.SortOrder.AscendingOrder),
          lambda: not model.busy)
    phase(probe, "merges: clear the filter", lambda: merges.set_filter(), lambda: not model.busy)

    vocab = merges.vocab
    vmodel = vocab.model
    phase(probe, "Vocabulary tab shown", lambda: merges.tabs.setCurrentIndex(1),
          lambda: not vmodel.busy and vmodel.rowCount() > 0)
    phase(probe, "vocabulary: substring filter", lambda: vocab.filter.edit.setText("he99999"),
          lambda: not vmodel.busy and vmodel.is_filtered())
    print(f"    {vmodel.rowCount():,} rows")
    phase(probe, "vocabulary: sort by piece", lambda: vmodel.sort(1, Qt.SortOrder.DescendingOrder),
          lambda: not vmodel.busy)

    pieces = merges.pieces
    pmodel = pieces.model

    def show_pieces() -> None:
        merges.tabs.setCurrentIndex(0)
        merges.set_filter()
        merges._select_in_chooser(("run", 2))
        merges._set_source(("run", 2))

    phase(probe, "Unigram pieces shown", show_pieces, lambda: not pmodel.busy and pmodel.rowCount() > 0)
    phase(probe, "pieces: substring filter", lambda: merges.set_filter("lo99999", regex=False),
          lambda: not pmodel.busy and pmodel.is_filtered())
    print(f"    {pmodel.rowCount():,} rows")
    phase(probe, "pieces: sort by log prob", lambda: pmodel.sort(2, Qt.SortOrder.AscendingOrder),
          lambda: not pmodel.busy)
    window.shutdown()


if __name__ == "__main__":
    main()
