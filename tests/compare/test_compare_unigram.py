"""Corpus metrics count a Unigram (SentencePiece) tokenizer's own tokens: its lattice spans a line,
so counting pre-token by pre-token gave one token per character (1.000 chars/token)."""

from __future__ import annotations

from shared_corpora import CORPUS_FILES, require_corpora

from workbench.core.corpus_metrics import TokenMeter
from workbench.core.encoder import Encoder
from workbench.core.unigram import UnigramConfig, count_spm_words, train


def test_unigram_tokens_equal_the_encoder_line_by_line():
    require_corpora()
    text = "".join(CORPUS_FILES[2].read_text(encoding="utf-8").splitlines(keepends=True)[:400])
    tok = train(count_spm_words(text.splitlines()), UnigramConfig(vocab_size=500))
    meter = TokenMeter(tok)
    half = len(text) // 2
    cut = text.index("\n", half) + 1
    meter.add(text[:cut])  # two chunks, each ending at a line boundary, as the readers give them
    meter.add(text[cut:])
    counts = meter.finish()
    lines = text.split("\n")[:-1]
    expected = [len(Encoder(tok).encode(line)) for line in lines]
    assert counts.tokens == sum(expected)
    assert counts.attention == sum(n * n for n in expected)
    assert counts.tokens < 0.6 * len(text)  # pieces, not characters
