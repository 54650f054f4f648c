"""Fixtures for the store tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import write_run

from workbench.store import ProjectStore


@pytest.fixture
def project(tmp_path) -> Path:
    """A closed project with one finished 300-merge run, a corpus and a text."""
    path = tmp_path / "p.tokproj"
    with ProjectStore.open(path, create=True) as store:
        store.add_corpus("corpus.txt", size=10, mtime=1.5, fingerprint="fp", reader_options={})
        write_run(store, "base", 300)
        store.save_text("hello", "hello world")
    return path
