"""Bounded counting: with a bound small enough that partial tables really spill to disk, the counts
— row order included — equal counting in memory, for `workbench count`, the count cache and training."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.cli import run_cli
from workbench.core.count import count_batches, split_lines
from workbench.corpus import spill
from workbench.corpus.count_cache import CountCache
from workbench.corpus.counts import count_sources
from workbench.corpus.spill import SpillingCounts, parse_size
from workbench.tasks.train import open_sources, resolve_files


@pytest.fixture(scope="module")
def slices(tmp_path_factory) -> list[Path]:
    """Slices of three shared corpora (German, Chinese, Russian): ~120 KB in all."""
    require_corpora()
    folder = tmp_path_factory.mktemp("spill")
    out = []
    for name, size in (("de", 50_000), ("zh", 30_000), ("ru", 40_000)):
        src = next(p for p in CORPUS_FILES if p.name.startswith(name))
        data = src.read_bytes()[:size]
        path = folder / f"{name}.txt"
        path.write_bytes(data[: data.rfind(b"\n") + 1])
        out.append(path)
    return out


def _sources(paths):
    return open_sources(resolve_files([str(p) for p in paths]))


def test_spilled_count_equals_the_count_in_memory(slices, monkeypatch):
    monkeypatch.setattr(spill, "MAX_RUNS", 4)  # compaction of runs and of first-appearance chunks too
    whole = count_sources(_sources(slices), pretokenizer="cl100k")
    with SpillingCounts(20_000) as into:
        assert into.cap == 50
        count_sources(_sources(slices), pretokenizer="cl100k", into=into)
        assert into.spilled
        assert list(into.rows()) == list(whole.items())  # same rows, same order of first appearance
        assert (into.distinct, into.tokens) == (len(whole), sum(whole.values()))
    bounded = count_sources(_sources(slices), pretokenizer="cl100k", memory_limit=20_000)
    assert list(bounded.items()) == list(whole.items())


def test_spilling_parallel_batches_keeps_first_appearance(slices):
    lines = split_lines(slices[0].read_text(encoding="utf-8"))
    batches = [lines[i:i + 200] for i in range(0, len(lines), 200)]
    whole = count_batches(batches, pretokenizer="gpt2", workers=2)
    with SpillingCounts(40_000) as acc:
        rest = count_batches(batches, pretokenizer="gpt2", workers=2, flush_at=acc.cap, flush=acc.add)
        acc.add(rest)
        assert acc.spilled and list(acc.result().items()) == list(whole.items())


def test_count_command_with_a_tiny_bound_writes_the_same_table(slices, tmp_path, capsys):
    import tempfile

    free, bound = tmp_path / "free.wordcounts.tsv", tmp_path / "bound.wordcounts.tsv"
    files = [str(p) for p in slices]
    spills_before = set(Path(tempfile.gettempdir()).glob("workbench-spill-*"))
    assert run_cli(["count", *files, "--out", str(free)]) == 0
    assert run_cli(["count", *files, "--out", str(bound), "--max-memory", "30K", "--json"]) == 0
    assert free.read_bytes() == bound.read_bytes()
    assert set(Path(tempfile.gettempdir()).glob("workbench-spill-*")) <= spills_before  # removed
    assert run_cli(["count", *files, "--out", str(bound), "--max-memory", "lots"]) == 2
    assert "--max-memory 'lots': give a size such as 512M" in capsys.readouterr().err


def test_bounded_count_with_cache_caches_only_whole_tables(slices, tmp_path):
    cache = CountCache(tmp_path / "cache")
    whole = count_sources(_sources(slices), pretokenizer="gpt2")
    first = count_sources(_sources(slices), pretokenizer="gpt2", cache=cache, memory_limit=20_000)
    again = count_sources(_sources(slices), pretokenizer="gpt2", cache=cache)
    assert list(first.items()) == list(whole.items()) == list(again.items())


def test_training_with_a_bounded_count_learns_the_same_merges(slices, tmp_path):
    from workbench.store import ProjectStore
    from workbench.tasks.spec import RunSpec
    from workbench.tasks.train import train_run

    spec = RunSpec(files=resolve_files([str(p) for p in slices]), vocab_size=400, project=str(tmp_path / "p.tokproj"))
    a, _ = train_run(spec, count_cache=False)
    b, _ = train_run(spec, count_cache=False, count_memory=20_000)
    with ProjectStore.open(tmp_path / "p.tokproj", readonly=True) as store:
        assert store.load_tokenizer(a).merges == store.load_tokenizer(b).merges
        assert store.run(b).settings["distinct_pretokens"] == store.run(a).settings["distinct_pretokens"]


@pytest.mark.parametrize(("text", "size"), [("512M", 512 << 20), ("2g", 2 << 30), ("1.5GB", int(1.5 * 2**30)),
                                            ("100000", 100000), ("64KiB", 64 << 10)])
def test_sizes(text, size):
    assert parse_size(text) == size
