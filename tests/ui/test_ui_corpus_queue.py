"""A scan's rows and failures wait in the Corpus tab's queue with its reports, in their order.

The worker's ``files_added`` batches (a ~250-row insertion each) and ``file_failed`` were handled
as they arrived, in the same turn of the event loop as a batch of reports and the table's paint
(issue 26: never more than a frame); now they are queued behind the reports before them and taken
in a turn with room (``turns.room``). What must not change: every file listed, in the order it was
found, a file refused while read gone from the table, nothing listed after a Clear.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, QPoint

from workbench.corpus.source import CorpusSource
from workbench.ui.corpus.panel import CorpusPanel
from workbench.ui.corpus.scan import ADDED_BATCH


@pytest.fixture
def panel(qtbot):
    p = CorpusPanel()
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    yield p
    p.shutdown()


def _folder(root: Path, files: int) -> Path:
    root.mkdir()
    for i in range(files):
        (root / f"part{i:04d}.txt").write_text(f"hello world {i}, the quick brown fox\n", encoding="utf-8")
    return root


def test_rows_come_in_a_later_turn_and_a_failure_behind_its_row_leaves_no_row(panel, qtbot, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("hello\n", encoding="utf-8")
    other = tmp_path / "b.txt"
    other.write_text("world\n", encoding="utf-8")
    added = [(str(p), CorpusSource(p, "text", p.stat().st_size)) for p in (path, other)]
    panel._on_files_added(0, added)
    panel._on_file_failed(str(path), "a.txt:1: not UTF-8", "", False)
    assert panel.model.rowCount() == 0 and panel.is_scanning()  # queued, not listed in the signal's turn
    qtbot.waitUntil(lambda: not panel.is_scanning(), timeout=10000)
    assert [str(e.source.path) for e in panel.model.entries] == [str(other)]  # the failed file's row went
    assert panel.rejected_messages() == ["a.txt:1: not UTF-8"]


def test_every_file_of_a_folder_is_listed_in_order_and_the_last_is_reachable(panel, qtbot, tmp_path):
    files = 2 * ADDED_BATCH + 37  # three batches
    folder = _folder(tmp_path / "corpus", files)
    with qtbot.waitSignal(panel.scan_finished, timeout=60000):
        panel.add_paths([folder], prompt=False)
    names = [e.source.path.name for e in panel.model.entries]
    assert names == [f"part{i:04d}.txt" for i in range(files)]
    assert all(e.stats is not None and e.state == "done" for e in panel.model.entries)
    panel.table.scrollToBottom()
    qtbot.wait(50)
    bottom = panel.table.viewport().rect().bottom() - 2
    last = panel.table.indexAt(QPoint(4, bottom))
    assert last.isValid() and last.row() == files - 1
    assert panel.model.data(panel.model.index(files - 1, 0)) == f"part{files - 1:04d}.txt"
    assert panel.model.rowCount(QModelIndex()) == files


def test_a_folder_cleared_while_its_rows_are_queued_leaves_no_row(panel, qtbot, tmp_path):
    folder = _folder(tmp_path / "corpus", 3 * ADDED_BATCH)
    panel.add_paths([folder], prompt=False)
    qtbot.waitUntil(lambda: bool(panel._reports) or panel.model.rowCount() > 0, timeout=30000)
    panel.clear()
    qtbot.waitUntil(lambda: not panel.is_scanning(), timeout=30000)
    qtbot.wait(300)  # batches the worker sent before the cancel arrive meanwhile: never listed
    assert panel.model.rowCount() == 0 and panel.model.totals.files == 0
    assert not panel._reports and panel.rejected_messages() == []


def test_the_totals_and_rate_changing_lay_nothing_out_and_show_whole(panel, qtbot, tmp_path):
    """A scan's totals and reading rate change every redraw interval: the tab (and the window
    above it) is not laid out again for it, and the labels still get the room they need."""
    from PySide6.QtCore import QEvent, QObject

    folder = _folder(tmp_path / "corpus", 5)
    with qtbot.waitSignal(panel.scan_finished, timeout=30000):
        panel.add_paths([folder], prompt=False)
    panel.rate_label.parentWidget().show()  # as while a scan runs
    panel.rate_label.show()
    qtbot.wait(300)  # the end of the scan laid out (the progress hidden, the notice changed)

    class Count(QObject):
        n = 0

        def eventFilter(self, obj, event) -> bool:  # noqa: N802
            if event.type() == QEvent.Type.LayoutRequest and obj is panel:
                Count.n += 1
            return False

    counter = Count()
    panel.installEventFilter(counter)
    for i in range(5):
        panel.totals.setText(f"Total: <b>{i * 1_000_003:,} files</b>  ·  {i * 7.5:.1f} MB")
        panel.rate_label.setText(f"Reading {i * 111.1:.1f} MB/s")
        qtbot.wait(20)
    panel.removeEventFilter(counter)
    assert Count.n == 0
    for label in (panel.totals, panel.rate_label):
        assert label.geometry() == label.parentWidget().rect()  # the holder's whole rectangle
        assert label.width() >= label.sizeHint().width() and label.height() >= label.sizeHint().height()
