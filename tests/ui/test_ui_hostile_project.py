"""The window opening a project someone sent: SQL stored in it never runs, stored ids never become
SQL, and a query that runs too long is stopped with one line instead of freezing the window."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.store.browse import PieceSource

TEXT = ("the quick brown fox jumps over the lazy dog; the lazy dog sleeps\n"
        "Привет, мир! 世界 hello world 12345\n") * 60
_ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def _train(tmp_path: Path, *args: str) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, "utf-8")
    project = tmp_path / "sent.tokproj"
    done = subprocess.run([sys.executable, "-m", "workbench", "train", str(corpus), "--project", str(project),
                           "--progress", "none", *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return project


def _sql(project: Path, *statements: str) -> None:
    with contextlib.closing(sqlite3.connect(project, isolation_level=None)) as conn:
        for statement in statements:
            conn.execute(statement)


def _rows(project: Path, sql: str) -> list:
    with contextlib.closing(sqlite3.connect(f"file:{project}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


def test_window_opening_a_project_with_triggers_removes_them_before_any_write(make_window, tmp_path, qtbot):
    project = _train(tmp_path, "--vocab-size", "300")
    _sql(project,
         "CREATE TRIGGER wipe AFTER UPDATE ON runs BEGIN DELETE FROM merges; END",
         f"CREATE TRIGGER hang BEFORE UPDATE ON runs BEGIN {_ENDLESS}; END",
         f"CREATE VIEW everything AS {_ENDLESS}")
    merges = _rows(project, "SELECT * FROM merges ORDER BY run_id, rank")
    window = make_window(project)
    assert _rows(project, "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')") == []
    started = time.monotonic()
    window.session.rename_run(1, "renamed in the window")  # an UPDATE on runs: the triggers' event
    assert time.monotonic() - started < 10
    assert _rows(project, "SELECT name FROM runs") == [("renamed in the window",)]
    assert _rows(project, "SELECT * FROM merges ORDER BY run_id, rank") == merges


def test_a_stored_id_holding_sql_stays_an_id(make_window, tmp_path, qtbot):
    project = _train(tmp_path, "--model", "unigram", "--vocab-size", "50", "--special", "<s>")
    specials = _rows(project, "SELECT id FROM vocab WHERE run_id = 1 AND kind = 'special'")
    assert specials
    # The special's id replaced by text that, pasted into SQL, would never finish.
    _sql(project, f"UPDATE vocab SET id = '0) OR ({_ENDLESS}) OR (0' WHERE run_id = 1 AND id = {specials[0][0]}")
    window = make_window(project)
    panel = window.merges
    qtbot.waitUntil(lambda: panel.current_source() == ("run", 1), timeout=20000)
    # The window reads the run through the validating layer: the text id makes it a damaged run,
    # named in one line, and nothing of it is pasted into SQL.
    qtbot.waitUntil(lambda: panel.error.text().startswith("run 1 ("), timeout=20000)
    assert "column vocab.id" in panel.error.text()
    # Below that layer the browser itself binds the stored ids: the text id stays an id.
    started = time.monotonic()
    counts = PieceSource(panel._conn, ("run", 1)).kind_counts()
    assert time.monotonic() - started < 10
    assert counts.get("special", 0) == len(specials) - 1  # the text id is no special, nor is every piece
    assert counts.get("normal", 0) > 40


@pytest.fixture
def short_query_limit(monkeypatch):
    from workbench.ui import project_session

    monkeypatch.setattr(project_session, "QUERY_LIMIT_S", 1.0)
    from workbench.ui.merges.merge_model import LazyKeyedModel

    monkeypatch.setattr(LazyKeyedModel, "JOB_LIMIT_S", 1.0)  # a slow regex goes on to the worker


def test_a_query_running_too_long_is_stopped_with_one_line(make_window, tmp_path, qtbot, short_query_limit):
    project = _train(tmp_path, "--vocab-size", "400")
    # Stored pieces on which the pattern below backtracks for ~50 ms each: the whole filter would
    # take minutes, each piece stays under the per-piece regex timeout.
    _sql(project, "UPDATE vocab SET piece = CAST(printf('%.20c!%d', 'a', id) AS BLOB) WHERE run_id = 1")
    window = make_window(project)
    panel = window.merges
    qtbot.waitUntil(lambda: panel.current_source() == ("run", 1), timeout=20000)
    started = time.monotonic()
    panel.set_filter(r"(a|aa)+$", regex=True)
    elapsed = time.monotonic() - started
    assert elapsed < 6, elapsed
    # the window's thread tried it for a moment (LazyKeyedModel.HERE_LIMIT_S), then a worker ran it
    assert panel.model.busy
    qtbot.waitUntil(lambda: not panel.model.busy, timeout=20000)
    assert time.monotonic() - started < 10
    message = panel.error.text()
    assert "ran longer than the window allows" in message and "\n" not in message
    panel.set_filter("")  # the connection still answers afterwards
    assert panel.model.rowCount() > 0


_CRASH_WRITE = """
import os, sys
from workbench.store import ProjectStore
store = ProjectStore.open(sys.argv[1])
for name in sys.argv[2:]:
    store.rename_run(1, name)
