"""Unigram inference checked by hand: Viterbi and its ties, n-best probabilities, unknowns, bytes.

Scores are powers of two so every sum is exact and the expected splits can be worked on paper.
"""

from __future__ import annotations

import math

import pytest

from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.unigram import (
    METASPACE,
    UNK_PENALTY,
    count_spm_words,
    nbest,
    split_words,
    spm_words,
    valid_limits,
    viterbi,
)

L2 = math.log(2)


def unigram(scores: dict[str, float], *, byte_fallback: bool = False) -> Tokenizer:
    """<unk> <s> </s>, then (with byte fallback) the 256 bytes, then ``scores`` in order."""
    vocab = [b"<unk>", b"<s>", b"</s>"]
    if byte_fallback:
        vocab += [bytes([b]) for b in range(256)]
    vocab += [p.encode("utf-8") for p in scores]
    return Tokenizer(
        vocab=tuple(vocab), merges=(), units="chars", pretokenizer="metaspace",
        special_tokens={"<unk>": 0, "<s>": 1, "</s>": 2}, unk_token="<unk>", model="unigram",
        scores=tuple([0.0] * (len(vocab) - len(scores)) + list(scores.values())), byte_fallback=byte_fallback,
    )


def pieces(tok: Tokenizer, ids: list[int]) -> list[str]:
    return [tok.vocab[i].decode("utf-8", "backslashreplace") for i in ids]


def test_spm_text_form() -> None:
    assert spm_words("Hello  world") == ["▁Hello", "▁", "▁world"]
    assert spm_words(" lead") == ["▁", "▁lead"]
    assert spm_words("") == []
    assert split_words("ab▁c") == ["ab", "▁c"]
    assert count_spm_words(["a b", "b"]) == {"▁a": 1, "▁b": 2}


def test_viterbi_by_hand() -> None:
    # "▁hug" : ▁hug −4 beats ▁hu+g (−3 −2 = −5) and ▁+hug (−1 −4 = −5) and ▁+h+u+g (−1−2−2−2 = −7).
    tok = unigram({"▁": -1.0, "h": -2.0, "u": -2.0, "g": -2.0, "▁hu": -3.0, "hug": -4.0, "▁hug": -4.0})
    assert pieces(tok, viterbi(tok, "▁hug")) == ["▁hug"]
    # Raise ▁hug's cost: ▁hu+g (−5) and ▁+hug (−5) now beat ▁hug (−6) and tie; the tie goes to the
    # path whose last piece starts earliest (SentencePiece's rule: first candidate found wins).
    tok = unigram({"▁": -1.0, "h": -2.0, "u": -2.0, "g": -2.0, "▁hu": -3.0, "hug": -4.0, "▁hug": -6.0})
    assert pieces(tok, viterbi(tok, "▁hug")) == ["▁", "hug"]
    # Without hug, ▁hu+g (−5) beats ▁+h+u+g (−7) and ▁hug (−6).
    tok = unigram({"▁": -1.0, "h": -2.0, "u": -2.0, "g": -2.0, "▁hu": -3.0, "▁hug": -6.0})
    assert pieces(tok, viterbi(tok, "▁hug")) == ["▁hu", "g"]


def test_viterbi_tie_between_permutations() -> None:
    # a a a: a+a+a, aa+a, a+aa all score −4·ln2 exactly; at the end the candidate starting at 1
    # (aa) is found first, and position 1 is reached only by "a": a + aa.
    tok = unigram({"a": -L2, "aa": -2 * L2 - L2})  # p(a)=1/2, p(aa)=1/8
    assert pieces(tok, viterbi(tok, "aaa")) == ["a", "a", "a"]
    tok = unigram({"a": -1.0, "aa": -2.0})
    assert pieces(tok, viterbi(tok, "aaa")) == ["a", "aa"]


