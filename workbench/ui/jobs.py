"""The window's one job runner: plain functions off the GUI thread, newest result per key wins.

* :class:`JobRunner` — ``submit(fn, on_done, on_error, key=…)`` runs ``fn`` in a thread pool and
  calls ``on_done(result)`` or ``on_error(message)`` on the GUI thread. A newer submission under
  the same ``key`` makes every older one *stale*: it is asked to stop and its result (or error,
  or progress) is dropped, never delivered — git-cola's rule for views recomputed while typing.
  Without a key each job is its own (export, import: nothing overtakes them). With
  ``hooks=True`` the function is called as ``fn(should_stop, progress)`` (Orange's compute
  hooks): it polls ``should_stop()`` between steps and reports ``progress(done, total, what)``.
* :func:`feed_in_batches` — hand a long list read off the thread to a view in batches sized to a
  few ms of the window's thread (at most ``LIST_BATCH`` items), one per turn with room (a
  project's 100,000 corpus files, in the Corpus and Compare tabs).
* :class:`SplitPreviewer` — the training form's live pre-tokenizer preview, one key on a runner
  (a custom pattern may backtrack for seconds, so it never runs on the GUI thread).
* every job runs in :func:`workbench.ui.collector.collector_paused` (no collector pass while
  jobs build; see that module for the window's collector).

A result that holds something to close (an opened project's connection) is submitted with
``discard=``: a result that will never be delivered — its job overtaken, cancelled, or still in
flight when the runner shuts down — is handed to ``discard`` exactly once, on the worker thread
when the job was already stale as it returned, else on the GUI thread (by :meth:`JobRunner.cancel`,
a newer submission or :meth:`JobRunner.shutdown`), never left for the garbage collector.

Threads: a private ``QThreadPool`` (not the global one, so :meth:`JobRunner.shutdown` joins only
this runner's jobs, without a time limit — a job dropped while it runs could outlive the app).
Results cross threads through a relay ``QObject`` whose signals are connected only to ``@Slot``
methods of the runner, which lives on the GUI thread (STYLE.md trap 2); the pool and relay are
owned by the runner (trap 4). A failing job is logged (``workbench.ui.jobs``) with its traceback
before the one-line message reaches ``on_error``.

What it leaves out: widgets, and deciding what to show; the training run, which is a child
process (``ui/train/process.py``); the inspector's long-lived worker with its tokenizer caches.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal, Slot

from workbench.errors import WorkbenchError
from workbench.ui import turns
from workbench.ui.collector import collect_on_gui_thread, collector_paused, keep_what_is_built

log = logging.getLogger(__name__)

OnDone = Callable[[Any], None]
OnError = Callable[[str], None]
OnProgress = Callable[[int, int, str], None]


@dataclass
class _Job:
    key: Hashable
    on_done: OnDone
    on_error: OnError
    on_progress: OnProgress | None
    stop: threading.Event = field(default_factory=threading.Event)
    discard: Callable[[Any], None] | None = None
    #: A result emitted and not delivered yet (only with ``discard``; guarded by the runner's lock).
    pending: list[Any] = field(default_factory=list)


class _Relay(QObject):
    """Signals emitted from pool threads; received by the runner's slots on the GUI thread."""

    done = Signal(int, object)
    failed = Signal(int, str)
    progress = Signal(int, int, int, str)
    ended = Signal(int)  # after done/failed: the job's thread is free


