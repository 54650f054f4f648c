"""RunWriter batching, and what a ``kill -9`` during training leaves behind."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from store_helpers import synthetic_run
from workbench.store import ProjectStore


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def committed(path: Path, run: int) -> int:
    """Merges another connection can see: what a crash right now would keep."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM merges WHERE run_id = ?", (run,)).fetchone()[0]
    finally:
        conn.close()


def test_writer_commits_when_the_interval_has_passed_and_on_close(tmp_path):
    path = tmp_path / "p.tokproj"
    initial, kinds, events, pieces = synthetic_run(25)
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("r", {}, [], initial, kinds)
        writer = store.run_writer(run)
        clock = FakeClock()
        writer._clock, writer._last = clock, 0.0
        for e, p in zip(events[:10], pieces[:10]):
            writer.add(e, p)
        assert (writer.batches, writer.pending, committed(path, run)) == (0, 10, 0)
        clock.now = 0.1
        writer.add(events[10], pieces[10])  # the 100 ms have passed: all 11 in one commit
        assert (writer.batches, writer.pending, committed(path, run)) == (1, 0, 11)
        for e, p in zip(events[11:20], pieces[11:20]):
            writer.add(e, p)
        clock.now = 0.15
        writer.add(events[20], pieces[20])  # only 50 ms since the last commit
        assert (writer.batches, committed(path, run)) == (1, 11)
        writer.flush()
        assert (writer.batches, committed(path, run)) == (2, 21)
        writer.flush()  # nothing pending: no empty transaction
        assert writer.batches == 2
        for e, p in zip(events[21:], pieces[21:]):
            writer.add(e, p)
        store.finish_run(run, "finished")  # flushes the run's writer first
        assert committed(path, run) == 25
        writer.close()
        assert writer.batches == 3


_CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {helpers!r})
    from store_helpers import synthetic_run, write_run
    from workbench.store import ProjectStore

    store = ProjectStore.open({path!r}, create=True)
    write_run(store, "done", 400, seed=1)
    initial, kinds, events, pieces = synthetic_run(200_000, seed=2)
    run = store.create_run("doomed", {{}}, [], initial, kinds)
    print(run, flush=True)
    writer = store.run_writer(run, interval=0.02)
    for e, p in zip(events, pieces):
        writer.add(e, p)
        time.sleep(0.00002)
    """)


def test_sigkill_during_training_leaves_a_valid_file(tmp_path):
    path = tmp_path / "p.tokproj"
    code = _CHILD.format(helpers=str(Path(__file__).parent), path=str(path))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        run = int(child.stdout.readline())
        deadline = time.monotonic() + 20
        while committed(path, run) < 2000:  # several batches are in
            assert child.poll() is None, "the child stopped early"
            assert time.monotonic() < deadline, "no batches committed in time"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL

    # A read-only open reports the dead run as interrupted but writes nothing.
    with ProjectStore.open(path, readonly=True) as store:
        assert store.run(run).status == "interrupted"
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert raw.execute("SELECT status FROM runs WHERE id = ?", (run,)).fetchone()[0] == "running"
    raw.close()

    _, _, done_events, done_pieces = synthetic_run(400, seed=1)
    with ProjectStore.open(path) as store:
        assert store.integrity_check() == "ok"
        first, doomed = store.runs()
        assert (first.name, first.status, first.merge_count) == ("done", "finished", 400)
        assert [(m.left, m.right, m.new_id, m.frequency, m.piece) for m in
                store.merges(first.id, limit=1000)] == [
            (e.left, e.right, e.new_id, e.frequency, p) for e, p in zip(done_events, done_pieces)]
        assert doomed.status == "interrupted" and doomed.merge_count >= 2000
        assert "killed or crashed" in doomed.error and doomed.ended is not None
        # Merges, steps and vocabulary were committed together: no partial batch.
        assert len(store.steps(doomed.id)) == doomed.merge_count
        assert doomed.vocab_size == 257 + doomed.merge_count
        assert len(store.load_tokenizer(doomed.id).merges) == doomed.merge_count
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT status FROM runs WHERE id = ?", (run,)).fetchone()[0] == "interrupted"
    raw.close()
