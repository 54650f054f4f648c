"""The one validating layer between a project file and everything that reads it.

A ``.tokproj`` is a document people send each other, so every stored value is read as untrusted:
each column is decoded here with its type and range checked — an id that is a whole number inside
the vocabulary, a piece that is bytes, settings that are a JSON object holding the types the
workbench writes, JSON no deeper than the workbench ever nests it, model, normalizer and
pre-tokenizer names that exist — and anything else becomes one
:class:`~workbench.errors.DamagedValue` naming the run (or reference) and the column. The store's
readers (:mod:`~workbench.store.project`, :mod:`~workbench.store.browse`) call it for every value
they hand out; a listing of runs marks a damaged run (``RunInfo.damage``) instead of failing for
the whole project, and a command that needs that run stops with the one line.

Two depths of checking, because a listing must stay cheap: :func:`run_info` decodes one ``runs``
row (what ``workbench runs`` and the window's lists show), :func:`run_problem` also scans the run's
rows in the other tables with SQLite's ``typeof`` (one indexed pass each, in C), and
:func:`build_tokenizer` checks everything a tokenizer is rebuilt from, merge by merge.

Callers fetch rows whole before checking them: a cursor left half-read by a raised DamagedValue
would keep its connection alive (and ``-wal``/``-shm`` beside the file) as long as the error lives.

What it leaves out: the file as a whole (foreign files, schema objects, SQLite's own damage are
:mod:`~workbench.store.opening`'s), and meaning beyond what readers rely on — a valid tokenizer
that was trained badly is not damaged.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
import threading
from typing import Any, Callable, Mapping, Sequence, get_args

from workbench.core.model import ENCODES_AS, ModelKind, Tokenizer
from workbench.core.normalize import NORMALIZERS
from workbench.core.pipeline import Pipeline
from workbench.core.pretokenize import make_pretokenizer
from workbench.core.special_roles import ROLES, TEMPLATES, check_roles
from workbench.core.unigram import PruningCheckpoint
from workbench.errors import DamagedValue, WorkbenchError
from workbench.store import sliced_json
from workbench.store.rows import RUN_STATUSES, CorpusRef, MergeRow, ReferenceInfo, RunInfo, StepRow

MODELS: tuple[str, ...] = get_args(ModelKind) + tuple(ENCODES_AS)  # kinds, and families that train one
KINDS = ("special", "base", "merge")
#: The deepest JSON the workbench writes is 2 levels (settings → scores list); a little room for
#: settings added later, and far below where Python's JSON reader and writer recurse too deep.
MAX_JSON_DEPTH = 8
#: Items of a long list whose types one C call gathers (a ms or less: the GIL is shared between).
_TYPES_PER_PASS = 1 << 14
_NAME_SHOWN = 60
_INTERRUPTED_ERROR = "The training process stopped before finishing (it was killed or crashed)."


def owner_label(kind: str, owner_id: object, name: object) -> str:
    """``run 3 (bpe v1)`` — how every message names the run or reference a value belongs to."""
    shown = display_text(name)
    shown = shown if len(shown) <= _NAME_SHOWN else shown[: _NAME_SHOWN - 1] + "…"
    return f"{kind} {owner_id} ({shown})" if shown else f"{kind} {owner_id}"


def display_text(value: object) -> str:
    """A name or message column as text, whatever was stored (a label is never worth refusing)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


# ---- single values --------------------------------------------------------------------------------

def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def whole(value: object, owner: str, column: str, *, high: int | None = None) -> int:
    """A whole number ``0 <= value`` (``< high`` when given): ids, ranks, counts."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise DamagedValue(owner, column, f"holds {_shown(value)} where a whole number belongs")
    if value < 0:
        raise DamagedValue(owner, column, f"holds {value}, a negative number")
    if high is not None and value >= high:
        shown = str(value) if value < 10**15 else f"{str(value)[:8]}… ({len(str(value))} digits)"
        raise DamagedValue(owner, column, f"holds {shown}, beyond the {high} entries there are")
    return value


def integer(value: object, owner: str, column: str) -> int:
    """A whole number of any sign: a metric plotted as it was stored (a count, a vocabulary size)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise DamagedValue(owner, column, f"holds {_shown(value)} where a whole number belongs")
    return value


