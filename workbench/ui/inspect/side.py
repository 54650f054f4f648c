"""The inspector's panels under the text: ids, counts, decode.

* :class:`IdsView` — the ids, one line per line of text, coloured like their tokens; hovering an
  id outlines its token in the text (``token_hovered``), copyable as text or as a JSON list.
* :class:`CountsTable` — tokens, characters, bytes, characters/token, tokens/word per column.
* :class:`DecodeBox` — paste ids (comma/space separated or a JSON list) and read the text; an
  unknown or malformed id gets one clear line naming it.

:func:`replace_lines` updates a document to new lines by replacing only the lines that changed,
so a keystroke in a 100 KB text does not re-lay-out the whole ids list (or a mirrored column).
"""

from __future__ import annotations

import bisect
import json
from typing import Sequence

from PySide6.QtCore import QEvent, Qt, Signal, Slot
from PySide6.QtGui import QColor, QGuiApplication, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from workbench.core import display
from workbench.errors import WorkbenchError
from workbench.tasks import inspection, token_colours
from workbench.ui.copy_text import TextCopyMixin
from workbench.ui.inspect.token_editor import editor_font, visible_block_range
from workbench.ui.inspect.token_highlighter import (
    FormatCache,
    TokenHighlighter,
    is_dark,
)


def replace_lines(document: QTextDocument, old: Sequence[str], new: Sequence[str]) -> None:
    """Turn a document holding ``old`` lines into ``new`` lines with one minimal edit."""
    if list(old) == list(new):
        return
    n_old, n_new = len(old), len(new)
    if n_old == 0 or document.blockCount() != n_old:
        document.setPlainText("\n".join(new))
        return
    head = 0
    limit = min(n_old, n_new)
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[n_old - 1 - tail] == new[n_new - 1 - tail]:
        tail += 1
    # Replace whole lines head … n_old-tail-1 by head … n_new-tail-1; widen an empty side by one line.
    if head >= n_old - tail or head >= n_new - tail:
        if head > 0:
            head -= 1
        else:
            tail -= 1
    first = document.findBlockByNumber(head)
    last = document.findBlockByNumber(n_old - tail - 1)
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    cursor.setPosition(first.position())
    cursor.setPosition(last.position() + last.length() - 1, QTextCursor.MoveMode.KeepAnchor)
    cursor.insertText("\n".join(new[head:n_new - tail]))
    cursor.endEditBlock()


