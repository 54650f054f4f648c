"""A project file is a document: a stale ``-wal`` beside it, SQL stored in it, or stored values
pasted into SQL must never change it, run, or hang. Through the real CLI (a child process), the
file's bytes compared before and after."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hostile_helpers import digest, one_line_error, workbench

# A process that writes through the store and dies without closing it: its -wal stays behind,
# exactly as after a crash (kill -9, power loss of the window).
_CRASH_WRITE = textwrap.dedent("""
    import os, sys
    from workbench.store import ProjectStore
    store = ProjectStore.open(sys.argv[1])
    for name in sys.argv[2:]:
        store.rename_run(1, name)
    os._exit(0)
""")


def crash_after_renames(project: Path, *names: str) -> bytes:
    """Rename run 1 (one transaction per name) in a process that then dies; the -wal it left."""
    done = subprocess.run([sys.executable, "-c", _CRASH_WRITE, str(project), *names], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    log = Path(f"{project}-wal")
    assert log.stat().st_size > 0
    return log.read_bytes()


def run_names(project: Path, cwd: Path) -> tuple[list[str], str]:
    done = workbench("runs", str(project), "--json", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return [r["name"] for r in json.loads(done.stdout)], done.stderr


def side_files(project: Path) -> list[str]:
    return sorted(p.name for p in project.parent.iterdir() if p.name.startswith(project.name + "-"))


@pytest.fixture()
def project(trained, tmp_path) -> Path:
    path = tmp_path / "p.tokproj"
    shutil.copy(trained, path)
    return path


def test_read_only_commands_read_the_projects_own_wal_and_never_checkpoint_it(project, tmp_path):
    wal = crash_after_renames(project, "first", "second")
    before = digest(project, Path(f"{project}-wal"))
    corpus = tmp_path / "held.txt"
    corpus.write_text("The quick brown fox jumps over the lazy dog.\n" * 20, "utf-8")
    names, err = run_names(project, tmp_path)
    assert names == ["second"] and err == ""  # the crashed session's last commit is there
    for args in (["runs", str(project)],
                 ["encode", "--tokenizer", str(project), "--text", "hello"],
                 ["decode", "--tokenizer", str(project), "--ids", "70,71,72"],
                 ["export", str(project), "--format", "hf", "--out", str(tmp_path / "t.json")],
                 ["stats", str(corpus), "--tokenizer", str(project), "--no-cache"],
                 ["sweep", str(project), str(corpus), "--points", "2", "--no-cache"]):
        done = workbench(*args, cwd=tmp_path)
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, (args, done.stderr)
        assert digest(project, Path(f"{project}-wal")) == before, args
    assert Path(f"{project}-wal").read_bytes() == wal


def test_a_wal_of_another_project_is_set_aside_and_named(project, tmp_path):
    other = tmp_path / "other" / "o.tokproj"
    other.parent.mkdir()
    corpus = tmp_path / "other.txt"
    corpus.write_text("Entirely different words for another project, trained apart.\n" * 60, "utf-8")
    done = workbench("train", str(corpus), "--project", str(other), "--vocab-size", "280", "--progress", "none",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    wal = crash_after_renames(other, "x", "y")
    original, _ = run_names(project, tmp_path)
    before = project.read_bytes()
    Path(f"{project}-wal").write_bytes(wal)
    names, err = run_names(project, tmp_path)
    assert names == original
    line = one_line_error(err)
    assert "p.tokproj-wal" in line and "moved it aside" in line and "set-aside" in line
    assert project.read_bytes() == before
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("p.tokproj-wal.set-aside-")]
    assert len(aside) == 1 and aside[0].read_bytes() == wal  # nothing lost: the log is kept
    assert not Path(f"{project}-wal").exists()
    again, err = run_names(project, tmp_path)
    assert again == original and err == ""


def test_a_wal_of_a_copy_of_the_same_project_does_not_replace_it(project, tmp_path):
    copy = tmp_path / "copy" / "p.tokproj"
    copy.parent.mkdir()
    shutil.copy(project, copy)
    original, _ = run_names(project, tmp_path)
    wal = crash_after_renames(copy, "from the copy", "again")
    shutil.copy(Path(f"{copy}-wal"), Path(f"{project}-wal"))
    before = project.read_bytes()
    names, err = run_names(project, tmp_path)
    assert names == original
    assert "moved it aside" in one_line_error(err)
    assert project.read_bytes() == before
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("p.tokproj-wal.set-aside-")]
    assert [p.read_bytes() for p in aside] == [wal]


def test_a_backup_restored_over_a_crashed_project_keeps_its_content(project, tmp_path):
    backup = tmp_path / "backup.tokproj"
    shutil.copy(project, backup)
    crash_after_renames(project, "after the backup", "and again")
    shutil.copy(backup, project)  # the restore; the crash's -wal stays beside it
    before = project.read_bytes()
    train = tmp_path / "c.txt"
    train.write_text("words to train on and on\n" * 40, "utf-8")
    done = workbench("train", str(train), "--project", str(project), "--merges", "5", "--progress", "none",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "moved it aside" in done.stderr and "Traceback" not in done.stderr
    names, _ = run_names(project, tmp_path)
    assert names[0] == json.loads(workbench("runs", str(backup), "--json", cwd=tmp_path).stdout)[0]["name"]
    assert len(names) == 2
    with contextlib.closing(sqlite3.connect(project)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert before != project.read_bytes()  # the new run was written, into the restored content


def test_a_symlinked_wal_is_refused_saying_it_is_a_link(project, tmp_path):
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    Path(f"{project}-wal").symlink_to(target)
    before = digest(project)
    done = workbench("runs", str(project), cwd=tmp_path)
    assert done.returncode == 2
    line = one_line_error(done.stderr)
    assert "symbolic link" in line and "p.tokproj-wal" in line
    assert digest(project) == before and target.read_bytes() == b""
    assert side_files(project) == ["p.tokproj-wal"]


# ---- SQL stored in a project never runs ---------------------------------------------------------------
_ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
CRAFTED = {
    "trigger deleting every merge": "CREATE TRIGGER wipe AFTER INSERT ON runs BEGIN DELETE FROM merges; END",
    "trigger renaming earlier runs": "CREATE TRIGGER rename AFTER INSERT ON merges BEGIN "
                                     "UPDATE runs SET name = 'pwned' WHERE id = 1; END",
    "trigger that never ends": f"CREATE TRIGGER hang BEFORE INSERT ON runs BEGIN {_ENDLESS}; END",
    "endless view": f"CREATE VIEW everything AS {_ENDLESS}",
    "expression index failing new rows": "CREATE INDEX boom ON vocab(run_id, "
                                         "(CASE WHEN run_id > 1 THEN zeroblob(2000000000) END))",
    "partial index on merges": "CREATE INDEX part ON merges(rank) WHERE length(hex(rank)) > 0",
}


def craft(project: Path, *sql: str) -> None:
    with contextlib.closing(sqlite3.connect(project, isolation_level=None)) as conn:
        for statement in sql:
            conn.execute(statement)


def rows_of_run_one(project: Path) -> tuple:
    with contextlib.closing(sqlite3.connect(f"file:{project}?mode=ro", uri=True)) as conn:
        return (conn.execute("SELECT name FROM runs WHERE id = 1").fetchone(),
                conn.execute("SELECT count(*), sum(new_id), sum(frequency) FROM merges WHERE run_id = 1").fetchone(),
                conn.execute("SELECT count(*) FROM vocab WHERE run_id = 1").fetchone())


def stored_code(project: Path) -> list:
    with contextlib.closing(sqlite3.connect(f"file:{project}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') "
                            "OR (type = 'index' AND sql IS NOT NULL)").fetchall()


@pytest.mark.parametrize("kind", list(CRAFTED))
def test_train_onto_a_project_carrying_sql_removes_it_before_writing(project, tmp_path, kind):
    craft(project, CRAFTED[kind])
    before = rows_of_run_one(project)
    corpus = tmp_path / "c.txt"
    corpus.write_text("some other words to train a second run on\n" * 50, "utf-8")
    # Read-only first: nothing runs, nothing changes.
    digest_before = digest(project)
    done = workbench("runs", str(project), cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert digest(project) == digest_before
    done = workbench("train", str(corpus), "--project", str(project), "--merges", "20", "--progress", "none",
                     cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "removed them" in one_line_error(done.stderr)
    assert rows_of_run_one(project) == before
    assert stored_code(project) == []
    with contextlib.closing(sqlite3.connect(f"file:{project}?mode=ro", uri=True)) as conn:
        assert conn.execute("SELECT count(*) FROM merges WHERE run_id = 2").fetchone()[0] == 20


def test_a_view_in_place_of_one_of_our_tables_is_refused(project, tmp_path):
    craft(project, "DROP TABLE texts", "CREATE VIEW texts AS SELECT 1 AS id, 'x' AS name, 'y' AS text, 0 AS saved")
    before = digest(project)
    corpus = tmp_path / "c.txt"
    corpus.write_text("words\n" * 50, "utf-8")
    for args in (["runs", str(project)], ["train", str(corpus), "--project", str(project), "--merges", "5"]):
        done = workbench(*args, cwd=tmp_path, timeout=60)
        assert done.returncode == 2
        assert "p.tokproj" in one_line_error(done.stderr)
        assert digest(project) == before


def test_one_of_our_tables_redefined_is_refused(project, tmp_path):
    # A generated column computes SQL on every read of the row.
    craft(project, "ALTER TABLE runs ADD COLUMN extra AS (length(zeroblob(1000000)))")
    before = digest(project)
    for args in (["runs", str(project)], ["export", str(project), "--format", "hf", "--out", str(tmp_path / "t.json")]):
        done = workbench(*args, cwd=tmp_path, timeout=60)
        assert done.returncode == 2
        line = one_line_error(done.stderr)
        assert "'runs'" in line and "defined differently" in line
        assert digest(project) == before


def test_a_connection_refuses_to_run_stored_triggers_and_views(project):
    """The guard behind the removal: on every store connection, stored code is "not authorized"
    (a read-only open keeps the objects; another program may add one while a writer is open)."""
    from workbench.store import ProjectStore, opening

    craft(project, f"CREATE VIEW everything AS {_ENDLESS}",
          "CREATE TRIGGER wipe AFTER UPDATE ON runs BEGIN DELETE FROM merges; END")
    before = rows_of_run_one(project)
    with ProjectStore.open(project, readonly=True) as store:
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            store.connection.execute("SELECT * FROM everything").fetchall()
        assert [r.name for r in store.runs()]  # our own queries still answer
    conn = opening.connect(project, "rw")
    try:
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            conn.execute("UPDATE runs SET name = 'changed' WHERE id = 1")
        conn.execute("WITH specials(id) AS (SELECT 1) SELECT count(*) FROM specials").fetchone()  # a CTE is fine
    finally:
        conn.close()
    assert rows_of_run_one(project) == before
    assert len(stored_code(project)) == 2


# A session in which the user copied the file (a naive backup while the window was open), the
# session went on and SQLite checkpointed, then the process died: the -wal begins after the copy.
_SESSION_WITH_BACKUP = textwrap.dedent("""
    import os, shutil, sqlite3, sys
    from workbench.store import ProjectStore
    project, backup = sys.argv[1], sys.argv[2]
    store = ProjectStore.open(project)
    store.rename_run(1, "stamped")
    shutil.copy(project, backup)
    for i in range(40):
        store.save_text(f"text {i}", f"line {i} " * 900)
    store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # as autocheckpoint does
    for i in range(40, 60):
        store.save_text(f"text {i}", f"line {i} " * 900)
    store.rename_run(1, "after the checkpoint")
    os._exit(0)
