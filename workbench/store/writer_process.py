"""The process that commits a training run's batches: ``python -m workbench.store.writer_process``.

Started by :class:`workbench.store.writer.RunWriter` with the project path and the run id; reads
batch frames on stdin (on a thread, so the pipe never fills while SQLite works), commits each in
one transaction and answers ``ok`` (or ``error <Class> <message>`` and exits) on stdout. It
ignores SIGINT and SIGTERM: it ends when its stdin does, so it never dies with a batch the
trainer handed over. End-of-file without the closing frame means the trainer was killed; the
complete batches already read are committed all the same.
"""

from __future__ import annotations

import os
import queue
import signal
import sqlite3
import sys
import threading
import traceback
from pathlib import Path
from typing import BinaryIO, NoReturn

from workbench.store import opening, wal
from workbench.store.writer import Batch

_BUSY_ATTEMPTS = 6  # × opening.BUSY_TIMEOUT_S (5 s) each


def main(argv: list[str] | None = None) -> NoReturn:
    """Write, then end the process at once: a normal interpreter exit would abort on the reading
    thread, which may sit in a read of stdin (the trainer's pipe) that nothing else will end."""
    try:
        code = _write(argv if argv is not None else sys.argv[1:])
    except BaseException:  # noqa: BLE001 - the trainer reports the last line of stderr
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    os._exit(code)


def _write(argv: list[str]) -> int:
    for name in ("SIGINT", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    path, run_id = argv[:2]
    run = int(run_id)
    stdout = sys.stdout.buffer
    conn = opening.connect(Path(path), "rw")
    frames: queue.SimpleQueue[Batch | None] = queue.SimpleQueue()
    sys.setswitchinterval(0.001)  # hand the GIL to the reading thread soon after each chunk
    threading.Thread(target=_read_frames, args=(sys.stdin.buffer, frames), daemon=True).start()
    try:
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-16000")
        answering = True
        while (batch := frames.get()) is not None:
            failure = _commit(conn, batch, run)
            if failure is not None:
                message = " ".join(str(failure).split())
                if answering:
                    try:
                        _answer(stdout, f"error {type(failure).__name__} {message}")
                    except OSError:
                        pass
                return 1
            try:
                if answering:
                    _answer(stdout, "ok")
            except OSError:
                # The trainer is gone (broken pipe; EINVAL on Windows). Nobody reads answers any
                # more, but every complete batch it sent is still committed, up to end-of-file.
                answering = False
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        conn.close()
    return 0


def _commit(conn: sqlite3.Connection, batch: Batch, run: int) -> sqlite3.Error | None:
    """Commit one batch in one transaction; None, or the error that refused it.

    A busy file (another program writing it) is retried for about half a minute, as each
    attempt waits out the connection's busy timeout: training goes on meanwhile, its batches wait.
    """
    for attempt in range(_BUSY_ATTEMPTS):
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                batch.write(conn, run)
                conn.execute(wal.BUMP_LINEAGE)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # some errors (a full disk) roll back already
                    conn.execute("ROLLBACK")
                raise
            return None
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" in text or "busy" in text) and attempt + 1 < _BUSY_ATTEMPTS:
                continue
            return exc
        except sqlite3.Error as exc:
            return exc
    return None  # not reached


def _read_frames(stdin: BinaryIO, frames: queue.SimpleQueue[Batch | None]) -> None:
    """On a thread: keep the pipe drained while the main thread commits, so the trainer never
    waits on a full pipe (64 KB on macOS, less on Windows; Linux gets 1 MB)."""
    try:
        while (batch := Batch.read(stdin)) is not None:
            frames.put(batch)
    finally:
        frames.put(None)


def _answer(stdout, line: str) -> None:
    stdout.write(line.encode("utf-8") + b"\n")
    stdout.flush()


if __name__ == "__main__":
    main()
