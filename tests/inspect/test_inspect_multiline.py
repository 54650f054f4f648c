"""The inspector's layout of a multi-line text holds exactly the encoder's tokens, for every model
family: BPE, WordPiece and Unigram (with ``<unk>`` or byte fallback, with and without a
normalizer). A Unigram text once lost every line after the first (its later chunks were sliced
twice), and a chunk cut at a line start must not get SentencePiece's dummy ▁ the encoder never
puts there. Also: the spans cover what each token came from, and an edit reuses the other chunks.

Small runs trained once per module on the bundled demo corpus with the core trainers.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core import bpe, unigram, wordpiece
from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.normalize import make_normalizer
from workbench.core.offsets import SpanEncoder, offset_map, remap_spans
from workbench.core.pretokenize import make_pretokenizer
from workbench.corpus.demo import demo_corpus_files
from workbench.tasks.inspection import Inspector

REPRO = 'Tokenizers split — Hello\n    def greet(name):\n        return f"Hello, {name}!"\n'
SPECIAL = "<|endoftext|>"


def _lines() -> list[str]:
    out: list[str] = []
    for path in demo_corpus_files():
        out.extend(path.read_text(encoding="utf-8").splitlines()[:300])
    out.extend(REPRO.splitlines() * 5)
    return out


def _piece_counts(lines: list[str], pretokenizer: str, normalizer: tuple[str, ...]) -> dict[str, int]:
    pre = make_pretokenizer(pretokenizer)
    norm = make_normalizer(normalizer)
    counts: Counter = Counter()
    for line in lines:
        counts.update(pre.split(norm(line)))
    return dict(counts)


def _unigram(lines: list[str], **options) -> Tokenizer:
    norm = make_normalizer(options.get("normalizer", ()))
    return unigram.train(unigram.count_spm_words(norm(line) for line in lines),
                         unigram.UnigramConfig(vocab_size=1500, **options))


@functools.cache
def _trained() -> dict[str, Tokenizer]:
    """Trained once per module (a plain function, so hypothesis does not print the vocabularies)."""
    lines = _lines()
    bytes_bpe = bpe.train(_piece_counts(lines, "gpt2", ()), bpe.TrainConfig(
        units="bytes", merges=300, pretokenizer="gpt2", special_tokens=(SPECIAL,)))[0]
    lower_bpe = bpe.train(_piece_counts(lines, "cl100k", ("nfkc", "lower")), bpe.TrainConfig(
        units="bytes", merges=200, pretokenizer="cl100k", normalizer=("nfkc", "lower")))[0]
    bert = wordpiece.train(_piece_counts(lines, "bert", ("bert-lower",)), wordpiece.WordPieceConfig(
        vocab_size=900, normalizer=("bert-lower",)))[0]
    return {
        "bpe-bytes": bytes_bpe,
        "bpe-lower": lower_bpe,
        "wordpiece": bert,
        "unigram-unk": _unigram(lines, special_tokens=(SPECIAL,)),
        "unigram-bytes-nmt": _unigram(lines, byte_fallback=True, normalizer=("nmt-nfkc",)),
        "unigram-lower": _unigram(lines, normalizer=("lower",)),
        # a Unigram run's default clean-up: its spaces depend on their neighbours
        "unigram-default": _unigram(lines, normalizer=("nmt", "spm-whitespace")),
    }


@pytest.fixture(scope="module")
def tokenizers() -> dict[str, Tokenizer]:
    return _trained()


FAMILIES = ["bpe-bytes", "bpe-lower", "wordpiece", "unigram-unk", "unigram-bytes-nmt", "unigram-lower",
            "unigram-default"]

FRAGMENTS = ["Hello", "world", "def greet(name):", "return", "Привет, мир", "数据工程师", "中文句子。", "👍",
             "👩\u200d💻", "🇩🇪", "café", "e\u0301", "ﬁne Ⅻ", "Straße", "  ", " ", "\t", "12345", "{name}!", "—"]
_word = st.one_of(st.sampled_from(FRAGMENTS),
                  st.text(alphabet="ab Z.,\t —жЖ数据👍é\u0301ﬁ", max_size=5))
_line = st.lists(_word, max_size=5).map(" ".join)
texts = st.builds(lambda lines, sep, trailing: sep.join(lines) + (sep if trailing else ""),
                  st.lists(_line, min_size=1, max_size=5), st.sampled_from(["\n", "\r\n"]), st.booleans())


def _expected(tok: Tokenizer, text: str, allow_special: bool = False) -> list[tuple[int, int, int]]:
    """The encoder's tokens with their spans moved back onto ``text`` (as the inspector promises)."""
    tokens = [(t.id, t.start, t.end, t.partial) for t in Encoder(tok).encode_with_offsets(text, allow_special=allow_special)]
    if tok.normalizer:
        mapping = offset_map(text, tok.normalize(text), tok.normalize)
        if mapping is not None:
            tokens = remap_spans(tokens, mapping, len(text))
    return [t[:3] for t in tokens]


