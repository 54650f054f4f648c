"""Bad input through every command: one clear line, non-zero exit, no traceback, nothing changed.

Runs the real entry point in a child process, the way a user or a script does.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest


def workbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    (root / "good.txt").write_text("hello world, hello tokens\n" * 20, encoding="utf-8")
    (root / "bin.txt").write_bytes(b"\x00\x01\x02binary\x00" * 10)
    (root / "empty.txt").write_bytes(b"")
    (root / "latin.txt").write_bytes(b"caf\xe9 ok\nline two\n")
    (root / "folder").mkdir()
    spec = {"version": 1, "files": [{"path": "good.txt", "kind": "text"}], "merges": 5, "project": "p.tokproj"}
    (root / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    (root / "unknown_key.json").write_text(json.dumps({**spec, "vocab": 5}), encoding="utf-8")
    (root / "bad_size.json").write_text(json.dumps({**spec, "vocab_size": 7}), encoding="utf-8")
    done = workbench("train", "good.txt", "--project", "p.tokproj", "--merges", "10", "--progress", "none", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


BAD_CALLS = [
    (["train", "missing.txt", "--project", "p.tokproj", "--merges", "5"], "missing.txt"),
    (["train", "folder", "--project", "p.tokproj", "--merges", "5"], "folder"),
    (["train", "bin.txt", "--project", "p.tokproj", "--merges", "5"], "binary"),
    (["train", "empty.txt", "--project", "p.tokproj", "--merges", "5"], "empty"),
    (["train", "latin.txt", "--project", "p.tokproj", "--merges", "5"], "latin.txt:1"),
    (["train", "good.txt", "--project", "p.tokproj", "--vocab-size", "10"], "at least 256"),
    (["train", "good.txt", "--project", "p.tokproj"], "--vocab-size N or --merges N"),
    (["train", "good.txt", "--project", "good.txt", "--merges", "3"], "not a Tokenizer Workbench project"),
    (["train", "good.txt", "--project", "p.tokproj", "--merges", "3", "--pretokenizer", "([a"], "regular expression"),
    (["encode", "--tokenizer", "p.tokproj", "--file", "folder"], "folder"),
    (["encode", "--tokenizer", "good.txt", "--text", "hi"], "cannot tell the format"),
    (["encode", "--tokenizer", "p.tokproj#x", "--text", "hi"], "run id is a number"),
    (["decode", "--tokenizer", "p.tokproj", "--ids", "1,99999"], "id 99999"),
    (["decode", "--tokenizer", "p.tokproj", "--ids", "1,two"], "'two'"),
    (["decode", "--tokenizer", "p.tokproj", "--ids", "[1, 2"], "JSON"),
    (["export", "p.tokproj", "--format", "hf", "--out", "good.txt"], "already exists: choose another output path "
                                                                      "or pass --force to replace it"),
    (["sweep", "p.tokproj", "good.txt", "--points", "1"], "--points 1: a sweep needs at least 2 points"),
    (["export", "p.tokproj", "--format", "hf", "--out", "/proc/no/such/t.json"], "/proc/no"),
    (["export", "p.tokproj", "--run", "99", "--format", "hf", "--out", "x.json"], "99"),
    (["runs", "bin.txt"], "not a Tokenizer Workbench project"),
    (["runs", "missing.tokproj"], "missing.tokproj"),
    (["import", "missing.tiktoken", "--project", "p.tokproj"], "missing.tiktoken"),
    (["stats", "bin.txt"], "binary"),
    (["train", "good.txt", "--project", "p.tokproj", "--merges", "3", "--field", "text"], "--field: "),
    (["train", "good.txt", "--project", "p.tokproj", "--merges", "3", "--special", ""], "--special: "),
    # A setting refused by the run spec (or by the trainer, once the corpus is counted) names its flag.
    (["train", "good.txt", "--project", "p.tokproj", "--vocab-size", "10"], "--vocab-size: the vocabulary size 10"),
    (["train", "good.txt", "--project", "p.tokproj", "--units", "chars", "--vocab-size", "5"], "--vocab-size: "),
    (["train", "good.txt", "--project", "p.tokproj", "--merges", "3", "--end-of-word", "</w>"], "--end-of-word: "),
    (["train", "good.txt", "--project", "p.tokproj", "--merges", "3", "--normalize", "nfz"], "--normalize: "),
    (["train", "good.txt", "--project", "p.tokproj", "--merges", "3", "--byte-fallback"], "--byte-fallback: "),
    (["train", "good.txt", "--project", "p.tokproj", "--merges", "3", "--encoding", "klingon"], "klingon"),
    (["train", "good.txt", "--merges", "3"], "--project: "),
    (["train", "--project", "p.tokproj", "--merges", "3"], "--spec"),
    (["train", "--spec", "missing.json"], "missing.json"),
    (["train", "--spec", "good.txt"], "good.txt is not valid JSON"),
    (["train", "good.txt", "--spec", "spec.json"], "remove FILES"),
    (["train", "--spec", "spec.json", "--merges", "4"], "remove --merges"),
    (["train", "--spec", "unknown_key.json"], "unknown key 'vocab'"),
    (["train", "--spec", "bad_size.json"], "bad_size.json: vocab_size: the vocabulary size 7"),
]


@pytest.mark.parametrize("argv, mention", BAD_CALLS, ids=[" ".join(a[:2]) + f" #{i}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_input_is_one_clear_line(workspace, argv, mention):
    before = digest(workspace)
    result = workbench(*argv, cwd=workspace)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith(f"workbench {argv[0]}: error:"), result.stderr
    assert len([line for line in lines if "error:" in line]) == 1
    assert mention in lines[-1]
    assert digest(workspace) == before, "a failed command must not change the user's files"


def test_encode_json_contract_and_decode_round_trip(workspace):
    result = workbench("encode", "--tokenizer", "p.tokproj", "--text", "hello wörld 👋", "--json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) == {"ids", "tokens", "count"} and out["count"] == len(out["ids"]) == len(out["tokens"])
    ids = ",".join(map(str, out["ids"]))
    back = workbench("decode", "--tokenizer", "p.tokproj", "--ids", ids, cwd=workspace)
    assert back.stdout == "hello wörld 👋\n"


def test_runs_lists_the_run_as_json(workspace):
    result = workbench("runs", "p.tokproj", "--json", cwd=workspace)
    runs = json.loads(result.stdout)
    assert [r["status"] for r in runs] == ["finished"] and runs[0]["merges"] == 10
