"""The Audit tab of the Merges pane: the vocabulary audit as columns and filters, and a trim preview.

Columns (header tooltips give each definition with its paper, :data:`workbench.tasks.audit.DEFINITIONS`):
reachability (Land & Bartolo 2024), ill-formed UTF-8, F1, F2, R and residue (LiteToken, 2026), never
used. The audit runs off the GUI thread (``ui/jobs.py``) on the source's corpus — a run's training
files, every project file for a reference (:func:`workbench.tasks.audit.project_corpus`). A filter
shows one category; selecting rows (or none: every removable row the filter shows) and pressing
**Preview trim** works out the cascade, the held-out token-count change and what becomes
unreachable (:func:`workbench.tasks.trim.preview_trim`, on the same corpus); **Trim → new run**
stores the result as a new run of the project. This module only displays: every number comes from
``tasks``. Left out: sorting and paging in SQL (the audit is held in memory: one row per entry).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
    Slot,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.core.display import piece_text
from workbench.errors import WorkbenchError
from workbench.ui.jobs import JobRunner
from workbench.ui.merges.merge_model import browser_piece, mono_font, muted_brush, piece_tooltip
from workbench.ui.merges.vocab_model import warning_brush
from workbench.ui.merges.widgets import ErrorLabel, PlaceholderTableView, configure_table, show_job_progress

log = logging.getLogger(__name__)

Source = tuple  # ("run", id) | ("ref", id)

# (header, key in DEFINITIONS or a plain tooltip)
COLUMNS = (
    ("id", "Token id"),
    ("piece", "The token's text (escapes for control characters and whitespace)"),
    ("kind", "special / base / merge"),
    ("reachability", "reachability"),
    ("UTF-8", "utf8"),
    ("F1", "f1"),
    ("F2", "f2"),
    ("R", "r"),
    ("residue", "r"),
    ("never used", "never_used"),
)
FILTERS = (("every entry", ""), ("unreachable", "unreachable"), ("reachable only in context", "context"),
           ("undecodable (partial UTF-8)", "undecodable"), ("ill-formed UTF-8", "ill-formed"),
           ("residues (R below the threshold)", "residue"), ("never used on the corpus", "never-used"),
           ("merges BPE can never produce", "model-unreachable"))


def column_tip(key: str) -> str:
    from workbench.tasks.audit import DEFINITIONS

    return DEFINITIONS.get(key, key)


class AuditModel(QAbstractTableModel):
    """One row per audited id of an :class:`~workbench.tasks.audit.AuditReport` (sort keys as ``UserRole``)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.report: Any = None
        self._all: list[int] = []
        self._ids: list[int] = []
        self._allowed: set[int] | None = None
        self._order: tuple[int, Qt.SortOrder] = (0, Qt.SortOrder.AscendingOrder)
        self._font = mono_font()

    def set_report(self, report) -> None:
        self.report = report
        self._all = [] if report is None else [i for i, ok in enumerate(report.audit.audited) if ok]
        self._allowed = None
        self._rebuild()

    def set_allowed(self, ids: set[int] | None) -> None:
        """Show only these ids (None: all). Filtering and sorting are one Python sort of the ids:
        a proxy model would call ``data`` millions of times for cl100k's 100,000 rows."""
        self._allowed = ids
        self._rebuild()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._order = (column, order)
        self._rebuild()

    def _rebuild(self) -> None:
        self.beginResetModel()
        ids = self._all if self._allowed is None else [i for i in self._all if i in self._allowed]
        column, order = self._order
        if self.report is not None and column != 0:
            def key(token_id: int) -> tuple:
                value = self._value(token_id, column)
                return (value is None, value if value is not None else 0, token_id)
            ids = sorted(ids, key=key)
        if order == Qt.SortOrder.DescendingOrder:
            ids = list(reversed(ids))
        self._ids = list(ids)
        self.endResetModel()

    def id_at(self, row: int) -> int:
        return self._ids[row]

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._ids)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return column_tip(COLUMNS[section][1])
        return None

    def _value(self, token_id: int, column: int) -> Any:
        a = self.report.audit
        if column == 0:
            return token_id
        if column == 1:
            return piece_text(self.report.tokenizer.vocab[token_id], visible_space=True)
        if column == 2:
            return a.kinds[token_id]
        if column == 3:
            return a.reach[token_id]
        if column == 4:
            return a.utf8[token_id]
        if column == 5:
            return None if a.f1 is None else a.f1[token_id]
        if column == 6:
            return None if a.f2 is None else a.f2[token_id]
        if column == 7:
            return a.ratio(token_id)
        if column == 8:
            return a.is_residue(token_id)
        return a.never_used(token_id)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self.report is None:
            return None
        token_id, column = self._ids[index.row()], index.column()
        value = self._value(token_id, column)
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 1:
                return browser_piece(self.report.tokenizer.vocab[token_id])
            if value is None:
                return "—"
            if column == 7:
                return f"{value:.3f}"
            if column in (5, 6):
                return f"{value:,}"
            if column == 8:
                return "residue" if value else ""
            if column == 9:
                return "never used" if value else ""
            return str(value)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == 1:
                return piece_tooltip(self.report.tokenizer.vocab[token_id], f"token {token_id}")
            return column_tip(COLUMNS[column][1])
        if role == Qt.ItemDataRole.FontRole and column == 1:
            return self._font
        if role == Qt.ItemDataRole.ForegroundRole:
            a = self.report.audit
            if a.reach[token_id] in ("unreachable", "undecodable") or a.is_residue(token_id):
                return warning_brush()
            if value is None:
                return muted_brush()
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (0, 5, 6, 7):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class AuditView(QWidget):
    """The audit table, its filter and summary, and the trim preview (see the module docstring)."""

    audited = Signal()  # an audit arrived (tests wait on it)
    previewed = Signal()  # a trim preview arrived
    run_created = Signal(int)  # the trim stored a new run
    token_selected = Signal(int)  # the current row's id (the inspector follows it)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Vocabulary audit")
        self._path: Path | None = None
        self._source: Source | None = None
        self.report: Any = None
        self.preview: Any = None
        self.confirm: QMessageBox | None = None  # the question before a large trim (tests answer it)
        self._corpus: list = []
        self.job = JobRunner(self)

        self.audit_button = QPushButton("Audit")
        self.audit_button.setToolTip("Decode and re-encode every entry (reachability), check its UTF-8, and encode "
                                     "the source's corpus to count F1, F2 and never-used entries")
        self.audit_button.clicked.connect(self.run_audit)
        self.filter = QComboBox()
        for label, value in FILTERS:
            self.filter.addItem(label, value)
        self.filter.setToolTip("Show one audit category")
        self.filter.currentIndexChanged.connect(self._apply_filter)
        self.compact = QCheckBox("renumber ids")
        self.compact.setToolTip("Trim: renumber the kept ids densely (off: every kept id keeps its number, the "
                                "removed ones become empty slots — .tiktoken and BPE files allow gaps)")
        self.preview_button = QPushButton("Preview trim")
        self.preview_button.setToolTip("Remove the selected entries (none selected: every removable entry the "
                                       "filter shows) and their cascade; measure the token-count change on the corpus")
        self.preview_button.clicked.connect(self.run_preview)
        self.trim_button = QPushButton("Trim → new run")
        self.trim_button.setToolTip("Store the previewed trim as a new run of this project")
        self.trim_button.clicked.connect(self.run_trim)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(240)
        self.progress.setVisible(False)
        bar = QHBoxLayout()
        bar.addWidget(self.audit_button)
        bar.addWidget(QLabel("show"))
        bar.addWidget(self.filter)
        bar.addStretch(1)
        bar.addWidget(self.progress)
        bar.addWidget(self.compact)
        bar.addWidget(self.preview_button)
        bar.addWidget(self.trim_button)

        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.error = ErrorLabel()
        self.model = AuditModel(self)
        self.table = PlaceholderTableView()
        self.table.setAccessibleName("Audit")
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        configure_table(self.table, {0: 56, 1: 150, 2: 56, 3: 92, 4: 72, 5: 72, 6: 72, 7: 52, 8: 60, 9: 80})
        self.table.set_placeholder("Press Audit to check every entry of this tokenizer.")
        self.table.selectionModel().currentRowChanged.connect(self._on_current)

        self.preview_label = QLabel()
        self.preview_label.setWordWrap(True)
        self.preview_label.setTextFormat(Qt.TextFormat.RichText)
        self.cascade_list = QListWidget()
        self.cascade_list.setAccessibleName("Trim cascade")
        self.cascade_list.setFont(mono_font())
        side = QWidget()
        sl = QVBoxLayout(side)
        sl.setContentsMargins(0, 0, 0, 0)
        heading = QLabel("<b>Trim preview</b>")
        sl.addWidget(heading)
        sl.addWidget(self.preview_label)
        sl.addWidget(QLabel("Removed (requested, then the cascade):"))
        sl.addWidget(self.cascade_list, 1)
        split = QSplitter()
        split.addWidget(self.table)
        split.addWidget(side)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([800, 360])

        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(self.error)
        layout.addWidget(split, 1)
        self._update_buttons()

    # ---- source ---------------------------------------------------------------------------------------
    @property
    def source(self) -> Source | None:
        """The tokenizer this tab audits (the Merges pane's current one)."""
        return self._source

    def set_source(self, path: Path | None, source: Source | None) -> None:
        self.job.cancel()
        self._path, self._source = path, source
        self.report = self.preview = None
        self.model.set_report(None)
        self.summary.setText("")
        self.preview_label.setText("")
        self.cascade_list.clear()
        self.error.show_message("")
        self._set_busy(False)

    def _src(self) -> str:
        assert self._path is not None and self._source is not None
        kind, number = self._source
        return f"{self._path}#{'ref:' if kind == 'ref' else ''}{number}"

    # ---- jobs -----------------------------------------------------------------------------------------
    def run_audit(self) -> None:
        if self._path is None or self._source is None:
            return
        path, source, src = self._path, self._source, self._src()

        def job(should_stop, progress):
            from workbench.tasks.audit import audit_tokenizer, project_corpus
            from workbench.tasks.sources import load_tokenizer

            tok = load_tokenizer(src)
            sources, warnings = project_corpus(path, source)
            report = audit_tokenizer(src, tok, sources, should_stop=should_stop, progress=progress)
            if report is not None:
                report.warnings = warnings
            return report, sources

        self._busy("auditing…")
        self.job.submit(job, self._on_audit, self._on_failed, key="audit", on_progress=self._on_progress, hooks=True)

    def selected_ids(self) -> list[int]:
        """The ids a trim would take: the selected rows, else every row the filter shows."""
        rows = {i.row() for i in self.table.selectionModel().selectedRows()}
        if not rows:
            if not self.filter.currentData():
                return []
            rows = set(range(self.model.rowCount()))
        return sorted(self.model.id_at(r) for r in rows)

    def run_preview(self) -> None:
        if self.report is None:
            return
        from workbench.core.trim import removable

        ids = removable(self.report.tokenizer, self.selected_ids())
        if not ids:
            self.error.show_message("Nothing to trim: select merge-made entries, or choose a filter that shows some "
                                    "(base symbols and specials stay)")
            return
        report, corpus, compact = self.report, list(self._corpus), self.compact.isChecked()
        category = self.filter.currentData() or "selection"

        def job(should_stop, progress):
            from workbench.tasks.trim import preview_trim

            return preview_trim(report.name, report.tokenizer, ids, compact=compact, held_out=corpus,
                                filters={category: len(ids)}, measured_on="the corpus")

        self._busy("working out the trim…")
        self.job.submit(job, self._on_preview, self._on_failed, key="audit", on_progress=self._on_progress, hooks=True)

    def run_trim(self) -> None:
        """Store the previewed trim; a large one (``TrimResult.needs_confirmation``) asks first."""
        if self.preview is None or self._path is None:
            return
        if self.preview.needs_confirmation:
            scale = self.preview.scale()
            box = QMessageBox(QMessageBox.Icon.Warning, "Trim a large part of the vocabulary?",
                              scale[0].upper() + scale[1:] + ".", QMessageBox.StandardButton.Yes |
                              QMessageBox.StandardButton.Cancel, self)
            box.setInformativeText("The removed entries are listed under the preview. Store the trimmed "
                                   "tokenizer as a new run anyway?")
            box.button(QMessageBox.StandardButton.Yes).setText("Trim → new run")
            box.setDefaultButton(QMessageBox.StandardButton.Cancel)
            box.finished.connect(lambda answer: self._store_trim() if answer == QMessageBox.StandardButton.Yes
                                 else None)
            self.confirm = box
            box.open()
            return
        self._store_trim()

    def _store_trim(self) -> None:
        self.confirm = None
        if self.preview is None or self._path is None:
            return
        preview, path = self.preview, self._path

        def job(should_stop, progress):
            from workbench.tasks.trim import apply_trim

            apply_trim(preview, project=path)
            return preview.run_id

        self._busy("storing the trimmed run…")
        self.job.submit(job, self._on_trimmed, self._on_failed, key="audit", on_progress=self._on_progress, hooks=True)

    # ---- results --------------------------------------------------------------------------------------
    @Slot(object)
    def _on_audit(self, result: Any) -> None:
        self._set_busy(False)
        if result is None or result[0] is None:
            return
        self.report, self._corpus = result
        self._update_buttons()
        self.model.set_report(self.report)
        self._apply_filter()
        self._show_summary()
        self.audited.emit()

    def _show_summary(self) -> None:
        from workbench.tasks.audit import describe

        lines = describe(self.report)
        text = "<br>".join(line.strip().replace("&", "&amp;").replace("<", "&lt;") for line in lines)
        if self.report.warnings:
            text += "<br>⚠ " + "; ".join(self.report.warnings)
        self.summary.setText(text)

    @Slot(object)
    def _on_preview(self, result: Any) -> None:
        self._set_busy(False)
        self.preview = result
        from workbench.tasks.trim import describe_trim

        lines = describe_trim(result)
        self.preview_label.setText("<br>".join(line.strip().replace("&", "&amp;").replace("<", "&lt;")
                                               for line in lines))
        vocab = result.original.vocab
        self.cascade_list.clear()
        for token_id in list(result.plan.requested)[:300]:
            self.cascade_list.addItem(f"{token_id:>7}  {browser_piece(vocab[token_id])}")
        for token_id in list(result.plan.cascade)[:300]:
            self.cascade_list.addItem(f"{token_id:>7}  {browser_piece(vocab[token_id])}   (cascade)")
        self._update_buttons()
        self.previewed.emit()

    @Slot(object)
    def _on_trimmed(self, run_id: Any) -> None:
        self._set_busy(False)
        self.preview_label.setText(self.preview_label.text() + f"<br><b>Stored as run {run_id}.</b>")
        self.preview = None
        self._update_buttons()
        if isinstance(run_id, int):
            self.run_created.emit(run_id)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._set_busy(False)
        self.error.show_message(message)

    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, what: str) -> None:
        show_job_progress(self.progress, done, total, what)

    @Slot(QModelIndex, QModelIndex)
    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and current.row() < self.model.rowCount():
            self.token_selected.emit(self.model.id_at(current.row()))

    # ---- widgets --------------------------------------------------------------------------------------
    @Slot()
    def _apply_filter(self) -> None:
        category = self.filter.currentData()
        if self.report is None or not category:
            self.model.set_allowed(None)
        else:
            try:
                self.model.set_allowed(set(self.report.audit.ids(category)))
            except (ValueError, WorkbenchError) as exc:
                self.error.show_message(str(exc))
        self.table.set_placeholder("No entry in this category." if self.report is not None else
                                   "Press Audit to check every entry of this tokenizer.")

    def _busy(self, what: str) -> None:
        self.error.show_message("")
        self._set_busy(True)
        self.progress.setRange(0, 0)
        self.progress.setFormat(what)

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self._busy_now = busy
        self._update_buttons()

    def _update_buttons(self) -> None:
        busy = getattr(self, "_busy_now", False)
        self.audit_button.setEnabled(self._source is not None and not busy)
        self.preview_button.setEnabled(self.report is not None and not busy)
        self.trim_button.setEnabled(self.preview is not None and not busy)

    def shutdown(self) -> None:
        self.job.shutdown()
