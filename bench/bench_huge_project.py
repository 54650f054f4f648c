"""How long the window's event loop stalls on a project with a run of millions of merges.

    python bench/bench_huge_project.py [--merges 10000000] [--pieces 1000000] [--dir FOLDER]

Builds (once, kept in ``--dir``) a project with a real BPE run extended by SQL to ``--merges``
merges and vocabulary entries, and a real Unigram run extended to ``--pieces`` pieces with a log
probability each. Then the real main window (offscreen) opens it while a 5 ms ``PreciseTimer``
records the longest gap between two ticks — the longest the window stood still — through each
phase: opening the project, the Merges tab's filter (substring and regex) and sort, the Vocabulary
tab's filter and sort, the Unigram piece table's filter and sort and its corpus count with the
never-used share. Prints one line per phase:
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
    ``worst_cpu`` (with ``worst_cpu_wall``) is the gap in which the window thread spent the most CPU
    — the stretch of its own work a user would feel on an idle machine; ``over_frame`` counts the
    gaps longer than one 60 Hz frame. With ``sampler`` set (``--profile``), a thread samples the
    window thread's Python stack while it stands still and :meth:`report` says what each stall was.
    """

    def __init__(self, sampler: StallSampler | None = None, turns: TurnProfiler | None = None):
        super().__init__()
        self.turns = turns
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.sampler = sampler
        self.longest = self.longest_cpu = self.worst_cpu = self.worst_cpu_wall = 0.0
        self.over_frame = 0
        self._last = self._last_cpu = 0.0

    def start(self) -> None:
        self.longest, self._last = 0.0, time.perf_counter()
        self.longest_cpu, self._last_cpu = 0.0, time.thread_time()
        self.worst_cpu = self.worst_cpu_wall = 0.0
        self.over_frame = 0
        if self.sampler is not None:
            self.sampler.begin(self._last)
        if self.turns is not None:
            self.turns.begin()
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        self._tick()
        if self.sampler is not None:
            self.sampler.end()
        if self.turns is not None:
            self.turns.end()
        return self.longest

    def cpu_text(self) -> str:
        return (f"worst own-CPU stretch {1000 * self.worst_cpu:4.0f} ms CPU in {1000 * self.worst_cpu_wall:5.0f} ms, "
                f"{self.over_frame} gaps > {FRAME_MS:.1f} ms")

    @Slot()
    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        gap, used = now - self._last, cpu - self._last_cpu
        if gap > self.longest:
            self.longest, self.longest_cpu = gap, used
        if used > self.worst_cpu:
            self.worst_cpu, self.worst_cpu_wall = used, gap
        if gap * 1000 > FRAME_MS + TICK_MS:
            self.over_frame += 1
        if self.sampler is not None:
            self.sampler.tick(now, gap, used)
        if self.turns is not None:
            self.turns.tick(used)
        self._last, self._last_cpu = now, time.thread_time()


FRAME_MS = 1000 / 60


