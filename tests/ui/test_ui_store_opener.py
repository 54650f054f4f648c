"""Only ``workbench/ui/project_session.py`` opens the project store in the window's code.

Walks the AST of every module under ``workbench/ui`` (no import, so a broken module is still
checked) and fails on any mention of ``ProjectStore`` or an import of ``workbench.store.project``
outside the session module; views get their connections from ``project_session.open_read`` /
``open_write``. A planted module shows the walk does catch each form.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from unprivileged import ran_unprivileged

from workbench.ui import project_session

UI = Path(__file__).resolve().parents[2] / "workbench" / "ui"
OWNER = UI / "project_session.py"


def store_openers(source: str) -> list[str]:
    """Each place in ``source`` that imports or names ProjectStore, as 'line N: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("workbench.store"):
            if node.module == "workbench.store.project" or any(a.name == "ProjectStore" for a in node.names):
                found.append(f"line {node.lineno}: from {node.module} import …")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name == "workbench.store.project"]
        elif isinstance(node, ast.Name) and node.id == "ProjectStore":
            found.append(f"line {node.lineno}: ProjectStore")
        elif isinstance(node, ast.Attribute) and node.attr == "ProjectStore":
            found.append(f"line {node.lineno}: ….ProjectStore")
    return found


def test_only_the_project_session_opens_the_store():
    offenders = {}
    for path in sorted(UI.rglob("*.py")):
        if path != OWNER:
            hits = store_openers(path.read_text(encoding="utf-8"))
            if hits:
                offenders[str(path.relative_to(UI))] = hits
    assert offenders == {}, f"open the project through workbench.ui.project_session instead: {offenders}"
    assert store_openers(OWNER.read_text(encoding="utf-8")), "the session module should be the one opener"


@pytest.mark.parametrize("planted", [
    "from workbench.store import ProjectStore\n",
    "from workbench.store import RunInfo, ProjectStore as PS\n",
    "from workbench.store.project import open_store\n",
    "import workbench.store.project\n",
    "import workbench.store\nworkbench.store.ProjectStore.open('p')\n",
    "def f():\n    from workbench import store\n    return store.ProjectStore.open('p', readonly=True)\n",
])
def test_the_walk_catches_each_way_of_reaching_the_store(planted):
    assert store_openers(planted)


def test_the_walk_leaves_other_store_imports_alone():
    assert store_openers("from workbench.store.browse import MergeSource, store_connection\n") == []


def test_views_read_and_write_through_the_session_helpers(tmp_path):
    path = tmp_path / "p.tokproj"
    session = project_session.ProjectSession()
    session.open(path, create=True)
    try:
        with project_session.open_write(path) as store:
            store.save_text("greeting", "hello")
        with project_session.open_read(path) as reader:
            assert [(name, text) for _id, name, text in reader.texts()] == [("greeting", "hello")]
            assert reader.read_only
    finally:
        session.close()


def test_a_write_to_a_read_only_project_is_one_clear_error(tmp_path, request):
    if ran_unprivileged(request):  # as root: re-run where permission bits stop writes
        return
    from workbench.errors import WorkbenchError

    path = tmp_path / "p.tokproj"
    session = project_session.ProjectSession()
    session.open(path, create=True)
    session.close()
    path.chmod(0o444)
    try:
        with pytest.raises(WorkbenchError) as err, project_session.open_write(path):
            pass
        assert "\n" not in str(err.value) and str(err.value)
    finally:
        path.chmod(0o644)
