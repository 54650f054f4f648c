"""Pick the text out of structured records: a JSONL field, a CSV/TSV/Parquet column, a count line.

Kept apart from the readers because the same rules run twice: once on the first record when a
file is added (so a wrong ``field=`` fails immediately, listing what *is* there), and again on every
record while streaming (so a bad line deep in the file still names its line number).
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from workbench.errors import BadRecord, WorkbenchError

DEFAULT_TEXT_NAMES = ("text", "content", "body")
PARQUET_HINT = 'pip install "tokenizer-workbench[parquet]"'
_MISSING = object()


def lookup_field(record: Any, field: str) -> Any:
    """``record[field]``, where ``a.b.c`` walks nested objects (and list indexes); _MISSING if absent.

    A literal top-level key containing dots wins over the nested reading.
    """
    if isinstance(record, dict) and field in record:
        return record[field]
    current = record
    for part in field.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def _keys_hint(record: Any) -> str:
    if isinstance(record, dict):
        keys = ", ".join(str(k) for k in list(record)[:12])
        return f"fields: {keys}" if keys else "the object is empty"
    return f"the line is a JSON {type(record).__name__}, not an object"


def parse_json_line(line: str, where: str) -> Any:
    """One JSONL record; a line that is not JSON is an error naming ``where`` (file:line)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        # json's messages end in "at" or name a character ("Invalid control character at"): the
        # column finishes the sentence, or the reason reads as if it were cut off.
        at = exc.msg if exc.msg.endswith(" at") else exc.msg + " at"
        raise BadRecord(f"{where}: not valid JSON ({at} column {exc.colno}): fix the line or remove it") from None
    except RecursionError:  # json recurses once per level: 100,000 nested brackets overflow it
        raise BadRecord(f"{where}: JSON nested too deeply to read: fix the line or remove it") from None
    except ValueError:  # a number of more than 4,300 digits, which int() refuses
        raise BadRecord(f"{where}: a JSON number is too long to read: fix the line or remove it") from None