""")


def test_a_copy_taken_mid_session_restored_under_that_sessions_wal_keeps_its_content(project, tmp_path):
    """The copy shares the session's marker and the -wal carries a higher ``seq``, but the log
    begins after a checkpoint the copy never got: applying it gave a malformed file."""
    backup = tmp_path / "backup.tokproj"
    done = subprocess.run([sys.executable, "-c", _SESSION_WITH_BACKUP, str(project), str(backup)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    wal = Path(f"{project}-wal").read_bytes()
    assert wal
    shutil.copy(backup, project)  # the restore; the crash's -wal stays beside it
    Path(f"{project}-shm").unlink(missing_ok=True)
    before = project.read_bytes()
    names, err = run_names(project, tmp_path)
    assert names[0] == "stamped"
    line = one_line_error(err)
    assert "p.tokproj-wal" in line and "older copy" in line and "moved it aside" in line
    assert project.read_bytes() == before
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("p.tokproj-wal.set-aside-")]
    assert [p.read_bytes() for p in aside] == [wal]
    train = tmp_path / "c.txt"
    train.write_text("words to train on and on\n" * 40, "utf-8")
    done = workbench("train", str(train), "--project", str(project), "--merges", "5", "--progress", "none",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with contextlib.closing(sqlite3.connect(project)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM texts").fetchone()[0] == 0


# Another SQLite program (not a workbench) edits a different project and dies: its -wal never
# touches our marker row, so only its effect tells it apart.
_PLAIN_SQLITE_CRASH = textwrap.dedent("""
    import os, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(sys.argv[2])
    os._exit(0)
