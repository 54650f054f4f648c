"""SQL behind the merge and vocabulary browsers: filter, sort and page a run's (or a reference
tokenizer's) merges and vocabulary inside SQLite, over the store's read-only connection.

No Qt here (the table models in ``merge_model`` / ``vocab_model`` call it); kept beside them
because only they need it. The one filtering, sorting merge-query layer: substrings, regular
expressions (a registered ``wb_regexp`` function), character lengths (``wb_chars``), sorting by
the left/right pieces, children of a token, batched ancestry lookups, references' merges, and
corpus frequencies for the vocabulary (computed in Python, not stored) exposed to SQL through
the registered functions ``wb_usage_freq(key, id)`` / ``wb_usage_never(key, id)``, so the
vocabulary sorts and filters by them in SQL too. Nothing is ever written: the store's read-only
connection has ``query_only`` on, which refuses even TEMP tables.

How paging works (Anki's browser does the same): a filtered or sorted view first asks SQLite for
the *keys* in display order (ranks or ids, ~50 ms for 100k rows), then rows are fetched 200 at a
time by primary key as they scroll into view. The unfiltered view in rank order needs no key list
at all: row ``r`` *is* rank ``r``.
"""

from __future__ import annotations

import copy
import json
import math
import sqlite3
import time
from array import array
from dataclasses import dataclass
from itertools import count as _counter
from typing import Any, Iterator, MutableSequence, Sequence

import regex

from workbench.core.ancestry import AncestryNode, build_ancestry
from workbench.core.display import piece_chars
from workbench.errors import DamagedValue, WorkbenchError
from workbench.store import validate
from workbench.store.opening import budget_spent, cpu_left
from workbench.store.validate import shown_piece

Source = tuple[str, int]  # ("run", run_id) or ("ref", ref_id)
REGEX_TIMEOUT_S = 0.5  # per piece; a pathological pattern fails instead of freezing the window
_MAX_VARS = 900  # stay below SQLite's default limit of bound parameters per statement


def source_label(source: Source) -> str:
    return f"run {source[1]}" if source[0] == "run" else f"reference {source[1]}"


# ---------------------------------------------------------------------------------------------------
# SQL functions registered on the connection

_PATTERNS: dict[str, regex.Pattern[str]] = {}


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """The compiled pattern, or WorkbenchError with the reason (shown under the filter box)."""
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        try:
            compiled = regex.compile(pattern)
        except regex.error as exc:
            raise WorkbenchError(f"not a valid regular expression: {exc}") from None
        if len(_PATTERNS) > 64:
            _PATTERNS.clear()
        _PATTERNS[pattern] = compiled
    return compiled


def _sql_regexp(pattern: str, piece: bytes | None) -> int:
    value = shown_piece(piece)
    if value is None:
        return 0
    text = value.decode("utf-8", "backslashreplace")
    # The match lets go of the GIL, so a slow pattern on a worker's connection does not stop the
    # window's thread while a piece takes long. ``regex`` already does so on a ``str`` (its docs:
    # concurrent "is not needed when working on the builtin (immutable) string classes"; measured:
    # under load the other thread waited tens of ms at most, with or without it); the keyword says so here.
    # On the window's thread, inside Connection.within, one piece's match may not outlast the
    # block's budget either (SQLite's progress handler only runs between VM steps).
    left = cpu_left()
    timeout = REGEX_TIMEOUT_S if left is None else min(REGEX_TIMEOUT_S, max(left, 0.001))
    try:
        return compile_pattern(pattern).search(text, timeout=timeout, concurrent=True) is not None
    except TimeoutError:
        if timeout < REGEX_TIMEOUT_S:
            budget_spent()
        raise


def _sql_chars(piece: bytes | None) -> int | None:
    value = shown_piece(piece)
    return None if value is None else piece_chars(value)


#: usage key → (frequencies by id, which ids take part in the never-used flag)
_USAGE: dict[int, tuple[Sequence[int], Sequence[bool]]] = {}
_usage_keys = _counter(1)


def _sql_usage_freq(key: int, token_id: int) -> int | None:
    data = _USAGE.get(key)
    if data is None or not 0 <= token_id < len(data[0]):
        return None  # not counted (or a token added since the count)
    return data[0][token_id]


def _sql_usage_never(key: int, token_id: int) -> int | None:
    data = _USAGE.get(key)
    if data is None or not 0 <= token_id < len(data[0]):
        return None
    return int(bool(data[1][token_id]) and data[0][token_id] == 0)


#: scores key → one float per id (a WordPiece run's merge scores, a Unigram run's log probabilities)
_SCORES: dict[int, Sequence[float | None]] = {}
_SCORES_KEPT = 16  # sources alive at once are few (the panel holds two); older keys are dropped


def _sql_score(key: int, token_id: int) -> float | None:
    scores = _SCORES.get(key)
    if scores is None or not 0 <= token_id < len(scores):
        return None
    return scores[token_id]


def _register_scores(scores: Sequence[float | None]) -> int:
    key = next(_usage_keys)
    _SCORES[key] = scores
    while len(_SCORES) > _SCORES_KEPT:
        _SCORES.pop(next(iter(_SCORES)))
    return key


def _score_sql(owner, column: str) -> str:
    """``wb_score(key, column)`` for ``owner.scores`` (registered again if the key was dropped)."""
    if owner.scores is None:
        return "NULL"
    if owner._scores_key not in _SCORES:
        owner._scores_key = _register_scores(owner.scores)
    return f"wb_score({owner._scores_key}, {column})"


# Per-id audit marks (comma-joined categories: "unreachable,residue"), computed by the Audit tab and
# shown as a column and a filter of the merge and vocabulary tables (sorting and filtering in SQL).
_AUDIT: dict[int, Sequence[str]] = {}


def _sql_audit(key: int, token_id: int) -> str | None:
    marks = _AUDIT.get(key)
    if marks is None or not 0 <= token_id < len(marks):
        return None
    return marks[token_id]


def register_audit(marks: Sequence[str] | None) -> int | None:
    """Make per-id audit marks visible to SQL as ``wb_audit(key, id)``; the key (None: no marks)."""
    if marks is None:
        return None
    key = next(_usage_keys)
    _AUDIT[key] = tuple(marks)
    while len(_AUDIT) > _SCORES_KEPT:
        _AUDIT.pop(next(iter(_AUDIT)))
    return key


def audit_mark(key: int | None, token_id: int) -> str | None:
    """The marks of one id (None: no audit shown)."""
    return None if key is None else _sql_audit(key, token_id)


