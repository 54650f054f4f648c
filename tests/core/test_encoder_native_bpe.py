"""Merge-rank BPE on tiktoken's core: the proof's conditions (core/rank_equivalence.py) on adversarial
merge lists, held to the Python merge loop by hypothesis, and identical ids on real text for our runs,
a GPT-2 file pair, a byte-level tokenizer.json trained by ``tokenizers`` and a sweep prefix."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench.core.encoder as encoder_module
from workbench.core.bpe import TrainConfig, train
from workbench.core.count import chunks_for, count_pretokens
from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer, base_vocab
from workbench.core.native_bpe import NativeBPE
from workbench.core.rank_equivalence import tiktoken_table

pytest.importorskip("tiktoken")


def merge_list(steps: list[tuple[bytes, bytes]], *, ids_reversed: bool = False) -> Tokenizer:
    """A byte-level tokenizer from merges named by their parts' bytes (new ids after the bytes, or
    in reverse merge order with ``ids_reversed``)."""
    vocab = list(base_vocab("bytes"))
    new_ids = [256 + (len(steps) - 1 - k if ids_reversed else k) for k in range(len(steps))]
    vocab.extend([b""] * len(steps))
    piece_id = {bytes([b]): b for b in range(256)}
    merges = []
    for (left, right), new in zip(steps, new_ids):
        vocab[new] = left + right
        merges.append((piece_id[left], piece_id[right], new))
        piece_id.setdefault(left + right, new)
    return Tokenizer(vocab=tuple(vocab), merges=tuple(merges), pretokenizer="none", name="adversarial")


def both(tok: Tokenizer, text: str) -> tuple[list[int], list[int] | None]:
    """The Python merge loop's ids and tiktoken's core's (None when the proof refuses the merge list)."""
    python = Encoder(tok, native=False).encode(text)
    core = NativeBPE.build(tok, (), None, None)
    return python, None if core is None else list(core.piece(text.encode()))


def test_a_token_two_splits_reach_is_refused():
    """(h,e) before (t,h): "the" = t + he by the merge rule, but tiktoken would join t + he."""
    tok = merge_list([(b"h", b"e"), (b"t", b"h"), (b"th", b"e")])
    assert tiktoken_table(tok, range(256)) is None
    python = Encoder(tok, native=False).encode("the")
    assert [tok.vocab[i] for i in python] == [b"t", b"he"]


def test_rank_dead_token_is_refused():
    """(b,c) before (a,b): "abc" never becomes the token (ab,c) makes, though tiktoken takes it whole."""
    tok = merge_list([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])
    assert tiktoken_table(tok, range(256)) is None


def test_same_bytes_twice_and_late_parts_are_refused():
    assert tiktoken_table(merge_list([(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"a", b"bc")]), range(256)) is None
    late = merge_list([(b"a", b"b"), (b"c", b"d")])
    broken = Tokenizer(vocab=late.vocab, merges=((256, 99, 257),) + late.merges, pretokenizer="none")
    assert tiktoken_table(broken, range(256)) is None


def test_a_second_split_that_cannot_arise_is_accepted():
    """"abc" = a + bc is a token candidate of tiktoken's, but (a,b) always comes first: same ids."""
    tok = merge_list([(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"c", b"c"), (b"bc", b"c")])
    assert tiktoken_table(tok, range(256)) is not None
    for text in ["abc", "bcc", "abcc", "abcabc", "cabc", "bbcc", "aabcbcc", "ccc", "abccc"]:
        python, native = both(tok, text)
        assert python == native, text


def test_ids_out_of_merge_order_are_mapped_back():
    tok = merge_list([(b"a", b"b"), (b"ab", b"c"), (b"c", b"c")], ids_reversed=True)
    table = tiktoken_table(tok, range(256))
    assert table is not None and table.ids is not None
    python, native = both(tok, "abcccab abc")
    assert python == native and max(python) == 258


ALPHABET = [b"a", b"b", b"c", b"d"]


@st.composite
def merge_lists(draw):
    """Random merges of two existing tokens over a four-letter alphabet (about half pass the proof)."""
    tokens = list(ALPHABET)
    steps = []
    for _ in range(draw(st.integers(1, 14))):
        left = draw(st.sampled_from(tokens))
        right = draw(st.sampled_from(tokens))
        if left + right in tokens:
            continue
        steps.append((left, right))
        tokens.append(left + right)
    return steps


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(merge_lists(), st.lists(st.text("abcd", min_size=1, max_size=14), min_size=1, max_size=6))
def test_accepted_merge_lists_encode_alike(steps, texts):
    """Whenever the proof accepts a merge list, tiktoken's rule gives the merge rule's ids."""
    tok = merge_list(steps)
    for text in texts:
        python, native = both(tok, text)
        if native is not None:
            assert python == native, (steps, text)


