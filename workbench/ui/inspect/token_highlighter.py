"""Applies token colours computed elsewhere; never tokenizes (the Frescobaldi pattern).

:class:`TokenHighlighter` keeps, per editor line, the spans a worker computed
(``(utf16_start, utf16_length, style_code)``, see :mod:`workbench.inspection`) and the line's text
at that time. New spans repaint only the lines that changed (the common head and tail of the old
and new lists are skipped). A line edited since the spans were computed keeps the colours of its
unchanged beginning until the next result arrives, so typing never paints stale colours onto
moved characters.

:class:`FormatCache` turns a style code into a ``QTextCharFormat`` for the current light or dark
palette; the ids panel shares it so a token and its id have the same colour.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from PySide6.QtCore import QTimer, Slot
from PySide6.QtGui import (
    QColor,
    QFont,
    QPalette,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextDocument,
)

from workbench.tasks import token_colours
from workbench.tasks.inspection import utf16_table


def is_dark(palette: QPalette) -> bool:
    """Whether the *text background* (Base, which token colours sit on) is dark; the window's
    own darkness, which can differ in some system themes, is ``style.is_dark``."""
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


class FormatCache:
    """Style code → QTextCharFormat for one theme."""

    def __init__(self, dark: bool = False, n_colours: int = len(token_colours.LIGHT_PALETTE)):
        self.dark = dark
        self.n_colours = n_colours
        self._formats: dict[int, QTextCharFormat] = {}

    def set_dark(self, dark: bool) -> bool:
        """Switch theme; True when that changed anything."""
        if dark == self.dark:
            return False
        self.dark = dark
        self._formats.clear()
        return True

    def colour(self, code: int) -> QColor:
        return QColor(token_colours.palette(self.dark)[(code & token_colours.COLOUR_MASK) % self.n_colours])

    def format(self, code: int) -> QTextCharFormat:
        fmt = self._formats.get(code)
        if fmt is None:
            fmt = self._formats[code] = self._make(code)
        return fmt

    def _make(self, code: int) -> QTextCharFormat:
        dark = self.dark
        fmt = QTextCharFormat()
        fmt.setBackground(self.colour(code))
        fmt.setForeground(QColor(token_colours.TEXT_ON_DARK if dark else token_colours.TEXT_ON_LIGHT))
        if code & token_colours.SPECIAL:
            background, foreground = token_colours.SPECIAL_COLOURS[dark]
            fmt.setBackground(QColor(background))
            fmt.setForeground(QColor(foreground))
            fmt.setFontWeight(QFont.Weight.Bold)
        if code & token_colours.PARTIAL:
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.DotLine)
            fmt.setUnderlineColor(QColor(token_colours.MARK_COLOURS["partial"][dark]))
        if code & token_colours.SUPERWORD:  # a token across a space: a solid underline of its own colour
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.SingleUnderline)
            fmt.setUnderlineColor(QColor(token_colours.MARK_COLOURS["superword"][dark]))
            fmt.setFontWeight(QFont.Weight.DemiBold)
        if code & token_colours.UNKNOWN:
            fmt.setBackground(QColor("#7f1d1d" if dark else "#fecaca"))
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            fmt.setUnderlineColor(QColor(token_colours.MARK_COLOURS["disagree"][dark]))
        return fmt


class TokenHighlighter(QSyntaxHighlighter):
    """Colours the lines of one document from precomputed spans.

    A result that changes many lines (a new tokenizer, the merge slider) is applied visible lines
    first, then the rest in slices of ~8 ms from a zero timer, so the event loop keeps running.
    """

    SLICE_S = 0.003
    SYNC_LINES = 48

    def __init__(self, document: QTextDocument, formats: FormatCache):
        super().__init__(document)
        self.formats = formats
        self._spans: list[tuple] = []
        self._texts: list[str] = []
        self.enabled = True
        self.visible_blocks: Callable[[], tuple[int, int]] | None = None  # set by the view
        self._queue: list[int] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._drain)

    def set_spans(self, spans: Sequence[tuple], texts: Sequence[str]) -> int:
        """New spans and the line texts they were computed for; returns how many lines change."""
        old_spans, old_texts = self._spans, self._texts
        spans, texts = list(spans), list(texts)
        n_old, n_new = len(old_spans), len(spans)
        head = 0
        limit = min(n_old, n_new)
        while head < limit and old_spans[head] == spans[head] and old_texts[head] == texts[head]:
            head += 1
        tail = 0
        while (tail < limit - head and old_spans[n_old - 1 - tail] == spans[n_new - 1 - tail]
               and old_texts[n_old - 1 - tail] == texts[n_new - 1 - tail]):
            tail += 1
        self._spans, self._texts = spans, texts
        dirty = range(head, n_new - tail)
        pending = set(self._queue)
        pending.update(dirty)
        order = sorted(pending)
        if self.visible_blocks is not None and len(order) > 1:
            first, last = self.visible_blocks()
            order = [n for n in order if first <= n <= last] + [n for n in order if n > last] + \
                [n for n in order if n < first]
        self._queue = order
        if len(order) <= self.SYNC_LINES:
            self._drain()  # a keystroke's worth: paint now
        else:
            self._timer.start()  # many lines: slices from the event loop, visible ones first
        return len(dirty)

    def pending(self) -> int:
        """Lines still waiting to be repainted with the latest spans."""
        return len(self._queue)

    @Slot()
    def _drain(self) -> None:
        document = self.document()
        deadline = time.perf_counter() + self.SLICE_S
        queue = self._queue
        done = 0
        while done < len(queue):
            block = document.findBlockByNumber(queue[done])
            done += 1
            if block.isValid():
                self.rehighlightBlock(block)
            if done % 4 == 0 and time.perf_counter() > deadline:
                break
        self._queue = queue[done:]
        if self._queue:
            self._timer.start()

    def clear_spans(self) -> None:
        self._spans, self._texts, self._queue = [], [], []
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        if not self.enabled:
            return
        number = self.currentBlock().blockNumber()
        if number >= len(self._spans):
            return
        spans = self._spans[number]
        if not spans:
            return
        limit = None
        if self._texts[number] != text:
            limit = _common_prefix_utf16(self._texts[number], text)
        fmt = self.formats.format
        set_format = self.setFormat
        for start, length, code in spans:
            if limit is not None and start + length > limit:
                break
            set_format(start, length, fmt(code))


def _common_prefix_utf16(a: str, b: str) -> int:
    """UTF-16 length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    table = utf16_table(a[:k])
    return table[-1] if table is not None else k
