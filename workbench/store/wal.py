"""Whether a ``-wal`` file found beside a project belongs to it, before SQLite may apply it.

SQLite applies any valid write-ahead log it finds beside a database: a WAL checks itself (its
frames carry the header's salts and a running checksum) but nothing ties it to *one* database.
Restoring a backup over a project that a crash left with a ``-wal`` therefore makes SQLite
replay pages written for another state of the file — a malformed file, or silently another
copy's content. So before the first connection a stale WAL is checked here:

1. The frames SQLite would apply are found exactly as SQLite finds them (:func:`committed_pages`):
   header magic, version and checksum, each frame's salts and cumulative checksum, and only
   frames up to the last commit frame. A WAL with none applies nothing and is left alone.
2. A WAL whose every page is already in the file (a checkpoint finished, the WAL was not reset
   yet) changes nothing: it belongs. So does one that an interrupted checkpoint left half copied
   (the file is shorter than its header says and its page 1 is the WAL's last page 1).
3. Otherwise it must continue *this* file, told by a marker of ours, the ``file_lineage`` row of
   ``settings``: ``{"id": random, "seq": n}``. The first write of every session stamps a fresh
   ``id`` and checkpoints it into the file itself (:func:`stamp_lineage`), and every later write
   transaction bumps ``seq`` (:data:`BUMP_LINEAGE`), so every WAL a workbench writes carries the row. The WAL
   belongs when the row read through it has the file's own ``id`` and a higher ``seq``.
   A copy of the project (a backup, a mailed file) stops sharing the ``id`` as soon as either
   side is written, so a WAL written on one is refused on the other.
4. A copy taken *during* a session shares the ``id``; restored over the file after a crash, a WAL
   begun after a later checkpoint would carry a higher ``seq`` yet lack pages the copy never got
   (a malformed file). So the WAL must also begin at or before the file's state: the marker in its
   first commit (each commit bumps ``seq`` by one) is at most the file's ``seq`` + 1
   (:func:`first_commit_seqs`; freed bytes of a page hold only older markers, so the highest one
   found there is the live one).

What it leaves out: a WAL that never touched the row (written by a workbench before this check
existed, or by another SQLite program editing the file) cannot be told apart and is used as
before — unless the file passes ``quick_check`` alone and fails it read through the log (a log
another database's program wrote); a WAL held by a live process (another program has the project open: its ``-shm`` lock
is held) is never judged — it is that program's live log. "Opened for writing" above means
written: a session that only reads stamps nothing, so its bytes stay as they were.
Non-POSIX systems cannot test that lock, so there a ``-shm`` beside the file means "live".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import struct
import time
from pathlib import Path
from typing import NamedTuple

from workbench.store import schema

LINEAGE_KEY = "file_lineage"

#: Run inside every write transaction: the ``settings`` page with the marker lands in every WAL.
#: SQLite skips rewriting an unchanged row, hence a counter; a crafted non-JSON value is left.
BUMP_LINEAGE = ("UPDATE settings SET value = json_set(value, '$.seq', "
                "coalesce(json_extract(value, '$.seq'), 0) + 1) "
                f"WHERE key = '{LINEAGE_KEY}' AND json_valid(value)")

_MAGICS = (0x377F0682, 0x377F0683)
_WAL_VERSION = 3007000
_SHM_DMS_BYTE = 128  # SQLite's "dead man switch": every open connection holds a read lock on it


class Committed(NamedTuple):  # not a dataclass: see opening.Header
    page_size: int
    pages: dict[int, int]  # page number -> offset of its last committed image in the WAL
    first: tuple[int, ...] = ()  # offsets of the page images of the WAL's first commit


def _checksum(data: bytes, big: bool, s0: int, s1: int) -> tuple[int, int]:
    words = struct.unpack((">" if big else "<") + f"{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def committed_pages(wal: Path) -> Committed | None:
    """The frames SQLite would apply from ``wal``; None when it would apply none."""
    pages: dict[int, int] = {}
    first: list[int] = []
    with open(wal, "rb") as f:
        head = f.read(32)
        if len(head) < 32:
            return None
        magic, version, page_size, _seq, salt1, salt2, c1, c2 = struct.unpack(">8I", head)
        big = bool(magic & 1)
        if magic not in _MAGICS or version != _WAL_VERSION or page_size < 512 or page_size & (page_size - 1):
            return None
        sums = _checksum(head[:24], big, 0, 0)
        if sums != (c1, c2):
            return None
        pending: dict[int, int] = {}
        offset = 32
        while True:
            frame = f.read(24)
            page = f.read(page_size)
            if len(frame) < 24 or len(page) < page_size:
                break
            pgno, commit, s1, s2, f1, f2 = struct.unpack(">6I", frame)
            if (s1, s2) != (salt1, salt2) or pgno == 0:
                break
            sums = _checksum(page, big, *_checksum(frame[:8], big, *sums))
            if sums != (f1, f2):
                break
            pending[pgno] = offset + 24
            if not pages:
                first.append(offset + 24)
            if commit:
                pages.update(pending)
                pending = {}
            offset += 24 + page_size
    return Committed(page_size, pages, tuple(first)) if pages else None


_MARKER = re.compile(rb'\{"id": ?"([0-9a-f]{1,64})", ?"seq": ?([0-9]{1,18})\}')


def first_commit_seqs(wal: Path, found: Committed, lineage_id: str) -> list[int]:
    """The ``seq`` values of the marker ``lineage_id`` in the page images of the WAL's first commit."""
    seqs = []
    with open(wal, "rb") as log:
        for offset in found.first:
            log.seek(offset)
            for m in _MARKER.finditer(log.read(found.page_size)):
                if m.group(1).decode() == lineage_id:
                    seqs.append(int(m.group(2)))
    return seqs


