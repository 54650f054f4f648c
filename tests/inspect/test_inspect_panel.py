"""The Inspect panel as a user meets it: empty states, hover, click-to-select, the ids and decode
panels, stale results, dark palette, whitespace, refreshing after the project changes."""

from __future__ import annotations

from inspect_helpers import coloured_spans, settle
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QPalette, QTextCursor
from PySide6.QtTest import QTest

from workbench.core.bpe import TrainConfig
from workbench.store import ProjectStore
from workbench.tasks import token_colours
from workbench.tasks.train import train_into_project

RUN1 = ("run", 1)


def _open(qtbot, panel, project, text, source=RUN1):
    panel.set_project(project)
    assert panel.primary.set_source(source)
    panel.set_text(text)
    settle(qtbot, panel)
    return panel.primary.layout_


def _point_of(editor, cp: int) -> QPoint:
    """The viewport point over code point ``cp`` of the editor's text (no astral text here)."""
    cursor = QTextCursor(editor.document())
    cursor.setPosition(cp)
    left = editor.cursorRect(cursor)
    cursor.setPosition(cp + 1)
    right = editor.cursorRect(cursor)
    return QPoint((left.left() + right.left()) // 2, left.center().y())


def _hover_over(qtbot, editor, cp: int) -> None:
    """Move the mouse over code point ``cp`` until the editor says it hovers there. The point is taken
    anew on each try: the viewport's margins can still change after the layout is drawn (a notice
    band appearing above the text moved the line by 17 px between taking the point and the move)."""
    def hovering() -> bool:
        QTest.mouseMove(editor.viewport(), _point_of(editor, cp))
        group = editor.hovered_group()
        return group is not None and group.start <= cp < group.end
    qtbot.waitUntil(hovering, timeout=5000)


def test_empty_states_say_what_to_do(qtbot, panel, empty_project, tmp_path):
    assert panel.is_empty_state() and "No project is open" in panel.empty_message()
    panel.set_project(empty_project)
    assert panel.is_empty_state() and "No tokenizer yet" in panel.empty_message()
    assert panel.empty_import.isVisibleTo(panel)
    junk = tmp_path / "junk.tokproj"
    junk.write_bytes(b"this is not a database" * 100)
    panel.set_project(junk)
    assert panel.is_empty_state() and "Cannot read this project" in panel.empty_message()
    panel.set_project(None)
    assert "No project is open" in panel.empty_message()


def test_typed_text_survives_changing_projects(qtbot, panel, project, empty_project):
    _open(qtbot, panel, project, "keep me")
    panel.set_project(empty_project)
    panel.set_project(project)
    assert panel.text() == "keep me"


def test_hover_explains_the_token(qtbot, panel, project):
    text = "the lower the lowest"
    layout = _open(qtbot, panel, project, text)
    editor = panel.primary.editor
    _hover_over(qtbot, editor, 5)
    group = editor.hovered_group()
    assert group is not None and group.start <= 5 < group.end
    assert group == layout.group_at(5)
    tok = panel.primary.loaded.tokenizer
    token_id = group.ids[0]
    tip = panel.primary.describe(group)
    assert f"<b>{token_id}</b>" in tip
    assert " ".join(f"{b:02x}" for b in tok.vocab[token_id]) in tip
    rank, left, right = tok.merge_of_id[token_id]
    assert f"rank {rank:,}" in tip and f"({left})" in tip and f"({right})" in tip
    frequency = panel.primary.loaded.frequencies[rank]
    assert f"{frequency:,} in the training corpus" in tip
    QTest.mouseMove(editor.viewport(), QPoint(editor.viewport().width() - 5, editor.viewport().height() - 5))
    qtbot.waitUntil(lambda: editor.hovered_group() is None, timeout=5000)


def test_partial_group_tooltip_lists_every_byte_token(qtbot, panel, project):
    _open(qtbot, panel, project, "龍")  # not in the training corpus: three byte tokens
    group = panel.primary.layout_.group_at(0)
    assert group.partial and len(group.ids) >= 2
    tip = panel.primary.describe(group)
    assert f"{len(group.ids)} tokens share these characters" in tip
    assert "\\xe9" in tip and ">e9<" in tip  # 龍 is e9 be 8d: its first byte alone


def test_click_selects_every_occurrence_and_tells_the_window(qtbot, panel, project):
    text = "the cat and the dog and the end"
    layout = _open(qtbot, panel, project, text)
    editor = panel.primary.editor
    with qtbot.waitSignal(panel.token_selected, timeout=2000) as blocker:
        QTest.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                         _point_of(editor, text.index(" and") + 1))
    source, token_id = blocker.args
    assert source == RUN1 and token_id == layout.group_at(text.index(" and") + 1).ids[0]
    marked = editor.extraSelections()
    assert len(marked) == 2 == len(layout.groups_with_id(token_id))
    assert {editor.toPlainText()[s.cursor.selectionStart():s.cursor.selectionEnd()] for s in marked} == {" and"}
    assert "occurs 2 time(s)" in panel.status.text()
    editor.setFocus()
    QTest.keyClick(editor, Qt.Key.Key_Escape)
    assert editor.extraSelections() == []


