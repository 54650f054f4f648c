"""Corpus input: validate files, stream their text in line-aligned chunks, and describe them.

Plain Python (stdlib + ``regex`` + ``zstandard``; ``pyarrow`` only for Parquet and Arrow, ``fsspec`` and its
backends only for ``s3://``-style locations, each imported when needed), shared by
the CLI trainer and the window's corpus panel. Every problem a user can cause is raised as
:class:`workbench.errors.WorkbenchError` with the file (and line) and what to do.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Loaded now, not on first use: the function ``fingerprint`` shares its module's name, and importing
# the module ``workbench.corpus.fingerprint`` later would bind the package's ``fingerprint`` to it.
# (Every training run reads this module anyway: it fingerprints the corpus.)
from workbench.corpus.fingerprint import fingerprint, fingerprint_matches

if TYPE_CHECKING:
    from workbench.corpus.demo import demo_corpus_files
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

_SOURCES = {
    "demo_corpus_files": "demo",
    "Chunk": "readers", "iter_chunks": "readers", "iter_text": "readers", "iter_word_counts": "readers",
    "KINDS": "source", "SUPPORTED": "source", "CorpusSource": "source", "detect_kind": "source",
    "expand_paths": "source", "folder_files": "source", "open_source": "source",
    "SCRIPTS": "stats", "CorpusStats": "stats", "corpus_stats": "stats", "count_scripts": "stats",
    "file_stats": "stats",
}

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


def __getattr__(name: str) -> Any:
    """The names above load on first use (PEP 562), as :mod:`workbench.store`'s: a training run
    needs the readers, not the corpus statistics and their process pool (``concurrent.futures``,
    2 MB of the trainer's resident memory) nor the demo corpus."""
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
