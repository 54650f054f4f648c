"""Bad input is refused with one line naming the file (and line), and says what to do."""

from __future__ import annotations

import gzip

import pytest

from workbench.corpus import expand_paths, iter_text, open_source
from workbench.corpus.source import HEAD_BYTES
from workbench.errors import WorkbenchError


def test_missing_file(tmp_path):
    with pytest.raises(WorkbenchError, match=r"nope\.txt: no such file"):
        open_source(tmp_path / "nope.txt")


def test_directory_where_a_file_was_expected(tmp_path):
    (tmp_path / "folder.txt").mkdir()
    with pytest.raises(WorkbenchError, match=r"folder\.txt: is a folder"):
        open_source(tmp_path / "folder.txt")


def test_empty_file_and_empty_gzip(write, tmp_path):
    with pytest.raises(WorkbenchError, match=r"empty\.txt: the file is empty"):
        open_source(write(tmp_path / "empty.txt", b""))
    with pytest.raises(WorkbenchError, match=r"empty\.txt\.gz: the file is empty"):
        open_source(write(tmp_path / "empty.txt.gz", b""))


def test_binary_with_nul_bytes(write, tmp_path):
    with pytest.raises(WorkbenchError, match=r"model\.bin: looks binary, not text \(NUL bytes"):
        open_source(write(tmp_path / "model.bin", b"\x00\x01\x02" + bytes(range(256)) * 4))
    with pytest.raises(WorkbenchError, match=r"model\.txt: looks binary, not text \(a PNG image\): pick a text file"):
        open_source(write(tmp_path / "model.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4))


def test_binary_by_share_of_control_characters(write, tmp_path):
    with pytest.raises(WorkbenchError, match=r"looks binary, not text \(\d+% control characters"):
        open_source(write(tmp_path / "ctl.txt", b"ab\x01\x02\x03\x04\x05\x06cd\x07\x0e\x0f\n" * 100))


def test_real_text_with_ansi_escapes_is_not_binary(corpora):
    assert open_source(corpora / "zh_fortunes.txt").kind == "text"


def test_truncated_gzip(tmp_path):
    data = gzip.compress(("some text line\n" * 20000).encode())
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(data[: len(data) // 2])
    src = open_source(path)  # the head decompresses fine
    with pytest.raises(WorkbenchError, match=r"cut\.txt\.gz: the gzip data ends early"):
        list(iter_text(src))


def test_not_gzip_at_all(tmp_path):
    path = tmp_path / "fake.txt.gz"
    path.write_bytes(b"plain text, not gzip\n")
    with pytest.raises(WorkbenchError, match=r"fake\.txt\.gz: not valid gzip data"):
        open_source(path)


CP1252_TEXT = ("plain ascii line\nsecond line\n"
               "the caf\u00e9 served \u201cna\u00efve\u201d cr\u00e8me br\u00fbl\u00e9e \u2013 \u20ac5\n")


def test_cp1252_file_names_line_offset_and_suggests_encoding(write, tmp_path):
    path = write(tmp_path / "win.txt", CP1252_TEXT, encoding="cp1252")
    offset = CP1252_TEXT.encode("cp1252").index(b"\xe9")
    with pytest.raises(WorkbenchError) as info:
        open_source(path)
    message = str(info.value)
    assert f"win.txt:3: not valid utf-8 at byte {offset}" in message
    assert "looks like cp1252): read it with encoding cp1252" in message
    src = open_source(path, encoding="cp1252")
    assert src.reader_options()["encoding"] == "cp1252"
    assert "".join(iter_text(src)) == CP1252_TEXT


def test_cp1251_russian_is_recognised(write, tmp_path):
    path = write(tmp_path / "ru.txt", "Привет, мир! Это проверка кодировки.\n" * 3, encoding="cp1251")
    with pytest.raises(WorkbenchError, match=r"ru\.txt:1: .*looks like cp1251"):
        open_source(path)
    assert "".join(iter_text(open_source(path, encoding="cp1251"))).startswith("Привет, мир!")


def test_bad_byte_after_the_checked_head_fails_mid_stream_with_line(write, tmp_path):
    line = "ein ganz normaler Satz über Bäume\n"
    n_good = HEAD_BYTES // len(line.encode()) + 50
    data = (line * n_good).encode() + b"kaputt \xff hier\n" + line.encode()
    src = open_source(write(tmp_path / "late.txt", data))
    with pytest.raises(WorkbenchError) as info:
        list(iter_text(src))
    offset = len((line * n_good).encode()) + len(b"kaputt ")
    assert f"late.txt:{n_good + 1}: not valid utf-8 at byte {offset}" in str(info.value)
    assert "looks like UTF-8" in str(info.value)  # one stray byte in a UTF-8 file: not a cp1252 file


def test_utf16_bom_is_suggested_and_readable(write, tmp_path):
    text = "hello\nЖук\n" * 120000  # several chunks in the wide-encoding path
    path = write(tmp_path / "u16.txt", text, encoding="utf-16")
    with pytest.raises(WorkbenchError, match=r"u16\.txt:1: .*UTF-16 byte-order mark\): read it with encoding utf-16"):
        open_source(path)
    chunks = list(iter_text(open_source(path, encoding="utf-16")))
    assert len(chunks) > 1 and all(c.endswith("\n") for c in chunks)
    assert "".join(chunks) == text


def test_utf16_without_bom_is_recognised_not_called_binary(write, tmp_path):
    path = write(tmp_path / "excel.txt", "name said hello\n" * 20, encoding="utf-16-le")
    with pytest.raises(WorkbenchError, match=r"excel\.txt:1: .*looks like utf-16-le without a byte-order mark"):
        open_source(path)
    assert "".join(iter_text(open_source(path, encoding="utf-16-le"))) == "name said hello\n" * 20


def test_unknown_encoding_name(write, tmp_path):
    with pytest.raises(WorkbenchError, match="unknown encoding 'klingon'"):
        open_source(write(tmp_path / "a.txt", "x\n"), encoding="klingon")


def test_expand_paths_keeps_good_files_and_reports_bad_ones(write, tmp_path):
    root = tmp_path / "corpus"
    write(root / "b_good.txt", "good text\n")
    write(root / "a_bad.jsonl", '{"text": "fine"}\n', encoding="utf-8")
    (root / "a_bad.jsonl").write_text('\n{"text": broken}\n{"text": "x"}\n')
    write(root / "sub" / "c.csv", "text\nrow\n")
    write(root / "sub" / "d.tsv.gz", "text\nzeile\n")
    write(root / ".hidden.txt", "secret\n")
    write(root / ".git" / "inner.txt", "secret\n")
    write(root / "picture.png", b"\x89PNG\x00")
    write(root / "empty.txt", b"")
    extra = write(tmp_path / "single.counts", "a\t1\n")
    sources, messages = expand_paths([root, extra, tmp_path / "missing.txt", root / "b_good.txt"])
    assert [s.path.name for s in sources] == ["b_good.txt", "c.csv", "d.tsv.gz", "single.counts"]
    assert [s.kind for s in sources] == ["text", "csv", "tsv", "wordcounts"]
    joined = "\n".join(messages)
    assert f"{root / 'a_bad.jsonl'}:2: not valid JSON" in joined
    assert f"{root / 'empty.txt'}: the file is empty" in joined
    assert f"{root / 'picture.png'}: looks binary, not text" in joined
    assert "missing.txt: no such file" in joined
    assert "hidden" not in joined and "inner.txt" not in joined
    assert len(messages) == 4
