"""Helpers for the inspector tests: wait for a result, read back what Qt coloured, and an
independent oracle for what it should have coloured (from the core's offsets)."""

from __future__ import annotations

from PySide6.QtGui import QTextCharFormat

from workbench.core.encoder import Encoder


def settle(qtbot, panel, timeout: int = 15000) -> None:
    """Post the pending job now and wait until the panel has drawn its result."""
    generation = panel.flush()
    assert generation > 0, "no job was posted (no project or no tokenizer?)"
    qtbot.waitUntil(lambda: panel.applied_generation >= generation and panel.colouring_done(), timeout=timeout)


def coloured_spans(editor, separator: str = "\n") -> list[tuple[int, int, object]]:
    """Every format range the highlighter applied, as code-point spans of the joined text."""
    out = []
    block = editor.document().firstBlock()
    base = 0
    while block.isValid():
        text = block.text()
        units = text.encode("utf-16-le")
        for fr in block.layout().formats():
            start = len(units[: 2 * fr.start].decode("utf-16-le"))
            end = len(units[: 2 * (fr.start + fr.length)].decode("utf-16-le"))
            out.append((base + start, base + end, QTextCharFormat(fr.format)))  # a copy: fr owns its format
        base += len(text) + len(separator)
        block = block.next()
    return out


def oracle_groups(tokens) -> list[tuple[int, int, int]]:
    """Tokens whose spans overlap (parts of one character) as one (start, end, token count)."""
    groups: list[list[int]] = []
    for t in tokens:
        if groups and t.start < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], t.end)
            groups[-1][2] += 1
        else:
            groups.append([t.start, t.end, 1])
    return [tuple(g) for g in groups]


def join_graphemes(groups, text: str) -> list[tuple[int, int, int]]:
    """Join groups split inside a grapheme cluster (what the editor shows with "Whole characters")."""
    import regex

    starts = {m.start() for m in regex.finditer(r"\X", text)}
    out: list[list[int]] = []
    for start, end, count in groups:
        if out and start not in starts and end > start and out[-1][1] > out[-1][0]:
            out[-1][1] = max(out[-1][1], end)
            out[-1][2] += count
        else:
            out.append([start, end, count])
    return [tuple(g) for g in out]


def visible_parts(groups, text: str, separator: str = "\n") -> list[tuple[int, int]]:
    """The parts of each group an editor line can colour (line breaks themselves cannot be)."""
    lines = []
    pos = 0
    for line in text.split(separator):
        lines.append((pos, pos + len(line)))
        pos += len(line) + len(separator)
    out = []
    for start, end, *_ in groups:
        for a, b in lines:
            lo, hi = max(start, a), min(end, b)
            if hi > lo:
                out.append((lo, hi))
    return out


def expected_spans(tokenizer, text: str, separator: str = "\n", allow_special: bool = False,
                   max_merges: int | None = None, whole: bool = True):
    encoder = Encoder(tokenizer, max_merges=max_merges)
    tokens = encoder.encode_with_offsets(text, allow_special=allow_special)
    groups = oracle_groups(tokens)
    if whole:
        groups = join_graphemes(groups, text)
    return tokens, groups, visible_parts(groups, text, separator)


def type_text(qtbot, widget, text: str) -> None:
    """Type ``text`` key by key. ASCII goes through qtbot.keyClicks (real key codes); QTest cannot
    map other characters to keys, so those arrive as key events carrying the character, as an
    input method delivers them (an emoji is one event holding its surrogate pair)."""
    from PySide6.QtCore import QEvent, Qt
    from PySide6.QtGui import QKeyEvent
    from PySide6.QtWidgets import QApplication

    for ch in text:
        if ord(ch) < 128 and ch not in "\r\n":
            qtbot.keyClicks(widget, ch)
        elif ch == "\n":
            qtbot.keyClick(widget, Qt.Key.Key_Return)
        else:
            for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
                QApplication.sendEvent(widget, QKeyEvent(kind, Qt.Key.Key_unknown, Qt.KeyboardModifier.NoModifier, ch))
