"""Fixtures for the inspector tests: projects with real trained runs (and the real cl100k file
imported as a reference) in SQLite files under tmp, and an InspectPanel whose worker thread is
stopped at teardown."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workbench.core.bpe import TrainConfig
from workbench.store import ProjectStore
from workbench.tasks.train import train_into_project

CORPUS = (
    "The quick brown fox jumps over the lazy dog. The lower the lowest, the newer the newest.\n"
    "Tokenizers split text into pieces; byte pair encoding merges the most frequent pair again and again.\n"
    "def greet(name):\n    return f\"Hello, {name}!\"  # say hello\n\tindented with a tab\n"
    "数据工程师想知道文本如何被切分成词元。中文句子也应该被正确地显示。\n"
    "Emoji 👍 and 👩‍💻 and café, naïve, e\u0301 combining. <|endoftext|> 12345 67890\n"
)


def _write_corpus(folder: Path) -> Path:
    path = folder / "corpus.txt"
    path.write_text(CORPUS * 40, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def base_project(tmp_path_factory) -> Path:
    """Run 1: byte-level BPE, GPT-2 pre-tokenizer, 300 merges, ``<|endoftext|>`` special.
    Run 2: character-level BPE with ``</w>``, whitespace pre-tokenizer, 60 merges."""
    folder = tmp_path_factory.mktemp("inspect_base")
    corpus = _write_corpus(folder)
    path = folder / "base.tokproj"
    train_into_project([str(corpus)], path, TrainConfig(units="bytes", merges=300, pretokenizer="gpt2",
                                                        special_tokens=("<|endoftext|>",)), name="bytes300")
    train_into_project([str(corpus)], path, TrainConfig(units="chars", merges=60, pretokenizer="whitespace",
                                                        end_of_word="</w>"), name="chars60")
    return path


@pytest.fixture(scope="session")
def base_cl100k_project(tmp_path_factory, base_project, cl100k_file) -> Path:
    """The base project plus the real cl100k_base.tiktoken imported as reference 1."""
    from workbench.ui.inspect.worker import import_reference

    folder = tmp_path_factory.mktemp("inspect_cl100k")
    path = folder / "cl.tokproj"
    shutil.copy(base_project, path)
    outcome = import_reference(path, cl100k_file)
    assert outcome.ref_id == 1 and outcome.error is None
    return path


def _copy(src: Path, folder: Path) -> Path:
    assert not Path(f"{src}-wal").exists(), "the base project must be closed before it is copied"
    dest = folder / src.name
    shutil.copy(src, dest)
    return dest


@pytest.fixture
def project(base_project, tmp_path) -> Path:
    return _copy(base_project, tmp_path)


@pytest.fixture
def cl_project(base_cl100k_project, tmp_path) -> Path:
    return _copy(base_cl100k_project, tmp_path)


@pytest.fixture
def empty_project(tmp_path) -> Path:
    path = tmp_path / "empty.tokproj"
    ProjectStore.open(path, create=True).close()
    return path


@pytest.fixture
def panel(qtbot):
    from workbench.ui.inspect.panel import InspectPanel

    widget = InspectPanel()
    qtbot.addWidget(widget)
    widget.resize(1100, 700)
    widget.show()
    yield widget
    widget.shutdown()
    from workbench.ui.settings import AppSettings

    AppSettings().boundary_marks = False  # a preference kept in QSettings: the next panel starts without
