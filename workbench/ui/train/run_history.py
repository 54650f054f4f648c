"""The run history: every run stored in the project, with status, size and time.

Selecting several runs overlays their curves. Renaming edits the name in place (F2 or double
click); deleting asks first. The list is rebuilt from ``ProjectStore.runs()`` whenever runs change,
keeping the selection. A project of many runs is listed in batches of :data:`FILL_BATCH`, newest
first, one batch per turn of the event loop, so opening a project of 300 runs never builds every
row (and its tooltip) in one stretch of the window's thread; :meth:`RunHistory.filling` says whether
rows are still to come. What it leaves out: the store calls themselves — it emits requests and the
training panel carries them out through the project session.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.store import RunInfo
from workbench.tasks.models import family_of
from workbench.tasks.preflight import estimate_ratios
from workbench.tasks.sample_report import SampleOverlap
from workbench.tasks.trim import vocab_entries  # at start-up, not in the turn that takes a project over (5 ms)
from workbench.ui import style, text, turns

COLUMNS = ("Run", "Status", "|V|", "Merges", "Started", "Took", "vs estimate", "vs all lines")
ID_ROLE = Qt.ItemDataRole.UserRole
#: Rows built per turn of the event loop (~0.1–0.2 ms each, with the tooltip): a list this long or
#: shorter is built at once, a longer one newest first in batches (the first batch shares its turn
#: with taking the project over, so it is kept small).
FILL_BATCH = 20
#: Rows a column's width is measured over (Qt's default for ``QHeaderView.resizeContentsPrecision``).
CONTENTS_PRECISION = 1000


def describe(run: RunInfo, overlap: SampleOverlap | None = None) -> str:
    s = run.settings
    timings = run.timings or {}
    phases = " · ".join(f"{what} {text.duration(float(timings[key]))}" for key, what in
                        (("count_s", "reading"), ("prepare_s", "preparing"), ("merge_s", "training"))
                        if isinstance(timings.get(key), (int, float)))
    stopped = s.get("stopped_at")
    lines = [f"run {run.id}: {run.name}",
             family_of(s).summary_of(s),  # only the settings that apply to the run's model
             f"word types {s.get('word_types', '?'):,} · initial tokens {s.get('initial_token_count', 0):,}"
             if isinstance(s.get("word_types"), int) else "",
             f"cancelled at |V| {stopped.get('vocab_size')}: the kept model is cut to {run.vocab_size}"
             if isinstance(stopped, dict) else "",
             f"took {phases}" if phases else ""]
    trim = s.get("trim")
    if isinstance(trim, dict):
        entries = vocab_entries(s, run.vocab_size)
        lines.append(f"trim of {trim.get('source')}: {len(trim.get('requested') or []):,} asked for + "
                     f"{len(trim.get('cascade') or []):,} by the cascade; {entries:,} entries"
                     + ("" if entries == run.vocab_size else f" in ids 0–{run.vocab_size - 1:,} (ids kept)"))
    if isinstance(s.get("sample_lines"), int):
        of = s.get("sampled_from_lines")
        lines.append(f"trained on a sample of {s['sample_lines']:,}" + (f" of {of:,}" if isinstance(of, int) else "")
                     + f" lines (seed {s.get('sample_seed', 0)})")
        if overlap is not None:
            lines.append(overlap.text())
    ratios = estimate_ratios(s, timings)
    if ratios is not None and ratios.text():
        est = s["estimate"]
        lines.append(f"estimated: {est.get('distinct', 0):,} distinct pre-tokens, peak {est.get('peak_mb', 0):,} MB, "
                     f"{text.duration(float(est.get('seconds', 0)))}; actual ÷ estimate: {ratios.text()}")
    if s.get("special_tokens"):
        lines.append("special tokens " + " ".join(s["special_tokens"]))
    if run.error:
        lines.append(run.error)
    if run.damage:
        lines = [lines[0], run.damage]
    return "\n".join(line for line in lines if line)


class RunHistory(QWidget):
    """A multi-select list of runs; emits the selection and rename/delete requests."""

    selection_changed = Signal(list)       # run ids, in list order
    rename_requested = Signal(int, str)    # run id, new name
    delete_requested = Signal(list)        # run ids (the panel asks before deleting)
    export_requested = Signal(int)
    compare_requested = Signal(list)       # run ids to measure side by side in the Compare tab

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Run history")
        self._updating = False
        self._runs: dict[int, RunInfo] = {}
        # A sampled run beside the run on all its lines (read off the GUI thread by the panel).
        self._overlaps: dict[int, SampleOverlap] = {}
        self._live: int | None = None
        # While a long list is built in batches: the run ids still to add (newest first), the ids
        # to select as their rows appear, and the selection the listeners last heard of.
        self._pending: list[int] = []
        self._wanted: set[int] = set()
        self._before: list[int] = []
        self._measure_due = False  # the columns are to be sized to every row once the list is filled
        self._fill_timer = QTimer(self)
        self._fill_timer.setSingleShot(True)
        self._fill_timer.setInterval(0)
        self._fill_timer.timeout.connect(self._timed_fill)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        title = QLabel("<b>Runs</b>")
        head.addWidget(title)
        self.hint = QLabel("select several to overlay")
        self.hint.setStyleSheet(f"color: {style.muted().name()}")
        head.addWidget(self.hint)
        head.addStretch(1)
        self.rename_button = QPushButton("Rename")
        self.rename_button.setToolTip("Rename the selected run (F2)")
        self.rename_button.clicked.connect(lambda _c=False: self.edit_selected_name())
        self.delete_button = QPushButton("Delete…")
        self.delete_button.setToolTip("Delete the selected runs (Delete); asks first")
        self.delete_button.clicked.connect(lambda _c=False: self._request_delete())
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("Measure the selected runs side by side in the Compare tab")
        self.compare_button.clicked.connect(lambda _c=False: self.request_compare())
        head.addWidget(self.compare_button)
        head.addWidget(self.rename_button)
        head.addWidget(self.delete_button)
        layout.addLayout(head)

        self.tree = QTreeWidget()
        self.tree.setAccessibleName("Runs")
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed |
                                  QAbstractItemView.EditTrigger.DoubleClicked)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in range(1, len(COLUMNS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        for col in (2, 3, 5):
            self.tree.headerItem().setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.tree.itemSelectionChanged.connect(self._selection)
        self.tree.itemChanged.connect(self._item_changed)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._menu)
        delete = QAction("Delete", self.tree)
        delete.setShortcut(QKeySequence.StandardKey.Delete)
        delete.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        delete.triggered.connect(lambda _c=False: self._request_delete())
        self.tree.addAction(delete)
        layout.addWidget(self.tree)
        self._buttons()

    # ---- contents ------------------------------------------------------------------------------
    def set_runs(self, runs: Sequence[RunInfo], live_run: int | None = None) -> None:
        """Rebuild from the store's runs (newest first), keeping the selection.

        More than :data:`FILL_BATCH` runs: the first batch now, the rest on later turns of the
        event loop (rows selected before keep their selection as they reappear)."""
        selected = set(self.selected_ids()) | (self._wanted if self._pending else set())
        before = self._before if self._pending else self.selected_ids()
        self._live = live_run
        self._runs = {r.id: r for r in runs}
        self._pending = sorted(self._runs, reverse=True)
        self._wanted, self._before = selected, before
        self._updating = True
        try:
            self.tree.clear()
        finally:
            self._updating = False
        self.hint.setVisible(len(runs) > 1)
        # While a long list fills, its columns are sized to the rows in view only: each batch's
        # layout measured every row so far for seven columns (300 runs: 15 ms a batch, growing with
        # the list); every row is measured once, in a turn of its own, after the last batch.
        self._measure_due = len(self._pending) > FILL_BATCH
        self.tree.header().setResizeContentsPrecision(0 if self._measure_due else CONTENTS_PRECISION)
        self._fill_more()

    def filling(self) -> bool:
        """Whether rows of the last :meth:`set_runs` are still to be added (a long list), or its
        columns still to be sized to every row."""
        return bool(self._pending) or self._measure_due

    def _timed_fill(self) -> None:
        if turns.room(self._fill_timer):  # a turn other views' steps have spent: the next batch in a later one
            if self._pending:
                self._fill_more()
            else:
                self._measure()

    def _measure(self) -> None:
        """Size the columns to every row (the layout the list would have had built at once)."""
        if self._measure_due:
            self._measure_due = False
            self.tree.header().setResizeContentsPrecision(CONTENTS_PRECISION)
            self.tree.doItemsLayout()

    def _fill_more(self) -> None:
        """Add the next batch of rows; after the last, say whether the selection changed."""
        batch, self._pending = self._pending[:FILL_BATCH], self._pending[FILL_BATCH:]
        self._updating = True
        try:
            items = [self._item(self._runs[rid]) for rid in batch if rid in self._runs]
            self.tree.addTopLevelItems(items)
            for item in items:
                if item.data(0, ID_ROLE) in self._wanted:
                    item.setSelected(True)
        finally:
            self._updating = False
        self._buttons()
        if self._pending or self._measure_due:
            self._fill_timer.start()  # the next batch, or the columns measured, on a later turn
        else:
            self._fill_timer.stop()
        if self._pending:
            return
        if set(self.selected_ids()) != set(self._before):
            self._before = self.selected_ids()
            self.selection_changed.emit(self._before)

    def _item(self, run: RunInfo) -> QTreeWidgetItem:
        status = "running" if run.id == self._live and run.status == "running" else run.status
        status = "damaged" if run.damage else status
        took = (run.timings or {}).get("total_s")
        if took is None and run.ended and run.started:
            took = run.ended - run.started
        # A model that merges nothing (Unigram) has no merge count to show: "—", not a misleading 0.
        merges = "—" if run.merges_nothing else text.count(run.merge_count)
        ratios = estimate_ratios(run.settings, run.timings or {})
        versus = " · ".join(f"{what} ×{value:.2f}" for what, value in
                            (("mem", ratios.memory), ("time", ratios.time)) if value is not None) if ratios else ""
        entries = vocab_entries(run.settings, run.vocab_size)  # a trim that kept its ids: its entries
        overlap = self._overlaps.get(run.id)
        sampled = f"{100 * overlap.share:.1f}% of run {overlap.full_run}" if overlap is not None else ""
        item = QTreeWidgetItem([run.name, status, text.count(entries), merges,
                                text.when(run.started), text.duration(took) if took is not None else "", versus,
                                sampled])
        item.setData(0, ID_ROLE, run.id)
        item.setIcon(0, style.status_icon(status))
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
        tip = describe(run, overlap)
        for col in range(len(COLUMNS)):
            item.setToolTip(col, tip)
        for col in (2, 3, 5):
            item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return item

    def set_overlaps(self, overlaps: dict[int, SampleOverlap]) -> None:
        """Show how each sampled run's vocabulary overlaps its run on all lines (``vs all lines``)."""
        if overlaps == self._overlaps:
            return
        self._overlaps = dict(overlaps)
        for run in list(self._runs.values()):
            self.update_run(run, self._live)

    def update_run(self, run: RunInfo, live_run: int | None = None) -> None:
        """Refresh one row (status, size) without rebuilding the list."""
        self._live = live_run
        self._runs[run.id] = run
        if run.id in self._pending:  # its row is built from the kept run when its batch comes
            return
        for item in self._items():
            if item.data(0, ID_ROLE) == run.id:
                self._updating = True
                try:
                    fresh = self._item(run)
                    for col in range(len(COLUMNS)):
                        if col != 0 or item.text(0) != fresh.text(0):
                            item.setText(col, fresh.text(col))
                    item.setIcon(0, fresh.icon(0))
                    for col in range(len(COLUMNS)):
                        item.setToolTip(col, fresh.toolTip(col))
                finally:
                    self._updating = False
                return
        self.set_runs(list(self._runs.values()), live_run)

    def selected_ids(self) -> list[int]:
        return [item.data(0, ID_ROLE) for item in self.tree.selectedItems()]

    def select(self, run_ids: Sequence[int]) -> None:
        wanted = set(run_ids)
        if self._pending:  # rows still to come are selected as they are added
            self._wanted = wanted
        self._updating = True
        try:
            self.tree.clearSelection()
            for item in self._items():
                if item.data(0, ID_ROLE) in wanted:
                    item.setSelected(True)
                    self.tree.scrollToItem(item)
        finally:
            self._updating = False
        self._buttons()
        self._before = self.selected_ids()
        self.selection_changed.emit(self._before)

    def _items(self) -> Iterator[QTreeWidgetItem]:
        """The rows, top to bottom (the list is flat: every run is a top-level item)."""
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item is not None:
                yield item

    def run_ids(self) -> list[int]:
        return [item.data(0, ID_ROLE) for item in self._items()]

    def item_for(self, run_id: int) -> QTreeWidgetItem | None:
        for item in self._items():
            if item.data(0, ID_ROLE) == run_id:
                return item
        return None

    def edit_selected_name(self) -> None:
        items = self.tree.selectedItems()
        if len(items) == 1:
            self.tree.editItem(items[0], 0)

    # ---- internals -----------------------------------------------------------------------------
    def _buttons(self) -> None:
        ids = self.selected_ids()
        self.rename_button.setEnabled(len(ids) == 1)
        self.compare_button.setEnabled(bool(ids))
        self.delete_button.setEnabled(bool(ids) and self._live not in ids)

    def _selection(self) -> None:
        self._buttons()
        if not self._updating:
            self._before = self.selected_ids()
            if self._pending:  # the user picked rows while the list fills: none of the rows to come
                self._wanted = set(self._before)
            self.selection_changed.emit(self._before)

    def _item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if self._updating or column != 0:
            return
        run_id = item.data(0, ID_ROLE)
        old = self._runs.get(run_id)
        name = item.text(0).strip()
        if old is None or name == old.name:
            return
        if not name:
            self._updating = True
            item.setText(0, old.name)
            self._updating = False
            return
        self.rename_requested.emit(run_id, name)

    def _request_delete(self) -> None:
        ids = [i for i in self.selected_ids() if i != self._live]
        if ids:
            self.delete_requested.emit(ids)

    def request_compare(self) -> None:
        ids = self.selected_ids()
        if ids:
            self.compare_requested.emit(ids)

    def _menu(self, pos) -> None:
        ids = self.selected_ids()
        if not ids:
            return
        menu = QMenu(self)
        if len(ids) == 1:
            menu.addAction("Rename", self.edit_selected_name)
            menu.addAction("Export…", lambda: self.export_requested.emit(ids[0]))
        menu.addAction("Compare", self.request_compare)
        act = menu.addAction("Delete…", self._request_delete)
        act.setEnabled(self._live not in ids)
        menu.exec(self.tree.viewport().mapToGlobal(pos))
