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

import pytest
from store_helpers import synthetic_run

from workbench.core.model import MergeEvent
from workbench.core.trainer import TrainLog
from workbench.errors import WorkbenchError
from workbench.store import ProjectStore
from workbench.store.writer import is_writer_command


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
        writer.add(events[10], pieces[10])  # the 100 ms have passed: all 11 handed over at once
        writer.wait()  # the writer process commits them in one transaction
        assert (writer.batches, writer.pending, committed(path, run)) == (1, 0, 11)
        for e, p in zip(events[11:20], pieces[11:20]):
            writer.add(e, p)
        clock.now = 0.15
        writer.add(events[20], pieces[20])  # only 50 ms since the last commit
        writer.wait()
        assert (writer.batches, writer.pending, committed(path, run)) == (1, 10, 11)
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


def writer_processes(path: Path) -> list[int]:
    """Pids of live writer processes for ``path`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0] if cmd else ""
        except OSError:
            continue
        if is_writer_command(cmd) and os.fsencode(path) in cmd and state != "Z":
            pids.append(int(entry.name))
    return pids


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
    # Its writer process commits the complete batches it was sent, then ends on end-of-file.
    deadline = time.monotonic() + 20
    while writer_processes(path):
        assert time.monotonic() < deadline, "the writer process outlived the trainer"
        time.sleep(0.02)

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


def _tables(path: Path, run: int) -> tuple[list, list]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        merges = conn.execute("SELECT * FROM merges WHERE run_id = ? ORDER BY rank", (run,)).fetchall()
        vocab = conn.execute("SELECT * FROM vocab WHERE run_id = ? ORDER BY id", (run,)).fetchall()
        return merges, vocab
    finally:
        conn.close()


def test_the_writer_process_and_writing_on_the_callers_thread_store_the_same_rows(tmp_path):
    """Batches sent through the pipe must land exactly as written directly, reused ids included."""
    initial, kinds, events, pieces = synthetic_run(3000, seed=5)
    # A merge that recreates an existing piece keeps that piece's id: no second vocabulary row.
    events[1500] = MergeEvent(1501, events[10].left, events[10].right, events[10].new_id,
                              events[1500].frequency, events[1499].vocab_size,
                              events[1500].token_count)
    pieces[1500] = pieces[10]
    tables = []
    for background in (True, False):
        path = tmp_path / f"{background}.tokproj"
        with ProjectStore.open(path, create=True) as store:
            run = store.create_run("r", {}, [], initial, kinds)
            with store.run_writer(run, interval=0.0, background=background) as writer:
                assert (writer._proc is not None) == background
                for e, p in zip(events, pieces):
                    writer.add(e, p, extra={"i": e.step} if e.step % 1000 == 0 else None)
            assert writer.batches > 100  # interval 0: many small transactions
            tables.append(_tables(path, run))
    assert tables[0] == tables[1]
    merges, vocab = tables[0]
    assert [m[1:9] for m in merges] == [
        (e.step - 1, e.left, e.right, e.new_id, e.frequency, len(p), e.vocab_size, e.token_count)
        for e, p in zip(events, pieces)]
    assert merges[1500][7] == merges[1499][7]  # the reused id did not grow the vocabulary
    assert [m[9] for m in merges if m[9]] == ['{"i": 1000}', '{"i": 2000}', '{"i": 3000}']
    assert len(vocab) == len(initial) + 3000 - 1
    assert {i: p for _, i, p, _ in vocab} == {**dict(enumerate(initial)),
                                              **{e.new_id: p for e, p in zip(events, pieces)}}


def test_a_deferred_writer_commits_on_the_callers_thread_then_hands_over_to_its_process(tmp_path):
    """``defer``: the first batches are committed by the caller until they have cost that much CPU;
    the next one starts the writer process, and the rows are those a writer process alone stores."""
    initial, kinds, events, pieces = synthetic_run(3000, seed=5)
    tables = []
    for defer in (0.0, 1e-9, 3600.0):
        path = tmp_path / f"{defer}.tokproj"
        with ProjectStore.open(path, create=True) as store:
            run = store.create_run("r", {}, [], initial, kinds)
            with store.run_writer(run, interval=float("inf"), defer=defer) as writer:
                assert (writer._proc is not None) == (defer == 0.0)
                for k in range(0, 3000, 1000):
                    for e, p in zip(events[k:k + 1000], pieces[k:k + 1000]):
                        writer.add(e, p)
                    writer.flush()
                    assert committed(path, run) == k + 1000  # each batch is committed when flushed
                    if defer == 1e-9:  # the first batch costs more than that: the second starts the process
                        assert (writer._proc is not None) == (k > 0)
                started = writer._proc is not None
            assert started == (defer < 1) and writer.batches == 3
            if started:
                assert writer._proc.returncode == 0
            tables.append(_tables(path, run))
    assert tables[0] == tables[1] == tables[2]
    assert len(tables[0][0]) == 3000


def test_batches_commit_in_the_writer_process_without_the_trainer_waiting(tmp_path):
    path = tmp_path / "p.tokproj"
    initial, kinds, events, pieces = synthetic_run(500)
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("r", {}, [], initial, kinds)
        with store.run_writer(run, interval=0.0) as writer:
            for e, p in zip(events, pieces):
                writer.add(e, p)
            deadline = time.monotonic() + 10
            while committed(path, run) < 500:  # no flush() or wait(): the process gets there alone
                assert time.monotonic() < deadline, "the writer process did not commit"
                time.sleep(0.01)
            assert writer._proc.pid != os.getpid() and writer._proc.poll() is None
        assert writer._proc.returncode == 0 and writer.pending == 0


def first_20_committed(path: Path, n: int):
    """A store, its running run, a writer with 20 of ``n`` synthetic merges committed, the rest."""
    initial, kinds, events, pieces = synthetic_run(n)
    store = ProjectStore.open(path, create=True)
    run = store.create_run("r", {}, [], initial, kinds)
    writer = store.run_writer(run, interval=float("inf"))
    for e, p in zip(events[:20], pieces[:20]):
        writer.add(e, p)
    writer.flush()
    return store, run, writer, events, pieces


def test_a_failed_batch_stops_the_writer_and_reaches_the_trainer(tmp_path):
    path = tmp_path / "p.tokproj"
    store, run, writer, events, pieces = first_20_committed(path, 40)
    writer.add(events[5], pieces[5])  # rank 5 again: the primary key refuses the batch
    writer.add(events[20], pieces[20])
    with pytest.raises(sqlite3.IntegrityError):
        writer.flush()
    with pytest.raises(sqlite3.IntegrityError):
        writer.add(events[21], pieces[21])  # the writer stays stopped
    assert committed(path, run) == 20  # the refused transaction left nothing behind
    with pytest.raises(sqlite3.IntegrityError):
        writer.close()
    assert writer.closed and writer._proc.returncode == 1
    store.finish_run(run, "failed", error="test")
    store.close()
    assert committed(path, run) == 20


def test_a_trainers_log_taken_in_bulk_is_stored_as_merge_by_merge_adds_store_it(tmp_path):
    """add_log reads the trainer's own log every so often; add() gets each event: same file."""
    from workbench.core.bpe import BpeTrainer, TrainConfig
    from workbench.corpus.demo import demo_corpus_files  # real text, several scripts

    text = "".join(p.read_text(encoding="utf-8") for p in demo_corpus_files())[:60_000]
    words: dict[str, int] = {}
    for w in text.split():
        words[w] = words.get(w, 0) + 1
    tables = []
    for bulk in (True, False):
        trainer = BpeTrainer(words, TrainConfig(units="bytes", merges=700, pretokenizer="none"))
        path = tmp_path / f"{bulk}.tokproj"
        with ProjectStore.open(path, create=True) as store:
            run = store.create_run("r", {}, [], list(trainer.vocab), ["base"] * 256)
            with store.run_writer(run, interval=float("inf")) as writer:
                for event in trainer.run():
                    if bulk:
                        if event.step % 97 == 0:
                            writer.add_log(trainer.log)
                    else:
                        writer.add(event, trainer.vocab[event.new_id])
                if bulk:
                    writer.add_log(trainer.log)
            assert writer.batches == (8 if bulk else 1)
            tables.append(_tables(path, run))
    assert tables[0] == tables[1]
    assert len(tables[0][0]) == 700 and len(tables[0][1]) == 256 + 700


