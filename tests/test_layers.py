"""The domain packages must run without Qt: walk their imports and fail on a GUI/numpy import."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"
FORBIDDEN = ("PySide6", "pyqtgraph", "numpy", "shiboken6")
QT_FREE = ["core", "corpus", "formats", "store", "cli.py", "errors.py", "sources.py", "training.py", "project_io.py",
           "inspection.py", "analysis.py"]


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_domain_packages_import_no_qt():
    files = []
    for entry in QT_FREE:
        target = PACKAGE / entry
        files.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    assert len(files) >= 8, "the layer check found too few files to be meaningful"
    violations = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        for path in files
        for line, module in _imports(path)
        if module.split(".")[0] in FORBIDDEN or module.startswith("workbench.ui")
    ]
    assert violations == []


def test_layer_check_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom PySide6.QtCore import QObject\n", encoding="utf-8")
    assert (2, "PySide6.QtCore") in _imports(bad)
