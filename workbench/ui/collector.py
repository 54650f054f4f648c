"""The window process's cyclic garbage collector: passes on the GUI thread only, none while jobs
build, and what the window keeps taken out of the passes; and the GIL's switch interval.

Why a policy of our own, not Python's automatic one:

* **A pass runs on whichever thread allocated.** A pass on a worker thread (the corpus scan
  walking a folder, a job reading rows) frees the cyclic garbage it finds *there*, and Qt objects
  among it (a closed dialog, a replaced model, a timer still running) are then destroyed on the
  wrong thread, which Qt does not allow: a timer destroyed there stays in the GUI thread's event
  dispatcher, which then delivers to freed memory. That was the window's segfault of the UI test
  loops (the GUI thread crashing in its event loop while the scan thread walked a folder; issue
  25): the crashing tests used a tab without a main window, so no collector of ours was running.
  pyqtgraph's ``GarbageCollector`` (Erik Janssens' recipe) turns the automatic collector off and
  collects on a GUI-thread timer for this reason; :class:`GuiThreadCollector` does the same and
  skips its turn while jobs build. There is one per application (:func:`collect_on_gui_thread`),
  started before any worker thread of ours: every class that starts one calls it.
* **Full passes over millions of objects.** A job reading a 10M-merge run builds millions of
  objects; each time they grew by a quarter a full pass walked every object of the process,
  50–110 ms with the GIL held, finding nothing — the window stood still behind it. So no pass
  runs while jobs build (:func:`collector_paused`), and what they built is frozen when the last
  one ends (``gc.freeze``: never walked again; reference counting still frees it when dropped).

Without a :class:`GuiThreadCollector` (a process with no Qt application: the runner's own tests)
the automatic collector stays on and :func:`collector_paused` only keeps its full passes away while
jobs run. What it leaves out: cyclic garbage that outlived the young passes when a freeze came is
frozen with the rest and never collected (a bounded leak: ~8,500 objects after a session of
``bench_many_runs.py``); the scan thread and the inspector's worker are not "jobs" here (their
objects are walked by the GUI thread's young passes, at most a timer interval's worth at a time);
garbage made while no event loop runs waits for the next turn of one.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Slot
from shiboken6 import isValid

#: How long a thread may hold the GIL before one that waits asks for it (Python's default: 5 ms).
#: The window's thread takes the GIL once per call into Python — each table cell's ``data``, each
#: paint, each timer — and behind a worker thread that computes it waited up to the whole
#: interval each time: a table paint of a few hundred calls stood still 30–50 ms with 1 ms of its
#: own CPU. Measured on the 10M-merge and 100,000-file projects (bench_huge_project.py,
#: bench_corpus_tab.py): 0.2 ms gave the window's thread the GIL soonest but cost it CPU of its own
#: in every switch (more turns over a frame while a listing fed in); 1 ms left 90–150 ms stalls
#: while two workers loaded a 10M-merge run; 0.5 ms between. The workers' wall time did not grow.
SWITCH_INTERVAL_S = 0.0005


def share_the_gil_often() -> None:
    """Set the process's GIL switch interval for a window with worker threads (see above)."""
    if sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)


_pause_lock = threading.Lock()
_pausers = 0
_thresholds: tuple[int, ...] = ()
#: The oldest generation's threshold while jobs run with the automatic collector on: never reached
#: (a full pass runs only when this many passes of the middle generation came first).
_NO_FULL_PASS = 1 << 30