class IdsView(QPlainTextEdit):
    """The ids of the active column, one line per text line."""

    token_hovered = Signal(int)  # token index, -1 when none

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Token ids")
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setMouseTracking(True)
        self.viewport().setMouseTracking(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setFont(editor_font())
        self.formats = FormatCache(is_dark(self.palette()))
        self.highlighter = TokenHighlighter(self.document(), self.formats)
        self.highlighter.visible_blocks = self.visible_block_range
        self.layout_: inspection.TextLayout | None = None
        self._lines: list[str] = []
        self._hovered = -1

    def set_layout(self, layout: inspection.TextLayout | None) -> None:
        self.layout_ = layout
        lines = list(layout.ids_lines) if layout is not None else []
        if layout is None or not lines:
            self.document().setPlainText("")
            self._lines = []
            self.highlighter.clear_spans()
            return
        # Qt would re-highlight every replaced line at once; the highlighter's queue does it in slices.
        self.highlighter.enabled = False
        try:
            replace_lines(self.document(), self._lines, lines)
        finally:
            self.highlighter.enabled = True
        self._lines = lines
        self.highlighter.set_spans(layout.ids_spans, lines)

    def visible_block_range(self) -> tuple[int, int]:
        return visible_block_range(self)

    def all_ids(self) -> list[int]:
        return self.layout_.ids() if self.layout_ is not None else []

    def ids_json(self) -> str:
        return json.dumps(self.all_ids())

    def token_at(self, point) -> int:
        """Index of the token whose id is under ``point`` (-1: none)."""
        layout = self.layout_
        if layout is None:
            return -1
        cursor = self.cursorForPosition(point)
        number = cursor.blockNumber()
        if number >= len(layout.ids_spans):
            return -1
        spans = layout.ids_spans[number]
        col = cursor.positionInBlock()
        rect = self.cursorRect(cursor)
        if abs(rect.center().y() - point.y()) > rect.height():
            return -1
        starts = [s for s, _n, _c in spans]
        k = bisect.bisect_right(starts, col) - 1
        if k < 0 or not (spans[k][0] <= col <= spans[k][0] + spans[k][1]):
            return -1
        return layout.first_token_of_line(number) + k

    def mark_tokens(self, first: int, last: int) -> None:
        """Outline the ids of tokens ``first:last`` (the token hovered in the text)."""
        layout = self.layout_
        selections = []
        if layout is not None and 0 <= first < last:
            group = layout.group_of_token(first)
            if group is not None:
                number = layout.blockmap.block_of(group.start)
                base = layout.first_token_of_line(number)
                spans = layout.ids_spans[number] if number < len(layout.ids_spans) else ()
                block = self.document().findBlockByNumber(number)
                for k in range(first - base, last - base):
                    if 0 <= k < len(spans) and block.isValid():
                        start, length, _code = spans[k]
                        cursor = QTextCursor(block)
                        cursor.setPosition(block.position() + start)
                        cursor.setPosition(block.position() + start + length, QTextCursor.MoveMode.KeepAnchor)
                        selection = QTextEdit.ExtraSelection()
                        selection.cursor = cursor
                        selection.format.setBackground(QColor(token_colours.MARK_COLOURS["selected"][self.formats.dark]))
                        selection.format.setForeground(QColor("#111111"))
                        selections.append(selection)
                if selections:
                    self.setTextCursor(QTextCursor(block))
                    self.ensureCursorVisible()
        self.setExtraSelections(selections)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        super().mouseMoveEvent(event)
        index = self.token_at(event.position().toPoint())
        if index != self._hovered:
            self._hovered = index
            self.token_hovered.emit(index)

    def leaveEvent(self, event) -> None:  # noqa: N802
        super().leaveEvent(event)
        if self._hovered != -1:
            self._hovered = -1
            self.token_hovered.emit(-1)

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if (event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
                and self.formats.set_dark(is_dark(self.palette()))):
            self.highlighter.rehighlight()


class IdsPanel(QWidget):
    """IdsView with a title and copy buttons."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Token ids panel")
        self.view = IdsView()
        self.title = QLabel("Ids")
        copy_json = QPushButton("Copy as JSON")
        copy_json.setToolTip("Copy every id as a JSON list, e.g. [15339, 1917]")
        copy_json.clicked.connect(self._copy_json)
        copy_plain = QPushButton("Copy")
        copy_plain.setToolTip("Copy every id, comma separated")
        copy_plain.clicked.connect(self._copy_plain)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title, 1)
        top.addWidget(copy_plain)
        top.addWidget(copy_json)
        box = QVBoxLayout(self)
        box.setContentsMargins(4, 4, 4, 4)
        box.addLayout(top)
        box.addWidget(self.view, 1)

    @Slot()
    def _copy_json(self) -> None:
        QGuiApplication.clipboard().setText(self.view.ids_json())

    @Slot()
    def _copy_plain(self) -> None:
        QGuiApplication.clipboard().setText(", ".join(map(str, self.view.all_ids())))


class CountsTable(QTableWidget):
    """One column per tokenizer shown."""

    ROWS = ("Tokens", "Characters", "Bytes", "Characters / token", "Bytes / token", "Words", "Tokens / word")

    def __init__(self, parent: QWidget | None = None):
        super().__init__(len(self.ROWS), 0, parent)
        self.setAccessibleName("Token counts")
        self.setVerticalHeaderLabels(list(self.ROWS))
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)

    def set_counts(self, columns: Sequence[tuple[str, inspection.Counts | None]]) -> None:
        self.setColumnCount(len(columns))
        self.setHorizontalHeaderLabels([name for name, _c in columns])
        for col, (_name, counts) in enumerate(columns):
            values = ("", "", "", "", "", "", "") if counts is None else (
                f"{counts.tokens:,}", f"{counts.characters:,}", f"{counts.bytes:,}", f"{counts.chars_per_token:.2f}",
                f"{counts.bytes_per_token:.2f}", f"{counts.words:,}", f"{counts.tokens_per_word:.2f}")
            for row, value in enumerate(values):
                item = self.item(row, col)
                if item is None:
                    item = QTableWidgetItem()
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    self.setItem(row, col, item)
                item.setText(value)

    def value(self, row: str, col: int) -> str:
        item = self.item(self.ROWS.index(row), col)
        return item.text() if item is not None else ""


class DecodedView(TextCopyMixin, QPlainTextEdit):
    """The decoded text, read-only; copying gives the text itself, never the whitespace glyphs shown.

    What is shown is ``display.show_whitespace(text)`` or the text with ``\r\n`` as one break —
    either way one UTF-16 unit per unit of :attr:`copy_text`, so a selection maps straight back.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.copy_text = ""  # the decoded text with \r\n as \n (what the document positions index)
        self.line_separator = "\n"
        self.setAccessibleName("Decoded text")

    def show_text(self, text: str, *, show_whitespace: bool) -> None:
        self.line_separator = "\r\n" if "\r\n" in text else "\n"
        self.copy_text = text.replace("\r\n", "\n")
        self.setPlainText(display.show_whitespace(text) if show_whitespace else self.copy_text)

    def selected_text(self) -> str:
        cursor = self.textCursor()
        units = self.copy_text.encode("utf-16-le")
        part = units[2 * cursor.selectionStart(): 2 * cursor.selectionEnd()].decode("utf-16-le", "replace")
        return part.replace("\n", self.line_separator)



class DecodeBox(QWidget):
    """Paste ids, read the text they decode to under the active column's tokenizer."""

    use_text = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Decode ids")
        self.encoder = None
        self.name = ""
        self.show_whitespace = False
        self.title = QLabel("Decode")
        self.input = QPlainTextEdit()
        self.input.setAccessibleName("Ids to decode")
        self.input.setPlaceholderText("Paste ids: 15339, 1917  or  [15339, 1917]")
        self.input.setMaximumHeight(70)
        self.input.textChanged.connect(self.decode)
        self.output = DecodedView()
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.use_button = QPushButton("Put in the editor")
        self.use_button.setToolTip("Replace the text above with the decoded text")
        self.use_button.clicked.connect(self._use)
        self.use_button.setEnabled(False)
        self._text = ""
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title, 1)
        top.addWidget(self.use_button)
        box = QVBoxLayout(self)
        box.setContentsMargins(4, 4, 4, 4)
        box.addLayout(top)
        box.addWidget(self.input)
        box.addWidget(self.message)
        box.addWidget(self.output, 1)

    def set_encoder(self, encoder, name: str) -> None:
        if encoder is self.encoder and name == self.name:
            return
        self.encoder = encoder
        self.name = name
        self.title.setText(f"Decode with {name}" if name else "Decode")
        self.decode()

    def set_show_whitespace(self, on: bool) -> None:
        self.show_whitespace = on
        self.decode()

    @Slot()
    def decode(self) -> None:
        raw = self.input.toPlainText()
        self._text = ""
        self.use_button.setEnabled(False)
        if not raw.strip():
            self._show("", "")
            return
        if self.encoder is None:
            self._show("", "Choose a tokenizer above first.", error=True)
            return
        try:
            ids = display.parse_ids(raw)
            text = display.decode_ids(self.encoder, ids)
        except WorkbenchError as exc:
            self._show("", str(exc), error=True)
            return
        self._text = text
        self.use_button.setEnabled(True)
        self._show(text, f"{len(ids):,} ids → {len(text):,} characters")

    def _show(self, text: str, message: str, error: bool = False) -> None:
        self.output.show_text(text, show_whitespace=self.show_whitespace)
        self.message.setText(message)
        self.message.setStyleSheet("color: #dc2626;" if error else "")

    def decoded_text(self) -> str:
        return self._text

    def error_text(self) -> str:
        return self.message.text() if self.message.styleSheet() else ""

    @Slot()
    def _use(self) -> None:
        if self._text:
            self.use_text.emit(self._text)
