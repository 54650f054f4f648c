"""The Vocabulary tab: every entry with its corpus frequency and a never-used flag.

Frequencies come from the corpus count the Unigram piece table shares (:mod:`.usage`: a
background job over the run's corpus, cached per project, source, vocabulary size and corpus
fingerprints); for a reference tokenizer the project's corpus files are used. Finished runs are
counted when the tab is first shown; a run that is still training is counted on request. What
this module adds: the filter bar (text, kind, never used), the table, the summary's wording and
CSV export.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QModelIndex, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from workbench.formats.tables import write_vocab_csv
from workbench.store.browse import Source, TextFilter, VocabQuery, VocabSource, register_audit
from workbench.tasks.usage import usage_cache_key
from workbench.ui.merges.usage import SUMMARY_PENDING, USAGE_KEY, UsageView
from workbench.ui.merges.vocab_model import VocabTableModel
from workbench.ui.merges.widgets import (
    FilterEdit,
    PlaceholderTableView,
    apply_filter_query,
    ask_and_export_csv,
    audit_filter_combo,
    configure_table,
    export_button,
    reset_audit_filter,
    select_row,
    shown_entries,
)

log = logging.getLogger(__name__)


class VocabView(UsageView):
    token_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Encode the training corpus with this tokenizer and count every entry", 260, parent)
        self.setAccessibleName("Vocabulary browser")
        self._source: VocabSource | None = None
        self._audit: tuple[Source, list[str]] | None = None  # the Audit tab's marks and their source

        self.filter = FilterEdit("Filter pieces (substring; tick regex for a pattern)")
        self.filter.changed.connect(self._apply_filter)
        self.kind = QComboBox()
        for label, value in (("all kinds", ""), ("special", "special"), ("base", "base"), ("merge", "merge")):
            self.kind.addItem(label, value)
        self.kind.currentIndexChanged.connect(self._apply_filter)
        self.never_only.toggled.connect(self._apply_filter)
        self.audit_filter = audit_filter_combo()
        self.audit_filter.currentIndexChanged.connect(self._apply_filter)
        self.export, self.export_selected_action, self.export_all_action = export_button(
            lambda: self._export_dialog(True), lambda: self._export_dialog(False))
        bar = QHBoxLayout()
        bar.addWidget(self.filter, 1)
        bar.addWidget(self.kind)
        bar.addWidget(self.never_only)
        bar.addWidget(self.audit_filter)
        bar.addWidget(self.export)

        usage_row = QHBoxLayout()
        usage_row.addWidget(self.summary, 1)
        usage_row.addWidget(self.progress)
        usage_row.addWidget(self.cancel_button)
        usage_row.addWidget(self.count_button)
        self.count_label = QLabel()

        self.model = VocabTableModel(self)
        self.table = PlaceholderTableView()
        self.table.setAccessibleName("Vocabulary")
        self.table.setModel(self.model)
        configure_table(self.table, {0: 70, 1: 260, 2: 220, 3: 70, 4: 110, 5: 90, 6: 150}, stretch=2)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.model.rows_changed.connect(self._update_count)
        self.model.busy_changed.connect(self._update_count)
        self._use_worker()

        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addLayout(usage_row)
        layout.addWidget(self.error)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.count_label)
        self._update_summary()

    # ---- source -------------------------------------------------------------------------------------
    def set_source(self, conn, path: Path | None, source: Source | None, status: str = "") -> None:
        self._close_source(conn, path, status)
        reset_audit_filter(self.audit_filter)
        audit = self._audit if self._audit is not None and self._audit[0] == source else None
        self._audit = None
        self._open_source(source, "No vocabulary entry matches the filter.")
        if audit is not None:  # audited while this tab was not loaded
            self.set_audit(*audit)

    def set_audit(self, source: Source, marks: list[str]) -> None:
        """Show the Audit tab's marks of ``source`` (``tasks.audit.audit_marks``) as a column and a
        filter; kept for when the tab loads ``source``, if it shows another now."""
        self._audit = (source, marks)
        if self._source is None or self._source.source != source:
            return
        self._source.audit_key = register_audit(marks)
        self.audit_filter.setEnabled(True)
        self.model.reload()

    def _make_source(self, conn, source: Source) -> VocabSource:
        return VocabSource(conn, source)

    def _usage_key(self) -> tuple | None:
        if self._source is None or self._path is None:
            return None
        try:
            size = self._source.max_key() + 1
        except Exception as exc:  # noqa: BLE001 - no cache key: the count runs instead of being reused
            log.warning("cannot read the vocabulary size of %s in %s: %s", self._source.source, self._path, exc)
            return None
        return usage_cache_key(self._conn, self._path, self._source.source, size)

    def refresh(self) -> int:
        """New vocabulary rows of a training run appear at the end; frequencies go stale."""
        inserted = self.model.refresh() if self._source is not None else 0
        if inserted and self._usage is not None:
            self._update_summary()
        return inserted

    # ---- counting -------------------------------------------------------------------------------------
    def _show_count_button(self, busy: bool) -> None:
        self.count_button.setEnabled(not busy)

    def _update_summary(self) -> None:
        if self._source is None:
            self.summary.setText("")
            self.count_button.setEnabled(False)
            return
        self.count_button.setEnabled(not self.job.is_running(USAGE_KEY))
        u = self._usage
        if u is None:
            if self.job.is_running(USAGE_KEY):
                self.summary.setText("Counting how often each entry occurs in the encoded corpus…")
            elif self._status == "running":
                self.summary.setText("Corpus frequencies are not counted while the run is training "
                                     "(press “Count in corpus” to count the merges so far).")
            else:
                self.summary.setText("Corpus frequencies not counted yet.")
            return
        if not self._summary_ready():
            self.summary.setText(SUMMARY_PENDING)
            return
        never = len(u.never_used)
        text = (f"<b>Never used: {never:,} of {u.eligible:,} entries ({100 * u.never_used_share:.2f} %)</b>"
                f" · {u.total_tokens:,} tokens from {u.word_types:,} distinct pre-tokens")
        if len(u.frequencies) != u.eligible:
            text += " · special tokens not counted"
        stale = self._source.max_key() + 1 > len(u.frequencies)
        if stale:
            text += " · <i>the run has grown since: count again</i>"
        if self._warnings:
            text += " · ⚠ " + "; ".join(self._warnings)
        self.summary.setText(text)

    # ---- filter, selection, export -------------------------------------------------------------------
    def _query(self) -> VocabQuery:
        return VocabQuery(TextFilter(self.filter.text(), self.filter.is_regex()),
                          self.kind.currentData() or "", self.never_only.isChecked() and self._usage is not None,
                          self.audit_filter.currentData() or "")

    @Slot()
    def _apply_filter(self) -> None:
        if self._source is None:
            return
        apply_filter_query(lambda: self.model.set_query(self._query()), self.filter, self.error)

    def _update_count(self) -> None:
        m = self.model
        if self._source is None:
            self.count_label.setText("")
        elif m.busy:
            self.count_label.setText("filtering and sorting…")
        elif m.is_filtered():
            self.count_label.setText(f"{m.rowCount():,} of {m.total:,} entries match")
        else:
            self.count_label.setText(f"{m.rowCount():,} entries")

    @Slot(QModelIndex, QModelIndex)
    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._syncing or not current.isValid():
            return
        key = self.model.key_at(current.row())
        if key is not None:
            self.token_selected.emit(key)

    def select_token(self, token_id: int) -> bool:
        """Select entry ``token_id``, clearing a filter that hides it; False if it is not there.

        A long table answers later (filtered off the GUI thread): then the selection follows
        when the rows arrive, and True means "asked for"."""
        if self.model.busy:
            self.model.when_ready(lambda: self.select_token(token_id))
            return True
        row = self.model.row_of_key(token_id)
        if row is None and self.model.is_filtered():
            self.filter.clear()
            self.kind.setCurrentIndex(0)
            self.never_only.setChecked(False)
            self._apply_filter()
            if self.model.busy:
                self.model.when_ready(lambda: self._select_row_of(token_id))
                return True
            row = self.model.row_of_key(token_id)
        return row is not None and self._select_row_of(token_id)

    def _select_row_of(self, token_id: int) -> bool:
        row = self.model.row_of_key(token_id)
        if row is None:
            return False
        syncing, self._syncing = self._syncing, True
        try:
            select_row(self.table, row)
        finally:
            self._syncing = syncing
        return True

    def export_csv(self, path: str | Path, *, selection: bool) -> int:
        """Write the selected rows (or every row the filter shows); returns how many."""
        rows = shown_entries(self.table, self.model, selection=selection)
        write_vocab_csv(path, rows)
        return len(rows)

    def _export_dialog(self, selection: bool) -> None:
        if self._source is None:
            return
        ask_and_export_csv(self, "Export vocabulary as CSV", "vocabulary.csv",
                           lambda path: self.export_csv(path, selection=selection), self.error)
