"""The one job runner (``workbench.ui.jobs.JobRunner``): newest result per key, hooks, shutdown, logging.

Every ordering here is forced with ``threading.Event``s, never with sleeps: the first job is held
until the second has delivered, so "stale" is decided by the runner and not by the scheduler.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication

from workbench import logfile
from workbench.errors import WorkbenchError
from workbench.ui.jobs import JobRunner, SplitPreviewer

WAIT_MS = 10000


class Calls:
    """Records what the runner delivered, in order, on the GUI thread."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def done(self, tag: str):
        return lambda result: self.events.append((f"{tag}:done", result))

    def error(self, tag: str):
        return lambda message: self.events.append((f"{tag}:error", message))


@pytest.fixture
def runner(qtbot):
    jobs = JobRunner()
    yield jobs
    jobs.shutdown()


def held(gate: threading.Event, value: object = None, exc: BaseException | None = None):
    def fn():
        assert gate.wait(WAIT_MS / 1000), "the test never released this job"
        if exc is not None:
            raise exc
        return value
    return fn


def test_a_newer_submission_under_the_same_key_drops_the_older_result(runner, qtbot):
    calls, gate = Calls(), threading.Event()
    runner.submit(held(gate, "old"), calls.done("old"), calls.error("old"), key="view")
    runner.submit(lambda: "new", calls.done("new"), calls.error("new"), key="view")
    qtbot.waitUntil(lambda: calls.events == [("new:done", "new")], timeout=WAIT_MS)
    assert runner.active_count() == 1 and not runner.is_running("view")  # the old one is still running
    gate.set()
    qtbot.waitUntil(lambda: runner.active_count() == 0, timeout=WAIT_MS)  # its result has arrived…
    assert calls.events == [("new:done", "new")]  # …and was dropped


def test_a_stale_error_is_dropped_too_and_other_keys_are_untouched(runner, qtbot):
    calls, gate = Calls(), threading.Event()
    runner.submit(held(gate, exc=RuntimeError("late")), calls.done("a1"), calls.error("a1"), key="a")
    runner.submit(held(gate, "b"), calls.done("b"), calls.error("b"), key="b")
    runner.submit(lambda: "a2", calls.done("a2"), calls.error("a2"), key="a")
    qtbot.waitUntil(lambda: ("a2:done", "a2") in calls.events, timeout=WAIT_MS)
    gate.set()
    qtbot.waitUntil(lambda: runner.active_count() == 0, timeout=WAIT_MS)
    assert sorted(calls.events) == [("a2:done", "a2"), ("b:done", "b")]


def test_jobs_without_a_key_never_overtake_each_other(runner, qtbot):
    calls = Calls()
    for n in range(3):
        runner.submit(lambda n=n: n * 10, calls.done(str(n)), calls.error(str(n)))
    qtbot.waitUntil(lambda: len(calls.events) == 3, timeout=WAIT_MS)
    assert sorted(calls.events) == [("0:done", 0), ("1:done", 10), ("2:done", 20)]


def test_an_overtaken_job_is_asked_to_stop_and_its_progress_is_dropped(runner, qtbot):
    calls, progress = Calls(), []
    started, saw_stop = threading.Event(), threading.Event()

    def slow(should_stop, report):
        report(1, 10, "first")
        started.set()
        while not should_stop():
            saw_stop.wait(0.005)
        saw_stop.set()
        report(2, 10, "after the stop")  # dropped: the job is stale
        return "stale"

    runner.submit(slow, calls.done("slow"), calls.error("slow"), key="k", hooks=True,
                  on_progress=lambda *p: progress.append(p))
    assert started.wait(WAIT_MS / 1000)
    qtbot.waitUntil(lambda: progress == [(1, 10, "first")], timeout=WAIT_MS)
    runner.submit(lambda: "fresh", calls.done("fresh"), calls.error("fresh"), key="k")
    qtbot.waitUntil(lambda: runner.active_count() == 0, timeout=WAIT_MS)
    assert saw_stop.is_set()
    assert calls.events == [("fresh:done", "fresh")]
    assert progress == [(1, 10, "first")]


def test_cancel_drops_the_result_and_reports_not_running(runner, qtbot):
    calls, gate = Calls(), threading.Event()
    busy: list[bool] = []
    runner.busy_changed.connect(busy.append)
    runner.submit(held(gate, "x"), calls.done("x"), calls.error("x"), key="count")
    assert runner.is_running("count") and runner.is_running() and busy == [True]
    runner.cancel("count")
    assert not runner.is_running("count") and not runner.busy() and busy[-1] is False
    gate.set()
    qtbot.waitUntil(lambda: runner.active_count() == 0, timeout=WAIT_MS)
    assert calls.events == []


