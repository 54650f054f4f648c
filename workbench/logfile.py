"""Where the workbench writes its log, and the rotating file handler both front ends install.

The window and the headless commands log through stdlib :mod:`logging` under the ``workbench``
logger; :func:`install` points that logger at a ``RotatingFileHandler`` (1 MB × 3 backups), so
an ``except`` that keeps the app running still leaves a traceback someone can read afterwards.
:func:`state_folder` is the platform's folder for such state without Qt (the CLI never imports
Qt): ``$XDG_STATE_HOME/tokenizer-workbench`` (default ``~/.local/state/…``) on Linux and other
Unixes, ``%LOCALAPPDATA%\\tokenizer-workbench\\Logs`` on Windows, ``~/Library/Logs/…`` on macOS.
The window asks ``QStandardPaths`` instead (``workbench.ui.logs``).

It lives beside :mod:`workbench.errors`, below every layer, so both front ends can import it.

What it leaves out: any log *policy* (who logs what is the caller's business); several processes
rotating one file at the same moment (each process then keeps writing to the file it opened —
records land in a backup instead of being lost); and logging configuration files.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from collections.abc import Mapping
from pathlib import Path

LOGGER = "workbench"
FOLDER_NAME = "tokenizer-workbench"
CLI_LOG = "workbench.log"
MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)-7s [%(process)d %(threadName)s] %(name)s: %(message)s"

_MARK = "_workbench_logfile"  # set on the handler install() adds, so a second install replaces it


def state_folder(environ: Mapping[str, str] | None = None, platform: str | None = None,
                 home: Path | None = None) -> Path:
    """The folder for the workbench's logs on this platform (not created here)."""
    env = os.environ if environ is None else environ
    plat = sys.platform if platform is None else platform
    user = Path.home() if home is None else home
    if plat.startswith("win"):
        local = env.get("LOCALAPPDATA")
        return (Path(local) if local else user / "AppData" / "Local") / FOLDER_NAME / "Logs"
    if plat == "darwin":
        return user / "Library" / "Logs" / FOLDER_NAME
    state = env.get("XDG_STATE_HOME", "")
    # The XDG spec ignores a relative path here: it would depend on the working directory.
    base = Path(state) if state and Path(state).is_absolute() else user / ".local" / "state"
    return base / FOLDER_NAME


def cli_log_path() -> Path:
    return state_folder() / CLI_LOG


class _QuietRotatingHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler that never writes to stderr when the log itself fails.

    The stock handler prints "--- Logging error ---" and a traceback on stderr when a write fails
    (full disk, a file-size limit), which would break the CLI's one-line-on-stderr promise. The log
    is a diagnostic aid: when it cannot be written, it stops quietly.
    """

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's own name
        logging.getLogger(LOGGER).removeHandler(self)


def install(path: Path, *, level: int = logging.INFO) -> logging.Handler | None:
    """Log ``workbench.*`` records at ``level`` and above to ``path`` (rotating); None if it cannot.

    A log file that cannot be created (read-only home, full disk) must not stop the app, so that
    case returns None and logging stays as it was. A second call replaces the first handler.
    """
    logger = logging.getLogger(LOGGER)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _QuietRotatingHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.setLevel(level)
    setattr(handler, _MARK, True)
    for old in [h for h in logger.handlers if getattr(h, _MARK, False)]:
        remove(old)
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    return handler


def remove(handler: logging.Handler) -> None:
    """Detach and close a handler from :func:`install` (tests, switching files)."""
    logging.getLogger(LOGGER).removeHandler(handler)
    handler.close()


def current_path() -> Path | None:
    """The file the ``workbench`` logger writes to, if :func:`install` succeeded."""
    for handler in logging.getLogger(LOGGER).handlers:
        if getattr(handler, _MARK, False):
            return Path(handler.baseFilename)  # type: ignore[attr-defined]
    return None
