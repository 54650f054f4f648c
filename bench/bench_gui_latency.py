"""How responsive the window stays while a run trains: event-loop latency and click → first point.

    python bench/bench_gui_latency.py [--vocab-size 30000] [--corpus demo|shared|FILE...] [--repeat 5]

The real main window (offscreen unless a display is set) with the Train panel and its live plots
showing. A 10 ms ``PreciseTimer`` records how late each tick fires — the event-loop latency a user
feels as lag — in three phases:

1. idle (the window open, nothing running);
2. during a training run as the window runs it: a child process (``workbench train --progress
   json``), the plots polling the project file every 100 ms;
3. during the same run trained in-process in a ``QThread`` (the design STYLE.md warns about), with
   the same polling and plotting, for comparison.

Then the time from clicking Train to the first point drawn on the plots, on the demo corpus,
``--repeat`` times (the median is what to quote). Prints p50 / p99 / max lateness per phase.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import (  # noqa: E402
    QEventLoop,
    QObject,
    QSettings,
    Qt,
    QThread,
    QTimer,
    Signal,
    Slot,
)

TICK_MS = 10


def spin_until(cond, timeout_s: float) -> bool:
    loop = QEventLoop()
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:
        QTimer.singleShot(5, loop.quit)
        loop.exec()
    return cond()


class Ticker(QObject):
    """Records how late a 10 ms timer fires while ``active``."""

    def __init__(self):
        super().__init__()
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.samples: list[float] = []
        self._last = 0.0

    def start(self) -> None:
        self.samples = []
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> list[float]:
        self.timer.stop()
        return self.samples

    @Slot()
    def _tick(self) -> None:
        now = time.perf_counter()
        self.samples.append(max(0.0, (now - self._last) * 1000.0 - TICK_MS))
        self._last = now


def summary(name: str, samples: list[float]) -> str:
    if not samples:
        return f"{name:<38} no samples"
    s = sorted(samples)
    p50 = s[len(s) // 2]
    p99 = s[min(len(s) - 1, int(len(s) * 0.99))]
    return f"{name:<38} n={len(s):>5}  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  max {s[-1]:7.2f} ms"


class _InProcessWorker(QObject):
    started_run = Signal(int, int)
    done = Signal(int, str)

    def __init__(self, files, project, config):
        super().__init__()
        self.files, self.project, self.config = files, project, config

    @Slot()
    def run(self) -> None:
        from workbench.tasks.train import train_into_project

        def report(progress) -> None:
            if progress.event == "started":
                self.started_run.emit(progress.run_id, progress.target)

        run_id, status = train_into_project([str(f) for f in self.files], self.project, self.config, report=report)
        self.done.emit(run_id, status)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", nargs="+", default=["demo"], help="demo, shared (../shared/corpora) or files")
    ap.add_argument("--vocab-size", type=int, default=30000)
    ap.add_argument("--idle-s", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-thread", action="store_true", help="skip the in-process QThread comparison")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="wb-bench-"))
    os.environ["XDG_DATA_HOME"] = str(tmp / "data")
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "config"))

    from workbench.corpus import demo_corpus_files
    from workbench.ui.app import make_app
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    if args.corpus == ["demo"]:
        files = demo_corpus_files()
    elif args.corpus == ["shared"]:
        files = sorted((Path(__file__).resolve().parents[2] / "shared" / "corpora").glob("*.txt"))
    else:
        files = [Path(p) for p in args.corpus]
    app = make_app()
    ticker = Ticker()

    def window_for(project: Path) -> MainWindow:
        w = MainWindow(AppSettings())
        w.session.open(project, create=True)
        w.corpus.add_paths([str(f) for f in files], prompt=False)
        spin_until(lambda w=w: not w.corpus.is_scanning() and w.corpus.entries(), 60)  # noqa: B023 - called at once
        w.resize(1280, 820)
        w.show()
        w.show_panel("train")
        w.training.set_options(vocab_size=args.vocab_size, units="bytes", pretokenizer="gpt2")
        spin_until(lambda: False, 0.3)
        return w

    size = sum(f.stat().st_size for f in files)
    print(f"corpus: {len(files)} files, {size / 1e6:.2f} MB; vocab size {args.vocab_size}; tick {TICK_MS} ms; "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, QPA {os.environ.get('QT_QPA_PLATFORM')}")

    # 1. idle
    w = window_for(tmp / "idle.tokproj")
    ticker.start()
    spin_until(lambda: False, args.idle_s)
    print(summary("idle (window open)", ticker.stop()))

    # 2. child process (the window's way)
    panel = w.training
    ticker.start()
    t0 = time.monotonic()
    panel.start()
    spin_until(lambda: not panel.is_training(), 600)
    child_s = time.monotonic() - t0
    samples = ticker.stop()
    merges = panel.plots.point_count()
    print(summary("training, child process (the app)", samples) + f"   [{merges} merges in {child_s:.1f} s]")
    w.shutdown()
    w.deleteLater()

    # 3. in-process QThread, same polling and plots
    if not args.no_thread:
        from workbench.core.bpe import TrainConfig

        w = window_for(tmp / "thread.tokproj")
        panel = w.training
        config = TrainConfig(units="bytes", vocab_size=args.vocab_size, pretokenizer="gpt2")
        qthread = QThread()
        worker = _InProcessWorker(files, w.session.path, config)
        worker.moveToThread(qthread)
        qthread.started.connect(worker.run)
        finished: list = []
        worker.started_run.connect(panel._on_run_started)  # same live path as for the child
        worker.done.connect(lambda rid, status: finished.append((rid, status)))
        ticker.start()
        t0 = time.monotonic()
        qthread.start()
        spin_until(lambda: bool(finished), 600)
        thread_s = time.monotonic() - t0
        samples = ticker.stop()
        panel._tick()
        panel.poll_timer.stop()
        qthread.quit()
        qthread.wait()
        print(summary("training, in-process QThread", samples)
              + f"   [{panel.plots.point_count()} merges in {thread_s:.1f} s]")
        panel.live_run = None
        w.shutdown()
        w.deleteLater()

    # 4. click → first plotted point (demo corpus, the default form: vocab 1000)
    latencies = []
    demo = demo_corpus_files()
    for i in range(args.repeat):
        w = MainWindow(AppSettings())
        w.session.open(tmp / f"click{i}.tokproj", create=True)
        w.corpus.add_paths([str(f) for f in demo], prompt=False)
        spin_until(lambda w=w: not w.corpus.is_scanning() and w.corpus.entries(), 60)
        w.resize(1280, 820)
        w.show()
        w.show_panel("train")
        w.training.set_options(vocab_size=1000, units="bytes", pretokenizer="gpt2")
        spin_until(lambda: False, 0.2)
        w.training.start_button.click()
        spin_until(lambda w=w: not w.training.is_training(), 120)
        if w.training.first_point_latency is not None:
            latencies.append(w.training.first_point_latency * 1000)
        w.shutdown()
        w.deleteLater()
    if latencies:
        print(f"{'click Train → first plotted point':<38} n={len(latencies):>5}  median {statistics.median(latencies):6.0f} ms"
              f"  min {min(latencies):6.0f} ms  max {max(latencies):6.0f} ms  (demo corpus, vocab 1000)")
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
