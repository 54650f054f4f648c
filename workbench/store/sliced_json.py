"""JSON text parsed a slice at a time, so the thread parsing it lets the others run in between.

Why: a Unigram run keeps one score per piece in its ``settings`` (200,000 numbers, 2 MB of text).
``json.loads`` parses that in one C call with the GIL held — ~25 ms on an idle machine, 200 ms on a
loaded one — and a worker reading the run (the Merges tab's check, the inspector, the usage count)
holds up the window's thread for all of it: every paint and every ``data`` call needs the GIL
(issue 26: the window never stands still longer than a frame). Here the outer structure is read by
the standard library's pure-Python scanner and every long array of plain numbers is handed to the
C parser :data:`SLICE` characters at a time, cut at commas; the thread can be switched out between
slices. Texts shorter than :data:`SHORT` go to ``json.loads`` whole (a millisecond or less).

The pure-Python scanner and ``JSONArray`` are the standard library's own fallbacks (undocumented
names, the same since Python 2.7; typeshed leaves them out). Same values and same refusals as
``json.loads`` (``ValueError`` for text that is not JSON, ``RecursionError`` for nesting too deep
for the pure-Python scanner — a few hundred levels — which the validating layer reports as it
reports the C parser's). What it leaves out: long arrays of
anything but numbers, ``null``, ``NaN`` and ``Infinity`` are parsed element by element in Python
(correct, slower; the workbench does not write such arrays in columns read while the window is up).
"""

from __future__ import annotations

import json
import re
from json.decoder import JSONArray, JSONDecodeError  # type: ignore[attr-defined]
from json.scanner import py_make_scanner  # type: ignore[attr-defined]
from typing import Any, Callable

__all__ = ["SHORT", "SLICE", "loads"]

#: Texts shorter than this are parsed by one ``json.loads``.
SHORT = 1 << 18
#: Characters of a number array parsed per call of the C parser (~3,000 numbers, well under a ms).
SLICE = 1 << 16
#: What a JSON array of numbers may hold besides its closing bracket: digits, signs, points,
#: exponents, commas, white space, and the letters of null, NaN and Infinity.
_NOT_IN_NUMBERS = re.compile(r"[^0-9eE+\-.,\s nulNaIfity]")


def loads(text: str) -> Any:
    """``json.loads(text)``, in slices when the text is long (see the module doc)."""
    if len(text) < SHORT:
        return json.loads(text)
    return _SlicedDecoder().decode(text)


class _SlicedDecoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__()
        self.parse_array = _parse_array
        self.scan_once = py_make_scanner(self)


def _numbers_end(s: str, start: int) -> int | None:
    """Where the array whose elements begin at ``start`` closes, if everything up to there can
    only be numbers (else None: it holds strings, objects or arrays)."""
    at = start
    while at < len(s):
        found = _NOT_IN_NUMBERS.search(s, at, min(len(s), at + SLICE))
        if found is not None:
            return found.start() if s[found.start()] == "]" else None
        at += SLICE
    return None


def _parse_array(s_and_end: tuple[str, int], scan_once: Callable[..., Any], *args: Any) -> tuple[list, int]:
    s, start = s_and_end
    close = _numbers_end(s, start)
    if close is None or close - start < SLICE:
        return JSONArray(s_and_end, scan_once, *args)
    values: list = []
    at = start
    while True:
        cut = s.find(",", min(close, at + SLICE), close) if at + SLICE < close else -1
        end = close if cut < 0 else cut
        part = json.loads("[" + s[at:end] + "]")
        if len(part) == 0:  # "[1,,2]" or "[1,2,]": refused as json.loads refuses it
            raise JSONDecodeError("Expecting value", s, end)
        values.extend(part)
        if cut < 0:
            return values, close + 1
        at = cut + 1
