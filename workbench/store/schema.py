"""The project file's schema: its identity, its version, and the ladder that upgrades old files.

A ``.tokproj`` file is an SQLite database stamped with :data:`APPLICATION_ID` (so ``file(1)``
and this module can tell it from any other SQLite file) and ``PRAGMA user_version`` = the number
of migrations applied. ``MIGRATIONS[i]`` upgrades a file from version ``i`` to ``i + 1``; version
0 is "empty", so ``MIGRATIONS[0]`` creates the first schema.

Rules that keep old files openable forever:

* a released migration is never edited, only new ones appended (a test compares the schema a
  version-1 fixture file carries with what ``MIGRATIONS[0]`` produces);
* :func:`upgrade` runs every statement one at a time inside the caller's single transaction —
  never ``executescript``, which commits first — so a failing upgrade leaves the file untouched.

What this module leaves out: deciding whether a file may be opened at all (``opening.py``).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from typing import Callable, Sequence

#: "TOKW" — written to the header at offset 68; a file without it is not ours.
APPLICATION_ID = 0x544F4B57

#: Tables every project of the current version has (checked before trusting a file).
REQUIRED_TABLES = frozenset(
    {"corpora", "runs", "run_corpora", "merges", "vocab", "refs", "ref_vocab",
     "ref_merges", "texts", "run_steps", "settings",
     "pruning_checkpoints"}
)

# REFERENCES clauses document the relations; foreign-key enforcement stays off (a lookup per
# inserted merge), and deleting a run deletes its rows explicitly.

Step = str | Callable[[sqlite3.Connection], None]

_V1: tuple[Step, ...] = (
    """CREATE TABLE corpora (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime REAL NOT NULL,
        fingerprint TEXT NOT NULL,
        reader_options TEXT NOT NULL DEFAULT '{}',
        added REAL NOT NULL
    )""",
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        settings TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL CHECK (status IN
            ('running', 'finished', 'cancelled', 'interrupted', 'failed')),
        error TEXT,
        started REAL NOT NULL,
        updated REAL NOT NULL,
        ended REAL,
        timings TEXT NOT NULL DEFAULT '{}',
        owner_pid INTEGER,
        owner_host TEXT
    )""",
    """CREATE TABLE run_corpora (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        corpus_id INTEGER NOT NULL REFERENCES corpora(id),
        PRIMARY KEY (run_id, corpus_id)
    ) WITHOUT ROWID""",
    # One row per training step (rank = step - 1): the merge and the metrics after it. Merges
    # and step metrics share a row because a BPE step *is* a merge, and one INSERT per step
    # instead of two keeps the store's share of training time small. ``length`` is the merged
    # piece's length in bytes, here so filtering and sorting by it need no join. There are
    # deliberately no secondary indexes: each cost ~1 µs per merge written during training
    # (~1 % of training time) and saved little on a 100k-row sort (which takes < 0.1 s);
    # ``extra`` is a JSON object for metrics added later without a migration.
    """CREATE TABLE merges (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        rank INTEGER NOT NULL,
        left_id INTEGER NOT NULL,
        right_id INTEGER NOT NULL,
        new_id INTEGER NOT NULL,
        frequency INTEGER NOT NULL,
        length INTEGER NOT NULL,
        vocab_size INTEGER NOT NULL,
        token_count INTEGER NOT NULL,
        extra TEXT,
        PRIMARY KEY (run_id, rank)
    ) WITHOUT ROWID""",
    """CREATE TABLE vocab (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        id INTEGER NOT NULL,
        piece BLOB NOT NULL,
        kind TEXT NOT NULL,  -- 'special' | 'base' | 'merge', checked in Python: a CHECK
                             -- here doubled the cost of each insert during training
        PRIMARY KEY (run_id, id)
    ) WITHOUT ROWID""",
    """CREATE TABLE refs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        format TEXT NOT NULL,
        source_path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        settings TEXT NOT NULL DEFAULT '{}',
        added REAL NOT NULL
    )""",
    """CREATE TABLE ref_vocab (
        ref_id INTEGER NOT NULL REFERENCES refs(id),
        id INTEGER NOT NULL,
        piece BLOB NOT NULL,
        PRIMARY KEY (ref_id, id)
    ) WITHOUT ROWID""",
    """CREATE TABLE ref_merges (
        ref_id INTEGER NOT NULL REFERENCES refs(id),
        rank INTEGER NOT NULL,
        left_id INTEGER NOT NULL,
        right_id INTEGER NOT NULL,
        new_id INTEGER NOT NULL,
        PRIMARY KEY (ref_id, rank)
    ) WITHOUT ROWID""",
    """CREATE TABLE texts (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        saved REAL NOT NULL
    )""",
)

