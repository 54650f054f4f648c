"""The Vocabulary tab: every entry with its corpus frequency and a never-used flag.

Frequencies are counted in a background job: the run's corpus files are read again, split into
pre-tokens exactly as training did, and each distinct pre-token is encoded once with the run's
tokenizer (:func:`workbench.analysis.vocab_usage`). The job opens its own read-only connection,
can be cancelled, and its result is cached per (project, source, vocabulary size, corpus
fingerprints), so switching back to a run shows its numbers at once. For a reference tokenizer
the project's corpus files are used. Finished runs are counted when the tab is first shown;
a run that is still training is counted on request.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.metrics import VocabUsage, usage_pretokenizer, vocab_usage
from workbench.corpus.counts import corpus_sources, corpus_word_counts
from workbench.errors import WorkbenchError
from workbench.formats.tables import write_vocab_csv
from workbench.store.browse import Source, TextFilter, VocabQuery, VocabSource
from workbench.ui.jobs import JobRunner
from workbench.ui.merges.vocab_model import VocabTableModel
from workbench.ui.merges.widgets import (
    ErrorLabel,
    FilterEdit,
    PlaceholderTableView,
    ask_and_export_csv,
    configure_table,
    export_button,
    show_job_progress,
    shown_entries,
)
from workbench.ui.project_session import open_read

log = logging.getLogger(__name__)

#: (project path, source, vocabulary size, corpus fingerprints) → (usage, warnings)
_USAGE_CACHE: dict[tuple, tuple[VocabUsage, list[str]]] = {}
_CACHE_LIMIT = 8


def usage_cache_key(conn, path: Path | None, source: Source | None, size: int) -> tuple | None:
    """What a count depends on: (project, source, vocabulary size, corpus fingerprints); None if
    the fingerprints cannot be read (the count then runs instead of being reused)."""
    if source is None or path is None or conn is None:
        return None
    kind, sid = source
    try:
        if kind == "run":
            fps = tuple(r[0] for r in conn.execute(
                "SELECT c.fingerprint FROM corpora c JOIN run_corpora rc ON rc.corpus_id = c.id "
                "WHERE rc.run_id = ? ORDER BY c.id", (sid,)))
        else:
            fps = tuple(sorted({r[0] for r in conn.execute("SELECT fingerprint FROM corpora")}))
    except Exception as exc:  # noqa: BLE001 - no cache key: the count runs instead of being reused
        log.warning("cannot read the corpus fingerprints of %s in %s: %s", source, path, exc)
        return None
    return (str(path), tuple(source), size, fps)


def cached_usage(key: tuple | None) -> tuple[VocabUsage, list[str]] | None:
    """A count made before for ``key`` (by the Vocabulary tab or the Unigram piece table)."""
    return _USAGE_CACHE.get(key) if key is not None else None


def remember_usage(key: tuple | None, result: tuple[VocabUsage, list[str]]) -> None:
    if key is None:
        return
    _USAGE_CACHE[key] = result
    while len(_USAGE_CACHE) > _CACHE_LIMIT:
        _USAGE_CACHE.pop(next(iter(_USAGE_CACHE)))


def usage_job(path: Path, source: Source):
    """The function the worker runs: count ``source``'s vocabulary in its corpus (own connection)."""
    def job(should_stop, progress):
        with open_read(path) as store:
            sequences = "documents"  # references and runs stored before sequences existed
            if source[0] == "run":
                tok = store.load_tokenizer(source[1])
                run = store.run(source[1])
                wanted = set(run.corpus_ids)
                sequences = run.settings.get("sequences", "documents")
                refs = [c for c in store.corpora() if c.id in wanted]
                what = "this run"
            else:
                tok = store.load_reference(source[1])
                refs = list({c.path: c for c in store.corpora()}.values())
                what = "this project"
        if not refs:
            raise WorkbenchError(f"{what} has no corpus files recorded, so there is nothing to count "
                                 "(runs trained from the command line record theirs; add corpus files first)")
        sources, warnings = corpus_sources([(c.path, c.reader_options) for c in refs],
                                           [c.fingerprint for c in refs])
        pretokenizer, normalizer = usage_pretokenizer(tok)
        counts = corpus_word_counts(sources, pretokenizer=pretokenizer, normalizer=normalizer,
                                    sequences=sequences, should_stop=should_stop, progress=progress)
        if counts is None:
            return None
        usage = vocab_usage(tok, counts, should_stop=should_stop, progress=progress)
        return None if usage is None else (usage, warnings)
    return job


