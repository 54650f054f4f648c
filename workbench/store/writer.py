"""Batched writing of a training run, in a writer process: what keeps the store's cost small.

The trainer makes a merge every 20–100 µs; committing each one would cost an fsync-sized pause per
merge. :class:`RunWriter` collects merges and hands them over as one batch, committed as one
transaction (merges, step metrics and new vocabulary together): a crash or ``kill -9`` loses at
most the batches not yet committed (about the last 100 ms), and everything committed stays
consistent.

Where the time goes, and why it is done this way (``bench/bench_store.py`` measures it):

* Binding parameters row by row with ``executemany`` costs about 3 µs per merge, ~10 % of a fast
  trainer's time. In a thread of the trainer's process it still holds the trainer's GIL; a JSON
  batch insert run by a thread (SQLite parsing with the GIL released) cut that to about 1.5 µs
  per merge of serialising, plus GIL hand-overs: +4.5 % in all.
* So the SQL runs in a separate process (:mod:`workbench.store.writer_process`, started with
  ``python -I -S``), with its own interpreter, on the other core. The trainer's thread packs each batch into a few machine
  arrays — no per-value formatting — and writes them to the process's stdin (about 0.6 µs per
  merge, most of it reading the trainer's log from memory).
* Re-measured against that writer thread rebuilt on today's TrainLog (``bench_store.py``, 2-core
  VM shared with other jobs, 15k–30k merges): the process was faster in 10 of 12 back-to-back
  rounds, median wall-time ratio process / thread 0.89 and 0.94 in two runs; overhead over
  training alone +7.7 % vs +24.4 % wall (median of paired ratios). So the process stays.
* The trainer keeps a merge log anyway (its :class:`~workbench.core.trainer.TrainLog`):
  :meth:`RunWriter.add_log`, called about every 100 ms, reads the log's new entries in bulk
  (``TrainLog.since``), so nothing is done per merge on the store's behalf.
* Steps that are not merges (Unigram's EM rounds and pruning steps, ``TrainLog.steps``) and a
  merge's float the merges row lacks (WordPiece's likelihood score, ``TrainLog.values``) travel in
  the same batches and land in ``run_steps``. A BPE log has neither, so its batches carry no
  values and its commits no extra INSERT (measured with ``bench_store.py``: unchanged).

The writer process answers each batch with ``ok`` once committed, or ``error <Class> <message>``,
on its stdout; a thread here reads the answers (it needs the GIL once per batch). If the trainer
is killed, the writer process reads end-of-file, commits the complete batches it was sent and
exits; a project busy in another program is retried for about half a minute.
``background=False`` writes on the caller's thread instead (also the fallback when no process
can be started).

Deferred start (``defer``, what training uses): a writer process costs ~35–40 ms of CPU to start
and 14–18 MB of resident memory while it lives, which a short run never earns back — its few
thousand merges cost the caller's thread ~3 µs each to commit itself (8,000 merges: ~25 ms). So
with ``defer=s`` the batches are committed on the caller's thread, as with ``background=False``,
until that has taken ``s`` CPU seconds; the next batch starts the process (a "rent or buy" rule:
a run pays at most twice the better of the two). Each batch is still one transaction either way,
so a ``kill -9`` leaves the same consistent file; a batch committed on the caller's thread is
committed before the call returns, so the process, once started, never reorders anything.
Not for a trainer the window may pause (it suspends the trainer's process tree, all but the writer
process): a commit stopped half-way would hold the project's write lock for the whole pause, so
such a run (``train_run(suspendable=True)``, ``--progress json``) starts the process at once.

The writer knows the project only by its path and by two functions its store gives it (one
``BEGIN IMMEDIATE`` transaction, and how to explain an SQLite error to the user), so this module
does not import :mod:`workbench.store.project`; the store imports it.
"""

from __future__ import annotations

import array
import itertools
import json
import os
import sqlite3
import struct
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Callable, ContextManager, Mapping, NamedTuple, Sequence

from workbench.errors import WorkbenchError

if TYPE_CHECKING:  # its process (writer_process) needs no model code, nor subprocess
    import subprocess

    from workbench.core.model import MergeEvent
    from workbench.core.trainer import StepRecord, TrainLog

#: One write transaction on the project (``ProjectStore._write``): yields the connection.
Transaction = Callable[[], ContextManager[sqlite3.Connection]]

