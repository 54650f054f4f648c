"""The window's plumbing: tabs as plain ProjectViews, one line to add one, Help ▸ Show Log, failures logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel, QMessageBox
from ui_helpers import BoxAnswerer

from workbench import logfile
from workbench.ui.compare.panel import ComparePanel
from workbench.ui.inspect.panel import InspectPanel
from workbench.ui.logs import LogDialog
from workbench.ui.main_window import MainWindow, ProjectView
from workbench.ui.merges.panel import MergePanel
from workbench.ui.settings import AppSettings

B = QMessageBox.StandardButton


class FakeView(QLabel):
    """The smallest ProjectView: records what the window called."""

    def __init__(self, fail_refresh: bool = False):
        super().__init__("a tab added later")
        self.calls: list[object] = []
        self.fail_refresh = fail_refresh

    def set_project(self, path: Path | None) -> None:
        self.calls.append(("set_project", path))

    def refresh(self) -> None:
        self.calls.append("refresh")
        if self.fail_refresh:
            raise RuntimeError("view bug")

    def shutdown(self) -> None:
        self.calls.append("shutdown")


class WindowWithCompare(MainWindow):
    """What adding a tab looks like (the Compare tab was added this way): one line in _build_tabs."""

    def _build_tabs(self) -> None:
        super()._build_tabs()
        self.extra = self._add_view("extra", "Extra", FakeView(), live=True)


class WindowWithTwoLateViews(MainWindow):
    def _build_tabs(self) -> None:
        self.broken = FakeView(fail_refresh=True)
        self.after = FakeView()
        super()._build_tabs()
        self._add_view("broken", "Broken", self.broken)
        self._add_view("after", "After", self.after)


@pytest.fixture
def log_file(tmp_path):
    path = tmp_path / "state" / "window.log"
    handler = logfile.install(path)
    assert handler is not None
    yield path, handler
    logfile.remove(handler)


def _window(qtbot, cls=MainWindow) -> MainWindow:
    window = cls(AppSettings())
    qtbot.addWidget(window)
    return window


def test_the_project_tabs_are_plain_views_in_tab_order(qtbot):
    window = _window(qtbot)
    try:
        assert list(window.docks) == ["corpus", "train", "inspect", "merges", "compare"]
        assert [type(v) for v in window.views] == [InspectPanel, MergePanel, ComparePanel]
        assert all(isinstance(v, ProjectView) for v in window.views)
        assert not isinstance(QLabel(), ProjectView)  # the protocol does reject a plain widget
        assert window.findChild(QLabel, "missingInspect") is None  # no stand-in panels any more
    finally:
        window.shutdown()


def test_adding_a_tab_is_one_line(qtbot, tmp_path):
    window = _window(qtbot, WindowWithCompare)
    try:
        assert list(window.docks)[-1] == "extra"
        assert window.tabifiedDockWidgets(window.docks["corpus"]).count(window.docks["extra"]) == 1
        view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
        toggle = next(a for a in view_menu.actions() if a.text() == "Compare")
        assert toggle.shortcut().isEmpty()  # Ctrl+N no longer hides a panel (issue 14); Alt+N switches
        assert any(a.shortcut() == QKeySequence("Alt+5") for a in window.actions())

        window.session.open(tmp_path / "p.tokproj", create=True)
        assert window.extra.calls[-1] == ("set_project", tmp_path / "p.tokproj")
        window.session.notify_runs_changed()
        window.training.steps_arrived.emit(1)  # live=True: refreshed while a run trains too
        assert window.extra.calls[-2:] == ["refresh", "refresh"]
    finally:
        window.shutdown()
    assert window.extra.calls[-2:] == [("set_project", None), "shutdown"]


def test_a_view_that_raises_is_logged_and_the_others_still_refresh(qtbot, caplog):
    window = _window(qtbot, WindowWithTwoLateViews)
    try:
        with caplog.at_level(logging.ERROR, logger="workbench.ui.main_window"):
            window.session.notify_runs_changed()
        assert "refresh" in window.after.calls
        record = next(r for r in caplog.records if "FakeView.refresh failed" in r.getMessage())
        assert record.exc_info and "view bug" in str(record.exc_info[1])
        assert "view bug" in window.statusBar().currentMessage()
    finally:
        window.shutdown()


def test_help_show_log_opens_the_log_tail_offscreen(qtbot, log_file):
    path, handler = log_file
    logging.getLogger("workbench.ui.test").warning("a record the dialog must show")
    handler.flush()
    window = _window(qtbot)
    try:
        help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
        action = next(a for a in help_menu.actions() if a.text() == "Show &Log")
        assert action is window.act_show_log and action.isEnabled()
        action.trigger()
        dialog = window.findChild(LogDialog)
        assert dialog is not None and dialog.isVisible() and dialog.path == path
        assert "a record the dialog must show" in dialog.text.toPlainText()
        assert dialog.text.isReadOnly()
        assert Path(dialog.folder_url().toLocalFile()) == path.parent

        logging.getLogger("workbench.ui.test").warning("a later record")
        handler.flush()
        dialog.refresh_button.click()
        assert dialog.text.toPlainText().rstrip().endswith("a later record")
        action.trigger()  # a second time reuses the open dialog
        assert window.findChildren(LogDialog) == [dialog]
    finally:
        window.shutdown()


def test_a_failed_import_is_logged_with_its_message(qtbot, log_file, tmp_path):
    path, handler = log_file
    window = _window(qtbot)
    try:
        window.session.open(tmp_path / "p.tokproj", create=True)
        bad = tmp_path / "tokenizer.json"
        bad.write_text("{ not json", encoding="utf-8")
        box = BoxAnswerer(B.Ok)
        with qtbot.waitSignal(window.import_finished, timeout=30000) as done:
            window.import_tokenizer(str(bad))
        assert done.args[0] is False and box.texts
        handler.flush()
        text = path.read_text(encoding="utf-8")
        assert "workbench.ui.jobs" in text and "failed" in text
        assert done.args[1].splitlines()[0] in text
    finally:
        window.shutdown()


def test_the_window_log_lives_in_the_state_folder_and_records_uncaught_exceptions(monkeypatch):
    import os
    import sys

    from workbench.ui.logs import install_window_log

    seen: list[str] = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, exc, tb: seen.append(str(exc)))
    path = install_window_log()
    assert path is not None and logfile.current_path() == path
    try:
        # tests/conftest.py points XDG_STATE_HOME at a temporary folder; Qt's StateLocation follows it
        assert path.name == "window.log" and Path(os.environ["XDG_STATE_HOME"]) in path.parents
        try:
            raise LookupError("slot bug")
        except LookupError as exc:
            sys.excepthook(type(exc), exc, exc.__traceback__)
        assert seen == ["slot bug"]  # the previous hook still runs
        for handler in logging.getLogger("workbench").handlers:
            handler.flush()
        text = path.read_text(encoding="utf-8")
    finally:
        for handler in list(logging.getLogger("workbench").handlers):
            if getattr(handler, "baseFilename", None) == str(path):
                logfile.remove(handler)
    assert "CRITICAL" in text and "uncaught exception" in text and "LookupError: slot bug" in text
