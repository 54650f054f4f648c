"""ProjectStore round trips: create/open/reopen, runs, vocab, steps, tokenizers, texts, Save As."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

import pytest
from store_helpers import side_files, synthetic_run, write_run

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.store import APPLICATION_ID, ProjectStore, current_version


def test_create_then_reopen_keeps_everything_and_leaves_one_file(tmp_path):
    path = tmp_path / "new.tokproj"
    with pytest.raises(WorkbenchError, match="does not exist"):
        ProjectStore.open(path)
    with ProjectStore.open(path, create=True) as store:
        assert not store.read_only and store.note == ""
        cid = store.add_corpus(tmp_path / "c.txt", size=12, mtime=3.25, fingerprint="abc",
                               reader_options={"encoding": "utf-8", "column": "text"})
        run = write_run(store, "first", 50)
    assert side_files(path) == []  # checkpointed: the file alone holds everything at rest
    head = path.read_bytes()[:100]
    assert int.from_bytes(head[68:72], "big") == APPLICATION_ID
    assert int.from_bytes(head[60:64], "big") == current_version()
    with ProjectStore.open(path) as store:
        (corpus,) = store.corpora()
        assert (corpus.id, corpus.path, corpus.size, corpus.mtime, corpus.fingerprint) == (
            cid, str(tmp_path / "c.txt"), 12, 3.25, "abc")
        assert corpus.reader_options == {"encoding": "utf-8", "column": "text"}
        info = store.run(run)
        assert (info.name, info.status, info.merge_count, info.vocab_size) == (
            "first", "finished", 50, 257 + 50)
        assert store.latest_run_id() == run


def test_run_round_trip_fields(tmp_path):
    with ProjectStore.open(tmp_path / "p.tokproj", create=True) as store:
        c1 = store.add_corpus("a.txt", size=1, mtime=0, fingerprint="a", reader_options={})
        c2 = store.add_corpus("b.txt", size=2, mtime=0, fingerprint="b", reader_options={})
        initial, kinds, events, pieces = synthetic_run(10)
        settings = {"units": "bytes", "vocab_size": 300, "special_tokens": ["<|endoftext|>"]}
        run = store.create_run("r", settings, [c2, c1], initial, kinds)
        assert store.run(run).status == "running"
        with store.run_writer(run) as w:
            for e, p in zip(events, pieces):
                w.add(e, p, extra={"entropy": e.step / 10} if e.step == 3 else None)
        store.finish_run(run, "cancelled", error=None, timings={"count": 0.5, "merge": 1.25})
        info = store.run(run)
        assert info.status == "cancelled" and info.ended >= info.started
        assert info.settings == settings and info.timings == {"count": 0.5, "merge": 1.25}
        assert info.corpus_ids == (c1, c2)
        steps = store.steps(run)
        assert [(s.step, s.vocab_size, s.token_count, s.frequency) for s in steps] == [
            (e.step, e.vocab_size, e.token_count, e.frequency) for e in events]
        assert steps[2].extra == {"entropy": 0.3} and steps[3].extra == {}
        assert [s.step for s in store.steps(run, since_step=7)] == [8, 9, 10]
        vocab = store.vocab(run)
        assert [p for _, p, _ in vocab] == initial + pieces
        assert [k for _, _, k in vocab] == kinds + ["merge"] * 10
        store.finish_run(run, "failed", error="out of memory")
        assert store.run(run).error == "out of memory"
        with pytest.raises(ValueError):
            store.finish_run(run, "running")
        with pytest.raises(WorkbenchError, match="Corpus 99"):
            store.create_run("bad", {}, [99], initial, kinds)
        with pytest.raises(WorkbenchError, match="no run 42"):
            store.run(42)


def test_rename_and_delete_run_removes_its_rows(project):
    with ProjectStore.open(project) as store:
        keep = store.latest_run_id()
        gone = write_run(store, "second", 40, seed=1)
        store.rename_run(keep, "renamed")
        store.delete_run(gone)
        assert [(r.id, r.name) for r in store.runs()] == [(keep, "renamed")]
        conn = store._conn
        for table in ("merges", "vocab", "run_corpora"):
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?",
                                (gone,)).fetchone()[0] == 0
        assert store.merge_count(keep) == 300


def test_load_tokenizer_round_trip(tmp_path):
    initial, kinds, events, pieces = synthetic_run(120, seed=3)
    expected = Tokenizer(
        vocab=tuple(initial + pieces),
        merges=tuple((e.left, e.right, e.new_id) for e in events),
        units="bytes", pretokenizer="cl100k", normalizer=("nfc", "lower"),
        special_tokens={"<|endoftext|>": 0}, name="tok")
    with ProjectStore.open(tmp_path / "p.tokproj", create=True) as store:
        run = store.create_run("tok", {**expected.settings(), "vocab_size": 500, "tie_break": "hf"},
                               [], initial, kinds)
        with store.run_writer(run) as w:
            for e, p in zip(events, pieces):
                w.add(e, p)
        store.finish_run(run, "finished")
    with ProjectStore.open(tmp_path / "p.tokproj", readonly=True) as store:
        assert store.load_tokenizer(run) == expected


def test_writer_skips_vocab_row_when_a_merge_reuses_an_existing_piece(tmp_path):
    from workbench.core.model import MergeEvent

    with ProjectStore.open(tmp_path / "p.tokproj", create=True) as store:
        initial = [b"a", b"b", b"ab"]
        run = store.create_run("r", {}, [], initial, ["base"] * 3)
        with store.run_writer(run) as w:
            w.add(MergeEvent(1, 0, 1, 2, 5, 3, 10), b"ab")  # reuses id 2
            w.add(MergeEvent(2, 2, 2, 3, 4, 4, 8), b"abab")
        assert [p for _, p, _ in store.vocab(run)] == [b"a", b"b", b"ab", b"abab"]
        assert [m.piece for m in store.merges(run)] == [b"ab", b"abab"]


def test_references_round_trip(tmp_path):
    tok = Tokenizer(vocab=(b"<s>", b"a", b"b", b"ab"), merges=((1, 2, 3),), units="bytes",
                    pretokenizer="o200k", special_tokens={"<s>": 0}, name="ref",
                    unk_token="<s>")
    with ProjectStore.open(tmp_path / "p.tokproj", create=True) as store:
        ref = store.add_reference("mini", tok, fmt="tiktoken", source_path="/x/mini.tiktoken",
                                  sha256="00ff")
        (info,) = store.references()
        assert (info.id, info.name, info.format, info.source_path, info.sha256,
                info.vocab_size, info.merge_count) == (ref, "mini", "tiktoken",
                                                       "/x/mini.tiktoken", "00ff", 4, 1)
        back = store.load_reference(ref)
        assert back == dataclasses.replace(tok, name="mini")
        store.delete_reference(ref)
        assert store.references() == []


def test_texts_upsert_by_name(tmp_path):
    with ProjectStore.open(tmp_path / "p.tokproj", create=True) as store:
        a = store.save_text("a", "first")
        b = store.save_text("b", "héllo 👋")
        assert store.save_text("a", "second") == a
        assert store.texts() == [(a, "a", "second"), (b, "b", "héllo 👋")]
        store.delete_text(a)
        assert store.texts() == [(b, "b", "héllo 👋")]


def test_reader_is_not_blocked_by_an_open_write_transaction(project):
    writer = ProjectStore.open(project)
    reader = ProjectStore.open(project, readonly=True)
    try:
        with writer._write() as conn:  # hold the write lock mid-transaction
            conn.execute("UPDATE runs SET name = 'uncommitted'")
            assert [r.name for r in reader.runs()] == ["base"]  # sees the last commit, at once
        assert [r.name for r in reader.runs()] == ["uncommitted"]
    finally:
        reader.close()
        writer.close()


def test_one_file_at_rest_whichever_connection_closes_last(project):
    writer = ProjectStore.open(project)
    reader = ProjectStore.open(project, readonly=True)
    reader.close()
    writer.close()
    assert side_files(project) == []
    writer = ProjectStore.open(project)
    reader = ProjectStore.open(project, readonly=True)
    writer.close()
    reader.close()
    assert side_files(project) == []


def test_save_as_copies_through_backup_and_refuses_to_overwrite(project, tmp_path):
    with ProjectStore.open(project) as store:
        write_run(store, "unfinished", 20, status="running")
        dest = tmp_path / "copy.tokproj"
        assert store.save_as(dest) == dest
        with pytest.raises(WorkbenchError, match="already exists"):
            store.save_as(dest)
        with pytest.raises(WorkbenchError, match="this project itself"):
            store.save_as(project)
        store.rename_run(1, "changed")
        stale = f"{dest}-journal"
        with open(stale, "wb") as f:
            f.write(b"stale")  # SQLite would replay a leftover journal into the new file
        store.save_as(dest, force=True)
        assert not os.path.exists(stale)
    assert side_files(dest) == [] and dest.read_bytes()[18:20] == b"\x01\x01"
    with ProjectStore.open(dest, readonly=True) as copy:
        assert [r.name for r in copy.runs()] == ["changed", "unfinished"]
        assert copy.merge_count(2) == 20
        assert copy.integrity_check() == "ok"


def test_unfinished_runs_of_a_closing_store_become_interrupted(tmp_path):
    path = tmp_path / "p.tokproj"
    with ProjectStore.open(path, create=True) as store:
        run = write_run(store, "left running", 10, status="running")
        assert store.run(run).status == "running"  # our own pid: alive
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    raw.close()


def test_a_reader_keeps_seeing_commits_after_another_writer_closes(tmp_path):
    """The window reads while training children come and go: a closing writer must not blind it."""
    path = tmp_path / "live.tokproj"
    with ProjectStore.open(path, create=True) as store:
        write_run(store, "first", 10)
    reader = ProjectStore.open(path, readonly=True)
    try:
        assert len(reader.runs()) == 1
        with ProjectStore.open(path) as writer:
            write_run(writer, "second", 20)
        assert [r.merge_count for r in reader.runs()] == [10, 20]
        with ProjectStore.open(path) as writer:
            write_run(writer, "third", 5)
        assert [r.merge_count for r in reader.runs()] == [10, 20, 5]
    finally:
        reader.close()
    assert side_files(path) == []  # the read-only close still leaves one file behind


def test_a_reader_opened_at_rest_sees_a_later_writer_in_another_process(tmp_path):
    """The window opens the file before any trainer runs; the trainer is another process."""
    import subprocess
    import sys

    path = tmp_path / "rest.tokproj"
    with ProjectStore.open(path, create=True) as store:
        write_run(store, "first", 10)
    assert side_files(path) == []
    reader = ProjectStore.open(path, readonly=True)
    try:
        assert [r.merge_count for r in reader.runs()] == [10]
        # Another open in this process (the window does that) must not drop the reader's locks,
        # or the child's close below deletes -wal/-shm under the reader.
        with ProjectStore.open(path, readonly=True) as other:
            assert len(other.runs()) == 1
        script = (
            "import sys; sys.path[:0] = sys.argv[2:]\n"
            "from store_helpers import write_run\nfrom workbench.store import ProjectStore\n"
            "with ProjectStore.open(sys.argv[1]) as s:\n    write_run(s, 'child', 7)\n"
        )
        for n in (7, 3):
            subprocess.run([sys.executable, "-c", script.replace("'child', 7", f"'child', {n}"), str(path),
                            str(Path(__file__).parent)], check=True, timeout=60)
        assert [r.merge_count for r in reader.runs()] == [10, 7, 3]
        with pytest.raises(WorkbenchError):
            reader.rename_run(1, "not allowed")
    finally:
        reader.close()
    assert side_files(path) == []


def test_a_read_only_open_and_close_leaves_one_file(tmp_path):
    path = tmp_path / "quiet.tokproj"
    with ProjectStore.open(path, create=True) as store:
        write_run(store, "first", 3)
    before = path.read_bytes()
    with ProjectStore.open(path, readonly=True):
        pass
    with ProjectStore.open(path, readonly=True) as store:
        store.runs()
    assert side_files(path) == [] and path.read_bytes() == before


def test_a_run_another_live_process_is_training_cannot_be_deleted(tmp_path):
    path = tmp_path / "busy.tokproj"
    with ProjectStore.open(path, create=True) as trainer:
        run = trainer.create_run("live", {"units": "bytes"}, [], [bytes([b]) for b in range(256)], ["base"] * 256)
        # Pretend the owner is another live process (this test process, seen from a second store).
        trainer.connection.execute("UPDATE runs SET owner_pid = ? WHERE id = ?", (os.getppid(), run))
        with ProjectStore.open(path) as window:
            with pytest.raises(WorkbenchError, match="still training"):
                window.delete_run(run)
        trainer.finish_run(run, "cancelled")
        with ProjectStore.open(path) as window:
            window.delete_run(run)
            assert window.runs() == []