def test_highlight_token_from_the_merge_browser(qtbot, panel, project):
    text = "lower lowest lower"
    layout = _open(qtbot, panel, project, text, ("run", 2))
    run1 = ProjectStore.open(project, readonly=True)
    try:
        tok = run1.load_tokenizer(1)
    finally:
        run1.close()
    token_id = tok.id_of_piece[b" lower"]
    panel.highlight_token(RUN1, token_id)  # run 1 is not shown: the column switches to it
    qtbot.waitUntil(lambda: panel.primary.source() == RUN1 and panel.primary.layout_ is not layout
                    and len(panel.primary.editor.extraSelections()) == 1, timeout=10000)
    assert panel.selection() == (RUN1, token_id)
    panel.highlight_token(RUN1, tok.id_of_piece[b"l"])
    assert len(panel.primary.editor.extraSelections()) == len(panel.primary.layout_.groups_with_id(tok.id_of_piece[b"l"]))


def test_ids_panel_and_text_point_at_each_other(qtbot, panel, project):
    text = "hello there\nsecond line"
    layout = _open(qtbot, panel, project, text)
    view = panel.ids_panel.view
    assert view.toPlainText().split("\n") == layout.ids_lines
    assert [int(x) for line in view.toPlainText().split("\n") for x in line.split(", ") if x] == layout.ids()
    first_line_ids = len(layout.ids_lines[0].split(", "))
    block = view.document().findBlockByNumber(1)
    cursor = QTextCursor(block)
    cursor.setPosition(block.position() + 1)
    point = view.cursorRect(cursor).center()
    with qtbot.waitSignal(view.token_hovered, timeout=2000) as blocker:
        QTest.mouseMove(view.viewport(), point)
    assert blocker.args == [first_line_ids]
    assert panel.primary.editor._linked == layout.group_of_token(first_line_ids)
    # hovering a token in the text marks its id
    _hover_over(qtbot, panel.primary.editor, 1)
    qtbot.waitUntil(lambda: len(view.extraSelections()) == 1, timeout=5000)
    (selection,) = view.extraSelections()
    assert selection.cursor.selectedText() == str(layout.group_at(1).ids[0])
    assert panel.ids_panel.view.ids_json() == str(layout.ids())


def test_decode_box(qtbot, panel, project):
    layout = _open(qtbot, panel, project, "the lowest")
    panel.tabs.setCurrentWidget(panel.decoder)
    box = panel.decoder
    box.input.setPlainText(", ".join(map(str, layout.ids())))
    assert box.decoded_text() == "the lowest" and not box.error_text()
    box.input.setPlainText(str(layout.ids()))
    assert box.decoded_text() == "the lowest"
    box.input.setPlainText("1, 2, banana")
    assert "item 3 ('banana') is not an id" in box.error_text()
    box.input.setPlainText("[65, 999999]")
    assert "item 2: id 999999 is not in this tokenizer's vocabulary" in box.error_text()
    box.input.setPlainText("[1, 2")
    assert "not a valid JSON list" in box.error_text()
    box.input.setPlainText("[73, 106]")
    assert box.decoded_text() == "Hi"
    box.use_button.click()
    assert panel.text() == "Hi"


def test_stale_results_are_dropped(qtbot, panel, project):
    _open(qtbot, panel, project, "start")
    applied = []
    panel.results_applied.connect(applied.append)
    for word in ("one", "two", "three"):
        panel.set_text(word)
        last = panel.flush()  # no events processed in between: earlier results arrive stale
    qtbot.waitUntil(lambda: panel.applied_generation == last, timeout=10000)
    qtbot.wait(50)  # let any straggler arrive; it must not be applied
    assert applied == [last]
    assert panel.primary.layout_.text == "three"


def test_dark_palette_uses_dark_colours(qtbot, panel, project):
    _open(qtbot, panel, project, "some text to colour")
    light = {f.background().color().name() for _a, _b, f in coloured_spans(panel.primary.editor)}
    assert light <= set(token_colours.LIGHT_PALETTE)
    palette = QPalette()
    palette.setColor(QPalette.ColorRole.Base, QColor("#1e1e1e"))
    palette.setColor(QPalette.ColorRole.Window, QColor("#2b2b2b"))
    palette.setColor(QPalette.ColorRole.Text, QColor("#eeeeee"))
    panel.setPalette(palette)
    qtbot.waitUntil(lambda: panel.primary.editor.formats.dark, timeout=2000)
    dark = {f.background().color().name() for _a, _b, f in coloured_spans(panel.primary.editor)}
    assert dark and dark <= set(token_colours.DARK_PALETTE)
    assert {f.foreground().color().name() for _a, _b, f in coloured_spans(panel.primary.editor)} == {token_colours.TEXT_ON_DARK}


