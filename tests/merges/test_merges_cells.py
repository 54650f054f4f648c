"""The tables' cell cache: a row's display texts, fonts and colours are made once (``row_cells``)
and kept until its page goes. What a paint reads must be what :meth:`cell` says — for every role it
draws — and a new filter, sort, source, count or audit must show the new values, never a row's
old ones; a worker that filtered hands over the first rows made, which the paint then uses."""

from __future__ import annotations

import pytest
from merge_helpers import assert_cells_match_cell
from PySide6.QtCore import Qt

from workbench.store import ProjectStore
from workbench.store.browse import (
    MergeQuery,
    MergeSource,
    TextFilter,
    VocabSource,
    register_audit,
    store_connection,
)
from workbench.ui.merges.merge_model import MergeTableModel, browser_piece
from workbench.ui.merges.vocab_model import VocabTableModel

# Synthetic pieces are random bytes: a character of a script the test machine has no shaping
# support for makes Qt's font database log a warning while painting. It is not ours to fix.
pytestmark = pytest.mark.qt_log_ignore("OpenType support missing", extend=True)

def _marks(n: int) -> list[str]:
    """Audit marks: every third id unreachable, every fifth never used, the rest clean."""
    return ["unreachable" if i % 3 == 0 else "never_used" if i % 5 == 0 else "" for i in range(n)]


def test_merge_rows_cells_are_what_cell_says_for_every_role(small_source):
    source, data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    assert assert_cells_match_cell(model, range(0, 1500, 37)) > 0
    # Audited: the audit column's labels and colours (clean, marked, none) come from the same place.
    source.audit_key = register_audit(_marks(len(data.vocab)))
    model.reload()
    assert assert_cells_match_cell(model, range(0, 1500, 37)) > 0
    labels = {model.data(model.index(r, MergeTableModel.AUDIT_COLUMN)) for r in range(300)}
    assert len(labels) >= 2  # marked and clean rows both drawn


def test_vocabulary_rows_cells_are_what_cell_says_counted_and_audited(small_source):
    _source, data, store = small_source
    vocab = VocabSource(store_connection(store), ("run", 1))
    model = VocabTableModel()
    model.set_source(vocab)
    rows = range(0, len(data.vocab), 23)
    assert_cells_match_cell(model, rows)  # not counted: frequencies muted "—"
    n = len(data.vocab)
    vocab.set_usage([i % 4 for i in range(n)], [i != 0 for i in range(n)])
    model.usage_changed()
    assert_cells_match_cell(model, rows)  # never used (warning) and counted rows
    vocab.audit_key = register_audit(_marks(n))
    model.reload()
    assert_cells_match_cell(model, rows)
    vocab.close()


def test_a_new_filter_sort_and_source_show_their_own_rows_not_the_cached_ones(small_source, worked_project):
    source, _data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)

    def shown(rows=range(30)) -> list[tuple[str, str, str]]:
        return [(model.data(model.index(r, 0)), model.data(model.index(r, 3)), model.data(model.index(r, 4)))
                for r in rows if r < model.rowCount()]

    def expected(rows=range(30)) -> list[tuple[str, str, str]]:
        out = []
        for r in rows:
            if r < model.rowCount():
                e = model.entry(r)
                out.append((str(e.rank), browser_piece(e.piece), f"{e.frequency:,}"))
        return out

    before = shown()
    assert before == expected() and model._cells  # the first rows' cells are kept now

    model.set_query(MergeQuery(text=TextFilter("ab")))
    assert 0 < model.rowCount() < 1500
    assert shown() == expected() != before
    assert all("ab" in (f"{browser_piece(model.entry(r).piece)}{browser_piece(model.entry(r).left_piece)}"
                        f"{browser_piece(model.entry(r).right_piece)}") for r in range(min(30, model.rowCount())))

    filtered = shown()
    model.sort(4, Qt.SortOrder.AscendingOrder)  # the rarest first (synthetic frequencies fall with rank)
    assert shown() == expected() != filtered
    assert model.data(model.index(0, 4)) == f"{min(model.entry(r).frequency for r in range(model.rowCount())):,}"

    model.set_query(None)
    model.sort(0, Qt.SortOrder.AscendingOrder)
    assert shown() == before  # back to the first view: the same rows as at first

    # Another run (of another project): its own rows.
    path, run_id = worked_project
    with ProjectStore.open(path, readonly=True) as other:
        model.set_source(MergeSource(store_connection(other), ("run", run_id)))
        assert model.rowCount() == 5
        assert shown() == expected() != before[:5]
        model.set_source(None)
    assert model.rowCount() == 0 and not model._cells