""")


def test_a_plain_sqlite_wal_of_another_project_is_set_aside_and_one_of_this_project_is_used(project, tmp_path):
    other = tmp_path / "other" / "o.tokproj"
    other.parent.mkdir()
    corpus = tmp_path / "other.txt"
    corpus.write_text("".join(f"Wort{i} zähle{i * 7 % 101} Sammlung{i % 977} getrennt\n" for i in range(6000)),
                      "utf-8")
    done = workbench("train", str(corpus), "--project", str(other), "--merges", "1500", "--progress", "none",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-c", _PLAIN_SQLITE_CRASH, str(other),
                           "DELETE FROM merges WHERE rank % 2 = 0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    wal = Path(f"{other}-wal").read_bytes()
    original, _ = run_names(project, tmp_path)
    before = project.read_bytes()
    Path(f"{project}-wal").write_bytes(wal)
    names, err = run_names(project, tmp_path)  # was: "p.tokproj is damaged; restore it from a backup"
    assert names == original
    line = one_line_error(err)
    assert "p.tokproj-wal" in line and "another database" in line and "moved it aside" in line
    assert project.read_bytes() == before
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("p.tokproj-wal.set-aside-")]
    assert [p.read_bytes() for p in aside] == [wal]
    # The same kind of log written for this very file is its own: used, nothing set aside.
    for p in aside:
        p.unlink()
    done = subprocess.run([sys.executable, "-c", _PLAIN_SQLITE_CRASH, str(project),
                           "UPDATE runs SET name = 'edited by sqlite3' WHERE id = 1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    Path(f"{project}-shm").unlink(missing_ok=True)
    names, err = run_names(project, tmp_path)
    assert names[0] == "edited by sqlite3" and err == ""
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("p.tokproj-wal.set-aside-")]
