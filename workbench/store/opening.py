"""Deciding whether a file may be opened, and how, before anything can change it.

A file that is not ours (foreign SQLite, newer schema, truncated, not SQLite at all, empty) must be
refused and left byte-identical: no journal mode switch, no ``-wal``/``-shm``/``-journal`` beside
it. So the checks run in this order, each one weaker than the next:

1. :func:`read_header` reads the 100-byte SQLite header with plain ``open()``: magic, page size,
   page count versus file size (truncation), application id, schema version.
   :func:`refuse_linked_side_files` and :func:`set_aside_foreign_wal` come next: a ``-wal``
   written for another database (:mod:`workbench.store.wal`) is moved aside before SQLite sees it.
2. :func:`probe` opens a ``mode=ro`` URI connection and re-reads application id, ``user_version``
   and the table list (authoritative even when recent commits still sit in a ``-wal`` file).

Only then does :mod:`workbench.store.project` open for writing. It also decides read-only mode
(read-only file, folder or medium) here. What this module leaves out: the schema itself
(``schema.py``) and everything after the file is open.
"""

from __future__ import annotations

import math
import os
import sqlite3
import stat
import threading
import time
import urllib.parse
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from workbench.errors import WorkbenchError
from workbench.store import schema, wal

MAGIC = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-shm", "-journal")
BUSY_TIMEOUT_S = 5.0


class Header(NamedTuple):  # not a dataclass: the run's writer process would import dataclasses (1 MB)
    page_size: int
    page_count: int | None  # None when the header says its in-header size is not valid
    user_version: int
    application_id: int
    file_size: int
    # Shorter than its header says, but a -wal file beside it holds the rest: an interrupted
    # checkpoint (a full disk), which SQLite finishes by checkpointing again (:func:`recover_wal`).
    needs_checkpoint: bool = False


def _not_project(path: Path, why: str) -> WorkbenchError:
    return WorkbenchError(
        f"{path} is not a Tokenizer Workbench project ({why}); choose a .tokproj file "
        "or create a new project.")


