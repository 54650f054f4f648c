"""Count a corpus's pre-tokens with PySpark into a table that ``workbench train`` reads.

The same per-partition function as ``workbench count`` and the Dask example
(:func:`workbench.corpus.counts_table.count_partition`); partitions are added on the driver in
partition order, so the rows come in order of first appearance like the local table's.

Run (not part of the test suite: it needs a JVM and ``pip install pyspark``, plus the workbench
installed on every executor, e.g. ``--py-files`` or a cluster image)::

    spark-submit examples/spark_count.py "hdfs:///corpus/*.txt" --out corpus.wordcounts.tsv --pretokenizer cl100k

``wholeTextFiles`` keeps line breaks exactly (``textFile`` drops them, which would change the
pre-tokens that hold a newline); each file is then cut into lines by ``count_partition`` itself.
For files too large for one executor's memory, use ``textFile`` and ``map(lambda l: l + "\\n")``
— exact except for a last line that had no line break.
"""

from __future__ import annotations

import argparse

from workbench.corpus.counts_table import (
    count_partition,
    counts_settings,
    merge_counts,
    write_counts_table,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", help="a path or glob Spark understands")
    parser.add_argument("--out", required=True, help="local path of the table (written on the driver)")
    parser.add_argument("--pretokenizer", default="gpt2")
    parser.add_argument("--normalize", default="none")
    parser.add_argument("--sequences", default="lines", choices=["lines", "documents"])
    args = parser.parse_args()
    settings = counts_settings(args.pretokenizer, args.normalize, args.sequences)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("workbench-count").getOrCreate()
    texts = spark.sparkContext.wholeTextFiles(args.files).sortByKey().values()  # one text per file, in path order
    per_partition = texts.mapPartitions(lambda part: [count_partition(part, settings)])
    counts = merge_counts(per_partition.collect())  # collect() keeps partition order
    write_counts_table(args.out, counts, settings)
    spark.stop()
    print(f"wrote {args.out}: {len(counts)} distinct pre-tokens")


if __name__ == "__main__":
    main()
