"""The inspector shows a Unigram (SentencePiece) tokenizer's own tokens: its lattice spans whole
lines, so the layout must not encode pre-token by pre-token (that gave one token per character)."""

from __future__ import annotations

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.core.encoder import Encoder
from workbench.core.offsets import SpanEncoder
from workbench.core.unigram import UnigramConfig, count_spm_words, train
from workbench.tasks.inspection import Inspector

TEXTS = ["Taylor Swift sings unbelievable songs", "Hello world!\nsecond line here\n\nfourth  line",
         "  leading spaces, digits 12345 and émoji 👋", ""]


@pytest.fixture(scope="module")
def unigram():
    require_corpora()
    lines = CORPUS_FILES[1].read_text(encoding="utf-8").splitlines()[:3000]
    return train(count_spm_words(lines), UnigramConfig(vocab_size=600))


@pytest.mark.parametrize("text", TEXTS)
def test_inspector_ids_equal_the_encoder_for_unigram(unigram, text):
    layout = Inspector(SpanEncoder(unigram)).inspect(text)
    ids = [i for i in layout.ids()]
    assert ids == Encoder(unigram).encode(text)
    if text.strip():
        assert len(ids) < len(text.replace(" ", ""))  # pieces, not characters


def test_hover_information_gives_a_unigram_piece_its_probability(unigram):
    import math

    from workbench.core.display import token_info

    ids = Encoder(unigram).encode("Taylor Swift sings")
    info = token_info(unigram, ids[0])
    assert info.score == unigram.scores[ids[0]] and info.score < 0 and info.rank is None
    assert 0 < math.exp(info.score) < 1
    assert token_info(unigram, 0).score is None  # <unk> is a special: no probability shown
