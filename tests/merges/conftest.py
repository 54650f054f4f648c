"""Fixtures for the merge-browser tests: real project files in tmp_path, real widgets.

* ``big_project`` — 100,000 synthetic merges written through the store's ``RunWriter`` (about a
  second), shared by the module that needs it; its pieces are kept for brute-force checks.
* ``small_project`` — 1,500 merges: small enough for ``qtmodeltester``, which visits every row.
* ``worked_project`` — PRODUCT.md worked example 3 trained for real from a corpus file
  (``low lower lowest newer``, characters with ``</w>``, 5 merges), so the run records its corpus.
* ``panel`` — a shown :class:`MergePanel`, shut down (threads joined) at teardown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from merge_helpers import WORKED_CONFIG, WORKED_TEXT, Synthetic, write_synthetic  # noqa: E402


@pytest.fixture(scope="module")
def big_project(tmp_path_factory) -> tuple[Path, Synthetic]:
    path = tmp_path_factory.mktemp("big") / "big.tokproj"
    return path, write_synthetic(path, 100_000, seed=7)


@pytest.fixture(scope="module")
def small_project(tmp_path_factory) -> tuple[Path, Synthetic]:
    path = tmp_path_factory.mktemp("small") / "small.tokproj"
    return path, write_synthetic(path, 1_500, seed=3)


@pytest.fixture
def worked_project(tmp_path) -> tuple[Path, int]:
    """(project, run id) of worked example 3, trained from a real corpus file."""
    from workbench.tasks.train import train_into_project

    corpus = tmp_path / "words.txt"
    corpus.write_text(WORKED_TEXT, encoding="utf-8")
    project = tmp_path / "worked.tokproj"
    run_id, status = train_into_project([str(corpus)], project, WORKED_CONFIG, name="worked example 3")
    assert status == "finished"
    return project, run_id


@pytest.fixture
def panel(qtbot):
    from workbench.ui.merges.panel import MergePanel

    widget = MergePanel()
    qtbot.addWidget(widget)
    widget.resize(1200, 700)
    widget.show()
    yield widget
    widget.shutdown()


@pytest.fixture
def small_source(small_project):
    """Run 1 of the small project as the merge table's source: (source, data, its store)."""
    from workbench.store import ProjectStore
    from workbench.store.browse import MergeSource, store_connection

    path, data = small_project
    store = ProjectStore.open(path, readonly=True)
    yield MergeSource(store_connection(store), ("run", 1)), data, store
    store.close()
