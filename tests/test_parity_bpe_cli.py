"""``workbench train --model parity-bpe`` end to end: files labelled by language from their names,
a parallel development set per language (a set that is not line-aligned is refused), the languages
needing about as many tokens for the same content at the end, and
the export loaded by ``tokenizers`` giving ``workbench encode``'s ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from parallel_text import write_parallel
from shared_corpora import CORPORA, require_corpora

tokenizers = pytest.importorskip("tokenizers")


def _wb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=600)


def test_train_a_parity_aware_run_and_export_it(tmp_path):
    require_corpora()
    held: list[str] = []
    write_parallel(tmp_path, ("en", "ru", "zh"))
    for lang, name in (("en", "en_shakespeare.txt"), ("ru", "ru_fortunes.txt"), ("zh", "zh_fortunes.txt")):
        lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
        (tmp_path / f"{lang}_train.txt").write_text("\n".join(lines[:1200]) + "\n", encoding="utf-8")
        held += [line for line in lines[3000:3100] if line.strip()][:30]
    done = _wb("train", "en_train.txt", "ru_train.txt", "zh_train.txt", "--model", "parity-bpe",
               "--parity-dev", "en_dev.txt,ru_dev.txt,zh_dev.txt", "--parity-global-merges", "100",
               "--vocab-size", "900", "--project", "p.tokproj", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = json.loads(_wb("runs", "p.tokproj", "--json", cwd=tmp_path).stdout)
    settings = runs[-1]["settings"] if isinstance(runs, list) else runs["runs"][-1]["settings"]
    assert settings["model"] == "parity-bpe" and settings["parity_languages"] == ["en", "ru", "zh"]
    tokens = settings["parity_dev_tokens"]  # the same content (UDHR articles 1-5) in each language
    assert max(tokens.values()) / min(tokens.values()) < 1.05  # parity: each takes about as many tokens
    assert set(settings["parity_chars_per_token"]) == {"en", "ru", "zh"}
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


def test_a_development_set_that_is_not_parallel_is_refused_with_its_line_counts(tmp_path):
    """Parity compares the tokens each language needs for the same content: files with different numbers
    of lines cannot be translations of each other, line by line."""
    (tmp_path / "en_train.txt").write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    (tmp_path / "de_train.txt").write_text("die Katze sass auf der Matte\n" * 20, encoding="utf-8")
    (tmp_path / "en_dev.txt").write_text("the cat\nthe mat\n\n", encoding="utf-8")
    (tmp_path / "de_dev.txt").write_text("die Katze\n", encoding="utf-8")
    done = _wb("train", "en_train.txt", "de_train.txt", "--model", "parity-bpe", "--parity-dev",
               "en_dev.txt,de_dev.txt", "--vocab-size", "300", "--project", "p.tokproj", cwd=tmp_path)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "parallel" in last and "de 1, en 2" in last, last
