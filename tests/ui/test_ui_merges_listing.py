"""The Merges tab of a window taking a project over lists its runs and checks the run it shows
first on a worker (issue 26: the window's thread is never busy more than a frame).

The listing was split over two turns of the window's thread, but both were its own work: the
runs' rows, and the check of every stored row of the newest run (a few hundred ms for 100,000
merges) before it is shown. Asserted here: which thread ran them, and that what is shown is right.
"""

from __future__ import annotations

import threading

from ui_helpers import train_cli

from workbench.store import ProjectStore, validate
from workbench.ui.merges import panel as merges_panel


def test_the_merges_tab_lists_and_checks_the_newest_run_off_the_window_thread(
        make_window, qtbot, project, small_corpus, monkeypatch) -> None:
    train_cli(small_corpus, project, "--merges", "12", "--name", "first")
    train_cli(small_corpus, project, "--merges", "20", "--name", "second")
    listed_on: list[int] = []
    checked_on: list[int] = []
    real_list, real_check = merges_panel.list_sources, validate.tables_problem

    def list_spy(conn):
        listed_on.append(threading.get_ident())
        return real_list(conn)

    def check_spy(*args, **kwargs):
        checked_on.append(threading.get_ident())
        return real_check(*args, **kwargs)
    monkeypatch.setattr(merges_panel, "list_sources", list_spy)
    monkeypatch.setattr(validate, "tables_problem", check_spy)

    window = make_window(project)
    merges = window.merges
    qtbot.waitUntil(lambda: merges.current_source() is not None and not merges.is_listing()
                    and merges.model.rowCount() > 0, timeout=20000)
    gui = threading.get_ident()
    assert listed_on and gui not in listed_on
    assert checked_on and gui not in checked_on
    with ProjectStore.open(project, readonly=True) as store:
        runs = store.runs()
        newest = max(r.id for r in runs)
        merges_stored = store.merges(newest, 0, 100)
    # The chooser names every run; the newest is shown with its stored merges, in rank order.
    assert [merges.chooser.itemData(i) for i in range(merges.chooser.count())] == [("run", r.id) for r in runs]
    assert merges.current_source() == ("run", newest)
    assert merges.model.rowCount() == len(merges_stored) == 20
    assert [merges.model.entry(r).piece for r in range(20)] == [m.piece for m in merges_stored]
