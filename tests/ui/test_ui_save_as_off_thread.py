"""Save As copies and opens the copy on a worker; an open still in flight when the window closes
closes its connection then and there (issue 26: the window never blocks, nothing is left for the
garbage collector to close).

Save As used to copy and open the copy on the window's thread (the backup, the writable open and
upgrade, every run decoded: the same ~0.1–0.2 s as an open of a large project). An open (or a Save
As) whose result arrived after the window had shut its runner down was dropped with the project's
read connection still open — closed whenever Python collected it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ui_helpers import train_cli

from workbench.store.project import ProjectStore
from workbench.ui.jobs import JobRunner


def _two_runs(root: Path, small_corpus: list[Path]) -> Path:
    project = root / "two.tokproj"
    train_cli(small_corpus, project, "--merges", "10")
    train_cli(small_corpus, project, "--merges", "14")
    return project


def _open_fds_on(path: Path) -> list[str]:
    """This process's open file descriptors on ``path`` or its side files (-wal, -shm, -journal)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


def test_save_as_copies_and_opens_the_copy_on_a_worker(make_window, qtbot, small_corpus, tmp_path):
    source = _two_runs(tmp_path, small_corpus)
    window = make_window(source)
    saved: list[str] = []
    window.project_saved.connect(saved.append)
    dest = tmp_path / "copies" / "copy"  # no suffix: the copy gets .tokproj
    dest.parent.mkdir()
    assert window.save_as_path(dest)
    # Started, not done: the window is still on the original and says what it is doing.
    assert window.is_opening() and window.session.path == source
    assert window.opening_label.text() == "Saving as copy.tokproj…"
    assert not window.act_save_as.isEnabled() and not window.act_train.isEnabled()
    assert window.save_as_path(tmp_path / "other.tokproj") is False  # one at a time
    qtbot.waitUntil(lambda: not window.is_opening(), timeout=30000)
    copy = dest.with_name("copy.tokproj")
    assert saved == [str(copy)] and window.session.path == copy
    assert [r.id for r in window.session.runs()] == [1, 2]
    assert window.training.history.run_ids() == [2, 1]
    assert window.windowTitle().startswith("copy.tokproj") and window.settings.recent_projects[0] == str(copy)
    with ProjectStore.open(copy, readonly=True) as store:
        assert [r.merge_count for r in store.runs()] == [10, 14]
    assert not (tmp_path / "other.tokproj").exists()
    assert not _open_fds_on(source)  # the original's connection was closed when the window moved on


def test_save_as_that_cannot_write_stays_on_the_project(make_window, qtbot, small_corpus, tmp_path, answer):
    from PySide6.QtWidgets import QMessageBox

    source = _two_runs(tmp_path, small_corpus)
    before = source.read_bytes()
    window = make_window(source)
    box = answer(QMessageBox.StandardButton.Ok)
    assert window.save_as_path(tmp_path / "no such folder" / "copy.tokproj")
    qtbot.waitUntil(lambda: not window.is_opening(), timeout=30000)
    qtbot.waitUntil(lambda: bool(box.texts), timeout=10000)
    assert "no such folder" in box.texts[0] and "\n" not in box.texts[0]
    assert window.session.path == source and window.act_save_as.isEnabled()
    assert [r.id for r in window.session.runs()] == [1, 2]
    assert source.read_bytes() == before


def test_an_open_in_flight_when_the_window_closes_closes_its_connection(make_window, qtbot, small_corpus,
                                                                         tmp_path):
    project = _two_runs(tmp_path, small_corpus)
    (tmp_path / "b").mkdir()
    copy_from = _two_runs(tmp_path / "b", small_corpus)
    window = make_window(None)
    assert window.open_project(project, ask_first=False)
    window.shutdown()  # no turn of the event loop in between: the open's result cannot be taken over
    assert not window.session.is_open
    assert _open_fds_on(project) == []

    # The same for a Save As in flight: the copy is written (it was asked for) and closed.
    window2 = make_window(copy_from)
    dest = tmp_path / "saved.tokproj"
    assert window2.save_as_path(dest)
    window2.shutdown()
    assert _open_fds_on(dest) == [] and _open_fds_on(copy_from) == []
    with ProjectStore.open(dest, readonly=True) as store:
        assert [r.merge_count for r in store.runs()] == [10, 14]


class _Closable:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_a_result_nobody_takes_is_discarded_once(qtbot):
    """Emitted before the shutdown (its delivery still queued), overtaken, or stale as it returns:
    each undelivered result is handed to ``discard`` exactly once; a delivered one never."""
    runner = JobRunner()
    returned = threading.Event()
    made: list[_Closable] = []
    delivered: list[object] = []

    def make() -> _Closable:
        made.append(_Closable())
        returned.set()
        return made[-1]

    def close(result: _Closable) -> None:
        result.close()

    runner.submit(make, delivered.append, delivered.append, discard=close)
    assert returned.wait(10)
    time.sleep(0.05)  # (its done signal is queued by now, or it is about to be: either way)
    runner.shutdown()
    assert made[0].closed == 1
    qtbot.wait(20)  # the queued delivery, if any, is dropped
    assert delivered == [] and made[0].closed == 1

    gate = threading.Event()

    def slow() -> _Closable:
        gate.wait(10)
        return make()

    runner.submit(slow, delivered.append, delivered.append, key="k", discard=close)
    runner.submit(make, delivered.append, delivered.append, key="k", discard=close)  # overtakes it
    qtbot.waitUntil(lambda: len(delivered) == 1, timeout=10000)
    gate.set()
    qtbot.waitUntil(lambda: len(made) == 3 and made[2].closed == 1, timeout=10000)
    assert delivered == [made[1]] and made[1].closed == 0
    runner.shutdown()
    assert [m.closed for m in made] == [1, 0, 1]