def test_errors_arrive_as_one_line(runner, qtbot):
    calls = Calls()

    def bad_input():
        raise WorkbenchError("vocab.txt line 3: an empty token; remove the line")

    def bug():
        raise KeyError("missing")

    runner.submit(bad_input, calls.done("w"), calls.error("w"))
    runner.submit(bug, calls.done("b"), calls.error("b"))
    qtbot.waitUntil(lambda: len(calls.events) == 2, timeout=WAIT_MS)
    assert sorted(calls.events) == [("b:error", "KeyError: 'missing'"),
                                    ("w:error", "vocab.txt line 3: an empty token; remove the line")]


def test_shutdown_stops_and_joins_every_job_and_delivers_nothing(qtbot):
    runner = JobRunner()
    calls, finished, started = Calls(), threading.Event(), threading.Event()

    def until_stopped(should_stop, _report):
        started.set()
        try:
            while not should_stop():
                finished.wait(0.005)
            return "after shutdown"
        finally:
            finished.set()

    runner.submit(until_stopped, calls.done("s"), calls.error("s"), key="s", hooks=True)
    assert started.wait(WAIT_MS / 1000)
    runner.shutdown()
    assert finished.is_set()  # joined: the function returned before shutdown() did
    assert runner.active_count() == 0 and not runner.busy()
    QCoreApplication.processEvents()  # results queued before the join reach the runner's slots now
    assert calls.events == []
    runner.submit(lambda: "again", calls.done("again"), calls.error("again"))  # still usable
    qtbot.waitUntil(lambda: calls.events == [("again:done", "again")], timeout=WAIT_MS)
    runner.shutdown()


def test_a_failing_job_leaves_its_traceback_in_the_log_file(runner, qtbot, tmp_path: Path):
    path = tmp_path / "logs" / "window.log"
    handler = logfile.install(path)
    assert handler is not None and logfile.current_path() == path
    try:
        errors: list[str] = []

        def export_step():
            raise ValueError("merge 17 has no parent")

        runner.submit(export_step, lambda _r: None, errors.append)
        qtbot.waitUntil(lambda: errors == ["ValueError: merge 17 has no parent"], timeout=WAIT_MS)
        handler.flush()
        text = path.read_text(encoding="utf-8")
    finally:
        logfile.remove(handler)
    assert "ERROR" in text and "workbench.ui.jobs" in text and "export_step" in text
    assert "Traceback" in text and "ValueError: merge 17 has no parent" in text


def test_the_split_preview_keeps_only_the_newest_request(qtbot):
    previewer = SplitPreviewer()
    shown: list[tuple[object, str]] = []
    previewer.ready.connect(lambda pieces, error: shown.append((pieces, error)))
    try:
        previewer.request("whitespace", "none", "one two")
        previewer.request("whitespace", "none", "three four five")
        qtbot.waitUntil(lambda: previewer.jobs.active_count() == 0 and bool(shown), timeout=WAIT_MS)
        assert shown == [(["three", "four", "five"], "")]  # the first request's result was dropped
        previewer.request("(", "none", "x")
        qtbot.waitUntil(lambda: shown[-1][0] is None, timeout=WAIT_MS)
        assert shown[-1][1]  # the pattern's error, as one line
    finally:
        previewer.shutdown()


def test_a_feed_hands_every_item_in_order_in_batches_sized_by_time(qtbot):
    """The first batch is FIRST_BATCH items; the next as many as fit the budget at the last one's
    cost per item (never more than ``batch``); every item once, in order, then ``finished``."""
    import time

    from workbench.ui.jobs import FIRST_BATCH, feed_in_batches

    items = list(range(1000))
    got: list[list[int]] = []
    done: list[bool] = []

    def slow_add(batch) -> None:  # 0.2 ms of this thread per item: about 20 items fit the 4 ms budget
        got.append(list(batch))
        end = time.thread_time() + 0.0002 * len(batch)
        while time.thread_time() < end:
            pass

    feed_in_batches(items, slow_add, lambda: True, lambda: done.append(True), batch=100)
    assert [len(b) for b in got] == [FIRST_BATCH]  # the first at once, in the caller's turn
    qtbot.waitUntil(lambda: bool(done), timeout=20000)
    assert [i for b in got for i in b] == items
    assert max(len(b) for b in got) <= 100 and all(len(b) < FIRST_BATCH for b in got[1:-1])


def test_a_feed_stops_when_it_is_no_longer_current(qtbot):
    from workbench.ui.jobs import feed_in_batches

    got: list[int] = []
    finished: list[bool] = []
    # no longer current once 100 items are in (a newer listing, the project closed)
    feed_in_batches(list(range(500)), lambda b: got.extend(b), lambda: len(got) < 100, lambda: finished.append(True),
                    batch=10)
    qtbot.waitUntil(lambda: len(got) >= 100, timeout=10000)
    qtbot.wait(50)
    assert got == list(range(100)) and not finished


