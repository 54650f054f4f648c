"""The Merges pane end to end: empty states, the ancestry of a worked example, never-used entries
counted in a background job, references, and comparing two tokenizers."""

from __future__ import annotations

from merge_helpers import WORKED_CONFIG, diff_project, hand_pair
from PySide6.QtCore import Qt

from workbench.store import ProjectStore


def tree_rows(item, depth=0):
    rows = [(depth, item.text(0), item.text(2))]
    for i in range(item.childCount()):
        rows += tree_rows(item.child(i), depth + 1)
    return rows


def test_empty_states_say_what_to_do(panel, tmp_path):
    assert panel.stack.currentIndex() == 0
    assert "No project open" in panel.empty.title.text()
    empty = tmp_path / "empty.tokproj"
    ProjectStore.open(empty, create=True).close()
    panel.set_project(empty)
    assert panel.stack.currentIndex() == 0
    assert "No training runs" in panel.empty.title.text() and "Train" in panel.empty.body.text()
    bogus = tmp_path / "notes.tokproj"
    bogus.write_text("not a database", encoding="utf-8")
    panel.set_project(bogus)
    assert panel.stack.currentIndex() == 0 and "Cannot open" in panel.empty.title.text()
    assert panel.empty.body.text()
    panel.set_project(None)
    assert "No project open" in panel.empty.title.text()


def test_ancestry_of_a_worked_example_token(panel, worked_project, qtbot):
    project, run_id = worked_project
    panel.set_project(project)
    assert panel.stack.currentIndex() == 1
    assert panel.model.rowCount() == 5
    merges = [(panel.model.data(panel.model.index(r, 1)), panel.model.data(panel.model.index(r, 2)))
              for r in range(5)]
    assert merges == [("l", "o"), ("lo", "w"), ("low", "e"), ("r", "</w>"), ("low", "</w>")]
    tok = ProjectStore.open(project, readonly=True)
    try:
        token = tok.load_tokenizer(run_id).id_of_piece[b"low</w>"]
        low = tok.load_tokenizer(run_id).id_of_piece[b"low"]
    finally:
        tok.close()

    panel.select_token(("run", run_id), token)
    assert panel.table.currentIndex().row() == 4
    assert panel.detail.title.text() == "low</w>"
    root = panel.detail.tree.topLevelItem(0)
    assert tree_rows(root) == [
        (0, "low</w>", "4"), (1, "low", "1"), (2, "lo", "0"), (3, "l", "base"), (3, "o", "base"),
        (2, "w", "base"), (1, "</w>", "base")]
    assert "none" in panel.detail.children_label.text()

    # Walk up: "low" is used by two later merges; double-clicking it selects its own merge.
    emitted = []
    panel.merge_selected.connect(lambda source, t: emitted.append((source, t)))
    item = root.child(0)
    panel.detail.tree.itemDoubleClicked.emit(item, 0)
    assert panel.table.currentIndex().row() == 1
    assert emitted == [(("run", run_id), low)]
    children = [panel.detail.later_merges.topLevelItem(i).text(2) for i in range(panel.detail.later_merges.topLevelItemCount())]
    assert children == ["lowe", "low</w>"]


def test_never_used_entries_are_counted_in_the_background(panel, worked_project, qtbot):
    project, run_id = worked_project
    panel.set_project(project)
    view = panel.vocab
    with qtbot.waitSignal(view.usage_ready, timeout=20000):
        panel.tabs.setCurrentIndex(1)  # a finished run is counted when the tab is first shown
    assert "Never used: 5 of 14 entries (35.71 %)" in view.summary.text()
    view.never_only.setChecked(True)
    pieces = sorted(view.model.data(view.model.index(r, 1)) for r in range(view.model.rowCount()))
    assert pieces == ["l", "lo", "low", "o", "r"]
    assert all(view.model.data(view.model.index(r, 5)) == "never used" for r in range(view.model.rowCount()))
    view.never_only.setChecked(False)
    view.table.sortByColumn(4, Qt.SortOrder.DescendingOrder)  # by corpus frequency, in SQL
    top = [(view.model.data(view.model.index(r, 1)), view.model.data(view.model.index(r, 4))) for r in range(3)]
    assert top == [("e", "2"), ("lowe", "2"), ("r</w>", "2")]

    # Switching away and back shows the cached numbers at once, without a job.
    panel.set_project(None)
    panel.set_project(project)
    panel.tabs.setCurrentIndex(0)
    panel.tabs.setCurrentIndex(1)
    assert not view.job.is_running() and view.usage is not None
    assert "35.71 %" in view.summary.text()


