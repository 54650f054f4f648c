"""An untrusted ``.tokproj`` browsed with the new commands (issue 25): ``stats``, ``audit``,
``export``, ``extend --base P#1`` and ``trim P#1`` never run a trigger, view or expression index
planted in it, never write into it while only reading it, and write nothing beside it; storing
into it (``extend``/``trim --project P``) first removes the planted code, said in one note line,
and leaves the earlier runs as they were. A view standing in for one of the project's tables is
refused in one line by each command. Child processes (the real entry point) with a timeout: a
planted endless query would hang, not fail.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_helpers import digest, one_line_error, workbench
from test_hostile_project_file import CRAFTED, craft, rows_of_run_one, stored_code

CORPUS = "Domain words: tokenizer tokenizers tokenization, merges merged merging.\n" * 30


@pytest.fixture()
def planted(trained, tmp_path) -> Path:
    """A copy of the trained project, alone in its folder, carrying every crafted object at once."""
    folder = tmp_path / "theirs"
    folder.mkdir()
    project = folder / "p.tokproj"
    shutil.copy(trained, project)
    craft(project, *CRAFTED.values())
    return project


def _outputs(tmp_path: Path) -> Path:
    mine = tmp_path / "mine"
    mine.mkdir(exist_ok=True)
    (mine / "c.txt").write_text(CORPUS, "utf-8")
    return mine


def test_browsing_a_planted_project_runs_nothing_and_writes_nothing_into_or_beside_it(planted, tmp_path):
    mine = _outputs(tmp_path)
    before, code_before = digest(planted), stored_code(planted)
    src = f"{planted}#1"
    for args in (["runs", str(planted)], ["stats", "c.txt", "--tokenizer", str(planted)],
                 ["audit", src, "--json"], ["export", str(planted), "--format", "hf", "--out", "t.json"],
                 ["extend", "c.txt", "--base", src, "--add", "5", "--project", "e.tokproj", "--progress", "none"],
                 ["trim", src, "--remove", "280", "--out", "trimmed.json"]):
        done = workbench(*args, cwd=mine, timeout=60)
        assert done.returncode == 0, (args, done.stderr[-800:])
        assert "Traceback" not in done.stderr and "error" not in done.stderr, (args, done.stderr)
        assert digest(planted) == before, f"{args[0]} wrote into the project it only read"
        assert sorted(p.name for p in planted.parent.iterdir()) == ["p.tokproj"], f"{args[0]} wrote beside it"
    assert stored_code(planted) == code_before  # read-only opens keep (and never run) the objects
    assert {"t.json", "e.tokproj", "trimmed.json", "trimmed.json.idmap.csv"} <= {p.name for p in mine.iterdir()}
    assert stored_code(mine / "e.tokproj") == []  # nothing planted travels into a project made from it


@pytest.mark.parametrize("command", ["extend", "trim"])
def test_storing_into_a_planted_project_removes_the_code_first(planted, tmp_path, command):
    mine = _outputs(tmp_path)
    run_one = rows_of_run_one(planted)
    src = f"{planted}#1"
    args = (["extend", "c.txt", "--base", src, "--add", "5", "--project", str(planted), "--progress", "none"]
            if command == "extend" else ["trim", src, "--remove", "280", "--project", str(planted)])
    done = workbench(*args, cwd=mine, timeout=60)
    assert done.returncode == 0, done.stderr[-800:]
    notes = [line for line in done.stderr.splitlines() if "removed them" in line]
    assert len(notes) == 1, done.stderr
    assert rows_of_run_one(planted) == run_one  # no trigger renamed or emptied the earlier run
    assert stored_code(planted) == []
    with contextlib.closing(sqlite3.connect(f"file:{planted}?mode=ro", uri=True)) as conn:
        (status,) = conn.execute("SELECT status FROM runs WHERE id = 2").fetchone()
    assert status == "finished"


def test_a_view_standing_in_for_a_table_is_refused_by_the_new_commands(trained, tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir()
    project = folder / "p.tokproj"
    shutil.copy(trained, project)
    craft(project, "DROP TABLE texts", "CREATE VIEW texts AS SELECT 1 AS id, 'x' AS name, 'y' AS text, 0 AS saved")
    mine = _outputs(tmp_path)
    before = digest(project)
    src = f"{project}#1"
    for args in (["audit", src], ["stats", "c.txt", "--tokenizer", str(project)],
                 ["extend", "c.txt", "--base", src, "--add", "5", "--project", "e.tokproj", "--progress", "none"],
                 ["trim", src, "--remove", "280", "--out", "trimmed.json"]):
        done = workbench(*args, cwd=mine, timeout=60)
        assert done.returncode == 2, (args, done.stderr[-800:])
        assert "p.tokproj" in one_line_error(done.stderr)
        assert digest(project) == before
    assert sorted(p.name for p in mine.iterdir()) == ["c.txt"]
