"""The piece table of a Unigram run: every piece with its log probability, lazily paged.

A Unigram model merges nothing, so the Merges tab shows this table in place of the merge table.
Columns: id, piece, log probability, probability, length in characters, kind (special / byte /
normal), corpus frequency and the never-used flag. It is a :class:`LazyKeyedModel` over a
:class:`~workbench.store.browse.PieceSource`, so every column sorts and the text filter applies in
SQL (scores and frequencies reach SQL through registered functions). What it leaves out: counting
the corpus (``usage.usage_job``) and widgets (``piece_view``); the id, piece, kind, frequency and
never-used cells, drawn as the vocabulary table draws them (``vocab_model.UsageTableModel``).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from workbench.store.browse import PieceEntry
from workbench.ui.merges.vocab_model import UsageTableModel

NEVER_USED_TIP = ("Never used: the piece does not occur when the run's training corpus is encoded with this "
                  "tokenizer (Viterbi, the best segmentation of every pre-token, each distinct pre-token "
                  "encoded once). Special tokens are not counted.")


def format_probability(p: float | None) -> str:
    """A probability readable across 1 … 1e-12: fixed point while it has 3 significant digits."""
    if p is None:
        return "—"
    return f"{p:.4f}" if p >= 0.001 else f"{p:.2e}"


class PieceTableModel(UsageTableModel):
    COLUMNS = (
        ("id", "id", "Token id"),
        ("piece", "piece", "The piece's text (▁ marks a word start; ␣ a space)"),
        ("log prob", "score", "Log probability of the piece in the trained unigram model (natural log)"),
        ("probability", "score", "Probability of the piece: exp(log prob)"),
        ("chars", "chars", "Length of the piece in characters"),
        ("kind", "kind", "special: added by the pipeline; byte: a byte-fallback piece <0xNN>; normal: learned"),
        ("frequency", "frequency", "Occurrences when the training corpus is encoded with this tokenizer"),
        ("never used", "never_used", NEVER_USED_TIP),
        ("audit", "audit", "What the Audit tab found for this piece (run the audit there to fill this column): "
                           "unreachable, undecodable, never used on the corpus"),
    )
    PIECE_COLUMN = 1
    MONO = frozenset({1})
    LEFT = frozenset({1, 5, 7, 8})
    AUDIT_COLUMN = 8
    NOT_COUNTED_TIP = "Not counted yet: the count runs when the piece table is shown"

    def own_cell(self, e: PieceEntry, column: int, role: int) -> Any:
        if column == 8:
            from workbench.ui.merges.merge_model import audit_label

            if role == Qt.ItemDataRole.DisplayRole:
                return audit_label(e.audit)
            if role == Qt.ItemDataRole.ToolTipRole:
                return "Not audited: press Audit in the Audit tab" if e.audit is None else audit_label(e.audit) or None
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 2:
                return "—" if e.score is None else f"{e.score:.4f}"
            if column == 3:
                return format_probability(e.probability)
            if column == 4:
                return str(e.chars)
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            if column in (2, 3) and e.score is None:
                return "Special tokens have no probability: the model never picks them from text"
            if column == 7:
                return NEVER_USED_TIP
        return None

    def own_muted(self, e: PieceEntry, column: int) -> bool:
        return column == 5 or (column in (2, 3) and e.score is None) or (column == 8 and e.audit is None)

    def cell(self, e: PieceEntry, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.ForegroundRole and column == 8 and e.audit:
            from workbench.ui.merges.vocab_model import warning_brush

            return warning_brush()
        return super().cell(e, column, role)