def number(value: object, owner: str, column: str) -> float:
    """A number that is not NaN and not +infinity (log probabilities may be -infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DamagedValue(owner, column, f"holds {_shown(value)} where a number belongs")
    value = float(value)
    if math.isnan(value) or value == math.inf:
        raise DamagedValue(owner, column, f"holds {value}, which is not a usable number")
    return value


def optional_number(value: object, owner: str, column: str) -> float | None:
    return None if value is None else number(value, owner, column)


def piece(value: object, owner: str, column: str = "vocab.piece") -> bytes:
    """A vocabulary piece: a BLOB (as the workbench writes it) or TEXT (UTF-8); a number or NULL
    there would become ``bytes(n)`` — n zero bytes — if it were trusted."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    raise DamagedValue(owner, column, f"holds {_shown(value)} where a piece (bytes) belongs")


def shown_piece(value: object) -> bytes | None:
    """A piece for a view of a run that was already checked (``ProjectStore.run_problem``): a value
    that is not a piece reads as missing (``None``), never as ``bytes(n)`` — n zero bytes."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return None


def _depth(value: object) -> int:
    """How deeply ``value`` nests lists and objects (iterative: no recursion to exhaust)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            # like a list's: only the values that nest further (a run's settings are mostly scalars)
            stack.extend((v, level + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            deepest = max(deepest, level)
            # only what nests further: a list of 200,000 numbers is not walked item by item (its
            # types are gathered a slice at a time, as sliced_json parses it: the GIL is shared)
            for at in range(0, len(item), _TYPES_PER_PASS):
                part = item[at:at + _TYPES_PER_PASS]
                if not set(map(type, part)).isdisjoint((dict, list)):
                    stack.extend((v, level + 1) for v in part if isinstance(v, (dict, list)))
    return deepest


def json_value(value: object, owner: str, column: str) -> Any:
    """Parse a JSON column: text, valid JSON, at most :data:`MAX_JSON_DEPTH` levels deep."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise DamagedValue(owner, column, "is not text") from None
    if not isinstance(value, str):
        raise DamagedValue(owner, column, f"holds {_shown(value)} where JSON text belongs")
    try:
        parsed = sliced_json.loads(value)  # a long text in slices: the GIL is shared meanwhile
    except RecursionError:
        raise DamagedValue(owner, column, "is JSON nested far too deeply") from None
    except ValueError:  # JSONDecodeError, or int() refusing thousands of digits
        raise DamagedValue(owner, column, "is not JSON") from None
    if _depth(parsed) > MAX_JSON_DEPTH:
        raise DamagedValue(owner, column, f"is JSON nested more than {MAX_JSON_DEPTH} levels deep")
    return parsed


def json_object(value: object, owner: str, column: str) -> dict[str, Any]:
    parsed = json_value(value, owner, column)
    if not isinstance(parsed, dict):
        raise DamagedValue(owner, column, f"is JSON {type(parsed).__name__}, not an object")
    return parsed


# ---- settings --------------------------------------------------------------------------------------

def _string(value: object) -> bool:
    return isinstance(value, str)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _specials(value: object) -> bool:
    """A run keeps its special tokens as a list of names, a reference as ``{name: id}``."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and k and _count(v) for k, v in value.items())
    return _strings(value)


def _roles(value: object) -> bool:
    """Special-token roles: ``{role: token}`` with known roles and non-empty tokens."""
    return isinstance(value, dict) and all(k in ROLES and isinstance(v, str) and v for k, v in value.items())


def _scores(value: object) -> bool:
    """Numbers (no bool, NaN or +inf), checked by loops in C: a Unigram run keeps one per piece, and
    its settings are read when the project opens (200,000 of them, one by one, took ~0.25 s)."""
    return (isinstance(value, list) and set(map(type, value)) <= {int, float}
            and not any(map(math.isnan, value)) and math.inf not in value)


def _estimate(value: object) -> bool:
    """A run's pre-flight estimate: an object of non-negative numbers (and true/false flags)."""
    return isinstance(value, dict) and all(isinstance(v, bool) or (_real(v) and v >= 0 and v != math.inf)
                                           for v in value.values())


def _optional(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or check(value)


def _one_of(*allowed: str) -> Callable[[object], bool]:
    return lambda value: value in allowed


#: settings key → (check, what it must be). Keys readers use; others need only be shallow JSON.
SETTING_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "model": (_one_of(*MODELS), f"one of {', '.join(MODELS)}"),
    "units": (_one_of("bytes", "chars"), "bytes or chars"),
    "merge_rule": (_one_of("pairs", "bytes"), "pairs or bytes"),
    "pretokenizer": (_string, "text"),
    "normalizer": (lambda v: _strings(v) and all(n in NORMALIZERS or n == "none" for n in v),  # type: ignore[attr-defined]
                   f"a list of normalizer names ({', '.join(sorted(NORMALIZERS))})"),
    "special_tokens": (_specials, "a list of token names"),
    "end_of_word": (_string, "text"),
    "unk_token": (_optional(_string), "text or null"),
    "continuing_prefix": (_string, "text"),
    "max_input_chars_per_word": (_count, "a whole number"),
    "byte_fallback": (lambda v: isinstance(v, bool), "true or false"),
    "pipeline": (lambda v: isinstance(v, dict), "an object (a tokenizer.json's stages)"),
    "scores": (_scores, "a list of numbers"),
    "vocab_size": (_optional(_count), "a whole number"),
    "merges": (_optional(_count), "a whole number"),
    "min_frequency": (_optional(_count), "a whole number"),
    "word_types": (_count, "a whole number"),
    "initial_token_count": (_count, "a whole number"),
    "tie_break": (_optional(_string), "text"),
    "sequences": (_optional(_string), "text"),
    "wordpiece_score": (_optional(_string), "text"),
    "character_coverage": (_real, "a number"),
    "max_piece_length": (_count, "a whole number"),
    "sample_lines": (_optional(_count), "a whole number"),
    "sample_seed": (_count, "a whole number"),
    "sampled_from_lines": (_count, "a whole number"),
    "distinct_pretokens": (_count, "a whole number"),
    "estimate": (_estimate, "an object of numbers"),
    "special_roles": (_roles, f"an object of role ({', '.join(ROLES)}) → token"),
    "template": (_one_of(*TEMPLATES), f"one of {', '.join(TEMPLATES)}"),
}


#: Settings texts already found well-formed, with what they decode to (large ones only: a Unigram
#: run's keeps a score per piece, megabytes whose parse and checks cost ~0.1 s each time a run
#: listing is read — and the window reads listings often).
_CHECKED_SETTINGS: dict[str, dict[str, Any]] = {}
_CHECKED_KEPT = 4  # runs with such settings are few; each kept costs ~2x its text
_CHECKED_MIN_CHARS = 100_000
_CHECKED_LOCK = threading.Lock()


def _copied(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its own copy of each list and object in it (one level: settings are flat)."""
    return {k: list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v for k, v in data.items()}


def settings(value: object, owner: str, column: str = "settings") -> dict[str, Any]:
    """A run's or reference's settings: a JSON object whose known keys have their types.

    A large text checked before is neither parsed nor walked again (the text is the whole input,
    so the same text checks the same): the caller gets a copy of its object and of the lists and
    objects in it, which it may change.
    """
    text = value if isinstance(value, str) and len(value) >= _CHECKED_MIN_CHARS else ""
    known = _CHECKED_SETTINGS.get(text) if text else None
    if known is not None:
        return _copied(known)
    data = json_object(value, owner, column)
    for key, (check, what) in SETTING_TYPES.items():
        if key in data and not check(data[key]):
            raise DamagedValue(owner, column, f"says {key} is {_shown(data[key])}; it must be {what}")
    if text:
        with _CHECKED_LOCK:
            _CHECKED_SETTINGS[text] = _copied(data)
            while len(_CHECKED_SETTINGS) > _CHECKED_KEPT:
                _CHECKED_SETTINGS.pop(next(iter(_CHECKED_SETTINGS)))
    return data


def timings(value: object, owner: str) -> dict[str, float]:
    """How long a run's phases took: a JSON object of numbers of seconds."""
    data = json_object(value, owner, "timings")
    for key, seconds in data.items():
        if not _real(seconds) or seconds < 0:
            unit = "megabytes" if key.endswith("_mb") else "seconds"
            raise DamagedValue(owner, "timings", f"says {key} is {_shown(seconds)}; it must be {unit}")
    return data


def corpus_ids(value: object, owner: str) -> tuple[int, ...]:
    """The ``group_concat`` of a run's ``run_corpora.corpus_id`` rows."""
    if value is None:
        return ()
    ids = []
    for part in display_text(value).split(","):
        if not part.isdigit():  # the digits of a whole number, nothing else
            raise DamagedValue(owner, "run_corpora.corpus_id", f"holds {_shown(part)} where a corpus id belongs")
        ids.append(int(part))
    return tuple(sorted(ids))


# ---- one runs row ------------------------------------------------------------------------------------

def decode_run(row: Sequence, owner_alive: Callable[[Any, Any, Any], bool]) -> RunInfo:
    """Decode one row of ``ProjectStore._RUN_SQL``, or raise DamagedValue for its first bad column."""
    (rid, name, status, raw_settings, vsize, mcount, started, ended, updated, raw_timings, error,
     pid, host, corpora) = row
    owner = owner_label("run", rid, name)
    if status not in RUN_STATUSES:
        raise DamagedValue(owner, "status", f"holds {_shown(status)}; it must be one of {', '.join(RUN_STATUSES)}")
    decoded = settings(raw_settings, owner)
    spent = timings(raw_timings, owner)
    when = number(started, owner, "started")
    end = optional_number(ended, owner, "ended")
    last = optional_number(updated, owner, "updated")
    ids = corpus_ids(corpora, owner)
    if error is not None and not isinstance(error, str):
        raise DamagedValue(owner, "error", f"holds {_shown(error)} where text belongs")
    if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int)):
        raise DamagedValue(owner, "owner_pid", f"holds {_shown(pid)} where a process id belongs")
    if host is not None and not isinstance(host, str):
        raise DamagedValue(owner, "owner_host", f"holds {_shown(host)} where a host name belongs")
    if status == "running" and not owner_alive(pid, host, when):
        status, end, error = "interrupted", end or last, error or _INTERRUPTED_ERROR
    return RunInfo(rid, display_text(name), status, decoded, vsize, mcount, when, end, spent, error, ids)


def run_info(row: Sequence, owner_alive: Callable[[Any, Any, Any], bool]) -> RunInfo:
    """:func:`decode_run`, except that a damaged column leaves the run listed: ``damage`` says
    which column, its settings and timings read as empty and its status as stored (``failed``
    when that is what is damaged)."""
    try:
        return decode_run(row, owner_alive)
    except DamagedValue as exc:
        rid, name, status, _s, vsize, mcount, started, ended, _u, _t, error = row[:11]
        return RunInfo(rid, display_text(name), status if status in RUN_STATUSES else "failed", {}, vsize, mcount,
                       started if _real(started) else 0.0, ended if _real(ended) else None, {},
                       error if isinstance(error, str) else None, (), damage=str(exc))


# ---- a whole run ------------------------------------------------------------------------------------

def tables_problem(conn: sqlite3.Connection, info: RunInfo) -> DamagedValue | None:
    """The first damaged value of a (decoded, undamaged) run in the other tables, or None: its
    vocabulary, merges, steps and pruning checkpoints. Each table is one pass over the run's rows
    in SQLite (``typeof`` and ranges), so a window can ask before it shows the run; the pieces a
    merge joins are checked when a tokenizer is built (:func:`build_tokenizer`)."""
    owner = owner_label("run", info.id, info.name)
    rid = info.id
    found = conn.execute(
        "SELECT id, piece, kind FROM vocab WHERE run_id = ? AND (typeof(id) != 'integer' OR id < 0 "
        "OR typeof(piece) NOT IN ('blob', 'text') OR kind IS NULL OR kind NOT IN ('special', 'base', 'merge')) "
        "LIMIT 1", (rid,)).fetchone()
    try:
        if found is not None:
            tid, value, kind = found
            whole(tid, owner, "vocab.id")
            piece(value, owner, "vocab.piece")
            raise_kind(kind, owner)
    except DamagedValue as exc:
        return exc
    size, low, high = conn.execute("SELECT count(*), min(id), max(id) FROM vocab WHERE run_id = ?", (rid,)).fetchone()
    if size and (low != 0 or high != size - 1):
        return DamagedValue(owner, "vocab.id", f"has gaps ({size} pieces numbered {low} to {high})")
    found = conn.execute(
        "SELECT rank, left_id, right_id, new_id, frequency, vocab_size, token_count, extra FROM merges "
        "WHERE run_id = ?1 AND (typeof(rank) != 'integer' OR rank < 0 "
        "OR typeof(left_id) != 'integer' OR left_id < 0 OR left_id >= ?2 "
        "OR typeof(right_id) != 'integer' OR right_id < 0 OR right_id >= ?2 "
        "OR typeof(new_id) != 'integer' OR new_id < 0 OR new_id >= ?2 "
        "OR typeof(frequency) NOT IN ('integer', 'real') OR typeof(vocab_size) != 'integer' "
        "OR typeof(token_count) != 'integer' OR (extra IS NOT NULL AND (typeof(extra) != 'text' "
        "OR NOT json_valid(extra) OR json_type(extra) != 'object'))) LIMIT 1",
        (rid, size)).fetchone()
    try:
        if found is not None:
            rank, left, right, new, frequency, vsize, tokens, extra = found
            whole(rank, owner, "merges.rank")
            for column, value in (("left_id", left), ("right_id", right), ("new_id", new)):
                whole(value, owner, f"merges.{column}", high=size)
            number(frequency, owner, "merges.frequency")
            integer(vsize, owner, "merges.vocab_size")
            integer(tokens, owner, "merges.token_count")
            step_extra(extra, owner)
        found = conn.execute(
            "SELECT step, phase, vocab_size, token_count, value FROM run_steps WHERE run_id = ? AND "
            "(typeof(step) != 'integer' OR step < 0 OR phase IS NULL OR phase NOT IN ('em', 'prune', 'final', 'merge') "
            "OR typeof(vocab_size) != 'integer' OR typeof(token_count) != 'integer' "
            "OR typeof(value) NOT IN ('integer', 'real', 'null')) LIMIT 1", (rid,)).fetchone()
        if found is not None:
            step_row(found, owner)
        for step, pieces, scores in conn.execute(
                "SELECT step, pieces, scores FROM pruning_checkpoints WHERE run_id = ? ORDER BY step", (rid,)):
            checkpoint(step, pieces, scores, owner)
    except DamagedValue as exc:
        return exc
    return None


def raise_kind(kind: object, owner: str) -> str:
    if kind not in KINDS:
        raise DamagedValue(owner, "vocab.kind", f"holds {_shown(kind)}; it must be one of {', '.join(KINDS)}")
    return str(kind)


def reference_problem(conn: sqlite3.Connection, ref_id: int) -> DamagedValue | None:
    """The first damaged value of an imported reference tokenizer, or None (as :func:`tables_problem`
    for a run: its settings, then one ``typeof`` pass over its vocabulary and its merges)."""
    row = conn.execute("SELECT name, settings FROM refs WHERE id = ?", (ref_id,)).fetchone()
    if row is None:
        return None
    owner = owner_label("reference", ref_id, row[0])
    try:
        settings(row[1], owner)
        found = conn.execute("SELECT id, piece FROM ref_vocab WHERE ref_id = ? AND (typeof(id) != 'integer' "
                             "OR id < 0 OR typeof(piece) NOT IN ('blob', 'text')) LIMIT 1", (ref_id,)).fetchone()
        if found is not None:
            whole(found[0], owner, "ref_vocab.id")
            piece(found[1], owner, "ref_vocab.piece")
        size = conn.execute("SELECT count(*) FROM ref_vocab WHERE ref_id = ?", (ref_id,)).fetchone()[0]
        found = conn.execute(
            "SELECT rank, left_id, right_id, new_id FROM ref_merges WHERE ref_id = ?1 AND ("
            "typeof(rank) != 'integer' OR rank < 0 OR typeof(left_id) != 'integer' OR left_id < 0 OR left_id >= ?2 "
            "OR typeof(right_id) != 'integer' OR right_id < 0 OR right_id >= ?2 "
            "OR typeof(new_id) != 'integer' OR new_id < 0 OR new_id >= ?2) LIMIT 1", (ref_id, size)).fetchone()
        if found is not None:
            whole(found[0], owner, "ref_merges.rank")
            for column, value in zip(("left_id", "right_id", "new_id"), found[1:]):
                whole(value, owner, f"ref_merges.{column}", high=size)
    except DamagedValue as exc:
        return exc
    return None


def step_extra(value: object, owner: str) -> dict[str, Any]:
    """A merges row's ``extra`` metrics: a JSON object (None: none)."""
    return {} if value is None else json_object(value, owner, "merges.extra")


def step(row: Sequence, owner: str) -> StepRow:
    """A merges row as a training step: ``(rank + 1, vocab_size, token_count, frequency, extra)``."""
    number_, vsize, tokens, frequency, extra = row
    return StepRow(whole(number_, owner, "merges.rank"), integer(vsize, owner, "merges.vocab_size"),
                   integer(tokens, owner, "merges.token_count"), _frequency(frequency, owner),
                   step_extra(extra, owner))


def _frequency(value: object, owner: str) -> int:
    """A pair frequency: a number (the writer stores whole numbers; -infinity reads as 0)."""
    count = number(value, owner, "merges.frequency")
    return int(count) if math.isfinite(count) else 0


def merge_row(row: Sequence, owner: str) -> MergeRow:
    """A merge with its three pieces (the columns of ProjectStore.merges' page query)."""
    rank, left, right, new, frequency, left_piece, right_piece, new_piece = row
    return MergeRow(whole(rank, owner, "merges.rank"), whole(left, owner, "merges.left_id"),
                    whole(right, owner, "merges.right_id"), whole(new, owner, "merges.new_id"),
                    _frequency(frequency, owner), piece(left_piece, owner), piece(right_piece, owner),
                    piece(new_piece, owner))


def step_row(row: Sequence, owner: str) -> tuple[int, str, int, int, float | None]:
    """One ``run_steps`` row: ``(step, phase, vocab_size, token_count, value)``, checked."""
    step, phase, vsize, tokens, value = row
    if phase not in ("em", "prune", "final", "merge"):
        raise DamagedValue(owner, "run_steps.phase", f"holds {_shown(phase)}; it must be em, prune, final or merge")
    return (whole(step, owner, "run_steps.step"), phase, integer(vsize, owner, "run_steps.vocab_size"),
            integer(tokens, owner, "run_steps.token_count"), optional_number(value, owner, "run_steps.value"))


def checkpoint(step: object, pieces: object, scores: object, owner: str) -> PruningCheckpoint:
    """One ``pruning_checkpoints`` row: pieces (a list of text) and as many finite-or-−∞ scores."""
    at = whole(step, owner, "pruning_checkpoints.step")
    names = json_value(pieces, owner, "pruning_checkpoints.pieces")
    if not _strings(names):
        raise DamagedValue(owner, "pruning_checkpoints.pieces", f"at step {at} is not a list of pieces")
    values = json_value(scores, owner, "pruning_checkpoints.scores")
    if not _scores(values):
        raise DamagedValue(owner, "pruning_checkpoints.scores", f"at step {at} is not a list of numbers")
    if len(values) != len(names):
        raise DamagedValue(owner, "pruning_checkpoints.scores",
                           f"at step {at} has {len(values)} scores for {len(names)} pieces")
    return PruningCheckpoint(at, tuple(names), tuple(float(x) for x in values))


# ---- a tokenizer ------------------------------------------------------------------------------------

def build_tokenizer(owner: str, name: str, settings_: Mapping[str, Any], pieces: Sequence[tuple],
                    merges: Sequence[tuple], specials: Mapping[str, int] | None = None) -> Tokenizer:
    """A Tokenizer from checked rows: ``pieces`` are ``(id, piece)``, ``merges`` ``(left, right,
    new)`` in rank order, ``settings_`` already decoded by :func:`settings`.

    Every dataclass field found in the settings is passed through (fields added to ``Tokenizer``
    later round-trip without a change here). For runs the special tokens come from the vocabulary
    rows of kind ``special`` (training settings may list them without ids). Checked: dense ids,
    pieces that are bytes, merges whose ids are inside the vocabulary and whose new piece is its two
    parts joined, a pre-tokenizer that compiles, an unknown token that exists, one score per piece
    for a Unigram model.
    """
    vocab = []
    for position, (tid, value) in enumerate(pieces):
        if whole(tid, owner, "vocab.id") != position:
            raise DamagedValue(owner, "vocab.id", f"has gaps ({len(pieces)} pieces, id {tid} at position {position})")
        vocab.append(piece(value, owner))
    size = len(vocab)
    # WordPiece joins a continuation piece without its prefix: "##C" + "##A" makes "##CA".
    prefix = settings_.get("continuing_prefix", "") if settings_.get("model") == "wordpiece" else ""
    drop = prefix.encode("utf-8") if isinstance(prefix, str) else b""
    # Ids a run left unused at the end (PickyBPE's removed tokens that no kept token is made from):
    # no merge makes them and their piece is empty, so the tokenizer never produces them.
    unused = {whole(i, owner, "settings", high=size) for i in settings_.get("unused_ids") or ()}
    # A PickyBPE run merges a pair again when it makes a removed token anew: listed once, at its first rank.
    once = settings_.get("model") in ENCODES_AS
    seen: set[tuple[int, int]] = set()
    checked = []
    for rank, (left, right, new) in enumerate(merges):
        a = whole(left, owner, "merges.left_id", high=size)
        b = whole(right, owner, "merges.right_id", high=size)
        n = whole(new, owner, "merges.new_id", high=size)
        if vocab[n] != vocab[a] + vocab[b].removeprefix(drop):
            raise DamagedValue(owner, "merges.new_id", f"of merge rank {rank} names id {n}, whose piece is not "
                                                       f"the pieces of ids {a} and {b} joined")
        if n in unused or (a, b) in seen:
            continue
        if once:
            seen.add((a, b))
        checked.append((a, b, n))
    for i in unused:
        vocab[i] = b""
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(Tokenizer):
        if f.name in ("vocab", "merges", "name") or f.name not in settings_:
            continue
        value = settings_[f.name]
        kwargs[f.name] = tuple(value) if isinstance(value, list) else value
    if kwargs.get("model") in ENCODES_AS:  # the run's family (PickyBPE) → the kind its tokenizer is
        kwargs["model"] = ENCODES_AS[kwargs["model"]]
    if specials is not None:
        kwargs["special_tokens"] = specials
    elif not isinstance(kwargs.get("special_tokens", {}), dict):
        kwargs.pop("special_tokens")
    for tid in dict(kwargs.get("special_tokens", {})).values():
        whole(tid, owner, "settings", high=size)
    if "pipeline" in kwargs:
        try:
            kwargs["pipeline"] = Pipeline.from_spec(kwargs["pipeline"], "pipeline")
        except WorkbenchError as exc:
            raise DamagedValue(owner, "settings", f"holds an unusable pipeline ({str(exc)[:120]})") from None
    if kwargs.get("unk_token") == "":
        kwargs["unk_token"] = None
    unk = kwargs.get("unk_token")
    if unk is not None and unk not in kwargs.get("special_tokens", {}) and unk.encode("utf-8") not in vocab:
        raise DamagedValue(owner, "settings", f"names the unknown token {_shown(unk)}, which is not in the vocabulary")
    try:
        check_roles(kwargs.get("special_roles", {}), kwargs.get("template", "none"),
                    list(kwargs.get("special_tokens", {})))
    except WorkbenchError as exc:
        raise DamagedValue(owner, "settings", f"has special roles that do not fit its tokens ({exc})") from None
    if kwargs.get("model") == "unigram" and len(kwargs.get("scores", ())) != size:
        raise DamagedValue(owner, "settings", f"has {len(kwargs.get('scores', ()))} scores for {size} pieces "
                                               "(a Unigram model needs one per piece)")
    try:
        make_pretokenizer(kwargs.get("pretokenizer", "gpt2"))
    except WorkbenchError as exc:
        raise DamagedValue(owner, "settings", f"names an unusable pre-tokenizer ({str(exc)[:120]})") from None
    return Tokenizer(vocab=tuple(vocab), merges=tuple(checked), name=name, **kwargs)


# ---- other tables ---------------------------------------------------------------------------------

def corpus_ref(row: Sequence) -> CorpusRef:
    """A ``corpora`` row: the file a run read (the text itself stays where it is)."""
    cid, path, size, mtime, fingerprint, options, added = row
    owner = owner_label("corpus file", cid, path)
    if not isinstance(path, str) or not isinstance(fingerprint, str):
        raise DamagedValue(owner, "path" if not isinstance(path, str) else "fingerprint", "is not text")
    return CorpusRef(cid, path, whole(size, owner, "size"), number(mtime, owner, "mtime"), fingerprint,
                     json_object(options, owner, "reader_options"), number(added, owner, "added"))


def reference_info(row: Sequence) -> ReferenceInfo:
    """A ``refs`` row with its counts; names are labels, shown whatever they hold."""
    rid, name, fmt, source_path, sha256, vocab_size, merge_count, added = row
    return ReferenceInfo(rid, display_text(name), display_text(fmt), display_text(source_path),
                         display_text(sha256), vocab_size, merge_count, added if _real(added) else 0.0)
