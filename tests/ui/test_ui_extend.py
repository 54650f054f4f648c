"""The Train tab's "Extend an existing tokenizer": a real child extends cl100k; the live plots hold the
new merges (after the base's), the report shows the child's numbers; a long extension cancels."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from shared_corpora import CORPORA, require_corpora

from workbench.store import ProjectStore

SHOTS = os.environ.get("WORKBENCH_SCREENSHOTS")  # a folder: the test leaves its grabs there


def _slice(folder: Path, name: str, count: int) -> Path:
    with open(CORPORA / name, encoding="utf-8") as handle:
        lines = handle.readlines()[:count]
    path = folder / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_extending_cl100k_in_the_window_plots_the_new_merges_and_shows_the_report(
        make_window, qtbot, tmp_path, project, cl100k_file):
    require_corpora()
    ru = _slice(tmp_path, "ru_fortunes.txt", 1500)
    reference = _slice(tmp_path, "en_wiki_taylorswift.txt", 300)
    window = make_window(project, [ru])
    window.show_panel("train")
    panel = window.training
    panel.extend_radio.setChecked(True)
    assert panel.extend_box.isVisibleTo(panel) and not panel.model_box.isVisibleTo(panel)
    assert not panel.roles_box.isVisibleTo(panel) and not panel.preflight.isVisibleTo(panel)
    assert panel.start_button.text() == "Extend"
    box = panel.extend_box
    box.base_combo.setEditText(str(cl100k_file))
    box.add_spin.setValue(300)
    box.scripts_edit.setText("Cyrillic")
    box.reference_edit.setText(str(reference))
    with qtbot.waitSignal(panel.run_finished, timeout=180_000) as finished:
        assert panel.start()
    run_id, status = finished.args
    assert status == "finished", panel.error_text()

    with ProjectStore.open(project, readonly=True) as store:
        info = store.run(run_id)
        base_merges = info.settings["extend"]["base_merges"]
        steps = store.steps(run_id, base_merges)
    assert base_merges == 100_000 and len(steps) == 300 and info.settings["extend"]["base"]["source"] == str(cl100k_file)
    qtbot.waitUntil(lambda: panel.plots.last_step(run_id) == base_merges + 300, timeout=10_000)
    x, y = panel.plots.curve_data(run_id, "vocab")
    np.testing.assert_array_equal(x, [s.step for s in steps])  # the curves begin after the base's merges
    np.testing.assert_array_equal(y, [s.vocab_size for s in steps])
    assert y[0] == 100_278 and y[-1] == 100_577

    dialog = panel.report_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    rows = {dialog.files_table.item(r, 0).text(): dialog.files_table.item(r, 2).text()
            for r in range(dialog.files_table.rowCount())}
    assert set(rows) == {"ru", "en"} and "%" in rows["ru"]
    assert "0 of 300 lines change their ids (<b>0.00 %</b>)" in dialog.reference_label.text()
    assert "Rank-dead new tokens: <b>0</b>" in dialog.summary.text()
    if SHOTS:
        window.resize(1400, 860)
        qtbot.wait(300)
        panel.plots.redraw()
        assert window.grab().save(str(Path(SHOTS) / "extend-plots.png"))
        assert dialog.grab().save(str(Path(SHOTS) / "extend-report.png"))


def test_a_long_extension_can_be_cancelled_and_keeps_its_merges(make_window, qtbot, tmp_path, project, cl100k_file):
    require_corpora()
    window = make_window(project, [CORPORA / "ru_fortunes.txt"])  # whole: merges last long enough to cancel
    panel = window.training
    panel.extend_radio.setChecked(True)
    panel.extend_box.base_combo.setEditText(str(cl100k_file))
    panel.extend_box.add_spin.setValue(200_000)
    panel.extend_box.min_freq.setValue(1)
    with qtbot.waitSignal(panel.run_started, timeout=60_000) as started:
        assert panel.start()
    run_id = started.args[0]
    qtbot.waitUntil(lambda: panel.plots.point_count() > 0, timeout=60_000)
    with qtbot.waitSignal(panel.run_finished, timeout=60_000) as finished:
        panel.cancel()
    assert finished.args == [run_id, "cancelled"]
    with ProjectStore.open(project, readonly=True) as store:
        info = store.run(run_id)
        tokenizer = store.load_tokenizer(run_id)
    made = info.merge_count - 100_000
    assert info.status == "cancelled" and 0 < made < 200_000
    assert len(tokenizer.vocab) == 100_277 + made  # what was made is kept, after every base id
    assert panel.report_dialog is None  # a cancelled extension prints no report

