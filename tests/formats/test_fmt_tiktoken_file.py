"""The real cl100k_base.tiktoken through our reader, and .tiktoken exports through tiktoken."""

from __future__ import annotations

import base64
import json
import os

import pytest
from fmt_helpers import CORPORA, HARD_TEXTS, build, corpus_lines

from workbench.errors import WorkbenchError
from workbench.formats import export_tokenizer, import_tokenizer, load_tokenizer_file


@pytest.fixture
def no_tiktoken_cache(monkeypatch):
    # tiktoken caches files it loads by path; tests must neither read nor leave stale copies.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")


def _tiktoken_encoding(path, side):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    return tiktoken.Encoding(name=side["name"], pat_str=side["pat_str"],
                             mergeable_ranks=load_tiktoken_bpe(str(path)),
                             special_tokens=side["special_tokens"])


def test_cl100k_is_recognised_by_sha256(cl100k_path, cl100k):
    result = import_tokenizer(cl100k_path)
    assert result.format == "tiktoken"
    assert any("cl100k_base" in note and "SHA-256" in note for note in result.notes)
    tok = cl100k
    assert tok.name == "cl100k_base" and tok.pretokenizer == "cl100k" and tok.merge_rule == "bytes"
    assert dict(tok.special_tokens) == {
        "<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
    }
    ordinary = [i for i, piece in enumerate(tok.vocab) if piece and i not in tok.special_ids]
    assert len(ordinary) == 100256
    assert tok.vocab[100257] == b"<|endoftext|>" and tok.vocab[100261] == b""  # a gap id
    # every multi-byte token is explained by one recovered merge, in rank order
    assert len(tok.merges) == 100256 - 256
    assert [new for _l, _r, new in tok.merges] == sorted(new for _l, _r, new in tok.merges)
    for left, right, new in tok.merges[:2000]:
        assert tok.vocab[left] + tok.vocab[right] == tok.vocab[new] and left < new and right < new


@pytest.mark.parametrize("name", sorted(p.name for p in CORPORA.glob("*.txt")) or ["missing.txt"])
def test_cl100k_ids_equal_tiktoken_on_corpora(cl100k, name, no_tiktoken_cache):
    import importlib.util
    from pathlib import Path

    from workbench.core.encoder import Encoder
    from workbench.formats.tiktoken_file import tiktoken_pattern

    data = Path(list(importlib.util.find_spec("tiktoken_ext").submodule_search_locations)[0]) / "data"
    side = {"name": "cl100k_base", "pat_str": tiktoken_pattern("cl100k"), "special_tokens": dict(cl100k.special_tokens)}
    enc = _tiktoken_encoding(data / "cl100k_base.tiktoken", side)
    ours = Encoder(cl100k)
    lines = corpus_lines(name, 300)
    assert lines
    for line in lines:
        assert ours.encode(line) == enc.encode_ordinary(line), line
    text = "".join(lines)
    assert ours.encode(text) == enc.encode_ordinary(text)
    assert ours.decode(enc.encode_ordinary(text)) == text


def test_unknown_file_without_sidecar_assumes_gpt2_and_says_so(tmp_path):
    path = tmp_path / "mine.tiktoken"
    lines = [base64.b64encode(bytes([b])) + b" " + str(b).encode() for b in range(256)]
    lines.append(base64.b64encode(b"ab") + b" 256")
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = import_tokenizer(path)
    assert result.tokenizer.pretokenizer == "gpt2"
    assert any("assumed the GPT-2 pre-tokenizer" in note for note in result.notes)
    assert result.tokenizer.merges == ((97, 98, 256),)
    assert load_tokenizer_file(path, pattern="cl100k").pretokenizer == "cl100k"


def test_export_loads_in_tiktoken_with_identical_ids(tmp_path, byte_tokenizer, no_tiktoken_cache):
    from workbench.core.encoder import Encoder

    out = tmp_path / "hand.tiktoken"
    result = export_tokenizer(byte_tokenizer, "tiktoken", out, sample=HARD_TEXTS)
    assert result.paths == (out, tmp_path / "hand.tiktoken.json")
    assert any(check.startswith("tiktoken") for check in result.checks)
    side = json.loads((tmp_path / "hand.tiktoken.json").read_text("utf-8"))
    assert side["special_tokens"] == {"<|endoftext|>": 0}
    # ranks equal ids, one base64 token per line, all 256 bytes present
    rows = [line.split() for line in out.read_bytes().splitlines()]
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in rows}
    assert all(ranks[bytes([b])] == b + 1 for b in range(256))
    enc = _tiktoken_encoding(out, side)
    ours = Encoder(byte_tokenizer)
    for text in HARD_TEXTS:
        assert enc.encode_ordinary(text) == ours.encode(text)
    # and our reader restores the settings from the sidecar
    back = load_tokenizer_file(out)
    assert back.pretokenizer == "gpt2" and dict(back.special_tokens) == {"<|endoftext|>": 0}
    assert [Encoder(back).encode(t) for t in HARD_TEXTS] == [ours.encode(t) for t in HARD_TEXTS]


def test_char_level_and_metaspace_are_refused(tmp_path, eow_tokenizer):
    with pytest.raises(WorkbenchError, match="characters"):
        export_tokenizer(eow_tokenizer, "tiktoken", tmp_path / "x.tiktoken")
    meta = build("bytes", [("a", "b")], pretokenizer="metaspace")
    with pytest.raises(WorkbenchError, match="metaspace"):
        export_tokenizer(meta, "tiktoken", tmp_path / "y.tiktoken")
    assert os.listdir(tmp_path) == []


def test_cl100k_converts_to_tokenizer_json_with_tiktoken_ids(tmp_path, cl100k, cl100k_path, no_tiktoken_cache):
    tokenizers = pytest.importorskip("tokenizers")
    from workbench.formats.tiktoken_file import tiktoken_pattern

    out = tmp_path / "cl100k.json"
    result = export_tokenizer(cl100k, "hf", out, sample=HARD_TEXTS)
    assert any(check.startswith("tokenizers") for check in result.checks)
    hf = tokenizers.Tokenizer.from_file(str(out))
    side = {"name": "cl100k_base", "pat_str": tiktoken_pattern("cl100k"), "special_tokens": dict(cl100k.special_tokens)}
    enc = _tiktoken_encoding(cl100k_path, side)
    for text in HARD_TEXTS + corpus_lines("zh_fortunes.txt", 50):
        assert hf.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text), text
    assert hf.token_to_id("<|endofprompt|>") == 100276


def test_opening_a_known_file_and_encoding_recovers_no_merge(cl100k_path):
    """Opening cl100k and encoding a line needs only the ranks: the validation added for hostile
    files once recovered all 100,000 merges on every open (5.2× a tiktoken process). Validated
    merges are recovered only when something asks for them (the merge browser, an export)."""
    from workbench.core.encoder import Encoder
    from workbench.core.pretokenize import CL100K_PATTERN

    line = "Hello world, this is a line."
    tokenizer = import_tokenizer(cl100k_path).tokenizer
    oracle = _tiktoken_encoding(cl100k_path, {"name": "cl100k", "pat_str": CL100K_PATTERN, "special_tokens": {}})
    assert Encoder(tokenizer).encode(line) == oracle.encode(line)
    assert "not recovered yet" in repr(tokenizer.merges)
    left, right, new = tokenizer.merges[-1]  # asked for: recovered now, and each one checks out
    assert len(tokenizer.merges) == 100_000 and tokenizer.vocab[new] == tokenizer.vocab[left] + tokenizer.vocab[right]
