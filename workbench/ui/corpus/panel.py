"""The Corpus panel: add files and folders, see what is in them, and which ones were refused.

Files are validated and scanned by :class:`~workbench.ui.corpus.scan.CorpusScanWorker` in its own
thread (streaming, ~1 MB at a time; a progress bar with bytes/s and Cancel). A bad file is listed
with the reason and ``file:line`` from :mod:`workbench.corpus` — the others stay loaded — and
where the reader suggested an encoding the list offers to retry with it. JSONL fields and CSV/TSV
columns are chosen when files are added, from the candidates found in the first record
(:mod:`workbench.tasks.corpus_fields`).

What it leaves out: the text itself (only the per-file statistics and a preview of the first lines
are kept in memory) and the project file (the training child records the corpus it used).
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePath
from typing import Callable, Sequence

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from workbench.corpus import KINDS, SUPPORTED, CorpusSource, CorpusStats, detect_kind
from workbench.corpus.compression import compression_of
from workbench.corpus.location import RemotePath, check_url, corpus_path, is_url, stored_path
from workbench.errors import WorkbenchError
from workbench.tasks.corpus_fields import first_files, option_candidates
from workbench.tasks.spec import CorpusFile
from workbench.ui import style, text, turns
from workbench.ui.collector import keep_what_is_built
from workbench.ui.corpus.scan import CorpusScanWorker, ScanThread
from workbench.ui.corpus.totals import CorpusTotals
from workbench.ui.empty_state import EmptyState
from workbench.ui.jobs import FEED_BUDGET_S, JobRunner, feed_in_batches
from workbench.ui.settings import AppSettings

FILE_FILTER = ("Corpus files (*.txt *.text *.jsonl *.ndjson *.json *.csv *.tsv *.parquet *.arrow *.counts *.gz *.zst);;"
               "Text (*.txt *.text *.gz *.zst);;JSON lines (*.jsonl *.ndjson *.json);;CSV / TSV (*.csv *.tsv);;"
               "Parquet / Arrow (*.parquet *.arrow);;Word counts (*.counts *.wordcounts.tsv);;All files (*)")


@dataclass
class CorpusEntry:
    """One loaded file: how it is read, and its statistics once scanned."""

    key: str
    source: CorpusSource
    stats: CorpusStats | None = None
    done: int = 0
    state: str = "queued"  # queued | reading | done | cancelled
    #: The table row's texts and the (stats, state, done) they were made for (CorpusTableModel._texts).
    texts: tuple | None = dataclasses.field(default=None, repr=False, compare=False)

    def corpus_file(self) -> CorpusFile:
        s = self.source
        return CorpusFile(str(s.path), s.kind, s.field, s.column, s.encoding, s.on_bad_record)

    def format_text(self) -> str:
        s = self.source
        guessed = detect_kind(s.path)[0] is None  # no telling ending: the kind was sniffed or chosen
        codec = (compression_of(s.path.name) or "gzip") if s.compressed else ""
        parts = [s.kind + (f" ({codec})" if codec else "") + (" (by content)" if guessed else "")]
        if s.field:
            parts.append(f"field {s.field}")
        if s.column is not None and s.kind != "text":
            parts.append(f"column {s.column}")
        if s.encoding:
            parts.append(s.encoding)
        return " · ".join(parts)


COLUMNS = ("File", "Format", "Size", "Characters", "Lines / records", "Distinct pre-tokens", "Script mix", "Status")
KIND_LABELS = {"text": "Plain text", "jsonl": "JSON lines", "csv": "CSV", "tsv": "TSV", "parquet": "Parquet",
               "arrow": "Arrow", "wordcounts": "Word counts (word<TAB>count)"}
POLICY_LABELS = {"fail": "Reject the file", "skip": "Skip them and report"}


def lines_or_records(st: CorpusStats) -> str:
    """Records for files of records (JSONL, CSV/TSV, Parquet, count tables), text lines otherwise."""
    if st.records is not None:
        return f"{text.count(st.records)} record{'s' if st.records != 1 else ''}"
    return f"{text.count(st.lines)} line{'s' if st.lines != 1 else ''}"
NUMERIC = {2, 3, 4, 5}
_DISPLAY, _TOOLTIP, _ALIGN = int(Qt.ItemDataRole.DisplayRole), int(Qt.ItemDataRole.ToolTipRole), \
    int(Qt.ItemDataRole.TextAlignmentRole)
_DECORATION, _FOREGROUND = int(Qt.ItemDataRole.DecorationRole), int(Qt.ItemDataRole.ForegroundRole)
_ROLES = frozenset((_DISPLAY, _TOOLTIP, _ALIGN, _DECORATION, _FOREGROUND))
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
RECORD_AT = re.compile(r":\d+: ")  # a refusal naming a line: a bad record refused the file
SAMPLE_FILES = 100  # sample_line looks at the first files only


class CorpusTableModel(QAbstractTableModel):
    """The loaded files; rows are appended and updated in place while scans report.

    ``totals`` sums them as they come and go (:mod:`workbench.ui.corpus.totals`): statistics are
    set through :meth:`set_stats` so that the sums follow."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.entries: list[CorpusEntry] = []
        self._row_of: dict[str, int] = {}
        self.totals = CorpusTotals()
        self._stale: set[str] = set()  # keys of rows to redraw at the next flush_changes

    def _count(self, entry: CorpusEntry, sign: int) -> None:
        self.totals.count_file(entry.source.size, sign)
        if entry.stats is not None:
            self.totals.count_stats(entry.stats, sign)

    def set_stats(self, key: str, stats: CorpusStats) -> CorpusEntry | None:
        """The statistics of ``key``'s file arrived: kept on its entry and in the totals (its row
        is redrawn at the next :meth:`flush_changes`)."""
        row = self._row_of.get(key)
        if row is None:
            return None
        entry = self.entries[row]
        if entry.stats is not None:
            self.totals.count_stats(entry.stats, -1)
        entry.stats = stats
        self.totals.count_stats(stats)
        self._stale.add(key)
        return entry

    def touch(self, key: str) -> None:
        """``key``'s row changed: redrawn at the next :meth:`flush_changes`, with the others."""
        self._stale.add(key)

    def flush_changes(self) -> None:
        """One ``dataChanged`` for the rows touched since the last flush (a signal per file read,
        each a redraw, cost the window more than the reading itself on 100,000 small files)."""
        rows = [self._row_of[k] for k in self._stale if k in self._row_of]
        self._stale.clear()
        if rows:
            self.dataChanged.emit(self.index(min(rows), 0), self.index(max(rows), len(COLUMNS) - 1))

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return COLUMNS[section]
            if role == Qt.ItemDataRole.TextAlignmentRole:
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter) if section in NUMERIC \
                    else int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            if role == Qt.ItemDataRole.ToolTipRole and section == 5:
                return "Distinct pieces after the GPT-2 pre-tokenizer split (per file)"
            if role == Qt.ItemDataRole.ToolTipRole and section == 4:
                return "Text lines of a plain-text file; records (JSON lines, CSV/TSV rows, table rows) otherwise"
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        # A repaint asks each visible cell for ~10 roles; most are none of ours and return at once,
        # and a row's texts are made once per change of its file (see _texts), not per paint.
        if role not in _ROLES or not index.isValid():
            return None
        e = self.entries[index.row()]
        col = index.column()
        if role == _DISPLAY:
            return self._texts(e)[col]
        st = e.stats
        if role == _TOOLTIP:
            if col == 0:
                return str(e.source.path)
            if col == 7 and st is not None and st.skipped:
                more = st.skipped - len(st.skipped_at)
                return "\n".join([*st.skipped_at] + ([f"… and {more:,} more"] if more > 0 else []))
            if col == 6 and st is not None:
                total = sum(st.scripts.values()) or 1
                return "\n".join(f"{k}: {v:,} ({100 * v / total:.1f}%)" for k, v in st.scripts.items())
        elif role == _ALIGN:
            return _RIGHT if col in NUMERIC else None
        elif role == _DECORATION and col == 7:
            if st is not None:
                return style.status_icon("finished" if st.complete and not st.skipped else "cancelled", 14)
            if e.state == "cancelled":
                return style.status_icon("cancelled", 14)
        elif role == _FOREGROUND and col == 7 and st is None:
            return style.muted()
        return None

    @staticmethod
    def _texts(e: CorpusEntry) -> tuple[str, ...]:
        """The row's eight texts, made again only when its statistics, state or progress changed."""
        st = e.stats
        stamp = (st, e.state, e.done)
        kept = e.texts
        if kept is not None and kept[0] == stamp:
            return kept[1]
        path = e.source.path  # a location shows where it is kept: s3://…/part-000.jsonl.zst
        head = (f"{path.protocol}://…/{path.name}" if isinstance(path, RemotePath) else path.name,
                e.format_text(), text.human_bytes(e.source.size))
        if st is None:
            status = {"queued": "waiting", "cancelled": "not read (cancelled)"}.get(
                e.state, f"reading {100 * e.done // max(e.source.size, 1)}%")
            cells = (*head, "", "", "", "", status)
        else:
            state = "read" if st.complete else "partly read (cancelled)"
            if st.skipped:
                state += f" · {text.count(st.skipped)} bad record{'s' if st.skipped != 1 else ''} skipped"
            cells = (*head, text.count(st.chars), lines_or_records(st), text.count(st.distinct_pretokens),
                     text.script_mix(st.scripts), state)
        e.texts = (stamp, cells)
        return cells

    # ---- updates -------------------------------------------------------------------------------
    def add(self, entry: CorpusEntry) -> bool:
        if entry.key in self._row_of:
            row = self._row_of[entry.key]
            self._count(self.entries[row], -1)
            self.entries[row] = entry
            self._count(entry, 1)
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
            return False
        row = len(self.entries)
        self.beginInsertRows(QModelIndex(), row, row)
        self.entries.append(entry)
        self._row_of[entry.key] = row
        self._count(entry, 1)
        self.endInsertRows()
        return True

    def add_many(self, entries: Sequence[CorpusEntry]) -> None:
        """:meth:`add` for many entries: the new ones appended in one ``beginInsertRows``."""
        new: dict[str, CorpusEntry] = {}
        for entry in entries:
            if entry.key in self._row_of:
                self.add(entry)
            else:
                new[entry.key] = entry
        if not new:
            return
        first = len(self.entries)
        self.beginInsertRows(QModelIndex(), first, first + len(new) - 1)
        for offset, (key, entry) in enumerate(new.items()):
            self.entries.append(entry)
            self._row_of[key] = first + offset
            self._count(entry, 1)
        self.endInsertRows()

    def insert(self, row: int, entry: CorpusEntry) -> None:
        """Put ``entry`` back at ``row`` (undo of a removal); a key already present is left alone."""
        if entry.key in self._row_of:
            return
        row = max(0, min(row, len(self.entries)))
        self.beginInsertRows(QModelIndex(), row, row)
        self.entries.insert(row, entry)
        self._row_of = {e.key: i for i, e in enumerate(self.entries)}
        self._count(entry, 1)
        self.endInsertRows()

    def entry(self, key: str) -> CorpusEntry | None:
        row = self._row_of.get(key)
        return self.entries[row] if row is not None else None

    def changed(self, key: str) -> None:
        row = self._row_of.get(key)
        if row is not None:
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def remove(self, keys: Sequence[str]) -> None:
        """Remove the rows of ``keys``, a run of adjacent rows at a time (linear in the rows: removing
        100,000 one by one, renumbering after each, blocked the window for minutes)."""
        row_of = self._row_of  # a local: an attribute of a Qt object is slow to look up 100,000 times
        rows = sorted({row_of[k] for k in keys if k in row_of}, reverse=True)
        if not rows:
            return
        if len(rows) == len(self.entries):
            self.clear()
            return
        i = 0
        while i < len(rows):
            last = first = rows[i]
            while i + 1 < len(rows) and rows[i + 1] == first - 1:
                i += 1
                first = rows[i]
            self.beginRemoveRows(QModelIndex(), first, last)
            for entry in self.entries[first:last + 1]:
                self._count(entry, -1)
            del self.entries[first:last + 1]
            self.endRemoveRows()
            i += 1
        self._row_of = {e.key: i for i, e in enumerate(self.entries)}

    def clear(self) -> None:
        self.take_all()

    def take_all(self) -> list[CorpusEntry]:
        """Remove every row; returns their entries, in order (the list itself: no copy of 100,000)."""
        self.beginResetModel()
        taken, self.entries = self.entries, []
        self._row_of = {}
        self.totals = CorpusTotals()
        self.endResetModel()
        return taken