def test_small_lists_are_accepted_and_refused():
    """Lists like the random ones above take both outcomes (the property test is not vacuous)."""
    verdicts = [tiktoken_table(merge_list(steps), range(256)) is not None for steps in (
        [(b"a", b"b"), (b"b", b"a"), (b"ab", b"a")], [(b"a", b"b"), (b"b", b"c"), (b"a", b"bc")],
        [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")], [(b"a", b"a"), (b"aa", b"a"), (b"a", b"aa")])]
    assert verdicts == [True, False, False, False]


# ---- real text ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def texts(corpora):
    """~30 KB of each corpus file: training text and held-out text beside it."""
    out = []
    for path in corpora:
        text = path.read_text(encoding="utf-8")
        out.append((text[:30_000], text[30_000:60_000]))
    return out


def trained(texts, preset: str, **config) -> Tokenizer:
    counts = count_pretokens(chunks_for(preset, [t for t, _ in texts]), pretokenizer=preset)
    tok, _ = train(counts, TrainConfig(vocab_size=1000, pretokenizer=preset, **config))
    return tok


@pytest.fixture
def build_at_once(monkeypatch):
    """The native core from the first text on (normally after 20,000 characters)."""
    monkeypatch.setattr(encoder_module, "NATIVE_AFTER_CHARS", 0)


def assert_same_ids(tok: Tokenizer, texts, **kwargs) -> Encoder:
    native, python = Encoder(tok, **kwargs), Encoder(tok, native=False, **kwargs)
    for _train, held_out in texts:
        assert native.encode(held_out) == python.encode(held_out)
    assert isinstance(native._native, NativeBPE)  # noqa: SLF001 - the fast path did run
    return native


@pytest.mark.parametrize("preset, config", [
    ("gpt2", {}),
    ("cl100k", {"special_tokens": ("<|endoftext|>", "<pad>"), "tie_break": "hf"}),
    ("digits", {"normalizer": ("nfkc",)}),
])
def test_trained_runs_encode_alike(texts, build_at_once, preset, config):
    tok = trained(texts, preset, **config)
    assert tiktoken_table(tok, [tok.id_of_piece[bytes([b])] for b in range(256)]) is not None
    encoder = assert_same_ids(tok, texts)
    if config.get("special_tokens"):
        text = "a<|endoftext|>b<pad>"
        assert encoder.encode(text, allow_special=True) == Encoder(tok, native=False).encode(text, allow_special=True)
    for k in (0, 7, 500):  # the sweep's prefixes
        assert_same_ids(tok, texts[:2], max_merges=k)


def test_gpt2_files_encode_alike(texts, build_at_once, tmp_path):
    from workbench.formats.gpt2_files import read_gpt2, render_gpt2

    vocab_json, merges_txt, _notes = render_gpt2(trained(texts, "gpt2"))
    (tmp_path / "vocab.json").write_bytes(vocab_json)
    (tmp_path / "merges.txt").write_bytes(merges_txt)
    tok = read_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")[0]
    assert_same_ids(tok, texts)


@pytest.mark.parametrize("prefix", [False, True], ids=["plain", "add_prefix_space"])
def test_tokenizers_trained_json_encodes_alike(texts, build_at_once, tmp_path, prefix):
    """A byte-level BPE trained by ``tokenizers`` (its own tie rule and id order), read through our
    tokenizer.json pipeline: the same ids from tiktoken's core (whole stretches between added
    tokens), from the Python pipeline and from ``tokenizers`` itself."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    from workbench.formats.hf_json import read_hf_json

    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<s>"], show_progress=False)
    hf.train_from_iterator([t for t, _ in texts], trainer)
    hf.save(str(tmp_path / "tokenizer.json"))
    tok = read_hf_json(tmp_path / "tokenizer.json")[0]
    held_out = [held[:8_000] for _t, held in texts]  # the Python pipeline is the slow side
    held_out += ["<s>Hello<s> world  <s>\n\n  x", "  two spaces\r\n\tand a tab   ", "<s>", ""]
    fast, python = Encoder(tok), Encoder(tok, native=False)
    for text in held_out:
        expected = hf.encode(text).ids
        assert fast.encode(text) == expected, text[:40]
        assert python.encode(text) == expected, text[:40]
    assert isinstance(fast._native, NativeBPE)  # noqa: SLF001 - the fast path did run


def test_sweep_counts_from_the_core_equal_the_continued_splits(texts):
    """The sweep's points on tiktoken's core (a prefix per point) give the Python continuation's counts."""
    from workbench.core.vocab_sweep import _continued_lengths, _native_lengths

    tok = trained(texts, "gpt2")
    pieces = sorted({p for _t, held in texts for p in tok.pre.split(held)})
    steps = [0, 1, 30, 300, len(tok.merges)]
    native = _native_lengths(tok, pieces, steps)
    assert native is not None
    for fast, slow in zip(native, _continued_lengths(tok, pieces, steps)):
        assert fast(lambda _j: False) == slow(lambda _j: False)

