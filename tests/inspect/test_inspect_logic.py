"""workbench.inspection without Qt: incremental spans equal the core's, grouping, colours, the
UTF-16 boundary, counts, pasted ids, readable pieces, boundary disagreements."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from workbench.core import display, offsets
from workbench.core.bpe import TrainConfig, train
from workbench.core.count import count_pretokens
from workbench.core.encoder import Encoder
from workbench.errors import WorkbenchError
from workbench.tasks import inspection, token_colours

CORPUS = ("The lowest newer widest low lower newest. Tokenizers split text 12345.\n"
          "数据工程师想知道文本如何被切分。 café naïve e\u0301 👍 👩‍💻\n\tdef f(x): return x  # note\n") * 30
EDITS = ["x", " ", "\n", "😀", "中", "", "ab", "\n\n", "e\u0301", "👩‍👩‍👧‍👦", "\t", "  ", "İ", "Σ", "<|endoftext|>"]
SAMPLE = ("Hello wörld ΑΣ Straße\n\n ﬁne e\u0301 İstanbul\n  indented\tTab\nline\n😀👩‍👩‍👧‍👦 中文字符 "
          "<|endoftext|> 1234567 x")

CONFIGS = {
    "bytes-gpt2": TrainConfig(units="bytes", merges=200, pretokenizer="gpt2", special_tokens=("<|endoftext|>",)),
    "bytes-cl100k-nfkc-lower": TrainConfig(units="bytes", merges=200, pretokenizer="cl100k", normalizer=("nfkc", "lower")),
    "chars-whitespace-eow": TrainConfig(units="chars", merges=120, pretokenizer="whitespace", end_of_word="</w>"),
    "bytes-metaspace": TrainConfig(units="bytes", merges=120, pretokenizer="metaspace"),
    "bytes-none": TrainConfig(units="bytes", merges=80, pretokenizer="none"),
    "bytes-digits": TrainConfig(units="bytes", merges=80, pretokenizer="digits", normalizer=("nfc",)),
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def tokenizer(request):
    config = CONFIGS[request.param]
    counts = count_pretokens([CORPUS], pretokenizer=config.pretokenizer, normalizer=config.normalizer)
    tok, _freqs = train(counts, config)
    return tok


def _core(encoder: Encoder, text: str, allow_special: bool):
    return [(t.id, t.start, t.end, t.partial) for t in encoder.encode_with_offsets(text, allow_special=allow_special)]


@pytest.mark.parametrize("allow_special", [False, True])
def test_incremental_spans_equal_the_core_after_random_edits(tokenizer, allow_special):
    encoder = offsets.SpanEncoder(tokenizer)
    inspector = inspection.Inspector(encoder, allow_special=allow_special)
    core = Encoder(tokenizer)
    rng = random.Random(7)
    text = SAMPLE
    normalizes = bool(tokenizer.normalizer)
    for _ in range(60):
        layout = inspector.inspect(text)
        assert len(layout.block_spans) == text.count("\n") + 1 == len(layout.ids_lines)
        try:
            expected = _core(core, text, allow_special)
        except WorkbenchError:  # a character this character-level vocabulary lacks
            assert offsets.UNKNOWN_ID in layout.ids()
        else:
            if normalizes and core.tok.normalize(text) != text:
                assert layout.ids() == [t[0] for t in expected]  # offsets moved onto the original text
            else:
                assert layout.tokens() == expected
            assert layout.n_tokens == len(expected) == layout.counts.tokens
        position = rng.randrange(len(text) + 1)
        cut = rng.choice([0, 0, 1, 2])
        text = text[:position] + rng.choice(EDITS) + text[position + cut:]


def test_span_encoder_equals_encode_with_offsets(tokenizer):
    encoder = offsets.SpanEncoder(tokenizer)
    core = Encoder(tokenizer)
    for text in (SAMPLE, SAMPLE.upper(), ""):
        for allow in (False, True):
            try:
                expected = _core(core, text, allow)
            except WorkbenchError:
                continue
            assert encoder.spans(text, allow_special=allow) == expected
            assert encoder.spans(text, allow_special=allow) == expected  # from the cache


def test_normalized_offsets_land_on_the_original_text():
    config = CONFIGS["bytes-cl100k-nfkc-lower"]
    counts = count_pretokens([CORPUS], pretokenizer=config.pretokenizer, normalizer=config.normalizer)
    tok, _ = train(counts, config)
    encoder = offsets.SpanEncoder(tok)
    text = "Hello ＷＯＲＬＤ ﬁne Straße ΑΒ e\u0301 İstanbul ｶﾞ"
    layout = inspection.Inspector(encoder).inspect(text)
    for g in layout.groups():
        pieces = b"".join(tok.vocab[i] for i in layout.ids()[g.first:g.last]).decode("utf-8", "replace")
        assert tok.normalize(text[g.start:g.end]) == pieces, (text[g.start:g.end], pieces)
    assert layout.groups()[-1].end == len(text)


def test_grouping_keeps_a_characters_bytes_together():
    tokens = [(10, 0, 1, True), (11, 0, 1, True), (12, 1, 2, False), (13, 2, 4, True), (14, 3, 4, True),
              (15, 4, 5, False)]
    groups = offsets.group_tokens(tokens, special_ids=[12])
    assert [(g.start, g.end, g.first, g.last, g.partial, g.special) for g in groups] == [
        (0, 1, 0, 2, True, False), (1, 2, 2, 3, False, True), (2, 4, 3, 5, True, False), (4, 5, 5, 6, False, False)]


@pytest.mark.parametrize("stable", [False, True])
def test_neighbours_never_share_a_colour(stable):
    rng = random.Random(3)
    text = "".join(rng.choice("ab \n") for _ in range(3000))
    groups, tokens, pos = [], [], 0
    while pos < len(text):
        size = rng.randint(1, 4)
        tokens.append((rng.randrange(50), pos, min(pos + size, len(text)), False))
        groups.append(offsets.Group(pos, min(pos + size, len(text)), len(tokens) - 1, len(tokens), False, False))
        pos += size
    for n in (2, 3, 8):
        colours = token_colours.assign_colours(groups, tokens, text, n, stable)
        assert all(0 <= c < n for c in colours)
        assert all(a != b for a, b in zip(colours, colours[1:]))


def test_stable_colours_follow_the_id():
    groups = [offsets.Group(k, k + 1, k, k + 1, False, False) for k in range(6)]
    tokens = [(7, 0, 1, False), (9, 1, 2, False), (7, 2, 3, False), (4, 3, 4, False), (7, 4, 5, False),
              (9, 5, 6, False)]
    colours = token_colours.assign_colours(groups, tokens, "abcdef", 8, stable=True)
    assert colours[0] == colours[2] == colours[4] == token_colours.stable_colour(7, 8)
    assert colours[1] == colours[5]


def test_whole_layout_neighbours_differ_across_lines():
    tok, _ = train(count_pretokens([CORPUS], pretokenizer="gpt2"), TrainConfig(units="bytes", merges=100))
    layout = inspection.Inspector(offsets.SpanEncoder(tok)).inspect(SAMPLE * 5)
    colours = layout.colours()
    assert all(a != b for a, b in zip(colours, colours[1:]))


@pytest.mark.parametrize("dark", [False, True])
def test_palettes_are_soft_distinct_and_readable(dark):
    colours = token_colours.palette(dark)
    text = token_colours.TEXT_ON_DARK if dark else token_colours.TEXT_ON_LIGHT
    assert len(set(colours)) == len(colours) >= 6
    for colour in colours:
        assert token_colours.contrast_ratio(text, colour) >= 4.5, colour

    def rgb(c):
        return [int(c[k:k + 2], 16) for k in (1, 3, 5)]

    for k, a in enumerate(colours):  # neighbours in the cycle clearly apart
        b = colours[(k + 1) % len(colours)]
        assert sum((x - y) ** 2 for x, y in zip(rgb(a), rgb(b))) ** 0.5 > 40, (a, b)
    background, foreground = token_colours.SPECIAL_COLOURS[dark]
    assert token_colours.contrast_ratio(background, foreground) >= 4.5


def test_blockmap_converts_code_points_and_utf16():
    bm = inspection.BlockMap(["a👩‍💻b", "", "中😀x"], "\r\n")
    assert bm.text() == "a👩‍💻b\r\n\r\n中😀x"
    assert bm.doc_starts == [0, 8, 9]  # 👩 and 💻 are two UTF-16 units each
    cps = range(bm.length + 1)
    for cp in cps:
        if bm.text()[cp - 1:cp] != "\r":
            assert bm.cp_at(bm.doc_pos(cp)) == cp


def test_counts():
    counts = inspection.count_text("héllo 中文 👍", 5)
    assert (counts.characters, counts.bytes, counts.words) == (10, 1 + 2 + 3 + 1 + 6 + 1 + 4, 3)
    assert counts.chars_per_token == 2.0
    assert round(counts.tokens_per_word, 3) == round(5 / 3, 3)
    assert inspection.count_text("", 0).chars_per_token == 0.0


@pytest.mark.parametrize("text, ids", [
    ("1, 2, 3", [1, 2, 3]), ("1 2\n3", [1, 2, 3]), ("[15339, 1917]", [15339, 1917]), ("  ", []),
    ('{"ids": [4, 5], "count": 2}', [4, 5]), ("7;8", [7, 8])])
def test_parse_ids(text, ids):
    assert display.parse_ids(text) == ids


@pytest.mark.parametrize("text, message", [
    ("1, 2, x7", "item 3 ('x7') is not an id"), ("[1, 2.5]", "item 2 (2.5) is not an id"),
    ("[1, 2", "not a valid JSON list"), ("5, -3", "item 2 (-3) is negative"), ('["a"]', "item 1 ('a')"),
    ("[true]", "item 1 (true) is not an id"), ('"12"', "not an id")])
def test_parse_ids_names_the_bad_item(text, message):
    with pytest.raises(WorkbenchError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        display.parse_ids(text)


def test_decode_names_an_unknown_id():
    tok, _ = train(count_pretokens(["aaabdaaabac"], pretokenizer="none"), TrainConfig(units="bytes", merges=3,
                                                                                    pretokenizer="none"))
    encoder = Encoder(tok)
    assert display.decode_ids(encoder, [258, 100, 258, 97, 99]) == "aaabdaaabac"
    with pytest.raises(WorkbenchError, match=r"item 2: id 5000 is not in this tokenizer's vocabulary \(valid ids: 0 to 258\)"):
        display.decode_ids(encoder, [97, 5000])


def test_readable_pieces_and_whitespace():
    # The inspector's form of the one renderer: plain spaces (the editor draws whitespace itself).
    assert display.piece_text(b" hello\n") == " hello\\n"
    assert display.piece_text(b"\t\r\\") == "\\t\\r\\\\"
    assert display.piece_text("\u200d".encode()) == "\\u200d"
    assert display.piece_text(b"\xe4\xb8") == "\\xe4\\xb8"
    assert display.piece_text("\u0301x".encode()) == "◌\u0301x"
    assert display.piece_text("\u00a0".encode()) == "\\u00a0"
    assert display.piece_text("␣".encode()) == "␣"  # no ␣ for spaces here, so no escape either
    assert display.show_whitespace("a b\tc\r\nd\n") == "a⋅b→c↵d↵"
    assert display.piece_hex(b"\x00\xff") == "00 ff"


def test_token_info_explains_a_merge():
    counts = count_pretokens(["low lower lowest " * 5], pretokenizer="gpt2")
    tok, freqs = train(counts, TrainConfig(units="bytes", merges=5))
    new_id = tok.merges[1][2]
    info = display.token_info(tok, new_id, freqs)
    assert info.kind == "merge" and info.rank == 1 and info.frequency == freqs[1]
    left, right = tok.merges[1][0], tok.merges[1][1]
    assert info.left == (left, display.piece_text(tok.vocab[left])) and info.right[0] == right
    assert display.token_info(tok, ord("l"), freqs).kind == "base"


def test_disagreement_spans_on_a_known_example():
    # "1234567": cl100k-like groups of three digits vs one token per digit vs "12|34567".
    thirds = {0, 3, 6, 7}
    digits = set(range(8))
    assert inspection.disagreement_spans([thirds, digits]) == [(0, 3), (3, 6)]
    assert inspection.disagreement_spans([thirds, {0, 2, 7}]) == [(0, 7)]
    assert inspection.disagreement_spans([thirds, thirds]) == []
    assert inspection.disagreement_spans([thirds]) == []


def test_inspection_module_imports_no_qt():
    path = Path(inspection.__file__)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    modules += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    assert not [m for m in modules if m.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph", "numpy")
                or m.startswith("workbench.ui")]
