"""Unigram on text with control characters and messy spaces: SentencePiece's own clean-up by default,
and every default run exports to a ``.model`` sentencepiece loads and a ``tokenizer.json``
tokenizers loads, both giving our ids.

Through the real entry point (``workbench train`` / ``workbench export`` child processes) on a
valid UTF-8 file made of shared-corpora lines with NUL, ESC sequences, C1 controls (NEL, U+008F),
tabs, zero-width characters and trailing / doubled spaces; sentencepiece and tokenizers are the
oracles. The ``nmt`` normalizer and its compiled character map are checked against sentencepiece
character by character.
"""

from __future__ import annotations

import io
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.core.encoder import Encoder
from workbench.core.normalize import NMT_REMOVED, NMT_SPACES, make_normalizer
from workbench.formats.spm_model import NMT_CHARSMAP
from workbench.store import ProjectStore

spm = pytest.importorskip("sentencepiece")
ROOT = Path(__file__).resolve().parents[1]
DIRT = ["\x00", "\x1b[33m", "\x1b[0m", "\x85", "\x8f", "\t", "\u200b", "\ufeff", "\x07"]


def _dirty(line: str, rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        at = rng.randrange(len(line) + 1)
        return line[:at] + rng.choice(DIRT) + line[at:]
    if roll < 0.5:
        return line + " " * rng.randint(1, 3)
    if roll < 0.6:
        return "  " + line.replace(" ", "  ")
    return line


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[str]]:
    require_corpora()
    rng = random.Random(7)
    train: list[str] = []
    held: list[str] = []
    for path in CORPUS_FILES:
        lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line]
        train += [_dirty(line, rng) for line in lines[:700]]
        held += [_dirty(line, rng) for line in lines[3000:3060]]
    out = tmp_path_factory.mktemp("controls") / "dirty.txt"
    out.write_text("\n".join(train) + "\n", encoding="utf-8")
    return out, held + ["\x00\x00 nul run", "a\x1b[1mb\x1b[0m c", "\x85 nel \x8f", "   ", "tab\tsep\r\n"]


def workbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=600, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert result.returncode == 0, result.stderr
    return result


def _train(corpus: Path, project: Path, *flags: str):
    workbench("train", str(corpus), "--encoding", "utf-8", "--project", str(project), "--model", "unigram",
              "--vocab-size", "1500", "--progress", "none", *flags, cwd=project.parent)
    with ProjectStore.open(project, readonly=True) as store:
        run = store.runs()[-1]
        return run, store.load_tokenizer(run.id)


@pytest.fixture(scope="module")
def default_run(corpus, tmp_path_factory):
    project = tmp_path_factory.mktemp("default") / "p.tokproj"
    run, tok = _train(corpus[0], project)
    return project, run, tok


def test_default_run_cleans_as_sentencepiece_and_exports_to_both_libraries(default_run, corpus, tmp_path):
    project, run, tok = default_run
    assert run.settings["normalizer"] == ["nmt", "spm-whitespace"]
    assert tok.normalizer == ("nmt", "spm-whitespace")
    pieces = [p.decode("utf-8") for i, p in enumerate(tok.vocab) if i not in tok.special_ids]
    assert not [p for p in pieces if any(unicodedata.category(c) == "Cc" and c != "\x85" for c in p)]
    assert not [p for p in pieces if p != p.strip("\u2581") and "\u2581\u2581" in p]  # no run of spaces
    held = corpus[1]
    ours = [Encoder(tok).encode(text) for text in held]
    workbench("export", str(project), "--format", "spm", "--out", str(tmp_path / "u.model"), cwd=tmp_path)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "u.model"))
    assert [sp.encode(text) for text in held] == ours
    tokenizers = pytest.importorskip("tokenizers")
    workbench("export", str(project), "--format", "hf", "--out", str(tmp_path / "tokenizer.json"), cwd=tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert [hf.encode(text, add_special_tokens=False).ids for text in held] == ours


def test_without_normalizer_nul_is_never_a_piece_and_the_model_loads(corpus, tmp_path):
    run, tok = _train(corpus[0], tmp_path / "raw.tokproj", "--normalize", "none")
    assert run.settings["normalizer"] == [] and tok.normalizer == ()
    assert not [p for p in tok.vocab if b"\x00" in p]
    assert any(b"\x1b" in p for p in tok.vocab)  # other controls are ordinary characters here
    workbench("export", str(tmp_path / "raw.tokproj"), "--format", "spm", "--out", str(tmp_path / "raw.model"),
              cwd=tmp_path)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "raw.model"))
    held = corpus[1]
    assert [sp.encode(text) for text in held] == [Encoder(tok).encode(text) for text in held]


def test_nmt_is_sentencepieces_nmt_rules_character_by_character():
    """On every BMP character that NFKC leaves alone (between two letters), our ``nmt`` does what sentencepiece's default
    ``nmt_nfkc`` rule does (the rest of that rule is NFKC, a separate normalizer here)."""
    normalizer = spm.SentencePieceNormalizer(rule_name="nmt_nfkc")
    nmt = make_normalizer(("nmt",))
    differ = []
    for code in range(1, 0x10000):
        ch = chr(code)
        text = "a" + ch + "b"
        if 0xD800 <= code < 0xE000 or unicodedata.normalize("NFKC", text) != text:
            continue
        theirs = normalizer.normalize(text)
        mine = "\u2581" + nmt(text).replace(" ", "\u2581")
        cleaned = ("\u2581ab", "\u2581a\u2581b")  # removed, or read as a space
        if theirs != mine and (theirs in cleaned or mine in cleaned):  # not a Unicode-version NFKC nuance
            differ.append(hex(code))
    assert differ == []
    assert len(NMT_REMOVED) == 30 and len(NMT_SPACES) == 15


def test_the_nmt_character_map_is_what_sentencepiece_compiles(tmp_path):
    rules = tmp_path / "nmt.tsv"
    rules.write_text("".join(f"{c:X}\t\n" for c in NMT_REMOVED) + "".join(f"{c:X}\t20\n" for c in NMT_SPACES))
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["hello world " * 3, "abc def"]), model_writer=model,
                                   vocab_size=20, hard_vocab_limit=False, normalization_rule_tsv=str(rules),
                                   minloglevel=2)
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    assert proto.normalizer_spec.precompiled_charsmap == NMT_CHARSMAP
