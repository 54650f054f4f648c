"""Issue 14: the rough edges a first-time user hit outside the Corpus tab (window, Inspect, Merges)."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog
from ui_helpers import train_cli, wait_for_curves

from workbench.ui.main_window import SAVED_MESSAGE
from workbench.ui.settings import documents_folder, inside_installation


def test_an_imported_reference_is_offered_in_the_merges_tab_at_once(make_window, qtbot, project, small_corpus,
                                                                     tmp_path):
    train_cli(small_corpus, project, "--merges", "12")
    window = make_window(project)
    (run_id,) = window.training.history.run_ids()
    out = tmp_path / "tokenizer.json"
    with qtbot.waitSignal(window.export_finished, timeout=60000):
        window.export_run(run_id, "hf", str(out))
    with qtbot.waitSignal(window.import_finished, timeout=60000) as imported:
        window.import_tokenizer(str(out))
    assert imported.args[0], imported.args[1]
    (ref,) = window.session.store.references()
    chooser = window.merges.chooser
    offered = [tuple(chooser.itemData(i)) for i in range(chooser.count())]
    assert ("ref", ref.id) in offered
    for combo in (window.merges.diff.combo_a, window.merges.diff.combo_b):
        assert ("ref", ref.id) in [tuple(combo.itemData(i)) for i in range(combo.count())]


def test_an_import_from_the_inspect_tab_reaches_the_merges_tab(make_window, qtbot, project, small_corpus, tmp_path):
    train_cli(small_corpus, project, "--merges", "12")
    window = make_window(project)
    (run_id,) = window.training.history.run_ids()
    out = tmp_path / "tokenizer.json"
    with qtbot.waitSignal(window.export_finished, timeout=60000):
        window.export_run(run_id, "hf", str(out))
    with qtbot.waitSignal(window.inspect.import_finished, timeout=60000) as imported:
        window.inspect.import_file(out)
    assert imported.args[0].error is None
    (ref,) = window.session.store.references()
    chooser = window.merges.chooser
    assert ("ref", ref.id) in [tuple(chooser.itemData(i)) for i in range(chooser.count())]


def test_four_inspect_columns_keep_the_window_within_1280_px(make_window, qtbot, project, small_corpus):
    train_cli(small_corpus, project, "--merges", "12", "--name",
              "a long run name that once widened every column of the Inspect tab by itself")
    window = make_window(project)
    window.show_panel("inspect")
    for _ in range(3):
        assert window.inspect.add_pane() is not None
    qtbot.waitUntil(lambda: window.inspect.colouring_done(), timeout=15000)
    assert len(window.inspect.panes) == 4
    assert window.minimumSizeHint().width() <= 1280
    assert window.inspect.minimumSizeHint().width() <= 1000


def _press(qtbot, window, key, modifier=Qt.KeyboardModifier.ControlModifier):
    """A real key press: shortcuts only fire in the active window, at the focused widget."""
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    qtbot.keyClick(QApplication.focusWidget() or window, key, modifier)


def test_tabs_switch_with_ctrl_page_and_ctrl_tab_and_alt_numbers(make_window, qtbot, project):
    window = make_window(project)
    qtbot.waitExposed(window)
    window.show_panel("corpus")
    _press(qtbot, window, Qt.Key.Key_PageDown)
    assert window.current_panel == "train"
    _press(qtbot, window, Qt.Key.Key_Tab)
    assert window.current_panel == "inspect"
    _press(qtbot, window, Qt.Key.Key_PageUp)
    assert window.current_panel == "train"
    _press(qtbot, window, Qt.Key.Key_4, Qt.KeyboardModifier.AltModifier)
    assert window.current_panel == "merges"
    assert all(not d.isHidden() for d in window.docks.values())  # no Ctrl+N hid a panel
    for act in window.actions():  # no panel toggle is bound to Ctrl+digit any more
        assert not any(re.fullmatch(r"Ctrl\+\d", s.toString()) for s in act.shortcuts())


def test_ctrl_f_focuses_the_merge_filter(make_window, qtbot, project, small_corpus):
    train_cli(small_corpus, project, "--merges", "5")
    window = make_window(project)
    qtbot.waitExposed(window)
    window.show_panel("train")
    _press(qtbot, window, Qt.Key.Key_F)
    assert window.current_panel == "merges"
    qtbot.waitUntil(lambda: window.merges.filter.edit.hasFocus(), timeout=5000)


def test_ctrl_s_says_a_named_project_is_saved_and_asks_a_name_for_an_untitled_one(make_window, qtbot, project,
                                                                                 tmp_path, monkeypatch):
    window = make_window(project)
    qtbot.waitExposed(window)
    _press(qtbot, window, Qt.Key.Key_S)
    assert window.statusBar().currentMessage() == SAVED_MESSAGE
    window.new_project()
    asked = []

    def fake_dialog(parent, title, suggested, _filter):
        asked.append(suggested)
        return str(tmp_path / "named.tokproj"), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake_dialog))
    _press(qtbot, window, Qt.Key.Key_S)
    qtbot.waitUntil(lambda: not window.is_opening(), timeout=30000)  # Save As copies and opens on a worker
    assert asked and window.session.path == tmp_path / "named.tokproj" and not window.session.untitled


def test_file_dialogs_never_start_inside_the_installation(make_window, qtbot, project):
    from workbench.corpus import demo_corpus_files

    window = make_window(project)
    demo_folder = Path(demo_corpus_files()[0]).parent
    window.settings.last_folder = str(demo_folder)  # what adding the demo corpus used to leave behind
    start = Path(window.settings.last_folder)
    assert not inside_installation(start) and start.is_dir()
    assert start == Path(documents_folder())
    window.settings.last_folder = str(project.parent)  # an ordinary folder is kept
    assert window.settings.last_folder == str(project.parent)


def test_the_guide_opens_with_the_demo_walks_the_tabs_and_can_stay_closed(make_window, qtbot):
    window = make_window()
    window.start_demo()
    qtbot.waitUntil(lambda: not window.corpus.is_scanning(), timeout=30000)
    assert window.guide_bar.isVisible() and window.guide.step.key == "corpus"
    keys = []
    for _ in range(4):
        qtbot.mouseClick(window.guide.next_button, Qt.MouseButton.LeftButton)
        keys.append(window.guide.step.key)
    assert keys == ["train", "inspect", "merges", "compare"]
    assert window.current_panel == "compare"
    window.guide.dont_show.setChecked(True)
    qtbot.mouseClick(window.guide.close_button, Qt.MouseButton.LeftButton)
    assert not window.guide_bar.isVisible() and window.settings.show_guide is False
    window.start_demo()
    assert not window.guide_bar.isVisible()
    window.act_guide.trigger()  # Help ▸ Show the Guide brings it back
    assert window.guide_bar.isVisible() and window.guide.step.key == "corpus"


def test_the_inspect_session_comes_back_when_the_project_is_reopened(make_window, qtbot, project, small_corpus):
    train_cli(small_corpus, project, "--merges", "12")
    train_cli(small_corpus, project, "--merges", "6")
    window = make_window(project)
    inspect = window.inspect
    inspect.set_text("lower\r\nnewest")
    assert inspect.primary.set_source(("run", 2))
    assert inspect.add_pane(("run", 1)) is not None
    inspect.boundary_marks.setChecked(True)
    assert window.close()  # closing keeps the session in the project
    again = make_window(project).inspect
    assert again.text() == "lower\r\nnewest" and again.separator() == "\r\n"
    assert [p.source() for p in again.panes] == [("run", 2), ("run", 1)]
    assert again.boundary_marks.isChecked()
    # It is kept out of the list of texts the user keeps.
    assert [name for _id, name, _text in again.saved_texts()] == []


def test_the_status_bar_says_paused_and_a_new_run_starts_with_fresh_axes(make_window, qtbot, project, small_corpus,
                                                                         long_corpus):
    window = make_window(project, small_corpus)
    panel = window.training
    window.show_panel("train")
    panel.set_options(merges=60)
    with qtbot.waitSignal(panel.run_finished, timeout=60000):
        assert panel.start()
    vocab_plot = panel.plots.plots["vocab"]
    assert vocab_plot.vb.viewRange()[0][1] >= 60  # the finished run's x range

    with qtbot.waitSignal(window.corpus.scan_finished, timeout=20000):
        window.corpus.add_paths([str(long_corpus)], prompt=False)
    panel.set_options(merges=1_000_000)
    ranges = []
    panel.run_started.connect(lambda _rid: ranges.append(vocab_plot.vb.viewRange()[0][1]))
    with qtbot.waitSignal(panel.run_started, timeout=30000):
        assert panel.start()
    assert ranges and ranges[0] < 60  # reset on start, not the last run's axis
    assert "training" in window.run_label.text() or "reading" in window.run_label.text()
    qtbot.waitUntil(lambda: panel.process.state == "training", timeout=20000)
    assert panel.pause()
    assert window.run_label.text() == "● paused"
    with qtbot.waitSignal(panel.run_finished, timeout=30000):
        panel.cancel()
    assert window.run_label.text() == ""


def test_every_table_text_and_chart_has_a_name_and_takes_the_keyboard(make_window, qtbot, project):
    from PySide6.QtWidgets import QAbstractItemView, QComboBox, QGraphicsView, QHeaderView, QPlainTextEdit

    window = make_window(project)
    seen = 0
    for cls in (QAbstractItemView, QPlainTextEdit, QGraphicsView):
        for view in window.findChildren(cls):
            if isinstance(view, QHeaderView) or isinstance(view.parentWidget().parentWidget(), QComboBox):
                continue
            seen += 1
            assert view.accessibleName(), f"{type(view).__name__} has no accessible name"
            assert view.focusPolicy() != Qt.FocusPolicy.NoFocus, view.accessibleName()
    assert seen >= 15
    assert window.training.plots.view.accessibleName() == "Training curves"
    assert window.training.history.tree.accessibleName() == "Runs"


def test_the_overlay_legend_covers_no_curve(make_window, qtbot, project, small_corpus):
    import numpy as np
    from PySide6.QtCore import QPointF

    for merges in ("40", "80", "120"):
        train_cli(small_corpus, project, "--merges", merges)
    window = make_window(project)
    window.show_panel("train")
    plots = window.training.plots
    window.training.history.select(window.training.history.run_ids())
    qtbot.waitUntil(lambda: len(plots.runs) == 3 and plots.legend.isVisible(), timeout=10000)
    wait_for_curves(qtbot, plots, list(plots.runs))  # each run's points from a worker, drawn a plot per turn
    plots.redraw()
    qtbot.wait(50)  # one paint, so the legend has its laid-out size
    box = plots.legend.sceneBoundingRect()
    assert box.width() > 0
    for name, plot in plots.plots.items():
        if not plot.sceneBoundingRect().intersects(box):
            continue
        for rid in plots.runs:
            x, y = plots.curve_data(rid, name)
            ys = np.log10(np.maximum(y, 1e-9)) if name == "frequency" else y
            for px, py in zip(x, ys):
                assert not box.contains(plot.vb.mapViewToScene(QPointF(float(px), float(py)))), (name, rid, px)


def test_message_boxes_fit_their_title_and_the_export_report_fits_the_status_bar(make_window, qtbot, project,
                                                                                 small_corpus, tmp_path):
    from PySide6.QtWidgets import QMessageBox

    from workbench.ui.dialogs import fit_title

    title = "Cannot import the tokenizer because of a rather long reason"
    box = QMessageBox(QMessageBox.Icon.Warning, title, "short", QMessageBox.StandardButton.Ok)
    qtbot.addWidget(box)
    need = box.fontMetrics().horizontalAdvance(title) + 100  # the title plus the window's buttons
    assert box.sizeHint().width() < need  # sized from its text alone, the title would be clipped
    fit_title(box)
    assert box.sizeHint().width() >= need

    train_cli(small_corpus, project, "--merges", "12")
    window = make_window(project)
    (run_id,) = window.training.history.run_ids()
    out = tmp_path / "tokenizer.json"
    with qtbot.waitSignal(window.export_finished, timeout=60000) as done:
        window.export_run(run_id, "hf", str(out))
    full = done.args[1]
    shown = window.statusBar().currentMessage()
    assert str(out) in full and len(shown) <= 110 and full.startswith(shown.rstrip("…"))
    assert window.statusBar().toolTip() == full


def test_the_train_tab_is_walked_by_tab_alone(make_window, qtbot, project, small_corpus):
    window = make_window(project, small_corpus)
    qtbot.waitExposed(window)
    panel = window.training
    window.show_panel("train")
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    panel.model_combo.setFocus(Qt.FocusReason.TabFocusReason)
    wanted = {panel.start_button, panel.size_spin, panel.history.tree}
    reached = set()
    for _ in range(80):
        widget = QApplication.focusWidget()
        reached.add(widget)
        if wanted <= reached:
            break
        qtbot.keyClick(widget, Qt.Key.Key_Tab)
    assert wanted <= reached, [w.accessibleName() or type(w).__name__ for w in wanted - reached]


def test_ctrl_tab_switches_tabs_even_from_the_inspect_editor(make_window, qtbot, project):
    window = make_window(project)
    qtbot.waitExposed(window)
    window.show_panel("inspect")
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    editor = window.inspect.primary.editor
    editor.setFocus()
    before = editor.toPlainText()
    qtbot.keyClick(editor, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert window.current_panel == "merges"
    assert editor.toPlainText() == before  # no tab typed into the text


def test_the_inspect_import_dialog_starts_in_the_last_folder(make_window, qtbot, project, tmp_path, monkeypatch):
    window = make_window(project)
    window.settings.last_folder = str(tmp_path)
    started = []

    def fake_dialog(parent, title, folder, _filter):
        started.append(folder)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(fake_dialog))
    window.inspect._on_import_clicked()
    assert started == [str(tmp_path)]


def test_the_runs_row_keeps_pace_with_the_plots(make_window, qtbot, project, long_corpus):
    import time

    window = make_window(project, [long_corpus])
    panel = window.training
    window.show_panel("train")
    panel.set_options(merges=1_000_000)
    with qtbot.waitSignal(panel.run_started, timeout=30000) as started:
        assert panel.start()
    run_id = started.args[0]
    qtbot.waitUntil(lambda: panel.plots.last_step(run_id) > 0, timeout=20000)
    panel.poll_timer.stop()  # drive the reads by hand from here
    try:
        qtbot.waitUntil(lambda: bool(window.session.steps(run_id, panel.plots.last_step(run_id))), timeout=20000)
        panel._last_merges_signal = time.monotonic()  # inside the other tabs' rate limit
        panel._tick()
        merges = int(panel.history.item_for(run_id).text(3).replace(",", ""))
        assert merges >= panel.plots.last_step(run_id)  # the row was read with (after) the plots
    finally:
        with qtbot.waitSignal(panel.run_finished, timeout=30000):
            panel.cancel()
