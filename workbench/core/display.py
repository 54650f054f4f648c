"""Tokens as text a person can read: the one piece renderer, whitespace glyphs, hex, id parsing.

Every place that shows a piece (the CLI's JSON, the inspector, the merge browser, CSV tables) renders
it here, so they agree. Left out: colours and widgets.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

# ---- display constants ---------------------------------------------------------------------------
WHITESPACE_GLYPHS = {" ": "⋅", "\t": "→", "\n": "↵", "\r": "␍"}


# ---- text for people --------------------------------------------------------------------------------
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "\x00": "\\0"}


def escape_piece(raw: bytes) -> str:
    """A piece as readable text: control, format and odd space characters as ``\\n``, ``\\u200d``;
    bytes that are not UTF-8 on their own as ``\\xNN``; a leading combining mark on ``◌``."""
    text = raw.decode("utf-8", "surrogateescape")
    out = []
    for k, ch in enumerate(text):
        if "\udc80" <= ch <= "\udcff":  # a byte that is not UTF-8 on its own
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
            continue
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
            continue
        cat = unicodedata.category(ch)
        if cat[0] == "C" or (cat[0] == "Z" and ch != " "):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        elif k == 0 and cat[0] == "M":
            out.append("◌" + ch)
        else:
            out.append(ch)
    return "".join(out)


def show_whitespace(text: str) -> str:
    """``⋅`` for a space, ``→`` for a tab, ``↵`` for a line break (``\\r\\n`` is one break)."""
    text = text.replace("\r\n", "\n")
    return "".join(WHITESPACE_GLYPHS.get(ch, ch) for ch in text)


def hex_bytes(raw: bytes) -> str:
    return " ".join(f"{b:02x}" for b in raw)


@dataclass(frozen=True)
class TokenInfo:
    """What hovering a token explains."""

    id: int
    piece: str  # escaped, see escape_piece
    hex: str
    kind: str  # special / base / merge
    rank: int | None = None  # merge rank (0-based) for merge-made tokens
    left: tuple[int, str] | None = None  # (id, escaped piece) of the pair it was merged from
    right: tuple[int, str] | None = None
    frequency: int | None = None  # the pair's count when it was merged (runs only)


def token_info(tokenizer: Tokenizer, token_id: int, frequencies: Sequence[int] | None = None) -> TokenInfo:
    raw = tokenizer.vocab[token_id]
    kind = tokenizer.kind(token_id)
    merged = tokenizer.merge_of_id.get(token_id)
    if merged is None:
        return TokenInfo(token_id, escape_piece(raw), hex_bytes(raw), kind)
    rank, left, right = merged
    freq = frequencies[rank] if frequencies is not None and rank < len(frequencies) else None
    return TokenInfo(token_id, escape_piece(raw), hex_bytes(raw), kind, rank,
                     (left, escape_piece(tokenizer.vocab[left])), (right, escape_piece(tokenizer.vocab[right])),
                     freq)


# ---- pasted ids -----------------------------------------------------------------------------------
_SEPARATORS = re.compile(r"[\s,;]+")


# No vocabulary has ids of more than 18 digits; longer numbers are refused before int() sees them.
MAX_ID_DIGITS = 18


def parse_ids(text: str) -> list[int]:
    """Ids from ``1, 2 3`` or ``[1, 2, 3]``; a bad item raises WorkbenchError naming it."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("[") or text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WorkbenchError(f"not a valid JSON list of ids ({exc.msg} at character {exc.pos + 1})") from None
        except (ValueError, RecursionError):  # a number of thousands of digits, or deep nesting
            raise WorkbenchError("not a list of ids: a number is too long or the list is nested too deeply") from None
        if isinstance(value, dict) and isinstance(value.get("ids"), list):
            value = value["ids"]  # `workbench encode --json` output pasted whole
        if not isinstance(value, list):
            raise WorkbenchError("expected a JSON list of ids such as [15339, 1917]")
        items = value
    else:
        items = [item for item in _SEPARATORS.split(text) if item]
    ids = []
    for position, item in enumerate(items, start=1):
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise WorkbenchError(f"item {position} ({json.dumps(item)}) is not an id: ids are whole numbers")
        if isinstance(item, str):
            stripped = item.strip()
            if not re.fullmatch(r"-?\d+", stripped):
                shown = stripped if len(stripped) <= 20 else stripped[:20] + "…"
                raise WorkbenchError(f"item {position} ({shown!r}) is not an id: ids are whole numbers")
            if len(stripped.lstrip("-0")) > MAX_ID_DIGITS:  # int() refuses 4,300+ digits with a traceback
                raise WorkbenchError(f"item {position} ({stripped[:20]}…, {len(stripped)} digits) is far too large "
                                     "to be an id")
            item = int(stripped)
        elif item >= 10 ** MAX_ID_DIGITS:
            raise WorkbenchError(f"item {position} ({str(item)[:20]}…) is far too large to be an id")
        if item < 0:
            raise WorkbenchError(f"item {position} ({item}) is negative: ids start at 0")
        ids.append(item)
    return ids


def decode_ids(encoder: Encoder, ids: Sequence[int]) -> str:
    """The text of ``ids``; an unknown id raises WorkbenchError naming it and its position."""
    size = len(encoder.tok.vocab)
    for position, token_id in enumerate(ids, start=1):
        try:
            encoder.decode_bytes([token_id])
        except WorkbenchError:
            raise WorkbenchError(f"item {position}: id {token_id} is not in this tokenizer's vocabulary "
                                 f"(valid ids: 0 to {size - 1})") from None
    return encoder.decode(ids)


VISIBLE_SPACE = "\u2423"  # ␣


_VISIBLE_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", " ": VISIBLE_SPACE,
            VISIBLE_SPACE: "\\u2423", "\x0b": "\\v", "\x0c": "\\f"}


# Unicode categories shown as escapes: controls, format characters (zero-width joiners, BOM),
# separators other than the plain space, surrogates, private use and unassigned code points.
_INVISIBLE = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Co", "Cn"})


@lru_cache(maxsize=65536)
def piece_text(piece: bytes) -> str:
    """A piece for display: ``b" the\\n"`` → ``"␣the\\\\n"``, ``b"\\xe4\\xb8"`` → ``"\\\\xe4\\\\xb8"``.

    Every byte stays visible and distinguishable: a literal backslash reads ``\\\\``, a literal ``␣``
    reads ``\\u2423``, so the text maps back to exactly one byte string.
    """
    data = bytes(piece)
    if data.isascii() and data.isalnum():
        return data.decode("ascii")  # the common case, no scan
    out = []
    for ch in data.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not part of a whole UTF-8 character
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in _VISIBLE_ESCAPES:
            out.append(_VISIBLE_ESCAPES[ch])
        elif unicodedata.category(ch) in _INVISIBLE:
            # \xNN only below 0x80, so it never looks like a stray byte of a split character.
            out.append(f"\\x{code:02x}" if code < 0x80 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def piece_chars(piece: bytes) -> int:
    """Characters of a piece: whole UTF-8 characters plus one per stray byte."""
    return len(bytes(piece).decode("utf-8", "surrogateescape"))


def piece_hex(piece: bytes) -> str:
    return " ".join(f"{b:02x}" for b in bytes(piece))


def csv_piece(piece: bytes | None) -> str:
    """Pieces in CSV files, as ``workbench export --format merges-csv`` writes them."""
    return "" if piece is None else bytes(piece).decode("utf-8", "backslashreplace")