def read_header(path: Path) -> Header:
    """Read and check the SQLite header without SQLite, so a bad file is never touched."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise WorkbenchError(f"Cannot read {path}: {e.strerror}; check the path and its permissions.") from None
    if stat.S_ISDIR(st.st_mode):
        raise _not_project(path, "it is a folder")
    if not stat.S_ISREG(st.st_mode):  # open() on a FIFO would wait for a writer forever
        raise _not_project(path, "not a regular file")
    try:
        with open(path, "rb") as f:
            head = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except IsADirectoryError:
        raise _not_project(path, "it is a folder") from None
    except OSError as e:
        raise WorkbenchError(f"Cannot read {path}: {e.strerror}; check the file's permissions.") from None
    if size == 0:
        raise _not_project(path, "the file is empty")
    if not head.startswith(MAGIC):
        if MAGIC.startswith(head):
            raise _truncated(path)
        raise _not_project(path, "not an SQLite database")
    if len(head) < 100:
        raise _truncated(path)
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    count = int.from_bytes(head[28:32], "big")
    count_valid = count > 0 and head[24:28] == head[92:96]
    if page_size < 512 or page_size & (page_size - 1):
        raise _not_project(path, "the SQLite header is damaged")
    needs_checkpoint = False
    if count_valid and size < count * page_size:
        if not _wal_frames(path, page_size):
            raise _truncated(path)
        needs_checkpoint = True
    return Header(
        page_size=page_size,
        page_count=count if count_valid else None,
        user_version=int.from_bytes(head[60:64], "big"),
        application_id=int.from_bytes(head[68:72], "big"),
        file_size=size,
        needs_checkpoint=needs_checkpoint,
    )


def refuse_linked_side_files(path: Path) -> None:
    """A ``-wal``/``-shm``/``-journal`` that is a symbolic link: SQLite refuses to open through it
    (a link could make it write elsewhere); say that the link is the reason."""
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        if side.is_symlink():
            raise WorkbenchError(
                f"{side} is a symbolic link, and a project's side files must be real files (SQLite will "
                f"not write through a link); remove the link, or put the file it points to in its place, "
                f"and open {path.name} again.")


def set_aside_foreign_wal(path: Path, header: Header) -> str:
    """Move a stale ``-wal`` written for another database out of the way; the line to tell, or "".

    Nothing is judged while another process has the file open (its WAL is live).
    """
    log = Path(f"{path}-wal")
    try:
        if not log.exists() or log.stat().st_size == 0 or wal.in_use(path):
            return ""
        reason = wal.foreign_reason(path, header.page_size, header.needs_checkpoint, file_uri)
    except OSError as e:
        raise WorkbenchError(f"Cannot read {log} ({e.strerror}); check its permissions.") from None
    if reason is None:
        return ""
    try:
        return wal.set_aside(path, reason)
    except OSError as e:
        raise WorkbenchError(f"{log} was not written for {path.name} ({reason}) and cannot be moved aside "
                             f"({e.strerror}); move it out of the folder yourself, then open the project "
                             "again.") from None


def _wal_frames(path: Path, page_size: int) -> bool:
    """Whether a ``-wal`` file beside ``path`` holds at least one frame of this page size."""
    try:
        return os.path.getsize(f"{path}-wal") >= 32 + 24 + page_size
    except OSError:
        return False


def recover_wal(path: Path) -> str:
    """Finish a checkpoint a full disk interrupted; returns the one line to tell the user.

    A checkpoint copies pages from the ``-wal`` file into the main file, header first: when the
    disk fills up half way, the header already counts pages the file does not have yet, but the
    WAL still holds every committed page. Checkpointing again (with space) restores the file
    exactly; ``quick_check`` then confirms it before anything else touches it.
    """
    try:
        conn = connect(path, "rw")
    except sqlite3.Error as e:
        raise open_error(path, e) from None
    try:
        busy, frames, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy or frames != done:
            raise WorkbenchError(f"{path} needs a moment: another program holds it while it is being "
                                 "recovered; close that program and try again.")
        result = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as e:
        raise open_error(path, e) from None
    finally:
        conn.close()
    if result != "ok":
        raise WorkbenchError(f"{path} is damaged ({result}); restore it from a backup.")
    return (f"{path} was left unfinished by an earlier failed save (a full disk?); recovered it "
            "from its write-ahead log, nothing was lost")


def open_error(path: Path, e: sqlite3.Error, *, action: str = "open") -> WorkbenchError:
    """One line for an SQLite failure while opening: locked, full disk, read-only or damaged."""
    text = str(e).lower()
    if "locked" in text or "busy" in text:
        return WorkbenchError(f"{path} is locked by another program ({e}); close that program "
                              "or wait for it to finish, then try again.")
    if "full" in text:
        return WorkbenchError(f"Cannot {action} {path}: the disk is full; free some space and try again "
                              "(nothing in the project was lost).")
    if is_readonly_error(e):
        return WorkbenchError(f"Cannot {action} {path}: the system refused to write it ({e}); "
                              "copy it to a writable folder.")
    if "unable to open" in text or "i/o" in text:
        return WorkbenchError(f"Cannot {action} {path} ({e}); check the disk, the path and its permissions.")
    return WorkbenchError(f"{path} is damaged ({e}); restore it from a backup.")


def check_integrity(path: Path, conn: sqlite3.Connection) -> None:
    """``PRAGMA quick_check`` before a new run is written: never add to a malformed file.

    quick_check reads every page once (no index cross-checks), so its cost is one read of the file.
    """
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        raise open_error(path, e) from None
    if [r[0] for r in rows] != ["ok"]:
        first = " ".join(str(rows[0][0]).replace("*** in database main ***", "").split()) if rows else "no answer"
        more = f" and {len(rows) - 1} more problems" if len(rows) > 1 else ""
        raise WorkbenchError(f"{path} is damaged ({first}{more}); nothing was written to it: "
                             "restore it from a backup or train into a new project.")


def _truncated(path: Path) -> WorkbenchError:
    return WorkbenchError(
        f"{path} is truncated (shorter than its own header says); restore it from a backup "
        "or the original copy.")


def check_identity(path: Path, application_id: int, user_version: int) -> None:
    """Refuse files of other programs and of newer Workbench versions."""
    if application_id != schema.APPLICATION_ID:
        raise _not_project(path, "an SQLite database of another program")
    newest = schema.current_version()
    if user_version > newest:
        raise WorkbenchError(
            f"{path} was saved by a newer Tokenizer Workbench (project format {user_version}; "
            f"this version reads up to {newest}); update the app to open it.")
    if user_version < 1:
        raise WorkbenchError(f"{path} is damaged (its schema was never completed); "
                             "restore it from a backup or create a new project.")


def file_uri(path: Path, **params: str) -> str:
    """An SQLite URI for ``path``; quoting keeps ``?`` and ``#`` in names from becoming syntax."""
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{urllib.parse.quote(str(path.absolute()))}" + (f"?{query}" if query else "")


