"""The Merges tab's own turns of the window's event loop, in the 300-run project of
``bench_many_runs.py`` (built there, once, in its default ``--dir``).

    python bench/bench_merges_turns.py [--project FILE]

A turn is the stretch between two wake-ups or waits of the window thread's event dispatcher
(``aboutToBlock`` / ``awake``, as :mod:`workbench.ui.turns` counts them); its cost is the thread's
CPU time in it. Unlike ``bench_many_runs.py``'s worst stretch between two 5 ms ticks (which also
holds the other tabs' steps of the same moments), this prints the three worst turns of:

* the Merges tab's listing delivered by its worker (``show_listed``) until 0.3 s later — the Train
  tab is the one shown, so what is timed is the Merges tab's own work;
* the Merges tab shown (its first paint);
* run 1 (1,744 merges: checked on the window's thread) and run 2 (Unigram) chosen.

Prints the load average; CPU time, not wall time (the machine is shared). Compare two checkouts by
running each with its own ``PYTHONPATH``, interleaved (one round a process).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_huge_project import spin_until  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", type=Path, default=Path(tempfile.gettempdir()) / "wb-runs-bench" / "runs-300.tokproj")
    args = ap.parse_args()
    if not args.project.exists():
        sys.exit(f"{args.project}: not found: run bench/bench_many_runs.py once to build it")

    from PySide6.QtCore import QAbstractEventDispatcher, QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.ui.main_window import MainWindow
    from workbench.ui.merges import panel as merges_panel
    from workbench.ui.settings import AppSettings

    app = QApplication.instance() or QApplication(sys.argv)
    app.setOrganizationName("wb-bench")
    app.setApplicationName("wb-bench-merges-turns")
    turns: list[float] = []
    state = {"t": time.thread_time(), "on": False}

    def mark() -> None:
        now = time.thread_time()
        if state["on"]:
            turns.append(1000 * (now - state["t"]))
        state["t"] = now

    def start() -> None:
        turns.clear()
        state["on"], state["t"] = True, time.thread_time()

    def worst(name: str) -> None:
        state["on"] = False
        print(f"{name:<34} worst turns (ms CPU) {' / '.join(f'{t:5.1f}' for t in sorted(turns)[-3:])}", flush=True)

    real_show_listed = merges_panel.MergePanel.show_listed

    def show_listed(self, *a, **k):
        start()
        return real_show_listed(self, *a, **k)

    merges_panel.MergePanel.show_listed = show_listed  # type: ignore[method-assign]
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}", flush=True)
    window = MainWindow(AppSettings())
    window.resize(1200, 800)
    window.show()
    dispatcher = QAbstractEventDispatcher.instance()
    dispatcher.aboutToBlock.connect(mark)
    dispatcher.awake.connect(mark)
    spin_until(lambda: False, 0.5)
    merges = window.merges
    window.open_project(args.project, ask_first=False)
    spin_until(lambda: not window.is_opening() and not merges.jobs.busy()
               and merges.current_source() is not None, 30)
    spin_until(lambda: False, 0.3)
    worst("listing delivered (tab hidden)")

    def act(name: str, action) -> None:
        spin_until(lambda: False, 0.5)
        start()
        QTimer.singleShot(0, action)
        spin_until(lambda: False, 0.4)
        worst(name)

    act("Merges tab shown", lambda: window.show_panel("merges"))
    for run in (1, 2):
        act(f"run {run} chosen", lambda run=run: (merges._select_in_chooser(("run", run)),
                                                  merges._set_source(("run", run))))
    window.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}", flush=True)


if __name__ == "__main__":
    main()
