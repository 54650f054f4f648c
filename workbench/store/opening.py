"""Deciding whether a file may be opened, and how, before anything can change it.

A file that is not ours (foreign SQLite, newer schema, truncated, not SQLite at all, empty) must be
refused and left byte-identical: no journal mode switch, no ``-wal``/``-shm``/``-journal`` beside
it. So the checks run in this order, each one weaker than the next:

1. :func:`read_header` reads the 100-byte SQLite header with plain ``open()``: magic, page size,
   page count versus file size (truncation), application id, schema version.
2. :func:`probe` opens a ``mode=ro`` URI connection and re-reads application id, ``user_version``
   and the table list (authoritative even when recent commits still sit in a ``-wal`` file).

Only then does :mod:`workbench.store.project` open for writing. It also decides read-only mode
(read-only file, folder or medium) here. What this module leaves out: the schema itself
(``schema.py``) and everything after the file is open.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.store import schema

MAGIC = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-shm", "-journal")
BUSY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Header:
    page_size: int
    page_count: int | None  # None when the header says its in-header size is not valid
    user_version: int
    application_id: int
    file_size: int


def _not_project(path: Path, why: str) -> WorkbenchError:
    return WorkbenchError(
        f"{path} is not a Tokenizer Workbench project ({why}); choose a .tokproj file "
        "or create a new project.")


def read_header(path: Path) -> Header:
    """Read and check the SQLite header without SQLite, so a bad file is never touched."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except IsADirectoryError:
        raise _not_project(path, "it is a folder") from None
    except OSError as e:
        raise WorkbenchError(f"Cannot read {path}: {e.strerror}; check the file's permissions.")
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
    if count_valid and size < count * page_size:
        raise _truncated(path)
    return Header(
        page_size=page_size,
        page_count=count if count_valid else None,
        user_version=int.from_bytes(head[60:64], "big"),
        application_id=int.from_bytes(head[68:72], "big"),
        file_size=size,
    )


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


def connect(path: Path, mode: str) -> sqlite3.Connection:
    """A connection in autocommit mode: the store writes ``BEGIN IMMEDIATE`` itself.

    ``mode`` is ``"ro"``, ``"rw"`` or ``"rwc"``. ``check_same_thread=False`` lets a store built
    on one thread be used on another (never on two at once).
    """
    return sqlite3.connect(file_uri(path, mode=mode), uri=True, isolation_level=None,
                           timeout=BUSY_TIMEOUT_S, check_same_thread=False)


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
                           isolation_level=None, check_same_thread=False)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return conn


def probe(path: Path, conn: sqlite3.Connection) -> int:
    """Check identity and tables through a read-only connection; return the schema version."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0] & 0xFFFFFFFF
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as e:
        raise WorkbenchError(f"{path} is damaged ({e}); restore it from a backup.") from None
    check_identity(path, app_id, version)
    if version == schema.current_version() and not schema.REQUIRED_TABLES <= tables:
        missing = ", ".join(sorted(schema.REQUIRED_TABLES - tables))
        raise WorkbenchError(f"{path} is damaged (tables missing: {missing}); "
                             "restore it from a backup.")
    return version


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