# ---- the collector while jobs build (``collector_paused``) and the GIL's switch interval ------------

def test_the_collector_is_paused_while_jobs_run_and_what_they_built_is_frozen(runner, qtbot):
    """Two overlapping jobs: no full collector pass while either runs; the objects the jobs built
    are out of the full passes (frozen) once the last one ends, and the thresholds are back."""
    import gc

    thresholds = gc.get_threshold()
    seen: list[int] = []
    gate_a, gate_b, started_b = threading.Event(), threading.Event(), threading.Event()
    built: list[object] = []

    def job_a():
        seen.append(gc.get_threshold()[2])
        assert gate_a.wait(WAIT_MS / 1000)
        built.append([[i] for i in range(1000)])  # containers the collector would walk
        return "a"

    def job_b():
        started_b.set()
        seen.append(gc.get_threshold()[2])
        assert gate_b.wait(WAIT_MS / 1000)
        return "b"

    calls = Calls()
    runner.submit(job_a, calls.done("a"), calls.error("a"))
    runner.submit(job_b, calls.done("b"), calls.error("b"))
    assert started_b.wait(WAIT_MS / 1000)
    frozen_before = gc.get_freeze_count()
    gate_a.set()
    qtbot.waitUntil(lambda: ("a:done", "a") in calls.events, timeout=WAIT_MS)
    assert gc.get_threshold()[2] > 10**6  # job b still runs: no full pass, nothing frozen yet by job a
    assert gc.get_freeze_count() == frozen_before
    gate_b.set()
    qtbot.waitUntil(lambda: runner.active_count() == 0, timeout=WAIT_MS)
    assert len(seen) == 2 and min(seen) > 10**6
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() >= frozen_before + 1000  # job a's lists among them
    assert all(o is not built[0] for o in gc.get_objects())  # not in any generation a pass walks


def test_the_window_hands_the_gil_on_often():
    """The window's thread waits at most the switch interval each time it calls into Python
    behind a worker that computes: the window sets it to ``SWITCH_INTERVAL_S``, never higher."""
    import sys

    from workbench.ui.collector import SWITCH_INTERVAL_S, share_the_gil_often

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        share_the_gil_often()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
        assert SWITCH_INTERVAL_S < 0.005
        sys.setswitchinterval(SWITCH_INTERVAL_S / 2)  # already shorter: left alone
        share_the_gil_often()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S / 2)
    finally:
        sys.setswitchinterval(before)


def test_the_app_collects_on_its_own_thread_only_and_not_while_jobs_build(runner, qtbot):
    """The application's collector, started by the runner (as by every class that starts a thread):
    the automatic one is off (no pass on a worker thread, where Qt objects in the garbage would be
    destroyed on the wrong thread); young passes run on the GUI thread's timer, none while a job
    builds; the last collector stopped (the app quitting) turns the automatic one back on, and the
    next class that starts a thread starts the app's collector again."""
    import gc

    from workbench.ui.collector import GuiThreadCollector, collect_on_gui_thread

    app_collector = collect_on_gui_thread()
    assert app_collector.running() and not gc.isenabled()  # the runner's constructor started it
    assert collect_on_gui_thread() is app_collector  # one per application
    ran_on: list[str] = []

    def seen(phase: str, _info: dict) -> None:
        if phase == "start":
            ran_on.append(threading.current_thread().name)

    other = GuiThreadCollector(interval_ms=10)
    try:
        gc.callbacks.append(seen)
        gate, started = threading.Event(), threading.Event()

        def job():
            started.set()
            assert gate.wait(WAIT_MS / 1000)
            return [[i] for i in range(5000)]  # containers: past the youngest generation's threshold

        calls = Calls()
        runner.submit(job, calls.done("job"), calls.error("job"))
        assert started.wait(WAIT_MS / 1000)
        _garbage = [[i] for i in range(5000)]  # made on this thread while the job builds
        before = len(ran_on)
        qtbot.wait(150)  # more than a turn of each timer
        assert len(ran_on) == before  # no pass while a job builds
        gate.set()
        qtbot.waitUntil(lambda: runner.active_count() == 0, timeout=WAIT_MS)
        _more = [[i] for i in range(5000)]
        # a pass follows (by whichever collector's timer comes first)
        qtbot.waitUntil(lambda: len(ran_on) > before, timeout=WAIT_MS)
        assert set(ran_on) == {threading.main_thread().name}
        app_collector.stop()
        assert not gc.isenabled()  # the other one still runs
    finally:
        if seen in gc.callbacks:
            gc.callbacks.remove(seen)
        other.stop()
    assert gc.isenabled()  # the last one stopped
    again = JobRunner()
    try:
        assert collect_on_gui_thread() is app_collector and app_collector.running() and not gc.isenabled()
    finally:
        again.shutdown()
