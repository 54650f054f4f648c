"""The window's command line, without Qt: which words are paths to open and which are Qt's options.

Qt-free so that ``workbench.__main__`` can tell a typo (neither a command nor a file) from a Qt option
with its value (``-platform offscreen``) before it imports Qt at all.
"""

from __future__ import annotations

from typing import Sequence

# Qt's own options that take a value, and ours (--smoke-test DIR).
WITH_VALUE = frozenset({"-platform", "-style", "-stylesheet", "-qwindowgeometry", "-qwindowtitle", "-session",
                        "-display", "--smoke-test"})


def split_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(paths, Qt options) — Qt options start with '-' (``-platform offscreen`` takes a value)."""
    paths: list[str] = []
    qt: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg.startswith("-") and arg != "-":
            qt.append(arg)
            if arg in WITH_VALUE:
                qt.append(next(it, ""))
        else:
            paths.append(arg)
    return paths, qt
