"""Batched writing of a training run, off the trainer's thread: what keeps the store's cost small.

The trainer makes a merge every 20–100 µs; committing each one would cost an fsync-sized pause per
merge. :class:`RunWriter` collects merges and hands them over as one batch, which is committed as
one transaction (merges, step metrics and new vocabulary together): a crash or ``kill -9`` loses
at most the batches not yet committed (about the last 100 ms), and everything committed stays
consistent.

Where the time goes, and why it is done this way. Binding parameters row by row with
``executemany`` holds the GIL for about 3 µs per merge (~10 % of a fast trainer's time), and a
thread doing it would fight the trainer for the GIL on every row. So:

* the trainer keeps its own merge log anyway (``BpeTrainer.merges``, ``frequencies``,
  ``token_counts``, ``vocab``); :meth:`RunWriter.add_log`, called about every 100 ms, reads the new
  entries of those lists in bulk — nothing is done per merge on the trainer's behalf;
* a batch becomes one compact JSON text (C code, about 0.5 µs per merge) plus one blob of the new
  pieces concatenated;
* a writer thread with its own connection runs one ``INSERT … SELECT … FROM json_each(?)`` per
  table: SQLite parses, inserts and commits in C with the GIL released, on the other core, while
  training goes on.

:meth:`RunWriter.add` takes one merge at a time for callers without such a log (tests, imports).
Where SQLite lacks the JSON functions (builds older than 3.38 may omit them) batches are written
with ``executemany`` on the caller's thread instead.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from workbench.core.model import MergeEvent
from workbench.store import opening

if TYPE_CHECKING:
    from workbench.store.project import ProjectStore

# A batch is a JSON array of rows ``[rank, [left, right, new], frequency, token_count, length]``
# (``?2``) and the batch's pieces concatenated in row order (``?3``). The vocabulary size after a
# merge is one more than the largest id so far (ids are handed out in order), so it is derived.
_BATCH_ROWS = (
    "SELECT key, json_extract(value, '$[0]') AS rank, json_extract(value, '$[1][0]') AS a, "
    "json_extract(value, '$[1][1]') AS b, json_extract(value, '$[1][2]') AS n, "
    "json_extract(value, '$[2]') AS f, json_extract(value, '$[3]') AS t, "
    "json_extract(value, '$[4]') AS len FROM json_each(?2)")
_MERGES_FROM_JSON = (
    "INSERT INTO merges (run_id, rank, left_id, right_id, new_id, frequency, length, vocab_size, "
    "token_count) SELECT ?1, rank, a, b, n, f, len, "
    "max((SELECT coalesce(max(id), -1) FROM vocab WHERE run_id = ?1), "
    f"max(n) OVER (ORDER BY key)) + 1, t FROM ({_BATCH_ROWS})")
# A merge that recreates an existing piece reuses its id (as ``tokenizers`` does): its vocabulary
# row exists already, holding the same bytes, so OR IGNORE skips it. A piece ends where the
# running sum of the batch's piece lengths says.
_VOCAB_FROM_JSON = (
    "INSERT OR IGNORE INTO vocab (run_id, id, piece, kind) "
    "SELECT ?1, n, substr(?3, ends - len + 1, len), 'merge' FROM ("
    f"SELECT n, len, sum(len) OVER (ORDER BY key) AS ends FROM ({_BATCH_ROWS}))")
_MERGES_ROWS = ("INSERT INTO merges (run_id, rank, left_id, right_id, new_id, frequency, length, "
                "vocab_size, token_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
_VOCAB_ROWS = "INSERT OR IGNORE INTO vocab (run_id, id, piece, kind) VALUES (?, ?, ?, 'merge')"
_LARGEST_ID = "SELECT coalesce(max(id), -1) FROM vocab WHERE run_id = ?"
_EXTRA = "UPDATE merges SET extra = ? WHERE run_id = ? AND rank = ?"
_TOUCH_RUN = "UPDATE runs SET updated = ? WHERE id = ?"
# No cycle check (the rows are tuples of ints) and no spaces: a fifth faster than json.dumps.
_ROWS_TO_JSON = json.JSONEncoder(check_circular=False, separators=(",", ":")).encode


def json_functions_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite can run the JSON batch insert (json_each, window functions)."""
    try:
        conn.execute("SELECT sum(json_extract(value, '$[0]')) OVER (ORDER BY key) "
                     "FROM json_each('[[1]]')").fetchall()
        return True
    except sqlite3.OperationalError:
        return False


