"""Fixtures for the Compare tests: an isolated metrics cache, the worked-example project, small
runs trained on slices of the shared corpora, and the real cl100k file as a tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from compare_helpers import WORKED, corpus_slice

from workbench.core.bpe import TrainConfig, train
from workbench.core.count import count_pretokens
from workbench.core.model import Tokenizer


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch) -> Path:
    """Every test (and every CLI child it starts) caches into its own folder, never the user's."""
    folder = tmp_path_factory.mktemp("metrics-cache")
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def worked_project(tmp_path_factory) -> tuple[Path, Path]:
    """PRODUCT.md worked example 1 trained through the CLI: (project, corpus file)."""
    from workbench.cli import run_cli

    root = tmp_path_factory.mktemp("worked")
    corpus = root / "worked.txt"
    corpus.write_text(WORKED, encoding="utf-8")
    project = root / "worked.tokproj"
    assert run_cli(["train", str(corpus), "--project", str(project), "--units", "chars",
                    "--pretokenizer", "whitespace", "--merges", "3", "--progress", "none"]) == 0
    return project, corpus




@pytest.fixture(scope="session")
def shakespeare_run(corpora) -> Tokenizer:
    """A byte-level GPT-2-style run with 400 merges on 60k characters of Shakespeare."""
    text = corpus_slice(corpora, "en_shakespeare.txt", 60_000)
    counts = count_pretokens([text], pretokenizer="gpt2")
    tok, _ = train(counts, TrainConfig(units="bytes", merges=400, pretokenizer="gpt2"))
    return tok


@pytest.fixture(scope="session")
def cl100k(cl100k_file) -> Tokenizer:
    from workbench.formats import load_tokenizer_file

    return load_tokenizer_file(cl100k_file)


@pytest.fixture
def panel(qtbot):
    """A Compare tab on its own (its job runner joined at the end)."""
    from workbench.ui.compare.panel import ComparePanel

    widget = ComparePanel()
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    yield widget
    widget.shutdown()