def in_use(path: Path) -> bool:
    """Whether another process has the database open (it holds SQLite's lock in ``-shm``)."""
    shm = Path(f"{path}-shm")
    if not shm.exists():
        return False
    try:
        import fcntl
    except ImportError:  # no way to test the lock: assume the log is live
        return True
    try:
        fd = os.open(shm, os.O_RDWR)
    except OSError:
        return True
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _SHM_DMS_BYTE)
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, _SHM_DMS_BYTE)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _all_applied(path: Path, wal: Path, found: Committed) -> bool:
    with open(path, "rb") as db, open(wal, "rb") as log:
        for pgno, offset in found.pages.items():
            log.seek(offset)
            db.seek((pgno - 1) * found.page_size)
            if log.read(found.page_size) != db.read(found.page_size):
                return False
    return True


def _page_one_matches(path: Path, wal: Path, found: Committed) -> bool:
    offset = found.pages.get(1)
    if offset is None:
        return False
    with open(path, "rb") as db, open(wal, "rb") as log:
        log.seek(offset)
        return log.read(found.page_size) == db.read(found.page_size)


def _lineage(uri: str) -> dict | None:
    """The marker row as a dict, None when there is none; sqlite3.Error when unreadable."""
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        schema.distrust_stored_code(conn)  # a crafted file's "settings" may be a view
        try:
            row = conn.execute("SELECT value FROM settings WHERE key = ?", (LINEAGE_KEY,)).fetchone()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return None
            raise
    finally:
        conn.close()
    try:
        value = json.loads(row[0]) if row and isinstance(row[0], str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _sound(uri: str) -> bool:
    """``PRAGMA quick_check`` passes (every page read once; no index cross-checks)."""
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        try:
            schema.distrust_stored_code(conn)
            return [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()] == ["ok"]
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def foreign_reason(path: Path, db_page_size: int, needs_checkpoint: bool, uri) -> str | None:
    """Why the ``-wal`` beside ``path`` was not written for it, or None if it may be used.

    ``uri(path, **params)`` builds the SQLite URI (``opening.file_uri``). Reads only: the file
    through ``immutable=1`` (its own bytes, no WAL) and through ``mode=ro`` (with the WAL); a
    ``-shm`` that reading creates is removed again.
    """
    wal = Path(f"{path}-wal")
    found = committed_pages(wal)
    if found is None:
        return None
    if found.page_size != db_page_size:
        return "its page size differs from the project's"
    if needs_checkpoint:
        return None if _page_one_matches(path, wal, found) else "it is not the log the file's last save was copying"
    if _all_applied(path, wal, found):
        return None
    shm = Path(f"{path}-shm")
    had_shm = shm.exists()
    try:
        own = _lineage(uri(path, mode="ro", immutable="1"))
        try:
            seen = _lineage(uri(path, mode="ro"))
        except sqlite3.Error as e:
            return f"the project cannot be read through it ({e})"
    except sqlite3.Error:
        return None  # the file itself is unreadable: opening reports that, the WAL is not the cause
    finally:
        if not had_shm:
            with contextlib.suppress(OSError):
                shm.unlink()
    if own == seen:
        # The log never touched the marker: not written by a workbench that keeps it (an older
        # one, or another SQLite program). Used as before unless it breaks a file that is sound
        # alone: a log another database's program wrote (one read of the file each way).
        try:
            if _sound(uri(path, mode="ro", immutable="1")) and not _sound(uri(path, mode="ro")):
                return "the project is malformed read through it: it was written for another database"
        finally:
            if not had_shm:
                with contextlib.suppress(OSError):
                    shm.unlink()
        return None
    if own is not None and seen is not None and own.get("id") == seen.get("id") \
            and _seq(seen) > _seq(own):
        begun = first_commit_seqs(wal, found, str(own.get("id")))
        if begun and max(begun) > _seq(own) + 1:
            return ("it continues a later state of this project than the file holds, "
                    "as when the file was restored from an older copy")
        return None
    return "it was written by another copy of the project or another database"


def _seq(lineage: dict) -> int:
    seq = lineage.get("seq")
    return seq if isinstance(seq, int) else -1


def set_aside(path: Path, reason: str) -> str:
    """Rename the ``-wal`` beside ``path`` out of SQLite's way; the one line to tell the user."""
    wal = Path(f"{path}-wal")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = Path(f"{wal}.set-aside-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = Path(f"{wal}.set-aside-{stamp}-{n}")
    os.rename(wal, target)
    return (f"{wal.name} beside {path.name} was not written for it ({reason}); opened the project "
            f"without it and moved it aside to {target.name} (nothing was deleted)")


def stamp_lineage(conn: sqlite3.Connection) -> None:
    """Give this file a fresh marker, inside the caller's (first) write transaction of a session.

    The caller then checkpoints (:func:`settle_lineage`) so the marker is in the file itself: from
    there on a copy of the file taken earlier no longer shares the ``id``, and a WAL written on
    either copy is refused on the other. Done on the first write, not on open, so opening a file
    for writing and leaving it (or refusing it) changes none of its bytes.
    """
    value = json.dumps({"id": os.urandom(8).hex(), "seq": 1})  # secrets.token_hex(8), without its 4 MB of OpenSSL
    conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) "
                 "DO UPDATE SET value = excluded.value", (LINEAGE_KEY, value))


def settle_lineage(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the file without waiting; a reader holding an older snapshot only
    delays the marker reaching the file until the next checkpoint."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
