"""The per-file count cache: a hit gives the same table, and any change that could change it is a miss."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from workbench.corpus import counts, open_source
from workbench.corpus.count_cache import CountCache, default_cache_dir
from workbench.corpus.counts import count_sources

JSONL = '{"text": "alpha beta", "title": "one"}\n{"text": "gamma\\ndelta", "title": "two two"}\n'


@pytest.fixture(autouse=True)
def cache_small_files(monkeypatch):
    """These files are tiny; in use, files under MIN_CACHED_BYTES are counted, not cached."""
    monkeypatch.setattr(counts, "MIN_CACHED_BYTES", 0)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("Hello world, hello cache.\nSecond   line\n\n\nthird.\n", encoding="utf-8")
    return path


def counted(cache, src, **settings):
    options = {"pretokenizer": "gpt2", "normalizer": (), "sequences": "lines", **settings}
    return count_sources([src], cache=cache, **options)


def test_miss_then_hit_gives_the_same_table(tmp_path, corpus):
    cache = CountCache(tmp_path / "cache")
    src = open_source(corpus)
    first = counted(cache, src)
    assert (cache.hits, cache.misses) == (0, 1) and len(list(cache.folder.iterdir())) == 1
    second = counted(cache, src)
    assert (cache.hits, cache.misses) == (1, 1)
    assert list(second.items()) == list(first.items()) == list(counted(None, src).items())


@pytest.mark.parametrize("change", [{"pretokenizer": "cl100k"}, {"normalizer": ("lower",)},
                                    {"sequences": "documents"}])
def test_any_other_setting_is_a_miss(tmp_path, corpus, change):
    cache = CountCache(tmp_path / "cache")
    src = open_source(corpus)
    counted(cache, src)
    changed = counted(cache, src, **change)
    assert (cache.hits, cache.misses) == (0, 2)
    assert changed == counted(None, src, **change) != counted(None, src)
    assert counted(cache, src, **change) == changed and cache.hits == 1


def test_other_reader_options_are_a_miss(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(JSONL, encoding="utf-8")
    cache = CountCache(tmp_path / "cache")
    by_text = counted(cache, open_source(path, field="text"))
    by_title = counted(cache, open_source(path, field="title"))
    as_text = counted(cache, open_source(path, kind="text"))
    assert cache.misses == 3 and cache.hits == 0
    assert "alpha" in by_text and " two" in by_title and '{"' in as_text


def test_changed_content_is_a_miss(tmp_path, corpus):
    cache = CountCache(tmp_path / "cache")
    before = counted(cache, open_source(corpus))
    stat = corpus.stat()
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("world", "WORLD"), encoding="utf-8")
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime: only the bytes differ
    after = counted(cache, open_source(corpus))
    assert cache.misses == 2 and " WORLD" in after and " WORLD" not in before


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path, corpus):
    cache = CountCache(tmp_path / "cache")
    src = open_source(corpus)
    good = counted(cache, src)
    (entry,) = cache.folder.iterdir()
    entry.write_bytes(entry.read_bytes()[:-9])  # truncated mid-row
    assert counted(cache, src) == good and cache.misses == 2
    assert counted(cache, src) == good and cache.hits == 1  # the rewritten entry reads again
    entry.write_bytes(b"\xff\xfe garbage")
    assert counted(cache, src) == good and cache.misses == 3


def test_the_folder_stays_within_its_size_bound(tmp_path, corpus):
    cache = CountCache(tmp_path / "cache")
    src = open_source(corpus)
    counted(cache, src)
    one_entry = sum(p.stat().st_size for p in cache.folder.iterdir())
    small = CountCache(tmp_path / "cache", max_bytes=int(one_entry * 1.5))
    first = next(cache.folder.iterdir())
    os.utime(first, (1, 1))  # long unused
    counted(small, src, pretokenizer="cl100k")
    remaining = list(small.folder.iterdir())
    assert len(remaining) == 1 and first not in remaining


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG applies to Linux and other Unixes")
def test_default_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "tokenizer-workbench" / "counts"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # the spec says: ignore a relative value
    assert default_cache_dir() == Path.home() / ".cache" / "tokenizer-workbench" / "counts"