def choose_field(record: Any, field: str | None, where: str) -> str | None:
    """Resolve the JSONL field on the first record: the one asked for, or text/content/body.

    Returns None when records are bare JSON strings (each line *is* the document).
    """
    if field:
        if lookup_field(record, field) is _MISSING:
            raise WorkbenchError(f"{where}: no field {field!r} ({_keys_hint(record)}): choose the field that holds the text")
        return field
    if isinstance(record, str):
        return None
    if isinstance(record, dict):
        for name in DEFAULT_TEXT_NAMES:
            if isinstance(record.get(name), str):
                return name
        strings = [k for k, v in record.items() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    raise WorkbenchError(f"{where}: which field holds the text? ({_keys_hint(record)}): choose the field")


def field_text(record: Any, field: str | None, where: str) -> str:
    """The document text of one JSONL record, or a file:line error saying what is wrong."""
    if field is None:
        if isinstance(record, str):
            return record
        raise WorkbenchError(f"{where}: expected a JSON string like the first line ({_keys_hint(record)}): fix the line")
    value = lookup_field(record, field)
    if value is _MISSING:
        raise WorkbenchError(f"{where}: no field {field!r} ({_keys_hint(record)}): fix the line or choose another field")
    if not isinstance(value, str):
        kind = "null" if value is None else type(value).__name__
        raise WorkbenchError(f"{where}: field {field!r} is {kind}, not text: fix the line or choose another field")
    return value


def choose_column(header: Sequence[str], column: str | int | None, where: str) -> int:
    """Index of the text column: by name, by 0-based index, or the text/content/body/only column."""
    names = ", ".join(header) if header else "none"
    if isinstance(column, int) and not isinstance(column, bool):
        if 0 <= column < len(header):
            return column
        raise WorkbenchError(f"{where}: no column {column} (0-based; the file has {len(header)}: {names}): choose another column")
    if isinstance(column, str) and column:
        if column in header:
            return list(header).index(column)
        lowered = [h.strip().lower() for h in header]
        if column.strip().lower() in lowered:
            return lowered.index(column.strip().lower())
        if column.isdigit():
            return choose_column(header, int(column), where)
        raise WorkbenchError(f"{where}: no column {column!r} (columns: {names}): choose one of these")
    lowered = [h.strip().lower() for h in header]
    for name in DEFAULT_TEXT_NAMES:
        if name in lowered:
            return lowered.index(name)
    if len(header) == 1:
        return 0
    raise WorkbenchError(f"{where}: which column holds the text? (columns: {names}): choose the column")


# Counts are summed over words and files and stored as SQLite 64-bit integers: 10**12 per word
# (a thousand billion occurrences) leaves room for a million such words below 2**63.
MAX_WORD_COUNT = 10**12


def parse_count_line(line: str, where: str) -> tuple[str, int]:
    """``word<TAB>count`` → ``(word, count)``; the word is kept exactly (leading spaces matter)."""
    word, tab, count_text = line.rpartition("\t")
    if not tab:
        raise WorkbenchError(f"{where}: expected word<TAB>count, found no tab: fix the line")
    count_text = count_text.strip()
    if not count_text.isascii() or not count_text.isdigit():
        raise WorkbenchError(f"{where}: count {count_text!r} is not a whole number >= 0: fix the line")
    if not word:
        raise WorkbenchError(f"{where}: the word is empty: fix or remove the line")
    if len(count_text.lstrip("0")) > len(str(MAX_WORD_COUNT)) or int(count_text) > MAX_WORD_COUNT:
        raise WorkbenchError(f"{where}: count {count_text[:24]}{'…' if len(count_text) > 24 else ''} is larger "
                             f"than any corpus holds (at most {MAX_WORD_COUNT:.0e}): fix the line")
    return word, int(count_text)


def is_count_header(line: str) -> bool:
    """A first line like ``word<TAB>count`` (DuckDB/Spark ``header=true``) is skipped, not an error."""
    _word, tab, count_text = line.rpartition("\t")
    return bool(tab) and count_text.strip().lower() in {"count", "counts", "freq", "frequency", "n", "cnt"}


def import_parquet(path: object) -> Any:
    """``pyarrow.parquet``, imported only when a .parquet file is actually read."""
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 - optional dependency, imported lazily
    except ImportError:
        raise WorkbenchError(f"{path}: reading .parquet files needs pyarrow: {PARQUET_HINT}") from None
    return pq


# --- workbench counts tables (``workbench count``) ------------------------------------------------
# Line 1 is ``# workbench-counts v1 {json settings}``; then one ``word<TAB>count`` per line with the
# word escaped so that any pre-token survives a line-based reader: backslash, tab, CR, LF and every
# other character that some reader treats as a line end or that is not printable in a TSV (C0/C1
# controls, U+2028/U+2029, lone surrogates) is written as ``\\``, ``\t``, ``\n``, ``\r``,
# ``\xNN``, ``\uNNNN``. Plain tables without the header (Spark, DuckDB) are read as they are.
COUNTS_HEADER = "# workbench-counts v1 "
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
_NEEDS_ESCAPE = re.compile("[\\\\\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff]")
_ESCAPED = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|(.))", re.DOTALL)


def _escape_char(match: re.Match) -> str:
    ch = match.group()
    fixed = _ESCAPES.get(ch)
    if fixed is not None:
        return fixed
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def escape_count_word(word: str) -> str:
    """The word as one TSV field that no line-based reader splits (see the format note above)."""
    return _NEEDS_ESCAPE.sub(_escape_char, word) if _NEEDS_ESCAPE.search(word) else word


def _unescape_char(match: re.Match, where: str) -> str:
    hex2, hex4, single = match.groups()
    if hex2 or hex4:
        return chr(int(hex2 or hex4, 16))
    if single in _UNESCAPES:
        return _UNESCAPES[single]
    raise WorkbenchError(f"{where}: unknown escape \\{single} in the word: write a backslash as \\\\")


def unescape_count_word(word: str, where: str) -> str:
    """Inverse of :func:`escape_count_word`; a stray backslash is an error naming ``where``."""
    if "\\" not in word:
        return word
    return _ESCAPED.sub(lambda m: _unescape_char(m, where), word)


def parse_counts_header(line: str, where: str) -> dict | None:
    """The settings of a workbench counts table from its first line, or None for a plain table."""
    if not line.startswith(COUNTS_HEADER):
        return None
    try:
        settings = json.loads(line[len(COUNTS_HEADER):])
    except json.JSONDecodeError as exc:
        raise WorkbenchError(f"{where}: the counts header is not valid JSON ({exc.msg}): "
                             "regenerate the table with workbench count") from None
    if not isinstance(settings, dict):
        raise WorkbenchError(f"{where}: the counts header holds no settings object: regenerate the table")
    return settings