# A batch on the wire: a header (rows, bytes of pieces, bytes of extras JSON, values, bytes of
# steps JSON), then the int64 columns ranks, (left, right, new) × rows, frequencies, token counts
# and piece lengths, then the float64 values (none, or one per row), then the pieces
# concatenated, then the extras as a JSON list of [rank, JSON text], then the non-merge steps as
# a JSON list of [step, phase, vocab size, token count, value] (a few dozen per run, so JSON's
# cost does not matter). A header of all zeros says "no more batches": end-of-file without it
# means the trainer died.
_HEADER = struct.Struct("<IIIII")
_INT = "q"
_INT_SIZE = array.array(_INT).itemsize
_FLOAT = "d"
_FLOAT_SIZE = array.array(_FLOAT).itemsize

_MERGES_ROWS = ("INSERT INTO merges (run_id, rank, left_id, right_id, new_id, frequency, length, "
                "vocab_size, token_count, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
# A merge that recreates an existing piece reuses its id (as ``tokenizers`` does): its vocabulary
# row exists already, holding the same bytes, so OR IGNORE skips it.
_VOCAB_ROWS = "INSERT OR IGNORE INTO vocab (run_id, id, piece, kind) VALUES (?, ?, ?, 'merge')"
_LARGEST_ID = "SELECT coalesce(max(id), -1) FROM vocab WHERE run_id = ?"
_TOUCH_RUN = "UPDATE runs SET updated = ? WHERE id = ?"
# NaN (a step without a value) is bound as NULL by SQLite.
_STEP_ROWS = ("INSERT INTO run_steps (run_id, step, phase, vocab_size, token_count, value) "
              "VALUES (?, ?, ?, ?, ?, ?)")


class Batch(NamedTuple):
    """Merges in column form: what a batch holds on both sides of the pipe.

    A NamedTuple, not a dataclass: the writer process then imports neither dataclasses nor inspect
    (1 MB of its resident memory; ``bench/bench_bpe_train.py`` counts the whole process tree)."""

    ranks: Sequence[int]
    merges: Sequence[int]  # left, right, new of each merge, flattened
    frequencies: Sequence[int]
    token_counts: Sequence[int]
    pieces: Sequence[bytes]
    extras: Sequence[tuple[int, str]]  # (rank, JSON text), rare
    values: Sequence[float] = ()  # one per merge (WordPiece's score: a run_steps row each) or none
    steps: Sequence[StepRecord] = ()  # non-merge steps (Unigram): a run_steps row each

    def encode(self) -> bytes:
        """The batch as one frame; reads each value once, formats none."""
        pieces = b"".join(self.pieces)
        extras = json.dumps(list(self.extras)).encode() if self.extras else b""
        steps = json.dumps([list(s) for s in self.steps]).encode() if self.steps else b""
        return b"".join((
            _HEADER.pack(len(self.ranks), len(pieces), len(extras), len(self.values), len(steps)),
            array.array(_INT, self.ranks).tobytes(), array.array(_INT, self.merges).tobytes(),
            array.array(_INT, self.frequencies).tobytes(),
            array.array(_INT, self.token_counts).tobytes(),
            array.array(_INT, map(len, self.pieces)).tobytes(),
            array.array(_FLOAT, self.values).tobytes(), pieces, extras, steps))

    @classmethod
    def read(cls, stream: BinaryIO) -> Batch | None:
        """The next frame's batch; None at the closing frame or at end-of-file (even mid-frame)."""
        header = _read_exact(stream, _HEADER.size)
        if header is None:
            return None
        n, pieces_size, extras_size, n_values, steps_size = _HEADER.unpack(header)
        if not (n or pieces_size or extras_size or n_values or steps_size):
            return None
        ints, floats = 7 * n * _INT_SIZE, n_values * _FLOAT_SIZE
        body = _read_exact(stream, ints + floats + pieces_size + extras_size + steps_size)
        if body is None:
            return None  # the sender died while writing: this batch was never complete
        columns = array.array(_INT)
        columns.frombytes(body[:ints])
        values = array.array(_FLOAT)
        values.frombytes(body[ints:ints + floats])
        lengths = columns[6 * n:]
        at = ints + floats
        blob = body[at:at + pieces_size]
        ends = list(itertools.accumulate(lengths))
        pieces = [blob[e - k:e] for e, k in zip(ends, lengths)]
        at += pieces_size
        extras = [tuple(x) for x in json.loads(body[at:at + extras_size])] if extras_size else []
        at += extras_size
        steps: list[StepRecord] = []
        if steps_size:  # Unigram's steps only: a BPE run's writer process never imports the trainer module
            from workbench.core.trainer import StepRecord

            steps = [StepRecord(*x) for x in json.loads(body[at:at + steps_size])]
        return cls(columns[:n], columns[n:4 * n], columns[4 * n:5 * n], columns[5 * n:6 * n],
                   pieces, extras, values, steps)

    def write(self, conn: sqlite3.Connection, run_id: int) -> None:
        """Insert the batch's rows; the caller holds the transaction.

        The vocabulary size after a merge is one more than the largest id so far (ids are handed
        out in order), so it is derived here rather than sent.
        """
        top = conn.execute(_LARGEST_ID, (run_id,)).fetchone()[0]
        extras = dict(self.extras)
        merge_rows, vocab_rows = [], []
        m = self.merges
        for i, (rank, f, t, piece) in enumerate(zip(self.ranks, self.frequencies,
                                                    self.token_counts, self.pieces)):
            new = m[3 * i + 2]
            top = max(top, new)
            merge_rows.append((run_id, rank, m[3 * i], m[3 * i + 1], new, f, len(piece), top + 1,
                               t, extras.get(rank)))
            vocab_rows.append((run_id, new, piece))
        conn.executemany(_MERGES_ROWS, merge_rows)
        conn.executemany(_VOCAB_ROWS, vocab_rows)
        if self.values:  # a merge's float the merges row has no column for (WordPiece's score)
            conn.executemany(_STEP_ROWS, [(run_id, r[1] + 1, "merge", r[7], r[8], v)
                                          for r, v in zip(merge_rows, self.values)])
        if self.steps:
            conn.executemany(_STEP_ROWS, [(run_id, *s) for s in self.steps])
        conn.execute(_TOUCH_RUN, (time.time(), run_id))


def closing_frame() -> bytes:
    return _HEADER.pack(0, 0, 0, 0, 0)


def _read_exact(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size) if size else b""
    return data if len(data) == size else None


class RunWriter:
    """Appends one run's merges through its store; use as a context manager or call close().

    Feed it either with :meth:`add_log` (a trainer's merge log, in bulk) or with :meth:`add`
    (one merge at a time), not both. Made by ``ProjectStore.run_writer``, which passes the
    project's path, its write transaction, its error explainer and what to do on close.
    """

    def __init__(self, path: os.PathLike | str, run_id: int, *, transaction: Transaction,
                 explain: Callable[[sqlite3.OperationalError], Exception] = lambda e: e,
                 on_close: Callable[[RunWriter], None] | None = None, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic, background: bool = True,
                 defer: float = 0.0) -> None:
        self.path = Path(path)
        self._transaction = transaction
        self._explain = explain
        self._on_close = on_close
        self.run_id = run_id
        self.interval = interval  # add() hands over when the last hand-over is this old
        self._clock = clock
        self._last = clock()
        # add()'s merges, one tuple each: (rank, left, right, new, frequency, tokens, piece).
        self._rows: list[tuple[int, int, int, int, int, int, bytes]] = []
        self._extras: list[tuple[int, str]] = []  # (rank, JSON text), rare
        self._log_taken = 0  # entries of the trainer's log already handed over by add_log()
        self._steps_taken = 0  # … and of its non-merge steps (log.steps)
        self.batches = 0  # transactions committed, for tests and progress display
        self.closed = False
        self._in_flight: list[int] = []  # merges in each batch sent and not yet answered
        self._error: BaseException | None = None
        self._answered = threading.Condition()
        self._proc: subprocess.Popen[bytes] | None = None
        # CPU seconds the caller's thread may spend writing batches itself before the writer
        # process is started (0: at once; see "Deferred start" in the module docstring).
        self._defer = defer if background else float("inf")
        self._spent = 0.0
        if background and defer <= 0:
            self._start()

    def _start(self) -> None:
        """Start the writer process; where none can be started, the caller's thread goes on writing."""
        self._defer = float("inf")  # one attempt: the next batches go where this one decides
        self._proc = _start_writer_process(self.path, self.run_id)
        if self._proc is not None:
            assert self._proc.stdin and self._proc.stdout and self._proc.stderr  # all three are pipes
            self._stdin: IO[bytes] = self._proc.stdin
            self._stdout: IO[bytes] = self._proc.stdout
            self._stderr: IO[bytes] = self._proc.stderr
            self._reader = threading.Thread(target=self._read_answers, daemon=True,
                                            name=f"RunWriter-{self.run_id} answers")
            self._reader.start()

    @property
    def pending(self) -> int:
        """Merges added but not yet committed."""
        with self._answered:
            return len(self._rows) + sum(self._in_flight)

    def add(self, event: MergeEvent, piece: bytes,
            extra: Mapping[str, Any] | None = None) -> None:
        """Queue one merge: its merge row, its new vocabulary entry (if new) and its step metrics.

        ``piece`` is the merged piece's bytes (the trainer's ``vocab[event.new_id]``); the batch
        is handed over when the last hand-over is ``interval`` seconds old.
        """
        self._check_open()
        if extra:
            self._extras.append((event.step - 1, json.dumps(dict(extra))))
        self._rows.append((event.step - 1, event.left, event.right, event.new_id, event.frequency,
                           event.token_count, piece))  # one append: never half a merge queued
        if self._clock() - self._last >= self.interval:
            self._hand_over()

    def add_log(self, log: TrainLog) -> None:
        """Hand over the log entries added since the last call, rank = index in the log.

        ``log`` is the trainer's own append-only :class:`TrainLog`; only its new tail is read, so
        the trainer does nothing per merge for the store. The entries count as handed over only
        once their batch is sent: an interruption sends them again next time.
        """
        self._check_open()
        steps_taken = self._steps_taken
        if len(log) == self._log_taken and len(log.steps) == steps_taken:
            return
        new = log.since(self._log_taken)
        steps = log.steps_since(steps_taken)
        self._send(Batch(range(new.start, new.end), list(itertools.chain.from_iterable(new.merges)),
                         new.frequencies, new.token_counts, new.pieces, list(new.extras), new.values, steps))
        self._log_taken = new.end
        self._steps_taken = steps_taken + len(steps)

    def flush(self) -> None:
        """Commit everything added so far and wait for it (a no-op when nothing is pending).

        Raises the error that stopped the writing (a full disk, say); nothing is written after it.
        """
        self._hand_over()
        self.wait()

    def wait(self) -> None:
        """Block until every batch handed over so far is committed (or has failed)."""
        if self._proc is not None:
            with self._answered:
                self._answered.wait_for(lambda: not self._in_flight or self._error is not None)
        self._raise_error()

    def close(self) -> None:
        """Flush, let the writer process finish and detach from the store; safe to call twice."""
        if self.closed:
            return
        try:
            self.flush()
        finally:
            self.closed = True
            if self._on_close is not None:
                self._on_close(self)
            if self._proc is not None:
                self._end_stream(closing_frame())
                self._proc.wait()
                self._reader.join()
                self._stderr.close()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the hand-over ----------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("RunWriter used after close()")
        if self._error is not None:  # stop the trainer at once, not at the next hand-over
            self._raise_error()

    def _hand_over(self) -> None:
        """Send add()'s queued merges as one batch."""
        self._last = self._clock()
        self._raise_error()
        if not self._rows:
            return
        rows, extras = self._rows, self._extras
        ranks, lefts, rights, news, frequencies, tokens, pieces = zip(*rows)
        merges = [x for triple in zip(lefts, rights, news) for x in triple]
        self._send(Batch(ranks, merges, frequencies, tokens, pieces, extras))
        self._rows, self._extras = [], []

    def _send(self, batch: Batch) -> None:
        """Commit ``batch``: through the writer process, or here when there is none."""
        self._raise_error()
        if self._proc is None and self._spent >= self._defer:
            self._start()
        if self._proc is None:
            spent = time.thread_time()
            with self._transaction() as conn:
                batch.write(conn, self.run_id)
            self._spent += time.thread_time() - spent
            self.batches += 1
            return
        frame = batch.encode()
        with self._answered:
            self._in_flight.append(len(batch.ranks))
        try:
            self._stdin.write(frame)
            self._stdin.flush()
        except OSError:  # the writer process has stopped: its answer (or its death) says why
            self._started().wait()
            self._reader.join()
            with self._answered:
                if self._error is None:
                    self._error = self._stopped_error()
            self._raise_error()
        except BaseException:
            # Interrupted mid-frame (Ctrl+C while the pipe was full): the stream is torn, so end
            # it. The writer process drops the torn frame and commits every batch before it.
            with self._answered:
                self._error = WorkbenchError(
                    "Writing merges was interrupted; the merges committed before it are kept.")
                self._answered.notify_all()
            self._end_stream(b"")
            raise

    def _started(self) -> subprocess.Popen[bytes]:
        """The writer process (only called once it was started)."""
        assert self._proc is not None
        return self._proc

    def _end_stream(self, last: bytes) -> None:
        try:
            if last:
                self._stdin.write(last)
            self._stdin.close()
        except OSError:
            pass  # it has stopped already; its answer said why

    def _read_answers(self) -> None:
        """On a thread: one line per batch from the writer process; blocking reads drop the GIL."""
        for line in self._stdout:
            with self._answered:
                if line.startswith(b"ok"):
                    self.batches += 1
                    self._in_flight.pop(0)
                else:
                    self._error = _answer_error(line.decode("utf-8", "replace"))
                self._answered.notify_all()
        self._stdout.close()
        with self._answered:
            if self._in_flight and self._error is None:
                self._error = self._stopped_error()
            self._answered.notify_all()

    def _stopped_error(self) -> WorkbenchError:
        """Why the writer process ended without an answer, from its stderr (a crash's last line)."""
        self._started().wait()
        detail = self._stderr.read().decode("utf-8", "replace").strip()
        last = detail.splitlines()[-1] if detail else f"exit status {self._started().returncode}"
        return WorkbenchError(f"The process writing merges to {self.path} stopped "
                              f"({last}); the merges committed before it stopped are kept.")

    def _raise_error(self) -> None:
        if self._error is not None:
            exc = self._error
            if isinstance(exc, sqlite3.OperationalError):
                exc = self._explain(exc)
            raise exc


def _answer_error(line: str) -> BaseException:
    """The exception an ``error <Class> <message>`` answer stands for."""
    _, kind, message = (line.rstrip("\n").split(" ", 2) + ["", ""])[:3]
    cls = {"OperationalError": sqlite3.OperationalError, "IntegrityError": sqlite3.IntegrityError,
           "DatabaseError": sqlite3.DatabaseError}.get(kind)
    return cls(message) if cls else WorkbenchError(message or kind)


#: How a frozen app (PyInstaller and the like, which has no ``-m``) starts its writer process.
WRITER_FLAG = "--run-writer"

# Isolated (-I): no current folder, PYTHONPATH or user site on sys.path, so a stray tokenize.py
# or an older workbench in the folder training was started from cannot stand in for ours. No site
# (-S): the process needs only the standard library and this workbench (whose folder it is given),
# and site's work (the site-packages folders, their .pth files, an editable install's finder)
# costs ~2.3 MB of its resident memory and a few ms.
_ISOLATED_MAIN = ("import sys; sys.path.append(sys.argv.pop(1)); "
                  "from workbench.store.writer_process import main; main()")


def is_writer_command(args: Sequence[bytes]) -> bool:
    """Whether a process's command line (psutil.Process.cmdline(), as bytes) is a run writer's."""
    return any(b"workbench.store.writer_process" in a for a in args) or (
        WRITER_FLAG.encode() in args[1:2])


def _start_writer_process(path: os.PathLike, run_id: int) -> subprocess.Popen | None:
    """The writer process, or None where none can be started (then the caller writes itself)."""
    if getattr(sys, "frozen", False):
        command = [sys.executable, WRITER_FLAG]
    else:
        root = str(Path(__file__).resolve().parents[2])  # the folder holding this workbench
        command = [sys.executable, "-I", "-S", "-c", _ISOLATED_MAIN, root]
    import subprocess

    try:
        proc = subprocess.Popen(
            [*command, os.path.abspath(path), str(run_id)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            # Its own session: a Ctrl+C in the terminal stops the trainer, which then closes the
            # pipe properly, instead of killing the writer with its last batch.
            start_new_session=os.name == "posix")
    except (OSError, TypeError, ValueError):  # TypeError: no sys.executable (embedded Python)
        return None
    if sys.platform.startswith("linux"):  # a 1 MB pipe holds several batches
        import fcntl

        try:
            fcntl.fcntl(proc.stdin.fileno(), 1031, 1 << 20)  # type: ignore[union-attr]  # F_SETPIPE_SZ
        except OSError:
            pass
    return proc
