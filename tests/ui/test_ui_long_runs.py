"""A run of hundreds of thousands of merges opens without reading them all.

Opening a 10M-merge project blocked the window for 70 s and took gigabytes: the Train tab read every
merge to draw its curves and every run listing counted every merge and vocabulary row. Now a stored
run's curves come from at most ``PLOT_POINTS`` steps, fetched by key, and counts come from the
primary key. The project here is real: a trained run, extended by SQL to 400,000 merges.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from ui_helpers import train_cli

from workbench.store import ProjectStore

N = 400_000


@pytest.fixture(scope="module")
def long_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("long")
    corpus = root / "c.txt"
    corpus.write_text("hello world, low lower lowest\n" * 50, encoding="utf-8")
    project = root / "p.tokproj"
    train_cli([corpus], project, "--merges", "5")
    conn = sqlite3.connect(project)
    base = conn.execute("SELECT max(id) + 1 FROM vocab").fetchone()[0]
    first = conn.execute("SELECT max(rank) + 1 FROM merges").fetchone()[0]
    conn.executemany("INSERT INTO merges VALUES (1, ?, 104, 101, ?, ?, 2, ?, 1000, NULL)",
                     ((first + k, base + k, N - k, base + k + 1) for k in range(N)))
    conn.executemany("INSERT INTO vocab VALUES (1, ?, ?, 'merge')", ((base + k, b"he%d" % k) for k in range(N)))
    conn.commit()
    conn.close()
    return project


def test_counts_and_strided_steps_come_from_the_key(long_run):
    with ProjectStore.open(long_run, readonly=True) as store:
        run = store.runs()[0]
        assert run.merge_count == N + 5 and run.vocab_size == store.run(1).vocab_size
        every = 1000
        rows = store.steps(1, 0, every=every)
        steps = [r.step for r in rows]
        assert steps[:-1] == list(range(every, N + 5 + 1, every))  # every 1000th step ...
        assert steps[-1] == N + 5  # ... and the last one
        assert [r.frequency for r in rows[:2]] == [N - (every - 6), N - (2 * every - 6)]
        assert [r.step for r in store.steps(1, 398_000, every=every)] == [399_000, 400_000, N + 5]
        assert len(store.steps(1, 0)) == N + 5  # unstrided: all of them, as a live plot polls


def test_the_window_draws_a_long_run_from_a_bounded_number_of_steps(make_window, long_run, qtbot):
    from workbench.ui.train.panel import PLOT_POINTS

    window = make_window(long_run)
    panel = window.training
    qtbot.waitUntil(lambda: 1 in panel.plots.runs, timeout=20000)
    x, _y = panel.plots.curve_data(1, "frequency")
    assert 0 < len(x) <= PLOT_POINTS + 1
    assert x[-1] == N + 5  # the curve still ends at the run's last merge


def test_a_long_merge_list_is_filtered_and_sorted_off_the_gui_thread(make_window, long_run, qtbot):
    """400,000 merges: the Merges tab's filter and sort run in a worker with a connection of its
    own — the call returns at once with the old rows still shown and "filtering…" said, and the
    result replaces them when it arrives (a regex filter on 10M merges blocked the window 94 s)."""
    from PySide6.QtCore import Qt

    window = make_window(long_run)
    window.show_panel("merges")
    panel = window.merges
    model = panel.model
    assert model.ASYNC_KEYS <= N
    qtbot.waitUntil(lambda: not model.busy and model.rowCount() == N + 5, timeout=30000)
    panel.set_filter("he39999", regex=False)  # the pieces he39999, he399990 … he399999
    assert model.busy and model.rowCount() == N + 5  # returned before the query ran: old rows still there
    assert panel.count_label.text() == "filtering and sorting…"
    qtbot.waitUntil(lambda: not model.busy, timeout=60000)
    with sqlite3.connect(long_run) as conn:
        expected = conn.execute("SELECT count(*) FROM vocab WHERE run_id = 1 AND kind = 'merge' "
                                "AND instr(CAST(piece AS TEXT), 'he39999') > 0").fetchone()[0]
    assert model.rowCount() == expected == 11
    assert panel.count_label.text() == f"11 of {N + 5:,} merges match"
    frequency = next(i for i, column in enumerate(model.COLUMNS) if column[1] == "frequency")
    model.sort(frequency, Qt.SortOrder.AscendingOrder)
    qtbot.waitUntil(lambda: not model.busy and model.sort_column == frequency, timeout=60000)
    shown = [model.entry(row).frequency for row in range(model.rowCount())]
    assert shown == sorted(shown) and len(shown) == 11


def test_a_newer_filter_replaces_a_running_one(make_window, long_run, qtbot):
    window = make_window(long_run)
    window.show_panel("merges")
    panel, model = window.merges, window.merges.model
    qtbot.waitUntil(lambda: not model.busy and model.rowCount() == N + 5, timeout=30000)
    panel.set_filter("(a|b|c|d)*x", regex=True)  # slow over 400,000 pieces
    panel.set_filter("he1234", regex=False)  # typed on: only this one's result may arrive
    qtbot.waitUntil(lambda: not model.busy, timeout=60000)
    assert model.query is not None and model.query.text.text == "he1234"
    assert model.rowCount() == 111  # he1234, he12340 … he12349, he123400 … he123499
