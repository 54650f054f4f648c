"""Entry point of the ``workbench`` command: a headless command, or the window.

``workbench train|runs|encode|decode|export|import|stats …`` run headless (:mod:`workbench.cli`).
Anything else — nothing, a project file, corpus files — opens the window. The window's training
runs start this same entry point as a child process (``workbench train --spec RUN.json``, the
window's RunSpec as a file), so a frozen app needs no Python beside it;
in a frozen app the training's writer process is this entry point too (``--run-writer``).
"""

from __future__ import annotations

import os
import sys

from workbench.cli import COMMANDS, run_cli
from workbench.store.writer import WRITER_FLAG


def main(argv: list[str] | None = None) -> int:
    if getattr(sys, "frozen", False):  # only a frozen app needs it (1.3 MB of imports otherwise)
        import multiprocessing

        multiprocessing.freeze_support()  # must come first in a frozen app (child processes re-enter here)
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == [WRITER_FLAG]:  # a frozen app's run writer (workbench.store.writer)
        from workbench.store.writer_process import main as write_run

        return write_run(args[1:])
    if args and (args[0] in COMMANDS or args[0] in ("-h", "--help")):
        return run_cli(args)
    from workbench.ui.arguments import split_args

    unknown = [a for a in split_args(args)[0] if not os.path.exists(a)]
    if unknown:  # a typo of a command must not open a window (or abort inside Qt without a display)
        print(f"workbench: unknown command or file: {unknown[0]} (commands: {', '.join(COMMANDS)}; "
              "or give a .tokproj project or corpus files to open the window)", file=sys.stderr)
        return 2
    if _no_display():
        print("workbench: no display to open the window on: use the headless commands (workbench --help), "
              "or set QT_QPA_PLATFORM=offscreen", file=sys.stderr)
        return 2
    try:
        from workbench.ui.app import run_app
    except ImportError as exc:
        if "workbench.ui" not in str(exc) and "PySide6" not in str(exc):
            raise
        print(f"workbench: the window is not available ({exc}); headless commands work:", file=sys.stderr)
        return run_cli(["--help"])
    return run_app(args)


def _no_display() -> bool:
    """On X11/Wayland systems, no display and no platform chosen: Qt would abort ("could not connect")."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


if __name__ == "__main__":
    sys.exit(main())
