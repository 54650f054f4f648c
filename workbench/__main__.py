"""Entry point of the ``workbench`` command: a headless command, or the window.

``workbench train|runs|encode|decode|export|import|stats …`` run headless (:mod:`workbench.cli`).
Anything else — nothing, a project file, corpus files — opens the window. The window's training
runs start this same entry point as a child process (``workbench train --spec RUN.json``, the
window's RunSpec as a file), so a frozen app needs no Python beside it;
in a frozen app the training's writer process is this entry point too (``--run-writer``).
"""

from __future__ import annotations

import multiprocessing
import sys

from workbench.cli import COMMANDS, run_cli
from workbench.store.writer import WRITER_FLAG


def main(argv: list[str] | None = None) -> int:
    multiprocessing.freeze_support()  # must come first in a frozen app (child processes re-enter here)
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == [WRITER_FLAG]:  # a frozen app's run writer (workbench.store.writer)
        from workbench.store.writer_process import main as write_run

        return write_run(args[1:])
    if args and (args[0] in COMMANDS or args[0] in ("-h", "--help")):
        return run_cli(args)
    try:
        from workbench.ui.app import run_app
    except ImportError as exc:
        if "workbench.ui" not in str(exc) and "PySide6" not in str(exc):
            raise
        print(f"workbench: the window is not available ({exc}); headless commands work:", file=sys.stderr)
        return run_cli(["--help"])
    return run_app(args)


if __name__ == "__main__":
    sys.exit(main())
