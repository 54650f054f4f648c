"""A Unigram's ``.vocab`` (spm-vocab): the pieces and float32 scores ``sentencepiece`` lists for the
``.model`` of the same tokenizer, line n = id n - 1 (with and without byte fallback), and it reads
back as a Unigram that gives the same ids on held-out lines of the shared corpora."""

from __future__ import annotations

import struct

import pytest
from fmt_helpers import CORPORA, HARD_TEXTS

from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.unigram import UnigramConfig, UnigramTrainer, count_spm_words
from workbench.formats import detect_format, load_tokenizer_file
from workbench.formats.export import export_tokenizer
from workbench.formats.spm_model import render_spm_model
from workbench.formats.vocab_lists import SPM_VOCAB_NORMALIZER

spm = pytest.importorskip("sentencepiece")
pytestmark = pytest.mark.skipif(not CORPORA.exists(), reason="shared corpora missing")


def _lines() -> tuple[list[str], list[str]]:
    train: list[str] = []
    held: list[str] = []
    for path in sorted(CORPORA.glob("*.txt")):
        for i, line in enumerate(path.read_text(encoding="utf-8").split("\n")[:800]):
            if line:
                (held if i % 10 == 0 else train).append(line)
    return train, held


@pytest.fixture(scope="module", params=[False, True], ids=["unk", "byte-fallback"])
def case(request) -> tuple[Tokenizer, list[str]]:
    train, held = _lines()
    # with the clean-up a .vocab is read back with (SPM_VOCAB_NORMALIZER, the Unigram default)
    trainer = UnigramTrainer(count_spm_words(train), UnigramConfig(
        vocab_size=1000 if not request.param else 1300, byte_fallback=request.param, normalizer=SPM_VOCAB_NORMALIZER))
    for _event in trainer.run():
        pass
    return trainer.tokenizer(name="ours"), held + HARD_TEXTS


def test_vocab_lists_what_sentencepiece_lists_for_the_model(case, tmp_path):
    tokenizer, _held = case
    result = export_tokenizer(tokenizer, "spm-vocab", tmp_path / "ours.vocab")
    assert any(check.startswith("sentencepiece") for check in result.checks)
    processor = spm.SentencePieceProcessor(model_proto=render_spm_model(tokenizer)[0])
    rows = [line.rsplit("\t", 1) for line in (tmp_path / "ours.vocab").read_text("utf-8").split("\n")[:-1]]
    assert len(rows) == processor.get_piece_size() == len(tokenizer.vocab)
    for token_id, (piece, score) in enumerate(rows):
        assert piece == processor.id_to_piece(token_id)
        assert struct.pack("<f", float(score)) == struct.pack("<f", processor.get_score(token_id))
    if tokenizer.byte_fallback:
        assert "<0x00>" in (row[0] for row in rows)


def test_vocab_reads_back_as_the_same_unigram(case, tmp_path):
    tokenizer, held = case
    export_tokenizer(tokenizer, "spm-vocab", tmp_path / "ours.vocab")
    assert detect_format(tmp_path / "ours.vocab") == "spm-vocab"
    back = load_tokenizer_file(tmp_path / "ours.vocab")
    assert back.model == "unigram" and back.byte_fallback == tokenizer.byte_fallback
    assert back.unk_token == "<unk>" and back.pretokenizer == "metaspace"
    ours, theirs = Encoder(tokenizer), Encoder(back)
    assert len(held) >= 50
    assert [theirs.encode(text) for text in held] == [ours.encode(text) for text in held]


def test_a_unigram_cleaned_otherwise_is_not_offered_a_vocab(case, tmp_path):
    """The file cannot say its normalizer: a run without the clean-up would read back as another tokenizer."""
    from dataclasses import replace

    from workbench.errors import WorkbenchError

    raw = replace(case[0], normalizer=())
    with pytest.raises(WorkbenchError, match="cannot say its normalizer"):
        export_tokenizer(raw, "spm-vocab", tmp_path / "raw.vocab")
    assert not (tmp_path / "raw.vocab").exists()
