"""Each supported format reads the text it should, with the field/column the user chose."""

from __future__ import annotations

import json
import sys

import pytest

from workbench.corpus import iter_text, iter_word_counts, open_source
from workbench.errors import WorkbenchError

TEXT = "first line\nzweite Zeile äöü\nтретья строка\n第四行\n"


@pytest.mark.parametrize("name", ["a.txt", "a.txt.gz"])
def test_plain_text_and_gzip_read_back_exactly(write, tmp_path, name):
    src = open_source(write(tmp_path / name, TEXT))
    assert src.kind == "text"
    assert src.compressed is name.endswith(".gz")
    assert src.size == (tmp_path / name).stat().st_size
    assert "".join(iter_text(src)) == TEXT


def test_utf8_bom_is_dropped(write, tmp_path):
    src = open_source(write(tmp_path / "bom.txt", b"\xef\xbb\xbf" + TEXT.encode()))
    assert "".join(iter_text(src)) == TEXT


def test_jsonl_nested_field_with_dots(write, tmp_path):
    lines = [
        {"id": 1, "meta": {"text": "hello world", "lang": "en"}},
        {"id": 2, "meta": {"text": "line one\nline two", "lang": "en"}},
        {"id": 3, "meta": {"text": "привет", "lang": "ru"}},
    ]
    path = write(tmp_path / "docs.jsonl", "\n".join(json.dumps(r, ensure_ascii=False) for r in lines) + "\n\n")
    src = open_source(path, field="meta.text")
    assert src.kind == "jsonl" and src.field == "meta.text"
    assert "".join(iter_text(src)) == "hello world\nline one\nline two\nпривет\n"


def test_jsonl_default_field_and_gzip(write, tmp_path):
    path = write(tmp_path / "d.jsonl.gz", '{"id": 1, "text": "a b"}\n{"id": 2, "text": "c"}\n')
    src = open_source(path)
    assert (src.kind, src.field, src.compressed) == ("jsonl", "text", True)
    assert "".join(iter_text(src)) == "a b\nc\n"


def test_jsonl_field_missing_on_first_record_lists_fields(write, tmp_path):
    path = write(tmp_path / "d.jsonl", '{"title": "x", "body_html": "<p>"}\n')
    with pytest.raises(WorkbenchError, match=r"d\.jsonl:1: no field 'text' \(fields: title, body_html\)"):
        open_source(path, field="text")


def test_jsonl_bad_lines_mid_stream_name_their_line(write, tmp_path):
    good = '{"text": "ok"}\n'
    not_json = write(tmp_path / "a.jsonl", good * 2 + "{oops\n" + good)
    src = open_source(not_json)  # the first record is fine, so adding succeeds
    with pytest.raises(WorkbenchError, match=r"a\.jsonl:3: not valid JSON"):
        list(iter_text(src))
    lacking = write(tmp_path / "b.jsonl", good * 3 + '{"txt": "typo"}\n')
    with pytest.raises(WorkbenchError, match=r"b\.jsonl:4: no field 'text'"):
        list(iter_text(open_source(lacking)))
    null = write(tmp_path / "c.jsonl", good + '{"text": null}\n')
    with pytest.raises(WorkbenchError, match=r"c\.jsonl:2: field 'text' is null"):
        list(iter_text(open_source(null)))


CSV = 'id,title,content\n1,One,"first, with comma"\n2,Two,"two\nlines"\n3,Three,plain\n'


def test_csv_default_column_is_content_and_quoted_newlines_survive(write, tmp_path):
    src = open_source(write(tmp_path / "t.csv", CSV))
    assert (src.kind, src.column) == ("csv", "content")
    assert "".join(iter_text(src)) == "first, with comma\ntwo\nlines\nplain\n"


@pytest.mark.parametrize(("column", "expected"), [("title", "One\nTwo\nThree\n"), (0, "1\n2\n3\n"), ("1", "One\nTwo\nThree\n")])
def test_csv_column_by_name_or_index(write, tmp_path, column, expected):
    src = open_source(write(tmp_path / "t.csv", CSV), column=column)
    assert "".join(iter_text(src)) == expected