class StallSampler:
    """Samples the window thread's Python stack every 2 ms from another thread; :meth:`report`
    lists each gap of the event loop longer than a frame with the frames it was spent in.

    Only Python frames are seen: time inside Qt (layout, painting) shows as the Python call that
    entered it (``exec`` of the event loop when no Python frame of ours is on the stack). The
    sampler takes the GIL every 2 ms, so it slows what it measures a little: use it to say *what*
    a stall is, not to time it.
    """

    def __init__(self, interval_s: float = 0.002):
        import threading

        self.interval = interval_s
        self.main = threading.main_thread().ident
        self.samples: list[tuple[float, str]] = []
        self.others: list[tuple[float, int, str]] = []  # other threads' stacks (ident, where)
        self.watch = None  # a ThreadWatch: which threads ran in a stall (the GIL's holder)
        self.stalls: list[tuple[float, float, float]] = []  # (start, wall, cpu)
        self._running = False
        self._thread: threading.Thread | None = None

    def begin(self, now: float) -> None:
        import threading

        self.samples, self.others, self.stalls, self._running = [], [], [], True
        if self.watch is None:
            from thread_watch import ThreadWatch

            self.watch = ThreadWatch()
        self.watch.start()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def end(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join()
        if self.watch is not None:
            self.watch.stop()

    def tick(self, now: float, gap: float, cpu: float) -> None:
        if gap * 1000 > FRAME_MS + TICK_MS:
            self.stalls.append((now - gap, gap, cpu))

    def _run(self) -> None:
        import threading

        mine = threading.get_ident()
        while self._running:
            now = time.perf_counter()
            for ident, frame in sys._current_frames().items():
                if ident == self.main:
                    self.samples.append((now, _where(frame)))
                elif ident != mine:
                    self.others.append((now, ident, _where(frame)))
            time.sleep(self.interval)

    def report(self, top: int = 4) -> None:
        from collections import Counter

        worst = sorted(self.stalls, key=lambda s: -s[2])[:top]  # the most own CPU, and the longest
        longest = max(self.stalls, key=lambda s: s[1], default=None)
        for start, wall, cpu in worst + ([longest] if longest is not None and longest not in worst else []):
            inside = Counter(where for t, where in self.samples if start <= t <= start + wall)
            print(f"      stall {1000 * wall:6.0f} ms wall, {1000 * cpu:5.0f} ms CPU:", flush=True)
            for where, n in inside.most_common(5):
                print(f"        {n:4d} × {where}", flush=True)
            if self.watch is not None and self.watch.samples:
                ran = sorted(self.watch.cpu_in(start, start + wall).items(), key=lambda kv: -kv[1])
                print("        threads that ran: " + ", ".join(f"{tid} {1000 * c:.0f} ms" for tid, c in ran[:4]
                                                            if c >= 0.001), flush=True)
            elsewhere = Counter(where for t, _i, where in self.others if start - 0.002 <= t <= start + wall + 0.004)
            for where, n in elsewhere.most_common(3):
                print(f"        other thread {n:3d} × {where}", flush=True)


class EventLog(QObject):
    """Every event the window's thread delivers, with its thread CPU time when delivery began (an
    application-wide event filter): what a turn spent inside Qt — painting a widget, laying a
    window out — where a Python profile sees nothing. An event's cost is read as the CPU until the
    next event began (a paint's nested child paints are events of their own)."""

    def __init__(self):
        super().__init__()
        self.events: list[tuple[float, str, int]] = []

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        self.events.append((time.thread_time(), type(obj).__name__, event.type().value))
        return False

    def take(self) -> list[tuple[float, str, int]]:
        out, self.events = self.events, []
        return out

    @staticmethod
    def summary(events: list[tuple[float, str, int]], end: float, top: int = 8) -> list[str]:
        from collections import defaultdict

        from PySide6.QtCore import QEvent

        cost: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0])
        for (t, cls, kind), nxt in zip(events, [e[0] for e in events[1:]] + [end]):
            cost[(cls, kind)][0] += nxt - t
            cost[(cls, kind)][1] += 1
        out = []
        for (cls, kind), (spent, n) in sorted(cost.items(), key=lambda kv: -kv[1][0])[:top]:
            try:
                name = QEvent.Type(kind).name
            except ValueError:
                name = str(kind)
            out.append(f"{1000 * spent:6.1f} ms  {n:4d} × {name} → {cls}")
        return out


