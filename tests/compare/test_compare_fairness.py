"""Fairness on a hand-made parallel set, checked by hand.

With a byte-level tokenizer that has no merges, tokens are UTF-8 bytes, so every ratio can be
worked out on paper: "I love you" is 11 bytes with its line break, "Я тебя люблю" 23
(Cyrillic letters take 2 bytes), "我爱你" 10 (Han takes 3).
"""

from __future__ import annotations

import json

import pytest

from workbench.cli import run_cli
from workbench.core.model import Tokenizer, base_vocab
from workbench.corpus import open_source
from workbench.errors import WorkbenchError
from workbench.tasks.compare import compare_corpus

TEXTS = {"en": "I love you\n", "ru": "Я тебя люблю\n", "zh": "我爱你\n"}


@pytest.fixture
def parallel(tmp_path):
    paths = {}
    for lang, text in TEXTS.items():
        paths[lang] = tmp_path / f"{lang}.txt"
        paths[lang].write_text(text, encoding="utf-8")
    return paths


@pytest.fixture
def bytes_only() -> Tokenizer:
    return Tokenizer(vocab=tuple(base_vocab("bytes")), merges=(), pretokenizer="gpt2", name="bytes")


def test_premium_on_parallel_text(parallel, bytes_only):
    sources = [open_source(p) for p in parallel.values()]
    labels = {str(p): lang for lang, p in parallel.items()}
    result = compare_corpus([("bytes", bytes_only)], sources, labels=labels, baseline="EN", parallel=True)
    ratios = {f.language: f.ratio for f in result.fairness}
    assert result.baseline == "en"  # matched regardless of case
    assert ratios == {"en": 1.0, "ru": 23 / 11, "zh": 10 / 11}
    assert {f.basis for f in result.fairness} == {"parallel"}
    zh = next(m for m in result.per_language if m.language == "zh")
    assert (zh.text.words, zh.text.units, zh.fertility) == (1, 3, 10 / 3)  # tokens per Han character


def test_per_character_when_not_parallel(parallel, bytes_only):
    sources = [open_source(p) for p in parallel.values()]
    labels = {str(p): lang for lang, p in parallel.items()}
    result = compare_corpus([("bytes", bytes_only)], sources, labels=labels, baseline="en")
    ratios = {f.language: f.ratio for f in result.fairness}
    # tokens/char: en 11/11, ru 23/13, zh 10/4
    assert ratios == {"en": 1.0, "ru": pytest.approx(23 / 13), "zh": pytest.approx(2.5)}
    assert {f.basis for f in result.fairness} == {"per-char"}


def test_through_the_cli_with_scripts_as_languages(parallel, capsys):
    files = [str(p) for p in parallel.values()]
    assert run_cli(["stats", *files, "--baseline-language", "latin", "--parallel", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [f["language"] for f in doc["files"]] == ["Latin", "Cyrillic", "Han"]
    assert doc["fairness"]["rows"] == []  # no tokenizer, no rows
    assert run_cli(["stats", *files, "--baseline-language", "german"]) == 2
    assert "no file has that language (found: Latin, Cyrillic, Han)" in capsys.readouterr().err


def test_cli_premium_with_language_labels(parallel, bytes_only, tmp_path, capsys):
    from workbench.formats.export import export_tokenizer

    src = tmp_path / "bytes.json"
    export_tokenizer(bytes_only, "hf", src)
    files = [str(p) for p in parallel.values()]
    labels = [f"--language={p}={lang}" for lang, p in parallel.items()]
    assert run_cli(["stats", *files, "--tokenizer", str(src), *labels, "--baseline-language", "en",
                    "--parallel", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["language"]: r["ratio"] for r in doc["fairness"]["rows"]} == {
        "en": 1.0, "ru": round(23 / 11, 4), "zh": round(10 / 11, 4)}
    assert doc["fairness"]["basis"] == "parallel"
    assert [f["language_from"] for f in doc["files"]] == ["label"] * 3
    assert run_cli(["stats", *files, "--tokenizer", str(src), *labels, "--baseline-language", "en"]) == 0
    out = capsys.readouterr().out
    assert "relative to en (per character, not parallel text" in out
    assert "1.769" in out  # ru: (23/13) / (11/11)


def test_bad_labels_and_widths_are_one_line_errors(parallel, capsys):
    f = str(parallel["en"])
    assert run_cli(["stats", f, "--language", "en"]) == 2
    assert "write FILE=LANG" in capsys.readouterr().err
    assert run_cli(["stats", f, "--language", "other.txt=de"]) == 2
    assert "other.txt=de: that file is not among the files given" in capsys.readouterr().err
    assert run_cli(["stats", f, "--d", "0"]) == 2
    assert "--d 0: the embedding width must be a positive number" in capsys.readouterr().err
    with pytest.raises(WorkbenchError, match="no file has that language"):
        compare_corpus([], [open_source(f)], baseline="xx")
