"""The colours Qt actually applied, read back from the document, equal the core's token offsets:
typed emoji ZWJ sequences, combining marks, CJK, and CRLF text never shift a span."""

from __future__ import annotations

import pytest
from inspect_helpers import coloured_spans, expected_spans, settle, type_text
from PySide6.QtCore import QMimeData

from workbench.core.encoder import Encoder
from workbench.store import ProjectStore

TYPED = "Hi 👩‍👩‍👧‍👦 fam! e\u0301te\u0301 ok 中文分词 🇩🇪x 👍🏽 naïve"
MIXED = "English words, 中文字符和标点。\n👩‍💻 codes: x = f(y)  # note\n\tTab\u00a0nbsp e\u0301\n\n\nend"


def _open(panel, project, source=("run", 1)):
    panel.set_project(project)
    assert panel.primary.set_source(source)


def _run_tokenizer(project, run_id=1):
    with ProjectStore.open(project, readonly=True) as store:
        return store.load_tokenizer(run_id)


def _assert_matches(panel, tokenizer, text, separator="\n", allow_special=False, max_merges=None):
    whole = panel.whole_graphemes.isChecked()
    tokens, groups, visible = expected_spans(tokenizer, text, separator, allow_special, max_merges, whole)
    assert panel.text() == text
    layout = panel.primary.layout_
    assert layout.ids() == [t.id for t in tokens]
    assert [(t[1], t[2]) for t in layout.tokens()] == [(t.start, t.end) for t in tokens]
    applied = coloured_spans(panel.primary.editor, separator)
    assert [(a, b) for a, b, _f in applied] == visible
    # neighbours differ, and grouped byte pieces of one character carry the dotted underline
    for (_a, end, f), (start, _b, g) in zip(applied, applied[1:]):
        if end == start:  # touching tokens on one line
            assert f.background().color().name() != g.background().color().name()
    partial = {(s, e) for s, e, n in groups if n > 1}
    for a, b, fmt in applied:
        owner = next(g for g in groups if g[0] <= a and b <= g[1])
        assert (fmt.underlineStyle().name == "DotLine") == ((owner[0], owner[1]) in partial)
    return layout


@pytest.mark.parametrize("whole", [True, False])
def test_typed_emoji_combining_cjk_match_core_offsets(qtbot, panel, project, whole):
    _open(panel, project)
    panel.whole_graphemes.setChecked(whole)
    panel.set_text("")
    settle(qtbot, panel)
    panel.primary.editor.setFocus()
    type_text(qtbot, panel.primary.editor, TYPED)
    settle(qtbot, panel)
    layout = _assert_matches(panel, _run_tokenizer(project), TYPED)
    family = TYPED.index("👩")
    group = layout.group_at(family)
    assert group.partial and len(group.ids) > 1  # byte pieces of one emoji, grouped
    if whole:  # the whole ZWJ sequence is one group: Qt can draw it as one family glyph
        assert group.start <= family and group.end == family + len("👩‍👩‍👧‍👦")
        accent = TYPED.index("e\u0301")
        assert layout.group_at(accent + 1).start <= accent


def test_mixed_text_with_blank_lines_and_tabs(qtbot, panel, project):
    _open(panel, project)
    panel.set_text(MIXED)
    settle(qtbot, panel)
    _assert_matches(panel, _run_tokenizer(project), MIXED)
    assert len(panel.primary.layout_.block_spans) == panel.primary.editor.document().blockCount()


def test_crlf_text_keeps_its_line_breaks(qtbot, panel, project):
    text = "first line\r\nsecond 中文 line\r\n\r\nlast 👍🏽"
    _open(panel, project)
    panel.set_text(text)
    assert panel.separator() == "\r\n"
    settle(qtbot, panel)
    tokenizer = _run_tokenizer(project)
    layout = _assert_matches(panel, tokenizer, text, "\r\n")
    assert tokenizer.id_of_piece[b"\r"] in layout.ids()  # the line breaks really are \r\n


def test_pasting_crlf_switches_line_breaks(qtbot, panel, project):
    _open(panel, project)
    panel.set_text("")
    settle(qtbot, panel)
    assert panel.separator() == "\n"
    mime = QMimeData()
    mime.setText("pasted\r\nfrom windows\r\n")
    panel.primary.editor.insertFromMimeData(mime)
    assert panel.separator() == "\r\n"
    settle(qtbot, panel)
    _assert_matches(panel, _run_tokenizer(project), "pasted\r\nfrom windows\r\n", "\r\n")


def test_character_level_run_with_end_of_word_marker(qtbot, panel, project):
    _open(panel, project, ("run", 2))
    text = "the lower newest lowest fox"
    panel.set_text(text)
    settle(qtbot, panel)
    _assert_matches(panel, _run_tokenizer(project, 2), text)


def test_editing_repaints_only_the_edited_line(qtbot, panel, project):
    lines = [f"line {k}: the quick brown fox 中文 👍" for k in range(200)]
    _open(panel, project)
    panel.set_text("\n".join(lines))
    settle(qtbot, panel)
    before = panel.primary.layout_.block_spans
    cursor = panel.primary.editor.textCursor()
    cursor.setPosition(panel.primary.editor.document().findBlockByNumber(100).position() + 5)
    cursor.insertText("X")
    settle(qtbot, panel)
    after = panel.primary.layout_.block_spans
    changed = [k for k in range(len(after)) if after[k] is not before[k]]
    assert changed == [100]
    lines[100] = lines[100][:5] + "X" + lines[100][5:]
    _assert_matches(panel, _run_tokenizer(project), "\n".join(lines))


@pytest.mark.parametrize("max_merges", [0, 300])
def test_merge_slider_ends(qtbot, panel, project, max_merges):
    _open(panel, project)
    text = "the lowest newer 中文 👍 fox"
    panel.set_text(text)
    panel.primary.set_merges(max_merges)
    settle(qtbot, panel)
    tokenizer = _run_tokenizer(project)
    layout = _assert_matches(panel, tokenizer, text, max_merges=None if max_merges == 300 else 0)
    if max_merges == 0:
        assert all(len(tokenizer.vocab[i]) == 1 for i in layout.ids())  # single bytes
        assert layout.n_tokens == len(text.encode("utf-8"))
    else:
        assert layout.ids() == Encoder(tokenizer).encode(text)
        assert layout.n_tokens < len(text.encode("utf-8"))
