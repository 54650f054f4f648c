"""tasks/compare: stops mid-stream without caching half a result, answers again from the cache
(keyed by file fingerprint + tokenizer), and counts a changed file afresh."""

from __future__ import annotations

import pytest
from compare_helpers import corpus_slice

from workbench.corpus import open_source
from workbench.tasks.compare import ResultCache, compare_corpus


def stop_after(calls: int):
    seen = [0]

    def should_stop() -> bool:
        seen[0] += 1
        return seen[0] > calls
    return should_stop


def rows(result):
    return [(m.tokenizer, m.label, m.tokens, m.counts.attention, m.used) for m in result.per_file + result.per_language]


def test_stop_cache_and_changed_files(corpora, shakespeare_run, tmp_path, isolated_cache):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(corpus_slice(corpora, "de_zitate.txt", 20_000), encoding="utf-8")
    b.write_text(corpus_slice(corpora, "ru_fortunes.txt", 20_000), encoding="utf-8")
    sources = [open_source(a), open_source(b)]
    toks = [("run", shakespeare_run)]
    cache = ResultCache(isolated_cache)
    # Three checks per file (statistics pass, token pass, after it): the 4th stops the second file.
    assert compare_corpus(toks, sources, cache=cache, should_stop=stop_after(3)) is None
    fresh = compare_corpus(toks, sources, cache=ResultCache(None))
    first = compare_corpus(toks, sources, cache=cache)
    assert rows(first) == rows(fresh)  # what the stopped run cached (file a) is whole
    again = compare_corpus(toks, sources, cache=cache)
    assert again.cache_hits == 4 and rows(again) == rows(first)  # 2 files × (text + tokens)
    b.write_text("ganz neuer Text\n", encoding="utf-8")
    changed = compare_corpus(toks, [open_source(a), open_source(b)], cache=cache)
    assert changed.cache_hits == 2
    assert changed.per_file[1].text.chars == len("ganz neuer Text\n")
    assert changed.per_file[0].tokens == first.per_file[0].tokens


def _write_table(folder, kind: str):
    """One file, two text fields: a long one and a short one."""
    long_texts = ["Wer reitet so spät durch Nacht und Wind? Es ist der Vater mit seinem Kind."] * 30
    short_texts = ["kurz"] * 30
    if kind == "jsonl":
        import json

        path = folder / "t.jsonl"
        path.write_text("".join(json.dumps({"body": a, "title": b}) + "\n" for a, b in zip(long_texts, short_texts)),
                        encoding="utf-8")
        return path, {"field": "body"}, {"field": "title"}
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["body", "title"])
    writer.writerows(zip(long_texts, short_texts))
    path = folder / "t.csv"
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path, {"column": "body"}, {"column": "title"}


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_the_cache_is_keyed_by_the_field_or_column_read(kind, shakespeare_run, tmp_path, isolated_cache):
    """Changing the JSONL field / CSV column read must not answer with the other one's numbers."""
    path, first_options, second_options = _write_table(tmp_path, kind)
    toks = [("run", shakespeare_run)]
    cache = ResultCache(isolated_cache)
    first = compare_corpus(toks, [open_source(path, **first_options)], cache=cache)
    second = compare_corpus(toks, [open_source(path, **second_options)], cache=cache)
    uncached = compare_corpus(toks, [open_source(path, **second_options)], cache=ResultCache(None))
    assert second.cache_hits == 0
    assert rows(second) == rows(uncached) and second.per_file[0].text.chars == uncached.per_file[0].text.chars
    assert second.per_file[0].tokens < first.per_file[0].tokens
