"""Tokens as text a person can read: the one piece renderer, whitespace glyphs, hex, id parsing.

Every place that shows a piece renders it with :func:`piece_text` — the CLI's ``encode --json``
``tokens``, the inspector (hover, decode box), the merge browser (tables, detail, ancestry) and the
browser's CSV exports — so one token reads the same everywhere. The rules, applied per character
of the piece's UTF-8 decoding (bytes that are not part of a whole character stay bytes):

=============================================  ==========================  =====================
what the piece holds                           shown as                    example
=============================================  ==========================  =====================
printable characters (letters, marks, emoji,   themselves                  ``é`` ``中`` ``👍🏽``
symbols, ``␣`` unless ``visible_space``)
a space U+0020                                 itself, or ``␣`` with       ``" the"`` / ``␣the``
                                               ``visible_space=True``
a literal ``␣`` with ``visible_space=True``    ``\\u2423``                  (so ``␣`` means space)
line feed, tab, carriage return, backslash     ``\\n`` ``\\t`` ``\\r`` ``\\\\``
other C0 controls, DEL (Cc below U+0080)       ``\\xNN``                    NUL → ``\\x00``
C1 controls, format characters (Cf: ZWSP,      ``\\uNNNN`` / ``\\UNNNNNNNN``  ``\\u200b`` ``\\ufeff``
ZWJ, BOM, bidi marks, tags), line/paragraph
separators (Zl, Zp), spaces other than U+0020
(Zs: NBSP, ideographic space), private use
(Co) and unassigned code points (Cn)
a byte that is not part of a whole UTF-8       ``\\xNN`` (always ≥ 80)      ``b"\\xe4"`` → ``\\xe4``
character (a split character, an encoded
surrogate, an overlong form)
a combining mark at the start of the piece     on a dotted circle ``◌``    ``◌́``; a literal
                                                                           leading ``◌`` → ``\\u25cc``
=============================================  ==========================  =====================

Why these choices: ``\\xNN`` below U+0080 is both the byte and the character, so it is never
ambiguous, and a C1 control (valid UTF-8 ``c2 80``…) reads ``\\u0080`` so that ``\\x80`` always means
a stray byte. Private use and unassigned characters draw as nothing or as a box in most fonts, so
they are named rather than drawn. Surrogates cannot occur: Python's strict UTF-8 decoder refuses
encoded surrogates, so their bytes show as ``\\xed\\xa0\\x80``. The rendering maps back to exactly one
byte string (a backslash is always doubled), which is what makes a piece searchable and quotable.

Left out: unassigned code points follow the ``unicodedata`` of the running Python; default
ignorable letters such as U+115F (category Lo) are drawn, not escaped; machine-read files use
their own cell rule (:mod:`workbench.formats.merges_csv`), not this one; colours and widgets.
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
VISIBLE_SPACE = "\u2423"  # ␣
DOTTED_CIRCLE = "\u25cc"  # ◌, the base Unicode charts draw a lone combining mark on

# ---- the piece renderer ----------------------------------------------------------------------------
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}
# Unicode categories shown as escapes (see the table above). Cs is listed for completeness only.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})


def _escape_code(code: int) -> str:
    # \xNN only below 0x80, so it never looks like a stray byte of a split character.
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@lru_cache(maxsize=65536)
def piece_text(piece: bytes, *, visible_space: bool = False) -> str:
    """A piece for display, by the rules in the module docstring.

    ``b" the\\x00\\xe4"`` → ``" the\\\\x00\\\\xe4"``, or ``"␣the\\\\x00\\\\xe4"`` with ``visible_space``
    (the merge browser, whose cells would otherwise hide a leading space; the inspector's editor
    draws whitespace glyphs itself and its hover shows the plain space inside quotes).
    """
    data = bytes(piece)
    if data.isascii() and data.isalnum():
        return data.decode("ascii")  # the common case, no scan
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        # str.isprintable() is False exactly for the _INVISIBLE categories (the space excepted):
        # a piece with nothing to escape needs no per-character loop (25x faster on cl100k).
        lead = text[:1]
        if text.isprintable() and "\\" not in text and lead != DOTTED_CIRCLE \
                and not (lead and unicodedata.category(lead)[0] == "M"):
            if not visible_space:
                return text
            if VISIBLE_SPACE not in text:
                return text.replace(" ", VISIBLE_SPACE)
    out = []
    for k, ch in enumerate(data.decode("utf-8", "surrogateescape")):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for a byte that is not UTF-8 here
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == " ":
            out.append(VISIBLE_SPACE if visible_space else " ")
        elif ch == VISIBLE_SPACE and visible_space:
            out.append(_escape_code(code))
        elif k == 0 and ch == DOTTED_CIRCLE:
            out.append(_escape_code(code))  # keeps "◌" + mark meaning "a leading mark" only
        else:
            category = unicodedata.category(ch)
            if category in _INVISIBLE:
                out.append(_escape_code(code))
            elif k == 0 and category[0] == "M":
                out.append(DOTTED_CIRCLE + ch)
            else:
                out.append(ch)
    return "".join(out)


def piece_chars(piece: bytes) -> int:
    """Characters of a piece: whole UTF-8 characters plus one per stray byte."""
    return len(bytes(piece).decode("utf-8", "surrogateescape"))


def piece_hex(piece: bytes) -> str:
    """``b"\\x00\\xff"`` → ``"00 ff"``: the exact bytes beside the rendered text."""
    return " ".join(f"{b:02x}" for b in bytes(piece))


def show_whitespace(text: str) -> str:
    """``⋅`` for a space, ``→`` for a tab, ``↵`` for a line break (``\\r\\n`` is one break)."""
    text = text.replace("\r\n", "\n")
    return "".join(WHITESPACE_GLYPHS.get(ch, ch) for ch in text)


@dataclass(frozen=True)
class TokenInfo:
    """What hovering a token explains."""

    id: int
    piece: str  # rendered by piece_text (plain spaces)
    hex: str
    kind: str  # special / base / merge
    rank: int | None = None  # merge rank (0-based) for merge-made tokens
    left: tuple[int, str] | None = None  # (id, rendered piece) of the pair it was merged from
    right: tuple[int, str] | None = None
    frequency: int | None = None  # the pair's count when it was merged (runs only)
    # Unigram: the piece's log probability (natural log), labelled "log p". WordPiece: the score
    # its merge won with, labelled "score" (a likelihood ratio or a pair frequency: the run's
    # ``wordpiece_score`` setting says which; the tokenizer itself does not know).
    score: float | None = None
    model: str = ""  # the tokenizer's model family (what ``score`` means)

    @property
    def score_label(self) -> str:
        return "score" if self.model == "wordpiece" else "log p"


def token_info(tokenizer: Tokenizer, token_id: int, frequencies: Sequence[int] | None = None) -> TokenInfo:
    """What hovering ``token_id`` explains.

    A score is given for a Unigram piece (not a special) and for a WordPiece id made by a merge,
    when the tokenizer carries per-id scores: a WordPiece base symbol or special stores 0.0, which
    is no score it won, so none is shown (an imported WordPiece vocabulary has no scores at all).
    """
    raw = tokenizer.vocab[token_id]
    kind = tokenizer.kind(token_id)
    merged = tokenizer.merge_of_id.get(token_id)
    model = tokenizer.model
    if merged is None:
        score = None
        if model == "unigram" and kind != "special" and token_id < len(tokenizer.scores):
            score = tokenizer.scores[token_id]
        return TokenInfo(token_id, piece_text(raw), piece_hex(raw), kind, score=score, model=model)
    rank, left, right = merged
    freq = frequencies[rank] if frequencies is not None and rank < len(frequencies) else None
    score = None
    if model == "wordpiece" and token_id < len(tokenizer.scores):
        score = tokenizer.scores[token_id]
    return TokenInfo(token_id, piece_text(raw), piece_hex(raw), kind, rank,
                     (left, piece_text(tokenizer.vocab[left])), (right, piece_text(tokenizer.vocab[right])),
                     freq, score, model)


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
