"""Several shards counted a file per process (each worker reads, decodes and counts its own files)
give the table one reader feeding the workers gives — row order included — for ``.jsonl.zst``
shards made by ``zstandard`` and plain text; a bad record in a later shard fails with the same
line; a bound too small for a file's table keeps the one-reader path."""

from __future__ import annotations

import json

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.corpus import counts as counts_module
from workbench.corpus.counts import _file_per_process, count_sources
from workbench.errors import WorkbenchError
from workbench.tasks.train import open_sources, resolve_files

zstandard = pytest.importorskip("zstandard")


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    require_corpora()
    folder = tmp_path_factory.mktemp("shards")
    out = []
    for i, src in enumerate(CORPUS_FILES[:4]):
        lines = src.read_text(encoding="utf-8").splitlines()[:800]
        if i == 3:
            path = folder / f"shard-{i}.txt"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        else:
            data = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in lines if t.strip())
            path = folder / f"shard-{i}.jsonl.zst"
            path.write_bytes(zstandard.ZstdCompressor(level=3).compress(data.encode("utf-8")))
        out.append(path)
    return out


CALLS: list[int] = []
REAL = counts_module.count_files_in_processes


def _count(paths, *, workers, per_file: bool, monkeypatch, memory_limit=None):
    """count_sources on small files as on large ones (two processes); CALLS records each per-file count."""
    monkeypatch.setattr(counts_module, "PARALLEL_COUNT_BYTES", 0)
    monkeypatch.setattr(counts_module, "FILE_PER_PROCESS_BYTES", (256 << 20) if per_file else -1)
    def spy(srcs, **kwargs):
        CALLS.append(len(srcs))
        return REAL(srcs, **kwargs)

    monkeypatch.setattr(counts_module, "count_files_in_processes", spy)
    srcs = open_sources(resolve_files([str(p) for p in paths]))
    return count_sources(srcs, pretokenizer="gpt2", workers=workers, memory_limit=memory_limit)


def test_file_per_process_equals_one_reader(shards, monkeypatch):
    srcs = open_sources(resolve_files([str(p) for p in shards]))
    assert _file_per_process(srcs, 2, 0) and not _file_per_process(srcs[:1], 2, 0)
    assert not _file_per_process(srcs, 1, 0)
    CALLS.clear()
    per_file = _count(shards, workers=2, per_file=True, monkeypatch=monkeypatch)
    assert CALLS == [len(shards)]
    one_reader = _count(shards, workers=2, per_file=False, monkeypatch=monkeypatch)
    serial = _count(shards, workers=1, per_file=False, monkeypatch=monkeypatch)
    assert CALLS == [len(shards)]
    assert len(per_file) > 5000
    assert list(per_file.items()) == list(one_reader.items()) == list(serial.items())


def test_a_tight_bound_keeps_one_reader_and_spills_the_same_table(shards, monkeypatch):
    srcs = open_sources(resolve_files([str(p) for p in shards]))
    assert not _file_per_process(srcs, 2, 100)  # a file's table could be far beyond 100 entries
    CALLS.clear()
    bounded = _count(shards, workers=2, per_file=True, monkeypatch=monkeypatch, memory_limit=200_000)
    assert CALLS == []
    serial = _count(shards, workers=1, per_file=False, monkeypatch=monkeypatch)
    assert list(bounded.items()) == list(serial.items())


def test_a_bad_record_in_a_later_shard_fails_with_its_line(shards, tmp_path, monkeypatch):
    bad = tmp_path / "shard-9.jsonl.zst"
    bad.write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "fine"}\n{"text": oops}\n'))
    with pytest.raises(WorkbenchError) as one_reader:
        _count([*shards[:2], bad], workers=2, per_file=False, monkeypatch=monkeypatch)
    CALLS.clear()
    with pytest.raises(WorkbenchError) as per_file:
        _count([*shards[:2], bad], workers=2, per_file=True, monkeypatch=monkeypatch)
    assert CALLS == [3]
    assert str(per_file.value) == str(one_reader.value)
    assert "shard-9.jsonl.zst:2" in str(per_file.value)


def test_a_bounded_count_a_file_per_process_flushes_each_row_once(shards):
    """``count_files_in_processes`` under a bound hands its table to ``flush`` and starts a new one:
    the flushed tables and what is left add up to the serial count (a sum not reset after a flush
    counted the early files twice)."""
    from collections import Counter

    from workbench.corpus.counts import DEFAULT_SEQUENCES, count_files_in_processes

    srcs = open_sources(resolve_files([str(p) for p in shards]))
    flushed: list[dict[str, int]] = []
    rest = count_files_in_processes(srcs, pretokenizer="gpt2", normalizer=(), sequences=DEFAULT_SEQUENCES,
                                    workers=2, flush_at=1000, flush=flushed.append)
    assert len(flushed) >= 2
    total: Counter = Counter()
    for table in [*flushed, rest]:
        total.update(table)
    assert total == Counter(count_sources(srcs, pretokenizer="gpt2", workers=1))


def test_skipped_records_are_reported_when_several_shards_are_counted_in_processes(shards, tmp_path,
                                                                                   monkeypatch):
    """Under ``on_bad_record="skip"`` the readers log what they skip in the source object: a file
    counted in a worker process would log it there and the run would report nothing skipped. So
    such sources keep the one-reader path, and the skip is reported as in a serial count."""
    bad = tmp_path / "shard-9.jsonl.zst"
    bad.write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "fine"}\n{"text": oops}\n'))
    monkeypatch.setattr(counts_module, "PARALLEL_COUNT_BYTES", 0)
    srcs = [s.with_policy("skip") for s in open_sources(resolve_files([str(p) for p in [*shards[:2], bad]]))]
    counts = count_sources(srcs, pretokenizer="gpt2", workers=2)
    assert counts["fine"] >= 1
    assert srcs[-1].skipped.count == 1 and "shard-9.jsonl.zst:2" in srcs[-1].skipped.first[0]
