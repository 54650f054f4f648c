"""Round trips per format, clobber refusal, forced atomic replacement, verification failures."""

from __future__ import annotations

import json
import os

import pytest
from fmt_helpers import HARD_TEXTS, build

from workbench.errors import ConfigError, WorkbenchError
from workbench.formats import (
    detect_format,
    export_tokenizer,
    import_tokenizer,
    load_tokenizer_file,
)
from workbench.formats import export as export_module
from workbench.formats.export import formats_for
from workbench.formats.merges_csv import read_merges_csv
from workbench.formats.vocab_lists import render_spm_vocab, render_wordpiece

TARGETS = {
    "hf": "tokenizer.json", "hf-folder": "hf-folder", "gpt2": "gpt2-folder", "tiktoken": "t.tiktoken", "wordpiece": "vocab.txt",
    "spm-vocab": "t.vocab", "merges-csv": "merges.csv",
}


def test_gpt2_pair_layout_and_round_trip(tmp_path, byte_tokenizer):
    from workbench.core.encoder import Encoder

    folder = tmp_path / "gpt2"
    result = export_tokenizer(byte_tokenizer, "gpt2", folder, sample=HARD_TEXTS)
    assert result.paths == (folder / "vocab.json", folder / "merges.txt")
    merges = (folder / "merges.txt").read_text("utf-8")
    assert merges.startswith("#version: 0.2\nĠ t\nh e\n") and merges.endswith("\n")
    assert len(merges.splitlines()) == 1 + len(byte_tokenizer.merges)
    vocab = json.loads((folder / "vocab.json").read_text("utf-8"))
    assert vocab["Ġthe"] == byte_tokenizer.id_of_piece[b" the"] and vocab["<|endoftext|>"] == 0
    assert detect_format(folder) == "gpt2" and detect_format(folder / "vocab.json") == "gpt2"
    back = load_tokenizer_file(folder / "vocab.json")
    assert back.vocab == byte_tokenizer.vocab and back.merges == byte_tokenizer.merges
    assert dict(back.special_tokens) == {"<|endoftext|>": 0} and back.pretokenizer == "gpt2"
    assert [Encoder(back).encode(t) for t in HARD_TEXTS] == [Encoder(byte_tokenizer).encode(t) for t in HARD_TEXTS]
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers

    hf = tokenizers.Tokenizer(models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    for text in HARD_TEXTS:
        assert hf.encode(text).ids == Encoder(byte_tokenizer).encode(text)


def test_end_of_word_run_round_trips_through_gpt2_pair(tmp_path, eow_tokenizer):
    """A character-level pair (as other tools write one) imports; exporting one is refused, since a
    GPT-2 loader would read its pieces as byte-level."""
    from workbench.core.encoder import Encoder
    from workbench.formats.gpt2_files import render_gpt2

    with pytest.raises(WorkbenchError, match="gpt2 is not offered for this BPE tokenizer: the GPT-2 pair is byte-level"):
        export_tokenizer(eow_tokenizer, "gpt2", tmp_path / "g")
    vocab_json, merges_txt, _notes = render_gpt2(eow_tokenizer)
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "vocab.json").write_bytes(vocab_json)
    (tmp_path / "g" / "merges.txt").write_bytes(merges_txt)
    assert "est </w>" in (tmp_path / "g" / "merges.txt").read_text("utf-8").splitlines()
    back = load_tokenizer_file(tmp_path / "g", pattern="whitespace")
    assert back.units == "chars" and back.end_of_word == "</w>" and back.merges == eow_tokenizer.merges
    text = "newest lowest widest low lower"
    assert Encoder(back).encode(text) == Encoder(eow_tokenizer).encode(text)


