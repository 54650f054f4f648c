"""A 100,000-merge run: opening, jumping to the last row, filtering and sorting work (behaviour,
not timings — ``bench/bench_merge_table.py`` prints the figures)."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt

from workbench.ui.merges.merge_model import browser_piece

# Synthetic pieces are random bytes: a character of a script the test machine has no shaping
# support for makes Qt's font database log a warning while painting. It is not ours to fix.
pytestmark = pytest.mark.qt_log_ignore("OpenType support missing", extend=True)


def _settled(panel, qtbot) -> None:
    """Until the rows shown are the ones last asked for: checking a run's stored values and a filter
    or sort that takes the window's thread more than LazyKeyedModel.HERE_LIMIT_S of CPU (a substring
    over 100,000 merges) are finished by a worker."""
    qtbot.waitUntil(lambda: not panel.jobs.busy() and not panel.model.busy, timeout=30000)


def test_open_jump_to_last_row_filter_and_sort(panel, big_project, qtbot):
    path, data = big_project
    panel.set_project(path)
    model = panel.model
    _settled(panel, qtbot)
    assert model.rowCount() == 100_000
    assert model.fetches <= 1  # opening reads at most the first visible page
    assert "100,000 merges" in panel.count_label.text()

    # Jump to the end as Ctrl+End / dragging the scroll bar does.
    panel.table.scrollToBottom()
    qtbot.waitUntil(lambda: panel.table.rowAt(panel.table.viewport().height() - 2) >= 99_990)
    last = model.rowCount() - 1
    assert model.data(model.index(last, 0)) == "99999"
    assert model.data(model.index(last, 3)) == browser_piece(data.pieces[-1])
    assert model.fetches <= 4  # the first and the last pages, not the 500 in between
    panel.table.selectRow(last)
    assert panel.detail.token_id == data.events[-1].new_id

    # Substring filter on any piece, counted by brute force over the written rows.
    needle = b"ab"
    expected = sum(1 for e, p in zip(data.events, data.pieces)
                   if needle in p or needle in data.vocab[e.left] or needle in data.vocab[e.right])
    panel.set_filter("ab")
    _settled(panel, qtbot)
    assert model.rowCount() == expected > 0
    assert f"{expected:,} of 100,000" in panel.count_label.text()
    shown = model.entry(model.rowCount() - 1)
    assert needle in shown.piece or needle in shown.left_piece or needle in shown.right_piece

    # Regex on the result only, plus a frequency range.
    lo, hi = data.events[60_000].frequency, data.events[40_000].frequency
    pattern = re.compile(r"^[a-j]{3}$")
    expected = sum(1 for e, p in zip(data.events, data.pieces)
                   if lo <= e.frequency <= hi and pattern.search(p.decode("utf-8", "backslashreplace")))
    panel.set_filter(r"^[a-j]{3}$", regex=True, field="result", min_frequency=lo, max_frequency=hi)
    _settled(panel, qtbot)
    assert model.rowCount() == expected > 0

    # Length filter in bytes, then sort that result by frequency (both in SQL).
    panel.set_filter(min_length=7, max_length=8)
    _settled(panel, qtbot)
    assert model.rowCount() == sum(1 for p in data.pieces if 7 <= len(p) <= 8)
    panel.table.sortByColumn(4, Qt.SortOrder.AscendingOrder)
    _settled(panel, qtbot)
    freqs = [model.entry(r).frequency for r in range(0, model.rowCount(), 97)]
    assert freqs == sorted(freqs)

    # Sort everything by result piece, descending; then back to rank order (no key list needed).
    panel.set_filter()
    _settled(panel, qtbot)
    panel.table.sortByColumn(3, Qt.SortOrder.DescendingOrder)
    _settled(panel, qtbot)
    assert model.rowCount() == 100_000
    assert model.entry(0).piece == max(data.pieces)
    held = model._values  # 100,000 pieces, the sort values of that order
    assert isinstance(held, list) and len(held) == 100_000
    panel.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    _settled(panel, qtbot)
    assert model.key_at(12_345) == 12_345 and model._identity
    # The old values are freed on a thread of their own, a slice at a time (10M of them held the
    # window's thread ~0.1 s in one call); the rows shown are not touched.
    qtbot.waitUntil(lambda: not held, timeout=10000)
    assert model.entry(99_999).piece == data.pieces[-1]


def test_select_token_scrolls_to_a_deep_merge(panel, big_project, qtbot):
    path, data = big_project
    panel.set_project(path)
    _settled(panel, qtbot)
    emitted = []
    panel.merge_selected.connect(lambda source, token: emitted.append((source, token)))
    target = data.events[87_654].new_id
    panel.select_token(("run", 1), target)
    current = panel.table.currentIndex()
    assert current.row() == 87_654
    assert panel.detail.token_id == target
    qtbot.waitUntil(lambda: panel.table.rowAt(panel.table.viewport().height() // 2) in range(87_600, 87_700))
    assert emitted == []  # selecting on request does not echo back to the inspector
    panel.table.selectRow(87_655)
    assert emitted == [(("run", 1), data.events[87_655].new_id)]
