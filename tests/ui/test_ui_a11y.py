"""Issue 14, accessibility: every control reached by Tab with a visible focus, names on custom widgets,
colour never the only cue, and the window's shortcuts doing what they say (real key presses)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from a11y_walk import colours_in, describe, focusable_in, walk_tab_chain
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from ui_helpers import train_cli


@pytest.fixture(scope="module")
def demo_project(tmp_path_factory) -> Path:
    """A project trained on the demo corpus (two runs), made once; each test opens a copy."""
    from workbench.corpus import demo_corpus_files

    path = tmp_path_factory.mktemp("demo") / "demo.tokproj"
    train_cli(demo_corpus_files(), path, "--merges", "60", "--name", "demo 60")
    train_cli(demo_corpus_files(), path, "--merges", "30", "--name", "demo 30")
    return path


@pytest.fixture
def demo_window(make_window, qtbot, project, demo_project):
    """The window on a copy of the demo project, with the demo corpus loaded, shown and active."""
    from workbench.corpus import demo_corpus_files

    shutil.copyfile(demo_project, project)
    window = make_window(project, demo_corpus_files())
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    return window


@pytest.mark.parametrize("tab", ["corpus", "train", "inspect", "merges", "compare"])
def test_the_tab_chain_reaches_every_control_of_each_tab_and_comes_back(demo_window, qtbot, tab):
    from workbench.ui import style

    window = demo_window
    window.show_panel(tab)
    if tab == "inspect":  # a second column: its read-only editor and controls must be walked too
        assert window.inspect.add_pane() is not None
        window.activateWindow()  # adding a column leaves no active window offscreen (see the report)
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    qtbot.wait(50)
    root = window.docks[tab].widget()
    wanted = focusable_in(root)
    assert len(wanted) >= 3, [describe(w) for w in wanted]
    unseen = []

    def shows_focus(widget):
        """Every stop is on screen, and marked: the ring over it, or the style's focus rectangle."""
        where = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
        if not window.rect().intersects(where):
            unseen.append(describe(widget))
        target = style.ring_target(widget)
        ring = QApplication.instance()._workbench_focus_ring.ring
        if target is not None and not (ring.isVisible() and ring.parentWidget() is target and not ring.size().isEmpty()):
            unseen.append(describe(widget) + " without a ring")

    chain, closed = walk_tab_chain(qtbot, wanted[0], check=shows_focus)
    back, closed_back = walk_tab_chain(qtbot, wanted[-1], key=Qt.Key.Key_Backtab)
    missing = [describe(w) for w in wanted if w not in chain]
    names = [describe(w) for w in chain]
    assert closed, f"Tab stopped at {names[-1]} after {len(chain)} stops: {names}"
    assert not missing, (missing, names)
    assert not unseen
    assert closed_back and set(wanted) <= set(back)  # Shift+Tab walks the same controls backwards


def test_every_custom_widget_has_an_accessible_name(demo_window, qtbot):
    """Each widget of a class written in ``workbench.ui`` (panels, token views, plots, charts,
    editors) is named for a screen reader, with several Inspect columns and a run on the plots."""
    import workbench.ui

    window = demo_window
    for tab in window.docks:
        window.show_panel(tab)
    window.inspect.add_pane()
    window.training.history.select(window.training.history.run_ids())
    qtbot.wait(50)
    # A label's text is its name; the focus ring is decoration laid over the focused widget.
    custom = [w for w in window.findChildren(QWidget)
              if type(w).__module__.startswith(workbench.ui.__name__ + ".") and not w.isWindow()
              and not isinstance(w, QLabel) and w.objectName() != "focusRing"]
    kinds = {type(w).__name__ for w in custom}
    assert {"TokenEditor", "TokenPane", "TrainingPlots", "RunHistory", "LanguageBarChart", "SweepChart",
            "IdsView", "VocabView", "MergeDetail"} <= kinds, kinds
    unnamed = sorted({f"{type(w).__module__}.{type(w).__name__}" for w in custom if not w.accessibleName()})
    assert not unnamed, "\n".join(unnamed)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_focus_ring_stands_out_from_every_colour_around_it(qapp, theme):
    """WCAG 2.x non-text contrast (≥ 3:1): the ring against the window, fields, buttons and rows; on a
    selected cell, where the ring is close to the selection colour, the line inside it carries it."""
    from PySide6.QtGui import QPalette

    from workbench.ui import style

    palette = style.dark_palette() if theme == "dark" else style.light_palette()
    ring, inner = style.focus_colours(palette)
    roles = QPalette.ColorRole
    for role in (roles.Window, roles.Base, roles.AlternateBase, roles.Button):
        assert style.contrast_ratio(ring, palette.color(role)) >= 3.0, role
    highlight = palette.color(roles.Highlight)
    assert style.contrast_ratio(inner, highlight) >= 3.0
    assert style.contrast_ratio(ring, inner) >= 3.0
    # The formula itself, on the WCAG reference points.
    assert style.contrast_ratio(QColor("#000000"), QColor("#ffffff")) == pytest.approx(21.0)
    assert style.contrast_ratio(QColor("#777777"), QColor("#ffffff")) == pytest.approx(4.48, abs=0.01)