class _Held(QWidget):
    """Holds one label whose text changes while a scan runs, so that the change is not a layout
    of the whole window: a ``QLabel.setText`` invalidates its parent's layout, and each layout's
    activation tells its own parent in turn, up to the main window, whose dock layout then gave
    every dock a geometry animation (~650 main-window layouts while 100,000 files were read, each
    in a turn with a paint). This widget has no layout: the label's request ends here, and the
    label is given this widget's whole rectangle. Its size hint is the label's, read when the
    surrounding layout is laid out for other reasons; with ``widest``, as wide as that text (and
    the label's minimum width), not as the text of the moment."""

    def __init__(self, label: QLabel, name: str, widest: str | None = None):
        super().__init__()
        self.setAccessibleName(name)
        self.label = label
        self.widest = widest
        label.setParent(self)
        self.setSizePolicy(label.sizePolicy())

    def _hint(self, hint: QSize) -> QSize:
        if self.widest is None:
            return hint
        m = self.label.contentsMargins()
        width = self.label.fontMetrics().horizontalAdvance(self.widest) + m.left() + m.right() + 2
        return QSize(max(width, self.label.minimumWidth()), hint.height())

    def sizeHint(self) -> QSize:  # noqa: N802
        return self._hint(self.label.sizeHint())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self._hint(self.label.minimumSizeHint())

    def resizeEvent(self, event) -> None:  # noqa: N802
        self.label.setGeometry(self.rect())


@dataclass(frozen=True)
class _Removed:
    """Rows one removal took, for Undo: their entries and where they were (``rows`` None: every
    row, in order — Clear keeps the model's own list rather than a pair per row)."""

    rows: list[int] | None
    entries: list[CorpusEntry]

    def __len__(self) -> int:
        return len(self.entries)

    def pairs(self) -> list[tuple[int, CorpusEntry]]:
        """(row, entry) in row order, as Undo puts them back."""
        if self.rows is None:
            return list(enumerate(self.entries))
        return sorted(zip(self.rows, self.entries), key=lambda pair: pair[0])


