"""``workbench train --model pickybpe`` end to end: the flag its descriptor makes, the run's record
of its removals, a bad threshold refused in one line, and the export loaded by ``tokenizers``
giving ``workbench encode``'s ids (every format per family: tests/test_exports_per_family.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_corpora import CORPORA, require_corpora

tokenizers = pytest.importorskip("tokenizers")


def _wb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=600)


def test_train_export_and_encode_a_pickybpe_run(tmp_path):
    require_corpora()
    lines = (CORPORA / "ru_fortunes.txt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "ru.txt").write_text("\n".join(lines[:3000:2]) + "\n", encoding="utf-8")
    held = [line for line in lines[1:3000:2] if line.strip()][:80]
    done = _wb("train", "ru.txt", "--model", "pickybpe", "--picky-threshold", "0.7", "--vocab-size", "900",
               "--project", "p.tokproj", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = json.loads(_wb("runs", "p.tokproj", "--json", cwd=tmp_path).stdout)
    settings = runs[-1]["settings"] if isinstance(runs, list) else runs["runs"][-1]["settings"]
    assert settings["model"] == "pickybpe" and settings["picky_threshold"] == 0.7
    assert settings["picky_removals"] > 0 and settings["vocab_in_use"] == 900
    done = _wb("export", "p.tokproj", "--format", "hf", "--out", "t.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    (tmp_path / "held.txt").write_text("\n".join(held) + "\n", encoding="utf-8")
    ours = _wb("encode", "--tokenizer", "p.tokproj", "--file", "held.txt", "--jsonl", cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    ids = [json.loads(line)["ids"] for line in ours.stdout.splitlines()]
    assert ids == [hf.encode(line).ids for line in held]


def test_a_threshold_out_of_bounds_is_refused_in_one_line(tmp_path):
    (tmp_path / "a.txt").write_text("abc abd\n", encoding="utf-8")
    done = _wb("train", "a.txt", "--model", "pickybpe", "--picky-threshold", "1.5", "--vocab-size", "300",
               "--project", "p.tokproj", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--picky-threshold" in done.stderr
    assert not (tmp_path / "p.tokproj").exists()