def test_application_theme_switch_reaches_the_editor(qtbot, panel, project):
    from PySide6.QtWidgets import QApplication

    _open(qtbot, panel, project, "theme me")
    app = QApplication.instance()
    original = app.palette()
    dark = QPalette(original)
    dark.setColor(QPalette.ColorRole.Base, QColor("#1e1e1e"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#eeeeee"))
    try:
        app.setPalette(dark)
        qtbot.waitUntil(lambda: panel.primary.editor.formats.dark and panel.ids_panel.view.formats.dark, timeout=2000)
    finally:
        app.setPalette(original)
    qtbot.waitUntil(lambda: not panel.primary.editor.formats.dark, timeout=2000)


def test_show_whitespace_draws_glyphs(qtbot, panel, project):
    _open(qtbot, panel, project, "a b\tc  👍 d\n\nend")
    editor = panel.primary.editor
    plain = editor.viewport().grab().toImage()
    panel.show_whitespace.setChecked(True)
    shown = editor.viewport().grab().toImage()
    assert plain != shown
    assert panel.decoder.show_whitespace
    panel.show_whitespace.setChecked(False)
    assert editor.viewport().grab().toImage() == plain


def test_stable_colours_give_one_colour_per_id(qtbot, panel, project):
    text = "the cat the dog the end the"
    layout = _open(qtbot, panel, project, text)
    panel.colour_mode.setCurrentIndex(1)
    settle(qtbot, panel)
    layout = panel.primary.layout_
    colours = {}
    for g, colour in zip(layout.groups(), layout.colours()):
        if text[g.start:g.end] == " the":
            colours.setdefault(layout.ids()[g.first], set()).add(colour)
    assert all(len(c) == 1 for c in colours.values()) and colours


def test_refresh_lists_new_renamed_and_deleted_runs(qtbot, panel, project, tmp_path):
    _open(qtbot, panel, project, "hello")
    assert [s.source for s in panel.sources] == [("run", 1), ("run", 2)]
    corpus = tmp_path / "more.txt"
    corpus.write_text("fresh words for a fresh run " * 20, encoding="utf-8")
    run_id, _ = train_into_project([str(corpus)], project, TrainConfig(units="bytes", merges=20), name="fresh")
    with ProjectStore.open(project) as store:
        store.rename_run(1, "renamed one")
        store.delete_run(2)
    panel.refresh()
    assert [s.source for s in panel.sources] == [("run", 1), ("run", run_id)]
    assert "renamed one" in panel.primary.chooser.itemText(0)
    assert panel.primary.source() == RUN1  # the choice is kept
    settle(qtbot, panel)
    assert panel.primary.layout_.ids()


def test_up_to_four_columns(qtbot, panel, project):
    _open(qtbot, panel, project, "compare me")
    for _ in range(3):
        assert panel.add_pane() is not None
    assert len(panel.panes) == 4 and not panel.add_button.isEnabled()
    assert panel.add_pane() is None
    settle(qtbot, panel)
    assert all(p.layout_ is not None for p in panel.panes)
    assert panel.counts.columnCount() == 4
    panel.remove_pane(panel.panes[-1])
    assert len(panel.panes) == 3 and panel.add_button.isEnabled()


def test_the_compare_button_puts_the_focus_on_the_new_columns_chooser(qtbot, panel, project):
    _open(qtbot, panel, project, "compare me")
    panel.show()
    panel.activateWindow()
    qtbot.waitUntil(panel.isActiveWindow, timeout=2000)
    qtbot.mouseClick(panel.add_button, Qt.MouseButton.LeftButton)
    assert len(panel.panes) == 2
    qtbot.waitUntil(lambda: panel.panes[1].chooser.hasFocus(), timeout=2000)


def test_texts_are_kept_in_the_project_and_come_back(qtbot, panel, project):
    panel.set_project(project)
    panel.set_text("naïve café 中文 👋\nsecond line")
    panel.save_text("sample")
    panel.set_text("something else")
    panel.save_text("other")
    panel.set_text("replaced")
    panel.save_text("sample")  # the same name replaces the kept text
    with ProjectStore.open(project, readonly=True) as store:
        assert [(name, text) for _id, name, text in store.texts()] == [("sample", "replaced"), ("other", "something else")]
    panel._fill_texts_menu()
    actions = [a for a in panel.texts_menu.actions() if a.text() == "other"]
    assert len(actions) == 1
    actions[0].trigger()
    assert panel.text() == "something else"