@pytest.fixture
def themed(qapp):
    """Switch the app's palette for one test and put the light one back afterwards."""
    from workbench.ui import style

    yield lambda theme: style.apply_theme(qapp, theme)
    style.apply_theme(qapp, "light")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_ring_is_painted_on_a_button_a_combo_a_table_cell_and_the_token_editor(demo_window, qtbot, themed,
                                                                                   theme):
    from workbench.ui import style

    window = demo_window
    themed(theme)
    ring, inner = (c.name() for c in style.focus_colours())

    def focused_grab(widget):
        widget.setFocus(Qt.FocusReason.TabFocusReason)
        qtbot.waitUntil(widget.hasFocus, timeout=3000)
        qtbot.wait(20)
        return widget.grab().toImage()

    window.show_panel("inspect")
    inspect = window.inspect
    for widget in (inspect.add_button, inspect.special_mode, inspect.primary.editor):
        image = focused_grab(widget)
        mid = image.height() // 2
        edge = colours_in(image, 0, mid, 2, mid + 1)
        assert edge == {ring}, (type(widget).__name__, edge)
        assert QColor(image.pixel(2, mid)).name() == inner
        widget.clearFocus()
        qtbot.wait(20)
        assert QColor(widget.grab().toImage().pixel(0, mid)).name() != ring  # only while focused

    window.show_panel("merges")
    table = window.merges.table
    qtbot.waitUntil(lambda: table.model().rowCount() > 3, timeout=10000)
    table.setCurrentIndex(table.model().index(2, 1))
    image = focused_grab(table.viewport())
    cell = table.visualRect(table.currentIndex())
    mid = cell.center().y()
    assert QColor(image.pixel(cell.left(), mid)).name() == ring
    assert QColor(image.pixel(cell.left() + 2, mid)).name() == inner
    assert table.selectionModel().isSelected(table.currentIndex())  # the cell sits on the selection colour


def test_boundary_marks_are_remembered_across_windows_and_drawn_in_the_text(demo_window, make_window, qtbot):
    """Colour is never the only cue: the thin token-boundary mark is a preference kept in QSettings."""
    from workbench.ui.settings import AppSettings

    inspect = demo_window.inspect
    demo_window.show_panel("inspect")
    assert not inspect.boundary_marks.isChecked()
    editor = inspect.primary.editor
    qtbot.waitUntil(lambda: inspect.colouring_done(), timeout=15000)
    before = editor.viewport().grab().toImage()
    inspect.boundary_marks.setChecked(True)
    assert editor.boundary_marks and editor.viewport().grab().toImage() != before
    assert AppSettings().boundary_marks
    second = make_window().inspect
    assert second.boundary_marks.isChecked() and second.primary.editor.boundary_marks
    second.boundary_marks.setChecked(False)
    assert not AppSettings().boundary_marks


def _grey(icon) -> bytes:
    """The icon drawn in grey levels: what is left of it for a reader who cannot tell its colours."""
    from PySide6.QtGui import QImage

    image = icon.pixmap(32, 32).toImage().convertToFormat(QImage.Format.Format_Grayscale8)
    return bytes(image.constBits())


