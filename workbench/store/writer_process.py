"""The process that commits a training run's batches: ``python -m workbench.store.writer_process``.

Started by :class:`workbench.store.writer.RunWriter` with the project path and the run id; reads
batch frames on stdin, commits each in one transaction and answers ``ok`` (or ``error <Class>
<message>`` and exits) on stdout. It ignores SIGINT and SIGTERM: it ends when its stdin does, so
it never dies with a batch the trainer handed over. End-of-file without the closing frame means
the trainer was killed; the complete batches already read are committed all the same.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path

from workbench.store import opening
from workbench.store.writer import Batch


def main(argv: list[str] | None = None) -> int:
    for name in ("SIGINT", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    path, run_id = (argv if argv is not None else sys.argv[1:])[:2]
    run = int(run_id)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    conn = opening.connect(Path(path), "rw")
    try:
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-16000")
        while (batch := Batch.read(stdin)) is not None:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    batch.write(conn, run)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # some errors (a full disk) roll back already
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                message = " ".join(str(exc).split())
                _answer(stdout, f"error {type(exc).__name__} {message}")
                return 1
            _answer(stdout, "ok")
    except BrokenPipeError:  # the trainer is gone; everything it sent and we read is committed
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # quiet exit, no flush error
        return 0
    finally:
        conn.close()
    return 0


def _answer(stdout, line: str) -> None:
    stdout.write(line.encode("utf-8") + b"\n")
    stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
