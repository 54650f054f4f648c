"""The project the window has open: its path, its store connection, and whether it is untitled.

The GUI keeps one read-only connection to the ``.tokproj`` (WAL lets it read while the training
child commits a batch every ~100 ms); the window's writes (rename, delete) each open a writable
connection for one short transaction, so the training child stays the only long-lived writer.
A project started with *New* (or on the demo corpus) lives in the app's data folder as
"Untitled …" until Save As gives it a name — that is what the title's modified marker means,
since every change to a named project is already saved when it is made.

This module is the only place in ``workbench.ui`` that opens a :class:`ProjectStore` (a test walks
the tree to keep it so). Views and their worker functions that need a connection of their own —
SQLite connections stay on the thread that opened them — get it from :func:`open_read` (one
read-only connection) or :func:`open_write` (one short writable transaction), so how the window
opens the file is decided here once.

What it leaves out: widgets. It emits signals; panels and the main window decide what to show.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence, cast

from PySide6.QtCore import QObject, QStandardPaths, QTimer, Signal

from workbench.errors import WorkbenchError
from workbench.store import ProjectStore, ReferenceInfo, RunInfo, RunStepRow, StepRow
from workbench.store.opening import SIDE_FILES
from workbench.store.schema import INSPECT_SESSION_KEY, V1_INSPECT_SESSION_NAME
from workbench.ui import turns

UNTITLED_PREFIX = "Untitled"
#: Where schema 1 kept the Inspect session: a text of this reserved name. The schema-2 upgrade moves
#: it to the project's settings (key :data:`INSPECT_SESSION_KEY`); the Inspect tab's list of kept
#: texts still leaves the name out, in case a text was saved under it by hand.
INSPECT_SESSION_NAME = V1_INSPECT_SESSION_NAME
#: The Compare tab's selection and the questions behind its results, kept like the Inspect session.
COMPARE_SESSION_KEY = "compare_session"

log = logging.getLogger(__name__)


#: The longest one query on a window's read connection may run before it is stopped with a message.
QUERY_LIMIT_S = 20.0


#: What :func:`open_read` hands a view: the name views use, so only this module names the store.
ReadHandle = ProjectStore


def open_read(path: str | Path, *, should_stop: Callable[[], bool] | None = None,
              limit_s: float | None = None) -> ReadHandle:
    """A read-only connection to ``path`` for the calling thread (use it as a context manager).

    Read-only so that a view can never write by mistake; the training child and the short
    writers of :func:`open_write` are the file's only writers. Every statement on it is stopped
    after ``limit_s`` seconds (default :data:`QUERY_LIMIT_S`; the views turn that into one line under the
    filter), and at once when ``should_stop()`` (a worker's connection: its job was cancelled or
    overtaken).
    """
    store = ProjectStore.open(Path(path), readonly=True)
    store.limit_queries(QUERY_LIMIT_S if limit_s is None else limit_s)
    if should_stop is not None:
        store.stop_queries_when(should_stop)
    return store


@contextmanager
def open_write(path: str | Path) -> Iterator[ProjectStore]:
    """A writable connection for one short change; WorkbenchError when the file is read-only."""
    path = Path(path)
    with ProjectStore.open(path) as store:
        if store.read_only:
            raise WorkbenchError(store.note or f"{path.name} is read-only; use Save As to keep a copy.")
        yield store


@dataclass
class OpenedProject:
    """A project opened and read off the GUI thread (:func:`prepare_open`), for
    :meth:`ProjectSession.adopt` to take over on the GUI thread.

    ``store`` is the window's read connection, built on the worker and handed over once (the
    store's connections allow that: ``check_same_thread=False``; the worker never touches it
    again). ``runs`` were decoded on that very connection at its data version ``version``, so the
    session keeps them exactly as long as it would have kept its own decode.
    """

    path: Path
    store: ProjectStore
    writable: bool
    note: str
    untitled: bool
    version: int
    runs: list[RunInfo]
    corpus_count: int
    #: The project's corpus files when few enough to list at once (else None: read in batches).
    corpus_paths: list[tuple[str, dict]] | None = None
    #: Each kept tab session (project settings) read on the worker, by key.
    panel_states: dict[str, dict] = field(default_factory=dict)
    #: The imported reference tokenizers (the tabs' source lists and the title's modified marker).
    references: list[ReferenceInfo] = field(default_factory=list)
    #: The path of each corpus file a run used, by corpus id (the run history's descriptions).
    run_corpora: dict[int, str] = field(default_factory=dict)

    def discard(self) -> None:
        """A result nobody adopts (a newer open overtook it): close its connection."""
        self.store.close()


def _open_reader(path: Path, *, create: bool) -> tuple[ProjectStore, bool, str]:
    """A writable open first (creates, migrates, marks dead runs), then a read-only connection:
    (the store the window reads through, whether the file is writable, the note for the user).

    The window reads through a read-only connection and writes through short-lived writable
    ones, so a stray write can never come from a view; the training child is the one
    long-lived writer. (A stale-read bug seen here — new runs invisible after a child closed
    the file — came from the store reading the file header with plain open()/close(), which
    drops this process's SQLite locks; the store no longer does that while it has the file open.)
    """
    writable = ProjectStore.open(path, create=create)
    if writable.read_only:  # the file or its folder is read-only: that store is all we get
        return writable, False, writable.note
    note = writable.note
    writable.close()
    return open_read(path), True, note


def _panel_state_of(store: ProjectStore, key: str, path: Path) -> dict:
    try:
        value = store.setting(key, {})
    except (WorkbenchError, ValueError, sqlite3.Error) as exc:
        log.warning("cannot read the %s of %s: %s", key, path, exc)
        return {}
    return value if isinstance(value, dict) else {}


def prepare_open(path: str | Path, *, list_below: int = 0,
                 settings_keys: tuple[str, ...] = ()) -> OpenedProject:
    """Open ``path`` and read what the window shows first, on a worker thread (never the GUI's).

    The writable open (upgrade, side-file checks, runs of dead processes marked interrupted), the
    decode of every run (a 300-run project: ~0.1 s) and the project settings the tabs restore are
    the bulk of opening a project; :meth:`ProjectSession.adopt` then only swaps stores. The corpus
    files are listed here too when there are fewer than ``list_below``. Raises WorkbenchError with
    the user's message when the file cannot be opened.
    """
    path = Path(path).expanduser().absolute()
    store, writable, note = _open_reader(path, create=False)
    try:
        version = store.data_version()
        runs = store.runs(scores=False)  # a Unigram run's scores are read where they are shown
        count = store.corpus_count()
        paths = _distinct_corpus_paths(store) if count < list_below else None
        states = {key: _panel_state_of(store, key, path) for key in settings_keys}
        refs = store.references()
        used = {cid for run in runs for cid in run.corpus_ids}  # not every file: a project may list 100,000
        run_corpora = {c.id: c.path for c in store.corpora(used)}
    except BaseException:
        store.close()
        raise
    untitled = path.parent == untitled_folder() and path.name.startswith(UNTITLED_PREFIX)
    return OpenedProject(path, store, writable, note, untitled, version, runs, count, paths, states, refs,
                         run_corpora)


def prepare_save_as(source: str | Path, dest: str | Path, *, force: bool = False, list_below: int = 0,
                    settings_keys: tuple[str, ...] = ()) -> OpenedProject:
    """Save As on a worker thread: copy ``source`` to ``dest`` and open the copy (:func:`prepare_open`).

    The copy goes through SQLite's backup API from a connection of this thread's own (the
    window's stays the GUI thread's), built beside the target and renamed over it
    (:meth:`ProjectStore.save_as`). ``dest`` gets the ``.tokproj`` suffix when it has none.
    WorkbenchError with the user's message when the copy cannot be written or opened.
    """
    dest = copy_project(source, dest, force=force)
    return prepare_open(dest, list_below=list_below, settings_keys=settings_keys)


def copy_project(source: str | Path, dest: str | Path, *, force: bool = False) -> Path:
    """Copy ``source`` to ``dest`` (the ``.tokproj`` suffix added when missing) on the calling
    thread, through a read-only connection of its own; returns where the copy is. The window runs
    it on a worker when it saves an untitled project it is leaving (nothing opens the copy then)."""
    dest = project_dest(dest)
    with ProjectStore.open(Path(source), readonly=True) as store:
        store.save_as(dest, force=force)
    return dest


def project_dest(dest: str | Path) -> Path:
    """Where Save As writes ``dest``: absolute, with the ``.tokproj`` suffix."""
    dest = Path(dest).expanduser().absolute()
    return dest if dest.suffix == ".tokproj" else dest.with_name(dest.name + ".tokproj")


def _distinct_corpus_paths(store: ProjectStore) -> list[tuple[str, dict]]:
    seen: dict[str, dict] = {}
    for ref in store.corpora():
        seen[ref.path] = ref.reader_options
    return list(seen.items())


def untitled_folder() -> Path:
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
    folder = Path(base or Path.home() / ".local" / "share" / "tokenizer-workbench") / "untitled"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class ProjectSession(QObject):
    """Owns the open :class:`ProjectStore`; every read and write of the window goes through it."""

    project_changed = Signal()   # a different project (or none) is open
    settled = Signal()           # every step queued with after_open has run (see after_open)
    runs_changed = Signal()      # runs added, renamed, deleted or finished
    references_changed = Signal()  # a reference tokenizer was imported (from any tab)
    modified_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.store: ProjectStore | None = None  # read-only: the window's reads
        self.path: Path | None = None
        self.writable = False
        self.note = ""  # a sentence for the user about how the file is open ("" when fine)
        self.untitled = False
        self.display_name = ""
        # While Save As opens the copy: the path it was copied from. The same project under a new
        # name, so views keep what they show (their SRCs follow it) instead of starting afresh.
        self.moved_from: Path | None = None
        # An untitled project saved as a copy while leaving it: deleted on close whatever it holds.
        self.copied = False
        # The decoded runs and the store's data version they were read at (see runs()).
        self._runs_cache: tuple[int, list[RunInfo], dict[int, RunInfo]] | None = None
        # The tab sessions read by prepare_open, at that data version (see panel_state()).
        self._states: tuple[int, dict[str, dict]] | None = None
        # The rest of what prepare_open read (references, corpus counts and paths), at that data
        # version: the take-over's tabs ask for them on the window's thread (see _read()).
        self._reads: tuple[int, dict[str, object]] | None = None
        # True while the views take over a project read on a worker (adopt): what it read is as
        # current as a read made now (a few ms ago), so nothing is asked of the file, not even its
        # data version.
        self._fresh = False
        # Steps of taking a project over, one per turn of the event loop (see after_open).
        self._steps: list[Callable[[], object]] = []
        self._step_timer = QTimer(self)
        self._step_timer.setSingleShot(True)
        self._step_timer.setInterval(0)
        self._step_timer.timeout.connect(self._timed_step)

    # ---- opening -------------------------------------------------------------------------------
    def open(self, path: str | Path, *, create: bool = False) -> None:
        """Open (or create) ``path``; raises WorkbenchError with a user message when it cannot."""
        path = Path(path).expanduser().absolute()
        store = self._open_reader(path, create=create)
        self._replace(store, path, untitled=path.parent == untitled_folder() and path.name.startswith(UNTITLED_PREFIX))

    def _open_reader(self, path: Path, *, create: bool) -> ProjectStore:
        """See :func:`_open_reader`; keeps whether the file is writable and the note."""
        store, self.writable, self.note = _open_reader(path, create=create)
        return store

    def adopt(self, opened: OpenedProject) -> None:
        """Continue on a project :func:`prepare_open` opened on a worker: its store becomes the
        window's, its decoded runs the kept ones (until another connection commits), its tab
        sessions the answers of :meth:`panel_state` until the next write of this session."""
        self.writable, self.note = opened.writable, opened.note
        reads: dict[str, object] = {"references": list(opened.references), "corpus_count": opened.corpus_count,
                                    "run_corpora": dict(opened.run_corpora)}
        if opened.corpus_paths is not None:
            reads["corpus_paths"] = list(opened.corpus_paths)
        self._fresh = True  # while the views take it over (project_changed, emitted by _replace)
        try:
            self._replace(opened.store, opened.path, untitled=opened.untitled,
                          runs=(opened.version, opened.runs), states=opened.panel_states, reads=reads)
        finally:
            self._fresh = False

    def adopting(self) -> bool:
        """The views are taking over a project read on a worker (:meth:`adopt`): what can wait a
        turn waits (``after_open``); a project opened on the calling thread (:meth:`open`) is
        followed at once."""
        return self._fresh

    def _version(self) -> int | None:
        """The store's data version; None in the adopting turn (what was read then is current)."""
        if self.store is None:
            return None
        return None if self._fresh else self.store.data_version()

    def _read(self, key: str) -> object | None:
        """What :func:`prepare_open` read under ``key``, if nobody has written since (else None)."""
        if self._reads is None or key not in self._reads[1]:
            return None
        version = self._version()
        if version is not None and version != self._reads[0]:
            self._reads = None
            return None
        return self._reads[1][key]

    @contextmanager
    def _writer(self) -> Iterator[ProjectStore]:
        """A writable store for one change (the child may be writing too: SQLite serialises)."""
        if self.path is None:
            raise WorkbenchError("no project is open")
        if not self.writable:
            raise WorkbenchError(self.note or f"{self.path} is open read-only; use Save As to keep a copy.")
        with open_write(self.path) as store:
            yield store

    def new_untitled(self) -> Path:
        folder = untitled_folder()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = folder / f"{UNTITLED_PREFIX} {stamp}.tokproj"
        n = 2
        while path.exists():
            path = folder / f"{UNTITLED_PREFIX} {stamp}-{n}.tokproj"
            n += 1
        store = self._open_reader(path, create=True)
        self._replace(store, path, untitled=True)
        return path

    def _replace(self, store: ProjectStore, path: Path, *, untitled: bool,
                 runs: tuple[int, list[RunInfo]] | None = None, states: dict[str, dict] | None = None,
                 reads: dict[str, object] | None = None) -> None:
        fresh = self._fresh
        self.close(discard_untitled=True)
        self._fresh = fresh
        self.store, self.path, self.untitled = store, path, untitled
        self.display_name = "Untitled" if untitled else path.name
        if runs is not None and not any(r.status == "running" for r in runs[1]):
            self._runs_cache = (runs[0], list(runs[1]), {r.id: r for r in runs[1]})
        self._states = (runs[0], dict(states)) if runs is not None and states else None
        self._reads = (runs[0], reads) if runs is not None and reads else None
        self.project_changed.emit()
        self.modified_changed.emit(self.is_modified())

    # ---- taking a project over, one step per turn -----------------------------------------------------
    def after_open(self, step: Callable[[], object]) -> None:
        """Run ``step`` on a later turn of the event loop, after the steps queued before it, one
        step per turn — so the tabs' first listings and plots of a project just opened are each a
        stretch of their own, never one long one. Dropped when another project opens or this one
        closes; :attr:`settled` is emitted once the last queued step has run."""
        self._steps.append(step)
        if not self._step_timer.isActive():
            self._step_timer.start()

    def settling(self) -> bool:
        """Steps queued with :meth:`after_open` are still to run."""
        return bool(self._steps)

    def run_pending_steps(self) -> None:
        """Run every queued step now (a view needs what they show before it can answer)."""
        while self._steps:
            self._next_step()

    def _timed_step(self) -> None:
        if turns.room(self._step_timer):  # a turn already spent by other views' steps: the next
            self._next_step()

    def _next_step(self) -> None:
        if not self._steps:
            return
        step = self._steps.pop(0)
        try:
            step()
        except Exception:  # noqa: BLE001 - one view's failure must not stop the others' steps
            log.exception("a step of opening %s failed", self.path)
        if self._steps:
            self._step_timer.start()  # the next on a later turn: timers started while timers fire wait
        else:
            self.settled.emit()

    def close(self, *, discard_untitled: bool = False) -> None:
        """Close the store; an untitled project is deleted when asked to (after the user agreed)."""
        store, path, untitled, copied = self.store, self.path, self.untitled, self.copied
        self.store, self.path, self.untitled, self.display_name, self.copied = None, None, False, "", False
        self._runs_cache = self._states = self._reads = None
        self._fresh = False
        self._steps.clear()  # a step of the last project never runs on the next one
        self._step_timer.stop()
        if store is not None:
            store.close()
        if discard_untitled and untitled and path is not None and (copied or not self._has_content_at(path)):
            for suffix in ("", *SIDE_FILES):
                Path(f"{path}{suffix}").unlink(missing_ok=True)

    def discard(self) -> None:
        """Close and delete an untitled project whatever it holds (the user chose Discard)."""
        path, untitled = self.path, self.untitled
        self.close()
        if untitled and path is not None:
            for suffix in ("", *SIDE_FILES):
                Path(f"{path}{suffix}").unlink(missing_ok=True)

    @staticmethod
    def _has_content_at(path: Path) -> bool:
        try:
            with open_read(path) as store:
                return bool(store.runs() or store.references())
        except WorkbenchError as exc:
            log.warning("cannot tell whether %s holds runs; treating it as empty: %s", path, exc)
            return False

    def save_as(self, dest: str | Path, *, force: bool = False) -> Path:
        """Copy through the backup API and continue on the copy (an untitled original is removed).

        All of it on the calling thread; the window copies and opens on a worker
        (:func:`prepare_save_as`) and continues with :meth:`adopt_copy`.
        """
        if self.store is None:
            raise WorkbenchError("no project is open")
        dest = project_dest(dest)
        self.store.save_as(dest, force=force)
        self.adopt_copy(prepare_open(dest))
        return dest

    def adopt_copy(self, opened: OpenedProject) -> None:
        """Continue on a copy of this project (Save As): the views keep what they show
        (:attr:`moved_from`), an untitled original is deleted."""
        source = self.path
        if self.untitled:
            self.discard()
        else:
            self.close()
        self.moved_from = source
        try:
            self.adopt(opened)
        finally:
            self.moved_from = None

    # ---- state -----------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.store is not None

    @property
    def read_only(self) -> bool:
        return self.store is not None and not self.writable

    def is_modified(self) -> bool:
        """An untitled project with runs or references has something worth saving."""
        if not self.untitled or self.store is None:
            return False
        try:
            return bool(self.runs() or self.references())
        except Exception:  # noqa: BLE001 - a title marker must never raise
            log.exception("cannot read the runs of %s for the title's modified marker", self.path)
            return False

    # ---- reads -----------------------------------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        """Every run of the project, decoded once per change of the file.

        Opening a project asks for the runs about ten times (each tab, the actions, the history);
        decoding each run's settings each time — a Unigram run's hold its 200,000 scores — stalled
        the window ~0.25 s per open. The decoded list is kept until another connection commits
        (the store's data version: a training child's batch, a rename, a delete), and not at all
        while a run is training, whose status depends on its process being alive. The settings
        are read without a Unigram run's per-piece scores: the views that show scores read them
        on a worker (``workbench.store.browse``).
        """
        cached = self._cached_runs()
        return list(cached[1]) if cached is not None else []

    def run(self, run_id: int) -> RunInfo | None:
        cached = self._cached_runs()
        return cached[2].get(run_id) if cached is not None else None

    def _cached_runs(self) -> tuple[int, list[RunInfo], dict[int, RunInfo]] | None:
        if self.store is None:
            return None
        if self._fresh and self._runs_cache is not None:
            return self._runs_cache
        version = self.store.data_version()
        if self._runs_cache is not None and self._runs_cache[0] == version:
            return self._runs_cache
        runs = self.store.runs(scores=False)  # a Unigram run's scores are read where they are shown
        found = (version, runs, {r.id: r for r in runs})
        self._runs_cache = None if any(r.status == "running" for r in runs) else found
        return found

    def steps(self, run_id: int, since_step: int = 0, *, every: int = 1) -> list[StepRow]:
        return self.store.steps(run_id, since_step, every=every) if self.store else []

    def run_steps(self, run_id: int, since_step: int = 0) -> list[RunStepRow]:
        """The run's ``run_steps`` rows after ``since_step`` (Unigram steps, WordPiece scores)."""
        return self.store.run_steps(run_id, since_step) if self.store else []

    def merge_text(self, run_id: int, step: int):
        """The merge made at ``step`` (1-based) as a MergeRow, or None."""
        if self.store is None or step < 1:
            return None
        rows = self.store.merges(run_id, step - 1, 1)
        return rows[0] if rows else None

    def references(self) -> list[ReferenceInfo]:
        """The project's imported reference tokenizers (read by the opening worker until the file changes)."""
        if self.store is None:
            return []
        kept = self._read("references")
        return list(cast(list, kept)) if kept is not None else self.store.references()

    def corpus_count(self) -> int:
        """How many corpus rows the project has (cheap: says whether listing them takes a while)."""
        if self.store is None:
            return 0
        kept = self._read("corpus_count")
        return cast(int, kept) if kept is not None else self.store.corpus_count()

    def corpus_paths(self) -> list[tuple[str, dict]]:
        """Distinct corpus files of the project (latest reader options win), in first-added order."""
        if self.store is None:
            return []
        kept = self._read("corpus_paths")
        return list(cast(list, kept)) if kept is not None else _distinct_corpus_paths(self.store)

    def run_corpus_paths(self, runs: Sequence[RunInfo]) -> dict[int, str]:
        """The path of each corpus file ``runs`` used, by corpus id (not every file of the project)."""
        if self.store is None:
            return {}
        used = {cid for run in runs for cid in run.corpus_ids}
        kept = cast("dict[int, str] | None", self._read("run_corpora"))
        if kept is not None and used <= kept.keys():
            return {cid: kept[cid] for cid in used}
        return {c.id: c.path for c in self.store.corpora(used)}

    # ---- writes ----------------------------------------------------------------------------------
    def rename_run(self, run_id: int, name: str) -> None:
        if self.store is None:
            return
        with self._writer() as store:
            store.rename_run(run_id, name)
        self._runs_cache = None
        self.runs_changed.emit()

    def delete_run(self, run_id: int) -> None:
        if self.store is None:
            return
        with self._writer() as store:
            store.delete_run(run_id)
        self._runs_cache = None
        self.runs_changed.emit()
        self.modified_changed.emit(self.is_modified())

    def notify_runs_changed(self) -> None:
        self._runs_cache = None
        self.runs_changed.emit()
        self.modified_changed.emit(self.is_modified())

    def notify_references_changed(self) -> None:
        """A reference was imported: every view's lists of tokenizers must offer it now."""
        self._reads = None
        self.references_changed.emit()
        self.modified_changed.emit(self.is_modified())

    # ---- the tabs' sessions (project settings) -------------------------------------------------------
    def panel_state(self, key: str) -> dict:
        """A tab's session kept in the project under ``key`` ({} when none, or when it cannot be read)."""
        if self.store is None:
            return {}
        if self._states is not None and key in self._states[1]:
            if self._fresh or self.store.data_version() == self._states[0]:  # nobody wrote since prepare_open read it
                return dict(self._states[1][key])
            self._states = None
        return _panel_state_of(self.store, key, self.path or Path())

    def save_panel_state(self, key: str, state: dict) -> bool:
        """Keep a tab's session in the project; False (logged) when the file cannot take it."""
        if self.store is None or not self.writable:
            return False
        if state == self.panel_state(key):
            return True  # unchanged: leave the file alone
        self._states = None  # this session's own writes leave the data version as it is
        try:
            with self._writer() as store:
                store.set_setting(key, state)
        except WorkbenchError as exc:
            log.warning("cannot keep the %s in %s: %s", key, self.path, exc)
            return False
        return True

    def inspect_session(self) -> dict:
        """The Inspect session kept in the project ({} when none, or when it cannot be read)."""
        return self.panel_state(INSPECT_SESSION_KEY)

    def save_inspect_session(self, state: dict) -> bool:
        """Keep the Inspect session in the project; False (logged) when the file cannot take it."""
        return self.save_panel_state(INSPECT_SESSION_KEY, state)

    def compare_session(self) -> dict:
        """The Compare tab's session kept in the project ({} when none)."""
        return self.panel_state(COMPARE_SESSION_KEY)

    def save_compare_session(self, state: dict) -> bool:
        return self.save_panel_state(COMPARE_SESSION_KEY, state)
