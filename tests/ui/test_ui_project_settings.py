"""The Inspect session lives in the project's settings (schema 2), and a v1 project's session —
kept as a reserved-name text — comes back after the upgrade moved it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from workbench.store import ProjectStore
from workbench.store.schema import INSPECT_SESSION_KEY, V1_INSPECT_SESSION_NAME
from workbench.ui.project_session import ProjectSession

V1 = Path(__file__).parents[1] / "store" / "data" / "v1_project.tokproj"


def test_a_v1_projects_inspect_session_is_moved_and_kept_in_settings(qapp, tmp_path):
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    old = {"text": "Привет 世界", "panes": [{"source": "run 1"}], "options": {"ids": True}}
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO texts (name, text, saved) VALUES (?, ?, 1.0)", (V1_INSPECT_SESSION_NAME, json.dumps(old)))
    raw.commit()
    raw.close()
    session = ProjectSession()
    session.open(path)
    assert session.inspect_session() == old
    assert [name for _i, name, _t in session.store.texts()] == ["greeting"]
    new = {**old, "text": "changed"}
    assert session.save_inspect_session(new)
    assert session.inspect_session() == new
    session.close()
    with ProjectStore.open(path, readonly=True) as store:
        assert store.setting(INSPECT_SESSION_KEY) == new
        assert [name for _i, name, _t in store.texts()] == ["greeting"]  # the text table stays the user's