def test_csv_unknown_column_lists_columns(write, tmp_path):
    with pytest.raises(WorkbenchError, match=r"no column 'abstract' \(columns: id, title, content\)"):
        open_source(write(tmp_path / "t.csv", CSV), column="abstract")


def test_csv_without_text_column_asks_which(write, tmp_path):
    with pytest.raises(WorkbenchError, match=r"which column holds the text\? \(columns: a, b\)"):
        open_source(write(tmp_path / "t.csv", "a,b\n1,2\n"))


def test_csv_short_row_names_its_line(write, tmp_path):
    src = open_source(write(tmp_path / "t.csv", "id,text\n1,ok\n2\n"), column="text")
    with pytest.raises(WorkbenchError, match=r"t\.csv:3: the row has 1 column\(s\)"):
        list(iter_text(src))


def test_tsv_only_column_and_gzip(write, tmp_path):
    src = open_source(write(tmp_path / "t.tsv.gz", "sentence\nein Satz\nnoch einer\n"))
    assert (src.kind, src.column, src.compressed) == ("tsv", "sentence", True)
    assert "".join(iter_text(src)) == "ein Satz\nnoch einer\n"


def test_reader_options_round_trip_through_json(write, tmp_path):
    src = open_source(write(tmp_path / "t.csv", CSV), column="title")
    options = json.loads(json.dumps(src.reader_options()))
    assert options == {"kind": "csv", "field": None, "column": "title", "encoding": None}
    assert open_source(src.path, **options) == src


def test_parquet_without_pyarrow_says_how_to_install(write, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = write(tmp_path / "t.parquet", b"PAR1 not really")
    with pytest.raises(WorkbenchError, match=r'pip install "tokenizer-workbench\[parquet\]"'):
        open_source(path)


def test_parquet_with_pyarrow(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "text": ["a b", None, "c"]}), path)
    src = open_source(path)
    assert (src.kind, src.column) == ("parquet", "text")
    assert "".join(iter_text(src)) == "a b\nc\n"


def test_wordcount_table_by_extension_with_header(write, tmp_path):
    path = write(tmp_path / "w.wordcounts.tsv", "word\tcount\nthe\t10\n the\t7\nЖук\t3\n")
    src = open_source(path)
    assert src.kind == "wordcounts"
    assert list(iter_word_counts(src)) == [("the", 10), (" the", 7), ("Жук", 3)]


def test_wordcount_kind_option_and_bad_count_line(write, tmp_path):
    path = write(tmp_path / "spark-output.tsv", "low\t5\nlower\t2\nnewest\tsix\nwidest\t3\n")
    src = open_source(path, kind="wordcounts")
    assert src.kind == "wordcounts"
    with pytest.raises(WorkbenchError, match=r"spark-output\.tsv:3: count 'six' is not a whole number"):
        list(iter_word_counts(src))
    with pytest.raises(WorkbenchError, match="word-count table"):
        list(iter_text(src))


def test_wordcount_gzip_counts_extension(write, tmp_path):
    src = open_source(write(tmp_path / "w.counts.gz", "a\t1\r\nb\t2\r\n"))
    assert (src.kind, src.compressed) == ("wordcounts", True)
    assert list(iter_word_counts(src)) == [("a", 1), ("b", 2)]


def test_markup_and_unknown_endings_are_read_as_text_and_binary_is_refused_for_what_it_is(write, tmp_path):
    path = write(tmp_path / "notes.md", "# hello\n")
    assert open_source(path).kind == "text"
    assert "".join(iter_text(open_source(path, kind="text"))) == "# hello\n"
    assert "".join(iter_text(open_source(write(tmp_path / "LICENSE.weird", "MIT\n")))) == "MIT\n"
    with pytest.raises(WorkbenchError, match=r"a\.docx: looks binary, not text \(a zip archive.*: unpack it"):
        open_source(write(tmp_path / "a.docx", b"PK\x03\x04\x14\x00\x00\x00"))
    with pytest.raises(WorkbenchError, match="unknown kind 'xml'"):
        open_source(path, kind="xml")
