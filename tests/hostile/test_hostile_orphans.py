"""A killed parent leaves no child behind, and a training child whose window died says so.

``kill -9`` of the window during a run used to leave the scan pool's spawn workers (and with them
multiprocessing's resource tracker) alive for minutes, and the training child stored its run as
"failed: Broken pipe". Here a real parent process plays the window: it starts the real children
(``workbench train --progress json`` as the Train tab does; a ScanPool as the Corpus tab does),
and the test kills it with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.store import ProjectStore

pytestmark = pytest.mark.skipif(os.name != "posix", reason="reparenting is how a POSIX child sees its parent die")

WINDOW = r"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-m", "workbench", "train", *sys.argv[2:], "--progress", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
print(child.pid, flush=True)
for line in child.stderr:          # the window reads progress lines until it sees merging
    if '"merges"' in line:
        print("merging", flush=True)
        break
open(sys.argv[1], "w").close()
import time
time.sleep(600)                    # until killed; the pipes stay open but unread
"""

SCANNER = r"""
import sys, time
from workbench.corpus.scan_pool import ScanPool
pool = ScanPool("gpt2", workers=2)
for _ in pool.summaries(["word " * 200_000] * 2):
    pass
print("scanned", flush=True)
time.sleep(600)
"""


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.1)
    return alive


def test_training_child_of_a_killed_window_stops_and_stores_the_run_as_interrupted(tmp_path):
    require_corpora()
    project = tmp_path / "p.tokproj"
    marker = tmp_path / "merging"
    window = subprocess.Popen([sys.executable, "-c", WINDOW, str(marker), *map(str, CORPUS_FILES),
                               "--project", str(project), "--vocab-size", "60000", "--no-count-cache"],
                              stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(window.stdout.readline())
        assert window.stdout.readline().strip() == "merging"
        descendants = [p.pid for p in psutil.Process(child_pid).children(recursive=True)] + [child_pid]
    finally:
        window.send_signal(signal.SIGKILL)
        window.wait()
    killed_at = time.monotonic()
    assert _wait_gone(descendants, 20) == [], "the training child (or its writer) outlived the window"
    took = time.monotonic() - killed_at
    with ProjectStore.open(project, readonly=True) as store:
        run = store.runs()[-1]
    assert run.status == "interrupted", (run.status, run.error)
    assert "window" in (run.error or ""), run.error
    assert run.merge_count > 0  # what it made before the window died is kept
    assert took < 15


def test_scan_workers_of_a_killed_window_exit(tmp_path):
    window = subprocess.Popen([sys.executable, "-c", SCANNER], stdout=subprocess.PIPE, text=True)
    try:
        assert window.stdout.readline().strip() == "scanned"
        children = [p.pid for p in psutil.Process(window.pid).children(recursive=True)]
        assert len(children) >= 2  # two scan workers (and the resource tracker)
    finally:
        window.send_signal(signal.SIGKILL)
        window.wait()
    assert _wait_gone(children, 10) == [], "scan workers or the resource tracker outlived the window"


def test_a_cli_run_whose_progress_reader_goes_away_is_interrupted_not_failed(tmp_path):
    """The child's own view: its progress pipe breaks (nobody reads it) — interrupted, with the reason."""
    require_corpora()
    project = tmp_path / "p.tokproj"
    child = subprocess.Popen([sys.executable, "-m", "workbench", "train", *map(str, CORPUS_FILES), "--project",
                              str(project), "--vocab-size", "60000", "--progress", "json", "--no-count-cache"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in child.stderr:
        if json.loads(line).get("event") == "merges":
            break
    child.stderr.close()  # the reader is gone: the next progress line breaks the pipe
    assert child.wait(timeout=30) != 0
    with ProjectStore.open(project, readonly=True) as store:
        run = store.runs()[-1]
    assert (run.status, "window" in (run.error or "")) == ("interrupted", True), (run.status, run.error)
    assert Path(project).exists()
