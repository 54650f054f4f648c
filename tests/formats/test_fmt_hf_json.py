"""tokenizer.json: files made by the real `tokenizers` library in, our exports out to it."""

from __future__ import annotations

import json

import pytest
from fmt_helpers import HARD_TEXTS, build, corpus_lines

from workbench.errors import WorkbenchError
from workbench.formats import export_tokenizer, import_tokenizer, load_tokenizer_file
from workbench.formats.hf_json import render_hf_json

tokenizers = pytest.importorskip("tokenizers")


def _train_bytelevel(tmp_path, *, pre_tokenizer=None, normalizer=None):
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer or pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if normalizer is not None:
        tok.normalizer = normalizer
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus_lines("en_shakespeare.txt", 1500), trainer)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return tok, path


def test_real_bytelevel_tokenizer_gives_same_ids(tmp_path):
    from workbench.core.encoder import Encoder

    hf, path = _train_bytelevel(tmp_path)
    tok = load_tokenizer_file(path)
    assert tok.units == "bytes" and tok.pretokenizer == "gpt2"
    assert dict(tok.special_tokens) == {"<|endoftext|>": 0}
    assert len(tok.merges) == len(json.loads(path.read_text("utf-8"))["model"]["merges"])
    ours = Encoder(tok)
    others = corpus_lines("en_wiki_taylorswift.txt", 200) + corpus_lines("de_zitate.txt", 50) + HARD_TEXTS
    for text in others:
        assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids, text


def test_real_split_pattern_and_normalizer_are_read(tmp_path):
    from tokenizers import Regex, normalizers, pre_tokenizers

    from workbench.core.encoder import Encoder
    from workbench.core.pretokenize import CL100K_PATTERN
    from workbench.formats.hf_json import hf_pattern

    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(hf_pattern(CL100K_PATTERN)), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    hf, path = _train_bytelevel(tmp_path, pre_tokenizer=pre, normalizer=normalizers.Sequence(
        [normalizers.NFKC(), normalizers.Lowercase()]))
    tok = load_tokenizer_file(path)
    assert tok.pretokenizer == "cl100k" and tok.normalizer == ("nfkc", "lower")
    ours = Encoder(tok)
    for text in corpus_lines("en_wiki_taylorswift.txt", 100) + HARD_TEXTS:
        assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids, text