def test_wordpiece_and_spm_vocab_round_trip(tmp_path, byte_tokenizer):
    """vocab.txt and .vocab files of a byte-level BPE (as other tools write them) import; exporting
    a BPE in them is refused (a BERT loader gives other ids, a .vocab loses the merges)."""
    for fmt, reason in (("wordpiece", "vocab.txt is a WordPiece vocabulary: a BERT loader splits words"),
                        ("spm-vocab", "a .vocab lists pieces without their merges")):
        with pytest.raises(WorkbenchError, match=f"{fmt} is not offered for this BPE tokenizer: {reason}.*"
                                                 "formats that fit: hf, hf-folder, gpt2, tiktoken, merges-csv$"):
            export_tokenizer(byte_tokenizer, fmt, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    (tmp_path / "vocab.txt").write_bytes(render_wordpiece(byte_tokenizer)[0])
    lines = (tmp_path / "vocab.txt").read_text("utf-8").split("\n")
    assert lines[0] == "<|endoftext|>" and lines[1 + ord(" ")] == "Ġ" and lines[-1] == ""
    wp = load_tokenizer_file(tmp_path / "vocab.txt")
    assert wp.units == "chars" and wp.merges == () and len(wp.vocab) == len(byte_tokenizer.vocab)
    assert wp.special_tokens == {"<|endoftext|>": 0} and wp.vocab[byte_tokenizer.id_of_piece[b" the"]] == "Ġthe".encode()

    (tmp_path / "t.vocab").write_bytes(render_spm_vocab(byte_tokenizer)[0])
    rows = [line.split("\t") for line in (tmp_path / "t.vocab").read_text("utf-8").splitlines()]
    the = byte_tokenizer.id_of_piece[b" the"]
    assert rows[the] == ["▁the", f"-{byte_tokenizer.merge_of_id[the][0]}"]
    assert rows[1 + 0x0A] == ["<0x0A>", "0"] and rows[1 + ord("a")] == ["a", "0"]
    assert rows[byte_tokenizer.id_of_piece[b"\xf0\x9f"]] == ["<0xF0><0x9F>", "-6"]
    spm = load_tokenizer_file(tmp_path / "t.vocab")
    assert spm.vocab == byte_tokenizer.vocab and spm.units == "bytes" and spm.pretokenizer == "metaspace"
    assert [new for _l, _r, new in spm.merges] == [new for _l, _r, new in byte_tokenizer.merges]


def test_merges_csv_with_frequencies(tmp_path, byte_tokenizer):
    freqs = list(range(100, 100 - len(byte_tokenizer.merges), -1))
    export_tokenizer(byte_tokenizer, "merges-csv", tmp_path / "m.csv", frequencies=freqs)
    text = (tmp_path / "m.csv").read_bytes().decode("utf-8")
    assert text.startswith("rank,left,right,merged,frequency\r\n0, ,t, t,100\r\n")
    rows = read_merges_csv(tmp_path / "m.csv")
    assert rows[6] == (6, "\\xf0", "\\x9f", "\\xf0\\x9f", 94)
    assert rows[10][1:4] == ("\r", "\n", "\r\n")  # quoted, survives the round trip
    export_tokenizer(byte_tokenizer, "merges-csv", tmp_path / "n.csv")
    assert read_merges_csv(tmp_path / "n.csv")[0][4] is None
    with pytest.raises(WorkbenchError, match="frequencies"):
        export_tokenizer(byte_tokenizer, "merges-csv", tmp_path / "o.csv", frequencies=[1])


# The formats that fit a byte-level BPE; the others per family are in tests/test_exports_per_family.py.
@pytest.mark.parametrize("fmt", formats_for("bpe", {"units": "bytes", "pretokenizer": "gpt2"}))
def test_existing_output_is_refused_then_replaced_with_force(tmp_path, byte_tokenizer, fmt):
    out = tmp_path / TARGETS[fmt]
    first = export_tokenizer(byte_tokenizer, fmt, out)
    before = {p: p.read_bytes() for p in first.paths}
    with pytest.raises(ConfigError, match="already exists") as refused:  # the CLI adds "--force"
        export_tokenizer(byte_tokenizer, fmt, out)
    assert refused.value.field == "force" and "--" not in str(refused.value)
    smaller = build("bytes", [(" ", "t")], pretokenizer="gpt2")
    second = export_tokenizer(smaller, fmt, out, force=True)
    assert second.paths == first.paths
    assert any(p.read_bytes() != before[p] for p in second.paths)
    leftovers = [name for name in os.listdir(first.paths[0].parent) if name.startswith(".workbench-export")]
    assert leftovers == []
    if fmt != "merges-csv":
        assert detect_format(out) == ("hf" if fmt == "hf-folder" else fmt)  # a folder imports as its tokenizer.json
        assert len(load_tokenizer_file(out).vocab) == len(smaller.vocab)


def test_failed_verification_keeps_the_old_file(tmp_path, byte_tokenizer, monkeypatch):
    out = tmp_path / "tokenizer.json"
    export_tokenizer(byte_tokenizer, "hf", out)
    old = out.read_bytes()

    def broken(tokenizer, staged, texts, notes):
        raise WorkbenchError("hf export failed verification: simulated")

    monkeypatch.setitem(export_module._VERIFIERS, "hf", broken)
    with pytest.raises(WorkbenchError, match="simulated"):
        export_tokenizer(build("bytes", [], pretokenizer="gpt2"), "hf", out, force=True)
    assert out.read_bytes() == old
    assert os.listdir(tmp_path) == ["tokenizer.json"]
    with pytest.raises(WorkbenchError, match="simulated"):
        export_tokenizer(byte_tokenizer, "hf", tmp_path / "new.json")
    assert not (tmp_path / "new.json").exists()


def test_inconsistent_tokenizer_fails_tiktoken_verification(tmp_path):
    # The pair rule stops "abc" at a + bc (there is no (a, bc) merge); tiktoken's byte-rank rule
    # joins a + bc anyway because "abc" has a rank. Such a tokenizer has no faithful .tiktoken.
    tok = build("bytes", [("b", "c"), ("a", "b"), ("ab", "c")], pretokenizer="gpt2")
    from workbench.core.encoder import Encoder

    assert Encoder(tok).encode("abc") == [tok.id_of_piece[b"a"], tok.id_of_piece[b"bc"]]
    with pytest.raises(WorkbenchError, match="tiktoken export failed verification"):
        export_tokenizer(tok, "tiktoken", tmp_path / "x.tiktoken", sample="abc")
    assert os.listdir(tmp_path) == []


def test_unknown_format_and_import_notes(tmp_path, byte_tokenizer):
    with pytest.raises(WorkbenchError, match="unknown export format"):
        export_tokenizer(byte_tokenizer, "onnx", tmp_path / "x")
    export_tokenizer(byte_tokenizer, "merges-csv", tmp_path / "m.csv")
    with pytest.raises(WorkbenchError, match="merges CSV"):
        import_tokenizer(tmp_path / "m.csv")
