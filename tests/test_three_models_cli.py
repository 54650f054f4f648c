"""The three families through the real CLI, end to end: train BPE, WordPiece and Unigram into one
project, encode with each, export each in its native format, and load the files in the real
library they are for — the ids must equal ``workbench encode``'s. Also: a SentencePiece ``.model``
imports and encodes as ``sentencepiece`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

tokenizers = pytest.importorskip("tokenizers")
spm = pytest.importorskip("sentencepiece")

TEXTS = ["Taylor Swift sings unbelievable songs — wörld 12345!", "Привет, мир. 世界你好 👋 e\u0301",
         "  two  spaces and\ttabs", "The quick brown fox"]


def _wb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=300)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    require_corpora()
    folder = tmp_path_factory.mktemp("three")
    corpus = folder / "corpus.txt"
    lines = []
    for path in CORPUS_FILES:
        lines += path.read_text(encoding="utf-8").splitlines(keepends=True)[:400]
    corpus.write_text("".join(lines), encoding="utf-8")
    proj = folder / "three.tokproj"
    runs = {}
    for model, size in (("bpe", "1200"), ("wordpiece", "1500"), ("unigram", "1500")):
        done = _wb("train", str(corpus), "--project", str(proj), "--model", model, "--vocab-size", size,
                   "--progress", "none", "--json", cwd=folder)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["status"] == "finished" and result["vocab_size"] == int(size)
        runs[model] = result["run_id"]
    return proj, runs


def _ids(proj: Path, run: int, text: str) -> list[int]:
    done = _wb("encode", "--tokenizer", f"{proj}#{run}", "--text", text, "--json", cwd=proj.parent)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["ids"]


@pytest.mark.parametrize("model, fmt", [("bpe", "hf"), ("wordpiece", "hf"), ("wordpiece", "wordpiece"),
                                        ("unigram", "hf"), ("unigram", "spm")])
def test_each_model_exports_files_its_library_encodes_identically(project, model, fmt):
    proj, runs = project
    suffix = {"hf": ".json", "wordpiece": ".txt", "spm": ".model"}[fmt]
    out = proj.parent / f"{model}-{fmt}{suffix}"
    done = _wb("export", str(proj), "--run", str(runs[model]), "--format", fmt, "--out", str(out), "--force",
               cwd=proj.parent)
    assert done.returncode == 0, done.stderr
    if fmt == "wordpiece":  # the default WordPiece lowercases, as BERT loaders read vocab.txt by default
        bert = tokenizers.BertWordPieceTokenizer(str(out))
        encode = lambda t: bert.encode(t, add_special_tokens=False).ids  # noqa: E731
    elif fmt == "hf":
        lib = tokenizers.Tokenizer.from_file(str(out))
        encode = lambda t: lib.encode(t, add_special_tokens=False).ids  # noqa: E731
    else:
        processor = spm.SentencePieceProcessor(model_file=str(out))
        encode = processor.encode
    for text in TEXTS:
        assert _ids(proj, runs[model], text) == encode(text), (model, fmt, text)


def test_the_runs_list_names_each_family_and_unigram_keeps_its_scores(project):
    proj, runs = project
    done = _wb("runs", str(proj), "--json", cwd=proj.parent)
    listed = {r["id"]: r for r in json.loads(done.stdout)}
    assert {listed[runs[m]]["settings"]["model"] for m in runs} == {"bpe", "wordpiece", "unigram"}
    unigram = listed[runs["unigram"]]["settings"]
    assert len(unigram["scores"]) == 1500 and all(s <= 0 for s in unigram["scores"])
    assert listed[runs["unigram"]]["merges"] == 0 and listed[runs["wordpiece"]]["merges"] > 0


def test_a_sentencepiece_model_imports_and_encodes_as_sentencepiece(tmp_path):
    require_corpora()
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(CORPUS_FILES[0].read_text(encoding="utf-8").splitlines(keepends=True)[:2000]),
                      encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "m"), vocab_size=800,
                                   num_threads=1, minloglevel=2)
    model = tmp_path / "m.model"
    proj = tmp_path / "p.tokproj"
    done = _wb("import", str(model), "--project", str(proj), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    processor = spm.SentencePieceProcessor(model_file=str(model))
    for text in TEXTS:
        for src in (str(model), f"{proj}#ref:1"):
            got = _wb("encode", "--tokenizer", src, "--text", text, "--json", cwd=tmp_path)
            assert got.returncode == 0, got.stderr
            assert json.loads(got.stdout)["ids"] == processor.encode(text), (src, text)


def test_vocab_size_below_the_alphabet_says_why_nothing_merges(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(chr(0x4E00 + i) for i in range(300)) + "\nab ab ab\n", encoding="utf-8")
    done = _wb("train", str(corpus), "--project", str(tmp_path / "p.tokproj"), "--model", "wordpiece",
               "--vocab-size", "100", "--progress", "none", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["vocab_size"] > 100  # every symbol is kept, as in tokenizers
    assert "not fewer than the vocabulary size 100: no merge will be made" in done.stderr


def test_unigram_vocab_size_below_the_required_characters_is_refused_not_pruned_forever(tmp_path: Path) -> None:
    """Pruning keeps every required character: a target below them used to prune forever."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(chr(0x4E00 + i) for i in range(400)) + "\n", encoding="utf-8")
    project = tmp_path / "p.tokproj"
    done = _wb("train", str(corpus), "--project", str(project), "--model", "unigram", "--vocab-size", "300",
               "--byte-fallback", "--progress", "none", cwd=tmp_path)
    assert done.returncode == 2
    assert "--vocab-size: 300 is below what the corpus needs: 401 characters" in done.stderr  # and ▁
    assert "= 660;" in done.stderr and not project.exists()


@pytest.mark.parametrize("model, flags, flag", [("unigram", ["--tie-break", "first-seen"], "--tie-break"),
                                                ("wordpiece", ["--units", "bytes"], "--units"),
                                                ("unigram", ["--end-of-word", "</w>"], "--end-of-word"),
                                                ("unigram", ["--min-frequency", "3"], "--min-frequency")])
def test_a_setting_that_does_not_apply_to_the_model_is_refused(model, flags, flag, tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n", encoding="utf-8")
    done = _wb("train", str(corpus), "--project", str(tmp_path / "p.tokproj"), "--model", model,
               "--vocab-size", "300", *flags, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"error: {flag}:" in done.stderr and not (tmp_path / "p.tokproj").exists()
