"""The bundled demo corpus, so the window has something to show when started with no files.

It lives in ``resources/demo`` at the repository root (the package is installed editable), a few
short multilingual excerpts whose origins and licences are listed in ``resources/demo/SOURCES.md``.
"""

from __future__ import annotations

from pathlib import Path

from workbench.errors import WorkbenchError

DEMO_DIR = Path(__file__).resolve().parents[2] / "resources" / "demo"


def demo_corpus_files() -> list[Path]:
    """The demo corpus files (``*.txt``), sorted; an error if the resources folder is missing."""
    files = sorted(DEMO_DIR.glob("*.txt")) if DEMO_DIR.is_dir() else []
    if not files:
        raise WorkbenchError(f"{DEMO_DIR}: the bundled demo corpus is missing: reinstall tokenizer-workbench")
    return files
