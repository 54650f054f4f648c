"""Nothing a user does loses a project (issue 15, items 1, 5, 6, 10, 11, 12), through the real CLI.

A full disk, damaged pages, an export aimed at the project itself, another program's lock, a
read-only medium, a dead owner whose pid was reused, a partial run exported: each is refused or
recovered in one line, and the project file stays byte-identical wherever it must.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_helpers import digest, one_line_error, run_inproc, without_warnings, workbench

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
WORKBENCH = Path(__file__).resolve().parents[2] / "workbench"


@contextlib.contextmanager
def small_filesystem(where: Path, size: str):
    """A tmpfs of ``size`` mounted at ``where`` (we run as root); skipped where mounting is impossible."""
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill up (needs root and mount rights): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def remount(where: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True, capture_output=True)


def test_full_disk_leaves_a_project_that_opens_and_recovers(tmp_path):
    shakespeare = CORPORA / "en_shakespeare.txt"
    if not shakespeare.exists():
        pytest.skip("../shared/corpora is not beside the checkout")
    small = tmp_path / "small.txt"
    small.write_bytes(shakespeare.read_bytes()[:100_000])
    with small_filesystem(tmp_path / "mnt", "600k") as mnt:
        project = mnt / "p.tokproj"
        done = workbench("train", str(small), "--project", str(project), "--vocab-size", "300",
                         "--progress", "none", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert workbench("export", str(project), "--format", "hf", "--out", "before.json", cwd=tmp_path).returncode == 0

        done = workbench("train", str(shakespeare), "--project", str(project), "--vocab-size", "20000",
                         "--progress", "none", cwd=tmp_path)
        assert done.returncode == 2
        assert "disk is full" in one_line_error(done.stderr)

        still_full = workbench("runs", str(project), cwd=tmp_path)
        if still_full.returncode == 2:  # the interrupted checkpoint cannot finish yet: say so, not "backup"
            line = one_line_error(still_full.stderr)
            assert "disk is full" in line and "backup" not in line and "truncated" not in line

        remount(mnt, "size=16m")  # space freed
        done = workbench("runs", str(project), "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        if still_full.returncode == 2:
            note = one_line_error(done.stderr)
            assert "recovered" in note and "nothing was lost" in note
        runs = json.loads(done.stdout)
        assert runs[0]["status"] == "finished"
        assert runs[1]["status"] in ("failed", "interrupted")

        done = workbench("export", str(project), "--run", "1", "--format", "hf", "--out", "after.json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "after.json").read_bytes() == (tmp_path / "before.json").read_bytes()
        with contextlib.closing(sqlite3.connect(project)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        again = workbench("runs", str(project), cwd=tmp_path)
        assert again.returncode == 0 and again.stderr == ""  # recovered once, for good


def test_read_only_medium_is_refused_before_the_corpus_is_read(trained, tmp_path):
    late = tmp_path / "late.txt"
    late.write_bytes(b"plain words on a line\n" * 3300 + b"bad \xff byte\n")
    with small_filesystem(tmp_path / "mnt", "1m") as mnt:
        shutil.copy(trained, mnt / "p.tokproj")
        remount(mnt, "ro")
        before = digest(mnt / "p.tokproj")
        code, _out, err = run_inproc(["train", str(late), "--project", str(mnt / "p.tokproj"), "--merges", "5",
                                      "--progress", "none"])
        assert code == 2
        line = one_line_error(err)
        assert "read-only" in line and "late.txt" not in line
        assert digest(mnt / "p.tokproj") == before


def _damage_runs_table(project: Path) -> None:
    """Overwrite the b-tree page header of the ``runs`` table: SQLite calls the file malformed."""
    with contextlib.closing(sqlite3.connect(project)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    with open(project, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xff" * 12)


def test_damaged_pages_are_one_line_and_never_written_into(trained, exports, tmp_path):
    project = tmp_path / "p.tokproj"
    shutil.copy(trained, project)
    _damage_runs_table(project)
    before = digest(project)
    corpus = tmp_path / "c.txt"
    corpus.write_text("some words to train on\n" * 50, "utf-8")
    for args in (["runs", str(project)], ["runs", str(project), "--json"],
                 ["train", str(corpus), "--project", str(project), "--merges", "5", "--progress", "none"],
                 ["encode", "--tokenizer", str(project), "--text", "hi"],
                 ["export", str(project), "--format", "hf", "--out", str(tmp_path / "t.json")],
                 ["import", str(exports["tiktoken"]), "--project", str(project)]):
        code, _out, err = run_inproc(args)
        assert code == 2, (args, err)
        line = one_line_error(err)
        assert "p.tokproj" in line, line
        assert digest(project) == before, args


def test_train_refuses_a_file_quick_check_calls_damaged(trained, tmp_path):
    """Damage that only a check finds (not the first read): train must not write a run into it."""
    project = tmp_path / "p.tokproj"
    shutil.copy(trained, project)
    with contextlib.closing(sqlite3.connect(project)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'merges'").fetchone()[0]
    with open(project, "r+b") as f:  # a child pointer of the merges b-tree aimed far outside the file
        f.seek((root - 1) * page_size)
        header = f.read(12)
    if header[0] != 0x02:  # merges fit in one leaf page: damage its cell pointer array instead
        with open(project, "r+b") as f:
            f.seek((root - 1) * page_size + 8)
            f.write(b"\xff\xf0" * 4)
    else:
        with open(project, "r+b") as f:
            f.seek((root - 1) * page_size + 8)
            f.write(b"\x7f\xff\xff\xff")
    with contextlib.closing(sqlite3.connect(project)) as conn:
        try:
            assert conn.execute("PRAGMA quick_check").fetchone()[0] != "ok"
        except sqlite3.DatabaseError:
            pass
    before = digest(project)
    corpus = tmp_path / "c.txt"
    corpus.write_text("some words to train on\n" * 50, "utf-8")
    code, _out, err = run_inproc(["train", str(corpus), "--project", str(project), "--merges", "5",
                                  "--progress", "none"])
    assert code == 2
    assert "damaged" in one_line_error(err)
    assert digest(project) == before


@pytest.mark.parametrize("fmt", ["hf", "tiktoken", "wordpiece", "spm-vocab", "merges-csv", "gpt2"])
def test_export_over_the_project_itself_is_refused(trained, tmp_path, fmt):
    project = tmp_path / "p.tokproj"
    shutil.copy(trained, project)
    (tmp_path / "link.tokproj").symlink_to(project)
    os.link(project, tmp_path / "hard.tokproj")
    before = digest(project)
    for out in (project, tmp_path / "link.tokproj", tmp_path / "hard.tokproj"):
        code, _out, err = run_inproc(["export", str(project), "--format", fmt, "--force", "--out", str(out)])
        assert code == 2, err
        one_line_error(err)
        assert digest(project) == before
    code, _out, err = run_inproc(["runs", str(project), "--json"])
    assert code == 0 and err == ""


def test_a_locked_project_is_reported_as_locked_not_damaged(trained, tmp_path):
    project = tmp_path / "p.tokproj"
    shutil.copy(trained, project)
    with contextlib.closing(sqlite3.connect(project, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("BEGIN EXCLUSIVE")  # another program holds the file
        done = workbench("runs", str(project), cwd=tmp_path)
        conn.execute("ROLLBACK")
    assert done.returncode == 2
    line = one_line_error(done.stderr)
    assert "locked by another program" in line and "backup" not in line


def test_cli_messages_use_no_window_words(tmp_path):
    """Messages below the window are read in a terminal too: no "Save As", no "re-add"."""
    offenders = []
    for path in WORKBENCH.rglob("*.py"):
        if "ui" in path.relative_to(WORKBENCH).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" not in node.value
                    and ("Save As" in node.value or "re-add" in node.value)):  # docstrings span lines
                offenders.append(f"{path.name}: {node.value[:60]}")
    assert not offenders, offenders
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café crème brûlée\n".encode("cp1252") * 20)
    code, _out, err = run_inproc(["train", str(latin), "--project", str(tmp_path / "p.tokproj"), "--merges", "3",
                                  "--progress", "none"])
    assert code == 2
    line = one_line_error(err)
    assert "encoding cp1252" in line and "re-add" not in line


def test_a_reused_owner_pid_does_not_keep_a_dead_run_running(trained, tmp_path):
    project = tmp_path / "p.tokproj"
    shutil.copy(trained, project)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        now = time.time()
        with contextlib.closing(sqlite3.connect(project, isolation_level=None)) as conn:
            for name, started in (("dead owner, pid reused", now - 3600), ("live owner", now + 3600)):
                conn.execute("INSERT INTO runs (name, settings, status, started, updated, owner_pid, owner_host) "
                             "VALUES (?, '{}', 'running', ?, ?, ?, ?)",
                             (name, started, started, stranger.pid, socket.gethostname()))
        code, out, err = run_inproc(["runs", str(project), "--json"])
        assert code == 0, err
        status = {r["name"]: r["status"] for r in json.loads(out)}
        assert status["dead owner, pid reused"] == "interrupted"  # the pid now belongs to a younger process
        assert status["live owner"] == "running"  # created before the run started: still its owner
    finally:
        stranger.kill()
        stranger.wait()


def test_exporting_an_interrupted_run_says_it_is_partial(trained, tmp_path):
    project = tmp_path / "p.tokproj"
    shutil.copy(trained, project)
    with contextlib.closing(sqlite3.connect(project, isolation_level=None)) as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO runs (id, name, settings, status, started, updated) "
                     "SELECT 2, 'cut short', settings, 'interrupted', started, updated FROM runs WHERE id = 1")
        for table in ("vocab", "merges"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            rest = ", ".join(c for c in cols if c != "run_id")
            only_ten = " AND rank < 10" if table == "merges" else ""
            conn.execute(f"INSERT INTO {table} (run_id, {rest}) SELECT 2, {rest} FROM {table} "
                         f"WHERE run_id = 1{only_ten}")
        conn.execute("DELETE FROM vocab WHERE run_id = 2 AND id >= (SELECT min(new_id) FROM merges WHERE run_id = 2) + 10")
        conn.execute("COMMIT")
    code, _out, err = run_inproc(["export", str(project), "--run", "2", "--format", "hf", "--out",
                                 str(tmp_path / "t.json")])
    assert code == 0, err
    note = one_line_error(without_warnings(err))
    assert "interrupted" in note and "partial" in note and "10 merges" in note
    code, _out, err = run_inproc(["export", str(project), "--run", "1", "--format", "hf", "--out",
                                  str(tmp_path / "t1.json")])
    assert code == 0 and without_warnings(err) == ""  # a finished run exports without a note
