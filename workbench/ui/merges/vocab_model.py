"""The vocabulary table: every entry of a run or reference, lazily paged like the merge table.

Columns: id, piece, bytes (hex), kind (special / base / merge), frequency in the training corpus
after full encoding, and a never-used flag. Frequencies come from a background count
(``vocab_view``) and reach SQL through registered functions (``merge_source``), so sorting and
filtering by them stays in SQL. What it leaves out: counting (``workbench.analysis.vocab_usage``)
and widgets.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor

from workbench.core.display import piece_hex
from workbench.store.browse import VocabEntry
from workbench.ui.merges.merge_model import (
    _LEFT,
    _RIGHT,
    LazyKeyedModel,
    _cached_brush,
    browser_piece,
    muted_brush,
    piece_tooltip,
)
from workbench.ui.style import is_dark


def warning_brush() -> QBrush:
    return _cached_brush("warning", _make_warning_brush)


def _make_warning_brush() -> QBrush:
    """Orange that reads on light and dark backgrounds (never-used entries)."""
    return QBrush(QColor("#f0a04b") if is_dark() else QColor("#b35900"))


class VocabTableModel(LazyKeyedModel):
    COLUMNS = (
        ("id", "id", "Token id"),
        ("piece", "piece", "The token's text (escapes for control characters and whitespace)"),
        ("bytes", "bytes", "The token's UTF-8 bytes in hex (sorts by length)"),
        ("kind", "kind", "special: added by the pipeline; base: a byte or character; merge: made by a merge"),
        ("frequency", "frequency", "Occurrences when the training corpus is encoded with this tokenizer"),
        ("never used", "never_used", "Entries the encoded corpus never contains: stepping stones of later "
                                     "merges or bytes the corpus lacks — candidates for under-trained tokens"),
    )
    NATURAL = "id"

    def usage_changed(self) -> None:
        """Frequencies arrived (or were cleared): re-read the rows (a reset keeps it simple)."""
        self.reload()

    def cell(self, e: VocabEntry, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return str(e.id)
            if column == 1:
                return browser_piece(e.piece) if e.piece else "(empty)"
            if column == 2:
                hexed = piece_hex(e.piece)
                return hexed if len(hexed) <= 60 else hexed[:60] + " …"
            if column == 3:
                return e.kind
            if column == 4:
                return "—" if e.frequency is None else f"{e.frequency:,}"
            if column == 5:
                if e.never_used is None:
                    return "—" if e.frequency is None else ""
                return "never used" if e.never_used else ""
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            if column in (1, 2):
                return piece_tooltip(e.piece, f"token {e.id} ({e.kind})")
            if column in (4, 5) and e.frequency is None:
                return "Not counted yet: press “Count in corpus”"
            return None
        if role == Qt.ItemDataRole.FontRole:
            return self._font if column in (1, 2) else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if column in (0, 4) else _LEFT
        if role == Qt.ItemDataRole.ForegroundRole:
            if e.never_used:
                return warning_brush()
            if column in (2, 3) or (column in (4, 5) and e.frequency is None):
                return muted_brush()
            return None
        return None