def _audit_where(key: int | None, column: str, category: str, params: list) -> str:
    """SQL keeping the rows whose ``column`` id carries the audit mark ``category``."""
    if key is None:
        return "0"
    params.append(f",{category},")
    return f"instr(',' || coalesce(wb_audit({key}, {column}), '') || ',', ?) > 0"


def _specials_cte(ctes: list, params: list, specials: Sequence[int]) -> None:
    """``specials(id)``: the special ids, one bound JSON parameter (never pasted into the SQL)."""
    ctes.append("specials(id) AS (SELECT value FROM json_each(?))")
    params.append(json.dumps([i for i in specials if type(i) is int]))


def register_functions(conn: sqlite3.Connection) -> None:
    """Add the ``wb_*`` functions to a connection.

    Registering again replaces the same function (connections cannot be weakly referenced, so
    there is no cheap way to remember which ones already have them).
    """
    conn.create_function("wb_regexp", 2, _sql_regexp, deterministic=True)
    conn.create_function("wb_chars", 1, _sql_chars, deterministic=True)
    conn.create_function("wb_usage_freq", 2, _sql_usage_freq)
    conn.create_function("wb_usage_never", 2, _sql_usage_never)
    conn.create_function("wb_score", 2, _sql_score)
    conn.create_function("wb_audit", 2, _sql_audit)


def _on_connection(source, conn: sqlite3.Connection):
    """A shallow copy of a merge or vocabulary source reading through ``conn`` (see ``on_connection``)."""
    register_functions(conn)
    twin = copy.copy(source)
    twin.conn = conn
    return twin


def store_connection(store) -> sqlite3.Connection:
    """The store's connection with our SQL functions registered; we only read through it."""
    conn = store.connection
    register_functions(conn)
    return conn


KEY_BATCH = 50_000  # key rows fetched at a time: the result is held packed, never as row tuples


def collect_keys(conn: sqlite3.Connection, sql: str, params: Sequence, *,
                 numeric: bool) -> tuple[MutableSequence[Any], MutableSequence[Any]]:
    """The (key, sort value) rows of ``sql`` as a packed array of keys (8 bytes each) and the
    values — packed too when ``numeric`` (the sort is by the key itself), else a list.

    Memory: 16 bytes per result row in key order (a 10M-row result: 160 MB), plus each value
    object for another order; rows are fetched :data:`KEY_BATCH` at a time, never all as tuples.
    """
    keys: MutableSequence[Any] = array("q")
    values: MutableSequence[Any] = array("q") if numeric else []
    try:
        cursor = conn.execute(sql, params)
        while True:
            rows = cursor.fetchmany(KEY_BATCH)
            if not rows:
                break
            ks: MutableSequence[Any] = [r[0] for r in rows]
            vs: MutableSequence[Any] = [r[1] for r in rows]
            if isinstance(keys, array):
                try:
                    ks = array("q", ks)
                    vs = array("q", vs) if isinstance(values, array) else vs
                except (TypeError, OverflowError):  # a key that is no 64-bit integer (a crafted file): lists
                    keys, values = list(keys), list(values)
            keys.extend(ks)
            values.extend(vs)
    except sqlite3.Error as exc:
        raise sql_error(exc) from None
    return keys, values


def sql_error(exc: sqlite3.Error) -> WorkbenchError:
    text = str(exc)
    if "user-defined function raised exception" in text:
        return WorkbenchError("the regular expression took too long on a piece; simplify it")
    if "interrupted" in text:
        return WorkbenchError("the query was stopped: it ran longer than the window allows (or was "
                              "cancelled); narrow the filter or choose a smaller run")
    return WorkbenchError(f"the project file could not be read ({text})")


# ---------------------------------------------------------------------------------------------------
# filters and rows


@dataclass(frozen=True)
class TextFilter:
    """A substring (bytes of the UTF-8 text, case-sensitive) or a regex over the decoded piece."""

    text: str = ""
    regex: bool = False

    def __bool__(self) -> bool:
        return bool(self.text)

    def validate(self) -> None:
        if self.regex and self.text:
            compile_pattern(self.text)

    def sql(self, column: str) -> tuple[str, list]:
        if self.regex:
            return f"wb_regexp(?, {column})", [self.text]
        # Bytes bind as a BLOB, so instr() compares bytes (pieces are BLOBs too).
        return f"instr({column}, ?) > 0", [self.text.encode("utf-8")]


FIELDS = ("any", "result", "left", "right")


@dataclass(frozen=True)
class MergeQuery:
    """What the merge table shows: ``None`` means no limit; ranges are inclusive."""

    text: TextFilter = TextFilter()
    field: str = "any"  # which piece the text must be in: any | result | left | right
    min_frequency: int | None = None
    max_frequency: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    length_unit: str = "bytes"  # or "chars"
    audit: str = ""  # only merges whose result carries this audit mark (see register_audit)

    def is_empty(self) -> bool:
        return not self.text and not self.audit and all(v is None for v in (
            self.min_frequency, self.max_frequency, self.min_length, self.max_length))


@dataclass(frozen=True, slots=True)
class MergeEntry:
    """One merge with its pieces; ``frequency`` is None for reference tokenizers (not recorded)."""

    rank: int
    left: int
    right: int
    new_id: int
    frequency: int | None
    left_piece: bytes | None
    right_piece: bytes | None
    piece: bytes | None

    @property
    def length(self) -> int:
        return len(self.piece or b"")

    @property
    def chars(self) -> int:
        return piece_chars(self.piece or b"")


@dataclass(frozen=True)
class VocabQuery:
    text: TextFilter = TextFilter()
    kind: str = ""  # "" = any | special | base | merge
    never_used_only: bool = False
    audit: str = ""  # only entries carrying this audit mark (see register_audit)

    def is_empty(self) -> bool:
        return not self.text and not self.kind and not self.never_used_only and not self.audit


@dataclass(frozen=True, slots=True)
class VocabEntry:
    id: int
    piece: bytes
    kind: str
    frequency: int | None  # None until corpus frequencies are counted
    never_used: bool | None
    audit: str | None = None  # the Audit tab's marks for this id (None: no audit shown)


class _Tables:
    """Where a source keeps its rows: runs and reference tokenizers use parallel tables."""

    def __init__(self, source: Source):
        kind, sid = source
        if kind not in ("run", "ref"):
            raise ValueError(f"unknown source kind {kind!r}")
        self.source = (kind, int(sid))
        self.id = int(sid)
        run = kind == "run"
        self.merges = "merges" if run else "ref_merges"
        self.vocab = "vocab" if run else "ref_vocab"
        self.owner = "run_id" if run else "ref_id"
        self.frequency = "m.frequency" if run else "NULL"
        self.is_run = run