def test_rows_inserted_while_a_run_trains_are_made_again(small_source):
    """Rows that arrive (refresh) empty the cells: a PickyBPE merge can mark an earlier row."""
    source, _data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    model.data(model.index(0, 3))
    assert model._cells
    model._drop_pages_from(model.rowCount())
    assert not model._cells
    model.data(model.index(0, 3))
    model.forget_cells()  # scores arrived: every row made again
    assert not model._cells


def test_a_filter_done_on_the_worker_brings_the_first_rows_made(panel, big_project, qtbot, monkeypatch):
    """The worker reads the first page and makes its rows' cells: the paint that shows the result
    reads no page on the window's thread, and draws what ``cell()`` says."""
    path, _data = big_project
    panel.set_project(path)
    qtbot.waitUntil(lambda: not panel.jobs.busy() and not panel.model.busy, timeout=30000)
    model = panel.model
    monkeypatch.setattr(MergeTableModel, "ASYNC_KEYS", 1000)  # every filter of this run on the worker
    panel.set_filter("ab")
    assert model.busy
    qtbot.waitUntil(lambda: not model.busy, timeout=30000)
    assert 0 < model.rowCount() < 100_000
    fetched = model.fetches
    made = dict(model._cells)
    assert set(made) >= set(range(min(model.PREFETCH_CELLS, model.rowCount())))
    panel.table.viewport().repaint()
    assert model.fetches == fetched  # the page came with the result
    for row in range(10):  # made on the worker = made here, and what cell() says
        assert made[row] == model.row_cells(model.entry(row), model.source)
    assert_cells_match_cell(model, range(10))


def test_a_long_sorted_view_leaves_the_collectors_full_passes(panel, big_project, qtbot):
    """100,000 sort values (a list the view holds) are frozen out of the cyclic collector's full
    passes when shown: each pass visited every item, with the GIL held, on whichever thread
    allocated (in the bench, a 190 ms turn of the window inside a paint)."""
    import gc

    path, _data = big_project
    panel.set_project(path)
    qtbot.waitUntil(lambda: not panel.jobs.busy() and not panel.model.busy, timeout=30000)
    panel.table.sortByColumn(3, Qt.SortOrder.DescendingOrder)
    qtbot.waitUntil(lambda: not panel.model.busy, timeout=30000)
    values = panel.model._values
    assert isinstance(values, list) and len(values) == 100_000
    assert not any(o is values for o in gc.get_objects())  # in the permanent generation
    panel.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    qtbot.waitUntil(lambda: not panel.model.busy, timeout=30000)


def test_the_placeholder_repaints_the_table_only_when_it_changes_and_shows(qtbot, small_source):
    """Setting the same message, or any message while rows are shown, paints nothing: a filter
    handed to a worker set it and the whole table was painted again in the turn that tried it."""
    from PySide6.QtCore import QEvent, QObject

    from workbench.ui.merges.widgets import PlaceholderTableView

    class Paints(QObject):
        n = 0

        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QEvent.Type.Paint:
                self.n += 1
            return False

    source, _data, _store = small_source
    model = MergeTableModel()
    view = PlaceholderTableView()
    qtbot.addWidget(view)
    view.setModel(model)
    view.resize(600, 400)
    view.show()
    qtbot.waitExposed(view)
    paints = Paints()
    view.viewport().installEventFilter(paints)
    view.set_placeholder("No merges yet.")
    qtbot.waitUntil(lambda: paints.n > 0)  # empty: the message changed and shows
    model.set_source(source)
    for _ in range(50):  # until the rows' own paints are over (a loaded machine delays them)
        seen = paints.n
        qtbot.wait(100)
        if paints.n == seen:
            break
    before = paints.n
    view.set_placeholder("No merges yet.")  # the same
    view.set_placeholder("Filtering and sorting…")  # rows are shown: the message is not
    qtbot.wait(50)
    assert paints.n == before
    model.set_source(None)  # empty again: the reset paints, with the last message
    qtbot.waitUntil(lambda: paints.n > before)
