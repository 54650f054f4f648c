"""How long the window's event loop stalls opening a project of many runs (300 by default).

    python bench/bench_many_runs.py [--runs 300] [--dir FOLDER] [--profile]

Builds (once, kept in ``--dir``) a project with three real runs trained on the demo corpus (BPE,
Unigram, WordPiece) copied by SQL to ``--runs`` runs, each with its merges, vocabulary and steps.
Then the real main window (offscreen) opens it while a 5 ms ``PreciseTimer`` records the longest
gap between two ticks (see :class:`bench_huge_project.Probe`): opening the project until the
Train tab's history lists every run and the newest run's curves are drawn (every plot), then showing the
Merges, Compare and Inspect tabs, then run 1 chosen in the Merges tab and, as a phase of its own,
a pathological regular expression in its filter
(``(a|aa)+$`` over run 1, whose pieces are set to twenty ``a`` and a ``!``: ~50 ms of backtracking
each, stopped by the window's query limit). Prints one line per phase; ``--profile`` says what
each stall longer than a frame was.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_huge_project import Probe, StallSampler, TurnProfiler, phase, spin_until  # noqa: E402

TABLES = ("merges", "vocab", "run_steps", "run_corpora", "pruning_checkpoints")


def build(folder: Path, runs: int) -> Path:
    """Three trained runs, copied to ``runs`` (built once per size)."""
    project = folder / f"runs-{runs}.tokproj"
    if project.exists():
        return project
    folder.mkdir(parents=True, exist_ok=True)
    from workbench.corpus import demo_corpus_files

    files = [str(f) for f in demo_corpus_files()]
    tmp = project.with_suffix(".part")
    tmp.unlink(missing_ok=True)
    cli = [sys.executable, "-m", "workbench", "train", *files, "--project", str(tmp)]
    for extra in (["--vocab-size", "2000"], ["--model", "unigram", "--vocab-size", "2000"],
                  ["--model", "wordpiece", "--vocab-size", "2000"]):
        subprocess.run([*cli, *extra], check=True, stdout=subprocess.DEVNULL)
    conn = sqlite3.connect(tmp)
    cols = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in ("runs", *TABLES)}
    with conn:
        for new in range(4, runs + 1):
            old = (new - 1) % 3 + 1
            rest = [c for c in cols["runs"] if c != "id"]
            conn.execute(f"INSERT INTO runs (id, {', '.join(rest)}) SELECT ?, {', '.join(rest)} FROM runs WHERE id = ?",
                         (new, old))
            conn.execute("UPDATE runs SET name = name || ' copy ' || ? WHERE id = ?", (new, new))
            for table in TABLES:
                rest = [c for c in cols[table] if c != "run_id"]
                conn.execute(f"INSERT INTO {table} (run_id, {', '.join(rest)}) "
                             f"SELECT ?, {', '.join(rest)} FROM {table} WHERE run_id = ?", (new, old))
    conn.close()
    tmp.rename(project)
    return project


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "wb-runs-bench")
    ap.add_argument("--profile", action="store_true", help="say what each stall longer than a frame was")
    ap.add_argument("--turns", action="store_true", help="cProfile the window thread's worst turns per phase")
    args = ap.parse_args()
    t0 = time.perf_counter()
    project = build(args.dir, args.runs)
    conn = sqlite3.connect(project)  # run 1's pieces: each costs the pattern below ~50 ms
    with conn:
        conn.execute("UPDATE vocab SET piece = CAST(printf('%.20c!%d', 'a', id) AS BLOB) "
                     "WHERE run_id = 1 AND kind = 'merge'")
    conn.close()
    print(f"project: {args.runs} runs, {project.stat().st_size / 1e6:.0f} MB "
          f"({time.perf_counter() - t0:.0f} s to build or find); load average {os.getloadavg()[0]:.1f}", flush=True)

    from PySide6.QtWidgets import QApplication

    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    app = QApplication.instance() or QApplication(sys.argv)
    app.setOrganizationName("wb-bench")
    app.setApplicationName("wb-bench-runs")
    window = MainWindow(AppSettings())
    window.resize(1200, 800)
    window.show()
    spin_until(lambda: False, 0.5)  # the window's own first show (polish, layout, paint) is not the phase's
    probe = Probe(StallSampler() if args.profile else None, TurnProfiler() if args.turns else None)
    training = window.training

    def drawn(ids) -> bool:
        """The runs' stored points are in and every plot drawn (read and built on a worker, then
        drawn a plot per turn of the event loop)."""
        plots = training.plots
        return (all(r in plots.runs and plots.runs[r].points.n > 0 for r in ids)
                and not getattr(plots, "drawing", lambda: False)())

    def opened() -> bool:
        return (not window.is_opening() and len(training.history.run_ids()) == args.runs and bool(training.plots.runs)
                and drawn(list(training.plots.runs)) and not window.corpus.is_scanning()
                and not window.merges.jobs.busy())

    phase(probe, "open project (history + curves)", lambda: window.open_project(project, ask_first=False), opened)
    phase(probe, "Merges tab shown", lambda: window.show_panel("merges"),
          lambda: not window.merges.jobs.busy() and window.merges.model.rowCount() > 0)
    phase(probe, "Compare tab shown", lambda: window.show_panel("compare"), lambda: True)
    phase(probe, "Inspect tab shown", lambda: window.show_panel("inspect"), lambda: not window.inspect.jobs.busy())
    phase(probe, "Train tab: select 3 runs", lambda: training.history.select([args.runs, args.runs - 1, args.runs - 2]),
          lambda: drawn((args.runs, args.runs - 1, args.runs - 2)))
    merges = window.merges

    def choose_run() -> None:
        window.show_panel("merges")
        merges._select_in_chooser(("run", 1))
        merges._set_source(("run", 1))

    # Choosing the run and typing the pattern are two of the user's actions (two turns at least):
    # the pattern is its own phase, as a user types it into the run's listing.
    phase(probe, "merges: run 1 chosen", choose_run,
          lambda: merges.current_source() == ("run", 1) and not merges.model.busy and not merges.jobs.busy())
    phase(probe, "merges: pathological regex", lambda: merges.set_filter(r"(a|aa)+$", regex=True),
          lambda: merges.current_source() == ("run", 1) and not merges.model.busy and not merges.jobs.busy())
    print(f"    {merges.model.rowCount():,} rows; {merges.error.text()[:90]}", flush=True)
    window.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}", flush=True)
    del app


if __name__ == "__main__":
    main()