os._exit(0)
"""


def test_window_opening_a_restored_backup_beside_a_crash_log_keeps_the_backup(make_window, tmp_path, qtbot):
    project = _train(tmp_path, "--vocab-size", "300")
    backup = tmp_path / "backup.tokproj"
    backup.write_bytes(project.read_bytes())
    done = subprocess.run([sys.executable, "-c", _CRASH_WRITE, str(project), "after the backup", "again"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and Path(f"{project}-wal").stat().st_size > 0, done.stderr
    log = Path(f"{project}-wal").read_bytes()
    project.write_bytes(backup.read_bytes())  # the restore; the crash's -wal stays beside it
    merges = _rows(backup, "SELECT * FROM merges ORDER BY rank")
    window = make_window(project)
    assert [r.name for r in window.session.runs()] == [r[0] for r in _rows(backup, "SELECT name FROM runs")]
    assert _rows(project, "SELECT * FROM merges ORDER BY rank") == merges
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("sent.tokproj-wal.set-aside-")]
    assert [p.read_bytes() for p in aside] == [log]


def _matching_ranks(pattern: str, merges: list[tuple[bytes, bytes, bytes]]) -> list[int]:
    """The oracle: ranks whose left, right or result piece the pattern finds (the filter's "any")."""
    import regex

    compiled = regex.compile(pattern)
    return [rank for rank, pieces in enumerate(merges)
            if any(compiled.search(p.decode("utf-8", "backslashreplace")) for p in pieces)]


def test_a_slow_regex_filter_on_a_training_run_is_refreshed_by_a_worker(make_window, tmp_path, qtbot):
    """The Merges tab's live refresh while a run trains goes through the same bounded try as a new
    filter: a pathological pattern over the new merges is handed to a worker, whose rows are then
    inserted (it ran on the window's thread before, up to the query limit)."""
    from workbench.core.model import MergeEvent, base_vocab
    from workbench.store import ProjectStore

    path = tmp_path / "live.tokproj"
    store = ProjectStore.open(path, create=True)
    run = store.create_run("live", {"units": "bytes", "pretokenizer": "gpt2"}, [], base_vocab("bytes"),
                           ["base"] * 256)
    writer = store.run_writer(run, interval=float("inf"))
    merges: list[tuple[bytes, bytes, bytes]] = []

    def add(pieces: list[bytes]) -> None:
        for piece in pieces:
            rank = len(merges)
            left, right = 98 + rank % 20, 97 + rank // 20 % 20  # "b".."u" + "a".."t": some end in "a"
            writer.add(MergeEvent(rank + 1, left, right, 256 + rank, 1000 - rank, 257 + rank, 10**6 - rank), piece)
            merges.append((bytes([left]), bytes([right]), piece))
        writer.flush()

    try:
        add([bytes([98 + r % 20, 97 + r // 20 % 20]) for r in range(200)])  # quick for any pattern
        window = make_window(path)
        panel = window.merges
        qtbot.waitUntil(lambda: panel.current_source() == ("run", 1), timeout=20000)
        assert "training" in panel.status.text()
        pattern = r"(a|aa)+$"
        panel.set_filter(pattern, regex=True)
        qtbot.waitUntil(lambda: not panel.model.busy, timeout=20000)
        model = panel.model
        assert [model.key_at(r) for r in range(model.rowCount())] == _matching_ranks(pattern, merges)

        # New merges whose results the pattern backtracks on (~5 ms each, ~0.3 s in all): more
        # than the window's thread may spend in one go, and far less than the job's limit.
        add([b"a" * 20 + b"!%d" % i for i in range(60)] + [b"za", b"zaa"])
        before = model.rowCount()
        cpu = time.thread_time()
        panel.refresh()  # what the window calls every ~500 ms while a run trains
        spent = time.thread_time() - cpu
        assert model.busy and model.rowCount() == before  # handed to the worker, nothing inserted yet
        assert spent < 0.25, spent  # the try is bounded (HERE_LIMIT_S plus one piece's match)
        assert panel.table._placeholder == "Filtering and sorting…"  # were the table empty
        qtbot.waitUntil(lambda: not model.busy, timeout=20000)
        assert panel.error.text() == ""
        expected = _matching_ranks(pattern, merges)
        assert [model.key_at(r) for r in range(model.rowCount())] == expected
        assert expected[-2:] == [260, 261] and model.total == 262
        assert f"{len(expected):,} of 262 merges match" in panel.count_label.text()
        assert panel.table._placeholder == "No merge matches the filter."

        panel.refresh()  # nothing new: nothing to hand on
        assert not model.busy and model.rowCount() == len(expected)
    finally:
        writer.close()
        store.finish_run(run, "finished")
        store.close()