def test_counting_can_be_cancelled(panel, tmp_path, qtbot):
    from workbench.tasks.train import train_into_project

    corpus = tmp_path / "big.txt"
    corpus.write_text(" ".join(f"w{i % 5000}x{i % 37}" for i in range(300_000)), encoding="utf-8")
    project = tmp_path / "c.tokproj"
    train_into_project([str(corpus)], project, WORKED_CONFIG, name="c")
    panel.set_project(project)
    panel.tabs.setCurrentIndex(1)
    view = panel.vocab
    assert view.job.is_running() and view.cancel_button.isVisible()
    view.cancel_button.click()
    assert not view.job.is_running() and view.usage is None
    assert "not counted" in view.summary.text()
    view.count_button.click()  # and counting again still works
    qtbot.waitUntil(lambda: view.usage is not None, timeout=30000)


def test_reference_tokenizers_are_browsable(panel, tmp_path):
    a, _b = hand_pair()
    project = tmp_path / "refs.tokproj"
    with ProjectStore.open(project, create=True) as store:
        ref = store.add_reference("A", a, fmt="hf", source_path="a.json", sha256="0" * 64)
    panel.set_project(project)
    assert panel.current_source() == ("ref", ref)
    assert panel.model.rowCount() == 3
    assert panel.model.data(panel.model.index(1, 3)) == "abc"
    assert panel.model.data(panel.model.index(1, 4)) == "—"  # references record no frequencies
    assert not panel.freq_min.isEnabled()
    panel.set_filter("bc", field="result")
    assert [panel.model.data(panel.model.index(r, 3)) for r in range(panel.model.rowCount())] == ["abc", "bc"]
    panel.select_token(("ref", ref), 4)
    assert panel.detail.title.text() == "abc"


def test_bad_regex_is_reported_and_the_rows_stay(panel, worked_project):
    project, _ = worked_project
    panel.set_project(project)
    panel.set_filter("(lo", regex=True)
    assert panel.error.isVisible() and "regular expression" in panel.error.text()
    assert panel.model.rowCount() == 5
    panel.set_filter("^lo", regex=True, field="result")
    assert not panel.error.isVisible()
    assert panel.model.rowCount() == 4  # lo, low, lowe, low</w>


def test_compare_two_tokenizers(panel, tmp_path, qtbot):
    project, ra, rb = diff_project(tmp_path)
    panel.set_project(project)
    panel.tabs.setCurrentIndex(2)
    diff = panel.diff
    diff.choose(("ref", ra), ("ref", rb))
    with qtbot.waitSignal(diff.diff_ready, timeout=20000):
        diff.compare_button.click()
    only_a = diff.models["only_a"]
    assert [only_a.data(only_a.index(r, 0)) for r in range(only_a.rowCount())] == ["abc"]
    assert diff.models["only_b"].rowCount() == 0
    shared = diff.models["shared"]
    shifts = {shared.data(shared.index(r, 0)): shared.data(shared.index(r, 5)) for r in range(shared.rowCount())}
    assert shifts == {"a": "—", "b": "—", "c": "—", "ab": "+1", "bc": "-2"}
    words = diff.models["words"]
    assert [[words.data(words.index(0, c)) for c in range(6)]] == [["abc", "5", "1", "abc", "2", "a | bc"]]
    assert diff.tabs.tabText(3) == "Words split differently (1)"
    assert "1</b> of 4 distinct words" in diff.summary.text()
    # Sorting the shared table by rank shift puts bc (-2) first, ab (+1) last among the numbers.
    diff.tables["shared"].sortByColumn(5, Qt.SortOrder.AscendingOrder)
    assert shared.data(shared.index(0, 0)) == "bc" and shared.data(shared.index(1, 0)) == "ab"


def test_compare_the_same_tokenizer_twice_is_refused(panel, tmp_path):
    project, ra, _rb = diff_project(tmp_path)
    panel.set_project(project)
    panel.diff.choose(("ref", ra), ("ref", ra))
    panel.diff.compare_button.click()
    assert "same tokenizer" in panel.diff.error.text()
    assert not panel.diff.job.is_running()