#: ``scores=UNREAD`` (the default of :class:`MergeSource` and :class:`PieceSource`): read them here.
#: A window passes the scores a worker already read (:func:`source_scores`; ~0.5 s for 200,000).
UNREAD: Any = object()


def source_key_end(conn: sqlite3.Connection, source: Source) -> int:
    """The highest merge rank or vocabulary id of ``source`` (-1: none), from the keys' ends:
    whether showing it takes long, without reading its settings or scores."""
    t = _Tables(source)
    rank = conn.execute(f"SELECT max(rank) FROM {t.merges} WHERE {t.owner} = ?", (t.id,)).fetchone()
    vid = conn.execute(f"SELECT id FROM {t.vocab} WHERE {t.owner} = ? AND typeof(id) = 'integer' "
                       "ORDER BY id DESC LIMIT 1", (t.id,)).fetchone()
    return max(-1 if rank is None or rank[0] is None else int(rank[0]),
               -1 if vid is None or vid[0] is None else int(vid[0]))


def source_settings(conn: sqlite3.Connection, source: Source) -> dict:
    """The settings of a run or reference, checked (:func:`validate.settings`); {} when missing or
    damaged (a window asks ``ProjectStore.run_problem`` before it shows a run, and says why)."""
    table = "runs" if source[0] == "run" else "refs"
    row = conn.execute(f"SELECT settings, name FROM {table} WHERE id = ?", (int(source[1]),)).fetchone()
    if row is None:
        return {}
    try:
        return validate.settings(row[0], validate.owner_label(source[0], source[1], row[1]))
    except DamagedValue:
        return {}


def corpus_fingerprints(conn: sqlite3.Connection, source: Source) -> tuple[str, ...]:
    """The fingerprints of the corpus files a count for ``source`` reads: a run's own files, or every
    file of the project for a reference (what a cached corpus count depends on)."""
    kind, sid = source
    if kind == "run":
        return tuple(r[0] for r in conn.execute(
            "SELECT c.fingerprint FROM corpora c JOIN run_corpora rc ON rc.corpus_id = c.id "
            "WHERE rc.run_id = ? ORDER BY c.id", (sid,)))
    return tuple(sorted({r[0] for r in conn.execute("SELECT fingerprint FROM corpora")}))


def source_model(conn: sqlite3.Connection, source: Source) -> str:
    """The model family (``bpe``, ``wordpiece``, ``unigram``) a run or reference was stored with."""
    model = source_settings(conn, source).get("model", "bpe")
    return model if isinstance(model, str) else "bpe"


def source_scores(conn: sqlite3.Connection, source: Source) -> tuple[float, ...] | None:
    """One score per id from the settings (``tasks.train.record_final_model`` stores them when a
    run ends), or None: a BPE run, a run still training, a WordPiece run trained before its scores
    were kept, or a list that does not fit the vocabulary."""
    scores = source_settings(conn, source).get("scores")
    if not isinstance(scores, list) or not scores:
        return None
    try:
        values = tuple(float(x) for x in scores)
    except (TypeError, ValueError):
        return None
    t = _Tables(source)
    size = conn.execute(f"SELECT count(*) FROM {t.vocab} WHERE {t.owner} = ?", (t.id,)).fetchone()[0]
    return values if len(values) == size else None


# ---------------------------------------------------------------------------------------------------
# merges


def _merge_entry(row: Sequence) -> MergeEntry:
    """A merges row with its pieces (a piece that is not one reads as missing: :func:`shown_piece`)."""
    rank, left, right, new, frequency, left_piece, right_piece, piece = row
    return MergeEntry(rank, left, right, new, frequency, shown_piece(left_piece), shown_piece(right_piece),
                      shown_piece(piece))


#: Families whose merges rows say, in ``extra``, which tokens each merge removed (PickyBPE).
REMOVING_MODELS = frozenset({"pickybpe"})


def merge_removals(conn: sqlite3.Connection, source: Source) -> dict[int, tuple[int, list[int]]]:
    """Creating merge rank → (rank of the merge that removed its product, the ids it was split
    into), from the ``{"removed": [[id, frequency, [split ids]], …]}`` extras a PickyBPE run writes.
    A token made again after its removal is struck only on the merge that made it before."""
    t = _Tables(source)
    if not t.is_run:
        return {}
    removals: list[tuple[int, int, list[int]]] = []
    for rank, extra in conn.execute(f"SELECT rank, extra FROM {t.merges} WHERE {t.owner} = ? AND extra IS NOT NULL "
                                    "ORDER BY rank", (t.id,)):
        try:
            removed = json.loads(extra).get("removed") or []
            removals.extend((int(rank), int(item[0]), [int(x) for x in item[2]]) for item in removed)
        except (ValueError, TypeError, AttributeError, IndexError):
            continue  # a damaged extra strikes nothing (the store's check names it)
    if not removals:
        return {}
    ids = sorted({tid for _r, tid, _s in removals})
    made: dict[int, list[int]] = {}
    for at in range(0, len(ids), 500):
        chunk = ids[at:at + 500]
        for rank, new in conn.execute(f"SELECT rank, new_id FROM {t.merges} WHERE {t.owner} = ? AND new_id IN "
                                      f"({','.join('?' * len(chunk))}) ORDER BY rank", (t.id, *chunk)):
            made.setdefault(int(new), []).append(int(rank))
    out: dict[int, tuple[int, list[int]]] = {}
    for removing, tid, split in removals:
        before = [r for r in made.get(tid, ()) if r <= removing]
        if before:
            out[before[-1]] = (removing, split)
    return out


