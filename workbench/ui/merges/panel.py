"""The Merges pane: browse a run's (or reference tokenizer's) merge table, its vocabulary, and
compare two tokenizers.

Layout: a tokenizer chooser on top, then three tabs —

* **Merges**: a filter bar (substring or regex on any/left/right/result piece, frequency range,
  length range in bytes or characters), the lazy merge table (:class:`MergeTableModel`, sorted by
  clicking a header, all in SQL; a WordPiece run adds each merge's score) and, beside it, the
  selected merge's ancestry tree and children (:class:`MergeDetail`). Selecting a merge emits
  ``merge_selected(source, token_id)`` for the inspector; :meth:`MergePanel.select_token` goes the
  other way. A Unigram run has no merges: the same place shows its piece table with log
  probabilities and never-used flags (:class:`PieceView`), filtered by the same text box.
* **Vocabulary**: :class:`VocabView` — every entry with its corpus frequency and never-used flag.
* **Compare**: :class:`RunDiffView` — two runs, or a run and a reference.
* **Audit**: :class:`AuditView` — reachability, ill-formed UTF-8, residues and never-used entries,
  and a trim preview that stores the trimmed tokenizer as a new run.

The panel opens its *own* read-only connection (``project_session.open_read(path)``) so
its paging never waits on the window's writer, and polls in :meth:`MergePanel.refresh` (the main
window calls it every ~500 ms while a run trains): new runs join the chooser, new merges are
inserted at the end of the table without a reset. With no project or no runs, the pane says so
and what to do instead of showing an empty table.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QCoreApplication,
    QModelIndex,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QIntValidator
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.formats.tables import write_merges_csv
from workbench.store.browse import (
    FIELDS,
    UNREAD,
    MergeQuery,
    MergeSource,
    PreparedSource,
    Source,
    SourceInfo,
    TextFilter,
    list_sources,
    prepare_source,
    register_audit,
    source_key_end,
    source_scores,
    sql_error,
    store_connection,
)
from workbench.ui.empty_state import EmptyState
from workbench.ui.jobs import JobRunner
from workbench.ui.merges.audit_view import AuditView
from workbench.ui.merges.detail import MergeDetail
from workbench.ui.merges.merge_model import MergeTableModel, worker_opener
from workbench.ui.merges.piece_view import PieceView
from workbench.ui.merges.run_diff import RunDiffView, _label
from workbench.ui.merges.vocab_view import VocabView
from workbench.ui.merges.widgets import (
    ErrorLabel,
    FilterEdit,
    PlaceholderTableView,
    apply_filter_query,
    ask_and_export_csv,
    audit_filter_combo,
    beside_detail,
    configure_table,
    export_button,
    find_source,
    reset_audit_filter,
    select_row,
    shown_entries,
    sync_sort_indicator,
)
from workbench.ui.project_session import ReadHandle, open_read
from workbench.ui.turns import room

log = logging.getLogger(__name__)

NO_PROJECT = ("No project open",
              "Open a project (or train a tokenizer) to browse its merges: every merge with the pair it joined, "
              "how often the pair occurred, the tree of merges behind each token, and the vocabulary entries "
              "the corpus never uses.")
NO_RUNS = ("No training runs yet",
           "This project has no trained run or imported tokenizer. Train one in the Train tab — its merges "
           "appear here while it learns them — or import a tokenizer file (File ▸ Import Tokenizer…).")

TAB_MERGES, TAB_VOCAB, TAB_COMPARE = 0, 1, 2
CHECK_KEY = "check-source"  # the job checking a long run's stored values before it is shown
LIST_KEY = "list-sources"  # the job listing a project's runs and checking the newest (the window's open)
#: That check reads every row (10M merges: seconds, more on a busy machine); off the GUI thread it
#: may take longer than a filter before it gives up. Choosing another run stops it at once.
CHECK_LIMIT_S = 120.0


def _optional_int(edit: QLineEdit) -> int | None:
    text = edit.text().strip().replace(",", "").replace("_", "")
    return int(text) if text.isdigit() else None


class MergePanel(QWidget):
    """The merge and vocabulary browser (see the module docstring)."""

    merge_selected = Signal(object, int)  # (source, token_id); source = ("run", id) or ("ref", id)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.store: ReadHandle | None = None
        self.path: Path | None = None
        self._conn: sqlite3.Connection | None = None
        self._sources: list[SourceInfo] = []
        self._listed: list[SourceInfo] | None = None  # read by open_project, shown by show_listed
        self._checked: tuple | None = None  # (source, problem, scores, prepared) of the source shown first
        self._show_when_listed = False  # show_listed came while the runs were still being listed
        # The listing delivered by a worker is shown over three turns (issue 26: one frame): the
        # Compare choosers are filled in the turn it arrives, the runs' page shown in the next one
        # with room (:func:`room`), the run chooser filled and its run chosen and shown in the one
        # after (so a filled chooser always has its run shown). ``_pending_show``: (the
        # source shown before, the newest run before) until then; any choice of a source in between
        # takes its place.
        self._pending_show: tuple[Source | None, Source | None] | None = None
        self._chooser_stale = False  # the run chooser is filled with the pending step's run
        self._show_step = QTimer(self)
        self._show_step.setSingleShot(True)
        self._show_step.setInterval(0)
        self._show_step.timeout.connect(self._show_pending)
        # A run checked here (3–6 ms for 1,744 merges) or by a worker is shown at once, its table
        # painted in the next turn (``_paint_step``): the check (or the delivery), the show and the
        # paint of the newly filled table made one 15–20 ms stretch. A table shown while the tab is hidden has its first rows'
        # cells made in a later turn with room (``_warm_step``), not by the paint that shows the tab.
        self._paint_step = QTimer(self)
        self._paint_step.setSingleShot(True)
        self._paint_step.setInterval(0)
        self._paint_step.timeout.connect(self._paint_now)
        self._warm_step = QTimer(self)
        self._warm_step.setSingleShot(True)
        self._warm_step.setInterval(0)
        self._warm_step.timeout.connect(self._warm_cells)
        self._source: Source | None = None
        self._merge_source: MergeSource | None = None
        self._follow_latest = True
        self._syncing = False
        self._vocab_dirty = True
        self._pieces_mode = False  # a Unigram source: the piece table replaces the merge table
        self._damaged = ""  # the line naming the damaged value of the chosen source, if any

        # ---- top bar ----------------------------------------------------------------------------
        self.chooser = QComboBox()
        self.chooser.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.chooser.setMinimumContentsLength(28)
        self.chooser.currentIndexChanged.connect(self._on_chooser)
        self.status = QLabel()
        top = QHBoxLayout()
        top.addWidget(QLabel("Tokenizer:"))
        top.addWidget(self.chooser)
        top.addWidget(self.status, 1)

        # ---- merges tab -------------------------------------------------------------------------
        self.filter = FilterEdit("Filter pieces: a substring, or tick regex for a pattern such as ^\\s")
        self.filter.changed.connect(self._apply_filter)
        self.field = QComboBox()
        for label, value in zip(("in any piece", "in result", "in left", "in right"), FIELDS):
            self.field.addItem(label, value)
        self.field.currentIndexChanged.connect(self._apply_filter)
        self.freq_min, self.freq_max = QLineEdit(), QLineEdit()
        for edit, hint in ((self.freq_min, "min"), (self.freq_max, "max")):
            edit.setPlaceholderText(hint)
            edit.setValidator(QIntValidator(0, 2_000_000_000, edit))
            edit.setMaximumWidth(90)
            edit.editingFinished.connect(self._apply_filter)
        self.len_min, self.len_max = QSpinBox(), QSpinBox()
        for spin in (self.len_min, self.len_max):
            spin.setRange(0, 100_000)
            spin.setSpecialValueText("any")
            spin.setMaximumWidth(80)
            spin.valueChanged.connect(self._apply_filter)
        self.len_unit = QComboBox()
        self.len_unit.addItem("bytes", "bytes")
        self.len_unit.addItem("chars", "chars")
        self.len_unit.currentIndexChanged.connect(self._apply_filter)
        self.audit_filter = audit_filter_combo()
        self.audit_filter.currentIndexChanged.connect(self._apply_filter)
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("Show every merge again")
        self.clear_button.clicked.connect(self._on_clear_clicked)
        self.export, self.export_selected_action, self.export_all_action = export_button(
            lambda: self._export_dialog(True), lambda: self._export_dialog(False))

        row1 = QHBoxLayout()
        row1.addWidget(self.filter, 1)
        row1.addWidget(self.field)
        row2 = QHBoxLayout()
        self.freq_label = QLabel("frequency")
        self.len_label = QLabel("length")
        self.dashes = (QLabel("–"), QLabel("–"))
        row2.addWidget(self.freq_label)
        row2.addWidget(self.freq_min)
        row2.addWidget(self.dashes[0])
        row2.addWidget(self.freq_max)
        row2.addSpacing(12)
        row2.addWidget(self.len_label)
        row2.addWidget(self.len_min)
        row2.addWidget(self.dashes[1])
        row2.addWidget(self.len_max)
        row2.addWidget(self.len_unit)
        row2.addSpacing(12)
        row2.addWidget(self.audit_filter)
        row2.addWidget(self.clear_button)
        row2.addStretch(1)
        self.count_label = QLabel()
        row2.addWidget(self.count_label)
        row2.addWidget(self.export)
        self.error = ErrorLabel()

        self.model = MergeTableModel(self)
        self.table = PlaceholderTableView()
        self.table.setModel(self.model)
        # the audit column (filled once the Audit tab has run) takes the spare width, not the result
        configure_table(self.table, {0: 64, 1: 110, 2: 110, 3: 150, 4: 90, 5: 48, 6: 48, 7: 72, 8: 80, 9: 150},
                        stretch=9)
        self.table.horizontalHeader().moveSection(MergeTableModel.SCORE_COLUMN, 5)  # beside the frequency
        self.table.setColumnHidden(MergeTableModel.SCORE_COLUMN, True)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_row)
        self.table.horizontalHeader().sortIndicatorChanged.connect(self._sync_sort_indicator)
        self.table.setAccessibleName("Merges in training order")
        self.model.rows_changed.connect(self._update_count)
        self.jobs = JobRunner(self)  # long merge lists are filtered and sorted off the GUI thread
        self.model.use_worker(self.jobs, worker_opener(lambda: self.path))
        self.model.busy_changed.connect(self._update_count)
        self.model.failed.connect(self.error.show_message)
        self.detail = MergeDetail()
        self.detail.token_activated.connect(self._on_token_activated)
        split = beside_detail(self.table, self.detail)
        self.splitter = split

        self.pieces = PieceView()
        self.pieces.rows_changed.connect(self._update_count)
        self.pieces.piece_selected.connect(self._on_vocab_token)
        self.merge_stack = QStackedWidget()
        self.merge_stack.addWidget(split)
        self.merge_stack.addWidget(self.pieces)

        merges_tab = QWidget()
        ml = QVBoxLayout(merges_tab)
        ml.addLayout(row1)
        ml.addLayout(row2)
        ml.addWidget(self.error)
        ml.addWidget(self.merge_stack, 1)

        # ---- other tabs ---------------------------------------------------------------------------
        self.vocab = VocabView()
        self.vocab.token_selected.connect(self._on_vocab_token)
        self.diff = RunDiffView()
        self.tabs = QTabWidget()
        self.tabs.addTab(merges_tab, "Merges")
        self.tabs.addTab(self.vocab, "Vocabulary")
        self.tabs.addTab(self.diff, "Compare")
        self.audit = AuditView()
        self.audit.run_created.connect(self._on_run_created)
        self.audit.token_selected.connect(self._on_vocab_token)
        self.audit.audited.connect(self._on_audited)
        self.tabs.addTab(self.audit, "Audit")
        self.tabs.currentChanged.connect(self._on_tab)

        content = QWidget()
        cl = QVBoxLayout(content)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addLayout(top)
        cl.addWidget(self.tabs, 1)

        self.empty = EmptyState(*NO_PROJECT, symbol="⇄")
        body = getattr(self.empty, "body", None)
        if body is not None:  # a word-wrapped label otherwise shrinks to a narrow column
            body.setMinimumWidth(420)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)
        self._show_empty(*NO_PROJECT)
        app = QCoreApplication.instance()
        if app is not None:  # worker threads must be joined before the interpreter goes (trap 4)
            app.aboutToQuit.connect(self._on_about_to_quit)

    def focus_search(self) -> None:
        """Ctrl+F: the filter of the list in front — the vocabulary's, else the merges' (shown)."""
        if self.tabs.currentWidget() is self.vocab:
            edit = self.vocab.filter.edit
        else:
            self.tabs.setCurrentIndex(0)
            edit = self.filter.edit
        edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        edit.selectAll()

    # ---- project ------------------------------------------------------------------------------------
    def set_project(self, path: Path | None) -> None:
        """Open ``path`` read-only (None: close); the chooser lists its runs and references now
        (the window opens a project with :meth:`open_project` and :meth:`show_listed` instead)."""
        if self.open_project(path, off_thread=False):
            self.show_listed()

    def open_project(self, path: Path | None, *, off_thread: bool = True) -> bool:
        """The first half of :meth:`set_project`: open ``path``; its runs and references are listed,
        and the newest run's stored values checked and its sources set up, by a worker on a
        connection of its own (``off_thread``; else here, now) — nothing is shown until
        :meth:`show_listed`, which a window taking a project over calls in a later turn (and which
        waits for the worker). False when there is nothing to show."""
        self._close_store()
        self._listed = None
        self._checked = None
        self._show_when_listed = False
        if path is None:
            self._show_empty(*NO_PROJECT)
            return False
        try:
            store = open_read(path)
        except WorkbenchError as exc:
            self._show_empty("Cannot open the project", str(exc))
            return False
        self.store, self.path = store, Path(path)
        self._conn = store_connection(store)
        self._follow_latest = True
        if off_thread:
            self._list_off_thread(Path(path))
        else:
            self._listed = self._list_sources()
        return True

    def _list_off_thread(self, path: Path) -> None:
        """List the runs and references of ``path`` and check the one shown first (the newest run),
        on a worker: a project of many runs, or a newest run of 100,000 merges whose every row the
        check reads, held the window's thread for as long."""
        def job(should_stop, _progress) -> tuple[list[SourceInfo], tuple | None]:
            try:
                with open_read(path, should_stop=should_stop, limit_s=CHECK_LIMIT_S) as store:
                    conn = store_connection(store)
                    sources = list_sources(conn)
                    first = self._latest_run(sources) or (sources[0].source if sources else None)
                    if first is None:
                        return sources, None
                    problem = str(store.source_problem(first) or "")
                    if problem:
                        return sources, (first, problem, UNREAD, None)
                    scores = source_scores(store.connection, first)
                    return sources, (first, "", scores, prepare_source(conn, first, scores))
            except sqlite3.Error as exc:  # stopped, or the file went away: one line
                raise sql_error(exc) from None

        def done(result: tuple[list[SourceInfo], tuple | None]) -> None:
            if self.path != path or self._conn is None:
                return
            self._listed, self._checked = result
            if self._show_when_listed:
                self.show_listed(defer=True)

        def failed(message: str) -> None:
            log.warning("listing the runs of %s failed: %s", path, message)
            if self.path == path:
                self._listed, self._checked = None, None
                if self._show_when_listed:
                    self._show_when_listed = False
                    self._show_empty("Cannot list the runs of the project", message)

        self.count_label.setText("listing the runs…")
        self.jobs.submit(job, done, failed, key=LIST_KEY, hooks=True)

    def is_listing(self) -> bool:
        """The runs of the project just opened are still being listed (off the GUI thread)."""
        return self.jobs.is_running(LIST_KEY)

    def show_listed(self, defer: bool = False) -> None:
        """The second half of :meth:`set_project`: the chooser, and the newest run shown — once the
        worker of :meth:`open_project` has listed them (until then, when it delivers). ``defer``
        (the worker's delivery): the runs' page and then the run chosen and shown each come in a
        later turn with room, not in the one that filled the choosers (together 10–26 ms for 300
        runs)."""
        if self._conn is None:
            return
        if self.jobs.is_running(LIST_KEY):
            self._show_when_listed = True
            return
        self._show_when_listed = False
        self.count_label.setText("")
        self.diff.set_project(self.path, [])
        self._sync_sources(force=True, listed=self._listed, defer_show=defer)
        self._listed = None
        if self._pending_show is None:
            self._checked = None  # (else the pending step takes the worker's check)

    @Slot()
    def _show_pending(self) -> None:
        """The deferred half of a delivered listing: the run chosen and shown, when this turn has room."""
        if self._pending_show is None or self._conn is None:
            return
        if not room(self._show_step):
            return
        if self.stack.currentIndex() != 1:  # the runs' page first (~3 ms of show events), the run a turn later
            self.stack.setCurrentIndex(1)
            self._show_step.start()
            return
        self._flush_pending_show()
        self._checked = None

    def _flush_pending_show(self) -> None:
        """The pending step of a delivered listing, now: the run chooser filled, the run chosen."""
        if self._pending_show is None:
            return
        previous, latest_before = self._pending_show
        self._cancel_pending_show()
        self._fill_chooser()
        self._show_wanted(previous, latest_before)

    def _cancel_pending_show(self) -> None:
        self._pending_show = None
        self._show_step.stop()

    def _list_sources(self) -> list[SourceInfo] | None:
        if self._conn is None:
            return None
        try:
            return list_sources(self._conn)
        except Exception as exc:  # noqa: BLE001 - the file may be mid-checkpoint; try again next refresh
            log.warning("listing the runs of %s failed (next refresh retries): %s", self.path, exc)
            return None

    def _close_store(self) -> None:
        self.jobs.cancel(LIST_KEY)
        self._cancel_pending_show()
        self._warm_step.stop()
        self._paint_now()
        self.audit.set_source(None, None)
        self.vocab.set_source(None, None, None)
        self.pieces.set_source(None, None, None)
        self.diff.set_project(None, [])
        self.model.set_source(None)
        self.detail.clear()
        self._merge_source = None
        self._source = None
        self._sources = []
        self.chooser.blockSignals(True)
        self.chooser.clear()
        self.chooser.blockSignals(False)
        self._chooser_stale = False
        if self.store is not None:
            try:
                self.store.close()
            except Exception:  # noqa: BLE001 - closing a read connection cannot lose anything
                log.warning("closing the read connection to %s failed", self.path, exc_info=True)
        self.store, self.path, self._conn = None, None, None

    def _show_empty(self, title: str, body: str) -> None:
        self.empty.set_text(title, body)
        self.stack.setCurrentIndex(0)

    def _sync_sources(self, force: bool = False, listed: list[SourceInfo] | None = None,
                      defer_show: bool = False) -> bool:
        """Re-read runs and references (or take ``listed``, read a turn before); returns True when
        the list changed. ``defer_show``: the source is chosen and shown by :meth:`_show_pending`
        in a later turn."""
        if self._conn is None:
            return False
        sources = listed if listed is not None else self._list_sources()
        if sources is None:
            return False
        if sources == self._sources and not force:
            return False
        if self._pending_show is not None:  # a delivered listing not shown yet: what it would show
            previous, latest_before = self._pending_show
            self._cancel_pending_show()
        else:
            previous, latest_before = self._source, self._latest_run(self._sources)
        self._sources = sources
        self.diff.set_sources(sources)
        if defer_show and sources:  # the run chooser is filled in the turn its run is chosen
            self._chooser_stale = True
            self._pending_show = (previous, latest_before)
            self._show_step.start()
            return True
        self._fill_chooser()
        if not sources:
            self._set_source(None)
            self._show_empty(*NO_RUNS)
            return True
        self._show_wanted(previous, latest_before)
        return True

    def _fill_chooser(self) -> None:
        self._chooser_stale = False
        self.chooser.blockSignals(True)
        self.chooser.clear()
        for info in self._sources:
            self.chooser.addItem(_label(info), info.source)
        self.chooser.blockSignals(False)

    def _show_wanted(self, previous: Source | None, latest_before: Source | None) -> None:
        """The runs' page, and the source to show after a listing: the one shown before when still
        there, else (or when following the newest run and a new one came) the newest run."""
        sources = self._sources
        self.stack.setCurrentIndex(1)
        wanted = previous
        latest = self._latest_run(sources)
        ids = [s.source for s in sources]
        if wanted not in ids or (self._follow_latest and latest is not None and latest != latest_before):
            wanted = latest or ids[0]
        self._select_in_chooser(wanted)
        if wanted != previous or self._source != previous:
            self._set_source(wanted)
        else:
            self._update_status()

    @staticmethod
    def _latest_run(sources: list[SourceInfo]) -> Source | None:
        runs = [s.source for s in sources if s.source[0] == "run"]
        return runs[-1] if runs else None

    def _select_in_chooser(self, source: Source) -> None:
        self.chooser.blockSignals(True)
        self.chooser.setCurrentIndex(find_source(self.chooser, source))
        self.chooser.blockSignals(False)

    @Slot(int)
    def _on_chooser(self, index: int) -> None:
        source = self.chooser.itemData(index)
        if source is None:
            return
        self._follow_latest = tuple(source) == self._latest_run(self._sources)
        self._set_source(tuple(source))

    def _info(self, source: Source | None) -> SourceInfo | None:
        return next((s for s in self._sources if s.source == source), None)

    def _set_source(self, source: Source | None) -> None:
        if self._pending_show is not None:  # chosen before the listing's own choice: this one wins
            self._cancel_pending_show()
            if self._chooser_stale:
                self._fill_chooser()
                if source is not None:
                    self._select_in_chooser(source)
            if source is not None:
                self.stack.setCurrentIndex(1)
        self._source = source
        self.audit.set_source(self.path if source is not None else None, source)
        self.detail.clear()
        self.error.show_message("")
        self.jobs.cancel(CHECK_KEY)
        # A run or reference with a damaged stored value (a project edited outside the workbench) is
        # named in the chooser but not shown: the line says which column, the others stay usable.
        # The check reads every row: a long run's is made off the GUI thread (seconds for 10M merges).
        if source is not None and self.store is not None and self._conn is not None and self.path is not None:
            checked, self._checked = self._checked, None
            if checked is not None and checked[0] == source:  # checked by the worker that listed the runs
                self._show_source(*checked)
                self._paint_next_turn()
                return
            # a long merge list, or a Unigram run's long piece table (no merges, 200,000 pieces)
            end = source_key_end(self._conn, source)
            if end >= self.model.ASYNC_KEYS:
                self._check_off_thread(source, self.path)
                return
            problem = self._problem_here(source) if end >= self.model.SHORT_KEYS else \
                str(self.store.source_problem(source) or "")
            if problem is None:  # not checked within a frame: a worker checks it
                self._check_off_thread(source, self.path)
                return
            self._show_source(source, problem)
            self._paint_next_turn()
            return
        self._show_source(source, "")

    def _paint_next_turn(self) -> None:
        """The tables of a source just checked and shown are painted in the next turn of the
        event loop, not this one (which the check, or a worker's delivery, has spent): their updates are held until
        :meth:`_paint_now`, a zero-interval timer (a timer started in a pass fires in a later one).
        The models are set already: what the view shows is read at once."""
        viewport = self._shown_viewport()
        if viewport.isVisible():
            viewport.setUpdatesEnabled(False)
            self._paint_step.start()
        elif not self._pieces_mode and self.model.rowCount() > 0 and not self.model.busy:
            self._warm_step.start()

    def _shown_viewport(self) -> QWidget:
        """The viewport of the table a source fills: the piece table of a Unigram run, else the merges'."""
        return (self.pieces.table if self._pieces_mode else self.table).viewport()

    @Slot()
    def _paint_now(self) -> None:
        self._paint_step.stop()
        for table in (self.table, self.pieces.table):
            if not table.viewport().updatesEnabled():
                table.viewport().setUpdatesEnabled(True)  # (an update of the viewport)

    @Slot()
    def _warm_cells(self) -> None:
        """The first rows' cells of a hidden table made ahead of the paint that shows it."""
        if self.table.viewport().isVisible() or self._pieces_mode or self.model.busy:
            return
        if room(self._warm_step):
            self.model.warm()

    def _problem_here(self, source: Source) -> str | None:
        """The stored-value check of ``source`` on the window's connection, for at most
        ``HERE_LIMIT_S`` of this thread's CPU (the check reads every row: a run of 100,000 merges
        took a few hundred ms); None once that is spent — whatever the check said, as a statement
        it stopped may have read as damage."""
        assert self.store is not None and self._conn is not None
        within = getattr(self._conn, "within", None)
        if within is None:
            return str(self.store.source_problem(source) or "")
        with within(self.model.HERE_LIMIT_S) as ran_out:
            try:
                problem = str(self.store.source_problem(source) or "")
            except (WorkbenchError, sqlite3.OperationalError):
                if ran_out():
                    return None
                raise
        return None if ran_out() else problem

    def _check_off_thread(self, source: Source, path: Path) -> None:
        """Show nothing of ``source`` until its stored values are checked on a connection of its own."""
        self._show_source(None, "")
        self._source = source
        self.count_label.setText("checking the stored run…")

        def job(should_stop, _progress) -> tuple[str, Any, PreparedSource | None]:
            try:
                with open_read(path, should_stop=should_stop, limit_s=CHECK_LIMIT_S) as store:
                    problem = str(store.source_problem(source) or "")
                    if problem:
                        return problem, None, None
                    # the per-id scores too (parsing 200,000 of them is ~0.5 s), and the sources set
                    # up here (their settings, a piece table's scores and count: ~0.1-0.3 s more)
                    scores = source_scores(store.connection, source)
                    return problem, scores, prepare_source(store_connection(store), source, scores)
            except sqlite3.Error as exc:  # stopped, or the file went away: one line
                raise sql_error(exc) from None

        def done(result: tuple[str, Any, PreparedSource | None]) -> None:
            if self._source == source:
                self._show_source(source, *result)
                self._paint_next_turn()

        def failed(message: str) -> None:
            self.count_label.setText("")
            self.error.show_message(message)

        self.jobs.submit(job, done, failed, key=CHECK_KEY, hooks=True)

    def _show_source(self, source: Source | None, problem: str, scores: Any = UNREAD,
                     prepared: PreparedSource | None = None) -> None:
        """Show ``source`` (``problem``: why not); ``scores``: its per-id scores, and ``prepared``
        its sources, both made by a worker (moved here onto the window's connection)."""
        self._source = source if source is not None else self._source
        self._damaged = problem
        if problem:
            source = None
        if source is None or self._conn is None:
            self._merge_source = None
            self.model.set_source(None)
            self.vocab.set_source(None, None, None)
            self.pieces.set_source(None, None, None)
            self._set_pieces_mode(False)
            self.error.show_message(self._damaged)
            self.table.set_placeholder("This run cannot be shown: a value stored in it is damaged." if self._damaged
                                       else "")
            self._update_status()
            return
        self._merge_source = prepared.merges.on_connection(self._conn) if prepared is not None \
            else MergeSource(self._conn, source, scores=scores)
        reset_audit_filter(self.audit_filter)
        # max_key reads the key's end; count() would walk every merge of a long run
        self._set_pieces_mode(self._merge_source.model == "unigram" and self._merge_source.max_key() < 0)
        if self._pieces_mode:
            info = self._info(source)
            self.pieces.set_source(self._conn, self.path, source, info.status if info else "",
                                   self._tokenizer_loader(source), scores=scores,
                                   prepared=prepared.pieces if prepared is not None else None)
            self.model.set_source(None)
            self._apply_filter()
            self._vocab_dirty = True
            if self.tabs.currentIndex() == TAB_VOCAB:
                self._load_vocab()
            elif self.tabs.currentIndex() == TAB_MERGES:
                self.pieces.auto_count()
            self.diff.set_default_a(source)
            self._update_status()
            return
        self.pieces.set_source(None, None, None)
        # a frequency-scored WordPiece's score is its frequency: one column says it
        self.table.setColumnHidden(MergeTableModel.SCORE_COLUMN, self._merge_source.scores is None
                                   or self._merge_source.score_rule == "frequency")
        has_freq = self._merge_source.has_frequency
        for w in (self.freq_min, self.freq_max, self.freq_label):
            w.setEnabled(has_freq)
        try:
            self.model.set_source(self._merge_source, self._query())
        except WorkbenchError as exc:
            self.model.set_source(self._merge_source, None)
            self.error.show_message(str(exc))
        self.table.set_placeholder(self._merge_placeholder())
        self._vocab_dirty = True
        if self.tabs.currentIndex() == TAB_VOCAB:
            self._load_vocab()
        self.diff.set_default_a(source)
        self._update_status()

    def _set_pieces_mode(self, on: bool) -> None:
        """Unigram: the piece table instead of the merge table; only the text filter applies."""
        self._pieces_mode = on
        self.merge_stack.setCurrentIndex(1 if on else 0)
        for w in (self.field, self.freq_label, self.freq_min, self.freq_max, self.len_label, self.len_min,
                  self.len_max, self.len_unit, *self.dashes, self.export):
            w.setVisible(not on)
        self.filter.edit.setPlaceholderText(
            "Filter pieces: a substring, or tick regex for a pattern such as ^▁" if on else
            "Filter pieces: a substring, or tick regex for a pattern such as ^\\s")

    def _tokenizer_loader(self, source: Source):
        """Builds the source's tokenizer on first use (the piece detail's segmentations)."""
        store = self.store

        def load():
            if store is None:
                raise WorkbenchError("the project is closed")
            return store.load_tokenizer(source[1]) if source[0] == "run" else store.load_reference(source[1])
        return load

    def _load_vocab(self) -> None:
        info = self._info(self._source)
        self.vocab.set_source(self._conn, self.path, self._source, info.status if info else "")
        self._vocab_dirty = False
        self.vocab.auto_count()

    @Slot(int)
    def _on_tab(self, index: int) -> None:
        if index == TAB_VOCAB and self._vocab_dirty and self._merge_source is not None:
            self._load_vocab()
        elif index == TAB_MERGES and self._pieces_mode:
            self.pieces.auto_count()

    @Slot(int)
    @Slot()
    def _on_audited(self) -> None:
        """The Audit tab audited the shown tokenizer: its marks become a column and a filter of the
        Merges and Vocabulary tables (sorted and filtered in SQL, as their other columns)."""
        from workbench.tasks.audit import audit_marks

        report = self.audit.report
        if report is None or self.audit.source != self._source:  # an older source's audit
            return
        marks = audit_marks(report.audit)
        if self._merge_source is not None:
            self._merge_source.audit_key = register_audit(marks)
            self.audit_filter.setEnabled(True)
            self.model.reload()
        if self._pieces_mode and self._source is not None:  # a Unigram run: the piece table
            self.pieces.set_audit(self._source, marks)
        if self._source is not None:
            self.vocab.set_audit(self._source, marks)

    def _on_run_created(self, _run_id: int) -> None:
        """A trim stored a new run: list it in the chooser."""
        self._sync_sources(force=True)

    def current_source(self) -> Source | None:
        return self._source

    # ---- live updates ---------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Pick up new runs and new merges (called every ~500 ms while a run trains)."""
        if self._conn is None or self.is_listing() or self._show_when_listed:
            return  # the runs are being listed off the GUI thread: shown when they arrive
        self._sync_sources()
        if self._merge_source is None:
            return
        info = self._info(self._source)
        if self._pieces_mode:
            if info is not None and info.status != self.pieces._status:
                self._set_source(self._source)  # a finished run: its scores are recorded now
            return
        if (self._merge_source.scores is None and info is not None and info.status != "running"
                and self._merge_source.load_scores()):  # WordPiece scores arrive when the run ends
            self.table.setColumnHidden(MergeTableModel.SCORE_COLUMN, False)
            self.model.forget_cells()  # the score column's "—" becomes each merge's score
            self.table.viewport().update()
        try:
            inserted = self.model.refresh()
        except WorkbenchError as exc:
            self.error.show_message(str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a busy file: the next refresh tries again
            log.warning("reading new merges of %s failed (next refresh retries): %s", self._source, exc)
            return
        if inserted:
            self.table.set_placeholder("No merge matches the filter.")
            self.detail.refresh_children()
        if not self._vocab_dirty:
            info = self._info(self._source)
            self.vocab.set_status(info.status if info else "")
            try:
                self.vocab.refresh()
            except Exception as exc:  # noqa: BLE001 - a busy file: the next refresh tries again
                log.warning("reading new vocabulary rows of %s failed: %s", self._source, exc)
        self._update_status()

    def _update_status(self) -> None:
        info = self._info(self._source)
        if info is None or self._damaged:
            self.status.setText("damaged: not shown" if self._damaged else "")
            return
        total = self.model.total
        if self._pieces_mode:
            pieces = self.pieces.model.total
            text = (f"imported unigram tokenizer · {pieces:,} pieces" if info.source[0] == "ref" else
                    f"{info.status} · unigram · {pieces:,} pieces")
            self.status.setText(text)
            return
        if info.source[0] == "ref":
            text = f"imported tokenizer · {total:,} merges"
        elif info.status == "running":
            text = f"training… {total:,} merges so far"
        else:
            text = f"{info.status} · {total:,} merges"
        ms = self._merge_source
        if ms is not None and ms.model == "wordpiece" and info.status != "running":
            text += " · " + ("scores not recorded (trained before runs kept them)" if ms.scores is None else
                             f"{ms.score_rule or 'pair'} scores")
        self.status.setText(text)

    # ---- filtering ------------------------------------------------------------------------------------
    def _query(self) -> MergeQuery:
        lo, hi = self.len_min.value() or None, self.len_max.value() or None
        return MergeQuery(TextFilter(self.filter.text(), self.filter.is_regex()), self.field.currentData() or "any",
                          _optional_int(self.freq_min), _optional_int(self.freq_max), lo, hi,
                          self.len_unit.currentData() or "bytes", self.audit_filter.currentData() or "")

    @Slot()
    def _apply_filter(self) -> None:
        if self._merge_source is None:
            return
        if self._pieces_mode:
            text = TextFilter(self.filter.text(), self.filter.is_regex())
            audit = self.audit_filter.currentData() or ""
            apply_filter_query(lambda: self.pieces.set_text_filter(text, audit), self.filter, self.error)
            return
        selected = self.detail.token_id
        if not apply_filter_query(lambda: self.model.set_query(self._query()), self.filter, self.error):
            return
        if selected is not None:  # keep the merge selected if it still matches
            rank = self._merge_source.first_merge_of(selected)
            row = self.model.row_of_key(rank) if rank is not None else None
            if row is not None:
                self._select_row(row, emit=False)

    def set_filter(self, text: str = "", *, regex: bool = False, field: str = "any",
                   min_frequency: int | None = None, max_frequency: int | None = None,
                   min_length: int | None = None, max_length: int | None = None, unit: str = "bytes") -> None:
        """Set every filter control at once and apply (scripts and tests)."""
        widgets = (self.filter.edit, self.filter.regex, self.field, self.freq_min, self.freq_max,
                   self.len_min, self.len_max, self.len_unit)
        for w in widgets:
            w.blockSignals(True)
        try:
            self.filter.edit.setText(text)
            self.filter.regex.setChecked(regex)
            self.field.setCurrentIndex(max(0, self.field.findData(field)))
            self.freq_min.setText("" if min_frequency is None else str(min_frequency))
            self.freq_max.setText("" if max_frequency is None else str(max_frequency))
            self.len_min.setValue(min_length or 0)
            self.len_max.setValue(max_length or 0)
            self.len_unit.setCurrentIndex(max(0, self.len_unit.findData(unit)))
        finally:
            for w in widgets:
                w.blockSignals(False)
        self._apply_filter()

    @Slot()
    def _on_clear_clicked(self) -> None:
        self.set_filter()

    def _merge_placeholder(self) -> str:
        """What an empty merge table says: a worker still filtering (a regex over more than a
        frame's worth of merges, or a long run) is not "no merges yet"."""
        if self.model.busy:
            return "Filtering and sorting…"
        return ("No merge matches the filter." if self.model.total else
                "No merges yet: they appear here as the run learns them.")

    def _update_count(self) -> None:
        m = self.model
        if self._pieces_mode:
            p = self.pieces.model
            self.count_label.setText("filtering and sorting…" if p.busy else
                                     f"{p.rowCount():,} of {p.total:,} pieces match" if p.is_filtered()
                                     else f"{p.rowCount():,} pieces")
            self._update_status()
            return
        if self._merge_source is None:
            self.count_label.setText("")
            self._update_status()
            return
        self.table.set_placeholder(self._merge_placeholder())
        if m.busy:
            self.count_label.setText("filtering and sorting…")
        elif m.is_filtered():
            self.count_label.setText(f"{m.rowCount():,} of {m.total:,} merges match")
        else:
            self.count_label.setText(f"{m.rowCount():,} merges")
        self._update_status()

    # ---- selection ------------------------------------------------------------------------------------
    @Slot(int, Qt.SortOrder)
    def _sync_sort_indicator(self, *_args) -> None:
        """Keep the header's arrow on the order the rows are really in (``widgets.sync_sort_indicator``)."""
        sync_sort_indicator(self.table)

    @Slot(QModelIndex, QModelIndex)
    def _on_current_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not current.isValid() or self._merge_source is None:
            return
        entry = self.model.entry(current.row())
        if entry is None:
            return
        try:
            self.detail.show_token(self._merge_source, entry.new_id, entry)
        except Exception as exc:  # noqa: BLE001 - a damaged row must not break selection
            log.exception("explaining merge %s of %s failed", entry.new_id, self._source)
            self.detail.clear(f"Cannot explain this merge: {exc}")
        if not self._syncing and self._source is not None:
            self.merge_selected.emit(self._source, entry.new_id)

    def _select_row(self, row: int, *, emit: bool = True) -> None:
        self._syncing = not emit
        try:
            select_row(self.table, row)
        finally:
            self._syncing = False

    def select_token(self, source: tuple[str, int], token_id: int) -> None:
        """Select the merge that created ``token_id`` of ``source`` and scroll to it (no signal)."""
        source = (str(source[0]), int(source[1]))
        self._flush_pending_show()  # a listing delivered a turn ago: its chooser and run first
        if source != self._source:
            if find_source(self.chooser, source) < 0:
                return
            self._select_in_chooser(source)
            self._follow_latest = source == self._latest_run(self._sources)
            self._set_source(source)
        self._show_token(int(token_id), emit=False)

    def _show_token(self, token_id: int, *, emit: bool) -> None:
        if self._merge_source is None:
            return
        if self._pieces_mode:
            if not self.pieces.select_token(token_id, emit=emit) and self.pieces.model.is_filtered():
                self.set_filter()  # the filter hides it: show everything
                self.pieces.select_token(token_id, emit=emit)
            return
        rank = self._merge_source.first_merge_of(token_id)
        if rank is None:
            # A base or special token: no merge row, but its detail still says what it is.
            self.table.selectionModel().clearSelection()
            if self._merge_source.piece(token_id) is not None:
                self.detail.show_token(self._merge_source, token_id, None)
            if emit and self._source is not None:
                self.merge_selected.emit(self._source, token_id)
        else:
            def select(clear: bool) -> None:  # once the rows shown are the last asked for (a long run's come later)
                row = self.model.row_of_key(rank)
                if row is not None:
                    self._select_row(row, emit=emit)
                elif clear and self.model.is_filtered():
                    self.set_filter()  # the filter hides it: show everything
                    self.model.when_ready(lambda: select(False))
            self.model.when_ready(lambda: select(True))
        if not self._vocab_dirty:
            self.vocab._syncing = True
            try:
                self.vocab.select_token(token_id)
            finally:
                self.vocab._syncing = False

    @Slot(int)
    def _on_token_activated(self, token_id: int) -> None:
        self._show_token(token_id, emit=True)

    @Slot(int)
    def _on_vocab_token(self, token_id: int) -> None:
        if self._source is not None:
            self.merge_selected.emit(self._source, token_id)

    # ---- export -------------------------------------------------------------------------------------
    def export_csv(self, path: str | Path, *, selection: bool) -> int:
        """Write the selected merges (or every merge the filter shows, in view order); returns how many."""
        rows = shown_entries(self.table, self.model, selection=selection)
        write_merges_csv(path, rows)
        return len(rows)

    def _export_dialog(self, selection: bool) -> None:
        if self._merge_source is None:
            return
        ask_and_export_csv(self, "Export merges as CSV", "merges.csv",
                           lambda path: self.export_csv(path, selection=selection), self.error)

    # ---- shutdown -------------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop background jobs and close the connection (window close, test teardown)."""
        self.jobs.shutdown()
        self.vocab.shutdown()
        self.pieces.shutdown()
        self.diff.shutdown()
        self.audit.shutdown()
        self._close_store()

    @Slot()
    def _on_about_to_quit(self) -> None:
        self.shutdown()

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.shutdown()
        super().closeEvent(event)
