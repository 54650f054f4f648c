"""cl100k_base ids identical to tiktoken's, on every shared corpus file and on hard cases."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.pretokenize import CL100K_PATTERN

tiktoken = pytest.importorskip("tiktoken")

SPECIALS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}

HARD_CASES = [
    "👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 🇩🇪🇯🇵 flags, 👍🏽 skin tone",
    "e\u0301 combining acute, Å vs A\u030a, ﬁ ligature, ǅ titlecase",
    "line one\r\nline two\r\n\r\n\rcarriage\n\n\n",
    "a" + " " * 37 + "b\t\t\tc \u00a0 \u3000 wide space",
    "1234567890 3.14159 1,000,000 ٣٤٥ ²³",
    "def f(x):\n    return {'a': [x ** 2 for x in range(10)]}  # comment\n",
    "<|endoftext|> is plain text here <|fim_prefix|>",
    "中文字符和日本語のテキスト、한국어 텍스트",
    "I'm you're he'll they've we'd IT'S I'M",
    "\x00\x01\x1b[33mansi\x1b[0m \ufeffbom \ud7ff \U0010ffff",
    "",
    " ",
    "\n",
]


@pytest.fixture(scope="module")
def pair(cl100k_file):
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(cl100k_file))
    oracle = tiktoken.Encoding(name="cl100k_test", pat_str=CL100K_PATTERN, mergeable_ranks=ranks,
                               special_tokens=SPECIALS)
    size = max(SPECIALS.values()) + 1
    vocab = [b""] * size
    for piece, rank in ranks.items():
        vocab[rank] = piece
    for text, token_id in SPECIALS.items():
        vocab[token_id] = text.encode()
    ours = Tokenizer(vocab=tuple(vocab), merges=(), pretokenizer="cl100k", special_tokens=SPECIALS,
                     merge_rule="bytes", name="cl100k_base")
    return Encoder(ours), oracle


@pytest.mark.parametrize("case", HARD_CASES)
def test_hard_cases_match_tiktoken(pair, case):
    ours, oracle = pair
    ids = ours.encode(case)
    assert ids == oracle.encode_ordinary(case)
    assert ours.decode_bytes(ids) == case.encode("utf-8", "surrogatepass")


def test_special_tokens_only_when_allowed(pair):
    ours, oracle = pair
    text = "a<|endoftext|>b<|fim_prefix|>"
    assert ours.encode(text, allow_special=True) == oracle.encode(text, allowed_special="all")
    assert 100257 in ours.encode(text, allow_special=True)
    assert 100257 not in ours.encode(text)


@pytest.mark.parametrize("native", [True, False], ids=["tiktoken-core", "python"])
def test_every_corpus_file_matches_tiktoken(pair, corpora, native):
    """Whole files on tiktoken's core; the Python path (held equal to it by hypothesis above) on the
    first 300,000 characters of each, which keeps the suite's time."""
    ours, oracle = pair
    ours = Encoder(ours.tok, native=native)
    for path in corpora:
        text = path.read_text(encoding="utf-8")
        text = text if native else text[:300_000]
        ids = ours.encode(text)
        expected = oracle.encode_ordinary(text)
        assert len(ids) == len(expected), path.name
        assert ids == expected, path.name
        assert ours.decode(ids) == text


def test_offsets_cover_text_and_group_partial_characters(pair):
    ours, _ = pair
    text = "héllo 👩‍👩‍👧 中文"
    tokens = ours.encode_with_offsets(text)
    assert [t.id for t in tokens] == ours.encode(text)
    # spans are contiguous, in order, and cover the text
    assert tokens[0].start == 0 and tokens[-1].end == len(text)
    for before, after in zip(tokens, tokens[1:]):
        assert after.start >= before.start and after.start <= before.end
    partial = [t for t in tokens if t.partial]
    assert partial, "byte-level tokens splitting an emoji or CJK character are marked partial"
    for token in partial:
        assert text[token.start:token.end], "a partial token still points at the character it belongs to"


def test_a_cut_character_decodes_to_the_replacement_character_as_in_tiktoken(pair):
    """Decoding ids that end inside a character shows U+FFFD, never nothing (``errors="ignore"`` did)."""
    ours, oracle = pair
    ids = oracle.encode_ordinary("👩‍👩‍👧 数字 naïve 🎉")
    cut = 0
    for k in range(1, len(ids) + 1):
        assert ours.decode(ids[:k]) == oracle.decode(ids[:k]), k
        cut += "\ufffd" in oracle.decode(ids[:k])
    assert cut > 0  # some prefixes do end inside a character


def test_a_special_token_that_extends_another_is_matched_whole(pair):
    """``<eot>`` and ``<eot>_2``: the longest special token at a position wins, as ``tokenizers``' added
    tokens match (leftmost-longest). tiktoken is no oracle here: it joins its specials into one
    alternation in hash-map order, so which of two overlapping ones wins changes from process to process."""
    _ours, oracle = pair
    specials = {"<eot>": 100300, "<eot>_2": 100301, "<eot>_20": 100302}
    vocab = [b""] * (max(specials.values()) + 1)
    for piece, rank in oracle._mergeable_ranks.items():
        vocab[rank] = piece
    for text, token_id in specials.items():
        vocab[token_id] = text.encode()
    ours = Encoder(Tokenizer(vocab=tuple(vocab), merges=(), pretokenizer="cl100k", special_tokens=specials,
                             merge_rule="bytes", name="eot"))
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    hf.add_special_tokens(list(specials))
    by_id = {i: t for t, i in specials.items()}
    for text in ["a<eot>b", "a<eot>_2b", "<eot>_20<eot>_2<eot>", "<eot>_<eot>_3 x<eot>_200"]:
        matched = [by_id[i] for i in ours.encode(text, allow_special=True) if i in by_id]
        assert matched == [t for t in hf.encode(text).tokens if t in specials], text
        assert "".join(ours.decode_bytes([i]).decode() for i in ours.encode(text, allow_special=True)) == text


@pytest.fixture(scope="module")
def native_and_python(cl100k_file):
    from workbench.core.native_bpe import NativeBPE
    from workbench.formats import load_tokenizer_file

    tok = load_tokenizer_file(cl100k_file)
    python = Encoder(tok, native=False)
    native = NativeBPE.build(tok, python._usable)
    assert native is not None
    return native, python


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
       | st.lists(st.sampled_from(HARD_CASES + [" ", "\n", "\r\n", "'s", "123456", "ǅ", "👍🏽"]), max_size=12).map("".join))
def test_tiktokens_core_and_the_python_path_give_the_same_ids(native_and_python, text):
    native, python = native_and_python
    assert native.encode(text) == python.encode(text)


def test_a_long_text_is_encoded_by_the_native_core_with_specials_cut_out_first(pair, corpora):
    _ours, oracle = pair
    from workbench.core.native_bpe import NativeBPE

    text = "<|endoftext|>".join(p.read_text(encoding="utf-8")[:30_000] for p in corpora)
    encoder = Encoder(_ours.tok)
    assert encoder.encode(text, allow_special=True) == oracle.encode(text, allowed_special="all")
    assert isinstance(encoder._native, NativeBPE)  # 150,000 characters: past the set-up threshold