class CorpusPanel(QWidget):
    """Add, scan, preview and refuse corpus files. ``files()`` is what a training run reads."""

    corpus_changed = Signal()        # files added/removed or statistics arrived
    scan_started = Signal()
    scan_finished = Signal()         # every queued job is done (or cancelled)
    file_rejected = Signal(str)      # the one-line message
    message = Signal(str)            # a status-bar line (bad records skipped, files removed)
    train_requested = Signal()       # "Go to Train": the window shows its Train tab (no import of it here)

    def __init__(self, settings: AppSettings | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.settings = settings or AppSettings()
        self.setAcceptDrops(True)
        self.option_chooser: Callable[[str, str, list[str], str | None], str | None] = self._ask_option
        self.location_asker: Callable[[], str | None] = self._ask_location  # tests answer without a dialog
        self._jobs: set[int] = set()
        self._scan_keys: dict[str, int] = {}   # key → size, for the files of running jobs
        self._scan_total = 0  # their bytes (the sum of _scan_keys), and of those the bytes read: a file
        self._scan_read = 0   # removed meanwhile counts as read; kept up to date per event, not summed
        self._scan_started = 0.0
        self._scan_done_start = 0
        self._rejected: list[str] = []
        self._record_level = 0  # how many of them a bad record refused (a message with a line number)
        # Refused files reach their list in batches (ui/jobs.feed_in_batches), not one redraw each:
        # (path, message, encoding, bad record) not listed yet, and the generation of the feed
        # under way (0: none; clear() stops it).
        self._rejected_queue: list[tuple[str, str, str, bool]] = []
        self._rejected_feed = 0
        self._rejected_feeds = 0
        self._failed_keys: list[str] = []  # files refused while read, whose rows go at the next redraw
        self._preview_key: str | None = None  # the file the preview shows, and whether it is to be
        self._preview_due = False              # shown again (its statistics arrived)
        self._keys_cache: dict[tuple[str, ...], frozenset[str]] = {}  # see _keys_of
        self.on_bad_record = "fail"       # for files added from now on (the "Bad records" choice)
        self._undo: list[_Removed] = []  # removals, newest last
        # Per-file scan events only mark the totals stale; they are redrawn (and corpus_changed sent)
        # at most every 100 ms and when a scan ends. Redrawing them for each of 100,000 files — each
        # redraw a pass over all files, here and in the Train tab — blocked the window for minutes.
        self.lister = JobRunner(self, max_threads=1)  # a long project listing, read off the GUI thread
        self._listing = 0  # the generation of the project listing under way (0: none); a newer one stops it
        self._listings = 0
        self._pending = QTimer(self)
        self._pending.setSingleShot(True)
        self._pending.setInterval(100)
        self._pending.timeout.connect(self._flush)
        # The redraw is a step that can wait a turn while a scan runs (turns.room): it (the totals,
        # the other tabs told) landed in the same turn as a batch of rows or reports and the paint.
        self._flush_due = QTimer(self)
        self._flush_due.setSingleShot(True)
        self._flush_due.setInterval(0)
        self._flush_due.timeout.connect(self._flush)

        from workbench.ui.corpus.scan import gpt2_findall

        self._worker = CorpusScanWorker(gpt2_findall())
        self._worker.files_added.connect(self._on_files_added)
        self._worker.files_rejected.connect(self._on_files_rejected)
        self._worker.file_reports.connect(self._on_file_reports)
        # The scan's reports wait here and are taken a few ms of the window's thread at a time, in
        # turns with room (turns.room): two or three signals of ~300 reports landed in one turn
        # with the table's repaint (issue 26: never more than a frame).
        self._reports: deque[tuple] = deque()
        self._report_timer = QTimer(self)
        self._report_timer.setSingleShot(True)
        self._report_timer.setInterval(0)
        self._report_timer.timeout.connect(self._timed_reports)
        self._worker.file_failed.connect(self._on_file_failed)
        self._worker.job_finished.connect(self._on_job_finished)
        self._thread = ScanThread(self._worker)

        self.model = CorpusTableModel(self)
        self.model.rowsAboutToBeRemoved.connect(self._on_rows_leaving)
        self.model.modelAboutToBeReset.connect(self._on_all_rows_leaving)
        self._build()
        self._update_view()

    # ---- layout --------------------------------------------------------------------------------
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 6)
        bar = QHBoxLayout()
        self.add_files_button = QPushButton(self.style().standardIcon(QStyle.StandardPixmap.SP_FileIcon), "Add files…")
        self.add_files_button.setToolTip(f"Add corpus files ({SUPPORTED})  ·  Ctrl+Shift+O")
        self.add_files_button.clicked.connect(lambda _c=False: self.choose_files())
        self.add_folder_button = QPushButton(self.style().standardIcon(QStyle.StandardPixmap.SP_DirIcon), "Add folder…")
        self.add_folder_button.clicked.connect(lambda _c=False: self.choose_folder())
        self.add_location_button = QPushButton(self.style().standardIcon(QStyle.StandardPixmap.SP_DriveNetIcon),
                                               "Add location…")
        self.add_location_button.setToolTip("Add files from a bucket, the Hub or the web by URL: s3://…, gs://…, "
                                            "hf://datasets/…, https://… (a * pattern adds every matching shard)")
        self.add_location_button.clicked.connect(lambda _c=False: self.choose_location())
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Remove the selected files from the corpus (Delete)")
        self.remove_button.clicked.connect(lambda _c=False: self.remove_selected())
        self.clear_button = QPushButton("Clear")
        self.clear_button.clicked.connect(lambda _c=False: self.clear())
        for b in (self.add_files_button, self.add_folder_button, self.add_location_button, self.remove_button,
                  self.clear_button):
            bar.addWidget(b)
        bar.addSpacing(12)
        policy_label = QLabel("Bad &records:")
        self.policy_combo = QComboBox()
        self.policy_combo.setObjectName("badRecordPolicy")
        for key, label in POLICY_LABELS.items():
            self.policy_combo.addItem(label, key)
        self.policy_combo.setAccessibleName("Bad records")
        self.policy_combo.setToolTip("A JSON line that does not parse, a CSV row without the text column, a count "
                                     "line without a number:\nreject the whole file (naming the line), or skip such "
                                     "records and report how many and where.")
        policy_label.setBuddy(self.policy_combo)
        self.policy_combo.currentIndexChanged.connect(self._on_policy_changed)
        bar.addWidget(policy_label)
        bar.addWidget(self.policy_combo)
        bar.addStretch(1)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        self.progress.setMinimumWidth(160)
        self.progress.setMaximumWidth(280)
        self.progress.setAccessibleName("Reading progress")
        self.rate_label = QLabel()
        self.rate_label.setMinimumWidth(140)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop reading (files read so far keep their statistics)")
        self.cancel_button.clicked.connect(lambda _c=False: self.cancel_scan())
        self._rate_held = _Held(self.rate_label, "Reading rate", "Reading 999.9 MB/s")
        for w in (self._rate_held, self.progress, self.cancel_button):
            bar.addWidget(w)
        # The row asks the window for no width of its own: with the reading progress shown it was
        # wider than a 1,200-px window, which grew by a few pixels whenever a project's files
        # were read (and repainted whole, ~25 ms); on a narrower window its right end is cut instead.
        toolbar = QWidget()
        toolbar.setLayout(bar)
        toolbar.setMinimumWidth(1)
        bar.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(toolbar)
        layout.addWidget(self._build_notices())

        self.stack = QStackedWidget()
        self.empty = EmptyState(
            "Drop corpus files or folders here",
            "Plain text, source code and markup, JSON lines, CSV/TSV, Parquet and Arrow (with pyarrow) and "
            "word-count tables (word<TAB>count), optionally .gz or .zst; or a location (s3://, gs://, hf://, "
            "https://). Files are read in the background; nothing is copied into the project.", symbol="⇣")
        self.empty.add_button("Add files…", self.choose_files, primary=True)
        self.empty.add_button("Add folder…", self.choose_folder)
        self.empty.add_button("Add location…", self.choose_location)
        self.empty.add_button("Use the demo corpus", self.add_demo)
        self.empty.setAccessibleName("No corpus files yet")
        self.stack.addWidget(self.empty)

        content = QWidget()
        cl = QVBoxLayout(content)
        cl.setContentsMargins(0, 0, 0, 0)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("corpusSplitter")
        self.splitter.setChildrenCollapsible(False)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.setAccessibleName("Corpus files")
        self.table.setTabKeyNavigation(False)  # Tab leaves the table for the next control
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for col, width in enumerate((200, 130, 80, 100, 125, 145, 200, 200)):
            self.table.setColumnWidth(col, width)
        self.table.selectionModel().selectionChanged.connect(self._show_preview)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._table_menu)
        delete = QAction("Remove", self.table)
        delete.setShortcut(QKeySequence.StandardKey.Delete)
        delete.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        delete.triggered.connect(lambda _c=False: self.remove_selected())
        self.table.addAction(delete)
        undo = QAction("Undo remove", self)
        undo.setShortcut(QKeySequence.StandardKey.Undo)
        undo.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        undo.triggered.connect(lambda _c=False: self.undo_remove())
        self.addAction(undo)
        tl.addWidget(self.table)
        self.totals = QLabel()
        self.totals.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.totals.setContentsMargins(4, 2, 4, 2)
        tl.addWidget(_Held(self.totals, "Corpus totals"))
        self.splitter.addWidget(top)

        bad = QWidget()
        bl = QVBoxLayout(bad)
        bl.setContentsMargins(0, 4, 0, 0)
        row = QHBoxLayout()
        self.rejected_label = QLabel()
        row.addWidget(self.rejected_label)
        row.addStretch(1)
        self.retry_button = QPushButton("Retry with encoding…")
        self.retry_button.setEnabled(False)
        self.retry_button.clicked.connect(lambda _c=False: self.retry_selected())
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.clicked.connect(lambda _c=False: self.dismiss_rejected())
        row.addWidget(self.retry_button)
        row.addWidget(self.dismiss_button)
        bl.addLayout(row)
        self.rejected_list = QListWidget()
        self.rejected_list.setWordWrap(True)
        # Wrapped lines have each their height, measured for every item on each layout: 5,000
        # refused files made every redraw of the window ~0.1 s. Laid out 200 items a turn instead.
        self.rejected_list.setLayoutMode(QListView.LayoutMode.Batched)
        self.rejected_list.setBatchSize(200)
        self.rejected_list.setAccessibleName("Files not loaded")
        self.rejected_list.setIconSize(QSize(16, 16))
        self.rejected_list.setMinimumHeight(90)
        self.rejected_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.rejected_list.itemSelectionChanged.connect(self._rejected_selection)
        self.rejected_list.itemDoubleClicked.connect(lambda _item: self.retry_selected())
        bl.addWidget(self.rejected_list)
        self.rejected_box = bad
        self.splitter.addWidget(bad)

        pv = QWidget()
        pl = QVBoxLayout(pv)
        pl.setContentsMargins(0, 4, 0, 0)
        self.preview_label = QLabel("Preview")
        pl.addWidget(self.preview_label)
        self.preview = QPlainTextEdit()
        self.preview.setReadOnly(True)
        self.preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.preview.setFont(style.monospace_font())
        self.preview.setPlaceholderText("Select a file to see its first lines.")
        self.preview.setAccessibleName("Preview of the selected file")
        self.preview.setTabChangesFocus(True)
        pl.addWidget(self.preview)
        self.splitter.addWidget(pv)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setStretchFactor(2, 2)
        cl.addWidget(self.splitter)
        self.stack.addWidget(content)
        layout.addWidget(self.stack)
        state = self.settings.splitter_state("corpus")
        if not state.isEmpty():
            self.splitter.restoreState(state)
        self.splitter.splitterMoved.connect(lambda *_: self.settings.set_splitter_state("corpus", self.splitter.saveState()))

    def _build_notices(self) -> QWidget:
        """One line under the toolbar: what to do next, what was skipped, or Undo for a removal."""
        box = QWidget()
        box.setObjectName("corpusNotice")
        row = QHBoxLayout(box)
        row.setContentsMargins(4, 2, 4, 2)
        self.notice_label = QLabel()
        self.notice_label.setWordWrap(True)
        self.notice_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.undo_button = QPushButton("&Undo remove")
        self.undo_button.setToolTip("Put the removed files back, with their statistics (Ctrl+Z)")
        self.undo_button.clicked.connect(lambda _c=False: self.undo_remove())
        self.train_button = QPushButton("Go to &Train →")
        self.train_button.setToolTip("Show the Train tab (F5 trains with its current settings)")
        self.train_button.clicked.connect(lambda _c=False: self.train_requested.emit())
        row.addWidget(self.notice_label, 1)
        row.addWidget(self.undo_button)
        row.addWidget(self.train_button)
        self.notice_box = box
        self._notice_kind = ""  # "" | "removed" (else: what to do next, when files are loaded)
        self._notice_text = ""
        return box

    # ---- public API ------------------------------------------------------------------------------
    def files(self) -> list[CorpusFile]:
        """The loaded files, in the order added."""
        return [e.corpus_file() for e in self.model.entries]

    def entries(self) -> list[CorpusEntry]:
        return list(self.model.entries)

    def has_files(self) -> bool:
        """Whether any file is loaded (asked after each scan report: no list of 100,000 is built)."""
        return bool(self.model.entries)

    def rejected_messages(self) -> list[str]:
        return list(self._rejected)

    def total_chars(self, paths: Sequence[str] | None = None) -> int | None:
        """Characters of the given files (all loaded files by default); None if one is unknown.

        Asked for each plotted run after each scan report: all files is the model's running sum,
        and a run's files are looked up by key (their keys kept per list of paths), stopping at the
        first unread one — never a walk over 100,000 files, nor 100,000 paths parsed, per report."""
        if paths is None:
            return self.model.totals.complete_chars()
        total = 0
        for key in self._keys_of(paths):
            e = self.model.entry(key)
            if e is None or e.stats is None or not e.stats.complete:
                return None
            total += e.stats.chars
        return total

    def _keys_of(self, paths: Sequence[str]) -> frozenset[str]:
        """The table's keys of ``paths`` (a few lists kept: the same runs ask again and again)."""
        wanted = tuple(paths)
        keys = self._keys_cache.pop(wanted, None)
        if keys is None:
            keys = frozenset(stored_path(corpus_path(p)) for p in wanted)
        self._keys_cache[wanted] = keys
        while len(self._keys_cache) > 8:
            del self._keys_cache[next(iter(self._keys_cache))]
        return keys

    def sample_line(self) -> str:
        """A first non-blank line of the selected (or first) file, for the pre-tokenizer preview."""
        entries = [self.model.entries[i.row()] for i in self.table.selectionModel().selectedRows()] or self.model.entries
        for e in entries[:SAMPLE_FILES]:  # asked after each scan report: never a walk over 100,000 files
            if e.stats:
                for line in e.stats.preview:
                    if len(line.strip()) > 12:
                        return line.strip()[:300]
        return ""

    def is_scanning(self) -> bool:
        """Files are being listed, checked or read (or the refused ones listed)."""
        return (bool(self._jobs) or self._listing != 0 or self._rejected_feed != 0 or bool(self._rejected_queue)
                or bool(self._reports))

    def listing(self) -> bool:
        """Whether a project's corpus files are still being listed (:meth:`list_project`)."""
        return self._listing != 0

    def add_paths(self, paths: Sequence[str | Path], *, field: str | None = None, column: str | None = None,
                  encoding: str | None = None, prompt: bool = True, kind: str | None = None,
                  on_bad_record: str | None = None) -> int | None:
        """Validate and scan ``paths`` in the background; returns the job id (None if the user cancelled).

        ``kind`` reads them as that kind whatever their names say; ``on_bad_record`` defaults to the
        tab's "Bad records" choice."""
        paths = [str(p) for p in paths]
        if not paths:
            return None
        if prompt and kind is None and (field is None or column is None):
            firsts = first_files(paths, {"jsonl", "csv", "tsv", "parquet", "arrow"})
            for first_kind, first in firsts.items():
                if (first_kind == "jsonl" and field is not None) or (first_kind != "jsonl" and column is not None):
                    continue
                found = option_candidates(first)
                if not found or len(found[1]) <= 1:
                    continue
                what, candidates, default = found
                choice = self.option_chooser(what, str(first), candidates, default)
                if choice is None:
                    return None
                if what == "field":
                    field = choice
                else:
                    column = choice
        job = self._worker.submit(paths, field=field, column=column, encoding=encoding, kind=kind,
                                  on_bad_record=on_bad_record or self.on_bad_record)
        if not self._jobs:
            self._scan_started = time.monotonic()
            self._scan_done_start = 0
            self._clear_scan_keys()
            self.scan_started.emit()
        self._jobs.add(job)
        self.remember_folder(paths[0])
        self._update_view()
        return job

    def add_demo(self) -> None:
        from workbench.corpus import demo_corpus_files

        try:
            self.add_paths(demo_corpus_files())
        except WorkbenchError as exc:
            self._on_file_rejected(0, "demo", str(exc))

    def set_files(self, items: Sequence[tuple[str, dict]]) -> None:
        """Replace the corpus with project files, each with its stored reader options."""
        self._stop_listing()
        self.clear()
        self._undo.clear()
        self._add_project_files(items)

    def _add_project_files(self, items: Sequence[tuple[str, dict]]) -> None:
        groups: dict[tuple, list[str]] = {}
        named: dict[str, str | None] = {}  # a name's endings → the kind they say (one look per ending)
        for path, options in items:
            # The kind is given again only where the name does not say it (sniffed or chosen).
            name = os.path.basename(path)
            ending = name[name.find("."):].lower() if "." in name else ""
            if ending not in named:
                named[ending] = detect_kind(PurePath("x" + ending))[0]
            kind = options.get("kind") if named[ending] != options.get("kind") else None
            key = (options.get("field"), options.get("column"), options.get("encoding"), kind,
                   options.get("on_bad_record") or "fail")
            groups.setdefault(key, []).append(path)
        for (field, column, encoding, kind, policy), paths in groups.items():
            self.add_paths(paths, field=field, column=None if column is None else str(column), encoding=encoding,
                           prompt=False, kind=kind, on_bad_record=policy)

    # ---- a long project listing: read off the GUI thread, added in batches, stopped by a newer one ----
    def list_project(self, project: str | Path) -> None:
        """:meth:`set_files` for a project of many corpus files: its rows are read on a worker's
        connection and added a few ms of the window's thread at a time (at most ``LIST_BATCH``),
        the event loop running between batches (each batch is one scan job). Another project,
        :meth:`set_files` or :meth:`clear` stops it."""
        from workbench.tasks.compare_files import project_corpus_files

        self._stop_listing()
        self.clear()
        self._undo.clear()
        self._listings += 1
        self._listing = generation = self._listings
        self._update_view()

        def done(corpora: list[tuple[str, dict]]) -> None:
            feed_in_batches(corpora, self._add_project_files, lambda: self._listing == generation,
                            lambda: self._end_listing(generation))

        def failed(message: str) -> None:
            if self._listing == generation:
                self._end_listing(generation)
                self._on_file_rejected(0, str(project), message)

        self.lister.submit(lambda: project_corpus_files(project), done, failed, key="listing")

    def _end_listing(self, generation: int) -> None:
        if self._listing == generation:
            self._listing = 0
            self._update_view()
            self._scan_done_when_idle()

    def _stop_listing(self) -> None:
        self.lister.cancel()
        self._listing = 0

    def cancel_scan(self) -> None:
        self._worker.cancel()

    def remove_selected(self) -> None:
        """Remove the selected files; Undo (Ctrl+Z or the button) puts them back with their statistics."""
        rows = sorted(i.row() for i in self.table.selectionModel().selectedRows())
        self._remove_rows(rows)

    def _remove_rows(self, rows: Sequence[int]) -> None:
        if not rows:
            return
        self._settle_reports()  # their statistics read so far go with them (Undo puts them back)
        entries = self.model.entries  # a local: an attribute of a Qt object is slow to look up per row
        removed: _Removed
        if len(rows) == len(entries):  # every row (Clear): no pair per row (100,000 took ~0.1 s)
            removed = _Removed(None, self.model.take_all())
        else:
            taken = [entries[row] for row in rows]
            removed = _Removed(list(rows), taken)
            self.model.remove([e.key for e in taken])
        self._show_preview()  # the preview must not go on showing a file that is gone
        self._undo.append(removed)
        del self._undo[:-20]
        names = ", ".join(e.source.path.name for e in removed.entries[:3]) + (" …" if len(removed) > 3 else "")
        self._show_notice("removed", f"Removed {len(removed)} file{'s' if len(removed) != 1 else ''}: {names}.")
        self.message.emit(f"Removed {len(removed)} corpus file{'s' if len(removed) != 1 else ''} — Ctrl+Z puts "
                          f"{'them' if len(removed) != 1 else 'it'} back.")
        self._changed()

    def undo_remove(self) -> bool:
        """Put the most recently removed files back where they were; False when there is nothing to undo."""
        if not self._undo:
            return False
        for row, entry in self._undo.pop().pairs():
            if entry.stats is None and entry.state in ("queued", "reading"):
                entry.state = "cancelled"  # its scan was dropped with it; the row says so
            self.model.insert(row, entry)
        self._show_preview()
        self._notice_kind = ""
        self.message.emit("Removal undone.")
        self._changed()
        return True

    def clear(self) -> None:
        """Remove every file (undoable) and the list of refused files."""
        self._settle_reports()
        self._stop_listing()
        if self.is_scanning():
            self._worker.cancel()
        feeding = self._rejected_feed != 0 or bool(self._rejected_queue)
        if self._failed_keys:  # refused files are not put back by Undo
            keys, self._failed_keys = self._failed_keys, []
            self.model.remove(keys)
        self._remove_rows(list(range(len(self.model.entries))))
        self._clear_rejected()
        self.preview.clear()
        self._changed()
        if feeding:  # a scan waiting for its refused files to be listed ends now
            self._scan_done_when_idle()

    def set_kind(self, key: str, kind: str) -> int | None:
        """Read a loaded file as ``kind`` (the "Read as" menu): it is checked and scanned again."""
        self._settle_reports()
        e = self.model.entry(key)
        if e is None or kind not in KINDS or kind == e.source.kind:
            return None
        self.model.remove([key])
        self._changed()
        return self.add_paths([str(e.source.path)], kind=kind, encoding=e.source.encoding, prompt=False,
                              on_bad_record=e.source.on_bad_record)

    @Slot(int)
    def _on_policy_changed(self, _index: int) -> None:
        """A new bad-record choice applies to every loaded file, and files refused for a bad
        record (a message with a line number) are tried again under it."""
        policy = self.policy_combo.currentData() or "fail"
        if policy == self.on_bad_record:
            return
        self.on_bad_record = policy
        for e in self.model.entries:
            e.source = e.source.with_policy(policy)
        self._settle_rejected()
        retry = []
        for i in reversed(range(self.rejected_list.count())):
            item = self.rejected_list.item(i)
            if item.data(Qt.ItemDataRole.UserRole + 2):
                retry.append(str(item.data(Qt.ItemDataRole.UserRole)))
                self._drop_rejected(item)
        if retry:
            self.add_paths(list(reversed(retry)), prompt=False)
        self._changed()

    def choose_files(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(self, "Add corpus files", self.settings.last_folder, FILE_FILTER)
        if names:
            self.add_paths(names)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a corpus folder", self.settings.last_folder)
        if folder:
            self.add_paths([folder])

    def choose_location(self) -> None:
        """Ask for a URL (a file, a folder or a * pattern of shards) and add what it names."""
        url = (self.location_asker() or "").strip()
        if not url:
            return
        try:
            check_url(url)
            self.settings.last_location = url  # remembered only when it carries no secret
        except WorkbenchError:
            pass  # adding it lists why it is refused
        self.add_paths([url])

    def location_dialog(self) -> QInputDialog:
        """The "Add a location" dialog, not yet shown (its text: the last location added)."""
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Add a location")
        dialog.setLabelText(
            "URL of a file, a folder or a pattern of shards:\n"
            "s3://bucket/shards/*.jsonl.zst   gs://bucket/data/   hf://datasets/org/name/data/*.parquet   "
            "https://host/corpus.txt.gz\n\n"
            "Credentials come from the usual environment and config files (AWS_PROFILE, "
            "GOOGLE_APPLICATION_CREDENTIALS, HF_TOKEN);\nthe project stores only the URL.")
        dialog.setTextValue(self.settings.last_location)
        dialog.setOkButtonText("Add")
        return dialog

    def _ask_location(self) -> str | None:
        dialog = self.location_dialog()
        ok = dialog.exec() == QInputDialog.DialogCode.Accepted
        return dialog.textValue() if ok else None

    def retry_selected(self) -> None:
        items = self.rejected_list.selectedItems()
        if not items:
            return
        item = items[0]
        path = item.data(Qt.ItemDataRole.UserRole)
        suggested = item.data(Qt.ItemDataRole.UserRole + 1) or "utf-8"
        encoding, ok = QInputDialog.getText(self, "Read with another encoding",
                                            f"Encoding for {Path(path).name}:", text=suggested)
        if ok and encoding.strip():
            self._drop_rejected(item)
            self.add_paths([path], encoding=encoding.strip())

    def dismiss_rejected(self) -> None:
        self._settle_rejected()
        selected = self.rejected_list.selectedItems()
        if not selected or len(selected) == self.rejected_list.count():
            self._clear_rejected()
        for item in selected:
            self._drop_rejected(item)
        self._update_view()

    def remember_folder(self, path: str | Path) -> None:
        if is_url(str(path)):
            return  # a location is no folder of this disk
        p = Path(path)
        folder = str(p if p.is_dir() else p.parent)
        if self.settings.last_folder != folder:  # each write is a rewrite of the settings file, ~1 ms:
            self.settings.last_folder = folder   # a project's 100,000 files are added a batch a turn

    def shutdown(self) -> None:
        self._stop_listing()
        self._report_timer.stop()
        self._flush_due.stop()
        self._reports.clear()
        self.lister.shutdown()
        self._thread.shutdown()

    # ---- worker reports (GUI thread) ---------------------------------------------------------------
    @Slot(int, object)
    def _on_files_added(self, job_id: int, added: object) -> None:
        """A batch of a job's files, checked and not read yet: queued with the reports (in their
        order: a file's row comes before its reports) and listed in a turn with room."""
        assert isinstance(added, list)
        self._queue_report(("added", job_id, added))

    def _list_added(self, job_id: int, added: list) -> None:
        """List a batch of ``files_added`` (one insertion), then let the worker send the next."""
        self._worker.listed()  # the worker sends the next batch now: it lands in a later turn of the event loop
        if self._worker.cancelled(job_id):  # sent before a clear or another project: never listed
            return
        for key, _src in added:
            if key in self._scan_keys:  # read again (another kind, field or column): start it afresh
                before = self.model.entry(key)
                self._scan_total -= self._scan_keys[key]
                self._scan_read -= before.done if before is not None else self._scan_keys[key]
        self.model.add_many([CorpusEntry(key, src, state="queued") for key, src in added])
        for key, src in added:
            self._scan_keys[key] = src.size
            self._scan_total += src.size
        self._later()

    @Slot(int, object)
    def _on_files_rejected(self, job_id: int, items: object) -> None:
        """A batch of refused files from the scan (``REJECTED_BATCH`` a signal, each in a turn of
        the event loop of its own: the worker sends the next once this one is taken)."""
        assert isinstance(items, list)
        self._worker.listed()
        for path, message, encoding, bad_record in items:
            self._on_file_rejected(job_id, path, message, encoding, bad_record)

    def _on_file_rejected(self, job_id: int, path: str, message: str, encoding: str = "",
                          bad_record: bool = False) -> None:
        if self._worker.cancelled(job_id):
            return
        self._rejected.append(message)
        self._record_level += bool(RECORD_AT.search(message))
        self._rejected_queue.append((path, message, encoding, bad_record))
        self.file_rejected.emit(message)
        if self._jobs or self._listing:
            self._later()  # listed with the others refused meanwhile, at the next redraw
        else:
            self._settle_rejected()
            self._update_view()

    def _feed_rejected(self) -> None:
        """List the refused files queued so far, a few ms of the window's thread per turn
        (``feed_in_batches``); when more arrive meanwhile they follow, then a finished scan is
        announced."""
        if self._rejected_feed or not self._rejected_queue:
            return
        items, self._rejected_queue = self._rejected_queue, []
        self._rejected_feeds += 1
        self._rejected_feed = generation = self._rejected_feeds

        def fed() -> None:
            self._rejected_feed = 0
            self._update_view()
            if self._rejected_queue:
                self._feed_rejected()
            else:
                self._scan_done_when_idle()

        feed_in_batches(items, self._list_rejected, lambda: self._rejected_feed == generation, fed)

    def _list_rejected(self, batch: Sequence[tuple[str, str, str, bool]]) -> None:
        """Append refused files to their list in one insertion (one redraw of the list)."""
        first = self.rejected_list.count()
        self.rejected_list.addItems([message for _path, message, _encoding, _bad in batch])
        icon = self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        for row, (path, message, encoding, bad_record) in enumerate(batch, first):
            item = self.rejected_list.item(row)
            item.setIcon(icon)
            item.setToolTip(message)
            item.setData(Qt.ItemDataRole.UserRole, path)
            if encoding:  # the reader's own suggestion (UnreadableText.encoding), offered by Retry
                item.setData(Qt.ItemDataRole.UserRole + 1, encoding)
            item.setData(Qt.ItemDataRole.UserRole + 2, bad_record)  # retried when bad records may be skipped

    def _settle_rejected(self) -> None:
        """List every queued refused file now (before the list is read or changed by hand)."""
        self._rejected_feed = 0
        items, self._rejected_queue = self._rejected_queue, []
        if items:
            self._list_rejected(items)

    @Slot(object)
    def _on_file_reports(self, reports: list) -> None:
        """A batch of the scan's reports (``CorpusScanWorker.file_reports``), in their order:
        queued, and taken in a later turn with room (see ``_reports``)."""
        self._reports.extend(reports)
        if not self._report_timer.isActive():
            self._report_timer.start()

    def _queue_report(self, report: tuple) -> None:
        self._reports.append(report)
        if not self._report_timer.isActive():
            self._report_timer.start()

    def _timed_reports(self) -> None:
        if turns.room(self._report_timer):
            self._take_reports(FEED_BUDGET_S)

    def _take_reports(self, budget_s: float | None = None) -> None:
        """Take queued reports in order, for ``budget_s`` of the window's thread (all: None); when
        some are left, the rest in a later turn; when none, a scan that ended is done."""
        reports = self._reports
        began = time.thread_time()
        while reports:
            for _ in range(min(25, len(reports))):
                report = reports.popleft()
                what = report[0]
                if what == "scanned":
                    self._on_file_scanned(report[1], report[2])
                elif what == "progress":
                    self._on_file_progress(report[1], report[2], report[3])
                elif what == "added":
                    self._list_added(report[1], report[2])
                    break  # a batch of rows is a few ms of its own: the clock is looked at now
                else:  # "failed"
                    self._file_failed(*report[1:])
            if budget_s is not None and time.thread_time() - began >= budget_s:
                break
        if reports:
            self._report_timer.start()
            return
        self._report_timer.stop()
        self._scan_done_when_idle()

    def _settle_reports(self) -> None:
        """Take every queued report now (before rows are removed, put back or read again)."""
        if self._reports:
            self._take_reports()

    @Slot(str, int, int)
    def _on_file_progress(self, key: str, done: int, total: int) -> None:
        e = self.model.entry(key)
        if e is None:
            return
        if key in self._scan_keys:
            self._scan_read += done - e.done
        e.done = done
        e.state = "reading"
        self.model.touch(key)
        self._later()

    @Slot(str, object)
    def _on_file_scanned(self, key: str, stats: object) -> None:
        e = self.model.entry(key)
        if e is None:
            return
        assert isinstance(stats, CorpusStats)
        if key in self._scan_keys:
            self._scan_read += e.source.size - e.done
        e.done = e.source.size
        e.state = "done" if stats.complete else "cancelled"
        self.model.set_stats(key, stats)
        self._later()
        if key == self._preview_key or self._preview_key is None:
            self._preview_due = True  # shown at the next redraw (not a look at the selection per file)

    @Slot(str, str, str, bool)
    def _on_file_failed(self, key: str, message: str, encoding: str = "", bad_record: bool = False) -> None:
        """A file refused while read: queued behind the reports before it (its row may still be
        in the queue, see ``_on_files_added``)."""
        self._queue_report(("failed", key, message, encoding, bad_record))

    def _file_failed(self, key: str, message: str, encoding: str = "", bad_record: bool = False) -> None:
        e = self.model.entry(key)
        if e is not None:  # its row goes at the next redraw, with the others that failed meanwhile
            self._failed_keys.append(key)
        self._on_file_rejected(0, str(e.source.path) if e else key, message, encoding, bad_record)

    @Slot(int, bool)
    def _on_job_finished(self, job_id: int, cancelled: bool) -> None:
        self._jobs.discard(job_id)
        if cancelled:
            self._settle_reports()  # what was read before the cancel, then the rest marked cancelled
            for e in self.model.entries:
                if e.stats is None and e.state in ("queued", "reading"):
                    e.state = "cancelled"
                    self.model.changed(e.key)
        self._scan_done_when_idle()

    def _scan_done_when_idle(self) -> None:
        """:meth:`_scan_done` once no job runs, no listing is under way, every report is taken and
        every refused file is listed."""
        if self._jobs or self._listing or self._reports:
            return
        if self._rejected_queue or self._rejected_feed:
            self._feed_rejected()  # its end comes back here
            return
        self._scan_done()

    def _scan_done(self) -> None:
        """Every scan job has ended and no project listing is under way."""
        self._pending.stop()
        if self._failed_keys:
            keys, self._failed_keys = self._failed_keys, []
            self.model.remove(keys)
        self._clear_scan_keys()
        if self._notice_kind == "removed":
            self._notice_kind = ""  # new files read: the next thing to say is what to do with them
        self._update_view()
        self._changed()
        skipped, first = self.skipped_records()
        if skipped:
            self.message.emit(f"Skipped {skipped:,} bad record{'s' if skipped != 1 else ''}; first: {first[0]}")
        self.scan_finished.emit()

    # ---- view updates ----------------------------------------------------------------------------
    def _changed(self) -> None:
        self._pending.stop()
        self._flush_due.stop()
        if self._failed_keys:  # one removal for all the files that failed since the last redraw
            keys, self._failed_keys = self._failed_keys, []
            self.model.remove(keys)
        self.model.flush_changes()
        if self._preview_due:
            self._preview_due = False
            self._show_preview()
        self._feed_rejected()
        self._update_progress()
        self._update_view()
        self.corpus_changed.emit()

    def _later(self) -> None:
        """A scan event: redraw the totals and tell the other tabs soon, once for many events."""
        if not self._pending.isActive():
            self._pending.start()

    @Slot()
    def _flush(self) -> None:
        if self.is_scanning() and not turns.room(self._flush_due):
            return  # in a later turn (_flush_due)
        self._changed()
        if self.is_scanning():
            keep_what_is_built()  # the rows a long scan has added so far

    def _clear_scan_keys(self) -> None:
        self._scan_keys.clear()
        self._scan_total = self._scan_read = 0

    @Slot(QModelIndex, int, int)
    def _on_rows_leaving(self, _parent: QModelIndex, first: int, last: int) -> None:
        """Rows about to be removed: a file of the scan counts as read (its bytes are not awaited)."""
        for e in self.model.entries[first:last + 1] if self._scan_keys else ():
            size = self._scan_keys.get(e.key)
            if size is not None:
                self._scan_read += size - e.done

    @Slot()
    def _on_all_rows_leaving(self) -> None:
        self._on_rows_leaving(QModelIndex(), 0, len(self.model.entries) - 1)

    def _update_progress(self) -> None:
        if not self._scan_keys:
            return
        total = self._scan_total or 1
        done = self._scan_read
        # QProgressBar.setValue repaints at once (the bar and what lies under it), a paint of its own
        # beside the window's: with updates off it is drawn with the rest of this turn's changes
        self.progress.setUpdatesEnabled(False)
        self.progress.setValue(int(1000 * min(done, total) / total))
        self.progress.setFormat(f"{100 * done / total:.0f}%  of {text.human_bytes(total)}")
        self.progress.setUpdatesEnabled(True)
        elapsed = max(time.monotonic() - self._scan_started, 1e-3)
        self.rate_label.setText(f"Reading {text.human_bytes(done / elapsed)}/s")

    def _update_view(self) -> None:
        has_files = bool(self.model.entries) or self.rejected_list.count() > 0
        self.stack.setCurrentIndex(1 if has_files else 0)
        scanning = self.is_scanning()
        for w in (self.progress, self.cancel_button, self._rate_held):
            w.setVisible(scanning)
        if scanning and not self._scan_keys:
            self.progress.setRange(0, 0)  # busy: still listing and checking files
        else:
            self.progress.setRange(0, 1000)
        self.remove_button.setEnabled(bool(self.model.entries))
        self.clear_button.setEnabled(has_files)
        n_bad = self.rejected_list.count()
        self.rejected_box.setVisible(n_bad > 0)
        record_level = self.on_bad_record == "fail" and self._record_level > 0
        hint = " · a bad record refused a file: choose <i>Bad records: Skip them and report</i> to load the rest" \
            if record_level else ""
        self.rejected_label.setText(f"<b>Not loaded ({n_bad})</b> — the other files are kept{hint}" if n_bad else "")
        sheet = f"color: {style.error_colour(self.palette()).name()}"
        if self.rejected_label.styleSheet() != sheet:  # setting it again polishes the label again
            self.rejected_label.setStyleSheet(sheet)
        self._update_totals()
        self._update_notice()

    def _show_notice(self, kind: str, message: str) -> None:
        self._notice_kind = kind
        self._notice_text = message
        self._update_notice()

    def skipped_records(self) -> tuple[int, list[str]]:
        """Bad records skipped over the loaded files: how many, and the first few full messages
        (looked for in the files only when some were skipped)."""
        skipped = self.model.totals.skipped
        if not skipped:
            return 0, []
        first: list[str] = []
        for e in self.model.entries:
            if e.stats is not None and e.stats.skipped_at:
                first += e.stats.skipped_at[:5 - len(first)]
                if len(first) >= 5:
                    break
        return skipped, first

    def _update_notice(self) -> None:
        entries = self.model.entries
        scanning = self.is_scanning()
        lines: list[str] = []
        if self._notice_kind == "removed" and self._undo:
            lines.append(self._notice_text)
        elif entries and not scanning:
            size = text.human_bytes(self.model.totals.size)
            lines.append(f"<b>Corpus ready:</b> {len(entries)} file{'s' if len(entries) != 1 else ''}, {size} — "
                         "press F5 or go to Train to train a tokenizer.")
        skipped, first = self.skipped_records() if not scanning else (0, [])
        if skipped:
            import html

            lines.append(f"<b>Skipped {skipped:,} bad record{'s' if skipped != 1 else ''}</b> (Bad records: "
                         f"skip); first:<br>" + "<br>".join(html.escape(m) for m in first))
        self.notice_label.setText("<br>".join(lines))
        self.notice_box.setVisible(bool(lines))
        self.undo_button.setVisible(self._notice_kind == "removed" and bool(self._undo))
        self.train_button.setVisible(bool(entries) and not scanning)

    def _update_totals(self) -> None:
        entries = self.model.entries
        if not entries:
            self.totals.setText("No files loaded." if self.rejected_list.count() else "")
            return
        t = self.model.totals  # kept up to date file by file: a redraw never walks the files
        parts = [f"<b>{len(entries)} file{'s' if len(entries) != 1 else ''}</b>", text.human_bytes(t.size)]
        if t.read:
            prefix = "≥ " if t.partial() else ""
            parts += [f"{prefix}{text.count(t.chars)} characters"]
            if t.line_files:
                parts.append(f"{prefix}{text.count(t.lines)} lines")
            if t.record_files:
                parts.append(f"{prefix}{text.count(t.records)} records")
            parts.append(text.script_mix(dict(t.scripts), limit=4))
        self.totals.setText("Total: " + "  ·  ".join(parts))

    def _selected_key(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.entries[rows[0].row()].key if rows else None

    @Slot()
    def _show_preview(self, *_args) -> None:
        key = self._selected_key()
        e = self.model.entry(key) if key else (self.model.entries[0] if self.model.entries else None)
        self._preview_key = e.key if e is not None else None
        if e is None:
            self.preview_label.setText("Preview")
            self.preview.clear()
            return
        self.preview_label.setText(f"Preview — {e.source.path.name}  ({e.format_text()})")
        if e.stats is None:
            self.preview.setPlainText("")
            self.preview.setPlaceholderText("Reading…" if e.state != "cancelled" else "Not read (cancelled).")
            return
        width = len(str(len(e.stats.preview)))
        self.preview.setPlainText("\n".join(f"{i:>{width}}  {line}" for i, line in enumerate(e.stats.preview, 1)))

    def _rejected_selection(self) -> None:
        items = self.rejected_list.selectedItems()
        self.retry_button.setEnabled(bool(items))
        if items:
            hint = items[0].data(Qt.ItemDataRole.UserRole + 1)
            self.retry_button.setText(f"Retry as {hint}…" if hint else "Retry with encoding…")

    def _drop_rejected(self, item: QListWidgetItem) -> None:
        row = self.rejected_list.row(item)
        if row >= 0:
            message = item.text()
            self.rejected_list.takeItem(row)
            if message in self._rejected:
                self._rejected.remove(message)
                self._record_level -= bool(RECORD_AT.search(message))

    def _clear_rejected(self) -> None:
        """Empty the list of refused files (and stop listing them)."""
        self._rejected_queue.clear()
        self._rejected_feed = 0
        self.rejected_list.clear()
        self._rejected.clear()
        self._record_level = 0

    def _table_menu(self, pos) -> None:
        menu = QMenu(self)
        menu.addAction("Remove", self.remove_selected)
        entries = [self.model.entries[i.row()] for i in self.table.selectionModel().selectedRows()]
        if len(entries) == 1:
            read_as = menu.addMenu("Read &as")
            key = entries[0].key
            for kind in KINDS:
                action = read_as.addAction(KIND_LABELS[kind], partial(self.set_kind, key, kind))
                action.setCheckable(True)
                action.setChecked(kind == entries[0].source.kind)
        if len(entries) == 1 and entries[0].source.kind in ("jsonl", "csv", "tsv", "parquet", "arrow"):
            e = entries[0]
            what = "field" if e.source.kind == "jsonl" else "column"
            menu.addAction(f"Choose the text {what}…", lambda: self._rechoose(e))
        menu.addAction("Copy path", lambda: self._copy_paths(entries))
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def _rechoose(self, e: CorpusEntry) -> None:
        found = option_candidates(e.source.path, e.source.kind)
        if not found:
            return
        what, candidates, _default = found
        current = e.source.field if what == "field" else e.source.column
        choice = self.option_chooser(what, str(e.source.path), candidates, None if current is None else str(current))
        if choice is None:
            return
        self.model.remove([e.key])
        kind = e.source.kind if detect_kind(e.source.path)[0] != e.source.kind else None
        if what == "field":
            self.add_paths([str(e.source.path)], field=choice, encoding=e.source.encoding, prompt=False, kind=kind,
                           on_bad_record=e.source.on_bad_record)
        else:
            self.add_paths([str(e.source.path)], column=choice, encoding=e.source.encoding, prompt=False, kind=kind,
                           on_bad_record=e.source.on_bad_record)

    @staticmethod
    def _copy_paths(entries: Sequence[CorpusEntry]) -> None:
        from PySide6.QtGui import QGuiApplication

        QGuiApplication.clipboard().setText("\n".join(str(e.source.path) for e in entries))

    def _ask_option(self, what: str, path: str, candidates: list[str], default: str | None) -> str | None:
        items = list(candidates)
        current = items.index(default) if default in items else 0
        label = (f"Which {what} of {Path(path).name} holds the text?\n"
                 f"(applies to all {'JSON lines' if what == 'field' else 'CSV/TSV/Parquet/Arrow'} files added now; "
                 f"nested fields use dots)")
        choice, ok = QInputDialog.getItem(self, f"Choose the text {what}", label, items, current, True)
        return choice.strip() if ok and choice.strip() else None

    # ---- drag and drop -----------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.add_paths(paths)

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and hasattr(self, "rejected_label"):
            self.rejected_label.setStyleSheet(f"color: {style.error_colour(self.palette()).name()}")
