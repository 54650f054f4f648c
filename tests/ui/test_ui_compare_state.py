"""The Compare tab's state through the real window: Save As keeps its ticks (now naming the copy),
New Project starts it afresh, and closing and reopening a project brings back the selection, the
table and the sweeps (counted again from the metrics cache, off the GUI thread)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.cli import run_cli


@pytest.fixture
def two_runs(tmp_path, small_corpus):
    project = tmp_path / "two.tokproj"
    for merges in ("20", "40"):
        assert run_cli(["train", str(small_corpus[0]), "--project", str(project), "--merges", merges,
                        "--progress", "none"]) == 0
    return project


def tick_only(compare, srcs):
    for i in range(compare.tokenizer_list.count()):
        item = compare.tokenizer_list.item(i)
        item.setCheckState(Qt.CheckState.Checked if item.data(Qt.ItemDataRole.UserRole) in srcs
                           else Qt.CheckState.Unchecked)


def compute(qtbot, compare):
    with qtbot.waitSignal(compare.computed, timeout=60_000) as blocker:
        assert compare.compute()
    return blocker.args[0]


def test_save_as_keeps_the_ticks_and_results_naming_the_copy(make_window, qtbot, two_runs, small_corpus, tmp_path):
    window = make_window(two_runs)
    compare = window.compare
    tick_only(compare, {f"{two_runs}#2"})
    compare.add_corpus_file(small_corpus[1], language="xx")
    result = compute(qtbot, compare)
    copy = tmp_path / "saved" / "copy.tokproj"
    copy.parent.mkdir()
    assert window.save_as_path(copy)
    qtbot.waitUntil(lambda: window.session.path == copy)
    # project_changed's followers run on later turns of the event loop (after_open): wait for them
    # all, not a fixed 50 ms (a loaded machine can take longer).
    qtbot.waitUntil(lambda: not window.session.settling() and not window.is_opening(), timeout=30000)
    assert compare.checked_sources() == [f"{copy}#2"]
    assert [p for p, _o, _l in compare.checked_files()] == [str(small_corpus[0]), str(small_corpus[1])]
    assert compare.checked_files()[1][2] == "xx"
    assert compare.result is result and compare.file_model.rowCount() == 2
    # The copy carries the Compare session (its SRCs relative to the project, so they name the copy).
    stored = window.session.compare_session()
    assert [t["src"] for t in stored["tokenizers"] if t["checked"]] == ["#2"]
    assert stored["results"]["tokenizers"][0][1] == "#2"


def test_new_project_starts_the_compare_tab_afresh(make_window, qtbot, two_runs, small_corpus):
    window = make_window(two_runs)
    compare = window.compare
    compare.add_corpus_file(small_corpus[1])
    compute(qtbot, compare)
    compare.sweep_points.setValue(3)
    with qtbot.waitSignal(compare.swept, timeout=60_000):
        assert compare.run_sweep()
    assert compare.sweep_chart.sweeps
    assert window.new_project()
    qtbot.waitUntil(lambda: window.session.untitled)
    qtbot.waitUntil(lambda: not window.session.settling() and not window.is_opening(), timeout=30000)
    assert compare.files.rowCount() == 0 and compare.tokenizer_list.count() == 0
    assert compare.result is None and compare.file_model.rowCount() == 0
    assert not compare.sweep_chart.sweeps and not compare.bar_chart.values
    assert compare.sweep_source.count() == 0


def test_the_selection_and_results_come_back_when_the_project_is_reopened(make_window, qtbot, two_runs,
                                                                          small_corpus, tmp_path):
    extra = tmp_path / "extra_de.txt"
    extra.write_text("ganz neuer Text hier\n" * 5, encoding="utf-8")
    window = make_window(two_runs)
    compare = window.compare
    tick_only(compare, {f"{two_runs}#2"})
    compare.add_corpus_file(extra)
    compare.add_corpus_file(small_corpus[1])
    compare.set_file_checked(small_corpus[1], False)
    compare.set_language(small_corpus[0], "en")
    compare.d_spin.setValue(512)
    compare.alpha_spin.setValue(3.0)
    compare.basis_combo.setCurrentIndex(compare.basis_combo.findData("observed"))
    result = compute(qtbot, compare)
    compare.sweep_source.setCurrentIndex(compare.sweep_source.findData(f"{two_runs}#2"))
    compare.sweep_points.setValue(3)
    with qtbot.waitSignal(compare.swept, timeout=60_000) as swept:
        assert compare.run_sweep()
    sweep = swept.args[0]
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible())

    again = make_window(two_runs)
    back = again.compare
    qtbot.waitUntil(lambda: back.result is not None and bool(back.sweep_chart.sweeps), timeout=60_000)
    assert back.checked_sources() == [f"{two_runs}#2"]
    assert [(p, lang) for p, _o, lang in back.checked_files()] == [(str(small_corpus[0]), "en"), (str(extra), "")]
    assert back.files.row_of(str(small_corpus[1])) is not None and not back.files.ticked[
        back.files.row_of(str(small_corpus[1]))]
    assert back.d_spin.value() == 512
    assert back.alpha_spin.value() == 3.0 and back.basis_combo.currentData() == "observed"
    assert back.result.totals[0].renyi_efficiency == result.totals[0].renyi_efficiency  # α 3, observed |V|
    assert (back.result.totals[0].alpha, back.result.totals[0].basis) == (3.0, "observed")
    assert [(m.tokenizer, m.label, m.tokens) for m in back.result.per_file] == \
        [(m.tokenizer, m.label, m.tokens) for m in result.per_file]
    assert back.file_model.rowCount() == 2 and back.result.cache_hits == 4  # all from the cache
    (restored,) = back.sweep_chart.sweeps
    assert [(p.vocab_size, p.tokens) for p in restored.points] == [(p.vocab_size, p.tokens) for p in sweep.points]


def test_a_project_only_looked_at_is_not_written_for_the_compare_tab(make_window, qtbot, two_runs):
    window = make_window(two_runs)
    qtbot.waitUntil(lambda: window.compare.tokenizer_list.count() == 2)
    assert window.compare.session_state() == {}
    window._save_inspect_session()  # what leaving the project does
    assert window.session.compare_session() == {}  # nothing stored: the default listing comes back by itself
