"""``workbench train --model parity-bpe`` end to end: files labelled by language from their names,
a parallel development set per language, the languages' compression ending close together, and
the export loaded by ``tokenizers`` giving ``workbench encode``'s ids."""

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


def test_train_a_parity_aware_run_and_export_it(tmp_path):
    require_corpora()
    held: list[str] = []
    for lang, name in (("en", "en_shakespeare.txt"), ("ru", "ru_fortunes.txt"), ("zh", "zh_fortunes.txt")):
        lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
        (tmp_path / f"{lang}_train.txt").write_text("\n".join(lines[:1200]) + "\n", encoding="utf-8")
        (tmp_path / f"{lang}_dev.txt").write_text("\n".join(lines[2000:2100]) + "\n", encoding="utf-8")
        held += [line for line in lines[3000:3100] if line.strip()][:30]
    done = _wb("train", "en_train.txt", "ru_train.txt", "zh_train.txt", "--model", "parity-bpe",
               "--parity-dev", "en_dev.txt,ru_dev.txt,zh_dev.txt", "--parity-global-merges", "100",
               "--vocab-size", "900", "--project", "p.tokproj", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = json.loads(_wb("runs", "p.tokproj", "--json", cwd=tmp_path).stdout)
    settings = runs[-1]["settings"] if isinstance(runs, list) else runs["runs"][-1]["settings"]
    assert settings["model"] == "parity-bpe" and settings["parity_languages"] == ["en", "ru", "zh"]
    cpt = settings["parity_chars_per_token"]
    assert max(cpt.values()) / min(cpt.values()) < 1.05  # parity: every language compressed alike
    done = _wb("export", "p.tokproj", "--format", "hf", "--out", "t.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    (tmp_path / "held.txt").write_text("\n".join(held) + "\n", encoding="utf-8")
    ours = _wb("encode", "--tokenizer", "p.tokproj", "--file", "held.txt", "--jsonl", cwd=tmp_path)
    assert [json.loads(line)["ids"] for line in ours.stdout.splitlines()] == [hf.encode(x).ids for x in held]


def test_a_file_without_a_language_in_its_name_is_refused_by_name(tmp_path):
    (tmp_path / "notes.txt").write_text("abc abd\n", encoding="utf-8")
    (tmp_path / "en_dev.txt").write_text("abc\n", encoding="utf-8")
    done = _wb("train", "notes.txt", "--model", "parity-bpe", "--parity-dev", "en_dev.txt", "--vocab-size", "300",
               "--project", "p.tokproj", cwd=tmp_path)
    last = done.stderr.strip().splitlines()[-1]  # after the progress lines of the reading it needed
    assert done.returncode == 2 and "Traceback" not in done.stderr and "notes.txt" in last and "language" in last
