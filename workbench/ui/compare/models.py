"""Table models of the Compare tab: metric rows and split differences, as plain read-only tables.

The rows are small (tokenizers × files), so a model holds them all; what it adds over a list is
number formatting for display, raw values for sorting (``Qt.UserRole``) and the same cells for
CSV export (:meth:`MetricsTableModel.csv_rows`), so the file a user saves matches the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QStyle

from workbench.core.corpus_metrics import Fairness, Metrics, lossy_note, percent
from workbench.core.display import piece_text
from workbench.core.vocab_diff import SplitDifference

Index = QModelIndex | QPersistentModelIndex


def _fmt(value: Any, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "path":
        return Path(value).name if ("/" in value or "\\" in value) else value
    if kind == "word":  # control characters (ANSI escapes in real dumps) must not print as boxes
        return piece_text(value.encode("utf-8", "surrogatepass"))
    if kind == "split":
        return " · ".join(piece_text(p) for p in value)
    if kind == "int":
        return f"{value:,}"
    if kind == "pct":
        return percent(value)
    if kind == "ratio":
        return f"{value:.3f}"
    return str(value)


# (header, kind, getter) — ``kind`` decides display formatting; CSV gets the raw value.
Column = tuple[str, str, Callable[[Any], Any]]

METRIC_COLUMNS: list[Column] = [
    ("tokenizer", "text", lambda m: m.tokenizer),
    ("file / language", "path", lambda m: m.label),
    ("language", "text", lambda m: m.language),
    ("tokens", "int", lambda m: m.tokens),
    ("chars/token", "ratio", lambda m: m.chars_per_token),
    ("bytes/token", "ratio", lambda m: m.bytes_per_token),
    ("fertility", "ratio", lambda m: m.fertility),
    ("L² (Σ per line)", "int", lambda m: m.counts.attention),
    ("unknown tokens", "pct", lambda m: m.unknown_rate),
    ("chars lost to unknown", "pct", lambda m: m.chars_lost_to_unknown),
    ("vocab used", "pct", lambda m: m.utilisation),
    ("never used", "int", lambda m: m.never_used),
    ("|V|", "int", lambda m: m.vocab_size),
    ("V×d", "int", lambda m: m.embedding_params),
]

FAIRNESS_COLUMNS: list[Column] = [
    ("tokenizer", "text", lambda f: f.tokenizer),
    ("language", "text", lambda f: f.language),
    ("baseline", "text", lambda f: f.baseline),
    ("basis", "text", lambda f: f.basis),
    ("tokens vs baseline", "ratio", lambda f: f.ratio),
]


SPLIT_COLUMNS: list[Column] = [
    ("word", "word", lambda d: d.word),
    ("count", "int", lambda d: d.count),
    ("tokens A", "int", lambda d: None if d.split_a is None else len(d.split_a)),
    ("tokens B", "int", lambda d: None if d.split_b is None else len(d.split_b)),
    ("split A", "split", lambda d: d.split_a),
    ("split B", "split", lambda d: d.split_b),
]


class RowsModel(QAbstractTableModel):
    """Rows of any objects shown through a column list."""

    def __init__(self, columns: list[Column], parent=None):
        super().__init__(parent)
        self.columns = columns
        self.rows: list[Any] = []

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def value(self, row: int, column: int) -> Any:
        return self.columns[column][2](self.rows[row])

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        _name, kind, _get = self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return _fmt(self.value(index.row(), index.column()), kind)
        if role == Qt.ItemDataRole.UserRole:
            return self.value(index.row(), index.column())
        if role == Qt.ItemDataRole.TextAlignmentRole and kind in ("int", "ratio", "pct"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and kind in ("text", "path"):
            return str(self.value(index.row(), index.column()))
        return self.extra(index, role)

    def extra(self, index: Index, role: int) -> Any:
        """More roles for a subclass (a warning on a cell); None by default."""
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section][0]
        return None

    def csv_header(self) -> list[str]:
        return [c[0] for c in self.columns]

    def csv_rows(self) -> list[list[Any]]:
        """Raw values (no thousands separators, ratios unrounded, full paths, pieces as the merges
        CSV writes them); an empty cell for a missing value."""
        return [[_csv(get(row), kind) for _n, kind, get in self.columns] for row in self.rows]


def _csv(value: Any, kind: str) -> Any:
    if value is None:
        return ""
    if kind == "split":
        return " ".join(piece_text(p) for p in value)
    return value


class MetricsTableModel(RowsModel):
    """Metric rows; a tokenizer that loses characters to unknown tokens has its compression cells
    marked ⚠ with the share in their tooltip (the ranking rule of :func:`lossy_note`)."""

    MARKED = ("tokens", "chars/token", "bytes/token", "fertility", "chars lost to unknown")

    def __init__(self, parent=None):
        super().__init__(METRIC_COLUMNS, parent)

    def extra(self, index: Index, role: int) -> Any:
        if self.columns[index.column()][0] not in self.MARKED:
            return None
        note = lossy_note(self.rows[index.row()])
        if not note:
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            return (f"This tokenizer {note}: one unknown token stands for a whole word or run of them, so its "
                    "compression looks better than that of a tokenizer that keeps its text. Not comparable.")
        if role == Qt.ItemDataRole.DecorationRole:
            return _warning_icon()
        return None

    def set_metrics(self, rows: Sequence[Metrics]) -> None:
        self.set_rows(rows)


def _warning_icon() -> QIcon:
    return QApplication.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)


class FairnessTableModel(RowsModel):
    """Tokens against the baseline; a ratio of a tokenizer that loses characters of that language
    (or of the baseline) to unknown tokens is marked as :class:`MetricsTableModel` marks it."""

    def __init__(self, parent=None):
        super().__init__(FAIRNESS_COLUMNS, parent)
        self.lossy: dict[tuple[str, str], str] = {}  # (tokenizer, language) → lossy_note

    def set_fairness(self, rows: Sequence[Fairness], per_language: Sequence[Metrics] = ()) -> None:
        self.lossy = {(m.tokenizer, m.language): lossy_note(m) for m in per_language if m.loses_text}
        self.set_rows(rows)

    def extra(self, index: Index, role: int) -> Any:
        if self.columns[index.column()][0] != "tokens vs baseline":
            return None
        f = self.rows[index.row()]
        notes = [f"on {lang}: {self.lossy[(f.tokenizer, lang)]}" for lang in dict.fromkeys((f.language, f.baseline))
                 if (f.tokenizer, lang) in self.lossy]
        if not notes:
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"This tokenizer {'; '.join(notes)}: the ratio counts text it cannot give back. Not comparable."
        if role == Qt.ItemDataRole.DecorationRole:
            return _warning_icon()
        return None


class SplitTableModel(RowsModel):
    def __init__(self, parent=None):
        super().__init__(SPLIT_COLUMNS, parent)

    def set_differences(self, rows: Sequence[SplitDifference]) -> None:
        self.set_rows(rows)