class MergeSource:
    """The merges of one run or reference, queried page by page. GUI thread only."""

    ORDER_KEYS = ("rank", "left", "right", "result", "frequency", "bytes", "chars", "id", "score", "audit")
    audit_key: int | None = None  # register_audit's key of the marks shown (None: none)

    def __init__(self, conn: sqlite3.Connection, source: Source, *, scores: Any = UNREAD):
        """``scores``: what :func:`source_scores` gives for ``source``, when a worker read them."""
        register_functions(conn)
        self.conn = conn
        self.t = _Tables(source)
        self.source = self.t.source
        self.model = source_model(conn, self.source)
        self.scores: tuple[float, ...] | None = None
        self.score_rule = ""  # a WordPiece run's pair score: "likelihood" or "frequency"
        self._remade: frozenset[int] = frozenset()
        self._scores_key: int | None = None
        self.load_scores(scores)

    def load_scores(self, scores: Any = UNREAD) -> bool:
        """(Re-)read the per-id scores (a WordPiece run records them when it ends); True if there are.

        Scores are kept per id, so a merge that re-made an existing piece (two pairs spelling it)
        has none of its own: those ranks are found once (one grouped scan) and show no score.
        """
        if self.scores is None:
            self.scores = source_scores(self.conn, self.source) if scores is UNREAD else scores
            if self.scores is not None:
                rule = source_settings(self.conn, self.source).get("wordpiece_score", "")
                self.score_rule = rule if isinstance(rule, str) else ""
                t = self.t
                self._remade = frozenset(r[0] for r in self.conn.execute(
                    f"SELECT m.rank FROM {t.merges} m JOIN (SELECT new_id, min(rank) AS first FROM {t.merges} "
                    f"WHERE {t.owner} = ? GROUP BY new_id HAVING count(*) > 1) d ON d.new_id = m.new_id "
                    f"WHERE m.{t.owner} = ? AND m.rank > d.first", (t.id, t.id)) if type(r[0]) is int)
        return self.scores is not None

    def removed_by(self, rank: int) -> tuple[int, list[int]] | None:
        """For a merge whose product a later step removed (a PickyBPE run), ``(rank of the merge that
        removed it, the ids it was split into)``; None otherwise. Read again while a run grows."""
        if self.model not in REMOVING_MODELS:
            return None
        now = time.monotonic()
        if now - getattr(self, "_removals_read", -10.0) > 1.0:  # a cell is painted often: look once a second
            self._removals_read = now
            top = self.max_key()
            if getattr(self, "_removals_to", -2) != top:
                self._removals = merge_removals(self.conn, self.source)
                self._removals_to = top
        return self._removals.get(rank)

    def on_connection(self, conn: sqlite3.Connection) -> MergeSource:
        """This source on another connection (a worker thread's own): the same run, scores and
        settings, nothing read again. The copy is never closed: the original owns what it shares."""
        return _on_connection(self, conn)

    def score(self, token_id: int, rank: int | None = None) -> float | None:
        """The score of the id a merge made, None without scores or for a merge (``rank``) that
        re-made an existing piece."""
        scores = self.scores
        if scores is None or not 0 <= token_id < len(scores) or (rank is not None and rank in self._remade):
            return None
        return scores[token_id]

    # ---- sizes ------------------------------------------------------------------------------------
    def max_key(self) -> int:
        """The highest rank stored (-1 when there is none yet); cheap, so refresh() polls it."""
        t = self.t
        row = self.conn.execute(f"SELECT max(rank) FROM {t.merges} WHERE {t.owner} = ?", (t.id,)).fetchone()
        return -1 if row is None or row[0] is None else int(row[0])

    def count(self) -> int:
        t = self.t
        return self.conn.execute(f"SELECT count(*) FROM {t.merges} WHERE {t.owner} = ?", (t.id,)).fetchone()[0]

    @property
    def has_frequency(self) -> bool:
        return self.t.is_run

    # ---- SQL building -------------------------------------------------------------------------------
    def _select(self, query: MergeQuery | None, order: str, *, after: int | None, upto: int | None,
                what: str) -> tuple[str, list]:
        t = self.t
        ctes, params, where, joins = [], [], [f"m.{t.owner} = ?"], {}
        where_params: list = [t.id]

        def join(alias: str, column: str) -> None:
            joins[alias] = (f"LEFT JOIN {t.vocab} {alias} ON {alias}.{t.owner} = m.{t.owner} "
                            f"AND {alias}.id = m.{column}")

        if query is not None and query.text:
            # Match the text once per vocabulary entry, then keep merges whose pieces are hits:
            # one pass over the vocabulary instead of three piece joins per merge.
            cond, cparams = query.text.sql("piece")
            if after is None:
                ctes.append(f"hit(id) AS MATERIALIZED (SELECT id FROM {t.vocab} WHERE {t.owner} = ? AND {cond})")
                params += [t.id, *cparams]
            else:  # a live refresh: only the pieces of the new merges can match
                ctes.append(f"fresh AS (SELECT new_id, left_id, right_id FROM {t.merges} "
                            f"WHERE {t.owner} = ? AND rank > ?)")
                ctes.append(f"hit(id) AS MATERIALIZED (SELECT id FROM {t.vocab} WHERE {t.owner} = ? AND id IN "
                            "(SELECT new_id FROM fresh UNION SELECT left_id FROM fresh "
                            f"UNION SELECT right_id FROM fresh) AND {cond})")
                params += [t.id, int(after), t.id, *cparams]
            columns = {"result": ["new_id"], "left": ["left_id"], "right": ["right_id"]}.get(
                query.field, ["new_id", "left_id", "right_id"])
            where.append("(" + " OR ".join(f"m.{c} IN hit" for c in columns) + ")")
        if query is not None:
            if t.is_run:
                for op, value in ((">=", query.min_frequency), ("<=", query.max_frequency)):
                    if value is not None:
                        where.append(f"m.frequency {op} ?")
                        where_params.append(int(value))
            elif query.min_frequency is not None or query.max_frequency is not None:
                where.append("0")  # references record no frequencies: nothing can match
            if query.min_length is not None or query.max_length is not None:
                if query.length_unit == "chars":
                    join("nv", "new_id")
                    column = "wb_chars(nv.piece)"
                elif t.is_run:
                    column = "m.length"
                else:
                    join("nv", "new_id")
                    column = "length(nv.piece)"
                for op, value in ((">=", query.min_length), ("<=", query.max_length)):
                    if value is not None:
                        where.append(f"{column} {op} ?")
                        where_params.append(int(value))
        if query is not None and query.audit:
            where.append(_audit_where(self.audit_key, "m.new_id", query.audit, where_params))
        if after is not None:
            where.append("m.rank > ?")
            where_params.append(int(after))
        if upto is not None:
            where.append("m.rank <= ?")
            where_params.append(int(upto))
        key = self._order_expr(order, join)
        if order == "score" and self._remade:
            ctes.append("remade(rank) AS (SELECT value FROM json_each(?))")
            params.append(json.dumps(sorted(self._remade)))
        sql = (("WITH " + ", ".join(ctes) + " ") if ctes else "") + \
              f"SELECT {what.format(key=key)} FROM {t.merges} m {' '.join(joins.values())} " \
              f"WHERE {' AND '.join(where)}"
        return sql, params + where_params

    def _order_expr(self, order: str, join) -> str:
        t = self.t
        if order == "rank":
            return "m.rank"
        if order == "frequency":
            return t.frequency
        if order == "id":
            return "m.new_id"
        if order == "audit":
            return f"wb_audit({self.audit_key}, m.new_id)" if self.audit_key is not None else "NULL"
        if order == "score":
            score = _score_sql(self, "m.new_id")
            if self._remade:  # the ranks are a bound parameter (a CTE of :meth:`_select`)
                score = f"(CASE WHEN m.rank IN remade THEN NULL ELSE {score} END)"
            return score
        if order == "bytes":
            if t.is_run:
                return "m.length"
            join("nv", "new_id")
            return "length(nv.piece)"
        if order == "chars":
            join("nv", "new_id")
            return "wb_chars(nv.piece)"
        alias, column = {"left": ("lv", "left_id"), "right": ("rv", "right_id"),
                         "result": ("nv", "new_id")}.get(order, (None, None))
        if alias is None:
            raise ValueError(f"cannot sort merges by {order!r}; use one of {self.ORDER_KEYS}")
        join(alias, column)
        return f"{alias}.piece"

    # ---- queries ----------------------------------------------------------------------------------
    def keys(self, query: MergeQuery | None, order: str = "rank", descending: bool = False, *,
             after: int | None = None, upto: int | None = None) -> tuple[MutableSequence[Any], MutableSequence[Any]]:
        """Ranks in display order with their sort values (ties by rank ascending)."""
        direction = "DESC" if descending else "ASC"
        sql, params = self._select(query, order, after=after, upto=upto, what="m.rank, {key}")
        tie = ", m.rank ASC" if order != "rank" else ""
        sql += f" ORDER BY 2 {direction}{tie}"
        return collect_keys(self.conn, sql, params, numeric=order == "rank")

    def _rows_sql(self, where: str) -> str:
        t = self.t
        return (f"SELECT m.rank, m.left_id, m.right_id, m.new_id, {t.frequency}, lv.piece, rv.piece, nv.piece "
                f"FROM {t.merges} m "
                f"LEFT JOIN {t.vocab} nv ON nv.{t.owner} = m.{t.owner} AND nv.id = m.new_id "
                f"LEFT JOIN {t.vocab} lv ON lv.{t.owner} = m.{t.owner} AND lv.id = m.left_id "
                f"LEFT JOIN {t.vocab} rv ON rv.{t.owner} = m.{t.owner} AND rv.id = m.right_id "
                f"WHERE m.{t.owner} = ? AND {where}")

    def rows_range(self, first: int, last: int) -> dict[int, MergeEntry]:
        """Merges with ``first <= rank <= last`` (a primary-key range scan)."""
        sql = self._rows_sql("m.rank BETWEEN ? AND ?")
        return {r[0]: _merge_entry(r) for r in self.conn.execute(sql, (self.t.id, first, last))}

    def rows(self, ranks: Sequence[int]) -> dict[int, MergeEntry]:
        out: dict[int, MergeEntry] = {}
        for start in range(0, len(ranks), _MAX_VARS):
            chunk = list(ranks[start:start + _MAX_VARS])
            sql = self._rows_sql(f"m.rank IN ({','.join('?' * len(chunk))})")
            out.update((r[0], _merge_entry(r)) for r in self.conn.execute(sql, (self.t.id, *chunk)))
        return out

    def iter_rows(self, query: MergeQuery | None, order: str = "rank", descending: bool = False,
                  batch: int = 2000) -> Iterator[MergeEntry]:
        """Every matching merge in display order, fetched in batches (CSV export)."""
        ranks, _ = self.keys(query, order, descending)
        for start in range(0, len(ranks), batch):
            chunk = ranks[start:start + batch]
            found = self.rows(chunk)
            for rank in chunk:
                if rank in found:
                    yield found[rank]

    # ---- one token ------------------------------------------------------------------------------
    def first_merge_of(self, token_id: int) -> int | None:
        """Rank of the merge that created ``token_id`` (the first, if a later one recreated it)."""
        found = self._merges_of([int(token_id)])
        return found[int(token_id)][0] if found else None

    def entry(self, rank: int) -> MergeEntry | None:
        return self.rows_range(rank, rank).get(rank)

    def piece(self, token_id: int) -> bytes | None:
        t = self.t
        row = self.conn.execute(f"SELECT piece FROM {t.vocab} WHERE {t.owner} = ? AND id = ?",
                                (t.id, int(token_id))).fetchone()
        return None if row is None else shown_piece(row[0])

    def pieces(self, ids) -> dict[int, bytes]:
        t = self.t
        ids = list(ids)
        out: dict[int, bytes] = {}
        for start in range(0, len(ids), _MAX_VARS):
            chunk = ids[start:start + _MAX_VARS]
            out.update((i, shown_piece(p) or b"") for i, p in self.conn.execute(
                f"SELECT id, piece FROM {t.vocab} WHERE {t.owner} = ? AND id IN ({','.join('?' * len(chunk))})",
                (t.id, *chunk)))
        return out

    def _id_offset(self) -> int | None:
        """``new_id - rank`` of the first merge: trained runs and tiktoken files number new tokens
        in merge order, so ``rank = id - offset`` is usually right (checked, never trusted)."""
        if getattr(self, "_offset", None) is None:  # a run that has no merge yet is asked again
            t = self.t
            row = self.conn.execute(f"SELECT new_id - rank FROM {t.merges} WHERE {t.owner} = ? "
                                    "ORDER BY rank LIMIT 1", (t.id,)).fetchone()
            self._offset = None if row is None else int(row[0])
        return self._offset

    def _low_ids_made(self, offset: int) -> bool:
        """Whether any merge made an id below ``offset`` (re-made a base piece: rare, but possible
        when characters spell the end-of-word marker). Checked once, then only for new ranks."""
        t = self.t
        checked, found = getattr(self, "_low_checked", (-1, False))
        if not found:
            row = self.conn.execute(f"SELECT max(rank), coalesce(max(new_id < ?), 0) FROM {t.merges} "
                                    f"WHERE {t.owner} = ? AND rank > ?", (offset, t.id, checked)).fetchone()
            if row is not None and row[0] is not None:
                checked, found = int(row[0]), bool(row[1])
            self._low_checked = (checked, found)
        return found

    def _merges_of(self, ids) -> dict[int, tuple[int, int, int]]:
        """``{id: (rank, left, right)}`` of the first merge that created each id.

        The merges table has no index on ``new_id`` (the store keeps training writes cheap), so a
        lookup by id is a scan of the run. Most ids are found by a primary-key probe at the guessed
        rank ``id - offset`` first: a hit there is the first creation, because ids are handed out in
        merge order and a merge that recreates an existing piece gets no new id, so no earlier rank
        can have made the id. Only the misses are looked up by a scan.
        """
        t = self.t
        ids = [int(i) for i in ids]
        out: dict[int, tuple[int, int, int]] = {}
        offset = self._id_offset()
        if offset is None:
            return out
        low_made = self._low_ids_made(offset)
        misses = []
        for i in ids:
            if i < offset:
                if low_made:
                    misses.append(i)
                continue
            row = self.conn.execute(f"SELECT rank, left_id, right_id FROM {t.merges} WHERE {t.owner} = ? "
                                    "AND rank = ? AND new_id = ?", (t.id, i - offset, i)).fetchone()
            if row is None:
                misses.append(i)
            else:
                out[i] = (row[0], row[1], row[2])
        for start in range(0, len(misses), _MAX_VARS):
            chunk = misses[start:start + _MAX_VARS]
            # SQLite returns the bare columns of the row that holds min(rank).
            rows = self.conn.execute(
                f"SELECT new_id, min(rank), left_id, right_id FROM {t.merges} WHERE {t.owner} = ? "
                f"AND new_id IN ({','.join('?' * len(chunk))}) GROUP BY new_id", (t.id, *chunk))
            out.update((n, (r, a, b)) for n, r, a, b in rows)
        return out

    def ancestry(self, token_id: int) -> AncestryNode:
        """The tree of merges that built the token (one SQL query per tree level)."""
        return build_ancestry(int(token_id), self._merges_of, self.pieces)

    def children(self, token_id: int, limit: int = 500) -> tuple[list[MergeEntry], int]:
        """Later merges that use the token as a part: the first ``limit`` by rank, and how many.

        One scan of the run: the window count is taken before LIMIT applies.
        """
        t = self.t
        tid = int(token_id)
        sql = (f"SELECT p.*, lv.piece, rv.piece, nv.piece FROM (SELECT m.rank, m.left_id, m.right_id, m.new_id, "
               f"{t.frequency} AS frequency, count(*) OVER () AS total FROM {t.merges} m "
               f"WHERE m.{t.owner} = ? AND (m.left_id = ? OR m.right_id = ?) ORDER BY m.rank LIMIT ?) p "
               f"LEFT JOIN {t.vocab} nv ON nv.{t.owner} = ? AND nv.id = p.new_id "
               f"LEFT JOIN {t.vocab} lv ON lv.{t.owner} = ? AND lv.id = p.left_id "
               f"LEFT JOIN {t.vocab} rv ON rv.{t.owner} = ? AND rv.id = p.right_id ORDER BY p.rank")
        rows = self.conn.execute(sql, (t.id, tid, tid, int(limit), t.id, t.id, t.id)).fetchall()
        total = rows[0][5] if rows else 0
        return [_merge_entry((*r[:5], *r[6:9])) for r in rows], total


