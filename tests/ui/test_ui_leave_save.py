"""Saving an untitled project while the window leaves it (close, open another, new) copies on a
worker; the leave follows when the copy is written (issue 26: the window never blocks).

The copy was written on the window's thread, since what follows needed it done: a large project
froze the window for as long as its backup took. Now the status bar says "Saving as …", the
actions that would leave or change the project wait, and the close / open / new continues once the
copy is written — or, when it cannot be, the window stays on the untitled project (its file as it
was) with one message. Closing the window while it copies waits for the copy without blocking the
event loop.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFileDialog, QMessageBox
from ui_helpers import train_cli

from workbench.store.project import ProjectStore


def _untitled_with_a_run(window, qtbot, small_corpus: list[Path], merges: int = 7) -> Path:
    """The window on a new untitled project holding one finished run (trained by the CLI)."""
    assert window.new_project()
    untitled = window.session.path
    train_cli(small_corpus, untitled, "--merges", str(merges))
    window.session.notify_runs_changed()
    assert window.session.untitled and window.session.is_modified()
    return untitled


def _answers(monkeypatch, *buttons: QMessageBox.StandardButton) -> list[str]:
    """The window's "Save the untitled project?" answered with ``buttons`` in turn, then Discard
    (so closing the window at teardown never waits on a box); returns the questions asked."""
    from workbench.ui import main_window

    asked: list[str] = []
    left = list(buttons)

    def fake_ask(parent, title, text, buttons, default):
        asked.append(text)
        return left.pop(0) if left else QMessageBox.StandardButton.Discard

    monkeypatch.setattr(main_window, "ask", fake_ask)
    return asked


def _errors(window, monkeypatch) -> list[str]:
    shown: list[str] = []
    monkeypatch.setattr(window, "_error", lambda title, message: shown.append(message))
    return shown


def _save_to(monkeypatch, dest: Path) -> list[str]:
    asked: list[str] = []

    def fake_dialog(parent, title, suggested, _filter):
        asked.append(title)
        return str(dest), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake_dialog))
    return asked


def _merge_counts(path: Path) -> list[int]:
    with ProjectStore.open(path, readonly=True) as store:
        return [r.merge_count for r in store.runs()]


def _ticks_while(qtbot, done) -> int:
    """Turns of the event loop (a 5 ms timer's ticks) until ``done()``: >0 means it kept running."""
    ticks = [0]
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    timer.start()
    try:
        qtbot.waitUntil(done, timeout=30000)
    finally:
        timer.stop()
    return ticks[0]


def test_opening_another_project_saves_the_untitled_one_on_a_worker_first(make_window, qtbot, small_corpus,
                                                                           tmp_path, monkeypatch):
    other = tmp_path / "other.tokproj"
    train_cli(small_corpus, other, "--merges", "5")
    other_bytes = other.read_bytes()
    window = make_window(None)
    untitled = _untitled_with_a_run(window, qtbot, small_corpus)
    dest = tmp_path / "kept.tokproj"
    asked = _save_to(monkeypatch, dest)
    saved: list[str] = []
    opened: list[str] = []
    window.leave_saved.connect(saved.append)
    window.project_opened.connect(opened.append)
    questions = _answers(monkeypatch, QMessageBox.StandardButton.Save)
    assert window.open_project(other) is False  # not now: after the copy
    assert len(questions) == 1 and "Save it before" in questions[0] and asked == ["Save project as"]
    # Started, not done (its result can only arrive through the event loop): still on the untitled
    # project, saying what it does, with the actions that would leave or change it waiting.
    assert window.is_saving_to_leave() and window.session.path == untitled and not opened
    assert window.opening_label.isVisible() and window.opening_label.text() == "Saving as kept.tokproj…"
    for act in (window.act_new, window.act_open, window.act_save, window.act_save_as, window.act_train,
                window.act_import):
        assert not act.isEnabled(), act.text()
    assert window.open_project(other, ask_first=False) is False  # nothing overtakes the copy
    assert window.new_project() is False and window.session.path == untitled
    qtbot.waitUntil(lambda: window.session.path == other and not window.is_opening(), timeout=30000)
    assert saved == [str(dest)] and opened == [str(other)]
    assert not window.is_saving_to_leave() and not window.opening_label.isVisible()
    assert window.act_new.isEnabled() and window.act_open.isEnabled() and window.act_save_as.isEnabled()
    assert _merge_counts(dest) == [7]  # the copy holds the run
    assert not untitled.exists()  # the untitled original went when the window left it
    assert window.settings.recent_projects[:2] == [str(other), str(dest)]
    assert other.read_bytes() == other_bytes  # the project opened is read, not written, by the open
    with ProjectStore.open(dest, readonly=True) as store:
        assert store.integrity_check() == "ok"


def test_a_copy_that_cannot_be_written_keeps_the_untitled_project_and_stays(make_window, qtbot, small_corpus,
                                                                            tmp_path, monkeypatch):
    other = tmp_path / "other.tokproj"
    train_cli(small_corpus, other, "--merges", "5")
    window = make_window(None)
    untitled = _untitled_with_a_run(window, qtbot, small_corpus)
    window._save_inspect_session()  # what any leave writes first (the tabs' sessions): the rest is the copy's
    before = untitled.read_bytes()
    _save_to(monkeypatch, tmp_path / "no such folder" / "kept.tokproj")
    failed: list[str] = []
    window.leave_save_failed.connect(failed.append)
    questions = _answers(monkeypatch, QMessageBox.StandardButton.Save)
    errors = _errors(window, monkeypatch)
    assert window.open_project(other) is False
    qtbot.waitUntil(lambda: bool(failed), timeout=30000)
    assert len(questions) == 1 and failed == errors and len(errors) == 1 and "no such folder" in errors[0]
    assert "\n" not in errors[0]
    # The leave did not happen: the window is on the untitled project, as it was, and asks again.
    assert window.session.path == untitled and window.session.untitled and not window.session.copied
    assert not window.is_saving_to_leave() and not window.is_opening() and window.act_open.isEnabled()
    assert untitled.read_bytes() == before and _merge_counts(untitled) == [7]
    assert window.session.is_modified() and window.isWindowModified()
    assert not (tmp_path / "no such folder").exists()


def test_new_project_follows_the_copy(make_window, qtbot, small_corpus, tmp_path, monkeypatch):
    window = make_window(None)
    untitled = _untitled_with_a_run(window, qtbot, small_corpus, merges=9)
    dest = tmp_path / "named"  # no suffix: the copy gets .tokproj
    _save_to(monkeypatch, dest)
    _answers(monkeypatch, QMessageBox.StandardButton.Save)
    assert window.new_project() is False
    assert window.is_saving_to_leave() and window.session.path == untitled
    qtbot.waitUntil(lambda: window.session.path not in (None, untitled), timeout=30000)
    assert window.session.untitled and not window.session.runs()  # the new, empty untitled project
    assert not untitled.exists() and _merge_counts(dest.with_name("named.tokproj")) == [9]


def test_closing_while_the_copy_is_written_waits_for_it_without_blocking(make_window, qtbot, small_corpus,
                                                                        tmp_path, monkeypatch):
    window = make_window(None)
    untitled = _untitled_with_a_run(window, qtbot, small_corpus, merges=6)
    dest = tmp_path / "kept.tokproj"
    _save_to(monkeypatch, dest)
    questions = _answers(monkeypatch, QMessageBox.StandardButton.Save)
    assert window.close() is False  # Save chosen: the close waits for the copy
    assert window.is_saving_to_leave() and window.isVisible() and window.session.path == untitled
    assert window.close() is False  # closed again meanwhile: still waiting, not blocked
    assert window.statusBar().currentMessage() == "Closing once the copy is written…"
    ticks = _ticks_while(qtbot, lambda: not window.isVisible())
    assert ticks > 0  # the event loop ran while the copy was written
    assert window.session.path is None and not window.is_saving_to_leave()
    assert _merge_counts(dest) == [6] and not untitled.exists()
    assert len(questions) == 1  # asked once: the close that followed the copy did not ask again
