"""Corpus input: validate files, stream their text in line-aligned chunks, and describe them.

Plain Python (stdlib + ``regex`` + ``zstandard``; ``pyarrow`` only for Parquet and Arrow, ``fsspec`` and its
backends only for ``s3://``-style locations, each imported when needed), shared by
the CLI trainer and the window's corpus panel. Every problem a user can cause is raised as
:class:`workbench.errors.WorkbenchError` with the file (and line) and what to do.
"""

from workbench.corpus.demo import demo_corpus_files
from workbench.corpus.fingerprint import fingerprint, fingerprint_matches
from workbench.corpus.readers import Chunk, iter_chunks, iter_text, iter_word_counts
from workbench.corpus.source import (
    KINDS,
    SUPPORTED,
    CorpusSource,
    detect_kind,
    expand_paths,
    folder_files,
    open_source,
)
from workbench.corpus.stats import (
    SCRIPTS,
    CorpusStats,
    corpus_stats,
    count_scripts,
    file_stats,
)

__all__ = [
    "KINDS",
    "SCRIPTS",
    "SUPPORTED",
    "Chunk",
    "CorpusSource",
    "CorpusStats",
    "corpus_stats",
    "count_scripts",
    "demo_corpus_files",
    "detect_kind",
    "expand_paths",
    "file_stats",
    "fingerprint",
    "fingerprint_matches",
    "folder_files",
    "iter_chunks",
    "iter_text",
    "iter_word_counts",
    "open_source",
]
