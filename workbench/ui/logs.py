"""The window's log file (in the platform's state folder) and Help ▸ Show Log.

:func:`install_window_log` points the ``workbench`` logger at ``window.log`` in the folder
``QStandardPaths`` gives for state (``StateLocation`` where Qt has it, app-local data before Qt
6.7) through :func:`workbench.logfile.install`, and logs exceptions that reach the event loop;
:func:`forward_qt_messages` adds Qt's own warnings (a thread destroyed while running, a failed
connection) to the same file.
:class:`LogDialog` shows the file's last lines read-only, with *Open Folder* handing the folder to
the desktop — a dialog rather than opening the file directly, because it works (and can be
tested) without a desktop session, and shows the newest records first where they matter.

What it leaves out: choosing what to log (each module logs under its own name) and any viewer
beyond a plain tail.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import TracebackType

from PySide6.QtCore import (
    QMessageLogContext,
    QStandardPaths,
    QtMsgType,
    QUrl,
    Slot,
    qInstallMessageHandler,
)
from PySide6.QtGui import QDesktopServices, QFontDatabase, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench import logfile

WINDOW_LOG = "window.log"
TAIL_BYTES = 256_000  # enough for the last few thousand records; the full file is one click away

log = logging.getLogger(__name__)


def window_log_folder() -> Path:
    """The platform's folder for the window's state (its log lives there)."""
    where = getattr(QStandardPaths.StandardLocation, "StateLocation", None)  # Qt ≥ 6.7
    if where is None:
        where = QStandardPaths.StandardLocation.AppLocalDataLocation
    base = QStandardPaths.writableLocation(where)
    return Path(base) if base else logfile.state_folder()


def window_log_path() -> Path:
    """The file the window logs to: the installed one, else where it would go."""
    return logfile.current_path() or window_log_folder() / WINDOW_LOG


def install_window_log() -> Path | None:
    """Log to ``window.log`` and log uncaught exceptions; returns the file (None if unwritable)."""
    path = window_log_folder() / WINDOW_LOG
    if logfile.install(path) is None:
        return None
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        # A slot that raises does not stop Qt's event loop: this is its only trace besides stderr.
        logging.getLogger("workbench.ui").critical("uncaught exception", exc_info=(kind, exc, tb))
        previous(kind, exc, tb)

    sys.excepthook = hook
    return path


_QT_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}


def forward_qt_messages() -> None:
    """Send Qt's messages to the ``workbench.qt`` logger as well as to stderr, as Qt would.

    Called by the app only: pytest-qt installs its own handler to fail tests on Qt warnings.
    """
    qt_log = logging.getLogger("workbench.qt")

    def handler(kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
        qt_log.log(_QT_LEVELS.get(kind, logging.WARNING), "%s", message)
        if sys.stderr is not None:  # a windowed app on Windows has no stderr
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def read_tail(path: Path, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of ``path`` as text, starting at a whole line."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - limit))
        data = f.read()
    if size > limit:
        data = data[data.find(b"\n") + 1:]
    return data.decode("utf-8", errors="replace")


class LogDialog(QDialog):
    """The log's tail, read-only, scrolled to the newest record; Refresh and Open Folder."""

    def __init__(self, path: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.path = path
        self.setWindowTitle("Log")
        self.setObjectName("logDialog")
        self.resize(900, 520)
        self.where = QLabel(str(path))
        self.where.setWordWrap(True)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.refresh_button = QPushButton("&Refresh")
        self.folder_button = QPushButton("Open &Folder")
        self.folder_button.setToolTip(str(path.parent))
        buttons.addButton(self.refresh_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.folder_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.refresh_button.clicked.connect(self._on_refresh)
        self.folder_button.clicked.connect(self._on_open_folder)
        layout = QVBoxLayout(self)
        layout.addWidget(self.where)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.reload()

    def reload(self) -> None:
        try:
            text = read_tail(self.path)
        except FileNotFoundError:
            text = "Nothing has been logged yet."
        except OSError as exc:
            text = f"Cannot read the log: {exc.strerror or exc}"
        self.text.setPlainText(text)
        self.text.moveCursor(QTextCursor.MoveOperation.End)

    @Slot()
    def _on_refresh(self) -> None:
        self.reload()

    def folder_url(self) -> QUrl:
        return QUrl.fromLocalFile(str(self.path.parent))

    @Slot()
    def _on_open_folder(self) -> None:
        if not QDesktopServices.openUrl(self.folder_url()):
            log.warning("the desktop did not open the log folder %s", self.path.parent)
