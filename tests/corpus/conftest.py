"""Shared helpers for the corpus tests: real corpora (read-only) and small files written in tmp_path."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from shared_corpora import CORPORA, require_corpora


def _write(path: Path, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` (gzip-compressed when the name ends in .gz) and return the path."""
    raw = data.encode(encoding) if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    return path


@pytest.fixture
def corpora() -> Path:
    """The shared corpora folder (fails under CI=true when it is missing, see tests/conftest.py)."""
    require_corpora()
    return CORPORA


@pytest.fixture
def write():
    """``write(path, data, encoding="utf-8")``: create a test file (gzip when the name ends in .gz)."""
    return _write
