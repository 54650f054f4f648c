"""Tie-break ``hf`` reproduces Hugging Face ``tokenizers``' BpeTrainer merge for merge (real library)."""

from __future__ import annotations

import pytest
from hf_oracle import hf_merges

from workbench.core.bpe import TrainConfig, train
from workbench.core.byte_level import byte_encoder
from workbench.core.count import chunks_for, count_pretokens
from workbench.core.pretokenize import PRESET_PATTERNS, onig_compatible

tokenizers = pytest.importorskip("tokenizers")




def our_merges(text, vocab_size, preset):
    counts = count_pretokens(chunks_for("gpt2", [text]), pretokenizer=preset)
    tok, _ = train(counts, TrainConfig(vocab_size=vocab_size, tie_break="hf", pretokenizer=preset))
    to_unicode = byte_encoder()
    return [["".join(to_unicode[c] for c in tok.vocab[a]), "".join(to_unicode[c] for c in tok.vocab[b])]
            for a, b, _ in tok.merges]


@pytest.mark.parametrize("name, size, vocab_size, preset", [
    ("en_shakespeare.txt", 1_200_000, 2000, "gpt2"),
    ("ru_fortunes.txt", 1_000_000, 1500, "gpt2"),
    ("de_zitate.txt", 600_000, 1200, "cl100k"),
])
def test_hf_tie_break_matches_bpe_trainer(corpora, name, size, vocab_size, preset):
    path = next(p for p in corpora if p.name == name)
    text = path.read_text(encoding="utf-8")[:size]
    cut = text.rfind("\n")
    text = text[: cut + 1]
    expected = hf_merges([text], vocab_size, onig_compatible(PRESET_PATTERNS[preset]))
    ours = our_merges(text, vocab_size, preset)
    assert len(ours) == len(expected) > 500
    first_difference = next((i for i, (a, b) in enumerate(zip(ours, expected)) if a != b), None)
    assert first_difference is None, (first_difference, ours[first_difference], expected[first_difference])