class JobRunner(QObject):
    """Run functions off the GUI thread; only the newest job per key delivers (see module doc)."""

    busy_changed = Signal(bool)  # some job that will still deliver is running

    def __init__(self, parent: QObject | None = None, *, max_threads: int = 4):
        super().__init__(parent)
        collect_on_gui_thread()  # before any thread of the pool can run a collector pass
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._relay = _Relay(self)
        self._relay.done.connect(self._on_done)
        self._relay.failed.connect(self._on_failed)
        self._relay.progress.connect(self._on_progress)
        self._relay.ended.connect(self._on_ended)
        self._ids = itertools.count(1)
        self._jobs: dict[int, _Job] = {}          # submitted and not ended (stale ones too)
        self._latest: dict[Hashable, int] = {}    # key -> the job whose result still counts
        # Between a worker's "not stale: keep the result for delivery" and the GUI thread's "stale:
        # take back what was not delivered" (only jobs with ``discard`` take it).
        self._lock = threading.Lock()

    # ---- submitting ------------------------------------------------------------------------------
    def submit(self, fn: Callable[..., Any], on_done: OnDone, on_error: OnError, *, key: Hashable = None,
               on_progress: OnProgress | None = None, hooks: bool = False,
               discard: Callable[[Any], None] | None = None) -> int:
        """Run ``fn`` (``fn()``, or ``fn(should_stop, progress)`` with ``hooks``); returns the job id.

        ``key=None`` gives the job a key of its own. Callbacks run on the GUI thread, only for a
        job that is still the newest of its key when its result arrives. ``discard(result)`` is
        called once for a result that will not be delivered (see the module doc).
        """
        job_id = next(self._ids)
        key = ("job", job_id) if key is None else key
        self._make_stale(key)
        job = _Job(key, on_done, on_error, on_progress, discard=discard)
        lock = self._lock
        self._jobs[job_id] = job
        self._latest[key] = job_id
        relay, stop = self._relay, job.stop

        def progress(done: int, total: int, what: str = "") -> None:
            if not stop.is_set():
                relay.progress.emit(job_id, int(done), int(total), str(what))

        def run() -> None:  # runs in a pool thread: touches no widget, only emits
            try:
                with collector_paused():
                    result = fn(stop.is_set, progress) if hooks else fn()
            except WorkbenchError as exc:  # bad input: the message is for the user as it is
                log.info("job %s (%s) failed: %s", job_id, _name(fn), exc)
                relay.failed.emit(job_id, str(exc))
            except Exception as exc:  # noqa: BLE001 - a bug: logged in full, shown as one line
                log.exception("job %s (%s) failed", job_id, _name(fn))
                relay.failed.emit(job_id, f"{type(exc).__name__}: {exc}")
            else:
                if discard is not None:
                    with lock:
                        stale = stop.is_set()
                        if not stale:
                            job.pending.append(result)
                    if stale:  # overtaken, cancelled or shut down while it ran: nobody takes it
                        _discard(discard, result)
                        return
                relay.done.emit(job_id, result)
            finally:
                relay.ended.emit(job_id)

        self._pool.start(run)
        self.busy_changed.emit(True)
        return job_id

    def cancel(self, key: Hashable = None) -> None:
        """Make the newest job of ``key`` (every key when None) stale: asked to stop, never delivered."""
        keys = list(self._latest) if key is None else [key]
        for k in keys:
            self._make_stale(k)
        self.busy_changed.emit(self.busy())

    def _make_stale(self, key: Hashable) -> None:
        job_id = self._latest.pop(key, None)
        job = self._jobs.get(job_id) if job_id is not None else None
        if job is not None:
            self._stop(job)

    def _stop(self, job: _Job) -> None:
        """Ask ``job`` to stop; a result it emitted and nobody took is discarded now."""
        with self._lock:
            job.stop.set()
            undelivered, job.pending = job.pending, []
        if job.discard is not None:
            for result in undelivered:
                _discard(job.discard, result)

    # ---- state -------------------------------------------------------------------------------------
    def is_running(self, key: Hashable = None) -> bool:
        """A job of ``key`` (any key when None) whose result will still be delivered is running."""
        if key is None:
            return self.busy()
        return self._latest.get(key) in self._jobs

    def busy(self) -> bool:
        return any(job_id in self._jobs for job_id in self._latest.values())

    def active_count(self) -> int:
        """Jobs whose function has not returned yet, stale ones included (what shutdown waits for)."""
        return len(self._jobs)

    def _current(self, job_id: int) -> _Job | None:
        job = self._jobs.get(job_id)
        if job is None or self._latest.get(job.key) != job_id:
            return None  # stale (overtaken, cancelled, or submitted before a shutdown): dropped
        return job

    # ---- results (GUI thread) ----------------------------------------------------------------------------
    @Slot(int, object)
    def _on_done(self, job_id: int, result: object) -> None:
        job = self._current(job_id)
        if job is not None:
            del self._latest[job.key]
            with self._lock:
                job.pending.clear()
            job.on_done(result)

    @Slot(int, str)
    def _on_failed(self, job_id: int, message: str) -> None:
        job = self._current(job_id)
        if job is not None:
            del self._latest[job.key]
            job.on_error(message)

    @Slot(int, int, int, str)
    def _on_progress(self, job_id: int, done: int, total: int, what: str) -> None:
        job = self._current(job_id)
        if job is not None and job.on_progress is not None:
            job.on_progress(done, total, what)

    @Slot(int)
    def _on_ended(self, job_id: int) -> None:
        if self._jobs.pop(job_id, None) is not None:
            self.busy_changed.emit(self.busy())

    # ---- closing -----------------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Ask every job to stop, wait for all of them (no time limit: trap 4); none of them delivers.

        The runner stays usable: jobs submitted afterwards run and deliver as usual.
        """
        for job in self._jobs.values():
            self._stop(job)
        self._latest.clear()
        self._pool.waitForDone()
        for job in self._jobs.values():  # emitted before its stop was set, the event still queued
            self._stop(job)
        self._jobs.clear()


#: A project with this many corpus files or more has them read off the GUI thread and listed in
#: batches of at most LIST_BATCH rows, one per turn of the event loop (100,000 files blocked it ~5 s).
#: A batch is ~0.04–0.07 ms a row on the GUI thread (the Compare table, the refused-files list):
#: 2,000 a turn held it 75–133 ms; 200 stay within a 60 Hz frame.
LIST_OFF_THREAD = 5_000
LIST_BATCH = 200


def _discard(discard: Callable[[Any], None], result: Any) -> None:
    try:
        discard(result)
    except Exception:  # noqa: BLE001 - closing a dropped result must not break the runner
        log.exception("discarding an undelivered result failed")


def feed_in_batches(items: Sequence[Any], add: Callable[[Sequence[Any]], object], current: Callable[[], bool],
                    finished: Callable[[], object], progress: Callable[[int, int], object] | None = None,
                    *, start: int = 0, batch: int = LIST_BATCH) -> None:
    """Call ``add`` with at most ``batch`` items at a time, letting the event loop run between
    batches, then ``finished()``; stops silently as soon as ``current()`` is False (a newer listing,
    the project closed). ``progress(done, total)`` is called between batches.

    Batches are sized by time, not count: the first holds ``FIRST_BATCH`` items, each next one as
    many as the last took to fit :data:`FEED_BUDGET_S` of the window's thread (never more than
    ``batch``). A batch waits for a turn with room (:func:`workbench.ui.turns.room`): a turn
    already spent by a paint or another view's step gets none, so a batch and a repaint of what
    the last one added no longer share one stretch. What it leaves out: what ``add`` sets off
    later (a scan, a view's layout) is not counted in the batch's time.
    """
    _Feed(items, add, current, finished, progress, start, batch).next()


#: Items in a feed's first batch (its cost per item is not known yet), and the window-thread time
#: a batch is sized to: what is left of a 60 Hz frame must hold it and the repaint it causes.
FIRST_BATCH = 50
FEED_BUDGET_S = 0.004
#: Items added between two :func:`keep_what_is_built` (a pass over the youngest objects, ~1 ms).
FREEZE_EVERY = 2_000


class _Feed(QObject):
    """One :func:`feed_in_batches` under way: its timer (gated by ``turns.room``) and batch size."""

    _live: set[_Feed] = set()  # feeds under way: kept alive until they end or are stopped

    def __init__(self, items: Sequence[Any], add: Callable[[Sequence[Any]], object], current: Callable[[], bool],
                 finished: Callable[[], object], progress: Callable[[int, int], object] | None, start: int,
                 batch: int):
        super().__init__()
        self.items, self.add, self.current, self.finished, self.progress = items, add, current, finished, progress
        self.start, self.most = start, max(1, batch)
        self.size = min(FIRST_BATCH, self.most)
        self.batches = 0
        self.frozen_at = start  # where the rows added were last taken out of the collector's passes
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self._timed)

    def next(self) -> None:
        """Add the next batch (the first one at once: the caller's turn is the listing's own)."""
        if not self.current():
            self._end()
            return
        chunk = self.items[self.start:self.start + self.size]
        began = time.thread_time()
        self.add(chunk)
        took = time.thread_time() - began
        if self.start - self.frozen_at >= FREEZE_EVERY or not self.batches:
            keep_what_is_built()  # the rows added so far (see there)
            self.frozen_at = self.start
        self.batches += 1
        self.start += len(chunk)
        if chunk:  # the next batch: what fits the budget at this batch's cost per item
            per_item = max(took, 1e-6) / len(chunk)
            self.size = max(1, min(self.most, int(FEED_BUDGET_S / per_item)))
        if self.start < len(self.items):
            if self.progress is not None:
                self.progress(self.start, len(self.items))
            _Feed._live.add(self)
            self.timer.start()
            return
        self._end()
        self.finished()

    def _timed(self) -> None:
        if turns.room(self.timer):
            self.next()

    def _end(self) -> None:
        self.timer.stop()
        _Feed._live.discard(self)


def _name(fn: Callable[..., Any]) -> str:
    """What the log calls a job: the function's qualified name (through a ``functools.partial``)."""
    fn = getattr(fn, "func", fn)
    return getattr(fn, "__qualname__", None) or type(fn).__name__


# ---------------------------------------------------------------------------------------------------
# live pre-tokenizer preview


def split_sample(spec: str, normalizer: str, text: str, model: str = "bpe") -> list[str]:
    """``text`` as ``model``'s trainer counts it (what the preview shows): see
    :func:`workbench.tasks.train.split_for_training`, built on the pre-tokenizers and, for Unigram,
    the word cutting (``unigram_words``) that training itself uses."""
    from workbench.tasks.train import split_for_training

    return split_for_training(model, spec, normalizer, text)


class SplitPreviewer(QObject):
    """Split a sample line with a pre-tokenizer off the GUI thread; only the newest result counts."""

    ready = Signal(object, str)  # pieces or None, error text

    KEY = "preview"

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.jobs = JobRunner(self, max_threads=2)

    def request(self, spec: str, normalizer: str, text: str, model: str = "bpe") -> None:
        self.jobs.submit(partial(split_sample, spec, normalizer, text, model), self._on_pieces, self._on_error,
                         key=self.KEY)

    def _on_pieces(self, pieces: object) -> None:
        self.ready.emit(pieces, "")

    def _on_error(self, message: str) -> None:
        self.ready.emit(None, message)

    def shutdown(self) -> None:
        self.jobs.shutdown()