#: The name the Inspect tab's session had in the ``texts`` table before version 2 gave it a
#: setting of its own (``settings`` key :data:`INSPECT_SESSION_KEY`).
V1_INSPECT_SESSION_NAME = ".workbench inspect session"
INSPECT_SESSION_KEY = "inspect_session"


def _move_inspect_session(conn: sqlite3.Connection) -> None:
    """Move a v1 Inspect session out of ``texts`` into ``settings`` (read once, then deleted).

    The text was JSON written by the window; one that does not parse is moved as the JSON string
    it is, so nothing the user had is dropped — the reader treats a non-object as no session.
    """
    row = conn.execute("SELECT text FROM texts WHERE name = ?", (V1_INSPECT_SESSION_NAME,)).fetchone()
    if row is None:
        return
    try:
        value = json.dumps(json.loads(row[0]), ensure_ascii=False)
    except ValueError:
        value = json.dumps(row[0], ensure_ascii=False)
    conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", (INSPECT_SESSION_KEY, value))
    conn.execute("DELETE FROM texts WHERE name = ?", (V1_INSPECT_SESSION_NAME,))


_V2: tuple[Step, ...] = (
    # ---- per-step values and project settings (run_steps, settings) -------------------------------
    # One row per training step of a model whose steps are not merges (Unigram: EM rounds, pruning
    # steps, the final cut) or whose merges carry a float the merges row lacks (WordPiece's
    # likelihood score). ``phase`` is 'em' | 'prune' | 'final' | 'merge'; ``value`` is the model's
    # number for the step (log-likelihood, score), NULL when the step has none (a pruning step).
    # BPE writes no rows here: its merges row holds all it has, and a second INSERT per merge
    # would be paid during training. No CHECK on phase, as for vocab.kind (checked in Python).
    """CREATE TABLE run_steps (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        phase TEXT NOT NULL,
        vocab_size INTEGER NOT NULL,
        token_count INTEGER NOT NULL,
        value REAL,
        PRIMARY KEY (run_id, step)
    ) WITHOUT ROWID""",
    # Project-wide settings (the Inspect session, …): a JSON value per key.
    """CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    _move_inspect_session,
    # ---- end of per-step values and project settings ----------------------------------------------
    # ---- Unigram pruning checkpoints (the vocabulary-size sweep, issue #12) ----------------------
    # One row per checkpoint of a Unigram run: the vocabulary after a pruning round, kept while it
    # is at most 4 × the target size. ``pieces`` and ``scores`` are JSON arrays of equal length
    # (pieces as text, scores as log probabilities, exact in JSON's shortest float form); written
    # once, at the end of the run, by ``ProjectStore.record_final_model``.
    """CREATE TABLE pruning_checkpoints (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        pieces TEXT NOT NULL,
        scores TEXT NOT NULL,
        PRIMARY KEY (run_id, step)
    ) WITHOUT ROWID""",
    # ---- end of the pruning checkpoints block ----------------------------------------------------
)

#: ``MIGRATIONS[i]`` takes a file from version ``i`` to ``i + 1``. Append only.
MIGRATIONS: list[Sequence[Step]] = [_V1, _V2]


def current_version() -> int:
    """The schema version this build writes (looked up at call time so tests can extend it)."""
    return len(MIGRATIONS)


def upgrade(conn: sqlite3.Connection) -> tuple[int, int]:
    """Apply the missing migrations; the caller holds one open write transaction.

    Returns ``(old_version, new_version)``. Raises ``sqlite3.Error`` from a failing step; the
    caller rolls back, which leaves the file exactly as it was.
    """
    assert conn.in_transaction, "upgrade() must run inside the caller's transaction"
    old = conn.execute("PRAGMA user_version").fetchone()[0]
    target = current_version()
    if old == 0:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    for version in range(old, target):
        for step in MIGRATIONS[version]:
            if callable(step):
                step(conn)
            else:
                conn.execute(step)
    if target != old:
        # PRAGMA does not take bound parameters; ``target`` is an int we computed.
        conn.execute(f"PRAGMA user_version = {int(target)}")
    return old, target


# ---- SQL stored in a file is never trusted ---------------------------------------------------------
# A project is a document people send each other, and SQLite runs code a file carries: triggers
# fire on our writes, views run when named. Our schema defines neither (nor any index but the
# automatic ones of PRIMARY KEY and UNIQUE), so any such object came from elsewhere.


def distrust_stored_code(conn: sqlite3.Connection) -> None:
    """Make a statement that would fire a trigger or read through a view fail ("not authorized").

    SQLite names the trigger or view responsible for each access it authorizes — and names a
    ``WITH`` clause's table the same way, so the check is against the triggers and views the file
    holds when the connection opens. Checked when a statement is prepared, not per row. A
    writable open removes such objects (:func:`unknown_objects`); this guards read-only opens.
    Left out: an object another program adds while the connection is open.
    """
    try:
        stored = {name.lower() for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('trigger', 'view')")}
    except sqlite3.DatabaseError:
        stored = set()  # not readable: its schema cannot run either, opening reports the damage

    def authorize(_action: int, _arg1: str | None, _arg2: str | None, _db: str | None,
                  source: str | None) -> int:
        return sqlite3.SQLITE_DENY if source is not None and source.lower() in stored else sqlite3.SQLITE_OK

    conn.set_authorizer(authorize)


def expected_objects(version: int) -> dict[str, tuple[str, str | None]]:
    """``{name: (type, sql)}`` of every schema object a file of ``version`` has, as the migrations
    make it (built in memory: the stored SQL text is exactly what the migrations wrote). Built
    once per version and process (every open checks a file against it: ~5 ms each time before)."""
    return dict(_expected_objects(version))


@functools.cache
def _expected_objects(version: int) -> dict[str, tuple[str, str | None]]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("BEGIN")
        for steps in MIGRATIONS[:version]:
            for step in steps:
                if callable(step):
                    step(conn)
                else:
                    conn.execute(step)
        return {name: (kind, sql) for kind, name, sql in
                conn.execute("SELECT type, name, sql FROM sqlite_master")}
    finally:
        conn.close()


def unknown_objects(conn: sqlite3.Connection, version: int) -> tuple[list[tuple[str, str]], list[str]]:
    """``(foreign, altered)``: the triggers, views and indexes (type, name) this schema does not
    define, and the names of our tables whose stored definition is not ours.

    Extra tables are left alone: nothing reads them and a table runs no code.
    """
    expected = expected_objects(version)
    foreign: list[tuple[str, str]] = []
    altered: list[str] = []
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master"):
        want = expected.get(name)
        if kind == "table":
            if want is not None and want != (kind, sql):
                altered.append(name)
        elif not (kind == "index" and sql is None) and want != (kind, sql):
            foreign.append((kind, name))
    return foreign, altered


def quote_name(name: str) -> str:
    """An SQL identifier for a name read from a file (identifiers cannot be bound parameters)."""
    return '"' + name.replace('"', '""') + '"'


def describe_objects(objects: Sequence[tuple[str, str]]) -> str:
    """"2 triggers and 1 view (wipe, v_runs)" — for the one line that tells the user."""
    counts: dict[str, int] = {}
    for kind, _name in objects:
        counts[kind] = counts.get(kind, 0) + 1
    parts = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items()]
    names = ", ".join(repr(name)[:40] for _kind, name in objects[:5]) + (", …" if len(objects) > 5 else "")
    return f"{' and '.join(parts)} ({names})"