class VocabView(QWidget):
    token_selected = Signal(int)
    usage_ready = Signal()  # frequencies shown (computed or from the cache); tests wait on it

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Vocabulary browser")
        self._conn = None
        self._path: Path | None = None
        self._source: VocabSource | None = None
        self._status = ""
        self._usage: VocabUsage | None = None
        self._cache_key: tuple | None = None
        self._syncing = False
        self.job = JobRunner(self)

        self.filter = FilterEdit("Filter pieces (substring; tick regex for a pattern)")
        self.filter.changed.connect(self._apply_filter)
        self.kind = QComboBox()
        for label, value in (("all kinds", ""), ("special", "special"), ("base", "base"), ("merge", "merge")):
            self.kind.addItem(label, value)
        self.kind.currentIndexChanged.connect(self._apply_filter)
        self.never_only = QCheckBox("never used only")
        self.never_only.setEnabled(False)
        self.never_only.toggled.connect(self._apply_filter)
        self.export, self.export_selected_action, self.export_all_action = export_button(
            lambda: self._export_dialog(True), lambda: self._export_dialog(False))
        bar = QHBoxLayout()
        bar.addWidget(self.filter, 1)
        bar.addWidget(self.kind)
        bar.addWidget(self.never_only)
        bar.addWidget(self.export)

        self.count_button = QPushButton("Count in corpus")
        self.count_button.setToolTip("Encode the training corpus with this tokenizer and count every entry")
        self.count_button.clicked.connect(self._on_count_clicked)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.cancel_button.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.progress.setMaximumWidth(260)
        self.progress.setTextVisible(True)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        usage_row = QHBoxLayout()
        usage_row.addWidget(self.summary, 1)
        usage_row.addWidget(self.progress)
        usage_row.addWidget(self.cancel_button)
        usage_row.addWidget(self.count_button)
        self.error = ErrorLabel()
        self.count_label = QLabel()

        self.model = VocabTableModel(self)
        self.table = PlaceholderTableView()
        self.table.setAccessibleName("Vocabulary")
        self.table.setModel(self.model)
        configure_table(self.table, {0: 70, 1: 260, 2: 220, 3: 70, 4: 110, 5: 90}, stretch=2)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.model.rows_changed.connect(self._update_count)

        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addLayout(usage_row)
        layout.addWidget(self.error)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.count_label)
        self._update_summary()

    # ---- source -------------------------------------------------------------------------------------
    def set_source(self, conn, path: Path | None, source: Source | None, status: str = "") -> None:
        self.job.cancel()
        self._set_busy(False)
        if self._source is not None:
            self._source.close()
        self._conn, self._path, self._status = conn, path, status
        self._usage = None
        self.error.show_message("")
        vs = VocabSource(conn, source) if (conn is not None and source is not None) else None
        self._source = vs
        self._cache_key = self._key() if vs is not None else None
        cached = cached_usage(self._cache_key)
        if cached is not None:
            self._install_usage(*cached)
        self.never_only.setEnabled(self._usage is not None)
        try:
            self.model.set_source(vs, self._query())
        except WorkbenchError as exc:
            self.model.set_source(vs, None)
            self.error.show_message(str(exc))
        self.table.set_placeholder("No vocabulary entry matches the filter." if vs else "")
        self._update_summary()
        if cached is not None:
            self.usage_ready.emit()

    def set_status(self, status: str) -> None:
        if status != self._status:
            self._status = status
            self._update_summary()

    def _key(self) -> tuple | None:
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

    def auto_count(self) -> None:
        """Count when shown, for runs that have finished (a live run changes under the count)."""
        if (self._source is not None and self._usage is None and not self.job.is_running()
                and self._status not in ("running",) and not self.error.isVisible()):
            self.count_usage()

    # ---- counting -------------------------------------------------------------------------------------
    def count_usage(self) -> None:
        if self._source is None or self._path is None:
            return
        self._cache_key = self._key()
        cached = cached_usage(self._cache_key)
        if cached is not None:
            self._install_usage(*cached)
            self.model.usage_changed()
            self._update_summary()
            self.usage_ready.emit()
            return
        self.error.show_message("")
        self._set_busy(True)
        self.job.submit(usage_job(self._path, self._source.source), self._on_usage, self._on_failed,
                        key="usage", on_progress=self._on_progress, hooks=True)

    def cancel_usage(self) -> None:
        self.job.cancel()
        self._set_busy(False)
        self._update_summary()

    @Slot()
    def _on_count_clicked(self) -> None:
        self.count_usage()

    @Slot()
    def _on_cancel_clicked(self) -> None:
        self.cancel_usage()

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self.count_button.setEnabled(not busy)
        if busy:
            self.progress.setRange(0, 0)
            self.progress.setFormat("reading the corpus…")

    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, what: str) -> None:
        show_job_progress(self.progress, done, total, what)

    @Slot(object)
    def _on_usage(self, result: Any) -> None:
        self._set_busy(False)
        if result is None or self._source is None:
            self._update_summary()
            return
        usage, warnings = result
        remember_usage(self._cache_key, (usage, warnings))
        self._install_usage(usage, warnings)
        self.model.usage_changed()
        self._update_summary()
        self.usage_ready.emit()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._set_busy(False)
        self.error.show_message(message)
        self._update_summary()

    def _install_usage(self, usage: VocabUsage, warnings: list[str]) -> None:
        self._usage = usage
        self._warnings = list(warnings)
        self._source.set_usage(usage.frequencies, usage.counted)
        self.never_only.setEnabled(True)

    @property
    def usage(self) -> VocabUsage | None:
        return self._usage

    def _update_summary(self) -> None:
        if self._source is None:
            self.summary.setText("")
            self.count_button.setEnabled(False)
            return
        self.count_button.setEnabled(not self.job.is_running())
        u = self._usage
        if u is None:
            if self.job.is_running():
                self.summary.setText("Counting how often each entry occurs in the encoded corpus…")
            elif self._status == "running":
                self.summary.setText("Corpus frequencies are not counted while the run is training "
                                     "(press “Count in corpus” to count the merges so far).")
            else:
                self.summary.setText("Corpus frequencies not counted yet.")
            return
        never = len(u.never_used)
        text = (f"<b>Never used: {never:,} of {u.eligible:,} entries ({100 * u.never_used_share:.2f} %)</b>"
                f" · {u.total_tokens:,} tokens from {u.word_types:,} distinct pre-tokens")
        if len(u.frequencies) != u.eligible:
            text += " · special tokens not counted"
        stale = self._source.max_key() + 1 > len(u.frequencies)
        if stale:
            text += " · <i>the run has grown since: count again</i>"
        if getattr(self, "_warnings", None):
            text += " · ⚠ " + "; ".join(self._warnings)
        self.summary.setText(text)

    # ---- filter, selection, export -------------------------------------------------------------------
    def _query(self) -> VocabQuery:
        return VocabQuery(TextFilter(self.filter.text(), self.filter.is_regex()),
                          self.kind.currentData() or "", self.never_only.isChecked() and self._usage is not None)

    @Slot()
    def _apply_filter(self) -> None:
        if self._source is None:
            return
        try:
            self.model.set_query(self._query())
        except WorkbenchError as exc:
            self.filter.set_error(str(exc))
            self.error.show_message(str(exc))
            return
        self.filter.set_error("")
        self.error.show_message("")

    def _update_count(self) -> None:
        m = self.model
        if self._source is None:
            self.count_label.setText("")
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
        row = self.model.row_of_key(token_id)
        if row is None and self.model.is_filtered():
            self.filter.clear()
            self.kind.setCurrentIndex(0)
            self.never_only.setChecked(False)
            self._apply_filter()
            row = self.model.row_of_key(token_id)
        if row is None:
            return False
        self._syncing = True
        try:
            index = self.model.index(row, 0)
            self.table.selectionModel().setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
            self.table.scrollTo(index, PlaceholderTableView.ScrollHint.PositionAtCenter)
        finally:
            self._syncing = False
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

    def shutdown(self) -> None:
        self.job.shutdown()
        if self._source is not None:
            self._source.close()
            self._source = None
