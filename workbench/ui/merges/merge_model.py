"""Lazy table models over the project file: they know their row count and fetch rows in pages.

:class:`LazyKeyedModel` is the mechanism (Anki's browser table, ``aqt/browser/table/model.py``,
works the same way): the rows of a view are *keys* — merge ranks or vocabulary ids — in display
order; SQLite filters and sorts (``merge_source``), the model keeps at most the key list and a
few pages of 200 decoded rows, and ``data()`` fetches a missing page by primary key when it
scrolls into view. With no filter and the natural order there is no key list at all (row ``r`` is
key ``r``), so a 100k-merge run opens with two aggregate queries.

While a run trains, :meth:`LazyKeyedModel.refresh` asks for keys above the last one seen and
inserts them with ``beginInsertRows`` — at the end in rank order, or at their sorted positions
otherwise — so the view, its selection and its scroll position survive. No
``QSortFilterProxyModel``: a proxy would pull every row through ``data()`` to sort or filter.

:class:`MergeTableModel` adds the merge columns: rank, left, right, result, frequency when merged,
length in bytes and characters, token id, and (WordPiece) the pair's score when merged — the
score of the id the merge made, from the run's settings. What it leaves out: widgets
(``merge_panel``).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Sequence

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QBrush, QColor, QFont, QGuiApplication

from workbench.core.display import piece_chars, piece_hex, piece_text
from workbench.core.superbpe import is_superword
from workbench.errors import WorkbenchError
from workbench.store.browse import MergeEntry, audit_mark, sql_error, store_connection
from workbench.ui.collector import keep_what_is_built
from workbench.ui.project_session import QUERY_LIMIT_S, open_read
from workbench.ui.style import is_dark, muted

log = logging.getLogger(__name__)

ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1  # the row's entry object (MergeEntry / VocabEntry)
KEY_ROLE = Qt.ItemDataRole.UserRole + 2  # the row's key (rank / id)

_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter

# The roles a paint asks for, as plain ints (``data`` gets an int; an enum member's lookup costs a
# call of its own, ~1,600 times per paint of 30 rows).
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_ALIGN = int(Qt.ItemDataRole.TextAlignmentRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)

#: A cell's font and colour as :meth:`LazyKeyedModel.row_cells` keeps them: codes, resolved by
#: ``data()`` when painted — a theme switch changes the brushes, not what a row's cells are.
FONT_NONE, FONT_MONO, FONT_STRUCK = 0, 1, 2
FG_NONE, FG_MUTED, FG_SUPERWORD, FG_WARNING = 0, 1, 2, 3


def mono_font() -> QFont:
    try:
        from workbench.ui.style import monospace_font
        return monospace_font()
    except ImportError:  # pragma: no cover - style.py is another module's; keep working without it
        font = QFont("DejaVu Sans Mono")
        font.setStyleHint(QFont.StyleHint.Monospace)
        return font


_BRUSHES: dict = {}


def _cached_brush(name: str, make) -> QBrush:
    """One brush per palette (a theme switch makes a new palette, hence a new cache key)."""
    key = (name, QGuiApplication.palette().cacheKey())
    brush = _BRUSHES.get(key)
    if brush is None:
        if len(_BRUSHES) > 16:
            _BRUSHES.clear()
        brush = _BRUSHES[key] = make()
    return brush


def muted_brush() -> QBrush:
    return _cached_brush("muted", _make_muted_brush)


def _make_muted_brush() -> QBrush:
    return QBrush(muted(QGuiApplication.palette()))


def superword_brush() -> QBrush:
    return _cached_brush("superword", _make_superword_brush)


def _make_superword_brush() -> QBrush:
    """Teal that reads on light and dark backgrounds: a token across a space (SuperBPE's superwords),
    the colour the inspector underlines them with (token_colours.MARK_COLOURS["superword"])."""
    return QBrush(QColor("#5eead4") if is_dark() else QColor("#0f766e"))


def warning_brush() -> QBrush:
    return _cached_brush("warning", _make_warning_brush)


def _make_warning_brush() -> QBrush:
    """Orange that reads on light and dark backgrounds (never-used entries, audit findings)."""
    return QBrush(QColor("#f0a04b") if is_dark() else QColor("#b35900"))


#: What a foreground code of :meth:`LazyKeyedModel.row_cells` is drawn with (the brush of the
#: palette shown when it is painted).
_FG_BRUSHES = {FG_MUTED: muted_brush, FG_SUPERWORD: superword_brush, FG_WARNING: warning_brush}


#: The line a superword's tooltip adds.
SUPERWORD_TIP = "superword: crosses a space — one token for several words (SuperBPE)"


def browser_piece(piece: bytes) -> str:
    """A piece as every view of the browser shows it: the one renderer, a space drawn as ``␣``
    (a leading space would otherwise vanish in a table cell)."""
    return piece_text(piece, visible_space=True)


def piece_tooltip(piece: bytes | None, heading: str = "") -> str:
    if piece is None:
        return "(missing from the vocabulary)"
    lines = [heading] if heading else []
    text = browser_piece(piece)
    lines.append(text if len(text) <= 200 else text[:200] + "…")
    lines.append(f"{len(piece)} bytes, {piece_chars(piece)} characters")
    hexed = piece_hex(piece)
    lines.append("bytes: " + (hexed if len(hexed) <= 300 else hexed[:300] + " …"))
    return "\n".join(lines)


def worker_opener(project: Callable[[], Path | None]):
    """The ``open_source`` a :meth:`LazyKeyedModel.use_worker` needs, for any browse source:
    ``source`` again on a read connection of its own to the file ``project()`` names (the view's
    project at the moment the job starts), whose statements stop as soon as ``should_stop()``."""
    @contextmanager
    def open_source(source, should_stop: Callable[[], bool]) -> Iterator[Any]:
        path = project()
        if path is None:
            raise WorkbenchError("the project is closed")
        store = open_read(path, should_stop=should_stop)
        try:
            yield source.on_connection(store_connection(store))
        except sqlite3.Error as exc:  # stopped (cancelled, overtaken, out of time) or unreadable: one line
            raise sql_error(exc) from None
        finally:
            store.close()
    return open_source


#: A view's old key or value list at least this long is released off the GUI thread (see
#: :func:`release_off_thread`), this many items at a time.
RELEASE_AT = 100_000
RELEASE_CHUNK = 20_000


def release_off_thread(*sequences: Any) -> None:
    """Free long lists a view no longer shows on a thread of their own, a slice at a time.

    The values of a vocabulary of 10M pieces sorted by piece are 10M bytes objects: dropped on the
    window's thread when it showed another run, they took ~0.1–0.15 s in one C call that holds the
    GIL. Freed ``RELEASE_CHUNK`` at a time, the GIL changes hands between slices. Only lists this
    module made and nothing else holds are passed (a packed ``array`` frees in one ``free``)."""
    lists = [seq for seq in sequences if isinstance(seq, list) and len(seq) >= RELEASE_AT]
    if not lists:
        return

    def release() -> None:
        for seq in lists:
            while seq:
                del seq[-RELEASE_CHUNK:]
    threading.Thread(target=release, name="release-rows", daemon=True).start()


def _before(a: Any, b: Any, descending: bool) -> bool:
    """Whether sort value ``a`` comes strictly before ``b`` in SQLite's order (NULLs first in ASC)."""
    if a is None or b is None:
        if a is None and b is None:
            return False
        return (a is None) != descending
    return a > b if descending else a < b


def _splice(seq: Any, pos: int, items: list) -> None:
    """Insert ``items`` at ``pos`` of a key or value list — or of the packed array a long result
    comes as (``store.browse.collect_keys``), which takes only an array."""
    seq[pos:pos] = array(seq.typecode, items) if isinstance(seq, array) else items


def insert_position(values: Sequence, value: Any, descending: bool) -> int:
    """Where a new row with a key larger than every existing key goes (ties: after equal values)."""
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if _before(value, values[mid], descending):
            hi = mid
        else:
            lo = mid + 1
    return lo


class LazyKeyedModel(QAbstractTableModel):
    """A table of ``source`` rows; subclasses define COLUMNS and how a cell looks."""

    PAGE = 200
    MAX_PAGES = 40  # ~8000 decoded rows at most
    #: (title, order key or "" if not sortable, header tooltip)
    COLUMNS: tuple[tuple[str, str, str], ...] = ()
    NATURAL = "rank"  # the order key that equals the row key

    rows_changed = Signal()  # after a reset, a re-sort or inserted rows: labels re-read counts
    busy_changed = Signal(bool)  # a long source is being filtered or sorted off the GUI thread
    failed = Signal(str)  # such a job failed (the query was stopped, the file went away): one line

    #: Sources with at least this many keys are filtered, sorted and opened off the GUI thread (see
    #: :meth:`use_worker`); shorter ones answer within a frame, and at once, as before.
    ASYNC_KEYS = 200_000
    #: The longest one filter, sort or open may take in all, every query of it together (a
    #: pathological regex used to run per piece, unbounded in total); then it fails with one line.
    JOB_LIMIT_S = QUERY_LIMIT_S
    #: A filter, sort or reload of a shorter source is tried on the GUI thread for at most this much
    #: of its CPU time, then handed to the worker: a regex costs per piece what its backtracking
    #: costs (a pathological pattern on 1,700 pieces held the window 20 s, until the query limit),
    #: a substring filter of 100,000 merges ~0.1 s. Well under a frame: the rows' paint (~5 ms
    #: for 30 rows from their cells) and the labels' follow in the same turn (with 10 ms, a try
    #: that used its budget and the paint after it were 13–18 ms; issue 26: one frame a turn).
    HERE_LIMIT_S = 0.006
    #: Below this many keys a filter, sort or stored-value check is a few ms (5,000 merges: a check
    #: 4 ms, a substring filter 2 ms, a sort 3 ms measured): done at once, with no budget to miss.
    SHORT_KEYS = 5_000

    def __init__(self, parent=None):
        super().__init__(parent)
        self._source = None
        self._query = None
        self._sort_column = 0
        self._descending = False
        self._identity = True
        self._n = 0
        self._keys: Sequence[int] = []
        self._values: Sequence = []
        self._last_key = -1
        self._pages: OrderedDict[int, list] = OrderedDict()
        #: row -> (display texts, font codes, foreground codes) per column: what a paint asks of
        #: a row, made once (:meth:`row_cells`) — or on the worker that filtered or sorted (the
        #: first rows shown). Emptied wherever the pages are (a reset, a re-sort, inserted rows).
        self._cells: dict[int, tuple[tuple, tuple, tuple]] = {}
        self._aligns: tuple = tuple(self.alignment(c) for c in range(len(self.COLUMNS)))
        self._struck: QFont | None = None
        self.fetches = 0  # pages read from SQLite (tests check laziness with it)
        self._font = mono_font()
        self._runner = None
        self._open_source = None
        self.busy = False
        self._when_ready: list[Callable[[], object]] = []

    # ---- state ----------------------------------------------------------------------------------
    @property
    def source(self):
        return self._source

    @property
    def query(self):
        return self._query

    @property
    def sort_key(self) -> str:
        return self.COLUMNS[self._sort_column][1] or self.NATURAL

    @property
    def descending(self) -> bool:
        return self._descending

    @property
    def sort_column(self) -> int:
        return self._sort_column

    @property
    def total(self) -> int:
        """Rows the source holds, whatever the filter (as of the last load or refresh)."""
        return self._last_key + 1

    def is_filtered(self) -> bool:
        return self._query is not None and not self._query.is_empty()

    # ---- loading ----------------------------------------------------------------------------------
    def _compute(self, source, query, order: str, descending: bool, upto: int | None = None) -> tuple:
        """(identity, n, keys, values, last_key) for a view; raises WorkbenchError, changes nothing."""
        if source is None:
            return True, 0, [], [], -1
        last = source.max_key() if upto is None else upto
        empty = query is None or query.is_empty()
        if empty and order == self.NATURAL and not descending and (upto is not None or source.count() == last + 1):
            return True, last + 1, [], [], last
        keys, values = source.keys(query, order, descending, upto=last)
        return False, len(keys), keys, values, last

    def _compute_here(self, source, query, order: str, descending: bool, upto: int | None = None) -> tuple | None:
        """:meth:`_compute` on the GUI thread; with a regex filter (and a worker to hand it to),
        None once it has run :attr:`HERE_LIMIT_S` — the caller then submits it off the thread."""
        return self._here(source, query, lambda: self._compute(source, query, order, descending, upto))

    def _here(self, source, query, work: Callable[[], Any]) -> Any:
        """``work()`` on the GUI thread — bounded by :attr:`HERE_LIMIT_S` of its CPU when a worker
        can take over (then None once that budget is spent): a regex costs per piece what its
        backtracking costs, and a substring filter or a sort of 100,000 merges ~0.1 s — typing
        into the filter must not wait for either."""
        within = getattr(getattr(source, "conn", None), "within", None)
        text = getattr(query, "text", None)
        regex = bool(text and getattr(text, "regex", False))
        if self._runner is None or within is None or not (regex or self.is_long(source)):
            return work()
        with within(self.HERE_LIMIT_S) as ran_out:
            try:
                return work()
            except (WorkbenchError, sqlite3.OperationalError):  # the store's sql_error, or SQLite's own
                if ran_out():
                    return None
                raise

    def is_long(self, source) -> bool:
        """Whether ``source`` has :attr:`SHORT_KEYS` keys or more: its filter, sort and check may
        take more than a frame, so the window's thread tries them within :attr:`HERE_LIMIT_S` only."""
        return source is not None and source.max_key() >= self.SHORT_KEYS

    def _apply(self, state: tuple) -> None:
        """Take a computed view; a worker's state carries the first page of rows read and their
        cells made (:meth:`_prefetch`), so the paint that follows reads nothing."""
        old = (self._keys, self._values)
        self._identity, self._n, self._keys, self._values, self._last_key = state[:5]
        self._pages.clear()
        self._cells.clear()
        if len(state) > 5 and state[5] is not None:
            page, cells = state[5]
            self._pages[0] = page
            self._cells.update(cells)
        if any(isinstance(seq, list) and len(seq) >= RELEASE_AT for seq in (self._keys, self._values)):
            # A list of millions of sort values: each full pass of the cyclic collector visits every
            # item (a 10M-piece vocabulary sorted by piece: ~0.2 s with the GIL held, on whichever
            # thread allocated — the window's, in a paint). Taken out of those passes like the
            # window's other long listings (``collector.keep_what_is_built``).
            keep_what_is_built()
        release_off_thread(*(seq for seq in old if seq is not self._keys and seq is not self._values))

    # ---- long sources: off the GUI thread --------------------------------------------------------
    def use_worker(self, runner, open_source) -> None:
        """Filter, sort and open sources of :attr:`ASYNC_KEYS` keys or more off the GUI thread.

        ``runner`` is the window's :class:`~workbench.ui.jobs.JobRunner`; ``open_source(source,
        should_stop)`` is a context manager, entered in the worker thread, that gives a copy of
        ``source`` on a connection of its own whose queries stop when ``should_stop()``. A newer
        request replaces a running one (the runner drops the stale result and stops its query).
        Until the result arrives the old rows stay (a new source shows none), and ``busy_changed``
        says so; a failure is ``failed(message)`` and changes nothing. A job stops after
        :attr:`JOB_LIMIT_S` seconds in all. :func:`worker_opener` makes ``open_source``.
        """
        self._runner, self._open_source = runner, open_source

    def when_ready(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` once the rows shown are the ones last asked for: now, or when the running
        filter or sort delivers (not after a failure or a newer request's cancelling one)."""
        if self.busy:
            self._when_ready.append(fn)
        else:
            fn()

    def _run_when_ready(self) -> None:
        pending, self._when_ready = self._when_ready, []
        for fn in pending:
            fn()

    def _off_thread(self, source) -> bool:
        return self._runner is not None and source is not None and source.max_key() >= self.ASYNC_KEYS

    def _submit(self, source, query, order: str, descending: bool, upto: int | None, apply, *,
                after: int | None = None) -> None:
        """Run :meth:`_compute` off the GUI thread and ``apply`` its state — or, with ``after``,
        only the ``(keys, values)`` of rows with keys in ``(after, upto]`` (:meth:`refresh`)."""
        open_source, compute, prefetch = self._open_source, self._compute, self._prefetch
        assert self._runner is not None and open_source is not None

        limit = self.JOB_LIMIT_S

        def job(should_stop, _progress):
            deadline = time.monotonic() + limit

            def stop() -> bool:
                return should_stop() or time.monotonic() > deadline
            with open_source(source, stop) as copy:
                if after is not None:
                    return copy.keys(query, order, descending, after=after, upto=upto)
                state = compute(copy, query, order, descending, upto)
                return (*state, prefetch(copy, state))

        def done(state: tuple) -> None:
            self._set_busy(False)
            apply(state)
            self._run_when_ready()

        def failed(message: str) -> None:
            self._when_ready.clear()
            self._set_busy(False)
            self.failed.emit(message)

        self._set_busy(True)
        self._runner.submit(job, done, failed, key=("lazy-model", id(self)), hooks=True)

    #: Rows whose cells a worker makes with the first page it reads: a window's worth and more.
    PREFETCH_CELLS = 64

    def _prefetch(self, source, state: tuple) -> tuple[list, dict] | None:
        """On the worker, after a filter or sort: the first page of the new view read and the cells
        of its first :attr:`PREFETCH_CELLS` rows made on ``source`` (the worker's copy), so the
        window's turn that shows the result neither queries nor formats (a page of 10M merges by
        key was ~5 ms, 30 rows' cells ~5 ms more). None when there is nothing to read or it fails:
        the paint reads the page as before."""
        identity, n, keys = state[0], state[1], state[2]
        if source is None or n == 0:
            return None
        last = min(n, self.PAGE) - 1
        try:
            if identity:
                found = source.rows_range(0, last)
                page = [found.get(k) for k in range(last + 1)]
            else:
                wanted = list(keys[:last + 1])
                found = source.rows(wanted)
                page = [found.get(k) for k in wanted]
            cells = {row: self.row_cells(e, source) for row, e in enumerate(page[:self.PREFETCH_CELLS])
                     if e is not None}
        except Exception as exc:  # noqa: BLE001 - only a head start: the paint reads it again
            log.debug("prefetching the first rows failed (the paint reads them): %s", exc)
            return None
        return page, cells

    def warm(self, rows: int = PREFETCH_CELLS) -> int:
        """Make the cells of the first ``rows`` rows now (reading their page), so that the paint
        that later shows them neither queries nor formats; returns how many were made. For a table
        not shown yet (a hidden tab), in a turn of its own; a failed read leaves it to the paint."""
        made = 0
        for row in range(min(rows, self._n)):
            if row not in self._cells:
                if self._make_cells(row) is None:
                    break
                made += 1
        return made

    def _cancel_job(self) -> None:
        """Drop a running job of this model (its result will not arrive): the source changed."""
        if self._runner is not None:
            self._runner.cancel(("lazy-model", id(self)))
        self._when_ready.clear()
        self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.busy_changed.emit(busy)

    def _reset_to(self, source, query, state: tuple) -> None:
        self.beginResetModel()
        self._source, self._query = source, query
        self._apply(state)
        self.endResetModel()
        self.rows_changed.emit()

    # ---- showing a source and a filter --------------------------------------------------------------
    def set_source(self, source, query=None) -> None:
        """Show another source (None: nothing) with ``query``; a model reset."""
        order = self.sort_key if source else self.NATURAL
        if self._off_thread(source):
            self._reset_to(source, query, (True, 0, [], [], -1))  # nothing of the old source stays
            self._submit(source, query, order, self._descending, None,
                         lambda state: self._reset_to(source, query, state) if self._source is source else None)
            return
        self._cancel_job()
        state = self._compute_here(source, query, order, self._descending)
        if state is None:  # a slow regex: nothing shown until the worker has it
            self._reset_to(source, query, (True, 0, [], [], -1))
            self._submit(source, query, order, self._descending, None,
                         lambda state: self._reset_to(source, query, state) if self._source is source else None)
            return
        self._reset_to(source, query, state)

    def set_query(self, query) -> None:
        """Filter; raises WorkbenchError (bad regex, unreadable file) and then changes nothing."""
        if query is not None and getattr(query, "text", None):
            query.text.validate()
        source = self._source
        if self._off_thread(source):
            self._submit(source, query, self.sort_key, self._descending, None,
                         lambda state: self._reset_to(source, query, state) if self._source is source else None)
            return
        self._cancel_job()  # a slow regex of this source may still be running off the thread
        state = self._compute_here(source, query, self.sort_key, self._descending)
        if state is None:  # a slow regex: the rows stay until the worker has the filtered ones
            self._submit(source, query, self.sort_key, self._descending, None,
                         lambda state: self._reset_to(source, query, state) if self._source is source else None)
            return
        self._reset_to(source, query, state)

    def reload(self) -> None:
        """Re-read everything (a run was rewritten or deleted, frequencies arrived)."""
        source, query = self._source, self._query
        if self._off_thread(source):
            def apply(state: tuple) -> None:
                if self._source is source and self._query is query:
                    self._reset_to(source, query, state)
            self._submit(source, query, self.sort_key, self._descending, None, apply)
            return
        try:
            state = self._compute_here(source, query, self.sort_key, self._descending)
        except WorkbenchError:
            state = (True, 0, [], [], -1)
        if state is None:  # not within a frame: the rows stay until the worker has them
            def apply_later(state: tuple) -> None:
                if self._source is source and self._query is query:
                    self._reset_to(source, query, state)
            self._submit(source, query, self.sort_key, self._descending, None, apply_later)
            return
        self.beginResetModel()
        self._apply(state)
        self.endResetModel()
        self.rows_changed.emit()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Re-order in SQL; the row set is unchanged, so persistent indexes (selection) follow."""
        if not 0 <= column < len(self.COLUMNS) or not self.COLUMNS[column][1]:
            return
        descending = order == Qt.SortOrder.DescendingOrder
        if column == self._sort_column and descending == self._descending:
            return
        key = self.COLUMNS[column][1]
        if self._source is None:
            self._sort_column, self._descending = column, descending
            return
        source, query = self._source, self._query
        if self._off_thread(source):
            def apply(state: tuple) -> None:
                if self._source is source and self._query is query:
                    self._apply_sorted(column, descending, state)
            self._submit(source, query, key, descending, self._last_key, apply)
            return
        state = self._compute_here(source, query, key, descending, upto=self._last_key)
        if state is None:  # a slow regex filter: re-sorted off the thread
            def apply_later(state: tuple) -> None:
                if self._source is source and self._query is query:
                    self._apply_sorted(column, descending, state)
            self._submit(source, query, key, descending, self._last_key, apply_later)
            return
        self._apply_sorted(column, descending, state)

    def _apply_sorted(self, column: int, descending: bool, state: tuple) -> None:
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        old_keys = [self.key_at(p.row()) for p in persistent]
        self._sort_column, self._descending = column, descending
        self._apply(state)
        positions = self._positions(old_keys)
        new_indexes = []
        for k, p in zip(old_keys, persistent):
            row = positions.get(k) if k is not None else None
            new_indexes.append(self.index(row, p.column()) if row is not None else QModelIndex())
        self.changePersistentIndexList(persistent, new_indexes)
        self.layoutChanged.emit()
        self.rows_changed.emit()

    def _positions(self, keys: Sequence[int | None]) -> dict[int, int | None]:
        wanted = {k for k in keys if k is not None}
        if not wanted:
            return {}
        if self._identity:
            return {k: (k if 0 <= k < self._n else None) for k in wanted}
        out: dict[int, int | None]
        if len(wanted) <= 8:
            out = {}
            for k in wanted:
                try:
                    out[k] = self._keys.index(k)
                except ValueError:
                    out[k] = None
            return out
        out = dict.fromkeys(wanted)
        for row, k in enumerate(self._keys):
            if k in out:
                out[k] = row
        return out

    # ---- live updates -------------------------------------------------------------------------------
    def refresh(self) -> int:
        """Add rows stored since the last look, without a reset; returns how many were inserted.

        A filter with a regex is tried on the GUI thread as :meth:`set_query` does; past
        :attr:`HERE_LIMIT_S` a worker filters the new rows and they are inserted when it delivers
        (0 is returned now). While any job of this model runs nothing is read: the rows it
        delivers replace or extend the view, and the next refresh picks up from there."""
        source = self._source
        if source is None or self.busy:
            return 0
        newest = source.max_key()
        if newest == self._last_key:
            return 0
        if newest < self._last_key:  # rows went away: the run was deleted or replaced
            self.reload()
            return 0
        if self._identity:
            first = self._n
            self.beginInsertRows(QModelIndex(), first, newest)
            self._n = newest + 1
            self._last_key = newest
            self._drop_pages_from(first)
            self.endInsertRows()
            self.rows_changed.emit()
            return newest + 1 - first
        query, order, descending, after = self._query, self.sort_key, self._descending, self._last_key
        found = self._here(source, query,
                           lambda: source.keys(query, order, descending, after=after, upto=newest))
        if found is None:  # a slow regex filter: the worker filters the new rows, they come later
            def apply(found: tuple) -> None:
                if (self._source is source and self._query is query and self.sort_key == order
                        and self._descending == descending and self._last_key == after):
                    self._last_key = newest
                    self._insert_new(*found)
            self._submit(source, query, order, descending, newest, apply, after=after)
            return 0
        self._last_key = newest
        return self._insert_new(*found)

    def _insert_new(self, keys: Any, values: Any) -> int:
        """Insert rows newer than every shown one at their places in the current order."""
        if not keys:
            self.rows_changed.emit()  # the total changed even if no new row matches
            return 0
        blocks: list[tuple[int, Any, Any]]
        if self.sort_key == self.NATURAL:
            blocks = [(0 if self._descending else self._n, keys, values)]
        else:
            blocks = []
            for k, v in zip(keys, values):
                pos = insert_position(self._values, v, self._descending)
                if blocks and blocks[-1][0] == pos:
                    blocks[-1][1].append(k)
                    blocks[-1][2].append(v)
                else:
                    blocks.append((pos, [k], [v]))
        # Insert from the last position backwards so earlier positions stay valid.
        for pos, block_keys, block_values in reversed(blocks):
            self.beginInsertRows(QModelIndex(), pos, pos + len(block_keys) - 1)
            _splice(self._keys, pos, block_keys)
            _splice(self._values, pos, block_values)
            self._n += len(block_keys)
            self._drop_pages_from(pos)
            self.endInsertRows()
        self.rows_changed.emit()
        return len(keys)

    def _drop_pages_from(self, row: int) -> None:
        first_page = row // self.PAGE
        for page in [p for p in self._pages if p >= first_page]:
            del self._pages[page]
        # Rows inserted while a run trains: every row's cells are made again (a PickyBPE run's
        # later merge can remove an earlier one's result, which that row then shows).
        self._cells.clear()

    def forget_cells(self) -> None:
        """Make every row's cells again when next painted: something they show changed without a
        reset (a WordPiece run's scores arrived when it ended)."""
        self._cells.clear()

    # ---- rows -------------------------------------------------------------------------------------
    def key_at(self, row: int) -> int | None:
        if not 0 <= row < self._n:
            return None
        return row if self._identity else self._keys[row]

    def row_of_key(self, key: int) -> int | None:
        return self._positions([key]).get(key)

    def entry(self, row: int):
        """The decoded row (fetching its page when needed), or None outside the table."""
        if not 0 <= row < self._n or self._source is None:
            return None
        page_no = row // self.PAGE
        page = self._pages.get(page_no)
        if page is None:
            page = self._fetch(page_no)
        else:
            self._pages.move_to_end(page_no)
        offset = row - page_no * self.PAGE
        return page[offset] if offset < len(page) else None

    def _fetch(self, page_no: int) -> list:
        first = page_no * self.PAGE
        last = min(self._n, first + self.PAGE) - 1
        source = self._source
        if source is None:
            return [None] * (last - first + 1)
        try:
            if self._identity:
                found = source.rows_range(first, last)
                page = [found.get(k) for k in range(first, last + 1)]
            else:
                wanted = self._keys[first:last + 1]
                found = source.rows(wanted)
                page = [found.get(k) for k in wanted]
        except Exception as exc:  # noqa: BLE001 - a busy or vanished file must not raise inside paint()
            log.warning("fetching merge rows %d-%d failed (the next paint retries): %s", first, last, exc)
            return [None] * (last - first + 1)  # not cached: the next paint tries again
        self.fetches += 1
        self._pages[page_no] = page
        while len(self._pages) > self.MAX_PAGES:
            self._pages.popitem(last=False)
        return page

    def entries(self, rows: Sequence[int]) -> list:
        return [e for e in (self.entry(r) for r in rows) if e is not None]

    def iter_all(self, batch: int = 2000):
        """Every row of the current view in display order, read in batches (not via the cache)."""
        if self._source is None:
            return
        if self._identity:
            for start in range(0, self._n, batch):
                found = self._source.rows_range(start, min(self._n, start + batch) - 1)
                for k in range(start, min(self._n, start + batch)):
                    if k in found:
                        yield found[k]
            return
        for start in range(0, self._n, batch):
            chunk = self._keys[start:start + batch]
            found = self._source.rows(chunk)
            for k in chunk:
                if k in found:
                    yield found[k]

    # ---- Qt model interface ---------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else self._n

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self.COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.COLUMNS[section][2] or None
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        # A paint asks each visible cell for ~7 roles (30 rows: ~1,600 calls in one frame): the
        # four it draws come from the row's cells, made once (:meth:`row_cells`); the others have
        # nothing here and return before asking the index anything.
        if role == _DISPLAY or role == _FOREGROUND or role == _FONT or role == _ALIGN:
            row = index.row()
            cells = self._cells.get(row)
            if cells is None:
                cells = self._make_cells(row)
                if cells is None:  # outside the table, or its page could not be read (retried)
                    return ("…" if role == _DISPLAY and index.isValid() and row < self._n
                            and index.column() < len(self.COLUMNS) else None)
            if role == _DISPLAY:
                return cells[0][index.column()]
            if role == _FOREGROUND:
                code = cells[2][index.column()]
                return _FG_BRUSHES[code]() if code else None
            if role == _FONT:
                code = cells[1][index.column()]
                return None if not code else self._font if code == FONT_MONO else self._struck_font()
            return self._aligns[index.column()]
        if role != _TOOLTIP and role != ENTRY_ROLE and role != KEY_ROLE:
            return None
        row = index.row()
        if not index.isValid() or row >= self._n or index.column() >= len(self.COLUMNS):
            return None
        if role == KEY_ROLE:
            return self.key_at(row)
        entry = self.entry(row)
        if entry is None:
            return None
        if role == ENTRY_ROLE:
            return entry
        return self.cell(entry, index.column(), role)

    def _make_cells(self, row: int) -> tuple[tuple, tuple, tuple] | None:
        entry = self.entry(row)
        if entry is None:
            return None
        cells = self.row_cells(entry, self._source)
        if len(self._cells) >= self.MAX_PAGES * self.PAGE:
            self._cells.clear()
        self._cells[row] = cells
        return cells

    def _struck_font(self) -> QFont:
        if self._struck is None:
            self._struck = QFont(self._font)
            self._struck.setStrikeOut(True)
        return self._struck

    def row_cells(self, entry, source) -> tuple[tuple, tuple, tuple]:  # pragma: no cover - overridden
        """A row as a paint draws it: per column its display text, font code (``FONT_*``) and
        foreground code (``FG_*``) — the DisplayRole, FontRole and ForegroundRole of
        :meth:`cell`, made at once. ``source`` is the model's source or a worker's copy of it: a
        worker thread calls this, so it reads nothing of the model but its class constants."""
        n = len(self.COLUMNS)
        return tuple("" for _ in range(n)), (FONT_NONE,) * n, (FG_NONE,) * n

    def alignment(self, column: int) -> Any:
        """A column's TextAlignmentRole (the same for every row)."""
        return None

    def cell(self, entry, column: int, role: int) -> Any:  # pragma: no cover - overridden
        return None


class MergeTableModel(LazyKeyedModel):
    """Merges of one run or reference tokenizer (a :class:`MergeSource`)."""

    COLUMNS = (
        ("rank", "rank", "Merge rank: the order in which training learned the merges (0 = first)"),
        ("left", "left", "Left part of the merged pair"),
        ("right", "right", "Right part of the merged pair"),
        ("result", "result", "The new token: left + right"),
        ("frequency", "frequency", "How often the pair occurred in the training corpus when it was merged"),
        ("bytes", "bytes", "Length of the result in UTF-8 bytes"),
        ("chars", "chars", "Length of the result in characters (a stray byte counts as one)"),
        ("token id", "id", "Id of the result in the vocabulary"),
        ("score", "score", "The pair's score when training merged it (WordPiece): the highest score is merged next"),
        ("audit", "audit", "What the Audit tab found for the result (run the audit there to fill this column): "
                           "unreachable, undecodable (partial UTF-8), residue (LiteToken's R below the "
                           "threshold), never used on the corpus"),
    )
    NATURAL = "rank"
    AUDIT_COLUMN = 9
    PIECE_COLUMNS = (1, 2, 3)
    SCORE_COLUMN = 8
    SCORE_TIPS = {
        "likelihood": "The pair's likelihood score when merged: freq(xy) / (freq(x) · freq(y)); "
                      "training merges the highest-scoring pair next",
        "frequency": "The pair's score when merged: its frequency (the score tokenizers' WordPieceTrainer uses)",
    }

    def has_scores(self) -> bool:
        """Whether the source recorded per-merge scores (WordPiece runs trained since they are kept)."""
        return self._source is not None and getattr(self._source, "scores", None) is not None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (section == self.SCORE_COLUMN and role == Qt.ItemDataRole.ToolTipRole
                and orientation == Qt.Orientation.Horizontal and self._source is not None):
            tip = self.SCORE_TIPS.get(getattr(self._source, "score_rule", ""))
            if tip:
                return tip
        return super().headerData(section, orientation, role)

    def cell(self, e: MergeEntry, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return str(e.rank)
            if column in self.PIECE_COLUMNS:
                piece = (e.left_piece, e.right_piece, e.piece)[column - 1]
                shown = "?" if piece is None else browser_piece(piece)
                removal = self._removal(e, column)
                return shown if removal is None else f"{shown}   ✗ merge {removal[0]}"
            if column == 4:
                return "—" if e.frequency is None else f"{e.frequency:,}"
            if column == 5:
                return str(e.length)
            if column == 6:
                return str(e.chars)
            if column == self.SCORE_COLUMN:
                score = (self._source.score(e.new_id, e.rank)
                         if self._source is not None and self.has_scores() else None)
                return "—" if score is None else f"{score:.6g}"
            if column == self.AUDIT_COLUMN:
                return audit_label(self._audit_mark(e.new_id))
            return str(e.new_id)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column in self.PIECE_COLUMNS:
                ids = (e.left, e.right, e.new_id)
                piece = (e.left_piece, e.right_piece, e.piece)[column - 1]
                heading = f"token {ids[column - 1]}"
                if column == 3:
                    heading += f" = {browser_piece(e.left_piece or b'')} + {browser_piece(e.right_piece or b'')}"
                if piece is not None and is_superword(piece):
                    heading += f"\n{SUPERWORD_TIP}"
                removal = self._removal(e, column)
                if removal is not None:
                    heading += (f" — removed by merge {removal[0]} (PickyBPE: that merge used up most of it) and "
                                f"split into {len(removal[1])} tokens")
                return piece_tooltip(piece, heading)
            if column == 4 and e.frequency is None:
                return "Imported tokenizers do not record merge frequencies"
            if column == self.SCORE_COLUMN and not self.has_scores():
                return "No scores recorded: only WordPiece runs trained by this version keep them"
            if column == self.AUDIT_COLUMN:
                mark = self._audit_mark(e.new_id)
                return "Not audited: press Audit in the Audit tab" if mark is None else audit_label(mark) or None
            return None
        if role == Qt.ItemDataRole.FontRole:
            if column in self.PIECE_COLUMNS and self._removal(e, column) is not None:
                return self._struck_font()
            return self._font if column in self.PIECE_COLUMNS else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _LEFT if column in self.PIECE_COLUMNS or column == self.AUDIT_COLUMN else _RIGHT
        if role == Qt.ItemDataRole.ForegroundRole:
            if column == 4 and e.frequency is None or self._removal(e, column) is not None:
                return muted_brush()
            if column in self.PIECE_COLUMNS:
                piece = (e.left_piece, e.right_piece, e.piece)[column - 1]
                return superword_brush() if piece is not None and is_superword(piece) else None
            if column == self.AUDIT_COLUMN:
                return _audit_brush(self._audit_mark(e.new_id))
            return None
        return None

    def alignment(self, column: int) -> Any:
        return _LEFT if column in self.PIECE_COLUMNS or column == self.AUDIT_COLUMN else _RIGHT

    def row_cells(self, e: MergeEntry, source) -> tuple[tuple, tuple, tuple]:
        """:meth:`cell`'s display text, font and colour of every column at once (see the base)."""
        removed_by = getattr(source, "removed_by", None) if source is not None else None
        removal = removed_by(e.rank) if removed_by is not None else None
        left = "?" if e.left_piece is None else browser_piece(e.left_piece)
        right = "?" if e.right_piece is None else browser_piece(e.right_piece)
        result = "?" if e.piece is None else browser_piece(e.piece)
        if removal is not None:
            result = f"{result}   ✗ merge {removal[0]}"
        score = (source.score(e.new_id, e.rank)
                 if source is not None and getattr(source, "scores", None) is not None else None)
        mark = audit_mark(getattr(source, "audit_key", None), e.new_id)
        texts = (str(e.rank), left, right, result, "—" if e.frequency is None else f"{e.frequency:,}",
                 str(e.length), str(e.chars), str(e.new_id), "—" if score is None else f"{score:.6g}",
                 audit_label(mark))
        fonts = (FONT_NONE, FONT_MONO, FONT_MONO, FONT_MONO if removal is None else FONT_STRUCK,
                 FONT_NONE, FONT_NONE, FONT_NONE, FONT_NONE, FONT_NONE, FONT_NONE)
        colours = (FG_NONE, _superword_code(e.left_piece), _superword_code(e.right_piece),
                   FG_MUTED if removal is not None else _superword_code(e.piece),
                   FG_MUTED if e.frequency is None else FG_NONE, FG_NONE, FG_NONE, FG_NONE, FG_NONE,
                   FG_MUTED if mark is None else FG_WARNING if mark else FG_NONE)
        return texts, fonts, colours

    def _removal(self, e: MergeEntry, column: int) -> tuple[int, list[int]] | None:
        """A removed result (PickyBPE): the merge that removed it and its split; else None."""
        if column != 3 or self._source is None:
            return None
        removed_by = getattr(self._source, "removed_by", None)
        return removed_by(e.rank) if removed_by is not None else None

    def _audit_mark(self, token_id: int) -> str | None:
        return audit_mark(getattr(self._source, "audit_key", None), token_id)


def _superword_code(piece: bytes | None) -> int:
    return FG_SUPERWORD if piece is not None and is_superword(piece) else FG_NONE


def audit_label(mark: str | None) -> str:
    """The Audit tab's marks of one id as the tables show them ("—": not audited)."""
    from workbench.tasks.audit import MARKS

    if mark is None:
        return "—"
    labels = dict(MARKS)
    return " · ".join(labels.get(m, m) for m in mark.split(",") if m)


def _audit_brush(mark: str | None) -> QBrush | None:
    if mark is None:
        return muted_brush()
    if mark:
        return warning_brush()
    return None