def jobs_building() -> bool:
    """Whether a job runs in :func:`collector_paused` now."""
    return _pausers > 0


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run a job with no full collector pass (no pass at all under a :class:`GuiThreadCollector`),
    and freeze what the process holds when the last such job ends (see the module doc).

    Jobs overlap: the first one in keeps the full passes away (with the automatic collector on:
    the oldest generation's threshold out of reach, young passes go on), the last one out freezes
    and restores the threshold.
    """
    global _pausers, _thresholds
    with _pause_lock:
        if _pausers == 0:
            _thresholds = gc.get_threshold()
            gc.set_threshold(*_thresholds[:2], _NO_FULL_PASS)
        _pausers += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pausers -= 1
            if _pausers == 0:
                gc.freeze()
                gc.set_threshold(*_thresholds)


def keep_what_is_built() -> None:
    """Take what the window holds now out of the collector's full passes (``gc.freeze``, after a
    pass over the youngest objects unless jobs are building: then the youngest generation holds
    what they made so far, and walking it is the stall this module avoids).

    A project of 100,000 corpus files builds about a million objects as it is listed and read;
    each time they grew by a quarter the collector went over all of them again — 0.1–0.6 s with the
    GIL held, finding nothing (every row is alive). Called on the GUI thread while a long listing
    or scan adds rows. What it leaves out: cyclic garbage older than the youngest generation at
    that moment is frozen with the rest (reference counting still frees everything that is not in
    a cycle) — a bounded leak traded for frames.
    """
    if not jobs_building():
        gc.collect(0)
    gc.freeze()


class GuiThreadCollector(QObject):
    """The automatic collector off; the generations collected on a GUI-thread timer instead, as
    their counts reach Python's own thresholds, and not while jobs build (see the module doc).

    The application has one (:func:`collect_on_gui_thread`); the automatic collector is off while
    any is running and back on (if it was on before the first) when the last :meth:`stop`s.
    ``interval_ms``: how much a turn's young pass may have to walk — the objects every thread made
    in that time.
    """

    INTERVAL_MS = 100
    _running = 0
    _enable_after = False

    def __init__(self, parent: QObject | None = None, *, interval_ms: int = INTERVAL_MS):
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)
        self.start()

    def start(self) -> None:
        if self._timer.isActive():
            return
        if GuiThreadCollector._running == 0:
            GuiThreadCollector._enable_after = gc.isenabled()
        GuiThreadCollector._running += 1
        gc.disable()
        self._timer.start()

    def running(self) -> bool:
        return self._timer.isActive()

    @Slot()
    def check(self) -> None:
        """Collect the generations whose counts are past their thresholds (the oldest one's pass is
        over what is not frozen: the window's data is frozen as it is built)."""
        if gc.isenabled():  # turned on by other code meanwhile (a library): off again
            gc.disable()
        if jobs_building():
            return
        threshold = gc.get_threshold()
        counts = gc.get_count()
        if counts[0] <= threshold[0]:
            return
        generation = 0
        if counts[1] > threshold[1]:
            generation = 2 if counts[2] > threshold[2] else 1
        gc.collect(generation)

    @Slot()
    def stop(self) -> None:
        if not self._timer.isActive():
            return
        self._timer.stop()
        GuiThreadCollector._running -= 1
        if GuiThreadCollector._running == 0 and GuiThreadCollector._enable_after:
            gc.enable()


_app_collector: GuiThreadCollector | None = None


def collect_on_gui_thread() -> GuiThreadCollector:
    """The application's collector, started if it is not running: call it on the GUI thread before
    starting a worker thread (the scan thread, the inspector's, a job pool). Made on first use,
    parented to the ``QApplication`` (it lives as long as the app) and stopped when the app quits.
    A worker thread started while the automatic collector is on may run a pass that destroys Qt
    objects off the GUI thread (see the module doc)."""
    global _app_collector
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("the collector is started from the GUI thread")
    app = QCoreApplication.instance()
    if app is None:
        raise RuntimeError("no QApplication: a window's threads start after it")
    if _app_collector is None or not isValid(_app_collector) or _app_collector.parent() is not app:
        _app_collector = GuiThreadCollector(app)
        app.aboutToQuit.connect(_app_collector.stop)
    _app_collector.start()
    return _app_collector


def take_the_collectors_turn() -> None:
    """The application collector's turn now, if it runs (on the GUI thread): for a process that
    runs no event loop for a while — the test suite between two tests."""
    if _app_collector is not None and isValid(_app_collector) and _app_collector.running():
        _app_collector.check()