class TurnProfiler:
    """cProfile of the window thread between two ticks; keeps the few gaps with the most own CPU.

    What runs inside Qt without a Python frame (painting native widgets, layout) is not in a
    profile: the gap's CPU against the profile's total says how much of it that was, and the
    turn's Qt events (:class:`EventLog`) say which widgets and events it went to.
    """

    def __init__(self, keep: int = 3):
        self.keep = keep
        self.kept: list[tuple[float, object, list[str]]] = []
        self._prof = None
        self.log = EventLog()

    def begin(self) -> None:
        import cProfile

        from PySide6.QtWidgets import QApplication

        self.kept = []
        QApplication.instance().installEventFilter(self.log)
        self.log.take()
        self._prof = cProfile.Profile(time.thread_time)  # own CPU, not waits for the GIL
        self._prof.enable()

    def tick(self, cpu: float) -> None:
        import cProfile

        if self._prof is None:
            return
        self._prof.disable()
        events = self.log.take()
        if cpu * 1000 > FRAME_MS:
            self.kept.append((cpu, self._prof, EventLog.summary(events, time.thread_time())))
            self.kept = sorted(self.kept, key=lambda k: -k[0])[:self.keep]
        self._prof = cProfile.Profile(time.thread_time)  # own CPU, not waits for the GIL
        self._prof.enable()

    def end(self) -> None:
        import io
        import pstats

        from PySide6.QtWidgets import QApplication

        if self._prof is not None:
            self._prof.disable()
            self._prof = None
        QApplication.instance().removeEventFilter(self.log)
        for cpu, prof, events in self.kept:
            out = io.StringIO()
            stats = pstats.Stats(prof, stream=out)
            print(f"      turn with {1000 * cpu:.0f} ms own CPU (profile total {1000 * stats.total_tt:.0f} ms):")
            stats.sort_stats("cumulative").print_stats(18)
            lines = [ln for ln in out.getvalue().splitlines() if ln.strip()][5:]
            for ln in lines[:22]:
                print("        " + ln[:180])
            print("        its Qt events, by CPU until the next began:")
            for ln in events:
                print("          " + ln)


def _where(frame) -> str:
    """The innermost three frames of the project or pyqtgraph on a stack (or the innermost one)."""
    ours = []
    f = frame
    while f is not None and len(ours) < 3:
        name = f.f_code.co_filename
        if ("workbench" in name or "pyqtgraph" in name) and "/bench/" not in name:
            short = name.split("/workbench/")[-1] if "/workbench/" in name else name.split("site-packages/")[-1]
            ours.append(f"{short}:{f.f_lineno} {f.f_code.co_name}")
        f = f.f_back
    if not ours:
        return f"(Qt / event loop: {frame.f_code.co_name})"
    return " < ".join(ours)


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
            from PySide6.QtWidgets import QApplication

            QApplication.instance().removeEventFilter(self)  # it saw every event until then: no more
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
          f"({1000 * probe.longest_cpu:4.0f} ms CPU)   {probe.cpu_text()}   peak RSS {peak:6.0f} MB"
          + ("" if ok else "   (TIMED OUT)"), flush=True)
    if probe.sampler is not None:
        probe.sampler.report()
    if painted is not None:
        first = f"{1000 * (painted.at - t0):.0f} ms" if painted.at is not None else "none"
        print(f"    first paint after the open: {first}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--merges", type=int, default=10_000_000)
    ap.add_argument("--pieces", type=int, default=200_000)
    ap.add_argument("--open-only", action="store_true", help="stop once the Merges tab shows the long run")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "wb-huge-bench")
    ap.add_argument("--profile", action="store_true", help="say what each stall longer than a frame was")
    ap.add_argument("--turns", action="store_true",
                    help="cProfile the window thread's three worst turns per phase (slows it: what, not how long)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}", flush=True)
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
    spin_until(lambda: False, 0.5)  # the window's own first show (polish, layout, paint) is not the phase's
    probe = Probe(StallSampler() if args.profile else None, TurnProfiler() if args.turns else None)
    merges = window.merges
    model = merges.model

    training = window.training

    def train_drawn() -> bool:
        plots = training.plots
        return (bool(plots.runs) and all(c.points.n > 0 for c in plots.runs.values())
                and not getattr(plots, "drawing", lambda: False)() and not window.is_opening()
                and not window.corpus.is_scanning() and not getattr(window.merges, "is_listing", lambda: False)())

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
    merges.set_filter()
    spin_until(lambda: not pmodel.busy)
    # The corpus count of 200,000 pieces (on a worker) and its summary line: the never-used share
    # (a pass over every piece, ~60 ms) was made on the window's thread at each summary update.
    phase(probe, "pieces: usage counted and shown", pieces.count_usage,
          lambda: pieces.usage is not None and "Never used" in pieces.summary.text())
    window.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}", flush=True)


if __name__ == "__main__":
    main()
