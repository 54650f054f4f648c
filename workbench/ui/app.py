"""``workbench`` without a command: the QApplication, its arguments, and the main window.

``workbench`` opens an untitled project on the bundled demo corpus (ready to train with F5);
``workbench P.tokproj`` opens that project; ``workbench FILES…`` starts an untitled project with
those corpus files. Qt's own arguments (``-platform``, ``-style`` …) are passed through to Qt.
The window logs to ``window.log`` in the platform's state folder (:mod:`workbench.ui.logs`).
What it leaves out: the headless commands (``workbench.cli``), which never import Qt.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Sequence, cast

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from workbench.ui import style
from workbench.ui.arguments import split_args
from workbench.ui.logs import forward_qt_messages, install_window_log
from workbench.ui.settings import AppSettings

log = logging.getLogger(__name__)

ORGANIZATION = "Tokenizer Workbench"
APPLICATION = "Tokenizer Workbench"
DESKTOP_ID = "io.github.tokenizer_workbench.Workbench"


def make_app(qt_args: Sequence[str] = ()) -> QApplication:
    """The QApplication (created once), named for QSettings, Fusion, palette following the system."""
    # The stubs type instance() as the QCoreApplication base; in this process it is our QApplication.
    app = cast("QApplication | None", QApplication.instance())
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QApplication([sys.argv[0] if sys.argv else "workbench", *qt_args])
    configure_app(app)
    return app


def configure_app(app: QApplication) -> None:
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    QGuiApplication.setApplicationDisplayName(APPLICATION)
    QGuiApplication.setDesktopFileName(DESKTOP_ID)
    app.setWindowIcon(style.app_icon())
    theme = AppSettings().theme
    style.apply_theme(app, theme)
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "colorSchemeChanged") and not getattr(app, "_workbench_scheme_hooked", False):
        hints.colorSchemeChanged.connect(lambda _scheme: style.apply_theme(app, AppSettings().theme))
        app._workbench_scheme_hooked = True  # type: ignore[attr-defined]


def create_window(paths: Sequence[str]):
    """Build the main window for the given paths (used by :func:`run_app` and the tests)."""
    from workbench.ui.main_window import MainWindow

    window = MainWindow(AppSettings())
    projects = [p for p in paths if p.endswith(".tokproj")]
    if not paths:
        window.start_demo()
    elif len(projects) == 1 and len(paths) == 1:
        if Path(projects[0]).exists():
            # opened on a worker: one that cannot be opened (its message shown) leaves an untitled project
            window.open_failed.connect(lambda _message: window.session.is_open or window.new_project())
            if not window.open_project(projects[0], ask_first=False):
                window.new_project()
        else:
            window.new_project()
            window._error("Cannot open the project", f"{projects[0]} does not exist; started an untitled project.")
    else:
        window.new_project([p for p in paths if not p.endswith(".tokproj")])
    return window


def run_app(argv: Sequence[str]) -> int:
    """Open the window; returns the exit status."""
    paths, qt_args = split_args(list(argv))
    smoke_dir = None
    if "--smoke-test" in qt_args:  # a frozen bundle's check: train the demo in the window, export, quit
        at = qt_args.index("--smoke-test")
        smoke_dir = Path(qt_args[at + 1]) if at + 1 < len(qt_args) else Path("smoke-test")
        del qt_args[at:at + 2]
    # The inspector colours text in a worker thread: hand the GIL back to the GUI thread every
    # millisecond instead of every five, so typing never waits on a long pure-Python split.
    sys.setswitchinterval(0.001)
    app = make_app(qt_args)
    path = install_window_log()  # after make_app: QStandardPaths needs the application's name
    forward_qt_messages()
    log.info("window started (log %s, arguments %s)", path, list(argv))
    window = create_window(paths)
    window.show()
    if smoke_dir is not None:
        from workbench.ui.smoke import SmokeTest

        return SmokeTest(window, smoke_dir).run(app)
    return app.exec()
