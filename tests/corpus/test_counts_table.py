"""Counts tables: every pre-token round-trips, settings are recorded and enforced, tables add exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.corpus import iter_word_counts, open_source
from workbench.corpus.counts import count_sources
from workbench.corpus.counts_table import (
    check_counts_settings,
    counts_settings,
    merge_counts_tables,
    read_counts_table,
    write_counts_table,
)
from workbench.errors import WorkbenchError

HOSTILE = ["\t", "\n", "\r\n", "\\", "\\n", "\\t", "a\\", "\\\\x41", " lead", "trail ", "#", "# workbench-counts v1 {}",
           "\u2028", "\u2029", "\x85", "\x00", "\x1b[0m", "\x7f", "\ud800", "\udfff", "😀", "\ufeff", "é", "e\u0301",
           "word\t12", "1\t2\t3"]


def roundtrip(tmp_path, counts: dict[str, int]) -> dict[str, int]:
    path = write_counts_table(tmp_path / "t.wordcounts.tsv", counts, counts_settings("cl100k", "nfc", "lines"))
    settings_read, back = read_counts_table(path)
    assert settings_read is not None and settings_read["pretokenizer"] == "cl100k"
    return back


def test_hostile_pre_tokens_round_trip_in_order(tmp_path):
    counts = {word: index + 1 for index, word in enumerate(HOSTILE)}
    back = roundtrip(tmp_path, counts)
    assert list(back.items()) == list(counts.items())
    raw = (tmp_path / "t.wordcounts.tsv").read_bytes()
    assert raw.count(b"\n") == len(HOSTILE) + 1  # one line per word: no break leaked into a row
    assert all(line.count(b"\t") == 1 for line in raw.splitlines()[1:])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), st.integers(1, 10**12), min_size=1, max_size=30))
def test_any_unicode_round_trips(tmp_path_factory, counts):
    assert list(roundtrip(tmp_path_factory.mktemp("h"), counts).items()) == list(counts.items())


def test_plain_spark_and_duckdb_tables_still_read(tmp_path):
    plain = tmp_path / "part-0000.wordcounts.tsv"
    plain.write_text("word\tcount\nthe\t10\n the\t7\na\\b\t2\n", encoding="utf-8")
    assert list(iter_word_counts(open_source(plain))) == [("the", 10), (" the", 7), ("a\\b", 2)]
    settings_read, counts = read_counts_table(plain)
    assert settings_read is None and counts == {"the": 10, " the": 7, "a\\b": 2}


def test_a_truncated_table_is_refused(tmp_path):
    path = write_counts_table(tmp_path / "t.wordcounts.tsv", {"a": 1, "b": 2, "c": 3}, counts_settings())
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"c\t")])
    with pytest.raises(WorkbenchError, match="truncated"):
        read_counts_table(path)


def _text_files(tmp_path, corpora, lines=400):
    files = []
    for path in sorted(corpora.glob("*.txt"))[:3]:
        out = tmp_path / path.name
        out.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]), encoding="utf-8")
        files.append(out)
    return files


@pytest.mark.parametrize("sequences", ["lines", "documents"])
def test_merged_tables_equal_counting_the_concatenation(tmp_path, corpora, sequences):
    files = _text_files(tmp_path, corpora)
    settings_used = counts_settings("cl100k", "nfkc", sequences)
    tables = []
    for index, path in enumerate(files):
        counts = count_sources([open_source(path)], pretokenizer="cl100k", normalizer=("nfkc",), sequences=sequences)
        tables.append(write_counts_table(tmp_path / f"{index}.wordcounts.tsv", counts, settings_used))
    merged_settings, merged = merge_counts_tables(tables, tmp_path / "all.wordcounts.tsv")
    whole = count_sources([open_source(p) for p in files], pretokenizer="cl100k", normalizer=("nfkc",),
                          sequences=sequences)
    assert list(merged.items()) == list(whole.items()) and len(whole) > 1000
    assert merged_settings == settings_used
    write_counts_table(tmp_path / "whole.wordcounts.tsv", whole, settings_used)
    assert (tmp_path / "all.wordcounts.tsv").read_bytes() == (tmp_path / "whole.wordcounts.tsv").read_bytes()


def test_merge_refuses_different_settings_and_plain_tables(tmp_path):
    a = write_counts_table(tmp_path / "a.wordcounts.tsv", {"x": 1}, counts_settings("gpt2"))
    b = write_counts_table(tmp_path / "b.wordcounts.tsv", {"x": 1}, counts_settings("gpt2", "lower"))
    with pytest.raises(WorkbenchError, match="normalizer lower.*same settings"):
        merge_counts_tables([a, b], tmp_path / "c.wordcounts.tsv")
    plain = tmp_path / "p.wordcounts.tsv"
    plain.write_text("x\t1\n", encoding="utf-8")
    with pytest.raises(WorkbenchError, match="does not say how it was counted"):
        merge_counts_tables([a, plain], tmp_path / "c.wordcounts.tsv")
    assert not (tmp_path / "c.wordcounts.tsv").exists()


def test_training_refuses_a_table_with_other_settings(tmp_path):
    table = write_counts_table(tmp_path / "a.wordcounts.tsv", {" x": 2, "y": 1}, counts_settings("cl100k"))
    src = open_source(table)
    assert count_sources([src], pretokenizer="cl100k") == {" x": 2, "y": 1}
    with pytest.raises(WorkbenchError, match="counted with pretokenizer cl100k, but this run uses gpt2"):
        count_sources([src], pretokenizer="gpt2")
    with pytest.raises(WorkbenchError, match="sequences lines, but this run uses documents"):
        count_sources([src], pretokenizer="cl100k", sequences="documents")
    with pytest.raises(WorkbenchError, match="--normalize nfc"):
        check_counts_settings(counts_settings("cl100k"), "cl100k", ("nfc",), "lines", where=str(table))