_reused: dict[str, Inspector] = {}


@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=120, deadline=None)
@given(text=texts)
def test_layout_ids_and_spans_are_the_encoders_on_multiline_text(name, text):
    tok = _trained()[name]
    layout = Inspector(SpanEncoder(tok)).inspect(text)
    assert layout.ids() == Encoder(tok).encode(text)
    assert [t[:3] for t in layout.tokens()] == _expected(tok, text)
    assert layout.n_tokens == len(layout.ids())
    # one inspector across all the examples, as the window keeps one: its reused chunks never
    # give another layout than a fresh pass
    inspector = _reused.setdefault(name, Inspector(SpanEncoder(tok)))
    again = inspector.inspect(text)
    assert again.tokens() == layout.tokens() and again.block_spans == layout.block_spans
    assert again.ids_lines == layout.ids_lines


@pytest.mark.parametrize("name", ["bpe-bytes", "unigram-unk"])
@settings(max_examples=60, deadline=None)
@given(text=texts, where=st.integers(0, 3))
def test_special_tokens_split_the_text_as_the_encoder_splits_it(name, text, where):
    tok = _trained()[name]
    lines = text.split("\n")
    k = where % len(lines)
    lines[k] = SPECIAL + lines[k] if where < 2 else lines[k] + SPECIAL
    text = "\n".join(lines)
    layout = Inspector(SpanEncoder(tok), allow_special=True).inspect(text)
    assert layout.ids() == Encoder(tok).encode(text, allow_special=True)
    assert [t[:3] for t in layout.tokens()] == _expected(tok, text, allow_special=True)


def test_every_line_of_a_unigram_text_gets_its_tokens(tokenizers):
    """The reported case: 17 of 57 tokens, the lines after the first uncoloured."""
    tok = tokenizers["unigram-unk"]
    encoder = SpanEncoder(tok)
    ids = Encoder(tok).encode(REPRO)
    layout = Inspector(encoder).inspect(REPRO)
    assert layout.ids() == ids and layout.n_tokens == len(ids) > 30
    assert layout.counts.tokens == len(ids)
    lines = REPRO.split("\n")
    for n, line in enumerate(lines):
        coloured = sum(length for _start, length, _code in layout.block_spans[n])
        assert coloured == len(line), (n, line, layout.block_spans[n])  # every character drawn
    # each line break is SentencePiece's <unk>, and covers exactly the line break
    unk = tok.special_tokens[tok.unk_token]
    breaks = [(s, e) for i, s, e, _p in layout.tokens() if i == unk]
    assert breaks and all(REPRO[s:e] == "\n" for s, e in breaks)
    assert len(breaks) == REPRO.count("\n")


