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
    # the strided steps are read off the GUI thread: the curve is drawn when they arrive
    qtbot.waitUntil(lambda: 1 in panel.plots.runs and len(panel.plots.curve_data(1, "frequency")[0]) > 0,
                    timeout=20000)
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


class _Ticks:
    """Counts the ticks of a 5 ms timer: the event loop ran (a blocking call shows as no ticks)."""

    def __init__(self):
        from PySide6.QtCore import QTimer

        self.count = 0
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        self.count += 1


def test_a_long_vocabulary_is_filtered_and_sorted_off_the_gui_thread(make_window, long_run, qtbot):
    """The Vocabulary tab of the same 400,000-merge run: its filter and sort return at once, the
    event loop keeps ticking while the worker reads, and the rows arrive."""
    from PySide6.QtCore import Qt

    window = make_window(long_run)
    window.show_panel("merges")
    panel = window.merges
    panel.tabs.setCurrentIndex(1)
    vocab, model = panel.vocab, panel.vocab.model
    qtbot.waitUntil(lambda: not model.busy and model.rowCount() == model.total > N, timeout=30000)
    vocab.cancel_usage()  # the corpus count is another job; this test is about the table
    total = model.rowCount()
    ticks = _Ticks()
    vocab.filter.edit.setText("he12345")  # the pieces he12345, he123450 … he123459
    qtbot.waitUntil(lambda: model.busy, timeout=5000)  # the filter box is debounced
    assert model.rowCount() == total and vocab.count_label.text() == "filtering and sorting…"
    before = ticks.count
    qtbot.waitUntil(lambda: not model.busy, timeout=60000)
    assert ticks.count > before  # the window kept running while the worker filtered
    assert [model.entry(r).piece for r in range(model.rowCount())] == [b"he12345"] + [b"he12345%d" % d
                                                                                     for d in range(10)]
    assert vocab.count_label.text() == f"11 of {total:,} entries match"
    model.sort(1, Qt.SortOrder.DescendingOrder)
    assert model.busy
    qtbot.waitUntil(lambda: not model.busy and model.sort_column == 1, timeout=60000)
    assert model.entry(0).piece == b"he123459" and model.entry(10).piece == b"he12345"
    model.sort(0, Qt.SortOrder.AscendingOrder)
    qtbot.waitUntil(lambda: not model.busy and model.sort_column == 0, timeout=60000)
    # Selecting a token the filter hides clears it; the row is selected once the rows arrive.
    assert vocab.select_token(total - 1)
    qtbot.waitUntil(lambda: not model.busy and vocab.table.currentIndex().isValid(), timeout=60000)
    assert model.key_at(vocab.table.currentIndex().row()) == total - 1 and not model.is_filtered()


def test_a_long_piece_table_is_filtered_off_the_gui_thread_and_a_newer_filter_wins(make_window, tmp_path, qtbot):
    """The Unigram piece table takes the same path (its threshold lowered: a real run's table is short)."""
    from workbench.corpus.demo import demo_corpus_files

    project = tmp_path / "u.tokproj"
    train_cli([f for f in demo_corpus_files() if f.name.startswith("en_")], project, "--model", "unigram",
              "--vocab-size", "300")
    window = make_window(project)
    window.show_panel("merges")
    panel = window.merges
    qtbot.waitUntil(lambda: panel._pieces_mode and panel.pieces.model.rowCount() == 300, timeout=30000)
    pieces, model = panel.pieces, panel.pieces.model
    pieces.cancel_usage()
    model.ASYNC_KEYS = 0
    with ProjectStore.open(project, readonly=True) as store:
        vocab = store.load_tokenizer(1).vocab
    panel.set_filter("qqq-no-piece")  # overtaken at once by the next one: its result never shows
    panel.set_filter("^▁t", regex=True)
    assert model.busy and model.rowCount() == 300
    assert panel.count_label.text() == "filtering and sorting…"
    qtbot.waitUntil(lambda: not model.busy, timeout=30000)
    expected = [i for i, p in enumerate(vocab) if p.startswith("▁t".encode())]
    assert 0 < len(expected) == model.rowCount() and [e.id for e in model.iter_all()] == expected
    assert panel.count_label.text() == f"{len(expected):,} of 300 pieces match"
    # closing the project while a filter runs: the job is dropped, nothing arrives afterwards
    panel.set_filter("t")
    assert model.busy
    panel.set_project(None)
    assert not model.busy and model.rowCount() == 0
    qtbot.waitUntil(lambda: not panel.jobs.busy() and not pieces.job.busy(), timeout=30000)
    assert model.rowCount() == 0
