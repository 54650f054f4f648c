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


def test_opening_many_files_is_linear_and_off_the_gui_thread(qtbot, many_files_project):
    """The files are read on a worker's connection and listed in batches, the event loop running
    between them; restoring the tab's session waits for the listing; a second listing adds nothing."""
    from PySide6.QtCore import QTimer

    from workbench.ui.compare.panel import ComparePanel
    from workbench.ui.jobs import LIST_BATCH, LIST_OFF_THREAD
    from workbench.ui.project_session import ProjectSession

    assert N >= LIST_OFF_THREAD
    session = ProjectSession()
    session.open(many_files_project)
    statements: list[str] = []
    session.store.connection.set_trace_callback(statements.append)
    ticks = [0]
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    timer.start()
    panel = ComparePanel(session)
    qtbot.addWidget(panel)
    inserted: list[int] = []
    panel.files.rowsInserted.connect(lambda _parent, first, last: inserted.append(last - first + 1))
    assert panel.listing() and panel.files.rowCount() < N  # returned before the files were read
    last = f"de_part{N - 1:05d}.txt"
    assert panel.restore_session({"version": 1, "files": [[str(many_files_project.parent / last), {"kind": "text"},
                                                           "German", True]]})
    qtbot.waitUntil(lambda: not panel.listing(), timeout=60000)
    try:
        assert panel.files.rowCount() == N and sum(inserted) == N
        # In batches, the loop running meanwhile (not a tick per batch: batches posted while the window
        # was busy are delivered in one pass of the loop, and a 5 ms timer's ticks coalesce — CI saw 6
        # ticks for 10 batches on a quiet machine).
        assert len(inserted) > 1 and max(inserted) <= LIST_BATCH and ticks[0] >= 1
        panel.refresh()  # a run finished: listed again, nothing added twice
        qtbot.waitUntil(lambda: not panel.listing(), timeout=60000)
        assert sum(inserted) == N
        # The window's connection only counted the files; the worker read them.
        corpora = [s for s in statements if "FROM corpora" in s]
        assert corpora and all("count(*)" in s for s in corpora)
        files = panel.checked_files()
        assert len(files) == N and files[0][2] == ""  # no label typed: the name's language counts
        assert panel.files.data(panel.files.index(0, 1)) == "de"  # … and is shown
        assert files[-1][2] == "German"  # the restored session's label, applied once listed
    finally:
        timer.stop()
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
