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

Lines mode (the default) reads the files as lines, in blocks (``--blocksize``), so one large file
is spread over all workers; documents mode makes each file one partition (a file is one document).
Left out: JSONL/CSV/Parquet (read them with ``dask.bag.read_text(...).map(json.loads).pluck(field)``
or ``dask.dataframe`` and pass the texts to ``count_partition`` the same way).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

from workbench.corpus.counts_table import (
    count_partition,
    counts_settings,
    merge_counts,
    write_counts_table,
)


def dask_counts(paths: Sequence[str | Path], settings: Mapping, *, blocksize: str | int = "4MiB"):
    """The ``Counter`` of the files' pre-tokens, computed on the current Dask client (or scheduler)."""
    import dask.bag as db

    paths = [str(p) for p in paths]
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
    args = parser.parse_args(argv)
    settings = counts_settings(args.pretokenizer, args.normalize, args.sequences)
    if client is None:
        from distributed import Client, LocalCluster

        cluster = None if args.scheduler else LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
        with Client(args.scheduler or cluster):
            counts = dask_counts(args.files, settings, blocksize=args.blocksize)
        if cluster is not None:
            cluster.close()
    else:
        counts = dask_counts(args.files, settings, blocksize=args.blocksize)
    return write_counts_table(args.out, counts, settings)


if __name__ == "__main__":
    print(main())
