"""Bad files are refused with one line that names the file and line."""

from __future__ import annotations

import pytest

from workbench.errors import WorkbenchError
from workbench.formats import detect_format, export_tokenizer, load_tokenizer_file


def _gpt2(tmp_path, byte_tokenizer):
    export_tokenizer(byte_tokenizer, "gpt2", tmp_path / "g")
    return tmp_path / "g"


@pytest.mark.parametrize("bad, message", [
    ("h  e", "line 17: expected two pieces separated by one space"),
    ("h", "line 17: expected two pieces separated by one space"),
    ("h zzz", "line 17: piece 'zzz' is not in vocab.json"),
    ("Ġ t", "line 17: merge Ġ t is listed twice"),
])
def test_merges_txt_line_is_named(tmp_path, byte_tokenizer, bad, message):
    folder = _gpt2(tmp_path, byte_tokenizer)
    lines = (folder / "merges.txt").read_text("utf-8").split("\n")
    lines[16] = bad
    (folder / "merges.txt").write_text("\n".join(lines), "utf-8")
    with pytest.raises(WorkbenchError, match="merges.txt " + message):
        load_tokenizer_file(folder)


def test_missing_merges_txt(tmp_path, byte_tokenizer):
    folder = _gpt2(tmp_path, byte_tokenizer)
    (folder / "merges.txt").unlink()
    with pytest.raises(WorkbenchError, match="merges.txt"):
        load_tokenizer_file(folder / "vocab.json")


@pytest.mark.parametrize("line, message", [
    (b"YWJj", "line 3: expected a base64 token and a rank"),
    (b"Y@Jj 3", "line 3: .* is not valid base64"),
    (b"YWJj x", "line 3: rank 'x' is not a whole number"),
    (b"YWJj 0", "line 3: rank 0 already used on line 1"),
])
def test_tiktoken_line_is_named(tmp_path, line, message):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(b"YQ== 0\nYg== 1\n" + line + b"\n")
    with pytest.raises(WorkbenchError, match="bad.tiktoken " + message):
        load_tokenizer_file(path)


def test_vocab_lists_lines_are_named(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\nthe\n\n##ing\n", "utf-8")
    with pytest.raises(WorkbenchError, match="vocab.txt line 4: empty line"):
        load_tokenizer_file(tmp_path / "vocab.txt")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\nthe\n##ing\nthe\n", "utf-8")
    with pytest.raises(WorkbenchError, match="vocab.txt line 5: 'the' already on line 3"):
        load_tokenizer_file(tmp_path / "vocab.txt")
    (tmp_path / "t.vocab").write_text("<unk>\t0\n▁the\t-0\nthe -1\n", "utf-8")
    with pytest.raises(WorkbenchError, match="t.vocab line 3: expected a piece and a score"):
        load_tokenizer_file(tmp_path / "t.vocab")


def test_bert_vocab_txt_is_read_as_vocabulary(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\nthe\n##ing\nrun\n", "utf-8")
    assert detect_format(tmp_path / "vocab.txt") == "wordpiece"
    tok = load_tokenizer_file(tmp_path / "vocab.txt")
    assert tok.special_tokens == {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2} and tok.unk_token == "[UNK]"
    assert tok.vocab[4] == b"##ing" and tok.merges == ()


def test_unrecognised_file(tmp_path):
    (tmp_path / "notes.md").write_text("hello world\n", "utf-8")
    with pytest.raises(WorkbenchError, match="cannot tell the format"):
        detect_format(tmp_path / "notes.md")
    with pytest.raises(WorkbenchError, match="no such file"):
        load_tokenizer_file(tmp_path / "absent.tiktoken")
