"""The text area of the inspector: coloured tokens, visible whitespace, hover and click.

:class:`TokenEditor` is a ``QPlainTextEdit`` that holds a :class:`~workbench.inspection.TextLayout`
(computed off the GUI thread) and only draws from it:

* colours through :class:`~workbench.ui.inspect.token_highlighter.TokenHighlighter`;
* on top, painted per visible line: whitespace glyphs (``⋅`` ``→`` ``↵``) when asked, and always
  inside the token under the mouse; an outline around that token; a red line under the stretches
  where tokenizers shown side by side split differently;
* the occurrences of a selected token as ExtraSelections (transient marks);
* a tooltip per token (the text comes from a callback), and a click that selects the token.

Qt positions are UTF-16 code units; the layout's are code points. Every conversion goes through
``TextLayout.blockmap`` (:class:`~workbench.inspection.BlockMap`).
"""

from __future__ import annotations

import bisect
from typing import Callable, Sequence

from PySide6.QtCore import QEvent, QPoint, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QHelpEvent,
    QMouseEvent,
    QPainter,
    QPen,
    QTextCursor,
    QTextFormat,
    QTextLine,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QToolTip, QWidget

from workbench.tasks import inspection, token_colours
from workbench.ui.copy_text import TextCopyMixin
from workbench.ui.inspect.token_highlighter import (
    FormatCache,
    TokenHighlighter,
    is_dark,
)

_SHOWN = {" ": "⋅", "\t": "→", "\u00a0": "⍽"}
MAX_MARKED = 5000  # occurrences marked at once; beyond this the count is still reported


def visible_block_range(edit: QPlainTextEdit) -> tuple[int, int]:
    """First and last block numbers on screen: what a highlighter colours first."""
    first = edit.firstVisibleBlock()
    last = edit.cursorForPosition(edit.viewport().rect().bottomLeft()).block()
    return first.blockNumber(), max(first.blockNumber(), last.blockNumber())


