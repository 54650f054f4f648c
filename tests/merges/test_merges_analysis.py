"""workbench.analysis on hand-checked cases: ancestry, children, never-used entries, diffs."""

from __future__ import annotations

from pathlib import Path

import pytest
from merge_helpers import WORKED_CONFIG, WORKED_TEXT, hand_pair

from workbench.core.ancestry import ancestry, children
from workbench.core.bpe import train
from workbench.core.count import count_pretokens
from workbench.core.display import piece_chars, piece_text
from workbench.core.metrics import vocab_usage
from workbench.core.model import Tokenizer
from workbench.core.vocab_diff import diff_vocab, split_differences

ROOT = Path(__file__).resolve().parents[2] / "workbench"


@pytest.fixture(scope="module")
def worked():
    """Worked example 3: merges l o, lo w, low e, r </w>, low </w>."""
    counts = count_pretokens([WORKED_TEXT], pretokenizer="whitespace")
    tok, _ = train(counts, WORKED_CONFIG)
    return tok, counts


def ids(tok: Tokenizer, *pieces: str) -> list[int]:
    return [tok.id_of_piece[p.encode()] for p in pieces]


def test_ancestry_of_low_eow_goes_down_to_characters(worked):
    tok, _ = worked
    [low_eow] = ids(tok, "low</w>")
    root = ancestry(tok, low_eow)
    assert [leaf.piece for leaf in root.leaves()] == [b"l", b"o", b"w", b"</w>"]
    assert root.rank == 4
    left, right = root.parts
    assert (left.piece, left.rank, right.piece, right.is_base) == (b"low", 1, b"</w>", True)
    assert (left.parts[0].piece, left.parts[0].rank) == (b"lo", 0)
    assert root.merges() == [0, 1, 4]
    assert root.depth() == 4
    assert ancestry(tok, ids(tok, "e")[0]).is_base


def test_children_are_the_later_merges_that_use_a_token(worked):
    tok, _ = worked
    [low] = ids(tok, "low")
    assert [(c.rank, tok.vocab[c.new_id]) for c in children(tok, low)] == [(2, b"lowe"), (4, b"low</w>")]
    assert children(tok, ids(tok, "low</w>")[0]) == []


def test_never_used_entries_match_the_hand_count(worked):
    """Encoding low / lower / lowest / newer with the 5 merges gives
    low</w> · lowe r</w> · lowe s t </w> · n e w e r</w>: l, o, r, lo and low never occur."""
    tok, counts = worked
    usage = vocab_usage(tok, counts)
    freq = {tok.vocab[i].decode(): f for i, f in enumerate(usage.frequencies)}
    assert freq == {"e": 2, "l": 0, "n": 1, "o": 0, "r": 0, "s": 1, "t": 1, "w": 1, "</w>": 1,
                    "lo": 0, "low": 0, "lowe": 2, "r</w>": 2, "low</w>": 1}
    assert sorted(tok.vocab[i].decode() for i in usage.never_used) == ["l", "lo", "low", "o", "r"]
    assert usage.eligible == 14
    assert usage.never_used_share == pytest.approx(5 / 14)
    assert usage.total_tokens == 12


def test_special_tokens_are_not_counted_as_never_used():
    tok = Tokenizer(vocab=(b"<s>", b"a", b"b", b"ab"), merges=((1, 2, 3),), units="chars",
                    pretokenizer="whitespace", special_tokens={"<s>": 0})
    usage = vocab_usage(tok, {"ab": 3, "a": 1})
    assert usage.frequencies == (0, 1, 0, 3)
    assert usage.never_used == [2] and usage.eligible == 3


def test_vocabulary_diff_by_hand():
    a, b = hand_pair()
    diff = diff_vocab(a, b)
    assert [(e.piece, e.rank_a) for e in diff.only_a] == [(b"abc", 1)]
    assert diff.only_b == []
    shared = {e.piece: (e.rank_a, e.rank_b, e.shift) for e in diff.shared}
    assert shared == {b"a": (None, None, None), b"b": (None, None, None), b"c": (None, None, None),
                      b"ab": (0, 1, 1), b"bc": (2, 0, -2)}
    reverse = diff_vocab(b, a)
    assert [e.piece for e in reverse.only_b] == [b"abc"] and reverse.only_a == []


def test_words_that_split_differently_by_hand():
    """abc: A merges a b then ab c → [abc]; B merges b c first → [a, bc]. bca, cab, aa agree."""
    a, b = hand_pair()
    counts = count_pretokens(["abc bca abc cab aa abc bca abc aa bca abc"], pretokenizer="whitespace")
    report = split_differences(a, b, counts)
    assert [(d.word, d.count, d.split_a, d.split_b) for d in report.differences] == [
        ("abc", 5, (b"abc",), (b"a", b"bc"))]
    assert (report.word_types, report.word_tokens, report.differing_tokens) == (4, 11, 5)
    assert report.differing_share == pytest.approx(5 / 11)


def test_split_comparison_ignores_end_of_word_spelling(worked):
    tok, counts = worked
    plain = Tokenizer(vocab=tuple(p.replace(b"</w>", b"") or b"</w>" for p in tok.vocab), merges=(),
                      units="chars", pretokenizer="whitespace")
    # Without merges every word splits into characters. "newer" is n e w e r</w> with the merges
    # and n e w e r without: the same cuts, so it does not count as different.
    report = split_differences(tok, plain, counts)
    assert {d.word for d in report.differences} == {"low", "lower", "lowest"}
    same = split_differences(tok, tok, counts)
    assert same.differences == []


@pytest.mark.parametrize("raw,shown", [
    (b" the", "␣the"), (b"\n\t\r", "\\n\\t\\r"), (b"\\", "\\\\"), (b"\xe4\xb8", "\\xe4\\xb8"),
    ("é".encode(), "é"), ("\u00a0".encode(), "\\u00a0"), ("\u200b".encode(), "\\u200b"),
    (b"\x00\x1b\x7f", "\\x00\\x1b\\x7f"), ("␣".encode(), "\\u2423"), ("Ġ".encode(), "Ġ"),
    ("\x85".encode(), "\\u0085"),  # a C1 control is a character: \u, so \x85 always means a stray byte
    (b"\xed\xa0\x80", "\\xed\\xa0\\x80"),  # an encoded surrogate is not UTF-8: three stray bytes
    ("\ue000\U000f0000".encode(), "\\ue000\\U000f0000"),  # private use
    ("\u0378".encode(), "\\u0378"),  # unassigned
    ("\u2028\u3000".encode(), "\\u2028\\u3000"),  # line separator, ideographic space
    ("\u0301a".encode(), "◌\u0301a"), ("◌\u0301".encode(), "\\u25cc\u0301"),  # a leading mark
    ("👩\u200d💻".encode(), "👩\\u200d💻"), ("👍🏽".encode(), "👍🏽"),
])
def test_pieces_read_as_escaped_text(raw, shown):
    assert piece_text(raw, visible_space=True) == shown


def test_piece_chars_counts_stray_bytes_once_each():
    assert piece_chars("héllo".encode()) == 5
    assert piece_chars(b"\xe4\xb8") == 2
    assert piece_chars("中".encode()) == 1
