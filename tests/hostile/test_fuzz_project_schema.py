"""Crafted-project fuzzing, schema objects: triggers, views and indexes with random SQL bodies
added to a trained project, then ``runs`` (a read-only open) and ``train`` (a writable one) run on
it through the real CLI in a child process.

The contract: exit 0 or 2 and at most one stderr line (exactly one on 2), never a traceback or a
hang (a time limit per command); run 1's rows are the same afterwards, no trigger, view or
extra index is left once ``train`` opened the file, and nothing appears in the project's folder
but the new run inside the file. Seeded, so a failure is reproducible by its case id.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_helpers import workbench

CASES = int(os.environ.get("WORKBENCH_FUZZ_CASES", "12"))
TABLES = ["runs", "merges", "vocab", "settings", "corpora", "run_corpora", "texts", "run_steps", "refs"]
ENDLESS = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c)"
STATEMENTS = [
    "DELETE FROM merges", "DELETE FROM vocab WHERE run_id = 1", "UPDATE runs SET name = 'pwned'",
    "UPDATE runs SET settings = '{'", "INSERT INTO texts (name, text, saved) VALUES ('x', 'y', 0)",
    "UPDATE merges SET frequency = -1", "DELETE FROM settings", f"SELECT {ENDLESS}",
    "SELECT raise(ABORT, 'stored code ran')", "SELECT zeroblob(2000000000)",
    "UPDATE runs SET id = id + 1000", "INSERT INTO runs (name, status, started, updated) VALUES "
    "('ghost', 'finished', 0, 0)", "SELECT abs(-9223372036854775807 - 1)",
]
EXPRESSIONS = ["length(zeroblob(1000))", "abs(rowid)", "hex(id)", "coalesce(name, 1)", "substr(name, 2)",
               "CASE WHEN id > 1 THEN zeroblob(2000000000) END", "lower(name)", "id * 2",
               "length(hex(randomblob(4)))", "json_extract(settings, '$.x')", "1 / 0"]
VIEWS = [f"SELECT {ENDLESS}", "SELECT * FROM merges", "SELECT * FROM runs, merges, vocab",
         "SELECT raise(IGNORE)", "SELECT load_extension('nothing')", "SELECT 1"]


def _object(rng: random.Random, n: int) -> str:
    kind = rng.choice(["trigger", "trigger", "view", "index"])
    name = rng.choice([f"t{n}", f"obj {n}", f'"q{n}"', f"sqlite_x{n}", f"runs_{n}"])
    table = rng.choice(TABLES)
    if kind == "trigger":
        when = rng.choice(["BEFORE", "AFTER"])
        event = rng.choice(["INSERT", "UPDATE", "DELETE"])
        body = "; ".join(rng.sample(STATEMENTS, rng.randint(1, 3)))
        return f"CREATE TRIGGER {name} {when} {event} ON {table} BEGIN {body}; END"
    if kind == "view":
        return f"CREATE VIEW {name} AS {rng.choice(VIEWS)}"
    where = f" WHERE {rng.choice(EXPRESSIONS)} IS NOT NULL" if rng.random() < 0.4 else ""
    return f"CREATE INDEX {name} ON {table}(({rng.choice(EXPRESSIONS)})){where}"


def _craft(project: Path, rng: random.Random) -> list[str]:
    made = []
    with contextlib.closing(sqlite3.connect(project, isolation_level=None)) as conn:
        for n in range(rng.randint(1, 4)):
            sql = _object(rng, n)
            try:
                conn.execute(sql)
            except sqlite3.Error:
                continue  # SQLite refused to create it: no file can carry it either
            made.append(sql)
    return made


def _run_one(project: Path) -> tuple:
    with contextlib.closing(sqlite3.connect(f"file:{project}?mode=ro", uri=True)) as conn:
        return (conn.execute("SELECT id, name, status, settings FROM runs WHERE id = 1").fetchall(),
                conn.execute("SELECT count(*), sum(new_id), sum(frequency) FROM merges WHERE run_id = 1").fetchone(),
                conn.execute("SELECT count(*), sum(length(piece)) FROM vocab WHERE run_id = 1").fetchone())


def _stored_code(project: Path) -> list:
    with contextlib.closing(sqlite3.connect(f"file:{project}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') "
                            "OR (type = 'index' AND sql IS NOT NULL)").fetchall()


def _at_most_one_line(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr[-2000:]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) <= 1, stderr[-2000:]
    return lines


@pytest.mark.parametrize("case", range(CASES))
def test_crafted_schema_objects_never_run(trained, tmp_path, case):
    rng = random.Random(f"schema-{case}")
    folder = tmp_path / "case"
    folder.mkdir()
    project = folder / "p.tokproj"
    shutil.copy(trained, project)
    corpus = folder / "c.txt"
    corpus.write_text("fresh words for a second run, trained on the crafted file\n" * 40, "utf-8")
    made = _craft(project, rng)
    before = _run_one(project)
    listing = sorted(p.name for p in folder.iterdir())

    done = workbench("runs", str(project), "--json", cwd=folder, timeout=60)
    assert done.returncode in (0, 2), (made, done.stderr)
    lines = _at_most_one_line(done.stderr)
    assert done.returncode == 0 or len(lines) == 1

    done = workbench("train", str(corpus), "--project", str(project), "--merges", "10", "--progress", "none",
                     "--no-count-cache", cwd=folder, timeout=60)
    assert done.returncode in (0, 2), (made, done.stderr)
    lines = _at_most_one_line(done.stderr)
    if done.returncode == 2:
        assert len(lines) == 1 and "p.tokproj" in lines[0], (made, lines)
    else:
        assert _stored_code(project) == [], made
        if any(" VIEW " in m or " TRIGGER " in m or " INDEX " in m for m in made):
            assert lines and "removed them" in lines[0], (made, lines)
    assert _run_one(project) == before, made
    assert sorted(p.name for p in folder.iterdir()) == listing, made
