"""ProjectStore: one ``.tokproj`` SQLite file, the single source of truth of a project.

Lifecycle (see sqlite.org, "SQLite as an application file format" and "WAL"):

* open: the file is checked by :mod:`workbench.store.opening` before any write-capable
  connection exists; a writer then upgrades the schema in one ``BEGIN IMMEDIATE`` transaction,
  switches to WAL (readers are never blocked while the trainer commits) and marks runs whose
  owning process died as ``interrupted``. A read-only open never writes: it reports such runs as
  interrupted instead.
* every change is one ``BEGIN IMMEDIATE`` transaction (:meth:`ProjectStore._write`).
* close: a writer checkpoints the WAL; the last read-write connection to close removes ``-wal`` and
  ``-shm``, so the file at rest is one self-contained file that can be copied or mailed. (It stays
  in WAL mode: leaving WAL while another process reads the file leaves that reader blind to new
  commits.)
* Save As goes through the SQLite backup API, never a file copy of an open database.

What it leaves out: training, encoding, file formats — it stores and returns plain data.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Sequence

from workbench.core.atomic import replacing
from workbench.core.model import Tokenizer
from workbench.core.unigram import PruningCheckpoint
from workbench.errors import DamagedValue, WorkbenchError
from workbench.store import opening, schema, validate, wal
from workbench.store.rows import (
    RUN_STATUSES,
    CorpusRef,
    MergeRow,
    ReferenceInfo,
    RunInfo,
    RunStepRow,
    StepRow,
)
from workbench.store.writer import RunWriter

_KINDS = validate.KINDS
_INTERRUPTED_ERROR = "The training process stopped before finishing (it was killed or crashed)."
# One-line notes for the user (the CLI prints them on stderr, the window may show them).
NOTES = logging.getLogger("workbench.notes")


#: A run's settings text as a listing reads it (:meth:`ProjectStore.runs`): without the scores.
_SETTINGS_WITHOUT_SCORES = "json_remove(r.settings, '$.scores'), "
_SETTINGS_WITHOUT_SCORES_IF_VALID = ("CASE WHEN json_valid(r.settings) THEN json_remove(r.settings, '$.scores') "
                                     "ELSE r.settings END, ")


def _json(value: Any) -> str:
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


# Files this process holds SQLite connections on (real path → number of open stores). Reading
# such a file with plain open()/close() would drop every POSIX lock this process holds on it
# (sqlite.org, "How To Corrupt": 2.2): another process closing the file would then think it was
# the last one and delete -wal/-shm under our open connections.
_LIVE: dict[str, int] = {}
_LIVE_LOCK = threading.Lock()


def _live_key(path: Path) -> str:
    return os.path.realpath(path)


def open_project_paths() -> list[str]:
    """Real paths of the project files this process has open (nothing may be written over them)."""
    with _LIVE_LOCK:
        return list(_LIVE)


class ProjectStore:
    """A project file opened for reading and (unless read-only) writing. Not thread-safe."""

    def __init__(self, path: Path, conn: sqlite3.Connection, *, read_only: bool, note: str):
        self.path = path
        self.read_only = read_only
        self.note = note  # a sentence for the user ("" when nothing is worth saying)
        self._conn = conn
        self._owned_runs: set[int] = set()
        self._writers: weakref.WeakSet[RunWriter] = weakref.WeakSet()
        self._closed = False
        self._stamped = False  # whether this session gave the file its WAL marker (wal.py)
        with _LIVE_LOCK:
            key = _live_key(path)
            _LIVE[key] = _LIVE.get(key, 0) + 1

    def limit_queries(self, seconds: float) -> None:
        """Stop any statement on this store's connection that runs longer than ``seconds``
        (the window's reads: a query over crafted or huge data must not freeze it)."""
        if isinstance(self._conn, opening.Connection):
            self._conn.limit_queries(seconds)

    def stop_queries_when(self, should_stop: Callable[[], bool]) -> None:
        """Stop any statement on this store's connection as soon as ``should_stop()`` (a
        worker's read connection: its job was cancelled or ran out of time)."""
        if isinstance(self._conn, opening.Connection):
            self._conn.stop_when(should_stop)

    @property
    def connection(self) -> sqlite3.Connection:
        """The SQLite connection, for views that page through the tables with their own SQL.

        Read through it only: every write goes through this class, in one transaction each.
        """
        return self._conn

    # ---- opening and closing -----------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, *, create: bool = False,
             readonly: bool = False) -> ProjectStore:
        """Open (or with ``create=True`` create) a project; bad files raise WorkbenchError."""
        path = Path(path).expanduser()
        if not path.exists():
            if not create or readonly:
                raise WorkbenchError(f"{path} does not exist; check the name or create a new project.")
            return cls._create(path)
        with _LIVE_LOCK:
            already_open = _LIVE.get(_live_key(path), 0) > 0
        recovered = ""
        wal_present = False
        if not already_open:  # checked when first opened; a raw read now would drop our locks
            opening.refuse_linked_side_files(path)
            header = opening.read_header(path)
            opening.check_identity(path, header.application_id, header.user_version)
            set_aside = opening.set_aside_foreign_wal(path, header)
            if set_aside:
                NOTES.warning(set_aside)
                if header.needs_checkpoint:  # what the file lacks was in that log: still truncated
                    opening.read_header(path)
            elif header.needs_checkpoint:
                # The file's own log, left half copied by a full disk: the file is unreadable
                # without finishing that copy, the one checkpoint a read-only open makes.
                recovered = opening.recover_wal(path)
                NOTES.warning(recovered)
            wal_present = _wal_size(path) > 0
        try:
            ro = opening.connect_readonly(path)
        except sqlite3.Error as e:
            raise opening.open_error(path, e) from None
        try:
            version = opening.probe(path, ro)
        except BaseException:
            ro.close()
            raise
        problem = "you asked to open it read-only" if readonly else opening.write_problem(path)
        if problem is None:
            ro.close()
            try:
                store = cls._open_writable(path)
                store.note = recovered or store.note
                return store
            except _ReadOnlyFallback as e:
                problem = e.reason
                ro = opening.connect_readonly(path)
        if version < schema.current_version() and readonly and opening.write_problem(path) is None:
            # Read-only by choice, but the file can be written: upgrade it once, then read it.
            ro.close()
            cls._open_writable(path).close()
            return cls.open(path, readonly=True)
        if version < schema.current_version():
            ro.close()
            raise WorkbenchError(
                f"{path} uses an older project format and must be upgraded, which a read-only "
                "file cannot be; copy it somewhere writable and open the copy.")
        note = recovered or (f"{path.name} is open read-only because {problem}; changes cannot be saved "
                             "(keep a copy in a writable folder to change it).")
        if readonly and opening.write_problem(path) is None and not wal_present:
            # Read-only by choice on a writable file: a read-write connection that refuses writes.
            # A mode=ro connection that finds no -shm file reads as if nobody else could write, and
            # would never see the commits of a training process that starts later. With a -wal
            # already there the mode=ro connection stays: a read-write one would checkpoint that
            # log into the file when it closes, and a read-only command never writes the file.
            ro.close()
            ro = opening.connect(path, "rw")
            ro.execute("PRAGMA query_only = ON")
            ro.execute("SELECT count(*) FROM sqlite_master").fetchone()  # join the WAL now
        # Triggers, views or indexes the file carries stay inert here (the connection refuses to
        # run them, and reads fire no trigger); the first writable open removes them and says so.
        return cls(path, ro, read_only=True, note=note)

    @classmethod
    def _create(cls, path: Path) -> ProjectStore:
        if not path.parent.is_dir():
            raise WorkbenchError(f"Cannot create {path}: the folder {path.parent} does not exist.")
        try:
            conn = opening.connect(path, "rwc")
            try:
                conn.execute("BEGIN IMMEDIATE")
                schema.upgrade(conn)
                conn.execute("COMMIT")
                conn.execute("PRAGMA journal_mode=WAL")
            except BaseException:
                conn.close()
                for suffix in ("", *opening.SIDE_FILES):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
                raise
        except sqlite3.Error as e:
            raise WorkbenchError(f"Cannot create {path} ({e}); choose a writable folder.") from None
        return cls._configure(path, conn)

    @classmethod
    def _open_writable(cls, path: Path) -> ProjectStore:
        try:
            conn = opening.connect(path, "rw")
        except sqlite3.Error as e:
            if opening.is_readonly_error(e):
                raise _ReadOnlyFallback("the system refused to write it") from None
            raise opening.open_error(path, e) from None
        try:
            # Upgrade before switching to WAL: if a migration fails, the rollback journal
            # restores the file and not even the journal-mode bytes have changed.
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                opening.check_identity(path, schema.APPLICATION_ID, version)  # re-check under lock
                # Code stored in the file goes before anything is written: a trigger would fire.
                foreign, altered = schema.unknown_objects(conn, version)
                opening.refuse_altered(path, altered)
                for kind, name in foreign:
                    conn.execute(f"DROP {kind.upper()} IF EXISTS {schema.quote_name(name)}")
                upgraded = None
                if version < schema.current_version():
                    upgraded = schema.upgrade(conn)
                    opening.check_tables(path, {r[0] for r in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'")})
                conn.execute("COMMIT")
                if foreign:
                    NOTES.warning("%s carried %s that this app does not define, which could run SQL stored "
                                  "in the file; removed them", path.name, schema.describe_objects(foreign))
                if upgraded is not None and upgraded[0] > 0:
                    # Said once, when it happens: an older workbench refuses the file from now on.
                    NOTES.warning("%s was upgraded from project format %d to %d (older versions of the "
                                  "workbench cannot open it any more)", path.name, *upgraded)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.Error as e:
            conn.close()
            if opening.is_readonly_error(e):
                raise _ReadOnlyFallback("the system refused to write it") from None
            raise opening.open_error(path, e) from None
        except BaseException:
            conn.close()
            raise
        store = cls._configure(path, conn)
        if mode.lower() != "wal":
            store.note = f"{path.name} could not switch to WAL mode; readers may wait for writes."
        store._mark_dead_runs_interrupted()
        return store

    @classmethod
    def _configure(cls, path: Path, conn: sqlite3.Connection) -> ProjectStore:
        # NORMAL is durable against process crashes in WAL mode (only power loss can drop the
        # last commits, and never corrupts); FULL would fsync every 100 ms batch.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-16000")  # 16 MB: a big batch must not spill pages
        return cls(path, conn, read_only=False, note="")

    def close(self) -> None:
        """Flush writers, mark this session's unfinished runs interrupted, leave one file behind."""
        if self._closed:
            return
        try:
            for w in list(self._writers):
                try:
                    w.close()
                except Exception:  # noqa: BLE001 - its run is marked interrupted just below
                    pass
            if not self.read_only:
                if self._owned_runs:
                    self._interrupt(sorted(self._owned_runs))
                self._conn.execute("PRAGMA busy_timeout = 200")
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                except sqlite3.OperationalError:
                    pass
                # The file stays in WAL mode: switching back to DELETE succeeds even while another
                # process has the file open, and that reader then stops seeing new commits. The last
                # read-write connection to close removes -wal and -shm, so at rest it is one file.
        finally:
            self._closed = True
            if self.read_only:
                try:  # query_only also stops the last closer's clean-up of -wal/-shm
                    self._conn.execute("PRAGMA query_only = OFF")
                except sqlite3.Error:
                    pass
            self._conn.close()
            with _LIVE_LOCK:
                key = _live_key(self.path)
                _LIVE[key] -= 1
                if _LIVE[key] <= 0:
                    del _LIVE[key]

    def __enter__(self) -> ProjectStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- transactions --------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; user-facing SQLite failures become WorkbenchError."""
        if self.read_only:
            raise WorkbenchError(f"{self.path} is open read-only; keep your changes in a copy "
                                 "in a writable folder.")
        if self._closed:
            raise WorkbenchError(f"{self.path} is closed; open the project again.")
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                if self._stamped:
                    conn.execute(wal.BUMP_LINEAGE)
                else:
                    wal.stamp_lineage(conn)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            if not self._stamped:
                self._stamped = True
                wal.settle_lineage(conn)
        except sqlite3.DatabaseError as e:
            explained = self._explain(e)
            if explained is e:
                raise
            raise explained from e

    def _explain(self, e: sqlite3.DatabaseError) -> Exception:
        text = str(e).lower()
        if "locked" in text or "busy" in text:
            return WorkbenchError(f"{self.path} is busy in another program; try again in a moment.")
        if "full" in text:
            return WorkbenchError(f"Cannot save to {self.path}: the disk is full; free some space.")
        if opening.is_readonly_error(e):
            return WorkbenchError(f"Cannot save to {self.path}: it has become read-only; "
                                  "keep a copy in a writable folder.")
        if "i/o" in text:
            return WorkbenchError(f"Cannot save to {self.path}: a disk error occurred ({e}).")
        if "malformed" in text or "not a database" in text or "corrupt" in text:
            return WorkbenchError(f"Cannot save to {self.path}: the file is damaged ({e}); "
                                  "restore it from a backup.")
        return e

    def _one(self, sql: str, params: Sequence = ()) -> Any:
        return self._conn.execute(sql, params).fetchone()

    # ---- corpora -------------------------------------------------------------------------------
    def add_corpus(self, path: str | os.PathLike, *, size: int, mtime: float, fingerprint: str,
                   reader_options: dict) -> int:
        with self._write() as c:
            return _inserted_id(c.execute(
                "INSERT INTO corpora (path, size, mtime, fingerprint, reader_options, added) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (str(path), int(size), float(mtime), fingerprint, _json(reader_options),
                 time.time())))

    def data_version(self) -> int:
        """A number that changes whenever another connection commits to the file (SQLite's
        ``PRAGMA data_version``), so a reader can keep what it decoded until then; this
        connection's own writes leave it as it is."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def corpus_count(self) -> int:
        """How many corpus rows there are (without reading them)."""
        return int(self._conn.execute("SELECT count(*) FROM corpora").fetchone()[0])

    def corpora(self, ids: Collection[int] | None = None) -> list[CorpusRef]:
        """Every corpus row, or only those of ``ids`` (a run's files: a project may list 100,000)."""
        where = "" if ids is None else " WHERE id IN (SELECT value FROM json_each(?))"
        args = () if ids is None else (json.dumps(sorted(int(i) for i in ids)),)
        rows = self._conn.execute("SELECT id, path, size, mtime, fingerprint, reader_options, "
                                  f"added FROM corpora{where} ORDER BY id", args).fetchall()
        out = []
        for row in rows:
            try:
                out.append(validate.corpus_ref(row))
            except WorkbenchError as exc:  # one damaged row must not hide the other files
                NOTES.warning("left out a corpus file: %s", exc)
        return out

    def remove_corpus(self, corpus_id: int) -> None:
        with self._write() as c:
            if self._one("SELECT 1 FROM run_corpora WHERE corpus_id = ?", (corpus_id,)):
                raise WorkbenchError("This corpus was used by a training run; delete the run first.")
            c.execute("DELETE FROM corpora WHERE id = ?", (corpus_id,))

    # ---- runs ----------------------------------------------------------------------------------
    def create_run(self, name: str, settings: dict, corpus_ids: Sequence[int],
                   vocab: Sequence[bytes], kinds: Sequence[str]) -> int:
        """Start a run (status ``running``, owned by this process) with its initial vocabulary."""
        if len(vocab) != len(kinds):
            raise ValueError(f"vocab has {len(vocab)} pieces but kinds has {len(kinds)}")
        if bad := set(kinds) - set(_KINDS):
            raise ValueError(f"unknown token kinds {sorted(bad)}; use {_KINDS}")
        self.check_integrity()
        now = time.time()
        with self._write() as c:
            run_id = _inserted_id(c.execute(
                "INSERT INTO runs (name, settings, status, started, updated, owner_pid, "
                "owner_host) VALUES (?, ?, 'running', ?, ?, ?, ?)",
                (name, _json(settings), now, now, os.getpid(), socket.gethostname())))
            wanted = list(dict.fromkeys(int(cid) for cid in corpus_ids))
            known = {r[0] for r in c.execute("SELECT id FROM corpora")}
            if missing := [cid for cid in wanted if cid not in known]:
                raise WorkbenchError(f"Corpus {missing[0]} of run {name!r} is not in {self.path}; "
                                     "add the corpus to the project first.")
            c.executemany("INSERT INTO run_corpora (run_id, corpus_id) VALUES (?, ?)",
                          [(run_id, cid) for cid in wanted])
            c.executemany("INSERT INTO vocab (run_id, id, piece, kind) VALUES (?, ?, ?, ?)",
                          [(run_id, i, bytes(p), k) for i, (p, k) in enumerate(zip(vocab, kinds))])
        self._owned_runs.add(run_id)
        return run_id

    def run_writer(self, run_id: int, *, interval: float = 0.1,
                   background: bool = True, defer: float = 0.0) -> RunWriter:
        """A batched writer for a running run's merges (``background``, ``defer``: see :class:`RunWriter`)."""
        self._require_run(run_id)
        if self.read_only:
            raise WorkbenchError(f"{self.path} is open read-only; training needs a writable project.")
        writer = RunWriter(self.path, run_id, transaction=self._write, explain=self._explain,
                           on_close=self._writers.discard, interval=interval, background=background,
                           defer=defer)
        self._writers.add(writer)
        return writer

    def finish_run(self, run_id: int, status: str, *, error: str | None = None,
                   timings: dict | None = None) -> None:
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"finish_run status must be one of {RUN_STATUSES[1:]}, not {status!r}")
        self._require_run(run_id)
        for w in list(self._writers):
            if w.run_id == run_id:  # the run ends: its writer's last batches first
                try:
                    w.close()
                except Exception as exc:  # noqa: BLE001 - the run's status must still be set
                    if status != "failed":
                        status, error = "failed", f"could not write the last merges: {exc}"
        now = time.time()
        with self._write() as c:
            c.execute("UPDATE runs SET status = ?, error = ?, ended = ?, updated = ?, "
                      "timings = ? WHERE id = ?",
                      (status, error, now, now, _json(timings), run_id))
        self._owned_runs.discard(run_id)

    def record_final_model(self, run_id: int, settings: dict, *, vocab: Sequence[bytes] | None = None,
                           kinds: Sequence[str] | None = None,
                           checkpoints: Sequence[PruningCheckpoint] = ()) -> None:
        """At the end of a run: merge ``settings`` into the run's settings and, for a model whose
        vocabulary is not built merge by merge (Unigram), replace its vocabulary rows and keep its
        pruning checkpoints — one transaction, so a reader sees the run before or after, never half."""
        self._require_run(run_id)
        with self._write() as c:
            row = c.execute("SELECT settings, name FROM runs WHERE id = ?", (run_id,)).fetchone()
            merged = {**validate.settings(row[0], validate.owner_label("run", run_id, row[1])), **settings}
            c.execute("UPDATE runs SET settings = ?, updated = ? WHERE id = ?", (_json(merged), time.time(), run_id))
            if vocab is not None:
                kinds = kinds or ["base"] * len(vocab)
                c.execute("DELETE FROM vocab WHERE run_id = ?", (run_id,))
                c.executemany("INSERT INTO vocab (run_id, id, piece, kind) VALUES (?, ?, ?, ?)",
                              [(run_id, i, bytes(p), k) for i, (p, k) in enumerate(zip(vocab, kinds))])
            if checkpoints:
                c.execute("DELETE FROM pruning_checkpoints WHERE run_id = ?", (run_id,))
                c.executemany("INSERT INTO pruning_checkpoints (run_id, step, pieces, scores) VALUES (?, ?, ?, ?)",
                              [(run_id, cp.step, json.dumps(cp.pieces, ensure_ascii=False), json.dumps(cp.scores))
                               for cp in checkpoints])

    def pruning_checkpoints(self, run_id: int) -> list[PruningCheckpoint]:
        """A Unigram run's pruning checkpoints, largest vocabulary first (empty: none were kept —
        another model, a run from before they were stored, or one that never pruned)."""
        owner = self._run_owner(run_id, required=True)
        rows = self._conn.execute("SELECT step, pieces, scores FROM pruning_checkpoints WHERE run_id = ? "
                                  "ORDER BY step", (run_id,)).fetchall()
        return [validate.checkpoint(step, pieces, scores, owner) for step, pieces, scores in rows]

    def rename_run(self, run_id: int, name: str) -> None:
        self._require_run(run_id)
        with self._write() as c:
            c.execute("UPDATE runs SET name = ? WHERE id = ?", (name, run_id))

    def delete_run(self, run_id: int) -> None:
        """Delete a run and its merges, vocabulary and steps (explicitly, one transaction)."""
        self._require_run(run_id)
        row = self._conn.execute("SELECT status, owner_pid, owner_host, started FROM runs WHERE id = ?",
                                 (run_id,)).fetchone()
        if row[0] == "running" and run_id not in self._owned_runs and opening.owner_alive(row[1], row[2], row[3]):
            raise WorkbenchError(f"run {run_id} is still training: cancel it first, then delete it")
        for w in list(self._writers):
            if w.run_id == run_id:  # let its last batches land first, so none land after the delete
                try:
                    w.close()
                except Exception:  # noqa: BLE001 - those rows are being deleted anyway
                    pass
        with self._write() as c:
            for table in ("merges", "vocab", "run_corpora", "run_steps", "pruning_checkpoints"):
                c.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            c.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        self._owned_runs.discard(run_id)

    _RUN_SQL = (
        "SELECT r.id, r.name, r.status, r.settings, "
        # Ids run 0..n-1 and ranks 0..n-1 (the writer appends them in order): max + 1 is the count,
        # read from the primary key in O(log n) where count(*) walks every row (a second for each of
        # 10M merges, and the window lists runs often). With gaps in the ids it is still the number
        # of rows an embedding matrix needs. A running model that stores its vocabulary at the end
        # (Unigram) has its size in its steps.
        "CASE WHEN r.status = 'running' THEN max((SELECT coalesce(max(v.id) + 1, 0) FROM vocab v "
        "WHERE v.run_id = r.id), coalesce((SELECT s.vocab_size FROM run_steps s WHERE s.run_id = r.id "
        "ORDER BY s.step DESC LIMIT 1), 0)) "
        "ELSE (SELECT coalesce(max(v.id) + 1, 0) FROM vocab v WHERE v.run_id = r.id) END, "
        "(SELECT coalesce(max(m.rank) + 1, 0) FROM merges m WHERE m.run_id = r.id), "
        "r.started, r.ended, r.updated, r.timings, r.error, r.owner_pid, r.owner_host, "
        "(SELECT group_concat(corpus_id) FROM run_corpora rc WHERE rc.run_id = r.id) "
        "FROM runs r")

    def runs(self, *, scores: bool = True) -> list[RunInfo]:
        """Every run; one whose row is damaged is listed with ``damage`` saying why.

        ``scores=False`` is what a listing needs: each run's settings without the per-piece scores
        of a Unigram run, which SQLite drops from the text before Python parses it (~25 ms instead
        of ~0.2 s for 200,000 scores, on the window's thread each time a project opens). Those
        scores are then checked where they are read (:meth:`usable_run`, the piece table); a
        settings text SQLite cannot parse is read in full, so its damage is named as usual.
        """
        sql = self._RUN_SQL + " ORDER BY r.id"
        if not scores:
            try:
                rows = self._conn.execute(sql.replace("r.settings, ", _SETTINGS_WITHOUT_SCORES, 1)).fetchall()
            except sqlite3.OperationalError as exc:
                if "json" not in str(exc).lower():
                    raise
                # a text that is not JSON: that row's text as it is (one more parse of each row)
                rows = self._conn.execute(sql.replace("r.settings, ", _SETTINGS_WITHOUT_SCORES_IF_VALID, 1)).fetchall()
            return [validate.run_info(r, opening.owner_alive) for r in rows]
        return [validate.run_info(r, opening.owner_alive) for r in self._conn.execute(sql)]

    def run(self, run_id: int) -> RunInfo:
        """The run (``damage`` set when its row is damaged: it is still named and listed)."""
        return validate.run_info(self._run_row(run_id), opening.owner_alive)

    def _run_row(self, run_id: int) -> tuple:
        row = self._one(self._RUN_SQL + " WHERE r.id = ?", (run_id,))
        if row is None:
            raise WorkbenchError(f"There is no run {run_id} in {self.path}; "
                                 "list the runs to see their numbers.")
        return row

    def usable_run(self, run_id: int) -> RunInfo:
        """The run, or DamagedValue naming the first damaged column of its row."""
        return validate.decode_run(self._run_row(run_id), opening.owner_alive)

    def run_problem(self, run_id: int) -> WorkbenchError | None:
        """What makes a run unusable, or None: a damaged value in its row or in any of its rows of
        the other tables (one pass over each in SQLite; a window asks before it shows the run)."""
        try:
            info = self.usable_run(run_id)
        except WorkbenchError as exc:
            return exc
        return validate.tables_problem(self._conn, info)

    def source_problem(self, source: tuple[str, int]) -> WorkbenchError | None:
        """:meth:`run_problem` for ``("run", id)``, the same for an imported ``("ref", id)``."""
        kind, sid = source
        return self.run_problem(sid) if kind == "run" else validate.reference_problem(self._conn, sid)

    def _run_owner(self, run_id: int, *, required: bool = False) -> str:
        """How messages name the run (``required``: a missing run is an error, not "no rows")."""
        row = self._one("SELECT name FROM runs WHERE id = ?", (run_id,))
        if row is None and required:
            raise WorkbenchError(f"There is no run {run_id} in {self.path}; "
                                 "list the runs to see their numbers.")
        return validate.owner_label("run", run_id, row[0] if row else "")

    def latest_run_id(self) -> int | None:
        row = self._one("SELECT max(id) FROM runs")
        return row[0] if row else None

    def _require_run(self, run_id: int) -> None:
        if self._one("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is None:
            raise WorkbenchError(f"There is no run {run_id} in {self.path}; "
                                 "list the runs to see their numbers.")

    def _interrupt(self, run_ids: Sequence[int]) -> None:
        with self._write() as c:
            c.executemany("UPDATE runs SET status = 'interrupted', ended = coalesce(ended, updated),"
                          " error = coalesce(error, ?) WHERE id = ? AND status = 'running'",
                          [(_INTERRUPTED_ERROR, rid) for rid in run_ids])

    def _mark_dead_runs_interrupted(self) -> None:
        rows = self._conn.execute("SELECT id, owner_pid, owner_host, started FROM runs "
                                  "WHERE status = 'running'").fetchall()
        dead = [rid for rid, pid, host, started in rows if not opening.owner_alive(pid, host, started)]
        if dead:
            self._interrupt(dead)

    # ---- merges, vocabulary, steps ---------------------------------------------------------
    def merge_count(self, run_id: int) -> int:
        return self._one("SELECT count(*) FROM merges WHERE run_id = ?", (run_id,))[0]

    def merges(self, run_id: int, offset: int = 0, limit: int = 200) -> list[MergeRow]:
        """One page of merges in rank order, with their pieces.

        The page is chosen on ``merges`` alone (its primary key walks rank order) and only its rows
        are joined to ``vocab``, so a page deep in a long run costs an index walk, not a join per
        skipped row. Filtering and sorting are the browsers' (:mod:`workbench.store.browse`).
        """
        sql = ("SELECT p.rank, p.left_id, p.right_id, p.new_id, p.frequency, lv.piece, rv.piece, nv.piece "
               "FROM (SELECT rank, left_id, right_id, new_id, frequency FROM merges WHERE run_id = ? "
               "      ORDER BY rank LIMIT ? OFFSET ?) p "
               "LEFT JOIN vocab nv ON nv.run_id = ? AND nv.id = p.new_id "
               "LEFT JOIN vocab lv ON lv.run_id = ? AND lv.id = p.left_id "
               "LEFT JOIN vocab rv ON rv.run_id = ? AND rv.id = p.right_id "
               "ORDER BY p.rank")
        params = (run_id, max(0, int(limit)), max(0, int(offset)), run_id, run_id, run_id)
        owner = self._run_owner(run_id)
        return [validate.merge_row(row, owner) for row in self._conn.execute(sql, params).fetchall()]

    def vocab(self, run_id: int) -> list[tuple[int, bytes, str]]:
        owner = self._run_owner(run_id)
        return [(validate.whole(i, owner, "vocab.id"), validate.piece(p, owner), validate.raise_kind(k, owner))
                for i, p, k in self._conn.execute("SELECT id, piece, kind FROM vocab WHERE run_id = ? "
                                                  "ORDER BY id", (run_id,)).fetchall()]

    def steps(self, run_id: int, since_step: int = 0, *, every: int = 1, limit: int | None = None) -> list[StepRow]:
        """Steps after ``since_step``, so a live plot can poll for just the new ones.

        ``every`` > 1 keeps only the steps divisible by it (a plot of millions of merges needs a
        few thousand points), fetched by primary-key look-ups, so the cost follows the rows
        returned, not the run's length; ``limit`` caps the rows of one call.
        """
        if every <= 1:
            sql = ("SELECT rank + 1, vocab_size, token_count, frequency, extra FROM merges "
                   "WHERE run_id = ? AND rank >= ? ORDER BY rank LIMIT ?")
            params: tuple = (run_id, since_step, -1 if limit is None else limit)
        else:
            first = (since_step // every + 1) * every  # the next step divisible by ``every``
            sql = ("WITH RECURSIVE k(step) AS (SELECT ? UNION ALL SELECT step + ? FROM k LIMIT ?) "
                   "SELECT m.rank + 1, m.vocab_size, m.token_count, m.frequency, m.extra FROM k "
                   "JOIN merges m ON m.run_id = ? AND m.rank = k.step - 1 ORDER BY m.rank")
            last = self._one("SELECT max(rank) + 1 FROM merges WHERE run_id = ?", (run_id,))
            wanted = max(0, ((last[0] if last and last[0] else 0) - first) // every + 1)
            params = (first, every, wanted if limit is None else min(wanted, limit), run_id)
            if limit is None and last and last[0] and last[0] % every and last[0] > since_step:
                # ...and the last step, so the curve ends where the run ended
                sql = (f"SELECT * FROM ({sql}) UNION ALL SELECT rank + 1, vocab_size, token_count, frequency, "
                       "extra FROM merges WHERE run_id = ? AND rank = ?")
                params += (run_id, last[0] - 1)
        owner = self._run_owner(run_id)
        return [validate.step(row, owner) for row in self._conn.execute(sql, params).fetchall()]

    def run_steps(self, run_id: int, since_step: int = 0) -> list[RunStepRow]:
        """The run's ``run_steps`` rows after ``since_step`` (a live plot polls for the new ones).

        Unigram runs have a row per EM round, pruning step and the final cut; WordPiece runs
        trained on the likelihood score one per merge (its score); BPE runs none — their steps
        are the merges (:meth:`steps`).
        """
        owner = self._run_owner(run_id)
        rows = self._conn.execute(
            "SELECT step, phase, vocab_size, token_count, value FROM run_steps "
            "WHERE run_id = ? AND step > ? ORDER BY step", (run_id, since_step)).fetchall()
        return [RunStepRow(*validate.step_row(row, owner)) for row in rows]

    def load_tokenizer(self, run_id: int) -> Tokenizer:
        """Rebuild the run's Tokenizer from its settings, vocabulary and merges; every value is
        checked on the way (a damaged one raises DamagedValue naming the run and the column)."""
        info = self.usable_run(run_id)
        owner = validate.owner_label("run", run_id, info.name)
        rows = self.vocab(run_id)
        specials = {p.decode("utf-8", "replace"): i for i, p, kind in rows if kind == "special"}
        merges = self._conn.execute("SELECT left_id, right_id, new_id FROM merges "
                                    "WHERE run_id = ? ORDER BY rank", (run_id,)).fetchall()
        try:
            return validate.build_tokenizer(owner, info.name, info.settings, [(i, p) for i, p, _ in rows],
                                            merges, specials)
        except DamagedValue:
            if info.status != "failed":
                raise
            # A run that failed before its model was stored (Unigram keeps its pieces for the end)
            # is not damaged: say what happened to it.
            raise WorkbenchError(f"{owner} failed ({info.error or 'no reason stored'}): it has no tokenizer to "
                                 "use; train it again") from None

    # ---- reference tokenizers ---------------------------------------------------------------
    def add_reference(self, name: str, tokenizer: Tokenizer, *, fmt: str, source_path: str,
                      sha256: str) -> int:
        with self._write() as c:
            ref_id = _inserted_id(c.execute(
                "INSERT INTO refs (name, format, source_path, sha256, settings, added) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, fmt, str(source_path), sha256, _json(_model_settings(tokenizer)),
                 time.time())))
            c.executemany("INSERT INTO ref_vocab (ref_id, id, piece) VALUES (?, ?, ?)",
                          [(ref_id, i, bytes(p)) for i, p in enumerate(tokenizer.vocab)])
            c.executemany("INSERT INTO ref_merges (ref_id, rank, left_id, right_id, new_id) "
                          "VALUES (?, ?, ?, ?, ?)",
                          [(ref_id, r, a, b, n) for r, (a, b, n) in enumerate(tokenizer.merges)])
        return ref_id

    def references(self) -> list[ReferenceInfo]:
        rows = self._conn.execute(
            "SELECT r.id, r.name, r.format, r.source_path, r.sha256, "
            "(SELECT count(*) FROM ref_vocab v WHERE v.ref_id = r.id), "
            "(SELECT count(*) FROM ref_merges m WHERE m.ref_id = r.id), r.added "
            "FROM refs r ORDER BY r.id")
        return [validate.reference_info(row) for row in rows]

    def load_reference(self, ref_id: int) -> Tokenizer:
        row = self._one("SELECT name, settings FROM refs WHERE id = ?", (ref_id,))
        if row is None:
            raise WorkbenchError(f"There is no reference tokenizer {ref_id} in {self.path}.")
        owner = validate.owner_label("reference", ref_id, row[0])
        settings = validate.settings(row[1], owner)
        pieces = self._conn.execute("SELECT id, piece FROM ref_vocab WHERE ref_id = ? ORDER BY id",
                                    (ref_id,)).fetchall()
        merges = self._conn.execute("SELECT left_id, right_id, new_id FROM ref_merges "
                                    "WHERE ref_id = ? ORDER BY rank", (ref_id,)).fetchall()
        return validate.build_tokenizer(owner, validate.display_text(row[0]), settings, pieces, merges)

    def delete_reference(self, ref_id: int) -> None:
        with self._write() as c:
            c.execute("DELETE FROM ref_merges WHERE ref_id = ?", (ref_id,))
            c.execute("DELETE FROM ref_vocab WHERE ref_id = ?", (ref_id,))
            c.execute("DELETE FROM refs WHERE id = ?", (ref_id,))

    # ---- inspector texts ------------------------------------------------------------------------
    def save_text(self, name: str, text: str) -> int:
        """Save under ``name``, replacing a text of the same name; returns its id."""
        with self._write() as c:
            c.execute("INSERT INTO texts (name, text, saved) VALUES (?, ?, ?) ON CONFLICT(name) "
                      "DO UPDATE SET text = excluded.text, saved = excluded.saved",
                      (name, text, time.time()))
            return self._one("SELECT id FROM texts WHERE name = ?", (name,))[0]

    def texts(self) -> list[tuple[int, str, str]]:
        return [(i, validate.display_text(name), validate.display_text(text))
                for i, name, text in self._conn.execute("SELECT id, name, text FROM texts ORDER BY id")]

    def delete_text(self, text_id: int) -> None:
        with self._write() as c:
            c.execute("DELETE FROM texts WHERE id = ?", (text_id,))

    # ---- project settings ---------------------------------------------------------------------
    def setting(self, key: str, default: Any = None) -> Any:
        """The JSON value kept under ``key`` (``default`` when there is none)."""
        row = self._one("SELECT value FROM settings WHERE key = ?", (key,))
        return default if row is None else validate.json_value(row[0], f"project setting {key}", "value")

    def set_setting(self, key: str, value: Any) -> None:
        """Keep ``value`` (anything JSON can hold) under ``key``, in one transaction."""
        with self._write() as c:
            c.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) "
                      "DO UPDATE SET value = excluded.value",
                      (key, json.dumps(value, ensure_ascii=False)))

    # ---- whole-file operations --------------------------------------------------------------
    def check_integrity(self) -> None:
        """Refuse (WorkbenchError) a file SQLite's ``quick_check`` calls damaged; once per store.

        A run is many thousand writes: adding them to a malformed file would "succeed" while
        burying the damage, so a new run is only written into a file checked in this session.
        """
        if not getattr(self, "_checked", False):
            opening.check_integrity(self.path, self._conn)
            self._checked = True

    def integrity_check(self) -> str:
        """``"ok"`` or SQLite's description of the damage."""
        return "\n".join(r[0] for r in self._conn.execute("PRAGMA integrity_check"))

    def save_as(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write a consistent copy through the backup API; this store stays on its own file.

        The copy is built beside the target and renamed over it, so a failure never leaves half
        a project under the target name; a replaced file's stale ``-wal``/``-journal`` are
        removed, since SQLite would otherwise replay them into the new file.
        """
        dest = Path(path).expanduser()
        if dest.absolute() == self.path.absolute() or (dest.exists() and dest.samefile(self.path)):
            raise WorkbenchError(f"{dest} is this project itself; choose another name.")
        if dest.exists() and not force:
            raise WorkbenchError(f"{dest} already exists; choose another name or allow "
                                 "overwriting it.")
        for w in list(self._writers):
            w.flush()
        try:
            with replacing(dest, side_suffixes=opening.SIDE_FILES) as tmp:
                out = sqlite3.connect(str(tmp), isolation_level=None)
                try:
                    self._conn.backup(out)
                    out.execute("PRAGMA journal_mode=DELETE")
                finally:
                    out.close()
                for suffix in opening.SIDE_FILES:
                    Path(f"{dest}{suffix}").unlink(missing_ok=True)
        except (OSError, sqlite3.Error) as e:
            raise WorkbenchError(f"Cannot save a copy to {dest} ({e}); choose a writable "
                                 "folder with free space.") from None
        return dest


def check_project_for_training(path: str | os.PathLike) -> None:
    """Before a training run reads its corpus: can a run be written into ``path``?

    An existing project must open, pass SQLite's ``quick_check`` and be writable; a new one needs
    an existing, writable folder. Read-only throughout: if the answer is no, the file stays byte
    for byte as it was, and the user hears it before minutes of reading, not after.
    """
    path = Path(path).expanduser()
    if not path.exists():
        if not path.parent.is_dir():
            raise WorkbenchError(f"{path}: the folder {path.parent} does not exist: create it or choose another path")
        if not os.access(path.parent, os.W_OK):
            raise WorkbenchError(f"{path}: the folder {path.parent} is read-only: choose a writable folder")
        return
    with ProjectStore.open(path, readonly=True) as store:
        problem = opening.write_problem(path)
        if problem is not None:
            raise WorkbenchError(f"{path} cannot take a new run: {problem}; copy it to a writable folder "
                                 "or train into a new project")
        store.check_integrity()


def _wal_size(path: Path) -> int:
    try:
        return os.path.getsize(f"{path}-wal")
    except OSError:
        return 0


class _ReadOnlyFallback(Exception):
    """SQLite refused to write although the OS said it could: open read-only instead."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _model_settings(tokenizer: Tokenizer) -> dict:
    """What rebuilds a tokenizer besides its vocabulary and merges: its settings, plus the Unigram
    scores (one per id) that ``Tokenizer.settings()`` leaves out for brevity."""
    settings = tokenizer.settings()
    if tokenizer.scores:
        settings["scores"] = list(tokenizer.scores)
    return settings


def _inserted_id(cursor: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made (sqlite3 types it Optional; after an INSERT it is set)."""
    rowid = cursor.lastrowid
    assert rowid is not None
    return rowid
