"""The shape of the code, checked: import-linter's contracts in ``pyproject.toml`` (layers, independent
tabs, no Qt below the window), run on the real tree; and a planted violation that must be caught."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    pytest.importorskip("importlinter")
    env = {"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run([*LINT, "--no-cache", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def test_the_tree_keeps_its_layer_contracts():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 kept, 0 broken" in result.stdout


def test_a_planted_upward_import_breaks_a_contract(tmp_path):
    pkg = tmp_path / "workbench"
    for sub in ("core", "ui"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "bad.py").write_text("from workbench.ui import widget\n")
    (pkg / "ui" / "widget.py").write_text("X = 1\n")
    (tmp_path / ".importlinter").write_text(textwrap.dedent("""\
        [importlinter]
        root_package = workbench

        [importlinter:contract:layers]
        name = layers
        type = layers
        layers =
            workbench.ui
            workbench.core
        """))
    result = _lint(tmp_path, "--config", str(tmp_path / ".importlinter"))
    assert result.returncode != 0
    assert "workbench.core.bad -> workbench.ui.widget" in result.stdout