def test_the_writer_process_commits_whole_frames_and_drops_a_torn_one(tmp_path):
    """The trainer killed mid-write leaves half a frame: the complete ones are kept, it is not.

    Started as a frozen app starts it (``workbench --run-writer``), fed frames by hand.
    """
    from workbench.store.writer import Batch

    path = tmp_path / "p.tokproj"
    initial, kinds, events, pieces = synthetic_run(30)
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("r", {}, [], initial, kinds)

    def frame(lo: int, hi: int) -> bytes:
        part = events[lo:hi]
        return Batch([e.step - 1 for e in part], [x for e in part for x in (e.left, e.right, e.new_id)],
                     [e.frequency for e in part], [e.token_count for e in part], pieces[lo:hi],
                     [(lo, '{"x": 1}')]).encode()

    torn = frame(20, 30)
    out = subprocess.run([sys.executable, "-m", "workbench", "--run-writer", str(path), str(run)],
                         input=frame(0, 12) + frame(12, 20) + torn[:len(torn) // 2],
                         capture_output=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"ok\nok\n", b"")
    merges, vocab = _tables(path, run)
    assert [m[1:9] for m in merges] == [
        (e.step - 1, e.left, e.right, e.new_id, e.frequency, len(p), e.vocab_size, e.token_count)
        for e, p in zip(events[:20], pieces[:20])]
    assert [m[9] for m in merges if m[9]] == ['{"x": 1}', '{"x": 1}']
    assert [v[2] for v in vocab[len(initial):]] == pieces[:20]


def test_a_writer_process_that_dies_is_reported_in_a_sentence(tmp_path):
    path = tmp_path / "p.tokproj"
    store, run, writer, events, pieces = first_20_committed(path, 50)
    writer._proc.kill()
    writer._proc.wait()
    for e, p in zip(events[20:], pieces[20:]):
        writer.add(e, p)
    with pytest.raises(WorkbenchError, match="The process writing merges to .* are kept"):
        writer.flush()
    with pytest.raises(WorkbenchError):
        writer.close()
    assert writer.closed
    store.finish_run(run, "failed", error="test")
    store.close()
    assert committed(path, run) == 20


def test_a_training_whose_writer_dies_ends_failed_with_the_reason(tmp_path, monkeypatch):
    """The run must not be left 'running': it ends failed, saying why, with what was committed.

    On the pure merge loop: the C loop makes the demo corpus's 6,000 merges in ~50 ms, before the
    first progress report of the loop, where this test kills the writer."""
    from workbench.core import bpe
    from workbench.core.bpe import TrainConfig

    monkeypatch.setattr(bpe, "_native", None)
    from workbench.corpus.demo import demo_corpus_files
    from workbench.tasks import train
    from workbench.tasks.train import train_into_project

    monkeypatch.setattr(train, "WRITER_DEFER_S", 0.0)  # the writer process from the first batch on

    path = tmp_path / "p.tokproj"
    killed = []

    def report(progress):
        # Kill inside the merge loop, while the trainer waits on this report: it must still hand the
        # writer every later merge, so it cannot finish first (the report after the loop comes too
        # late: the writer is closed by then). Wait until the writer has committed a batch, so the
        # run keeps something to check.
        if progress.event != "merges" or killed or progress.step >= 6000 - 256:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with ProjectStore.open(path, readonly=True) as store:
                if store.runs() and store.merge_count(store.runs()[0].id) > 0:
                    break
            time.sleep(0.05)
        for pid in writer_processes(path):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    files = [str(p) for p in demo_corpus_files()]
    with pytest.raises(WorkbenchError, match="The process writing merges to .* stopped"):
        train_into_project(files, path, TrainConfig(vocab_size=6000), report=report)
    assert killed
    with ProjectStore.open(path) as store:
        (info,) = store.runs()
        run = info.id
        assert info.status == "failed" and "The process writing merges to" in info.error
        assert info.timings and store.integrity_check() == "ok"
        assert 0 < info.merge_count < 6000 - 256
        assert len(store.load_tokenizer(run).merges) == info.merge_count  # consistent as stored


@pytest.mark.parametrize("suspendable", [False, True])
def test_a_run_the_window_may_pause_commits_through_the_writer_process_from_the_start(tmp_path, monkeypatch,
                                                                                   suspendable):
    """A CLI run commits its first batches itself (a short run never starts the writer process); one
    the window may suspend (``--progress json``) must not: a commit stopped half-way would hold the
    project's write lock for the whole pause. Checked at the loop's first progress report (pure loop:
    the C loop finishes the demo corpus before it)."""
    from workbench.core import bpe
    from workbench.corpus.demo import demo_corpus_files
    from workbench.tasks.train import check_project, resolve_files, spec_from_config, train_run

    monkeypatch.setattr(bpe, "_native", None)
    path = tmp_path / "p.tokproj"
    seen: list[int] = []

    def report(progress):
        if progress.event == "merges" and not seen:
            seen.append(len(writer_processes(path)))

    check_project(path)
    spec = spec_from_config(bpe.TrainConfig(vocab_size=1500), resolve_files([str(p) for p in demo_corpus_files()]))
    run, status = train_run(spec, path, report=report, suspendable=suspendable)
    assert status == "finished" and seen == [1 if suspendable else 0]
    with ProjectStore.open(path, readonly=True) as store:
        assert store.merge_count(run) == 1500 - 256


def test_a_tokenize_py_in_the_working_folder_does_not_reach_the_writer(tmp_path):
    """The writer process runs isolated: a user's tokenize.py (imported by the stdlib) is ignored."""
    (tmp_path / "tokenize.py").write_text("raise SystemExit('user script ran')\n")
    (tmp_path / "corpus.txt").write_text("low lower lowest newer wider " * 200)
    # The installed command, as a user runs it (``python -m`` would import tokenize.py itself).
    command = Path(sys.executable).with_name("workbench")
    assert command.exists(), "the test extras install the workbench command beside this python"
    out = subprocess.run([str(command), "train", "corpus.txt", "--project", "p.tokproj",
                          "--vocab-size", "270"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    with ProjectStore.open(tmp_path / "p.tokproj") as store:
        (info,) = store.runs()
        assert (info.status, info.vocab_size, info.merge_count) == ("finished", 270, 14)


def test_the_writer_process_keeps_committing_after_the_trainer_stops_reading(tmp_path):
    """Killed trainer, answers unread: every complete batch it had sent is still committed."""
    from workbench.store.writer import Batch

    path = tmp_path / "p.tokproj"
    initial, kinds, events, pieces = synthetic_run(500)
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("r", {}, [], initial, kinds)
    frames = b"".join(
        Batch([e.step - 1 for e in part], [x for e in part for x in (e.left, e.right, e.new_id)],
              [e.frequency for e in part], [e.token_count for e in part],
              pieces[lo:lo + 100], []).encode()
        for lo in range(0, 500, 100) for part in [events[lo:lo + 100]])
    proc = subprocess.Popen([sys.executable, "-m", "workbench.store.writer_process", str(path),
                             str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the answers now go nowhere: the first one meets a broken pipe
    proc.stdin.write(frames)
    proc.stdin.close()  # end-of-file without the closing frame, as when the trainer dies
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
    proc.stderr.close()
    assert committed(path, run) == 500


def test_an_interrupted_hand_over_is_sent_again_whole(tmp_path, monkeypatch):
    """Ctrl+C while a batch is being packed: add_log sends those merges again next time."""
    from workbench.store import writer as writer_module

    path = tmp_path / "p.tokproj"
    initial, kinds, events, pieces = synthetic_run(300)
    log = TrainLog(list(initial))
    encode, calls = writer_module.Batch.encode, []

    def flaky_encode(batch):
        calls.append(len(batch.ranks))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return encode(batch)

    monkeypatch.setattr(writer_module.Batch, "encode", flaky_encode)
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("r", {}, [], initial, kinds)
        with store.run_writer(run) as writer:
            for i, (e, p) in enumerate(zip(events, pieces), 1):
                log.vocab.append(p)
                log.append((e.left, e.right, e.new_id), e.frequency, e.token_count)
                if i % 100 == 0:
                    with pytest.raises(KeyboardInterrupt) if len(calls) == 1 else _Nothing():
                        writer.add_log(log)
        assert calls == [100, 100, 200]  # the interrupted 100 went again with the next 100
    merges, _ = _tables(path, run)
    assert [m[1] for m in merges] == list(range(300))


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_writer_process_imports_only_what_it_writes_with():
    """The writer process's resident memory counts against every training run (the benchmarks sum
    the process tree): it loads neither OpenSSL (``secrets``/``hashlib``), ``dataclasses`` (with
    ``inspect``), ``subprocess``, nor the trainer's or the project store's modules (20 → 14 MB)."""
    root = str(Path(__file__).resolve().parents[2])
    code = ("import sys; sys.path.append(sys.argv[1]); import workbench.store.writer_process; "
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-I", "-c", code, root], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert "workbench.store.writer_process" in loaded and "sqlite3" in loaded
    unwanted = {"hashlib", "secrets", "dataclasses", "inspect", "subprocess", "socket", "workbench.core.trainer",
                "workbench.core.model", "workbench.store.project", "workbench.corpus"}
    assert not unwanted & loaded, sorted(unwanted & loaded)
