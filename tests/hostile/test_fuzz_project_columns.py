"""Crafted-project fuzzing, column values: a trained project (``three_runs``: BPE, WordPiece and
Unigram) gets one to three of its stored values changed — column types (text, REAL, NULL-like
empties, a number where a piece belongs), JSON shapes (not JSON, another type, a hostile value in a
key, nesting), id ranges (negative, beyond the vocabulary, 2**63 - 1) and pieces — then ``runs``,
``encode`` of every run and ``export`` of one run through the real CLI (in-process, with a time
limit per command; the schema-object fuzz beside it runs child processes).

The contract: exit 0 or 2, on 2 exactly one stderr line, never a traceback or a hang; ``runs``
always lists all three runs; a run whose values were left alone still encodes; nothing is
written into the project's folder (the export goes to a folder of its own). Seeded, so a failure
is reproducible by its case id.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sqlite3

import pytest
from hostile_helpers import Hang, run_inproc

CASES = int(os.environ.get("WORKBENCH_FUZZ_CASES", "40"))
VALUES: list[object] = ["abc", "", -1, -(2**63), 2**63 - 1, 10**12, 1.5, float("-inf"), b"\x00\xff", "[1,2]",
                        "{oops", "null", "9" * 400]
JSON_VALUES: list[object] = [None, True, -1, 2**70, 1.5, "x", "", [], {}, [[[["deep"]]]], {"a": {"b": 1}},
                             ["zzz"], "(((", 1e308]
SETTING_KEYS = ["model", "units", "pretokenizer", "normalizer", "special_tokens", "end_of_word", "unk_token",
                "merge_rule", "continuing_prefix", "max_input_chars_per_word", "byte_fallback", "scores",
                "vocab_size", "tie_break"]
# (table, column, owner column): the cells a mutation may change, for a random run
CELLS = [("runs", "settings", "id"), ("runs", "timings", "id"), ("runs", "started", "id"),
         ("runs", "ended", "id"), ("runs", "name", "id"), ("runs", "error", "id"),
         ("merges", "left_id", "run_id"), ("merges", "right_id", "run_id"), ("merges", "new_id", "run_id"),
         ("merges", "frequency", "run_id"), ("merges", "extra", "run_id"), ("vocab", "piece", "run_id"),
         ("vocab", "kind", "run_id"), ("vocab", "id", "run_id"), ("run_steps", "value", "run_id"),
         ("pruning_checkpoints", "pieces", "run_id"), ("pruning_checkpoints", "scores", "run_id"),
         ("run_corpora", "corpus_id", "run_id")]
SAMPLE = "The quick brown fox, 数字 123! words"


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _mutate(conn: sqlite3.Connection, rng: random.Random) -> str:
    """Change one stored value; returns what was done (for the failure message)."""
    run = rng.randint(1, 3)
    roll = rng.random()
    if roll < 0.3:  # a JSON shape in settings: one key made hostile, or the whole object replaced
        (raw,) = conn.execute("SELECT settings FROM runs WHERE id = ?", (run,)).fetchone()
        settings = json.loads(raw)
        if rng.random() < 0.7:
            key = rng.choice(SETTING_KEYS)
            settings[key] = rng.choice(JSON_VALUES)
            text = json.dumps(settings)
            what = f"run {run} settings.{key} = {str(settings[key])[:30]}"
        else:
            text = rng.choice([_deep(100_000), _deep(990), "[]", "5", '"text"', "{", "NaN"])
            what = f"run {run} settings = {text[:20]}"
        conn.execute("UPDATE runs SET settings = ? WHERE id = ?", (text, run))
        return what
    table, column, owner = rng.choice(CELLS)
    value = rng.choice(VALUES)
    if column in ("pieces", "scores", "extra", "timings") and rng.random() < 0.3:
        value = rng.choice([_deep(50_000), "[1]", '["a"]', "{}", "[]"])
    if table == "runs":
        conn.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, run))
        return f"run {run} runs.{column} = {value!r:.40}"
    key = {"merges": "rank", "vocab": "id", "run_corpora": "corpus_id", "run_steps": "step",
           "pruning_checkpoints": "step"}[table]  # WITHOUT ROWID tables: a row is picked by its key
    keys = [r[0] for r in conn.execute(f"SELECT {key} FROM {table} WHERE {owner} = ?", (run,))]
    if not keys:
        return f"nothing in {table} for run {run}"
    try:
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE {owner} = ? AND {key} = ?",
                     (value, run, rng.choice(keys)))
    except sqlite3.IntegrityError:
        return f"{table}.{column} refused {value!r:.30}"
    return f"run {run} {table}.{column} = {value!r:.40}"


def _check(args: list[str], case: str, failures: list[str]) -> tuple[int, str]:
    try:
        code, out, err = run_inproc(args, timeout_s=15)
    except Exception as exc:  # noqa: BLE001 - a traceback is exactly what this test reports
        failures.append(f"{case}: {args[0]} raised {type(exc).__name__}: {exc}"[:300])
        return 1, ""
    except Hang:
        failures.append(f"{case}: {args[0]} did not finish in 15 s")
        return 1, ""
    lines = [line for line in err.splitlines() if line.strip() and "note:" not in line]
    if code not in (0, 2) or "Traceback" in err or (code == 2 and len(lines) != 1):
        failures.append(f"{case}: {args[0]} exited {code} with {len(lines)} stderr lines: {err[-300:]}")
    return code, out


@pytest.mark.parametrize("batch", range(2))
def test_crafted_columns_list_encode_and_export_in_one_line(three_runs, tmp_path, batch):
    failures: list[str] = []
    refused = usable = 0
    for n in range(batch, CASES, 2):
        rng = random.Random(f"columns-{n}")
        case = f"columns#{n}"
        folder = tmp_path / f"case{n}"
        folder.mkdir()
        out_dir = tmp_path / f"out{n}"
        out_dir.mkdir()
        project = folder / "p.tokproj"
        shutil.copy(three_runs, project)
        with contextlib.closing(sqlite3.connect(project)) as conn:
            done = [_mutate(conn, rng) for _ in range(rng.randint(1, 3))]
            conn.commit()
        case += f" ({'; '.join(done)})"
        listing = sorted(p.name for p in folder.iterdir())

        code, out = _check(["runs", str(project), "--json"], case, failures)
        if code != 0:
            failures.append(f"{case}: runs exited {code}: one damaged run must not hide the others")
        elif sorted(r["id"] for r in json.loads(out)) != [1, 2, 3]:
            failures.append(f"{case}: runs listed {[r['id'] for r in json.loads(out)]}")
        touched = {int(d.split()[1]) for d in done if d.startswith("run ")}
        for rid in (1, 2, 3):
            code, _out = _check(["encode", "--tokenizer", f"{project}#{rid}", "--text", SAMPLE], case, failures)
            if code == 2:
                refused += 1
            else:
                usable += 1
            if code != 0 and rid not in touched:
                failures.append(f"{case}: run {rid} was not changed but does not encode")
        rid = rng.randint(1, 3)
        fmt = {1: "hf", 2: "wordpiece", 3: "spm-vocab"}[rid]
        _check(["export", str(project), "--run", str(rid), "--format", fmt, "--out", str(out_dir / "out")],
               case, failures)
        if sorted(p.name for p in folder.iterdir()) != listing:
            failures.append(f"{case}: the project's folder changed: {sorted(p.name for p in folder.iterdir())}")
        shutil.rmtree(folder)
        shutil.rmtree(out_dir)
    assert not failures, f"{len(failures)} broken cases:\n" + "\n".join(failures[:8])
    assert refused and usable  # the mutations must sometimes matter and sometimes not
