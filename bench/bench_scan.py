"""Corpus-tab scan against ``workbench count`` on the same files, as ratios measured in one run (issue 13).

    python bench/bench_scan.py [--copies 3] [--repeat 2] [--json]

The shared corpora are copied ``--copies`` times into a temporary folder (3 copies: ~27 MB), then:

1. ``workbench count FOLDER --out T`` as a child process (wall seconds, startup included);
2. the window's scan: a real :class:`~workbench.ui.corpus.panel.CorpusPanel` (offscreen Qt, its scan
   thread and signals) from ``add_paths([FOLDER])`` to ``scan_finished``;
3. the scan's old path in-process for reference (the pre-tokenizer's Python ``split`` and the
   regex-run script count, which is what the panel did before), on one copy, scaled to the folder.

Reported: MB/s of each and the ratio scan/CLI (time; below 1 means the scan is faster). Best of
``--repeat``. Not a test: timings never decide pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
sys.path.insert(0, str(ROOT))


def make_folder(dest: Path, copies: int) -> int:
    size = 0
    for i in range(copies):
        for f in sorted(CORPORA.glob("*.txt")):
            target = dest / f"{f.stem}_{i}.txt"
            shutil.copyfile(f, target)
            size += target.stat().st_size
    return size


def time_cli_count(folder: Path, out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "workbench", "count", str(folder), "--out", str(out)], check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def time_panel_scan(folder: Path) -> tuple[float, float, float]:
    """Wall seconds of the scan in a panel that has scanned before (its worker processes started),
    CPU seconds the window's own process spent on it (GUI + scan thread), and the first, cold scan."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.ui.corpus.panel import CorpusPanel
    from workbench.ui.settings import AppSettings

    app = QApplication.instance() or QApplication([])
    ini = str(Path(tempfile.mkdtemp()) / "settings.ini")  # never the user's own settings
    panel = CorpusPanel(AppSettings(QSettings(ini, QSettings.Format.IniFormat)))
    timings = []
    for _ in range(2):
        panel.clear()
        loop = QEventLoop()
        panel.scan_finished.connect(loop.quit)
        QTimer.singleShot(600_000, loop.quit)
        t0, c0 = time.perf_counter(), time.process_time()
        panel.add_paths([str(folder)], prompt=False)
        loop.exec()
        timings.append((time.perf_counter() - t0, time.process_time() - c0))
        panel.scan_finished.disconnect(loop.quit)
        assert all(e.stats is not None and e.stats.complete for e in panel.entries()), "scan did not finish"
    panel.shutdown()
    panel.deleteLater()
    app.processEvents()
    return timings[1][0], timings[1][1], timings[0][0]


def time_old_scan(folder: Path) -> tuple[float, int]:
    """The panel's scan before issue 13, on the first copy only (it is slow)."""
    import workbench.corpus.stats as stats
    from workbench.core.pretokenize import make_pretokenizer
    from workbench.corpus import open_source

    files = sorted(folder.glob("*_0.txt"))
    split = make_pretokenizer("gpt2").split
    fast, stats.count_scripts = stats.count_scripts, lambda text, into=None, weight=1: _runs_into(text, into)
    try:
        t0 = time.perf_counter()
        for f in files:
            stats.file_stats(open_source(f), split=split)
        return time.perf_counter() - t0, sum(f.stat().st_size for f in files)
    finally:
        stats.count_scripts = fast


def _runs_into(text: str, into: dict | None) -> dict:
    from workbench.corpus.stats import count_scripts_by_runs

    counts = into if into is not None else {}
    for k, v in count_scripts_by_runs(text).items():
        counts[k] = counts.get(k, 0) + v
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        size = make_folder(folder, args.copies)
        cli = min(time_cli_count(folder, Path(tmp) / "c.wordcounts.tsv") for _ in range(args.repeat))
        scan, gui_cpu, cold = min(time_panel_scan(folder) for _ in range(args.repeat))
        old, old_size = time_old_scan(folder)
    mb = size / 1e6
    result = {
        "megabytes": round(mb, 1),
        "cli_count_s": round(cli, 2), "cli_count_mb_s": round(mb / cli, 1),
        "panel_scan_s": round(scan, 2), "panel_scan_mb_s": round(mb / scan, 1),
        "old_scan_mb_s": round(old_size / 1e6 / old, 1),
        "ratio_scan_over_cli": round(scan / cli, 2),
        "window_process_cpu_s": round(gui_cpu, 2),
        "cold_panel_scan_s": round(cold, 2),
        "speedup_scan_new_over_old": round((old_size / old) and (mb / scan) / (old_size / 1e6 / old), 1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{mb:.1f} MB: workbench count {cli:.2f} s ({mb / cli:.1f} MB/s); Corpus-tab scan {scan:.2f} s "
              f"({mb / scan:.1f} MB/s, {gui_cpu:.2f} s CPU in the window's process; first scan {cold:.2f} s with "
              f"worker start); scan/CLI time ratio {scan / cli:.2f}; "
              f"old scan path {old_size / 1e6 / old:.1f} MB/s ({result['speedup_scan_new_over_old']}x slower)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
