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

from workbench.core.display import piece_hex
from workbench.core.superbpe import is_superword
from workbench.store.browse import VocabEntry
from workbench.ui.merges.merge_model import (
    _DISPLAY,
    _LEFT,
    _RIGHT,
    FG_MUTED,
    FG_NONE,
    FG_SUPERWORD,
    FG_WARNING,
    FONT_MONO,
    FONT_NONE,
    SUPERWORD_TIP,
    LazyKeyedModel,
    browser_piece,
    muted_brush,
    piece_tooltip,
    superword_brush,
    warning_brush,
)


class UsageTableModel(LazyKeyedModel):
    """A paged table of token entries with a corpus count: what the vocabulary and piece tables share.

    The columns whose order key is ``id``, ``piece``, ``kind``, ``frequency`` or ``never_used`` look
    the same in both tables and are drawn here; a subclass draws its own columns in
    :meth:`own_cell` and says which columns are monospaced (``MONO``) and left-aligned (``LEFT``).
    What it leaves out: the count itself (``usage``) and any column but those five.
    """

    NATURAL = "id"
    MONO: frozenset[int] = frozenset()
    LEFT: frozenset[int] = frozenset()
    NOT_COUNTED_TIP = ""
    AUDIT_COLUMN = -1  # the column of the Audit tab's marks: a finding is drawn as a warning

    def alignment(self, column: int) -> Any:
        return _LEFT if column in self.LEFT else _RIGHT

    def row_cells(self, e: Any, source: Any) -> tuple[tuple, tuple, tuple]:
        """:meth:`cell`'s display text, font and colour of every column at once (see the base):
        every cell here depends on the entry alone."""
        columns = range(len(self.COLUMNS))
        texts = tuple(self.cell(e, c, _DISPLAY) for c in columns)
        fonts = tuple(FONT_MONO if c in self.MONO else FONT_NONE for c in columns)
        return texts, fonts, tuple(self._colour(e, c) for c in columns)

    def _colour(self, e: Any, column: int) -> int:
        """The ForegroundRole of :meth:`cell` as an ``FG_*`` code."""
        if column == self.AUDIT_COLUMN and e.audit or e.never_used:
            return FG_WARNING
        key = self.COLUMNS[column][1]
        if key in ("frequency", "never_used") and e.frequency is None or self.own_muted(e, column):
            return FG_MUTED
        if key == "piece" and e.piece and is_superword(e.piece):
            return FG_SUPERWORD
        return FG_NONE

    def usage_changed(self) -> None:
        """Frequencies arrived (or were cleared): re-read the rows (a reset keeps it simple)."""
        self.reload()

    def own_cell(self, e: Any, column: int, role: int) -> Any:
        """The display text or tooltip of a column the base does not draw (None: nothing)."""
        return None

    def own_muted(self, e: Any, column: int) -> bool:
        """Whether a cell of an entry the corpus uses is drawn muted (beyond an uncounted one)."""
        return False

    def cell(self, e: Any, column: int, role: int) -> Any:
        key = self.COLUMNS[column][1]
        uncounted = key in ("frequency", "never_used") and e.frequency is None
        if role == Qt.ItemDataRole.DisplayRole:
            if key == "id":
                return str(e.id)
            if key == "piece":
                return browser_piece(e.piece) if e.piece else "(empty)"
            if key == "kind":
                return e.kind
            if key == "frequency":
                return "—" if e.frequency is None else f"{e.frequency:,}"
            if key == "never_used":
                if e.never_used is None:
                    return "—" if e.frequency is None else ""
                return "never used" if e.never_used else ""
            return self.own_cell(e, column, role)
        if role == Qt.ItemDataRole.ToolTipRole:
            if key == "piece":
                superword = f"\n{SUPERWORD_TIP}" if e.piece and is_superword(e.piece) else ""
                return piece_tooltip(e.piece, f"token {e.id} ({e.kind}){superword}")
            if uncounted:
                return self.NOT_COUNTED_TIP
            return self.own_cell(e, column, role)
        if role == Qt.ItemDataRole.FontRole:
            return self._font if column in self.MONO else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _LEFT if column in self.LEFT else _RIGHT
        if role == Qt.ItemDataRole.ForegroundRole:
            if e.never_used:
                return warning_brush()
            if uncounted or self.own_muted(e, column):
                return muted_brush()
            if key == "piece" and e.piece and is_superword(e.piece):
                return superword_brush()
            return None
        return None


class VocabTableModel(UsageTableModel):
    COLUMNS = (
        ("id", "id", "Token id"),
        ("piece", "piece", "The token's text (escapes for control characters and whitespace)"),
        ("bytes", "bytes", "The token's UTF-8 bytes in hex (sorts by length)"),
        ("kind", "kind", "special: added by the pipeline; base: a byte or character; merge: made by a merge"),
        ("frequency", "frequency", "Occurrences when the training corpus is encoded with this tokenizer"),
        ("never used", "never_used", "Entries the encoded corpus never contains: stepping stones of later "
                                     "merges or bytes the corpus lacks — candidates for under-trained tokens"),
        ("audit", "audit", "What the Audit tab found for this entry (run the audit there to fill this column): "
                           "unreachable, undecodable (partial UTF-8), residue (LiteToken's R below the "
                           "threshold), never used on the corpus"),
    )
    MONO = frozenset({1, 2})
    LEFT = frozenset({1, 2, 3, 5, 6})
    AUDIT_COLUMN = 6
    NOT_COUNTED_TIP = "Not counted yet: press “Count in corpus”"

    def own_cell(self, e: VocabEntry, column: int, role: int) -> Any:
        if column == 6:
            from workbench.ui.merges.merge_model import audit_label

            if role == Qt.ItemDataRole.DisplayRole:
                return audit_label(e.audit)
            if role == Qt.ItemDataRole.ToolTipRole:
                return "Not audited: press Audit in the Audit tab" if e.audit is None else audit_label(e.audit) or None
            return None
        if column != 2:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            hexed = piece_hex(e.piece)
            return hexed if len(hexed) <= 60 else hexed[:60] + " …"
        if role == Qt.ItemDataRole.ToolTipRole:
            return piece_tooltip(e.piece, f"token {e.id} ({e.kind})")
        return None

    def own_muted(self, e: VocabEntry, column: int) -> bool:
        return column in (2, 3) or (column == 6 and e.audit is None)

    def cell(self, e: VocabEntry, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.ForegroundRole and column == 6 and e.audit:
            return warning_brush()  # an audit finding stands out, as a never-used entry does
        return super().cell(e, column, role)
