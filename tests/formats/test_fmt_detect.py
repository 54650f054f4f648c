from __future__ import annotations

import pytest

from workbench.formats import detect_format, export_tokenizer, import_tokenizer
from workbench.formats.vocab_lists import render_spm_vocab, render_wordpiece


def test_each_export_is_detected_by_name_and_by_content(tmp_path, byte_tokenizer):
    export_tokenizer(byte_tokenizer, "hf", tmp_path / "a.json")
    export_tokenizer(byte_tokenizer, "tiktoken", tmp_path / "b.tiktoken")
    # vocab.txt and .vocab do not fit a BPE export (formats_for): written as other tools write them
    (tmp_path / "c.vocab").write_bytes(render_spm_vocab(byte_tokenizer)[0])
    (tmp_path / "d-vocab.txt").write_bytes(render_wordpiece(byte_tokenizer)[0])
    export_tokenizer(byte_tokenizer, "merges-csv", tmp_path / "e.csv")
    assert detect_format(tmp_path / "a.json") == "hf"
    assert detect_format(tmp_path / "b.tiktoken") == "tiktoken"
    assert detect_format(tmp_path / "b.tiktoken.json") == "tiktoken"  # the sidecar leads to its ranks
    assert detect_format(tmp_path / "c.vocab") == "spm-vocab"
    assert detect_format(tmp_path / "d-vocab.txt") == "wordpiece"
    # any other .txt is a corpus far more often than a vocabulary: refused, not misread
    (tmp_path / "notes.txt").write_text("hello world\n", encoding="utf-8")
    with pytest.raises(Exception, match="cannot tell the format"):
        detect_format(tmp_path / "notes.txt")
    assert detect_format(tmp_path / "e.csv") == "merges-csv"
    # without telling names, content decides
    (tmp_path / "b.tiktoken").rename(tmp_path / "ranks.bin")
    (tmp_path / "c.vocab").rename(tmp_path / "pieces.tsv")
    assert detect_format(tmp_path / "ranks.bin") == "tiktoken"
    assert detect_format(tmp_path / "pieces.tsv") == "spm-vocab"
    assert import_tokenizer(tmp_path / "a.json").tokenizer.vocab == byte_tokenizer.vocab


def test_folder_with_tokenizer_json(tmp_path, byte_tokenizer):
    folder = tmp_path / "model"
    folder.mkdir()
    export_tokenizer(byte_tokenizer, "hf", folder)  # a folder receives tokenizer.json
    assert (folder / "tokenizer.json").exists()
    assert detect_format(folder) == "hf"
    assert import_tokenizer(folder).tokenizer.merges == byte_tokenizer.merges
