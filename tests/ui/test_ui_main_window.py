"""The main window: closing with a run in progress, rename/delete, demo start, Save As, export/import."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QMessageBox
from ui_helpers import proc_state, train_cli

from workbench.store import ProjectStore

B = QMessageBox.StandardButton


def test_closing_with_a_running_run_asks_then_cancels_it_cleanly(make_window, qtbot, project, long_corpus, answer):
    window = make_window(project, [long_corpus])
    panel = window.training
    panel.set_options(merges=1_000_000)
    with qtbot.waitSignal(panel.run_started, timeout=30000) as started:
        assert panel.start()
    run_id = started.args[0]
    qtbot.waitUntil(lambda: panel.plots.point_count() > 0, timeout=20000)
    pid = panel.process.pid

    keep = answer(B.Cancel)
    assert not window.close()  # the user said Cancel: the window and the run stay
    assert keep.texts and "in progress" in keep.texts[0]
    assert window.isVisible() and panel.is_training()

    stop = answer(B.Close)
    assert window.close()
    assert stop.texts
    assert not panel.is_training()
    if sys.platform.startswith("linux"):
        assert not Path(f"/proc/{pid}").exists() or proc_state(pid) == "Z"
    with ProjectStore.open(project, readonly=True) as store:
        info = store.run(run_id)
        stored = len(store.steps(run_id))
    assert info.status == "cancelled"
    assert info.merge_count == stored > 0


def test_rename_and_delete_runs(make_window, qtbot, project, small_corpus, answer):
    train_cli(small_corpus, project, "--merges", "5", "--name", "first")
    train_cli(small_corpus, project, "--merges", "6", "--name", "second")
    window = make_window(project)
    history = window.training.history
    first_id, second_id = sorted(history.run_ids())

    item = history.item_for(first_id)
    item.setText(0, "renamed run")  # what editing the cell in place does
    with ProjectStore.open(project, readonly=True) as store:
        assert store.run(first_id).name == "renamed run"
    assert window.training.history.item_for(first_id).text(0) == "renamed run"

    history.select([second_id])
    box = answer(B.Cancel)
    history.delete_button.click()
    assert box.texts and "second" in box.texts[0]
    with ProjectStore.open(project, readonly=True) as store:
        assert [r.id for r in store.runs()] == [first_id, second_id]  # Cancel kept it

    box = answer(B.Yes)
    history.delete_button.click()
    assert box.texts
    with ProjectStore.open(project, readonly=True) as store:
        assert [r.id for r in store.runs()] == [first_id]
        assert store.steps(second_id) == []
    assert history.run_ids() == [first_id]


def test_no_arguments_open_the_demo_ready_to_train(qtbot):
    from workbench.corpus import demo_corpus_files
    from workbench.ui.app import create_window

    window = create_window([])
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: not window.corpus.is_scanning() and len(window.corpus.entries()) == 5, timeout=20000)
        assert [Path(f.path).name for f in window.corpus.files()] == [p.name for p in demo_corpus_files()]
        assert window.session.untitled and window.windowTitle().startswith("Untitled")
        assert window.training.start_button.isEnabled()
        opts = window.training.run_spec()
        assert (opts.units, opts.pretokenizer, opts.vocab_size) == ("bytes", "gpt2", 1000)
    finally:
        window.shutdown()


def test_files_on_the_command_line_start_an_untitled_project_with_them(qtbot, small_corpus):
    from workbench.ui.app import create_window, split_args

    paths, qt_args = split_args([str(small_corpus[0]), "-platform", "offscreen", str(small_corpus[1])])
    assert qt_args == ["-platform", "offscreen"]
    window = create_window(paths)
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: len(window.corpus.entries()) == 2 and not window.corpus.is_scanning(), timeout=20000)
        assert [f.path for f in window.corpus.files()] == [str(p) for p in small_corpus]
    finally:
        window.shutdown()


def test_an_untitled_project_with_a_run_is_marked_modified_and_save_as_keeps_it(make_window, qtbot, small_corpus,
                                                                                  tmp_path):
    window = make_window(None)
    window.new_project([str(p) for p in small_corpus])
    qtbot.waitUntil(lambda: len(window.corpus.entries()) == 2 and not window.corpus.is_scanning(), timeout=20000)
    assert not window.isWindowModified()
    untitled = window.session.path
    window.training.set_options(merges=8)
    with qtbot.waitSignal(window.training.run_finished, timeout=60000):
        window.training.start()
    assert window.isWindowModified() and "[*]" in window.windowTitle()

    dest = tmp_path / "kept.tokproj"
    assert window.save_as_path(dest)
    qtbot.waitUntil(lambda: not window.is_opening(), timeout=30000)  # copied and opened on a worker
    assert window.session.path == dest and not window.session.untitled
    assert not window.isWindowModified() and window.windowTitle().startswith("kept.tokproj")
    assert not untitled.exists()  # the untitled original is gone, the copy holds the run
    with ProjectStore.open(dest, readonly=True) as store:
        assert [r.merge_count for r in store.runs()] == [8]
    assert window.settings.recent_projects[0] == str(dest)
    assert len(window.corpus.entries()) == 2  # the corpus stays loaded


def test_export_and_import_run_off_the_gui_thread(make_window, qtbot, project, small_corpus, tmp_path):
    train_cli(small_corpus, project, "--merges", "12")
    window = make_window(project)
    (run_id,) = window.training.history.run_ids()
    out = tmp_path / "tokenizer.json"
    with qtbot.waitSignal(window.export_finished, timeout=60000) as done:
        window.export_run(run_id, "hf", str(out))
    ok, message = done.args
    assert ok, message
    assert out.exists() and str(out) in message
    with qtbot.waitSignal(window.import_finished, timeout=60000) as imported:
        window.import_tokenizer(str(out))
    assert imported.args[0], imported.args[1]
    assert [r.vocab_size for r in window.session.store.references()] == [256 + 12]


def test_export_refuses_an_existing_file_with_one_line(make_window, qtbot, project, small_corpus, tmp_path, answer):
    train_cli(small_corpus, project, "--merges", "3")
    window = make_window(project)
    (run_id,) = window.training.history.run_ids()
    out = tmp_path / "exists.csv"
    out.write_text("keep me", encoding="utf-8")
    box = answer(B.Ok)
    with qtbot.waitSignal(window.export_finished, timeout=60000) as done:
        window.export_run(run_id, "merges-csv", str(out))
    assert done.args[0] is False
    assert box.texts and "\n" not in box.texts[0] and "exists" in box.texts[0]
    assert "Replace existing files" in box.texts[0] and "--force" not in box.texts[0]  # the dialog's words
    assert out.read_text(encoding="utf-8") == "keep me"


def test_dropping_files_on_the_corpus_panel_adds_them(make_window, qtbot, project, small_corpus):
    window = make_window(project)
    panel = window.corpus
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in small_corpus])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(panel.scan_finished, timeout=20000):
        panel.dropEvent(event)
    assert sorted(e.source.path.name for e in panel.entries()) == ["a.txt", "b.txt"]


def test_inspect_and_merges_panes_are_never_blank(make_window, project):
    from workbench.ui.empty_state import EmptyState

    window = make_window(project)
    for key, attr, cls_name in (("inspect", "inspect", "InspectPanel"), ("merges", "merges", "MergePanel")):
        widget = window.docks[key].widget()
        panel = getattr(window, attr)
        if panel is None:
            assert isinstance(widget, EmptyState)
            assert "not available" in widget.title.text()
        else:
            assert type(widget).__name__ == cls_name


def test_window_layout_and_recent_files_survive_a_restart(make_window, qtbot, project, small_corpus):
    train_cli(small_corpus, project, "--merges", "2")
    window = make_window(project)
    window.resize(780, 520)  # within the offscreen screen (800 × 600); the height is what we check
    size = window.size()
    window.docks["merges"].hide()
    window.close()
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    again = MainWindow(AppSettings())  # a new window reads the same (typed) settings
    qtbot.addWidget(again)
    try:
        assert again.settings.recent_projects == [str(project)]
        assert again.docks["merges"].isHidden() and not again.docks["train"].isHidden()
        assert abs(again.height() - size.height()) <= 2
        assert again.height() != 820  # not the default size
    finally:
        again.shutdown()


def test_every_empty_state_symbol_is_drawn_by_the_window_font(make_window, qtbot, project):
    """An empty state's symbol in a font the machine lacks (an emoji without an emoji font: the bundle on a
    bare Linux) shows as a box; each one the window builds must be in the font it is drawn with.
    The train pane's button and text follow the mode (Train / Extend)."""
    from PySide6.QtGui import QFontMetrics

    from workbench.ui.empty_state import EmptyState

    window = make_window(project)
    states = window.findChildren(EmptyState)
    assert len(states) >= 3
    for state in states:
        symbol = state.symbol.text()
        metrics = QFontMetrics(state.symbol.font())
        assert all(metrics.inFontUcs4(ord(c)) for c in symbol), (state.title.text(), symbol)
    panel = window.training
    panel.extend_radio.setChecked(True)
    assert panel.plot_empty_train.text() == "Extend" and "Extend" in panel.plot_empty.body.text()
    panel.scratch_radio.setChecked(True)
    assert panel.plot_empty_train.text() == "Train" and "Train" in panel.plot_empty.body.text()