class TokenEditor(TextCopyMixin, QPlainTextEdit):
    """Plain text with token colours. ``hovered``/``clicked`` carry a GroupRef (or None)."""

    tab_moves_on_after_escape = True  # Tab types a tab; Escape, then Tab, leaves (keyPressEvent)

    hovered = Signal(object)
    clicked = Signal(object)
    crlf_pasted = Signal()  # pasted text had \r\n line breaks (Qt keeps only the break itself)

    def __init__(self, parent: QWidget | None = None, *, read_only: bool = False):
        super().__init__(parent)
        self.setReadOnly(read_only)
        self.setFont(editor_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setMouseTracking(True)
        self.viewport().setMouseTracking(True)
        self.formats = FormatCache(is_dark(self.palette()))
        self.highlighter = TokenHighlighter(self.document(), self.formats)
        self.highlighter.visible_blocks = self.visible_block_range
        self.layout_: inspection.TextLayout | None = None
        self.show_whitespace = False
        self.describe: Callable[[inspection.GroupRef], str] | None = None
        self._hover: inspection.GroupRef | None = None
        self._linked: inspection.GroupRef | None = None  # hovered from elsewhere (the ids panel)
        self._selected: list[inspection.GroupRef] = []
        self._disagree: list[tuple[int, int]] = []
        self._disagree_starts: list[int] = []
        self._press_pos: QPoint | None = None
        self.line_separator = "\n"  # what a line break is in the text (the panel's \n / \r\n setting)
        self.boundary_marks = False  # a thin line between tokens: the split without relying on colour
        self.setAccessibleName("Text, split into tokens" if not read_only else "The text under another tokenizer")
        self.setAccessibleDescription("Each token is coloured; hover or click a token for its id and merges. "
                                      "Tab types a tab; Escape, then Tab, moves on")
        self._escaped = False  # the last key was Escape: a Tab now leaves the editor

    # ---- what to draw -----------------------------------------------------------------------------
    def set_layout(self, layout: inspection.TextLayout | None) -> int:
        """Show a new layout; returns the number of lines repainted."""
        self.layout_ = layout
        if layout is None:
            self.highlighter.clear_spans()
            self._hover = self._linked = None
            self._selected = []
            self._apply_selections()
            return 0
        blocks = layout.blockmap.blocks
        repainted = self.highlighter.set_spans(layout.block_spans, blocks)
        if self._hover is not None:
            self._hover = None
        self.viewport().update()
        return repainted

    def set_disagreements(self, spans: Sequence[tuple[int, int]]) -> None:
        self._disagree = list(spans)
        self._disagree_starts = [s for s, _e in self._disagree]
        self.viewport().update()

    def set_show_whitespace(self, on: bool) -> None:
        self.show_whitespace = on
        self.viewport().update()

    def set_boundary_marks(self, on: bool) -> None:
        self.boundary_marks = on
        self.viewport().update()

    def set_line_separator(self, separator: str) -> None:
        self.line_separator = separator

    def selected_text(self) -> str:
        """The selection as the text holds it: real spaces (whitespace glyphs are only painted) and
        the chosen line break (the document itself only knows paragraphs)."""
        return self.textCursor().selectedText().replace("\u2029", self.line_separator)

    def select_groups(self, groups: Sequence[inspection.GroupRef]) -> None:
        """Mark these groups (the occurrences of a selected token)."""
        self._selected = list(groups)[:MAX_MARKED]
        self._apply_selections()

    def set_linked_hover(self, group: inspection.GroupRef | None) -> None:
        if group != self._linked:
            self._linked = group
            self.viewport().update()

    def hovered_group(self) -> inspection.GroupRef | None:
        return self._hover

    def update_theme(self) -> None:
        if self.formats.set_dark(is_dark(self.palette())):
            self.highlighter.rehighlight()
            self._apply_selections()
        self.viewport().update()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.update_theme()

    def visible_block_range(self) -> tuple[int, int]:
        return visible_block_range(self)

    # ---- positions ----------------------------------------------------------------------------------
    def doc_range(self, start: int, end: int) -> tuple[int, int] | None:
        """Qt positions of code points ``start:end`` of the layout's text."""
        if self.layout_ is None:
            return None
        bm = self.layout_.blockmap
        return bm.doc_pos(start), bm.doc_pos(end)

    def group_at_point(self, point) -> inspection.GroupRef | None:
        """The group under a viewport point, or None over margins and past line ends."""
        layout = self.layout_
        if layout is None:
            return None
        cursor = self.cursorForPosition(point)
        block = cursor.block()
        if not block.isValid():
            return None
        geometry = self.blockBoundingGeometry(block).translated(self.contentOffset())
        if not geometry.contains(QPointF(point)):
            return None
        text_layout = block.layout()
        y = point.y() - geometry.top()
        line = None
        for i in range(text_layout.lineCount()):
            candidate = text_layout.lineAt(i)
            if candidate.y() <= y < candidate.y() + candidate.height():
                line = candidate
                break
        if line is None:
            return None
        x = point.x() - geometry.left()
        right = line.x() + line.naturalTextWidth()
        if x < line.x():
            return None
        if x >= right:
            # Past the end of a line: the line break, if this is the block's last line.
            is_last = line.lineNumber() == text_layout.lineCount() - 1
            if not (is_last and block.next().isValid() and x < right + self.fontMetrics().horizontalAdvance("M") * 1.5):
                return None
            col16 = block.length() - 1
        else:
            col16 = line.xToCursor(x, QTextLine.CursorPosition.CursorOnCharacter)
        bm = layout.blockmap
        number = block.blockNumber()
        if number >= len(bm.blocks):
            return None
        cp = bm.cp_starts[number] + bm.col_cp(number, col16)
        if col16 >= len(bm.blocks[number].encode("utf-16-le")) // 2 and block.next().isValid():
            cp = bm.cp_starts[number] + len(bm.blocks[number])  # the separator
        return layout.group_at(cp)

    # ---- mouse ------------------------------------------------------------------------------------------
    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        super().mouseMoveEvent(event)
        group = self.group_at_point(event.position().toPoint())
        if group != self._hover:
            self._hover = group
            self.viewport().update()
            self.hovered.emit(group)

    def leaveEvent(self, event: QEvent) -> None:  # noqa: N802
        super().leaveEvent(event)
        if self._hover is not None:
            self._hover = None
            self.viewport().update()
            self.hovered.emit(None)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        self._press_pos = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        super().mouseReleaseEvent(event)
        if event.button() != Qt.MouseButton.LeftButton or self._press_pos is None:
            return
        moved = (event.position().toPoint() - self._press_pos).manhattanLength()
        self._press_pos = None
        if moved > 4 or self.textCursor().hasSelection():
            return
        self.clicked.emit(self.group_at_point(event.position().toPoint()))

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802
        if isinstance(event, QHelpEvent) and event.type() == QEvent.Type.ToolTip:
            group = self.group_at_point(event.pos())
            if group is None or self.describe is None:
                QToolTip.hideText()
                event.ignore()
                return True
            rects = self._group_rects(group)
            area = rects[0].toAlignedRect() if rects else QRect()
            QToolTip.showText(event.globalPos(), self.describe(group), self.viewport(), area)
            return True
        return super().viewportEvent(event)

    def insertFromMimeData(self, source) -> None:  # noqa: N802
        if source.hasText() and "\r\n" in source.text():
            self.crlf_pasted.emit()
        super().insertFromMimeData(source)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        # Tab types a tab (tokenizers split on it), so it cannot also leave the text: Escape, then
        # Tab or Shift+Tab moves on (as in CodeMirror), without which the editor was a keyboard trap.
        escaped, self._escaped = self._escaped, event.key() == Qt.Key.Key_Escape
        if escaped and event.key() in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab):
            shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            QWidget.focusNextPrevChild(self, event.key() == Qt.Key.Key_Tab and not shift)  # not the text edit's: it keeps Tab
            return
        if event.key() == Qt.Key.Key_Escape and self._selected:
            self.select_groups([])
            self.clicked.emit(None)
            return
        super().keyPressEvent(event)

    # ---- painting -------------------------------------------------------------------------------------
    def _apply_selections(self) -> None:
        selections = []
        if self._selected and self.layout_ is not None:
            dark = self.formats.dark
            colour = QColor(token_colours.MARK_COLOURS["selected"][dark])
            bm = self.layout_.blockmap
            document = self.document()
            for group in self._selected:
                if group.end <= group.start:
                    continue
                selection = QTextEdit.ExtraSelection()
                cursor = QTextCursor(document)
                last = document.characterCount() - 1
                cursor.setPosition(min(bm.doc_pos(group.start), last))
                cursor.setPosition(min(bm.doc_pos(group.end), last), QTextCursor.MoveMode.KeepAnchor)
                selection.cursor = cursor
                selection.format.setBackground(colour)
                selection.format.setForeground(QColor("#111111"))
                selection.format.setProperty(QTextFormat.Property.FullWidthSelection, False)
                selections.append(selection)
        self.setExtraSelections(selections)

    def _visible_blocks(self):
        block = self.firstVisibleBlock()
        offset = self.contentOffset()
        height = self.viewport().height()
        while block.isValid():
            geometry = self.blockBoundingGeometry(block).translated(offset)
            if geometry.top() > height:
                break
            if block.isVisible():
                yield block, geometry
            block = block.next()

    def _col_rects(self, block, geometry, a16: int, b16: int) -> list[QRectF]:
        """Rectangles covering UTF-16 columns a16:b16 of a block (one per visual line)."""
        layout = block.layout()
        rects = []
        length = block.length() - 1
        for i in range(layout.lineCount()):
            line = layout.lineAt(i)
            start, end = line.textStart(), line.textStart() + line.textLength()
            lo, hi = max(a16, start), min(b16, end)
            is_last = i == layout.lineCount() - 1
            if hi <= lo and not (is_last and b16 > length and a16 <= length):
                continue
            x1 = line.cursorToX(lo)[0] if lo <= length else line.x() + line.naturalTextWidth()
            if b16 > length and is_last:
                x2 = line.x() + line.naturalTextWidth() + self.fontMetrics().horizontalAdvance("↵")
            else:
                x2 = line.cursorToX(hi)[0]
            if x2 < x1:
                x1, x2 = x2, x1
            rects.append(QRectF(geometry.left() + x1, geometry.top() + line.y(), max(x2 - x1, 2.0), line.height()))
        return rects

    def _group_rects(self, group: inspection.GroupRef) -> list[QRectF]:
        if self.layout_ is None:
            return []
        bm = self.layout_.blockmap
        rects = []
        for block, geometry in self._visible_blocks():
            number = block.blockNumber()
            if number >= len(bm.blocks):
                break
            bs = bm.cp_starts[number]
            be = bs + len(bm.blocks[number]) + bm.sep_len
            if group.end <= bs or group.start >= be:
                continue
            a = max(group.start - bs, 0)
            b = group.end - bs
            a16 = bm.col16(number, min(a, len(bm.blocks[number])))
            b16 = bm.col16(number, min(b, len(bm.blocks[number])))
            if b > len(bm.blocks[number]):
                b16 += 1  # reaches into the line break
            rects.extend(self._col_rects(block, geometry, a16, b16))
        return rects

    def paintEvent(self, event) -> None:  # noqa: N802
        super().paintEvent(event)
        layout = self.layout_
        if layout is None:
            return
        painter = QPainter(self.viewport())
        try:
            self._paint_marks(painter, layout)
        finally:
            painter.end()

    def _paint_marks(self, painter: QPainter, layout: inspection.TextLayout) -> None:
        dark = self.formats.dark
        bm = layout.blockmap
        glyph_pen = QPen(QColor(token_colours.MARK_COLOURS["glyph"][dark]))
        disagree_colour = QColor(token_colours.MARK_COLOURS["disagree"][dark])
        disagree_colour.setAlpha(170)
        disagree_pen = QPen(disagree_colour, 1.5)
        hover_pen = QPen(QColor(token_colours.MARK_COLOURS["hover"][dark]), 1.5)
        font_metrics = self.fontMetrics()
        focus = [g for g in (self._hover, self._linked) if g is not None]
        painter.setFont(self.font())
        for block, geometry in self._visible_blocks():
            number = block.blockNumber()
            if number >= len(bm.blocks):
                break
            text = block.text()
            bs = bm.cp_starts[number]
            if self.show_whitespace or focus:
                self._paint_glyphs(painter, glyph_pen, font_metrics, block, geometry, text, bs, focus, bm)
            if self.boundary_marks and number < len(layout.block_spans):
                self._paint_boundaries(painter, glyph_pen, block, geometry, layout.block_spans[number])
            if self._disagree:
                be = bs + len(bm.blocks[number])
                k = max(0, bisect.bisect_right(self._disagree_starts, bs) - 1)
                painter.setPen(disagree_pen)
                while k < len(self._disagree) and self._disagree[k][0] < be:
                    s, e = self._disagree[k]
                    k += 1
                    if e <= bs:
                        continue
                    a16 = bm.col16(number, max(s - bs, 0))
                    b16 = bm.col16(number, min(e - bs, len(bm.blocks[number])))
                    for rect in self._col_rects(block, geometry, a16, b16):
                        y = rect.bottom() - 1
                        painter.drawLine(QPointF(rect.left() + 1, y), QPointF(rect.right() - 1, y))
        if focus:
            painter.setPen(hover_pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            for group in focus:
                for rect in self._group_rects(group):
                    painter.drawRoundedRect(rect.adjusted(-0.5, 0.5, 0.5, -0.5), 2, 2)

    def _paint_boundaries(self, painter: QPainter, pen: QPen, block, geometry, spans) -> None:
        """A thin vertical line where each token (group) starts after the first of the line."""
        layout = block.layout()
        painter.setPen(pen)
        for span in spans[1:]:
            col16 = span[0]
            line = layout.lineForTextPosition(col16)
            if not line.isValid():
                continue
            x = geometry.left() + line.cursorToX(col16)[0]
            top = geometry.top() + line.y()
            painter.drawLine(QPointF(x, top + 2), QPointF(x, top + line.height() - 2))

    def _paint_glyphs(self, painter, pen, metrics, block, geometry, text, bs, focus, bm) -> None:
        number = block.blockNumber()
        wanted: list[tuple[int, int]] = []  # code-point ranges of this line whose whitespace shows
        line_len = len(bm.blocks[number])
        if self.show_whitespace:
            wanted.append((0, line_len + 1))
        else:
            for group in focus:
                a, b = group.start - bs, group.end - bs
                if b > 0 and a <= line_len:
                    wanted.append((max(a, 0), b))
        if not wanted:
            return
        painter.setPen(pen)
        layout = block.layout()
        ascent = metrics.ascent()
        table = inspection.utf16_table(text)
        for cp_col, ch in enumerate(text):
            if ch not in _SHOWN or not any(a <= cp_col < b for a, b in wanted):
                continue
            col16 = table[cp_col] if table is not None else cp_col
            line = layout.lineForTextPosition(col16)
            if not line.isValid():
                continue
            x1 = line.cursorToX(col16)[0]
            x2 = line.cursorToX(col16 + 1)[0]
            glyph = _SHOWN[ch]
            width = metrics.horizontalAdvance(glyph)
            x = x1 + 1 if ch == "\t" else (x1 + x2 - width) / 2
            painter.drawText(QPointF(geometry.left() + x, geometry.top() + line.y() + ascent), glyph)
        if block.next().isValid() and any(a <= line_len < b for a, b in wanted):
            line = layout.lineAt(layout.lineCount() - 1)
            x = line.x() + line.naturalTextWidth() + 1
            painter.drawText(QPointF(geometry.left() + x, geometry.top() + line.y() + ascent), "↵")


def editor_font() -> QFont:
    """The system's fixed-width font, a little larger than the UI font (code lines up, tokens read)."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if font.pointSizeF() > 0:
        font.setPointSizeF(max(font.pointSizeF(), 10.0) + 1)
    return font
