"""The bundled demo corpus, so the window has something to show when started with no files.

It ships as package data in ``workbench/resources/demo`` (see :mod:`workbench.resources`): a few
short multilingual excerpts whose origins and licences are listed in its ``SOURCES.md``.
"""

from __future__ import annotations

from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.resources import resource_dir


def demo_corpus_files() -> list[Path]:
    """The demo corpus files (``*.txt``), sorted; an error if the resources folder is missing."""
    try:
        folder = resource_dir("demo")
    except FileNotFoundError as exc:
        raise WorkbenchError(f"{exc}: the bundled demo corpus is missing: reinstall tokenizer-workbench") from None
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise WorkbenchError(f"{folder}: the bundled demo corpus is missing: reinstall tokenizer-workbench")
    return files
