"""The Compare tab: two runs, or a run and a reference tokenizer, side by side.

Tokens only in A, only in B, and shared ones with their rank shift (how many merges later B
learned the same piece), and the corpus words that split differently, most frequent first: the
use case :func:`workbench.tasks.run_diff.diff_sources` computes both in a cancellable background
job with its own connection; this module shows them.

The result tables are in memory (a diff is computed, not stored): :class:`ListTableModel` sorts
its Python list when a header is clicked, and only visible rows are ever formatted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
    Slot,
)
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.core.display import piece_hex
from workbench.formats.tables import write_csv
from workbench.store.browse import Source, SourceInfo
from workbench.tasks.run_diff import DiffResult, diff_sources
from workbench.ui.jobs import JobRunner
from workbench.ui.merges.merge_model import (
    _LEFT,
    _RIGHT,
    browser_piece,
    mono_font,
    muted_brush,
    piece_tooltip,
)
from workbench.ui.merges.widgets import (
    ErrorLabel,
    PlaceholderTableView,
    ask_and_export_csv,
    configure_table,
    export_button,
    find_source,
    selected_rows,
    show_job_progress,
)


@dataclass(frozen=True)
class Column:
    title: str
    text: Callable[[Any], str]
    key: Callable[[Any], Any]
    numeric: bool = False
    mono: bool = False
    csv: Callable[[Any], Any] | None = None
    tooltip: Callable[[Any], str | None] | None = None


def _none_last(value):
    """Sort key that puts None after every number (both directions keep missing values apart)."""
    return (value is None, value if value is not None else 0)


class ListTableModel(QAbstractTableModel):
    """A read-only table over a Python list; sorting sorts the list."""

    def __init__(self, columns: Sequence[Column], parent=None):
        super().__init__(parent)
        self.columns = tuple(columns)
        self.rows: list = []
        self._font = mono_font()

    def set_rows(self, rows: list) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole \
                and 0 <= section < len(self.columns):
            return self.columns[section].title
        return None

    def data(self, index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        row, col = self.rows[index.row()], self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return col.text(row)
        if role == Qt.ItemDataRole.FontRole:
            return self._font if col.mono else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if col.numeric else _LEFT
        if role == Qt.ItemDataRole.ToolTipRole:
            return col.tooltip(row) if col.tooltip else None
        if role == Qt.ItemDataRole.ForegroundRole:
            return muted_brush() if col.key(row) is None else None  # shown as "—" or "base"
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not 0 <= column < len(self.columns) or not self.rows:
            return
        key = self.columns[column].key
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        old = [self.rows[p.row()] if p.row() < len(self.rows) else None for p in persistent]
        self.rows.sort(key=lambda r: _none_last(key(r)), reverse=order == Qt.SortOrder.DescendingOrder)
        where = {id(r): i for i, r in enumerate(self.rows)} if persistent else {}
        self.changePersistentIndexList(persistent, [
            self.index(where[id(r)], p.column()) if r is not None and id(r) in where else QModelIndex()
            for r, p in zip(old, persistent)])
        self.layoutChanged.emit()

    def csv_rows(self, rows: Sequence[int] | None = None) -> list[list]:
        chosen = self.rows if rows is None else [self.rows[r] for r in rows if 0 <= r < len(self.rows)]
        return [[(c.csv or c.text)(r) for c in self.columns] for r in chosen]


def _rank(value: int | None) -> str:
    return "base" if value is None else str(value)


def _split_text(split: tuple[bytes, ...] | None) -> str:
    if split is None:
        return "(cannot encode: a character is not in the vocabulary)"
    return " | ".join(browser_piece(p) for p in split)


def _piece_col(title: str = "piece") -> Column:
    return Column(title, lambda e: browser_piece(e.piece), lambda e: e.piece, mono=True,
                  tooltip=lambda e: piece_tooltip(e.piece))


def only_columns(side: str) -> list[Column]:
    get_id = (lambda e: e.id_a) if side == "a" else (lambda e: e.id_b)
    get_rank = (lambda e: e.rank_a) if side == "a" else (lambda e: e.rank_b)
    return [_piece_col(), Column("id", lambda e: str(get_id(e)), get_id, numeric=True),
            Column("merge #", lambda e: _rank(get_rank(e)), get_rank, numeric=True),
            Column("bytes", lambda e: str(len(e.piece)), lambda e: len(e.piece), numeric=True),
            Column("hex", lambda e: piece_hex(e.piece), lambda e: e.piece, mono=True)]


SHARED_COLUMNS = [
    _piece_col(),
    Column("id A", lambda e: str(e.id_a), lambda e: e.id_a, numeric=True),
    Column("merge # A", lambda e: _rank(e.rank_a), lambda e: e.rank_a, numeric=True),
    Column("id B", lambda e: str(e.id_b), lambda e: e.id_b, numeric=True),
    Column("merge # B", lambda e: _rank(e.rank_b), lambda e: e.rank_b, numeric=True),
    Column("rank shift", lambda e: "—" if e.shift is None else f"{e.shift:+,}", lambda e: e.shift, numeric=True,
           csv=lambda e: "" if e.shift is None else e.shift),
    Column("|shift|", lambda e: "—" if e.shift is None else f"{abs(e.shift):,}",
           lambda e: None if e.shift is None else abs(e.shift), numeric=True,
           csv=lambda e: "" if e.shift is None else abs(e.shift)),
]

WORD_COLUMNS = [
    Column("word", lambda d: browser_piece(d.word.encode("utf-8", "surrogatepass")), lambda d: d.word, mono=True,
           csv=lambda d: d.word),
    Column("count", lambda d: f"{d.count:,}", lambda d: d.count, numeric=True, csv=lambda d: d.count),
    Column("tokens A", lambda d: "—" if d.split_a is None else str(len(d.split_a)),
           lambda d: None if d.split_a is None else len(d.split_a), numeric=True),
    Column("split A", lambda d: _split_text(d.split_a), lambda d: _split_text(d.split_a), mono=True),
    Column("tokens B", lambda d: "—" if d.split_b is None else str(len(d.split_b)),
           lambda d: None if d.split_b is None else len(d.split_b), numeric=True),
    Column("split B", lambda d: _split_text(d.split_b), lambda d: _split_text(d.split_b), mono=True),
]


def diff_job(path: Path, a: Source, b: Source, *, words: bool = True):
    """The function the worker runs: :func:`workbench.tasks.run_diff.diff_sources` (its own connection)."""
    def job(should_stop, progress):
        return diff_sources(path, a, b, words=words, should_stop=should_stop, progress=progress)
    return job


class RunDiffView(QWidget):
    """Choose A and B, compare, browse the four result tables, export the current one."""

    diff_ready = Signal()  # a result is shown (tests wait on it)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Run comparison")
        self._path: Path | None = None
        self._sources: list[SourceInfo] = []
        self.result: DiffResult | None = None
        self.job = JobRunner(self)

        self.combo_a = QComboBox()
        self.combo_b = QComboBox()
        for combo in (self.combo_a, self.combo_b):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            combo.setMinimumContentsLength(18)
        self.compare_button = QPushButton("Compare")
        self.compare_button.clicked.connect(self._on_compare_clicked)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.cancel_button.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.progress.setMaximumWidth(240)
        self.export, *_ = export_button(lambda: self._export_dialog(True), lambda: self._export_dialog(False))
        bar = QHBoxLayout()
        bar.addWidget(QLabel("A:"))
        bar.addWidget(self.combo_a)
        bar.addWidget(QLabel("B:"))
        bar.addWidget(self.combo_b)
        bar.addWidget(self.compare_button)
        bar.addWidget(self.progress)
        bar.addWidget(self.cancel_button)
        bar.addStretch(1)
        bar.addWidget(self.export)

        self.summary = QLabel("Choose two tokenizers and press Compare: tokens only in A, only in B, "
                              "shared tokens with their rank shift, and the corpus words that split differently.")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.error = ErrorLabel()

        self.models = {
            "only_a": ListTableModel(only_columns("a"), self),
            "only_b": ListTableModel(only_columns("b"), self),
            "shared": ListTableModel(SHARED_COLUMNS, self),
            "words": ListTableModel(WORD_COLUMNS, self),
        }
        self.tables: dict[str, PlaceholderTableView] = {}
        self.tabs = QTabWidget()
        widths = {"only_a": {0: 220, 1: 80, 2: 80, 3: 60, 4: 260}, "only_b": {0: 220, 1: 80, 2: 80, 3: 60, 4: 260},
                  "shared": {0: 220, 1: 70, 2: 90, 3: 70, 4: 90, 5: 90, 6: 80},
                  "words": {0: 180, 1: 80, 2: 70, 3: 240, 4: 70, 5: 240}}
        for key, model in self.models.items():
            view = PlaceholderTableView()
            view.setAccessibleName(f"Run comparison: {key}")
            view.setModel(model)
            configure_table(view, widths[key], stretch={"words": 3, "shared": 0}.get(key, 4))
            view.set_placeholder("Nothing to show yet: press Compare.")
            self.tables[key] = view
            self.tabs.addTab(view, self._tab_title(key, None))

        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(self.error)
        layout.addWidget(self.tabs, 1)

    @staticmethod
    def _tab_title(key: str, n: int | None) -> str:
        label = {"only_a": "Only in A", "only_b": "Only in B", "shared": "Shared (rank shift)",
                 "words": "Words split differently"}[key]
        return label if n is None else f"{label} ({n:,})"

    # ---- sources ----------------------------------------------------------------------------------
    def set_project(self, path: Path | None, sources: Sequence[SourceInfo]) -> None:
        self.job.cancel()
        self._set_busy(False)
        self._path = path
        self.result = None
        for key, model in self.models.items():
            model.set_rows([])
            self.tabs.setTabText(list(self.models).index(key), self._tab_title(key, None))
        self.error.show_message("")
        self.set_sources(sources)

    def set_sources(self, sources: Sequence[SourceInfo]) -> None:
        """Refill both choosers, keeping the current choices; B defaults to another tokenizer than A."""
        self._sources = list(sources)
        # Defaults: A = the newest run; B = the run before it, else the first reference.
        runs = [s.source for s in self._sources if s.source[0] == "run"]
        refs = [s.source for s in self._sources if s.source[0] == "ref"]
        every = runs + refs
        default_a = runs[-1] if runs else (every[0] if every else None)
        others = [s for s in runs[:-1][::-1] + refs if s != default_a]
        default_b = others[0] if others else default_a
        for combo, default in ((self.combo_a, default_a), (self.combo_b, default_b)):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            for info in self._sources:
                combo.addItem(_label(info), info.source)
            index = find_source(combo, current)
            combo.setCurrentIndex(index if index >= 0 else find_source(combo, default))
            combo.blockSignals(False)
        self.compare_button.setEnabled(len(self._sources) >= 1 and self._path is not None)

    def choose(self, a: Source, b: Source) -> None:
        self.combo_a.setCurrentIndex(find_source(self.combo_a, a))
        self.combo_b.setCurrentIndex(find_source(self.combo_b, b))

    def set_default_a(self, source: Source) -> None:
        """Follow the panel's tokenizer as A unless a comparison is already showing."""
        if self.result is None and not self.job.is_running():
            index = find_source(self.combo_a, source)
            if index >= 0:
                self.combo_a.setCurrentIndex(index)

    # ---- comparing --------------------------------------------------------------------------------
    def compare(self) -> None:
        a, b = self.combo_a.currentData(), self.combo_b.currentData()
        if self._path is None or a is None or b is None:
            return
        if a == b:
            self.error.show_message("A and B are the same tokenizer: choose two different ones.")
            return
        self.error.show_message("")
        self._set_busy(True)
        self.summary.setText(f"Comparing {self.combo_a.currentText()} with {self.combo_b.currentText()}…")
        self.job.submit(diff_job(self._path, tuple(a), tuple(b)), self._on_result, self._on_failed,
                        key="diff", on_progress=self._on_progress, hooks=True)

    @Slot()
    def _on_compare_clicked(self) -> None:
        self.compare()

    @Slot()
    def _on_cancel_clicked(self) -> None:
        self.job.cancel()
        self._set_busy(False)
        self.summary.setText("Comparison cancelled.")

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self.compare_button.setEnabled(not busy)
        if busy:
            self.progress.setRange(0, 0)
            self.progress.setFormat("loading…")

    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, what: str) -> None:
        show_job_progress(self.progress, done, total, what)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._set_busy(False)
        self.error.show_message(message)

    @Slot(object)
    def _on_result(self, result: DiffResult | None) -> None:
        self._set_busy(False)
        if result is None:
            return
        self.result = result
        v = result.vocab
        self.models["only_a"].set_rows(v.only_a)
        self.models["only_b"].set_rows(v.only_b)
        self.models["shared"].set_rows(v.shared)
        self.models["words"].set_rows(result.words.differences if result.words else [])
        for i, key in enumerate(self.models):
            self.tabs.setTabText(i, self._tab_title(key, self.models[key].rowCount()))
            self.tables[key].set_placeholder("No entries." if key != "words" or result.words else result.corpus_note)
            self.tables[key].horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        shifts = sorted(abs(e.shift) for e in v.shared if e.shift is not None)
        moved = sum(1 for e in v.shared if e.shift)
        name_a, name_b = self._name(result.a), self._name(result.b)
        text = (f"<b>A</b> = {name_a}, <b>B</b> = {name_b}. Only in A: <b>{len(v.only_a):,}</b> · "
                f"only in B: <b>{len(v.only_b):,}</b> · shared: <b>{len(v.shared):,}</b>")
        if shifts:
            text += (f" ({moved:,} merged at a different rank; median |shift| {shifts[len(shifts) // 2]:,})")
        w = result.words
        if w is not None:
            text += (f"<br>Words: <b>{len(w.differences):,}</b> of {w.word_types:,} distinct words split "
                     f"differently — {100 * w.differing_share:.1f} % of {w.word_tokens:,} word occurrences "
                     f"({result.corpus_note}).")
        else:
            text += f"<br>{result.corpus_note}."
        self.summary.setText(text)
        self.diff_ready.emit()

    def _name(self, source: Source) -> str:
        for info in self._sources:
            if info.source == source:
                return _label(info)
        return f"{source[0]} {source[1]}"

    # ---- export -------------------------------------------------------------------------------------
    def current_key(self) -> str:
        return list(self.models)[self.tabs.currentIndex()]

    def export_csv(self, path: str | Path, *, selection: bool, key: str | None = None) -> int:
        key = key or self.current_key()
        model = self.models[key]
        data = model.csv_rows(selected_rows(self.tables[key]) if selection else None)
        write_csv(path, [c.title for c in model.columns], data)
        return len(data)

    def _export_dialog(self, selection: bool) -> None:
        if self.result is None:
            return
        ask_and_export_csv(self, "Export comparison as CSV", f"diff-{self.current_key()}.csv",
                           lambda path: self.export_csv(path, selection=selection), self.error)

    def shutdown(self) -> None:
        self.job.shutdown()


def _label(info: SourceInfo) -> str:
    if info.source[0] == "run":
        status = "" if info.status == "finished" else f" ({'training' if info.status == 'running' else info.status})"
        return f"Run {info.source[1]} · {info.name}{status}"
    return f"Reference · {info.name}"