class RunWriter:
    """Appends one run's merges through its store; use as a context manager or call close().

    Feed it either with :meth:`add_log` (a trainer's merge log, in bulk) or with :meth:`add`
    (one merge at a time), not both.
    """

    def __init__(self, store: "ProjectStore", run_id: int, *, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic, background: bool | None = None) -> None:
        self._store = store
        self.run_id = run_id
        self.interval = interval  # add() hands over when the last hand-over is this old
        self._clock = clock
        self._last = clock()
        # The batch being collected, column by column.
        self._ranks: list[int] = []
        self._merges: list[tuple[int, int, int]] = []
        self._frequencies: list[int] = []
        self._token_counts: list[int] = []
        self._pieces: list[bytes] = []
        self._extras: list[tuple[str, int, int]] = []  # rare: (JSON, run, rank) for _EXTRA
        self._log_taken = 0  # entries of the trainer's log already collected by add_log()
        self.batches = 0  # transactions committed, for tests and progress display
        self.closed = False
        self._handed_over = 0  # merges given to the writer thread and not yet committed
        self._error: BaseException | None = None
        self._idle = threading.Condition()
        self._queue: queue.SimpleQueue[tuple[str, bytes, list, int] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        if background is None:
            background = json_functions_available(store.connection)
        if background:
            self._conn = opening.connect(store.path, "rw")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._thread = threading.Thread(target=self._commit_batches, daemon=True,
                                            name=f"RunWriter-{run_id}")
            self._thread.start()

    @property
    def pending(self) -> int:
        """Merges added but not yet committed."""
        return len(self._ranks) + self._handed_over

    def add(self, event: MergeEvent, piece: bytes,
            extra: Mapping[str, Any] | None = None) -> None:
        """Queue one merge: its merge row, its new vocabulary entry (if new) and its step metrics.

        ``piece`` is the merged piece's bytes (the trainer's ``vocab[event.new_id]``); the batch
        is handed over when the last hand-over is ``interval`` seconds old.
        """
        self._check_open()
        self._ranks.append(event.step - 1)
        self._merges.append((event.left, event.right, event.new_id))
        self._frequencies.append(event.frequency)
        self._token_counts.append(event.token_count)
        self._pieces.append(piece)
        if extra:
            self._extras.append((json.dumps(dict(extra)), self.run_id, event.step - 1))
        if self._clock() - self._last >= self.interval:
            self._hand_over()

    def add_log(self, merges: Sequence[tuple[int, int, int]], frequencies: Sequence[int],
                token_counts: Sequence[int], vocab: Sequence[bytes]) -> None:
        """Hand over the log entries added since the last call, rank = index in the log.

        The arguments are a trainer's growing lists (``BpeTrainer.merges`` …); only their new
        tail is read, so the trainer does nothing per merge for the store.
        """
        self._check_open()
        start, end = self._log_taken, len(merges)
        if end == start:
            return
        new = merges[start:end]
        self._ranks.extend(range(start, end))
        self._merges.extend(new)
        self._frequencies.extend(frequencies[start:end])
        self._token_counts.extend(token_counts[start:end])
        self._pieces.extend([vocab[n] for _, _, n in new])
        self._log_taken = end
        self._hand_over()

    def flush(self) -> None:
        """Commit everything added so far and wait for it (a no-op when nothing is pending).

        Raises the error that stopped the writing (a full disk, say); nothing is written after it.
        """
        self._hand_over()
        self.wait()

    def wait(self) -> None:
        """Block until every batch handed over so far is committed (or has failed)."""
        if self._thread is not None:
            with self._idle:
                self._idle.wait_for(lambda: self._handed_over == 0 or self._error is not None)
        self._raise_error()

    def close(self) -> None:
        """Flush, stop the writer thread and detach from the store; safe to call twice."""
        if self.closed:
            return
        try:
            self.flush()
        finally:
            self.closed = True
            self._store._writers.discard(self)
            if self._thread is not None:
                self._queue.put(None)
                self._thread.join()
                self._conn.close()

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the hand-over and the writer thread ---------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("RunWriter used after close()")
        if self._error is not None:  # stop the trainer at once, not at the next hand-over
            self._raise_error()

    def _take_batch(self) -> tuple[list[tuple], list[bytes], list[tuple[str, int, int]]]:
        rows = list(zip(self._ranks, self._merges, self._frequencies, self._token_counts,
                        map(len, self._pieces)))
        batch = rows, self._pieces, self._extras
        self._ranks, self._merges, self._frequencies, self._token_counts = [], [], [], []
        self._pieces, self._extras = [], []
        return batch

    def _hand_over(self) -> None:
        self._last = self._clock()
        self._raise_error()
        if not self._ranks:
            return
        if self._thread is None:
            self._write_rows()
            return
        rows, pieces, extras = self._take_batch()
        with self._idle:
            self._handed_over += len(rows)
        self._queue.put((_ROWS_TO_JSON(rows), b"".join(pieces), extras, len(rows)))

    def _commit_batches(self) -> None:
        conn = self._conn
        while (batch := self._queue.get()) is not None:
            rows_json, pieces, extras, n = batch
            if self._error is None:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        conn.execute(_MERGES_FROM_JSON, (self.run_id, rows_json))
                        conn.execute(_VOCAB_FROM_JSON, (self.run_id, rows_json, pieces))
                        conn.executemany(_EXTRA, extras)
                        conn.execute(_TOUCH_RUN, (time.time(), self.run_id))
                        conn.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:  # some errors (a full disk) roll back already
                            conn.execute("ROLLBACK")
                        raise
                except Exception as exc:  # noqa: BLE001 - handed to the trainer's thread
                    self._error = exc
                else:
                    self.batches += 1
            with self._idle:
                if self._error is None:
                    self._handed_over -= n
                self._idle.notify_all()

    def _write_rows(self) -> None:
        """Without JSON functions: bind every row on this thread, in one transaction."""
        run = self.run_id
        with self._store._write() as conn:
            top = conn.execute(_LARGEST_ID, (run,)).fetchone()[0]
            merge_rows, vocab_rows = [], []
            for rank, (a, b, n), f, t, piece in zip(self._ranks, self._merges, self._frequencies,
                                                    self._token_counts, self._pieces):
                top = max(top, n)
                merge_rows.append((run, rank, a, b, n, f, len(piece), top + 1, t))
                vocab_rows.append((run, n, piece))
            conn.executemany(_MERGES_ROWS, merge_rows)
            conn.executemany(_VOCAB_ROWS, vocab_rows)
            conn.executemany(_EXTRA, self._extras)
            conn.execute(_TOUCH_RUN, (time.time(), run))
        self._take_batch()
        self.batches += 1

    def _raise_error(self) -> None:
        if self._error is not None:
            exc = self._error
            if isinstance(exc, sqlite3.OperationalError):
                exc = self._store._explain(exc)
            raise exc
