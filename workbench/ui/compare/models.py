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
from workbench.core.expert_metrics import METRIC_NOTES
from workbench.core.vocab_diff import SplitDifference
from workbench.corpus.language import language_from_name

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
    if kind == "rank":
        return f"{value:,.1f}"
    if kind == "cost":  # tokens (parallel text) or tokens per character
        return f"{int(value):,}" if float(value).is_integer() else f"{value:.4f}"
    if kind == "change":
        return f"{100 * value:+.1f} %".replace("-", "−")
    if kind == "delta":
        return f"{value:+.4f}".replace("-", "−")
    return str(value)


# (header, kind, getter) — ``kind`` decides display formatting; CSV gets the raw value.
Column = tuple[str, str, Callable[[Any], Any]]

METRIC_COLUMNS: list[Column] = [
    ("tokenizer", "text", lambda m: m.tokenizer),
    ("file / language", "path", lambda m: m.label),
    ("language", "text", lambda m: m.language),
    ("tokens", "int", lambda m: m.tokens),
    ("chars/token", "ratio", lambda m: m.chars_per_token),
    # Beside the compression it qualifies: [UNK] buys characters per token by losing text.
    ("chars lost to unknown", "pct", lambda m: m.chars_lost_to_unknown),
    ("bytes/token", "ratio", lambda m: m.bytes_per_token),
    ("fertility", "ratio", lambda m: m.fertility),
    # Distribution metrics (docs/metrics.md); the header tooltip is METRIC_NOTES[header].
    ("Rényi efficiency", "ratio", lambda m: m.renyi_efficiency),
    ("Shannon efficiency", "ratio", lambda m: m.shannon_efficiency),
    ("single-token retention", "pct", lambda m: m.single_token_retention),
    ("average token rank", "rank", lambda m: m.average_rank),
    ("Gini (language cost)", "ratio", lambda m: m.gini),
    ("L² (Σ per line)", "int", lambda m: m.counts.attention),
    ("unknown tokens", "pct", lambda m: m.unknown_rate),
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
        if role == Qt.ItemDataRole.TextAlignmentRole and kind in ("int", "ratio", "pct", "rank"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and kind in ("text", "path"):
            return str(self.value(index.row(), index.column()))
        return self.extra(index, role)

    def extra(self, index: Index, role: int) -> Any:
        """More roles for a subclass (a warning on a cell); None by default."""
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.columns[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return METRIC_NOTES.get(self.columns[section][0])
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

    EFFICIENCIES = ("Rényi efficiency", "Shannon efficiency")

    def __init__(self, parent=None):
        super().__init__(METRIC_COLUMNS, parent)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """An efficiency cell states its α and |V| beside the number (``0.512 · α 2.5 · |V| 656 observed``)."""
        name = self.columns[index.column()][0] if index.isValid() else ""
        if role == Qt.ItemDataRole.DisplayRole and name in self.EFFICIENCIES:
            value = self.value(index.row(), index.column())
            if value is not None:
                m = self.rows[index.row()]
                alpha = f" · α {m.alpha:g}" if name == "Rényi efficiency" else ""
                return f"{value:.3f}{alpha} · |V| {m.basis_size:,} {m.basis}"
        return super().data(index, role)

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


class GiniPairRow:
    """One line of the Gini-pairs table: a language's cost under both tokenizers, or the pair's Gini."""

    __slots__ = ("after", "before", "language", "cost_before", "cost_after", "change", "gini_change")

    def __init__(self, after: str, before: str | None, language: str, cost_before: float | None,
                 cost_after: float | None, change: float | None = None, gini_change: float | None = None):
        self.after, self.before, self.language = after, before, language
        self.cost_before, self.cost_after = cost_before, cost_after
        self.change, self.gini_change = change, gini_change


GINI_PAIR_COLUMNS: list[Column] = [
    ("tokenizer", "text", lambda r: r.after),
    ("classic BPE (same size)", "text", lambda r: r.before),
    ("language", "text", lambda r: r.language),
    ("before (classic BPE)", "cost", lambda r: r.cost_before),
    ("after", "cost", lambda r: r.cost_after),
    ("change", "change", lambda r: r.change),
    ("Gini change", "delta", lambda r: r.gini_change),
]


class GiniPairsModel(RowsModel):
    """Each frontier run against its classic BPE baseline: a row per language (its token cost before
    and after, and the change), then the pair's Gini row. Pairs without a baseline have no rows (the
    panel's note says why)."""

    def __init__(self, parent=None):
        super().__init__(GINI_PAIR_COLUMNS, parent)

    def set_pairs(self, pairs: Sequence[Any]) -> None:
        rows: list[GiniPairRow] = []
        for p in pairs:
            if p.pair.before is None:
                continue
            for c in p.languages:
                rows.append(GiniPairRow(p.pair.after, p.pair.before, c.language, c.before, c.after, c.change))
            rows.append(GiniPairRow(p.pair.after, p.pair.before, "Gini (language cost)", p.gini_before, p.gini_after,
                                    gini_change=p.gini_change))
        self.set_rows(rows)


class SplitTableModel(RowsModel):
    def __init__(self, parent=None):
        super().__init__(SPLIT_COLUMNS, parent)

    def set_differences(self, rows: Sequence[SplitDifference]) -> None:
        self.set_rows(rows)


class CorpusFilesModel(QAbstractTableModel):
    """The Compare tab's corpus files: a tick, the name (full path in the tooltip) and an editable
    language label per file.

    A project can list 100,000 files, so a path is found through a dict (never by walking the
    rows: walking them for each added file made opening such a project quadratic, minutes long),
    files are appended in one ``beginInsertRows`` per call of :meth:`add`, and the language a name
    carries is worked out when its row is shown (``None`` until then): a file without a label of
    its own is counted under that same language by :func:`workbench.tasks.compare.compare_corpus`,
    so :meth:`checked` gives ``""`` for it and the labels a user typed (or a caller gave).
    """

    HEADERS = ("Corpus file", "Language")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.paths: list[str] = []
        self.options: list[dict] = []
        self.languages: list[str | None] = []  # None: the name's language, not worked out yet
        self.given: list[bool] = []  # the label was typed or given, not read from the name
        self.ticked: list[bool] = []
        self._row: dict[str, int] = {}

    # ---- reading -----------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.paths)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else 2

    def row_of(self, path: str) -> int | None:
        return self._row.get(path)

    def checked(self) -> list[tuple[str, dict, str]]:
        """(path, reader options, language label or "") of the ticked files, in row order."""
        return [(p, o, (lang or "").strip() if given else "")
                for p, o, lang, given, t in zip(self.paths, self.options, self.languages, self.given, self.ticked) if t]

    def language(self, row: int) -> str:
        """The label shown in ``row``: given, or the one its name carries (worked out once)."""
        found = self.languages[row]
        if found is None:
            found = self.languages[row] = language_from_name(self.paths[row]) or ""
        return found

    def labels(self) -> dict[str, str]:
        """path → the label a user typed or a caller gave (the names' own are left out)."""
        return {p: lang or "" for p, lang, given in zip(self.paths, self.languages, self.given) if given}

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        path = self.paths[row]
        if column == 0:
            if role == Qt.ItemDataRole.DisplayRole:
                return Path(path).name
            if role == Qt.ItemDataRole.ToolTipRole:
                return path
            if role == Qt.ItemDataRole.CheckStateRole:
                return Qt.CheckState.Checked if self.ticked[row] else Qt.CheckState.Unchecked
            if role == Qt.ItemDataRole.UserRole:
                return path
        elif role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return self.language(row)
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() == 0:
            return base | Qt.ItemFlag.ItemIsUserCheckable
        return base | Qt.ItemFlag.ItemIsEditable

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None

    # ---- changing ----------------------------------------------------------------------------
    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid():
            return False
        row, column = index.row(), index.column()
        if column == 0 and role == Qt.ItemDataRole.CheckStateRole:
            self.ticked[row] = Qt.CheckState(value) == Qt.CheckState.Checked
        elif column == 1 and role == Qt.ItemDataRole.EditRole:
            self.languages[row] = str(value)
            self.given[row] = True
        else:
            return False
        self.dataChanged.emit(index, index, [role])
        return True

    def add(self, files: Sequence[tuple[str, dict, str, bool]]) -> int:
        """Append (path, reader options, language or "" for the name's, ticked) for paths not listed
        yet; how many were new."""
        new: dict[str, tuple[dict, str, bool]] = {}
        for path, options, language, ticked in files:
            if path not in self._row and path not in new:
                new[path] = (dict(options or {}), language, ticked)
        if not new:
            return 0
        first = len(self.paths)
        self.beginInsertRows(QModelIndex(), first, first + len(new) - 1)
        for offset, (path, (options, language, ticked)) in enumerate(new.items()):
            self._row[path] = first + offset
            self.paths.append(path)
            self.options.append(options)
            self.languages.append(language or None)
            self.given.append(bool(language))
            self.ticked.append(ticked)
        self.endInsertRows()
        return len(new)

    def set_language(self, path: str, language: str) -> None:
        row = self._row.get(path)
        if row is not None:
            self.setData(self.index(row, 1), language)

    def set_ticked(self, path: str, ticked: bool) -> None:
        row = self._row.get(path)
        if row is not None:
            state = Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked
            self.setData(self.index(row, 0), state, Qt.ItemDataRole.CheckStateRole)

    def clear(self) -> None:
        self.beginResetModel()
        self.paths, self.options, self.languages, self.given, self.ticked, self._row = [], [], [], [], [], {}
        self.endResetModel()
