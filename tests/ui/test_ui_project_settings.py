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


def test_a_tab_session_read_by_the_opening_worker_follows_every_later_write(qapp, tmp_path):
    """prepare_open reads the tabs' sessions on the worker and adopt keeps them as panel_state's
    answers — only until somebody writes: this session's own save (which leaves the data version of
    its read connection as it was, so the kept copy must be dropped by hand) and another connection's
    (another window, the CLI: the data version moves)."""
    from workbench.ui.project_session import COMPARE_SESSION_KEY, open_write, prepare_open

    key = COMPARE_SESSION_KEY
    path = tmp_path / "sessions.tokproj"
    first = ProjectSession()
    first.open(path, create=True)
    assert first.save_panel_state(key, {"text": "old"})
    first.close()

    session = ProjectSession()
    session.adopt(prepare_open(path, settings_keys=(key,)))
    assert session.panel_state(key) == {"text": "old"}
    assert session.save_panel_state(key, {"text": "mine"})
    assert session.panel_state(key) == {"text": "mine"}
    session.close()

    session = ProjectSession()
    session.adopt(prepare_open(path, settings_keys=(key,)))
    assert session.panel_state(key) == {"text": "mine"}
    with open_write(path) as other:
        other.set_setting(key, {"text": "theirs"})
    assert session.panel_state(key) == {"text": "theirs"}
    session.close()
