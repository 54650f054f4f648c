"""CSV export of the selection or the whole filter result: merges, vocabulary, diffs."""

from __future__ import annotations

import csv

from hostile_run import HOSTILE_PAIRS, write_hostile_project
from merge_helpers import diff_project
from PySide6.QtCore import QItemSelectionModel, Qt


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_merges_filter_result_and_selection(panel, worked_project, tmp_path):
    project, _ = worked_project
    panel.set_project(project)
    out = tmp_path / "all.csv"
    assert panel.export_csv(out, selection=False) == 5
    rows = read(out)
    assert rows[0] == ["rank", "left", "right", "merged", "frequency", "bytes", "chars", "token_id", "merged_hex"]
    # The first five columns are those of `workbench export --format merges-csv`.
    assert [r[:5] for r in rows[1:]] == [["0", "l", "o", "lo", "3"], ["1", "lo", "w", "low", "3"],
                                         ["2", "low", "e", "lowe", "2"], ["3", "r", "</w>", "r</w>", "2"],
                                         ["4", "low", "</w>", "low</w>", "1"]]
    assert rows[5][5:] == ["7", "7", "13", "6c 6f 77 3c 2f 77 3e"]

    # The filter result, in the order shown (sorted by result piece, descending).
    panel.set_filter("</w>")
    panel.table.sortByColumn(3, Qt.SortOrder.DescendingOrder)
    panel.export_csv(out, selection=False)
    assert [r[3] for r in read(out)[1:]] == ["r</w>", "low</w>"]

    # A selection of rows.
    panel.set_filter()
    panel.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    sel = panel.table.selectionModel()
    for row in (0, 2):
        sel.select(panel.model.index(row, 0), QItemSelectionModel.SelectionFlag.Select
                   | QItemSelectionModel.SelectionFlag.Rows)
    assert panel.export_csv(out, selection=True) == 2
    assert [r[0] for r in read(out)[1:]] == ["0", "2"]


def test_vocabulary_export_carries_frequencies_and_never_used(panel, worked_project, tmp_path, qtbot):
    project, _ = worked_project
    panel.set_project(project)
    with qtbot.waitSignal(panel.vocab.usage_ready, timeout=20000):
        panel.tabs.setCurrentIndex(1)
    out = tmp_path / "vocab.csv"
    panel.vocab.never_only.setChecked(True)
    assert panel.vocab.export_csv(out, selection=False) == 5
    rows = read(out)
    assert rows[0] == ["id", "piece", "hex", "kind", "frequency", "never_used"]
    assert sorted((r[1], r[3], r[4], r[5]) for r in rows[1:]) == [
        ("l", "base", "0", "1"), ("lo", "merge", "0", "1"), ("low", "merge", "0", "1"),
        ("o", "base", "0", "1"), ("r", "base", "0", "1")]
    panel.vocab.never_only.setChecked(False)
    panel.vocab.export_csv(out, selection=False)
    by_piece = {r[1]: r for r in read(out)[1:]}
    assert len(by_piece) == 14
    assert by_piece["lowe"][4:] == ["2", "0"] and by_piece["</w>"][2] == "3c 2f 77 3e"


def test_diff_export(panel, tmp_path, qtbot):
    project, ra, rb = diff_project(tmp_path)
    panel.set_project(project)
    panel.diff.choose(("ref", ra), ("ref", rb))
    with qtbot.waitSignal(panel.diff.diff_ready, timeout=20000):
        panel.diff.compare()
    out = tmp_path / "shared.csv"
    panel.diff.export_csv(out, selection=False, key="shared")
    rows = read(out)
    assert rows[0] == ["piece", "id A", "merge # A", "id B", "merge # B", "rank shift", "|shift|"]
    assert ["bc", "5", "2", "3", "0", "-2", "2"] in rows
    panel.diff.export_csv(out, selection=False, key="words")
    assert read(out)[1] == ["abc", "5", "1", "abc", "2", "a | bc"]


def test_a_lone_carriage_return_stays_in_its_row(panel, tmp_path):
    # The browser's CSV holds the cells as shown (the one renderer, spaces as ␣), bytes in hex.
    panel.set_project(write_hostile_project(tmp_path / "hostile.tokproj"))
    out = tmp_path / "merges.csv"
    assert panel.export_csv(out, selection=False) == len(HOSTILE_PAIRS)
    rows = read(out)
    assert len(rows) == 1 + len(HOSTILE_PAIRS)
    assert rows[1] == ["0", "\\r", "x", "\\rx", "99", "2", "2", "256", "0d 78"]
    assert rows[6][1:4] == ["␣the\\x00", "\\xe4", "␣the\\x00\\xe4"]
    assert out.read_bytes().count(b"\r\n") == len(rows)  # RFC 4180 row ends