def test_run_status_reads_as_a_word_and_a_glyph_not_only_a_colour(qtbot):
    from workbench.store.rows import RunInfo
    from workbench.ui.train.run_history import RunHistory

    history = RunHistory()
    qtbot.addWidget(history)
    statuses = ["finished", "failed", "cancelled", "interrupted", "running"]
    runs = [RunInfo(i + 1, f"run {i + 1}", status, {}, 300, 44, 1.7e9, 1.7e9 + 5, {}, None, ())
            for i, status in enumerate(statuses)]
    history.set_runs(runs, live_run=5)
    shown = {}
    for run in runs:
        item = history.item_for(run.id)
        assert item.text(1) == run.status  # the word itself, in its own column
        shown[run.status] = _grey(item.icon(0))
    assert len(set(shown.values())) == len(statuses)  # each icon differs even in grey (its glyph)


def test_overlaid_series_differ_by_line_style_marker_and_hatch(demo_window, qtbot, project):
    """Train curves, the sweep chart and the language bars: series differ in more than colour."""
    from workbench.corpus import demo_corpus_files
    from workbench.corpus.source import open_source
    from workbench.tasks.compare import compare_corpus, sweep_files
    from workbench.tasks.sources import load_tokenizer
    from workbench.ui import style
    from workbench.ui.compare.charts import LanguageBarChart, SweepChart

    window = demo_window
    plots = window.training.plots
    window.training.history.select(window.training.history.run_ids())
    qtbot.waitUntil(lambda: len(plots.runs) == 2, timeout=10000)
    # the curve items are made in the turns that draw their plots, after the selection's
    qtbot.waitUntil(lambda: all("vocab" in c.items for c in plots.runs.values()) and not plots.drawing(),
                    timeout=10000)
    pens = [c.items["vocab"].opts["pen"] for c in plots.runs.values()]
    assert len({p.style() for p in pens}) == 2 and len({p.color().name() for p in pens}) == 2

    tokenizers = [(f"run {i}", load_tokenizer(f"{project}#{i}")) for i in (1, 2)]
    sources = [open_source(p) for p in demo_corpus_files()[:2]]
    sweeps = [sweep_files(tok, sources, name=name, points=4) for name, tok in tokenizers]
    chart = SweepChart()
    qtbot.addWidget(chart)
    chart.set_sweeps(sweeps)
    curves = [item for item in chart.plots[0].listDataItems()]
    assert len(curves) == 2
    assert len({c.opts["symbol"] for c in curves}) == 2
    assert len({c.opts["pen"].style() for c in curves}) == 2

    result = compare_corpus(tokenizers, sources)
    bars = LanguageBarChart()
    qtbot.addWidget(bars)
    bars.set_rows(result.per_language, result.fairness, None)
    assert len(bars.bars) == 2
    hatches = [bar.opts["brush"].style() for bar in bars.bars]
    assert hatches == [style.run_hatch(0), style.run_hatch(1)] and hatches[0] != hatches[1]


def test_the_train_hover_names_each_run_when_several_are_overlaid(demo_window, qtbot):
    plots = demo_window.training.plots
    demo_window.training.history.select(demo_window.training.history.run_ids())
    qtbot.waitUntil(lambda: len(plots.runs) == 2 and all(c.points.n for c in plots.runs.values()), timeout=10000)
    text = plots.hover_at(10, "vocab")
    lines = [line for line in text.splitlines() if "step 10" in line]
    assert len(lines) == 2, text
    for curves in plots.runs.values():  # each line says whose it is, not only a coloured square
        assert sum(curves.name in line for line in lines) == 1, (curves.name, text)


def _press(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier):
    """A real key press at the focused widget of the active window (where shortcuts fire)."""
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    qtbot.keyClick(QApplication.focusWidget() or window, key, modifier)


CTRL, SHIFT, ALT = (Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier,
                    Qt.KeyboardModifier.AltModifier)
TABS = ["corpus", "train", "inspect", "merges", "compare"]


@pytest.mark.parametrize("number", [1, 2, 3, 4, 5])
def test_alt_number_goes_to_that_tab_and_focuses_it(demo_window, qtbot, number):
    window = demo_window
    window.show_panel(TABS[number % 5])  # start elsewhere
    _press(qtbot, window, getattr(Qt.Key, f"Key_{number}"), ALT)
    assert window.current_panel == TABS[number - 1]
    dock = window.docks[TABS[number - 1]]
    assert window.rect().intersects(dock.geometry())  # the tab in front, not parked outside
    focus = QApplication.focusWidget()
    assert focus is not None and dock.isAncestorOf(focus)