class Connection(sqlite3.Connection):
    """An SQLite connection whose statements can be given a time limit (:meth:`limit_queries`).

    SQLite calls the progress handler every 5,000 virtual-machine steps of plain SQL, every 100
    when the statement calls one of our ``wb_`` functions (a regex filter makes each row's steps
    slow: 5,000 of them can take seconds). Not every 100 always: each call takes the GIL, and a
    worker's long scan calling it that often starved the window's thread of it (CPython's GIL
    convoy: the workers were 2–7× slower and the window waited behind them). It stops the
    statement once the time since the last :meth:`execute` passes the limit, or at once after
    :meth:`cancel` (which any thread may call). Stopped statements raise ``sqlite3.OperationalError``
    ("interrupted"). Python functions a query calls (a regex filter) count towards the time but
    are not cut short themselves; ``executemany`` and cursors' own ``execute`` are not limited.
    """

    _limit: float | None = None
    _deadline: float = math.inf
    _until: float = math.inf  # the end of a :meth:`within` block, in the thread's CPU time
    _stop: Callable[[], bool] | None = None
    _steps = 0  # the progress handler's interval as installed; 0 = none

    def _watch(self, sql: str = "") -> None:
        steps = _STEPS_CALLING_PYTHON if "wb_" in sql else _STEPS_PLAIN
        if steps != self._steps:
            self._steps = steps
            self.set_progress_handler(self._progress, steps)

    def limit_queries(self, seconds: float) -> None:
        self._limit = float(seconds)
        self._watch()

    def stop_when(self, should_stop: Callable[[], bool]) -> None:
        """Also stop a statement as soon as ``should_stop()`` (a worker's job was cancelled or
        overtaken, or its own total time ran out); the time limit keeps applying."""
        self._stop = should_stop
        self._watch()

    def cancel(self) -> None:
        self._deadline = -math.inf

    @contextmanager
    def within(self, seconds: float) -> Iterator[Callable[[], bool]]:
        """Stop every statement run inside the block once the calling thread has spent ``seconds``
        of CPU time in it (on top of the per-statement limit); yields a function that says whether
        it has — a caller that must answer within a frame can then do the work elsewhere. CPU time,
        not wall time: on a loaded machine a quick query can wait longer than that for a core.
        The progress handler runs between VM steps only: a Python function the query calls (a regex
        over a piece) bounds itself by :func:`cpu_left` and says so with :func:`budget_spent`."""
        until = time.thread_time() + seconds
        spent = [False]
        self._until = until
        _budget.until, _budget.spent = until, spent
        self._watch()
        try:
            yield lambda: spent[0] or time.thread_time() > until
        finally:
            self._until = math.inf
            _budget.until = _budget.spent = None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if self._limit is not None:
            self._deadline = time.monotonic() + self._limit
        if self._steps:
            self._watch(sql)
        return super().execute(sql, parameters)

    def _progress(self) -> int:
        stop = self._stop
        if time.monotonic() > self._deadline or (stop is not None and stop()):
            return 1
        return 1 if self._until != math.inf and time.thread_time() > self._until else 0


_STEPS_PLAIN = 5_000  # ~0.1–1 ms of plain SQL between two checks of the time and of cancel
_STEPS_CALLING_PYTHON = 100  # a row that runs a regex over a piece can take ~50 ms
_budget = threading.local()  # the running thread's Connection.within block: its end and "spent" flag


def cpu_left() -> float | None:
    """Seconds of CPU time the calling thread's :meth:`Connection.within` block has left, or None
    outside one (a worker's query: no such bound)."""
    until = getattr(_budget, "until", None)
    return None if until is None else until - time.thread_time()


