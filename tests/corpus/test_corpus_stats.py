"""Statistics checked against hand-computed values and against the real multilingual corpora."""

from __future__ import annotations

import pytest

from workbench.corpus import corpus_stats, count_scripts, file_stats, open_source

SMALL = "the cat sat\nthe dog\n\nЖук 42!\n"


def test_small_text_hand_counted(write, tmp_path):
    stats = file_stats(open_source(write(tmp_path / "s.txt", SMALL)), preview_lines=2)
    # 11+1 + 7+1 + 0+1 + 7+1 characters; Ж, у, к take two UTF-8 bytes each.
    assert (stats.chars, stats.bytes, stats.lines) == (29, 32, 4)
    # the, cat, sat, dog, Жук, 42!
    assert stats.distinct_pretokens == 6
    assert stats.scripts == {"Latin": 15, "Cyrillic": 3, "Common": 3}
    assert list(stats.scripts) == ["Latin", "Cyrillic", "Common"]
    assert stats.preview == ["the cat sat", "the dog"]
    assert stats.records is None and stats.complete
    assert stats.dominant_script == "Latin"


def test_custom_splitter_counts_its_pieces(write, tmp_path):
    stats = file_stats(open_source(write(tmp_path / "s.txt", SMALL)), split=list)
    # t h e ␠ c a s \n d o g Ж у к 4 2 !
    assert stats.distinct_pretokens == 17


def test_last_line_without_newline_counts(write, tmp_path):
    stats = file_stats(open_source(write(tmp_path / "s.txt", "a b\nc")))
    assert (stats.lines, stats.chars, stats.distinct_pretokens) == (2, 5, 3)


def test_jsonl_counts_records_and_lines(write, tmp_path):
    body = '{"text": "one"}\n{"text": "two\\nlines"}\n\n{"text": "three"}\n'
    stats = file_stats(open_source(write(tmp_path / "d.jsonl", body)))
    assert (stats.records, stats.lines) == (3, 4)
    assert stats.preview == ["one", "two", "lines", "three"]


def test_word_count_table_weighted_by_count(write, tmp_path):
    stats = file_stats(open_source(write(tmp_path / "w.counts", "low\t5\nlower\t2\nжук\t1\n")))
    assert (stats.records, stats.lines) == (3, 3)
    assert stats.chars == 3 * 5 + 5 * 2 + 3
    assert stats.bytes == 3 * 5 + 5 * 2 + 6
    assert stats.scripts == {"Latin": 25, "Cyrillic": 3}
    assert stats.preview == ["low\t5", "lower\t2", "жук\t1"]


def test_stop_gives_partial_stats(write, tmp_path):
    src = open_source(write(tmp_path / "big.txt", "word another\n" * 200_000))
    calls = []
    stats = file_stats(src, should_stop=lambda: bool(calls), progress=lambda d, t: calls.append(d))
    assert not stats.complete
    assert 0 < stats.chars < 13 * 200_000


@pytest.mark.parametrize(
    ("text", "script"),
    [("Ελληνικά", "Greek"), ("العربية", "Arabic"), ("한국어", "Hangul"), ("ひらがなカタカナ", "Kana"),
     ("हिन्दी", "Devanagari"), ("漢字", "Han"), ("ⴰⵣⵓⵍ", "Other"), ("\x1b[", None)],
)
def test_script_names(text, script):
    counts = count_scripts(text)
    if script is None:
        assert counts == {"Other": 1, "Common": 1}
    else:
        assert max(counts, key=counts.get) == script


def test_real_russian_and_chinese_scripts(corpora):
    per_file, total = corpus_stats([open_source(corpora / "ru_fortunes.txt"), open_source(corpora / "zh_fortunes.txt")])
    ru, zh = per_file
    assert next(iter(ru.scripts)) == "Cyrillic" and ru.scripts["Cyrillic"] > 0.8 * sum(ru.scripts.values())
    # Box drawing and punctuation (Common) outnumber Han in the Chinese file; Han is still its script.
    assert zh.dominant_script == "Han" and zh.scripts["Han"] > 1.5 * zh.scripts["Latin"]
    assert zh.scripts["Other"] >= 32_000  # the ANSI escape characters
    assert total.chars == ru.chars + zh.chars and total.bytes == ru.bytes + zh.bytes
    assert max(ru.distinct_pretokens, zh.distinct_pretokens) < total.distinct_pretokens
    assert total.distinct_pretokens < ru.distinct_pretokens + zh.distinct_pretokens
    assert ru.bytes == (corpora / "ru_fortunes.txt").stat().st_size