@pytest.mark.parametrize(("key", "modifier", "step"), [
    (Qt.Key.Key_Tab, CTRL, 1), (Qt.Key.Key_PageDown, CTRL, 1),
    (Qt.Key.Key_Backtab, CTRL | SHIFT, -1), (Qt.Key.Key_PageUp, CTRL, -1)])
def test_ctrl_tab_and_ctrl_page_keys_step_through_every_tab_and_wrap(demo_window, qtbot, key, modifier, step):
    window = demo_window
    window.show_panel("corpus")
    visited = []
    for _ in TABS:
        _press(qtbot, window, key, modifier)
        visited.append(window.current_panel)
    expected = [TABS[(i * step) % 5] for i in range(1, 6)]
    assert visited == expected  # the fifth press wraps round to Corpus


@pytest.mark.parametrize("tab", TABS)
def test_ctrl_f_focuses_the_filter_of_the_list_in_front(demo_window, qtbot, tab):
    window = demo_window
    window.show_panel(tab)
    _press(qtbot, window, Qt.Key.Key_F, CTRL)
    assert window.current_panel == "merges"  # the only tab with a search field
    qtbot.waitUntil(lambda: window.merges.filter.edit.hasFocus(), timeout=3000)


def test_ctrl_f_in_the_vocabulary_focuses_its_own_filter(demo_window, qtbot):
    window = demo_window
    window.show_panel("merges")
    window.merges.tabs.setCurrentWidget(window.merges.vocab)
    window.merges.vocab.filter.edit.setText("th")
    _press(qtbot, window, Qt.Key.Key_F, CTRL)
    edit = window.merges.vocab.filter.edit
    qtbot.waitUntil(edit.hasFocus, timeout=3000)
    assert edit.selectedText() == "th"  # selected, so typing replaces the old filter


def test_ctrl_s_says_the_project_saves_itself(demo_window, qtbot):
    from workbench.ui.main_window import SAVED_MESSAGE

    window = demo_window
    window.show_panel("inspect")
    _press(qtbot, window, Qt.Key.Key_S, CTRL)
    assert window.statusBar().currentMessage() == SAVED_MESSAGE


def test_f2_starts_renaming_the_selected_run(demo_window, qtbot):
    window = demo_window
    window.show_panel("compare")
    history = window.training.history
    history.select(history.run_ids()[:1])
    _press(qtbot, window, Qt.Key.Key_F2)
    assert window.current_panel == "train"
    qtbot.waitUntil(lambda: history.tree.state() == history.tree.State.EditingState, timeout=3000)


def test_f1_lists_the_shortcuts_with_their_keys(demo_window, qtbot):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QDialog, QTableWidget

    window = demo_window
    seen = []

    def read_and_close():
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QDialog):
            QTimer.singleShot(20, read_and_close)
            return
        table = dialog.findChild(QTableWidget)
        seen.extend((table.item(r, 0).text(), table.item(r, 1).text()) for r in range(table.rowCount()))
        dialog.reject()

    QTimer.singleShot(20, read_and_close)
    _press(qtbot, window, Qt.Key.Key_F1)
    keys = dict(seen)
    assert keys["Find"] == "Ctrl+F" and "Ctrl+PgDown" in keys["Next Tab"] and keys["Go to the Merges panel"] == "Alt+4"
    assert keys["Leave the Inspect text (Tab types a tab there)"] == "Esc, then Tab"


def test_escape_then_tab_leaves_the_token_editor_and_tab_alone_types_a_tab(demo_window, qtbot):
    window = demo_window
    window.show_panel("inspect")
    editor = window.inspect.primary.editor
    editor.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(editor.hasFocus, timeout=3000)
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    before = editor.toPlainText()
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.hasFocus() and editor.toPlainText() == before + "\t"
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert not editor.hasFocus() and editor.toPlainText() == before + "\t"
    assert window.docks["inspect"].isAncestorOf(QApplication.focusWidget())  # on to the next Inspect control
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)  # Shift+Tab (QTest leaves a Shift it sends held)
    assert editor.hasFocus()
