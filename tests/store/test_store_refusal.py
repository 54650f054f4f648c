"""Files that are not (current) projects are refused untouched; read-only projects open read-only."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
from store_helpers import DATA, sha256, side_files
from unprivileged import ran_unprivileged

from workbench.errors import WorkbenchError
from workbench.store import ProjectStore, current_version, opening


def _foreign_sqlite(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('hello')")
    conn.commit()
    conn.close()


def _other_app_id(path):
    _foreign_sqlite(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1598903374")  # another program's id
    conn.commit()
    conn.close()


def _foreign_wal_mode(path):
    _foreign_sqlite(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()


def _newer(path):
    shutil.copy(DATA / "v1_project.tokproj", path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {current_version() + 1}")
    conn.commit()
    conn.close()


def _truncated(path):
    shutil.copy(DATA / "v1_project.tokproj", path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _header_only(path):
    path.write_bytes((DATA / "v1_project.tokproj").read_bytes()[:60])


def _current_project(path):
    """The v1 fixture upgraded to the current version (an old file is upgraded when opened, even
    read-only, so "never writes" needs a file that is already current)."""
    shutil.copy(DATA / "v1_project.tokproj", path)
    ProjectStore.open(path).close()
    conn = sqlite3.connect(path)  # back to the fixture's rollback journal, as these tests had it
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    assert side_files(path) == []


def _random(path):
    path.write_bytes(os.urandom(8192))


def _text(path):
    path.write_text("rank,left,right\n0,a,b\n", encoding="utf-8")


def _empty(path):
    path.write_bytes(b"")


CASES = {
    "foreign sqlite": (_foreign_sqlite, "another program"),
    "other application id": (_other_app_id, "another program"),
    "foreign sqlite in WAL mode": (_foreign_wal_mode, "another program"),
    "newer version": (_newer, "newer Tokenizer Workbench"),
    "truncated": (_truncated, "truncated"),
    "first 60 bytes only": (_header_only, "truncated"),
    "random bytes": (_random, "not an SQLite database"),
    "text file": (_text, "not an SQLite database"),
    "empty file": (_empty, "empty"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("how", [{}, {"readonly": True}, {"create": True}])
def test_bad_file_is_refused_and_left_byte_identical(tmp_path, case, how):
    make, message = CASES[case]
    path = tmp_path / "bad.tokproj"
    make(path)
    before = sha256(path)
    with pytest.raises(WorkbenchError, match=message) as err:
        ProjectStore.open(path, **how)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert sha256(path) == before
    assert side_files(path) == []


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(WorkbenchError, match="folder"):
        ProjectStore.open(tmp_path)


def test_project_missing_its_tables_is_refused(tmp_path):
    """An old file too: the check runs again after the upgrade, whose rollback leaves it as it was."""
    path = tmp_path / "p.tokproj"
    shutil.copy(DATA / "v1_project.tokproj", path)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE texts")
    conn.commit()
    conn.close()
    before = sha256(path)
    with pytest.raises(WorkbenchError, match="damaged.*texts"):
        ProjectStore.open(path)
    assert sha256(path) == before and side_files(path) == []


def _assert_read_only_store(store, path, before):
    assert store.read_only and str(path.name) in store.note and "read-only" in store.note
    assert [r.name for r in store.runs()] == ["first run"]  # reading works
    for write in (lambda: store.rename_run(1, "x"), lambda: store.save_text("t", "x"),
                  lambda: store.create_run("r", {}, [], [b"a"], ["base"]),
                  lambda: store.run_writer(1)):
        with pytest.raises(WorkbenchError, match="read-only"):
            write()
    store.close()
    assert sha256(path) == before and side_files(path) == []


def test_readonly_open_never_writes(tmp_path):
    path = tmp_path / "p.tokproj"
    _current_project(path)
    before = sha256(path)
    _assert_read_only_store(ProjectStore.open(path, readonly=True), path, before)


def test_read_only_file_opens_read_only(tmp_path, request):
    if ran_unprivileged(request):  # as root: re-run where permission bits stop writes
        return
    path = tmp_path / "p.tokproj"
    _current_project(path)
    path.chmod(0o444)
    assert not os.access(path, os.W_OK)
    before = sha256(path)
    _assert_read_only_store(ProjectStore.open(path), path, before)


def test_os_reporting_read_only_medium_opens_read_only(tmp_path, monkeypatch):
    path = tmp_path / "p.tokproj"
    _current_project(path)
    before = sha256(path)
    monkeypatch.setattr(opening.os, "access", lambda p, mode: mode != os.W_OK)
    store = ProjectStore.open(path)
    assert "file is read-only" in store.note
    _assert_read_only_store(store, path, before)


def test_sqlite_refusing_to_write_falls_back_to_read_only(tmp_path, monkeypatch):
    """As root chmod cannot stop writes, so make SQLite itself refuse: a write-mode connect
    that is really read-only, as on a medium that fails writes the OS did not predict."""
    path = tmp_path / "p.tokproj"
    _current_project(path)
    before = sha256(path)
    real_connect = opening.connect
    monkeypatch.setattr(opening, "connect",
                        lambda p, mode: real_connect(p, "ro" if mode == "rw" else mode))
    store = ProjectStore.open(path)
    assert "refused to write" in store.note
    _assert_read_only_store(store, path, before)