# ---------------------------------------------------------------------------------------------------
# vocabulary

class VocabSource:
    """The vocabulary of one run or reference, with optional corpus frequencies (see set_usage)."""

    ORDER_KEYS: tuple[str, ...] = ("id", "piece", "bytes", "kind", "frequency", "never_used", "audit")

    def __init__(self, conn: sqlite3.Connection, source: Source):
        register_functions(conn)
        self.conn = conn
        self.t = _Tables(source)
        self.source = self.t.source
        self.usage_key: int | None = None
        self.audit_key: int | None = None
        self._specials: tuple[int, ...] = ()
        if not self.t.is_run:
            specials = source_settings(conn, self.source).get("special_tokens", {})
            if isinstance(specials, dict):
                self._specials = tuple(sorted(int(v) for v in specials.values() if isinstance(v, int)))

    def close(self) -> None:
        """Forget the frequencies (the connection may live on for the next source)."""
        if self.usage_key is not None:
            _USAGE.pop(self.usage_key, None)
            self.usage_key = None

    def on_connection(self, conn: sqlite3.Connection) -> VocabSource:
        """This source on another connection (a worker thread's own), with the same frequencies,
        scores and special ids. Never close the copy: the frequencies stay the original's."""
        return _on_connection(self, conn)

    # ---- corpus frequencies -------------------------------------------------------------------------
    def set_usage(self, frequencies: Sequence[int] | None, counted: Sequence[bool] | None = None) -> None:
        """Make per-id frequencies visible to SQL (None clears them).

        ``counted[i]`` says whether id ``i`` takes part in the never-used flag (special tokens do
        not); ids beyond the arrays (a run that grew since the count) read as not counted.
        """
        self.close()
        if frequencies is None:
            return
        frequencies = tuple(frequencies)
        counted = tuple(counted) if counted is not None else (True,) * len(frequencies)
        key = next(_usage_keys)
        _USAGE[key] = (frequencies, counted)
        self.usage_key = key

    @property
    def has_usage(self) -> bool:
        return self.usage_key is not None

    # ---- sizes ------------------------------------------------------------------------------------
    def max_key(self) -> int:
        t = self.t
        # An id stored as text (a crafted file) sorts after every number: it is no id. Read from the
        # key's end (max() with that condition would walk every id of the run: ~1 s for 10M).
        row = self.conn.execute(f"SELECT id FROM {t.vocab} WHERE {t.owner} = ? AND typeof(id) = 'integer' "
                                "ORDER BY id DESC LIMIT 1", (t.id,)).fetchone()
        return -1 if row is None or row[0] is None else int(row[0])

    def count(self) -> int:
        t = self.t
        return self.conn.execute(f"SELECT count(*) FROM {t.vocab} WHERE {t.owner} = ?", (t.id,)).fetchone()[0]

    def kind_counts(self) -> dict[str, int]:
        sql, params = self._select(None, "id", after=None, upto=None, what="{kind}, count(*)")
        return dict(self.conn.execute(sql + " GROUP BY 1", params).fetchall())

    # ---- SQL building -------------------------------------------------------------------------------
    def _kind_expr(self, ctes: list, params: list) -> str:
        t = self.t
        if t.is_run:
            return "v.kind"
        ctes.append("made(id) AS MATERIALIZED (SELECT DISTINCT new_id FROM ref_merges WHERE ref_id = ?)")
        params.append(t.id)
        _specials_cte(ctes, params, self._specials)
        # Imported vocabularies may leave ids without a piece (cl100k skips a few): "unused".
        return ("(CASE WHEN v.id IN specials THEN 'special' WHEN v.id IN made THEN 'merge' "
                "WHEN length(v.piece) = 0 THEN 'unused' ELSE 'base' END)")

    def _select(self, query: VocabQuery | None, order: str, *, after: int | None, upto: int | None,
                what: str) -> tuple[str, list]:
        t = self.t
        ctes: list[str] = []
        params: list = []
        kind = self._kind_expr(ctes, params)
        where: list[str] = [f"v.{t.owner} = ?"]
        wparams: list[object] = [t.id]
        if query is not None:
            if query.text:
                cond, cparams = query.text.sql("v.piece")
                where.append(cond)
                wparams += cparams
            if query.kind:
                where.append(f"{kind} = ?")
                wparams.append(query.kind)
            if query.never_used_only:
                where.append(f"wb_usage_never({self.usage_key}, v.id) = 1" if self.usage_key else "0")
            if query.audit:
                where.append(_audit_where(self.audit_key, "v.id", query.audit, wparams))
        if after is not None:
            where.append("v.id > ?")
            wparams.append(int(after))
        if upto is not None:
            where.append("v.id <= ?")
            wparams.append(int(upto))
        # The key is an int this module made, so it can be part of the SQL text.
        freq = f"wb_usage_freq({self.usage_key}, v.id)" if self.usage_key else "NULL"
        never = f"wb_usage_never({self.usage_key}, v.id)" if self.usage_key else "NULL"
        keys = self._order_keys(kind, freq, never)
        if order not in keys:
            raise ValueError(f"cannot sort the vocabulary by {order!r}; use one of {self.ORDER_KEYS}")
        sql = (("WITH " + ", ".join(ctes) + " ") if ctes else "") + \
              f"SELECT {what.format(key=keys[order], kind=kind, freq=freq, never=never)} " \
              f"FROM {t.vocab} v WHERE {' AND '.join(where)}"
        return sql, params + wparams

    def _order_keys(self, kind: str, freq: str, never: str) -> dict[str, str]:
        """Order key → SQL expression (``PieceSource`` adds its own)."""
        audit = f"wb_audit({self.audit_key}, v.id)" if self.audit_key is not None else "NULL"
        return {"id": "v.id", "piece": "v.piece", "bytes": "length(v.piece)", "kind": kind,
                "frequency": freq, "never_used": never, "audit": audit}

    # ---- queries ----------------------------------------------------------------------------------
    def keys(self, query: VocabQuery | None, order: str = "id", descending: bool = False, *,
             after: int | None = None, upto: int | None = None) -> tuple[MutableSequence[Any], MutableSequence[Any]]:
        direction = "DESC" if descending else "ASC"
        sql, params = self._select(query, order, after=after, upto=upto, what="v.id, {key}")
        tie = ", v.id ASC" if order != "id" else ""
        return collect_keys(self.conn, sql + f" ORDER BY 2 {direction}{tie}", params, numeric=order == "id")

    def _made_ids(self) -> frozenset[int]:
        """Ids a reference's merges create (cached: a reference never changes)."""
        made = getattr(self, "_made", None)
        if made is None:
            made = self._made = frozenset(r[0] for r in self.conn.execute(
                "SELECT new_id FROM ref_merges WHERE ref_id = ?", (self.t.id,)))
        return made

    def _rows(self, where: str, params: Sequence) -> dict[int, VocabEntry]:
        """Rows by primary key; a reference's kinds come from Python, not the per-query CTE."""
        t = self.t
        key = self.usage_key
        freq = f"wb_usage_freq({key}, v.id)" if key else "NULL"
        never = f"wb_usage_never({key}, v.id)" if key else "NULL"
        kind = "v.kind" if t.is_run else "NULL"
        sql = f"SELECT v.id, v.piece, {kind}, {freq}, {never} FROM {t.vocab} v WHERE v.{t.owner} = ? AND {where}"
        specials = set(self._specials)
        made = self._made_ids() if not t.is_run else frozenset()
        out = {}
        for i, piece, kind_, f, n in self.conn.execute(sql, (t.id, *params)):
            piece = shown_piece(piece) or b""
            if kind_ is None:
                kind_ = ("special" if i in specials else "merge" if i in made else
                         "unused" if not piece else "base")
            out[i] = VocabEntry(i, piece, kind_, f, None if n is None else bool(n), audit_mark(self.audit_key, i))
        return out

    def rows_range(self, first: int, last: int) -> dict[int, VocabEntry]:
        return self._rows("v.id BETWEEN ? AND ?", (first, last))

    def rows(self, ids: Sequence[int]) -> dict[int, VocabEntry]:
        out: dict[int, VocabEntry] = {}
        for start in range(0, len(ids), _MAX_VARS):
            chunk = list(ids[start:start + _MAX_VARS])
            out.update(self._rows(f"v.id IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def iter_rows(self, query: VocabQuery | None, order: str = "id", descending: bool = False,
                  batch: int = 2000) -> Iterator[VocabEntry]:
        ids, _ = self.keys(query, order, descending)
        for start in range(0, len(ids), batch):
            chunk = ids[start:start + batch]
            found = self.rows(chunk)
            for i in chunk:
                if i in found:
                    yield found[i]


# ---------------------------------------------------------------------------------------------------
# pieces of a model that merges nothing (Unigram)


@dataclass(frozen=True, slots=True)
class PieceEntry:
    """One piece of a Unigram vocabulary with its log probability (None: no score recorded)."""

    id: int
    piece: bytes
    kind: str  # special | byte | normal (| unused: an imported id without a piece)
    score: float | None
    frequency: int | None  # None until corpus frequencies are counted
    never_used: bool | None
    audit: str | None = None  # the Audit tab's marks for this id (None: no audit shown)

    @property
    def probability(self) -> float | None:
        return None if self.score is None else math.exp(self.score)

    @property
    def length(self) -> int:
        return len(self.piece)

    @property
    def chars(self) -> int:
        return piece_chars(self.piece)


class PieceSource(VocabSource):
    """A Unigram vocabulary as a piece table: the vocabulary's columns plus each piece's log
    probability (from the settings' ``scores``) and its length in characters; kinds are
    ``special``, ``byte`` (the 256 byte-fallback pieces) and ``normal``.

    Left out: merges and ancestry (Unigram has none) and segmentations (``tasks.inspection``).
    """

    ORDER_KEYS = ("id", "piece", "score", "chars", "kind", "frequency", "never_used", "audit")

    def __init__(self, conn: sqlite3.Connection, source: Source, *, scores: Any = UNREAD):
        """``scores``: what :func:`source_scores` gives for ``source``, when a worker read them."""
        super().__init__(conn, source)
        settings = source_settings(conn, self.source)
        self.scores: tuple[float | None, ...] | None = source_scores(conn, self.source) if scores is UNREAD \
            else scores
        self._scores_key: int | None = None
        self.known_count: int | None = None  # see pieces()
        self.byte_ids: range = range(0)
        if settings.get("byte_fallback"):
            self.byte_ids = self._byte_block()
        if self.t.is_run:
            self._specials = tuple(r[0] for r in conn.execute(
                "SELECT id FROM vocab WHERE run_id = ? AND kind = 'special' ORDER BY id", (self.t.id,))
                if type(r[0]) is int)
        if self.scores is not None:
            # A special token's 0.0 is a placeholder, not a log probability: it sorts as "none".
            specials = set(self._specials)
            self.scores = tuple(None if i in specials else x
                                for i, x in enumerate(self.scores))

    def _byte_block(self) -> range:
        """Ids of the pieces ``\\x00``…``\\xff`` in order (as ``core.unigram.byte_block`` finds them)."""
        t = self.t
        for (start,) in self.conn.execute(f"SELECT id FROM {t.vocab} WHERE {t.owner} = ? AND piece = ? "
                                          "ORDER BY id", (t.id, b"\x00")).fetchall():
            if type(start) is not int:
                continue
            rows = self.conn.execute(f"SELECT piece FROM {t.vocab} WHERE {t.owner} = ? AND id BETWEEN ? AND ? "
                                     "ORDER BY id", (t.id, start, start + 255)).fetchall()
            if [shown_piece(r[0]) for r in rows] == [bytes([b]) for b in range(256)]:
                return range(start, start + 256)
        return range(0)

    def _kind_expr(self, ctes: list, params: list) -> str:
        _specials_cte(ctes, params, self._specials)
        byte = ""
        if self.byte_ids:  # the expression is used more than once: its bounds live in a CTE too
            ctes.append("byte_block(first, last) AS (SELECT ?, ?)")
            params += [self.byte_ids.start, self.byte_ids.stop - 1]
            byte = "WHEN v.id BETWEEN (SELECT first FROM byte_block) AND (SELECT last FROM byte_block) THEN 'byte' "
        return (f"(CASE WHEN v.id IN specials THEN 'special' {byte}"
                "WHEN length(v.piece) = 0 THEN 'unused' ELSE 'normal' END)")

    def _kind_of(self, token_id: int, piece: bytes) -> str:
        if token_id in self._specials:
            return "special"
        if token_id in self.byte_ids:
            return "byte"
        return "normal" if piece else "unused"

    def _order_keys(self, kind: str, freq: str, never: str) -> dict[str, str]:
        keys = super()._order_keys(kind, freq, never)
        keys.update(score=_score_sql(self, "v.id"), chars="wb_chars(v.piece)")
        return keys

    def score(self, token_id: int) -> float | None:
        scores = self.scores
        return scores[token_id] if scores is not None and 0 <= token_id < len(scores) else None

    def on_connection(self, conn: sqlite3.Connection) -> PieceSource:
        """:meth:`VocabSource.on_connection`, typed: the same pieces, scores and count."""
        return _on_connection(self, conn)

    def pieces(self) -> int:
        """How many pieces: counted once by :func:`prepare_source` (a worker), else counted now."""
        return self.known_count if self.known_count is not None else self.count()

    def _rows(self, where: str, params: Sequence) -> dict[int, PieceEntry]:  # type: ignore[override]
        t = self.t
        key = self.usage_key
        freq = f"wb_usage_freq({key}, v.id)" if key else "NULL"
        never = f"wb_usage_never({key}, v.id)" if key else "NULL"
        sql = f"SELECT v.id, v.piece, {freq}, {never} FROM {t.vocab} v WHERE v.{t.owner} = ? AND {where}"
        out = {}
        for i, piece, f, n in self.conn.execute(sql, (t.id, *params)):
            piece = shown_piece(piece) or b""
            out[i] = PieceEntry(i, piece, self._kind_of(i, piece), self.score(i), f, None if n is None else bool(n),
                                audit_mark(self.audit_key, i))
        return out


@dataclass
class PreparedSource:
    """A run's or reference's sources, built where their setting-up may take long (a worker, on a
    connection of its own): :meth:`MergeSource.on_connection` moves each onto the window's own."""

    merges: MergeSource
    pieces: PieceSource | None  # a Unigram run or reference without merges: its piece table


def prepare_source(conn: sqlite3.Connection, source: Source, scores: Any = UNREAD) -> PreparedSource:
    """Build ``source``'s merge source and, for a Unigram vocabulary without merges, its piece
    source (the settings read and checked, one score per piece set aside for the special tokens,
    the pieces counted): for 200,000 pieces ~0.1-0.3 s that a window does not spend on its own
    thread. ``scores``: what :func:`source_scores` gave, when already read."""
    merges = MergeSource(conn, source, scores=scores)
    pieces = None
    if merges.model == "unigram" and merges.max_key() < 0:
        pieces = PieceSource(conn, source, scores=merges.scores)
        pieces.known_count = pieces.count()
    return PreparedSource(merges, pieces)


# ---------------------------------------------------------------------------------------------------
# what the project holds


@dataclass(frozen=True)
class SourceInfo:
    source: Source
    name: str
    status: str  # a run's status; "reference" for references
    merges: int | None = None


def list_sources(conn: sqlite3.Connection) -> list[SourceInfo]:
    """Runs (oldest first) then references — a light query, polled by refresh().

    A ``running`` run whose training process is gone reads ``interrupted``, as ProjectStore.runs()
    reports it.
    """
    from workbench.store.opening import owner_alive

    out = []
    for rid, name, status, pid, host in conn.execute(
            "SELECT id, name, status, owner_pid, owner_host FROM runs ORDER BY id"):
        if status == "running" and not owner_alive(pid if isinstance(pid, int) else None,
                                                   host if isinstance(host, str) else None):
            status = "interrupted"
        out.append(SourceInfo(("run", rid), validate.display_text(name), validate.display_text(status)))
    out += [SourceInfo(("ref", rid), validate.display_text(name), "reference")
            for rid, name in conn.execute("SELECT id, name FROM refs ORDER BY id")]
    return out
