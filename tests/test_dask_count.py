"""The Dask example on a real local cluster (2 worker processes) gives the table ``workbench count``
writes, byte for byte, and training from that table gives the merges training from the text gives."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.cli import run_cli
from workbench.core.bpe import TrainConfig, train
from workbench.corpus import open_source
from workbench.corpus.counts import count_sources

distributed = pytest.importorskip("distributed")
pytest.importorskip("dask.bag")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dask_count.py"


def load_example():
    spec = importlib.util.spec_from_file_location("dask_count_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       local_directory=str(tmp_path_factory.mktemp("dask")))
    with distributed.Client(cluster) as dask_client:
        yield dask_client
    cluster.close()


def test_dask_table_equals_workbench_count_and_trains_the_same(tmp_path, client):
    require_corpora()
    files = []
    for path in CORPUS_FILES:
        out = tmp_path / path.name
        out.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:2000]), encoding="utf-8")
        files.append(out)
    example = load_example()
    args = [*map(str, files), "--pretokenizer", "cl100k", "--normalize", "nfc"]
    dask_table = example.main([*args, "--out", str(tmp_path / "dask.wordcounts.tsv"), "--blocksize", "16kB"],
                              client=client)
    assert len(client.run(lambda: 1)) == 2  # two worker processes
    import dask.bag as db

    assert db.read_text([str(f) for f in files], blocksize="16kB").npartitions > 3 * len(files)  # files were split
    assert run_cli(["count", *args, "--out", str(tmp_path / "local.wordcounts.tsv")]) == 0
    assert dask_table.read_bytes() == (tmp_path / "local.wordcounts.tsv").read_bytes()

    config = TrainConfig(units="bytes", merges=300, pretokenizer="cl100k", normalizer=("nfc",))
    from_table = count_sources([open_source(dask_table)], pretokenizer="cl100k", normalizer=("nfc",))
    from_text = count_sources([open_source(p) for p in files], pretokenizer="cl100k", normalizer=("nfc",))
    assert list(from_table.items()) == list(from_text.items())
    table_tok, _ = train(from_table, config)
    text_tok, _ = train(from_text, config)
    assert len(table_tok.merges) == 300 and table_tok.merges == text_tok.merges


def test_dask_counts_jsonl_zst_shards_as_workbench_count_does(tmp_path, client):
    """Shards as data engineers keep them (``.jsonl.zst``, one ``{"text": …}`` per record, made by
    ``zstandard``) and a ``.json.gz`` one: one partition per file, read by the workbench's reader on
    the worker; the table is byte for byte ``workbench count``'s."""
    import gzip
    import json

    zstandard = pytest.importorskip("zstandard")
    require_corpora()
    files = []
    for i, path in enumerate(CORPUS_FILES[:3]):
        lines = path.read_text(encoding="utf-8").splitlines()[:1500]
        # records of several lines too: lines mode cuts a record into its lines
        docs = ["\n".join(lines[j:j + 3]) for j in range(0, len(lines), 3)]
        data = "".join(json.dumps({"id": j, "text": d}, ensure_ascii=False) + "\n" for j, d in enumerate(docs))
        if i == 2:
            out = tmp_path / f"shard-{i}.json.gz"
            out.write_bytes(gzip.compress(data.encode("utf-8")))
        else:
            out = tmp_path / f"shard-{i}.jsonl.zst"
            out.write_bytes(zstandard.ZstdCompressor(level=3).compress(data.encode("utf-8")))
        files.append(out)
    example = load_example()
    for sequences in ("lines", "documents"):
        args = [*map(str, files), "--pretokenizer", "gpt2", "--sequences", sequences]
        dask_table = example.main([*args, "--out", str(tmp_path / f"dask-{sequences}.wordcounts.tsv")], client=client)
        local = tmp_path / f"local-{sequences}.wordcounts.tsv"
        assert run_cli(["count", *args, "--out", str(local)]) == 0
        assert dask_table.read_bytes() == local.read_bytes()
    assert b'"sequences": "documents"' in dask_table.read_bytes().split(b"\n", 1)[0]
