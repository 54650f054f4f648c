"""decode(encode(s)) == s over arbitrary Unicode, in every mode; clear errors for bad ids."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.bpe import TrainConfig, train
from workbench.core.count import count_pretokens
from workbench.core.encoder import Encoder
from workbench.errors import WorkbenchError

TRAIN_TEXT = ("The quick brown fox — naïve café 中文字符 😀👍🏽 1234 \r\n\ttabs  spaces "
              "Привет мир! ∑∫ code(x) {y: [1, 2]}\n") * 8
LOSSLESS = ["gpt2", "cl100k", "o200k", "digits", "none", "metaspace"]
any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


def _byte_tokenizer(pretokenizer, tie_break="first-seen"):
    counts = count_pretokens([TRAIN_TEXT], pretokenizer=pretokenizer)
    tok, _ = train(counts, TrainConfig(vocab_size=400, pretokenizer=pretokenizer, tie_break=tie_break))
    return tok


BYTE_ENCODERS = {pre: Encoder(_byte_tokenizer(pre)) for pre in LOSSLESS}


@pytest.mark.parametrize("pre", LOSSLESS)
@settings(max_examples=150, deadline=None)
@given(text=any_text)
def test_byte_level_round_trip(pre, text):
    if pre == "metaspace":
        text = text.replace("\u2581", "")  # ▁ is the space marker itself (as in SentencePiece)
    encoder = BYTE_ENCODERS[pre]
    assert encoder.decode(encoder.encode(text)) == text


@settings(max_examples=150, deadline=None)
@given(text=any_text)
def test_greedy_byte_level_round_trip(text):
    encoder = Encoder(BYTE_ENCODERS["gpt2"].tok, greedy=True)
    assert encoder.decode(encoder.encode(text)) == text


@settings(max_examples=100, deadline=None)
@given(text=any_text, marker=st.sampled_from(["", "</w>"]), pre=st.sampled_from(["gpt2", "none", "metaspace"]))
def test_char_level_round_trip_on_its_own_alphabet(text, marker, pre):
    if pre == "metaspace":
        text = text.replace("\u2581", "")  # ▁ is the space marker itself (as in SentencePiece)
    counts = count_pretokens([text + " abc abc"], pretokenizer=pre)
    tok, _ = train(counts, TrainConfig(units="chars", merges=30, end_of_word=marker, pretokenizer=pre))
    encoder = Encoder(tok)
    assert encoder.decode(encoder.encode(text)) == text


def test_whitespace_preset_joins_words_with_one_space_at_the_marker():
    counts = count_pretokens(["low lower lowest newer"], pretokenizer="whitespace")
    tok, _ = train(counts, TrainConfig(units="chars", merges=5, end_of_word="</w>", pretokenizer="whitespace"))
    encoder = Encoder(tok)
    assert encoder.decode(encoder.encode("lower   low\nnewer")) == "lower low newer"


def test_unknown_and_malformed_ids_are_refused_clearly():
    encoder = BYTE_ENCODERS["gpt2"]
    with pytest.raises(WorkbenchError, match="id 400 is not in this tokenizer's vocabulary"):
        encoder.decode([1, 400])
    with pytest.raises(WorkbenchError, match="id -1"):
        encoder.decode([-1])


def test_unknown_character_in_char_level_vocabulary():
    tok, _ = train({"abc": 3}, TrainConfig(units="chars", merges=2))
    with pytest.raises(WorkbenchError, match="U\\+0078"):
        Encoder(tok).encode("x")


def test_max_merges_replays_the_split():
    tok = BYTE_ENCODERS["gpt2"].tok
    text = "The quick brown fox"
    at_zero = Encoder(tok, max_merges=0).encode(text)
    assert at_zero == list(text.encode("utf-8"))
    assert Encoder(tok, max_merges=len(tok.merges)).encode(text) == Encoder(tok).encode(text)
    lengths = [len(Encoder(tok, max_merges=n).encode(text)) for n in range(0, len(tok.merges), 20)]
    assert lengths == sorted(lengths, reverse=True)


def test_long_pieces_use_the_same_rule():
    # No pre-tokenizer: one long piece takes the heap path; it must equal the scan on short pieces.
    counts = count_pretokens(["abababcabc" * 30], pretokenizer="none")
    tok, _ = train(counts, TrainConfig(merges=12, pretokenizer="none"))
    long_text = "abababcabc" * 30
    ids = Encoder(tok).encode(long_text)
    assert Encoder(tok).decode(ids) == long_text
    from workbench.core import encoder as module

    assert module._bpe_heap(list(long_text.encode()), Encoder(tok)._pair_rank) == \
        module._bpe_scan(list(long_text.encode()), Encoder(tok)._pair_rank)


def test_a_byte_missing_from_an_imported_vocabulary_is_a_clear_error():
    from workbench.core.model import Tokenizer

    vocab = tuple(bytes([b]) for b in range(256) if b != 0xE2)  # no byte 0xE2 (as in "▁", "€")
    tok = Tokenizer(vocab=vocab, merges=(), pretokenizer="gpt2")
    encoder = Encoder(tok)
    assert encoder.decode(encoder.encode("plain ascii")) == "plain ascii"
    with pytest.raises(WorkbenchError, match="byte 0xE2"):
        encoder.encode("costs 5 €")


def test_empty_special_token_is_refused():
    with pytest.raises(WorkbenchError, match="special token cannot be empty"):
        train({"ab": 2}, TrainConfig(merges=1, special_tokens=("",)))


def test_unknown_characters_keep_the_offsets_of_what_follows():
    from workbench.core.model import Tokenizer

    tok = Tokenizer(vocab=(b"[UNK]", b"a", b"b", b"c"), merges=(), units="chars", pretokenizer="none",
                    special_tokens={"[UNK]": 0}, unk_token="[UNK]")
    tokens = Encoder(tok).encode_with_offsets("éabc")
    assert [(t.id, t.start, t.end) for t in tokens] == [(0, 0, 1), (1, 1, 2), (2, 2, 3), (3, 3, 4)]


def test_end_of_word_marker_found_in_the_corpus_is_refused():
    with pytest.raises(WorkbenchError, match="occurs in the corpus"):
        train({"a</w>b": 1}, TrainConfig(units="chars", merges=1, end_of_word="</w>"))
