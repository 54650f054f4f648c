"""While a run trains, refresh() inserts the new merges without resetting the view."""

from __future__ import annotations

import pytest
from merge_helpers import synthetic_run
from PySide6.QtCore import QPersistentModelIndex, Qt

from workbench.store import ProjectStore

# Synthetic pieces are random bytes: a character of a script the test machine has no shaping
# support for makes Qt's font database log a warning while painting. It is not ours to fix.
pytestmark = pytest.mark.qt_log_ignore("OpenType support missing", extend=True)


class Writer:
    """A run being written by a live RunWriter, as the training process does."""

    def __init__(self, path, n: int):
        self.store = ProjectStore.open(path, create=True)
        self.data = synthetic_run(n, seed=11)
        self.run = self.store.create_run("live", {"units": "bytes", "pretokenizer": "gpt2"}, [],
                                         self.data.initial, self.data.kinds)
        self.writer = self.store.run_writer(self.run, interval=float("inf"))
        self.written = 0
        self.add(n)

    def add(self, n: int) -> None:
        if self.written + n > len(self.data.events):
            self.data = synthetic_run(self.written + n - len(self.data.events), seed=self.written,
                                      start_step=len(self.data.events) + 1, base=self.data)
        for e, p in zip(self.data.events[self.written:self.written + n], self.data.pieces[self.written:self.written + n]):
            self.writer.add(e, p)
        self.writer.flush()
        self.written += n

    def close(self) -> None:
        self.writer.close()
        self.store.finish_run(self.run, "finished")
        self.store.close()


def _signals(model):
    seen = {"reset": 0, "inserted": [], "layout": 0}
    model.modelReset.connect(lambda: seen.__setitem__("reset", seen["reset"] + 1))
    model.rowsInserted.connect(lambda _parent, first, last: seen["inserted"].append((first, last)))
    model.layoutChanged.connect(lambda *a: seen.__setitem__("layout", seen["layout"] + 1))
    return seen


def test_new_merges_appear_at_the_end_without_a_reset(panel, tmp_path, qtbot):
    path = tmp_path / "live.tokproj"
    writer = Writer(path, 300)
    try:
        panel.set_project(path)
        model = panel.model
        assert model.rowCount() == 300
        assert "training" in panel.status.text()
        panel.table.selectRow(123)
        selected = QPersistentModelIndex(model.index(123, 0))
        seen = _signals(model)

        panel.refresh()  # nothing new: nothing happens
        assert seen == {"reset": 0, "inserted": [], "layout": 0}

        writer.add(250)
        panel.refresh()
        assert seen["reset"] == 0
        assert seen["inserted"] == [(300, 549)]
        assert model.rowCount() == 550
        assert model.data(model.index(549, 0)) == "549"
        assert panel.table.currentIndex().row() == 123 and selected.row() == 123
        assert "550" in panel.status.text()

        writer.add(1)
        panel.refresh()
        assert seen["inserted"][-1] == (550, 550) and seen["reset"] == 0
    finally:
        writer.close()
    panel.refresh()
    assert "finished" in panel.status.text()


def test_live_rows_go_to_their_sorted_and_filtered_places(panel, tmp_path):
    path = tmp_path / "live.tokproj"
    writer = Writer(path, 400)
    try:
        panel.set_project(path)
        model = panel.model
        panel.set_filter("a")
        panel.table.sortByColumn(3, Qt.SortOrder.AscendingOrder)  # by result piece
        before = model.rowCount()
        keep_rank = model.key_at(before // 2)
        keep = QPersistentModelIndex(model.index(before // 2, 1))
        seen = _signals(model)

        writer.add(600)
        panel.refresh()
        assert seen["reset"] == 0 and seen["inserted"]
        d = writer.data
        expected = sum(1 for e, p in zip(d.events, d.pieces)
                       if b"a" in p or b"a" in d.vocab[e.left] or b"a" in d.vocab[e.right])
        assert model.rowCount() == expected > before
        pieces = [model.entry(r).piece for r in range(model.rowCount())]
        assert pieces == sorted(pieces)  # inserted exactly where SQL would have put them
        assert model.key_at(keep.row()) == keep_rank  # the old rows moved, the index followed

        # Frequency descending with rank ties: the order SQL gives after a fresh load.
        panel.table.sortByColumn(4, Qt.SortOrder.DescendingOrder)
        writer.add(300)
        panel.refresh()
        live = [model.key_at(r) for r in range(model.rowCount())]
        model.reload()
        assert live == [model.key_at(r) for r in range(model.rowCount())]
    finally:
        writer.close()


def test_vocabulary_grows_and_new_runs_join_the_chooser(panel, tmp_path):
    path = tmp_path / "live.tokproj"
    writer = Writer(path, 100)
    try:
        panel.set_project(path)
        panel.tabs.setCurrentIndex(1)
        vocab_model = panel.vocab.model
        assert vocab_model.rowCount() == 257 + 100
        seen = _signals(vocab_model)
        writer.add(50)
        panel.refresh()
        assert vocab_model.rowCount() == 257 + 150 and seen["reset"] == 0

        # A second run starts: the panel was following the newest run, so it switches to it.
        second = Writer.__new__(Writer)
        second.store, second.data = writer.store, synthetic_run(20, seed=5)
        second.run = writer.store.create_run("second", {"units": "bytes"}, [], second.data.initial,
                                             second.data.kinds)
        second.writer = writer.store.run_writer(second.run, interval=float("inf"))
        second.written = 0
        second.add(20)
        panel.refresh()
        assert panel.chooser.count() == 2
        assert panel.current_source() == ("run", second.run)
        assert panel.model.rowCount() == 20
        second.writer.close()
        writer.store.finish_run(second.run, "finished")
    finally:
        writer.close()