def test_a_chunk_at_a_line_start_has_no_dummy_prefix(tokenizers):
    """The line after a break that starts with a space is its own chunk: SentencePiece's dummy ▁
    belongs in front of the text only, so the chunk's words are the whole text's."""
    tok = tokenizers["unigram-unk"]
    inspector = Inspector(SpanEncoder(tok))
    text = " spaced\n spaced\n spaced"
    layout = inspector.inspect(text)
    assert len(layout._parts) == 3  # cut at both line starts
    assert layout.ids() == Encoder(tok).encode(text)
    # the same text " spaced\n" twice: in front of the text with the dummy ▁ (a word of its own
    # before "▁spaced"), at a line start without it — not one cached chunk for both
    first, second = layout._parts[0][0].ids, layout._parts[1][0].ids
    assert first[0] == tok.vocab.index("\u2581".encode()) and first[1:] == second


@pytest.mark.parametrize("name", FAMILIES)
def test_editing_line_two_reencodes_only_its_chunk(tokenizers, name):
    tok = tokenizers[name]
    inspector = Inspector(SpanEncoder(tok))
    before = "Hello world, 数据\n Привет мир 👍\n the third line\n"
    after = "Hello world, 数据\n Привет, мир 👩\u200d💻 again\n the third line\n"
    old = inspector.inspect(before)
    new = inspector.inspect(after)
    fresh = Inspector(SpanEncoder(tok)).inspect(after)
    assert new.ids() == fresh.ids() == Encoder(tok).encode(after)
    assert new.tokens() == fresh.tokens() and new.colours() == fresh.colours()
    assert new.block_spans == fresh.block_spans and new.ids_lines == fresh.ids_lines
    if "\n" not in tok.normalize(after):  # nmt-nfkc and BERT's clean-up read a line break as a space
        assert name in ("unigram-bytes-nmt", "unigram-default", "wordpiece") and len(new._parts) == 1  # one chunk: no reuse
        return
    assert len(old._parts) == len(new._parts) == 3
    assert new._parts[0][0] is old._parts[0][0] and new._parts[2][0] is old._parts[2][0]
    assert new._parts[1][0] is not old._parts[1][0]


def test_near_ties_keep_the_lattice_whole_as_the_encoder_does(tokenizers):
    """A word whose two best splits are within SentencePiece's float32 noise makes the encoder redo
    its whole text as one lattice: cutting chunks at line starts then would change ids. Every line
    of real text starts with a space here (so each could be cut); about one window in eight holds
    such a word."""
    tok = tokenizers["unigram-unk"]
    encoder = Encoder(tok)
    model = unigram.model_of(tok)
    lines = [line for path in demo_corpus_files() for line in path.read_text(encoding="utf-8").splitlines()[:400]]
    fragile = 0
    for k in range(0, len(lines) - 8, 4):
        text = "\n".join(" " + line for line in lines[k:k + 8])
        layout = Inspector(SpanEncoder(tok)).inspect(text)
        assert layout.ids() == encoder.encode(text), text
        if model.line_is_fragile(model.words(text)):
            fragile += 1
            assert len(layout._parts) == 1
        else:
            assert len(layout._parts) > 1
    assert fragile > 10  # the case is exercised


def test_a_default_unigram_colours_each_word_where_it_stands(tokenizers):
    """SentencePiece's clean-up drops leading spaces and folds runs of spaces (spm-whitespace) and
    reads a line break as a space (nmt): the tokens still land on their own words, not on the whole
    text (a piecewise offset map used to give up and give every token the whole text)."""
    tok = tokenizers["unigram-default"]
    text = "  Hello   world\n second\tline  "
    layout = Inspector(SpanEncoder(tok)).inspect(text)
    assert layout.ids() == Encoder(tok).encode(text)
    spans = [(start, end) for _id, start, end, *_rest in layout.tokens()]
    assert all(0 <= a <= b <= len(text) for a, b in spans) and spans == sorted(spans)  # the dummy ▁: no width
    for word in ("Hello", "world", "second", "line"):
        at = text.index(word)
        covering = [(a, b) for a, b in spans if a < at + len(word) and b > at]
        assert covering and min(a for a, _ in covering) >= text.rindex(" ", 0, at) - 2, (word, covering)
        assert max(b for _, b in covering) <= at + len(word), (word, covering)