def budget_spent() -> None:
    """A function a query calls stopped early because the :meth:`Connection.within` block's time
    ran out: the block reports it ran out, so its caller hands the work on instead of failing."""
    spent = getattr(_budget, "spent", None)
    if spent is not None:
        spent[0] = True


def connect(path: Path, mode: str) -> sqlite3.Connection:
    """A connection in autocommit mode: the store writes ``BEGIN IMMEDIATE`` itself.

    ``mode`` is ``"ro"``, ``"rw"`` or ``"rwc"``. ``check_same_thread=False`` lets a store built
    on one thread be used on another (never on two at once). No SQL stored in the file runs
    through it (:func:`schema.distrust_stored_code`).
    """
    conn = sqlite3.connect(file_uri(path, mode=mode), uri=True, isolation_level=None,
                           timeout=BUSY_TIMEOUT_S, check_same_thread=False, factory=Connection)
    schema.distrust_stored_code(conn)
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open without the right to write; on read-only media fall back to ``immutable=1``.

    A WAL-mode file needs a ``-shm`` file; in a read-only folder where none exists SQLite cannot
    open it normally, but nothing can be writing it either, so ``immutable`` is safe there.
    """
    conn = connect(path, "ro")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        if os.access(path.parent, os.W_OK):
            raise
    conn = sqlite3.connect(file_uri(path, mode="ro", immutable="1"), uri=True,
                           isolation_level=None, check_same_thread=False, factory=Connection)
    schema.distrust_stored_code(conn)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return conn


def probe(path: Path, conn: sqlite3.Connection) -> int:
    """Check identity and tables through a read-only connection; return the schema version."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0] & 0xFFFFFFFF
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as e:
        raise open_error(path, e) from None
    check_identity(path, app_id, version)
    if version == schema.current_version():
        check_tables(path, tables)
    try:
        _foreign, altered = schema.unknown_objects(conn, version)
    except sqlite3.DatabaseError as e:
        raise open_error(path, e) from None
    refuse_altered(path, altered)
    return version


def refuse_altered(path: Path, altered: list[str]) -> None:
    """Our tables defined otherwise (extra columns computed by SQL, other constraints): refused."""
    if altered:
        names = ", ".join(repr(n)[:40] for n in altered[:5])
        raise WorkbenchError(f"{path} is not a project this version can trust: its tables {names} are "
                             "defined differently from what Tokenizer Workbench writes; open the original "
                             "file or restore it from a backup.")


def check_tables(path: Path, tables: set[str]) -> None:
    """Refuse a current-version file without every required table (also run right after an
    upgrade, inside its transaction: an old file missing a table is refused and left untouched)."""
    if not schema.REQUIRED_TABLES <= tables:
        missing = ", ".join(sorted(schema.REQUIRED_TABLES - tables))
        raise WorkbenchError(f"{path} is damaged (tables missing: {missing}); "
                             "restore it from a backup.")


def write_problem(path: Path) -> str | None:
    """Why this file cannot be written, or ``None`` if the OS says it can.

    ``os.access`` reports a read-only mount even for root; plain permission bits do not stop
    root, which is why the store also falls back when SQLite itself refuses to write.
    """
    if not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(path.parent, os.W_OK):
        return "its folder is read-only"
    return None


def is_readonly_error(error: sqlite3.Error) -> bool:
    text = str(error).lower()
    return "readonly" in text or "read-only" in text


# ---- is the process that owns a running run still alive? -------------------------------------

def owner_alive(pid: int | None, host: str | None, started: float | None = None) -> bool:
    """False only when we can tell the owner is gone; another host's process is assumed alive.

    Through psutil (the same on Linux, macOS and Windows): a zombie — killed, not yet reaped by
    its parent — will never write again, and a process created after the run ``started`` only
    inherited the dead owner's pid.
    """
    import socket  # here: the run's writer process opens projects and needs neither

    import psutil

    if pid is None:
        return False
    if host and host != socket.gethostname():
        return True
    if pid == os.getpid():
        return True
    try:
        proc = psutil.Process(pid)
        if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return False
        if isinstance(started, (int, float)) and proc.create_time() > started + 1.0:
            return False  # the pid was reused (1 s of slack for clock granularity)
        return True
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # exists but belongs to someone else