def test_nbest_lists_every_split_with_its_probability() -> None:
    # p(a)=1/2, p(aa)=1/4: a·a·a = 1/8, aa·a = a·aa = 1/8, so each of the 3 is 1/3 of the word.
    tok = unigram({"a": -L2, "aa": -2 * L2})
    found = nbest(tok, "aaa", 10)
    assert sorted(tuple(pieces(tok, ids)) for ids, _p in found) == [("a", "a", "a"), ("a", "aa"), ("aa", "a")]
    assert [p for _ids, p in found] == pytest.approx([1 / 3] * 3)
    # Unequal: p(aa)=1/2 → aa·a = a·aa = 1/4, a·a·a = 1/8; the best first, probabilities 2/5, 2/5, 1/5.
    tok = unigram({"a": -L2, "aa": -L2})
    found = nbest(tok, "aaa", 2)
    assert len(found) == 2
    assert [p for _ids, p in found] == pytest.approx([0.4, 0.4])
    assert {tuple(pieces(tok, ids)) for ids, _p in found} == {("aa", "a"), ("a", "aa")}
    assert nbest(tok, "aaa", 3)[2][1] == pytest.approx(0.2)
    assert nbest(tok, "", 3) == []


def test_unknown_characters_merge_into_one_unk_or_become_bytes() -> None:
    scores = {"▁": -1.0, "a": -2.0}
    tok = unigram(scores)
    enc = Encoder(tok)
    # "▁a日本a": 日本 has no piece → one <unk> for the run (as sentencepiece), scored min − 10.
    assert pieces(tok, enc.encode("a日本a")) == ["▁", "a", "<unk>", "a"]
    tok_bytes = unigram(scores, byte_fallback=True)
    enc = Encoder(tok_bytes)
    ids = enc.encode("a日a")
    assert [tok_bytes.vocab[i] for i in ids] == [b"\xe2\x96\x81", b"a", *[bytes([b]) for b in "日".encode()], b"a"]
    assert enc.decode(ids) == "a日a"
    assert UNK_PENALTY == 10.0


def test_decode_inverts_encode_with_byte_fallback() -> None:
    tok = unigram({"▁": -1.0, "a": -2.0, "b": -2.0, "▁ab": -2.5}, byte_fallback=True)
    enc = Encoder(tok)
    for text in ["ab ab", "  lead and trail  ", "e\u0301 👍🏽 日本", "tab\there\nnewline", ""]:
        assert enc.decode(enc.encode(text)) == text


def test_offsets_cover_the_text() -> None:
    tok = unigram({"▁": -1.0, "a": -2.0, "b": -2.0, "▁ab": -2.5}, byte_fallback=True)
    tokens = Encoder(tok).encode_with_offsets("ab b日")
    spans = [(t.start, t.end) for t in tokens]
    assert spans[0] == (0, 2)  # ▁ab: the dummy ▁ has no width
    assert spans[-1] == (4, 5) and tokens[-1].partial  # a byte of 日 spans the whole character
    assert spans[1:3] == [(2, 3), (3, 4)]


def test_valid_pieces_stay_in_one_script() -> None:
    word = METASPACE + "abc,де"
    limits = valid_limits(word, 16)
    assert word[0:limits[0]] == "▁abc"  # ▁ first, then one script
    assert word[4:limits[4]] == ","  # punctuation (Common) is not Latin
    assert word[5:limits[5]] == "де"
    assert valid_limits("abcdef", 3) == [3, 4, 5, 6, 6, 6]



def test_vocab_usage_encodes_lines_by_viterbi() -> None:
    # The Vocabulary tab and the Merges tab's never-used flag count a Unigram model over whole
    # lines (a SentencePiece lattice spans the line), encoded as Encoder.encode does.
    from workbench.core.metrics import encode_pretoken, usage_pretokenizer, vocab_usage

    tok = unigram({METASPACE: -3 * L2, "a": -2 * L2, "b": -2 * L2, "ab": -L2, f"{METASPACE}ab": -L2,
                   "ba": -4 * L2, "c": -4 * L2})
    assert usage_pretokenizer(tok) == ("none", ())
    lines = {"ab bab\n": 3, "c\n": 1}
    usage = vocab_usage(tok, lines)
    expected = [0] * len(tok.vocab)
    for line, n in lines.items():
        for token_id in Encoder(tok).encode(line):
            expected[token_id] += n
    assert list(usage.frequencies) == expected
    assert [tok.vocab[i].decode() for i in usage.never_used] == ["a", "ba"]
    # One pre-token on its own is split by Viterbi too (b+ab), not into characters.
    assert pieces(tok, list(encode_pretoken(Encoder(tok), "bab"))) == ["b", "ab"] == pieces(tok, viterbi(tok, "bab"))
