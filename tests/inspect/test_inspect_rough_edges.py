"""Issue 14 in the Inspect tab: copying gives the text itself, columns never widen the window,
a thin boundary mark shows the split without colour."""

from __future__ import annotations

from inspect_helpers import settle
from PySide6.QtGui import QKeySequence, QTextCursor
from PySide6.QtWidgets import QApplication

RUN1 = ("run", 1)


def _open(qtbot, panel, project, text):
    panel.set_project(project)
    assert panel.primary.set_source(RUN1)
    panel.set_text(text)
    settle(qtbot, panel)


def _copy_all(qtbot, edit) -> str:
    QApplication.clipboard().clear()
    edit.setFocus()
    edit.selectAll()
    edit.copy()
    return QApplication.clipboard().text()


def test_copying_decoded_text_with_show_whitespace_gives_the_spaces(qtbot, panel, project):
    _open(qtbot, panel, project, "the lower\tthe lowest")
    ids = panel.primary.layout_.ids_lines
    panel.show_whitespace.setChecked(True)
    panel.tabs.setCurrentWidget(panel.decoder)
    panel.decoder.input.setPlainText(" ".join(line for line in ids if line))
    shown = panel.decoder.output.toPlainText()
    assert "⋅" in shown and "→" in shown  # what the user sees …
    assert _copy_all(qtbot, panel.decoder.output) == "the lower\tthe lowest"  # … is not what is copied
    # A part of it: the selection maps back one to one.
    cursor = panel.decoder.output.textCursor()
    cursor.setPosition(4)
    cursor.setPosition(9, QTextCursor.MoveMode.KeepAnchor)
    panel.decoder.output.setTextCursor(cursor)
    panel.decoder.output.copy()
    assert QApplication.clipboard().text() == "lower"


def test_copying_from_the_editor_keeps_the_chosen_line_break(qtbot, panel, project):
    panel.set_project(project)
    panel.set_text("low lower\r\nnewer\r\n")
    assert panel.separator() == "\r\n"
    panel.show_whitespace.setChecked(True)
    settle(qtbot, panel)
    assert _copy_all(qtbot, panel.primary.editor) == "low lower\r\nnewer\r\n"
    panel.line_breaks.setCurrentIndex(0)
    assert _copy_all(qtbot, panel.primary.editor) == "low lower\nnewer\n"
    # The keyboard's copy goes through the same path.
    editor = panel.primary.editor
    editor.selectAll()
    QApplication.clipboard().clear()
    qtbot.keySequence(editor, QKeySequence.StandardKey.Copy)
    assert QApplication.clipboard().text() == "low lower\nnewer\n"


def test_four_columns_share_the_width_and_scroll(qtbot, panel, project):
    _open(qtbot, panel, project, "the lower the lowest " * 20)
    for _ in range(3):
        assert panel.add_pane(RUN1) is not None
    settle(qtbot, panel)
    assert len(panel.panes) == 4
    assert panel.minimumSizeHint().width() <= 900
    panel.resize(700, 600)
    qtbot.waitUntil(lambda: panel.pane_scroll.horizontalScrollBar().maximum() > 0, timeout=5000)
    assert all(p.width() > 0 for p in panel.panes)


def test_boundary_marks_are_an_option_and_the_editor_is_named(qtbot, panel, project):
    _open(qtbot, panel, project, "the lower the lowest")
    editor = panel.primary.editor
    assert editor.accessibleName()
    before = editor.viewport().grab().toImage()
    panel.boundary_marks.setChecked(True)
    assert editor.boundary_marks
    after = editor.viewport().grab().toImage()
    assert before != after  # lines were drawn between the tokens