@pytest.mark.parametrize("pretokenizer", ["gpt2", "cl100k", "o200k", "digits", "none", "metaspace"])
def test_export_loads_in_tokenizers_with_identical_ids(tmp_path, pretokenizer):
    from fmt_helpers import BYTE_PAIRS

    from workbench.core.encoder import Encoder

    tok = build("bytes", BYTE_PAIRS, specials=("<|endoftext|>",), pretokenizer=pretokenizer)
    out = tmp_path / "tokenizer.json"
    result = export_tokenizer(tok, "hf", out, sample=HARD_TEXTS)
    assert any(check.startswith("tokenizers") for check in result.checks)
    document = json.loads(out.read_text("utf-8"))
    assert document["model"]["type"] == "BPE" and document["model"]["merges"][0] == ["Ġ", "t"]
    assert document["added_tokens"][0]["content"] == "<|endoftext|>" and document["added_tokens"][0]["special"]
    steps = document["pre_tokenizer"].get("pretokenizers", [document["pre_tokenizer"]])
    assert steps[-1] == {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    assert (steps[0]["type"] == "Split") == (pretokenizer != "none")
    hf = tokenizers.Tokenizer.from_file(str(out))
    ours = Encoder(tok)
    for text in HARD_TEXTS:
        assert hf.encode(text, add_special_tokens=False).ids == ours.encode(text), text
        if pretokenizer != "metaspace":
            assert hf.decode(ours.encode(text)) == text
    back = load_tokenizer_file(out)
    assert back.pretokenizer == tok.pretokenizer and back.merges == tok.merges and back.vocab == tok.vocab


def test_cl100k_pattern_is_rewritten_for_oniguruma(tmp_path, byte_tokenizer):
    from dataclasses import replace

    tok = replace(byte_tokenizer, pretokenizer="cl100k")
    out = tmp_path / "t.json"
    export_tokenizer(tok, "hf", out)
    split = json.loads(out.read_text("utf-8"))["pre_tokenizer"]["pretokenizers"][0]
    # Oniguruma reads \p{N}{1,3}+ as "one or more groups of 1-3 digits"
    assert r"\p{N}{1,3}|" in split["pattern"]["Regex"] and r"{1,3}+" not in split["pattern"]["Regex"]
    hf = tokenizers.Tokenizer.from_file(str(out))
    assert [piece for piece, _span in hf.pre_tokenizer.pre_tokenize_str("12345678")] == ["123", "456", "78"]
    assert hf.encode("12345678").tokens == ["123", "4", "5", "6", "7", "8"]


def test_legacy_merges_and_normalizers(tmp_path, byte_tokenizer):
    from dataclasses import replace

    from workbench.core.encoder import Encoder

    tok = replace(byte_tokenizer, normalizer=("nfkc", "strip-accents", "lower"))
    out = tmp_path / "legacy.json"
    export_tokenizer(tok, "hf", out, legacy_merges=True, sample="ÉCOLE ﬁnale Ｆｕｌｌ")
    document = json.loads(out.read_text("utf-8"))
    assert document["model"]["merges"][0] == "Ġ t"
    assert [n["type"] for n in document["normalizer"]["normalizers"]] == ["NFKC", "NFD", "StripAccents", "NFC", "Lowercase"]
    back = load_tokenizer_file(out)
    assert back.normalizer == tok.normalizer and back.merges == tok.merges
    hf = tokenizers.Tokenizer.from_file(str(out))
    assert hf.encode("ÉCOLE ﬁnale", add_special_tokens=False).ids == Encoder(tok).encode("ÉCOLE ﬁnale")


def test_end_of_word_bpe_is_not_written_but_a_suffix_file_reads(tmp_path, eow_tokenizer):
    """tokenizers' suffix model only approximates an end-of-word run: the export is refused (not
    offered) and the renderer writes none; a suffix tokenizer.json that tokenizers trained reads
    back as an end-of-word tokenizer with its ids."""
    from tokenizers import decoders, models, pre_tokenizers, trainers

    from workbench.core.encoder import Encoder

    out = tmp_path / "eow.json"
    with pytest.raises(WorkbenchError, match="hf is not offered for this BPE tokenizer: tokenizers glues the "
                                             "end-of-word marker.*formats that fit: merges-csv$"):
        export_tokenizer(eow_tokenizer, "hf", out)
    with pytest.raises(WorkbenchError, match="end-of-word BPE is not written as tokenizer.json"):
        render_hf_json(eow_tokenizer)
    assert not out.exists()
    theirs = tokenizers.Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    theirs.pre_tokenizer = pre_tokenizers.Whitespace()
    theirs.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(vocab_size=60, end_of_word_suffix="</w>", show_progress=False)
    theirs.train_from_iterator(["newest widest lowest newer wider", "the newest of the widest"] * 20, trainer)
    theirs.save(str(out))
    back = import_tokenizer(out)
    assert back.tokenizer.end_of_word == "</w>" and back.tokenizer.units == "chars"
    assert any("end_of_word_suffix" in note for note in back.notes)
    for text in ("newest widest", "lowest newer", "the wider"):
        assert Encoder(back.tokenizer).encode(text) == theirs.encode(text).ids


def test_a_unigram_model_without_metaspace_encodes_as_the_library_does(tmp_path):
    from tokenizers import models

    from workbench.core.encoder import Encoder

    path = tmp_path / "uni.json"
    real = tokenizers.Tokenizer(models.Unigram([("<unk>", 0.0), ("a", -1.0), ("aa", -1.5), ("b", -2.0)], unk_id=0))
    real.save(str(path))
    tok = load_tokenizer_file(path)
    for text in ("aab", "a ab", "xaay", ""):
        assert Encoder(tok).encode(text) == real.encode(text).ids


def test_bad_merge_entry_is_named(tmp_path, byte_tokenizer):
    out = tmp_path / "t.json"
    export_tokenizer(byte_tokenizer, "hf", out)
    document = json.loads(out.read_text("utf-8"))
    document["model"]["merges"][3] = ["i"]
    out.write_text(json.dumps(document), "utf-8")
    with pytest.raises(WorkbenchError, match=r"t\.json: model\.merges entry 4"):
        load_tokenizer_file(out)
    out.write_text('{"model": {"type": "BPE",\n "vocab": {,}}}', "utf-8")
    with pytest.raises(WorkbenchError, match=r"t\.json line 2: invalid JSON"):
        load_tokenizer_file(out)
