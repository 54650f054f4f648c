"""The upgrade ladder, run on a real version-1 file kept in ``data/``."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from store_helpers import DATA, sha256, side_files

from workbench.errors import WorkbenchError
from workbench.store import ProjectStore, schema

V1 = DATA / "v1_project.tokproj"


def test_v1_fixture_schema_is_exactly_what_migration_1_creates():
    """A released migration must never change: files in the wild were built by it."""
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    fresh.execute("BEGIN")
    for step in schema.MIGRATIONS[0]:
        fresh.execute(step)
    fresh.execute("COMMIT")
    fixture = sqlite3.connect(f"file:{V1}?mode=ro", uri=True)
    query = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    assert fixture.execute(query).fetchall() == fresh.execute(query).fetchall()
    assert fixture.execute("PRAGMA user_version").fetchone()[0] == 1


def test_v1_file_opens_with_its_data(tmp_path):
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    with ProjectStore.open(path) as store:
        (run,) = store.runs()
        assert (run.name, run.status, run.merge_count, run.corpus_ids) == ("first run", "finished", 3, (1,))
        assert [m.piece for m in store.merges(1)] == [b"lo", b"low", b"es"]
        tok = store.load_tokenizer(1)
        assert tok.units == "chars" and tok.special_tokens == {"<unk>": 0}
        assert tok.normalizer == ("nfc",) and tok.unk_token == "<unk>"
        assert store.texts() == [(1, "greeting", "lower newest")]
    assert side_files(path) == []


def test_v1_file_upgrades_to_version_2_with_no_pruning_checkpoints(tmp_path):
    """Version 2 adds the Unigram pruning checkpoints table; a v1 run has none and still loads."""
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    with ProjectStore.open(path) as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] >= 2
        assert store.pruning_checkpoints(1) == []
        assert store.load_tokenizer(1).units == "chars"
        store.delete_run(1)  # deleting a run clears the new table too
        assert store.runs() == []


def _add_step(monkeypatch, *steps):
    """One more migration on top of the real ladder (whatever its length: the file ends at
    ``schema.current_version()`` under the patch)."""
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, tuple(steps)])


def test_ladder_upgrades_v1_in_one_transaction(tmp_path, monkeypatch):
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    _add_step(monkeypatch,
            "ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT ''",
            lambda conn: conn.execute("UPDATE runs SET notes = 'from v1: ' || name"))
    with ProjectStore.open(path) as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == schema.current_version()
        assert store._conn.execute("SELECT notes FROM runs").fetchone()[0] == "from v1: first run"
        assert store.merge_count(1) == 3
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == schema.current_version()
    raw.close()


def test_failing_migration_rolls_back_and_leaves_the_file_identical(tmp_path, monkeypatch):
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    before = sha256(path)
    _add_step(monkeypatch, "CREATE TABLE extra (x)", "INSERT INTO no_such_table VALUES (1)")
    with pytest.raises(WorkbenchError, match="old.tokproj"):
        ProjectStore.open(path)
    assert sha256(path) == before and side_files(path) == []


def test_read_only_open_of_an_old_file_on_read_only_media_asks_for_a_writable_copy(tmp_path, monkeypatch):
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    before = sha256(path)
    _add_step(monkeypatch, "CREATE TABLE extra (x)")
    from workbench.store import opening

    monkeypatch.setattr(opening, "write_problem", lambda _path: "the file is read-only")
    with pytest.raises(WorkbenchError, match="older project format"):
        ProjectStore.open(path, readonly=True)
    assert sha256(path) == before


def test_read_only_open_of_an_old_writable_file_upgrades_it_first(tmp_path, monkeypatch):
    """`workbench runs/encode` open read-only; an old project they can write is upgraded once."""
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    _add_step(monkeypatch, "CREATE TABLE extra (x)")
    with ProjectStore.open(path, readonly=True) as store:
        assert store.read_only and store.merge_count(1) == 3
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == schema.current_version()
    raw.close()


# ---- version 2: run_steps, settings, the Inspect session moved out of texts ----------------------
def _v1_with_session(tmp_path, session_text: str):
    """The v1 fixture plus what a v1 window kept: the Inspect session as a reserved-name text."""
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO texts (name, text, saved) VALUES (?, ?, 1.0)",
                (schema.V1_INSPECT_SESSION_NAME, session_text))
    raw.commit()
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    raw.close()
    return path


def test_v1_file_upgrades_to_v2_with_the_new_tables_and_the_session_moved(tmp_path):
    session = {"text": "naïve café", "panes": ["run 1", "reference 2"]}
    path = _v1_with_session(tmp_path, json.dumps(session))
    with ProjectStore.open(path) as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == 2
        tables = {r[0] for r in store._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert schema.REQUIRED_TABLES <= tables
        assert store.setting(schema.INSPECT_SESSION_KEY) == session
        assert store.texts() == [(1, "greeting", "lower newest")]  # moved, not copied
        assert store.run_steps(1) == []  # a v1 BPE run has no step rows: its steps are its merges
        assert [s.step for s in store.steps(1)] == [1, 2, 3]
    # Opening again does not run the step twice (nor fail on the row it inserted).
    with ProjectStore.open(path) as store:
        assert store.setting(schema.INSPECT_SESSION_KEY) == session


def test_v1_session_that_is_not_json_is_kept_as_a_string(tmp_path):
    path = _v1_with_session(tmp_path, "{not json")
    with ProjectStore.open(path) as store:
        assert store.setting(schema.INSPECT_SESSION_KEY) == "{not json"
        assert [name for _i, name, _t in store.texts()] == ["greeting"]


def test_failing_v2_step_leaves_the_v1_file_and_its_session_untouched(tmp_path, monkeypatch):
    path = _v1_with_session(tmp_path, json.dumps({"text": "kept"}))
    before = sha256(path)

    def broken(conn):
        raise sqlite3.OperationalError("disk I/O error while moving the session")

    monkeypatch.setattr(schema, "MIGRATIONS", [schema.MIGRATIONS[0], (*schema.MIGRATIONS[1], broken)])
    with pytest.raises(WorkbenchError, match="old.tokproj"):
        ProjectStore.open(path)
    assert sha256(path) == before and side_files(path) == []
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    assert raw.execute("SELECT count(*) FROM texts WHERE name = ?",
                       (schema.V1_INSPECT_SESSION_NAME,)).fetchone()[0] == 1
    assert raw.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('run_steps', 'settings')"
                       ).fetchone()[0] == 0
    raw.close()


def test_settings_round_trip_and_survive_reopening(tmp_path):
    path = tmp_path / "p.tokproj"
    with ProjectStore.open(path, create=True) as store:
        assert store.setting("missing", {"default": True}) == {"default": True}
        store.set_setting("inspect_session", {"text": "Привет 世界", "panes": [1, 2]})
        store.set_setting("inspect_session", {"text": "replaced"})
        store.set_setting("zoom", 1.25)
    with ProjectStore.open(path, readonly=True) as store:
        assert store.setting("inspect_session") == {"text": "replaced"}
        assert store.setting("zoom") == 1.25
        with pytest.raises(WorkbenchError, match="read-only"):
            store.set_setting("zoom", 2)


def test_an_upgrade_is_said_once_with_the_versions(tmp_path, caplog):
    path = tmp_path / "old.tokproj"
    shutil.copy(V1, path)
    with caplog.at_level("INFO", logger="workbench.notes"):
        ProjectStore.open(path).close()
        said = [r.getMessage() for r in caplog.records if r.name == "workbench.notes"]
        assert said == [f"old.tokproj was upgraded from project format 1 to {schema.current_version()} (older "
                        "versions of the workbench cannot open it any more)"]
        caplog.clear()
        ProjectStore.open(path).close()
        assert not [r for r in caplog.records if r.name == "workbench.notes"]
