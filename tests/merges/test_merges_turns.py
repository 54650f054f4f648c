"""The order of the Merges tab's steps over turns of the window's event loop (issue 26: never more
than a frame in one turn).

A listing delivered by a worker fills the choosers in one turn and chooses and shows the run in a
later one (``show_listed(defer=True)``); a run chosen before that step ran must win over it, and
the choosers must name exactly the project's runs. Nothing here is timed: the benches time it.
"""

from __future__ import annotations

from merge_helpers import write_synthetic

from workbench.store import ProjectStore


def _two_runs(tmp_path):
    path = tmp_path / "two.tokproj"
    first = write_synthetic(path, 40, seed=1, name="first")
    second = write_synthetic(path, 60, seed=2, name="second")
    write_synthetic(path, 30, seed=3, name="third")
    with ProjectStore.open(path, readonly=True) as store:
        ids = [r.id for r in store.runs()]
    return path, ids, first, second


def _items(combo):
    return [tuple(combo.itemData(i)) for i in range(combo.count())]


def test_a_delivered_listing_names_every_run_then_shows_the_newest_a_turn_later(panel, qtbot, tmp_path):
    path, ids, _first, second = _two_runs(tmp_path)
    assert panel.open_project(path, off_thread=False)
    panel.show_listed(defer=True)
    runs = [("run", i) for i in ids]
    # the Compare choosers are filled in this turn, the run chooser with its run, a later one
    assert _items(panel.diff.combo_a) == runs and _items(panel.diff.combo_b) == runs
    assert panel.chooser.count() == 0 and panel.current_source() is None
    # the run is chosen in a later turn: the newest, with its stored merges in rank order
    qtbot.waitUntil(lambda: panel.current_source() == ("run", ids[-1]), timeout=5000)
    assert _items(panel.chooser) == runs
    assert panel.stack.currentIndex() == 1
    assert panel.chooser.currentData() == ("run", ids[-1])
    assert panel.model.rowCount() == 30
    qtbot.waitUntil(lambda: panel.table.viewport().updatesEnabled(), timeout=5000)  # painted a turn later


def test_a_run_chosen_before_the_deferred_step_ran_is_the_one_shown(panel, qtbot, tmp_path):
    path, ids, _first, second = _two_runs(tmp_path)
    assert panel.open_project(path, off_thread=False)
    panel.show_listed(defer=True)
    assert panel.current_source() is None  # the listing's own choice (the newest) is still to come
    panel.select_token(("run", ids[1]), 0)  # another tab asks for the second run (Compare, Inspect)
    # shown at once, not a turn later
    assert panel.current_source() == ("run", ids[1])
    assert panel.stack.currentIndex() == 1
    assert panel.model.rowCount() == 60
    assert _items(panel.chooser) == [("run", i) for i in ids]
    qtbot.wait(100)  # the deferred step's turn has come and gone: it did not take the choice back
    assert panel.current_source() == ("run", ids[1])
    assert panel.chooser.currentData() == ("run", ids[1])
    assert [panel.model.entry(r).piece for r in range(60)] == list(second.pieces)
    assert panel.table.viewport().updatesEnabled()


def test_a_run_chosen_then_another_before_its_paint_shows_the_second(panel, qtbot, tmp_path):
    """Choosing a run shows it at once and paints its table a turn later; a second choice in
    between is the one shown and painted."""
    path, ids, first, _second = _two_runs(tmp_path)
    panel.set_project(path)
    assert panel.current_source() == ("run", ids[-1])
    qtbot.waitUntil(lambda: panel.table.viewport().updatesEnabled(), timeout=5000)
    panel.chooser.setCurrentIndex(1)
    assert panel.current_source() == ("run", ids[1]) and panel.model.rowCount() == 60
    panel.chooser.setCurrentIndex(0)  # before the first choice's paint
    assert panel.current_source() == ("run", ids[0]) and panel.model.rowCount() == 40
    qtbot.waitUntil(lambda: panel.table.viewport().updatesEnabled(), timeout=5000)
    qtbot.wait(50)
    assert panel.current_source() == ("run", ids[0])
    assert panel.chooser.currentData() == ("run", ids[0])
    assert [panel.model.entry(r).piece for r in range(40)] == list(first.pieces)


def test_a_project_closed_before_the_deferred_step_ran_shows_nothing(panel, qtbot, tmp_path):
    path, _ids, _first, _second = _two_runs(tmp_path)
    assert panel.open_project(path, off_thread=False)
    panel.show_listed(defer=True)
    panel.set_project(None)
    qtbot.wait(100)
    assert panel.current_source() is None
    assert panel.stack.currentIndex() == 0 and "No project open" in panel.empty.title.text()
