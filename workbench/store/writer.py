"""Batched writing of a training run: one transaction per ~100 ms, not one per merge.

The trainer reports every merge; committing each one would cost an fsync-sized pause per merge.
:class:`RunWriter` buffers merge rows (which carry the step metrics) and vocabulary rows and commits them together when the
last commit is ``interval`` seconds old (checked on each :meth:`RunWriter.add`), on
:meth:`~RunWriter.flush` and on :meth:`~RunWriter.close`. A crash or ``kill -9`` therefore loses
at most the rows added since the last commit; everything committed stays consistent, because
both tables are always written in the same transaction.

There is no background thread: if the trainer stalls, nothing is pending for long anyway, and a
timer thread would need its own locking against the store's connection.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from workbench.core.model import MergeEvent

if TYPE_CHECKING:
    from workbench.store.project import ProjectStore


class RunWriter:
    """Appends one run's merges through its store; use as a context manager or call close()."""

    def __init__(self, store: "ProjectStore", run_id: int, *, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self.run_id = run_id
        self.interval = interval
        self._clock = clock
        self._last = clock()
        self._merges: list[tuple] = []
        self._vocab: list[tuple] = []
        # Ids below this already have a piece: a merge that recreates an existing piece reuses
        # its id (as ``tokenizers`` does), and then there is no new vocabulary row to write.
        self._next_id = store._one("SELECT coalesce(max(id) + 1, 0) FROM vocab WHERE run_id = ?",
                                   (run_id,))[0]
        self.batches = 0  # transactions committed, for tests and progress display
        self.closed = False

    @property
    def pending(self) -> int:
        """Merges added but not yet committed."""
        return len(self._merges)

    def add(self, event: MergeEvent, piece: bytes,
            extra: Mapping[str, Any] | None = None) -> None:
        """Queue one merge: its merge row, its new vocabulary entry (if new) and its step metrics.

        ``piece`` is the merged piece's bytes (the trainer's ``vocab[event.new_id]``).
        """
        if self.closed:
            raise RuntimeError("RunWriter.add() after close()")
        run = self.run_id
        self._merges.append((run, event.step - 1, event.left, event.right, event.new_id,
                             event.frequency, len(piece), event.vocab_size, event.token_count,
                             json.dumps(dict(extra)) if extra else None))
        if event.new_id >= self._next_id:
            self._vocab.append((run, event.new_id, bytes(piece)))
            self._next_id = event.new_id + 1
        if self._clock() - self._last >= self.interval:
            self.flush()

    def flush(self) -> None:
        """Commit everything pending in one transaction (a no-op when nothing is pending).

        On failure the rows stay queued, so a later flush can retry (e.g. after a busy lock).
        """
        if self._merges:
            with self._store._write() as conn:
                conn.executemany("INSERT INTO merges (run_id, rank, left_id, right_id, new_id, "
                                 "frequency, length, vocab_size, token_count, extra) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self._merges)
                conn.executemany("INSERT INTO vocab (run_id, id, piece, kind) "
                                 "VALUES (?, ?, ?, 'merge')", self._vocab)
                conn.execute("UPDATE runs SET updated = ? WHERE id = ?", (time.time(), self.run_id))
            self._merges, self._vocab = [], []
            self.batches += 1
        self._last = self._clock()

    def close(self) -> None:
        """Flush and detach from the store; safe to call twice."""
        if self.closed:
            return
        try:
            self.flush()
        finally:
            self.closed = True
            self._store._writers.discard(self)

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
