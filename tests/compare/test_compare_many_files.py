"""A project that lists 20,000 corpus files opens in the Compare tab with linear work: one query for
the files, one batch of rows, a path found through a dict — never a walk over the rows per file
(that made a 100,000-file project block the window for over ten minutes)."""

from __future__ import annotations

import sqlite3

import pytest

pytest.importorskip("PySide6")

N = 20_000


@pytest.fixture(scope="module")
def many_files_project(tmp_path_factory):
    from workbench.store import ProjectStore

    root = tmp_path_factory.mktemp("many")
    project = root / "many.tokproj"
    with ProjectStore.open(project, create=True):
        pass
    raw = sqlite3.connect(project)  # 20,000 rows in one transaction (the store adds one per commit)
    with raw:
        raw.executemany("INSERT INTO corpora (path, size, mtime, fingerprint, reader_options, added) "
                        "VALUES (?, 8, 0, 'x', '{\"kind\": \"text\"}', 0)",
                        [(str(root / f"de_part{i:05d}.txt"),) for i in range(N)])
    raw.close()
    return project


def test_opening_many_files_is_linear(qtbot, many_files_project):
    from workbench.ui.compare.panel import ComparePanel
    from workbench.ui.project_session import ProjectSession

    session = ProjectSession()
    session.open(many_files_project)
    statements: list[str] = []
    session.store.connection.set_trace_callback(statements.append)
    inserted: list[int] = []
    panel = ComparePanel(session)
    qtbot.addWidget(panel)
    panel.files.rowsInserted.connect(lambda _parent, first, last: inserted.append(last - first + 1))
    panel.refresh()  # a run finished: listed again, nothing added twice
    panel.show()
    qtbot.waitUntil(lambda: panel.file_table.isVisible())
    try:
        assert panel.files.rowCount() == N
        assert inserted == []  # the second listing found every path in the dict
        # Two listings (opening, then the refresh), each one query for runs, references and files.
        assert sum("FROM corpora" in s for s in statements) == 2 and len(statements) == 6
        files = panel.checked_files()
        assert len(files) == N and files[0][2] == ""  # no label typed: the name's language counts
        assert panel.files.data(panel.files.index(0, 1)) == "de"  # … and is shown
        panel.set_language(files[-1][0], "German")
        assert panel.checked_files()[-1][2] == "German"
    finally:
        panel.shutdown()
        session.close()


def test_files_are_added_in_one_batch(qtbot):
    from workbench.ui.compare.models import CorpusFilesModel

    model = CorpusFilesModel()
    batches: list[int] = []
    model.rowsInserted.connect(lambda _p, first, last: batches.append(last - first + 1))
    assert model.add([(f"/c/{i}.txt", {}, "", True) for i in range(N)] + [("/c/0.txt", {}, "", True)]) == N
    assert model.add([(f"/c/{i}.txt", {}, "", True) for i in range(0, N, 2)]) == 0
    assert batches == [N] and model.row_of("/c/19999.txt") == N - 1
