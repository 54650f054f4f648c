"""Count a corpus's pre-tokens on a Dask cluster into a table that ``workbench train`` reads.

Each partition of a ``dask.bag`` of lines is counted by the same function ``workbench count`` uses
(:func:`workbench.corpus.counts_table.count_partition`), the partition tables are added in corpus
order, and the result is written as a counts table with its settings header — byte for byte the
table ``workbench count FILES --out T`` writes for the same files and settings (tested in
``tests/test_dask_count.py``).

Run (``pip install "tokenizer-workbench[distributed]"``)::

    python examples/dask_count.py corpus/*.txt --out corpus.wordcounts.tsv --pretokenizer cl100k
    python examples/dask_count.py ... --scheduler tcp://host:8786     # an existing cluster
    workbench train corpus.wordcounts.tsv --project p.tokproj --vocab-size 32000 --pretokenizer cl100k

Plain ``.txt`` files in lines mode (the default) are read as lines, in blocks (``--blocksize``), so
one large file is spread over all workers. Every other file the workbench reads — ``.jsonl.zst``
and ``.json.gz`` shards, CSV, Parquet, Arrow, compressed text — and every file in documents mode is
one partition, read on the worker by the workbench's own reader with its default loader options
(JSONL field ``text``, …), streamed ~1 MB at a time, so a worker holds one shard's count table,
not its text (:func:`count_file`).

Memory: ``--memory-limit`` is each worker's bound on a local cluster (Dask pauses a worker at 80 %
of it and restarts it at 95 %). The largest table is the sum at the end of the reduction: one
worker holds it, and the client receives it — so the bound must hold the corpus's whole table
(``bench/bench_dask_scale.py`` measures it). Left out: a reduction partitioned by pre-token (each
worker one range, written as parts) that would bound that too.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

from workbench.core.count import count_batches
from workbench.corpus.counts import source_batches
from workbench.corpus.counts_table import (
    count_partition,
    counts_settings,
    merge_counts,
    write_counts_table,
)


def count_file(path: str, settings: Mapping) -> Counter:
    """One file's pre-token counts, read by the workbench's reader (any kind it reads) and streamed."""
    from workbench.corpus import open_source

    settings = counts_settings(settings["pretokenizer"], settings.get("normalizer") or (),
                               settings.get("sequences", "lines"))
    batches = source_batches(open_source(path), pretokenizer=settings["pretokenizer"],
                             sequences=settings["sequences"])
    return Counter(count_batches(batches, pretokenizer=settings["pretokenizer"],
                                 normalizer=tuple(settings["normalizer"])))


def _is_plain_text(path: str) -> bool:
    from workbench.corpus.source import detect_kind, location

    kind, compressed = detect_kind(location.corpus_path(path))
    return kind == "text" and not compressed


def dask_counts(paths: Sequence[str | Path], settings: Mapping, *, blocksize: str | int = "4MiB"):
    """The ``Counter`` of the files' pre-tokens, computed on the current Dask client (or scheduler)."""
    import dask.bag as db

    paths = [str(p) for p in paths]
    if not all(map(_is_plain_text, paths)):
        # One partition per file, each counted where it is read; added in file (= corpus) order.
        files = db.from_sequence(paths, npartitions=len(paths))
        return files.reduction(lambda part: merge_counts(count_file(p, settings) for p in part),
                               merge_counts, split_every=8).compute()
    if settings["sequences"] == "lines":
        # read_text keeps each line's "\n" and cuts blocks only at line ends; "utf-8-sig" drops a
        # BOM at the start of a file, as the workbench's reader does.
        bag = db.read_text(paths, blocksize=blocksize, encoding="utf-8-sig")
    else:
        bag = db.from_sequence(paths, npartitions=len(paths)).map(
            lambda p: Path(p).read_text(encoding="utf-8-sig"))
    # perpartition gives one Counter per partition; aggregate adds them in partition (= corpus)
    # order, so the table's rows come in order of first appearance, as the local count's do.
    return bag.reduction(partial(count_partition, settings=settings), merge_counts, split_every=8).compute()


def main(argv: Sequence[str] | None = None, client=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--pretokenizer", default="gpt2")
    parser.add_argument("--normalize", default="none")
    parser.add_argument("--sequences", default="lines", choices=["lines", "documents"])
    parser.add_argument("--blocksize", default="4MiB")
    parser.add_argument("--scheduler", help="address of a running scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the local cluster (default 2)")
    parser.add_argument("--memory-limit", default="auto",
                        help="each local worker's memory bound, e.g. 4GB (default: Dask's, RAM ÷ workers)")
    args = parser.parse_args(argv)
    settings = counts_settings(args.pretokenizer, args.normalize, args.sequences)
    if client is None:
        from distributed import Client, LocalCluster

        cluster = None if args.scheduler else LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                                                 processes=True, memory_limit=args.memory_limit)
        with Client(args.scheduler or cluster):
            counts = dask_counts(args.files, settings, blocksize=args.blocksize)
        if cluster is not None:
            cluster.close()
    else:
        counts = dask_counts(args.files, settings, blocksize=args.blocksize)
    return write_counts_table(args.out, counts, settings)


if __name__ == "__main__":
    print(main())
