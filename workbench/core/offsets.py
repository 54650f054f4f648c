"""Where each token sits in the text: per-pre-token cached spans, offsets moved back onto the original
text when the normalizer changed it, and display groups.

* :class:`SpanEncoder` — an :class:`~workbench.core.encoder.Encoder` that caches each pre-token's
  token offsets; its spans are exactly ``Encoder.encode_with_offsets``'s (tests hold it to that).
* :func:`offset_map` / :func:`remap_spans` — offsets computed on normalized text (NFKC, lowercase …)
  moved back onto the text the user typed.
* :func:`utf16_table` — code points ↔ UTF-16 positions (Qt's), for the editor.
* :func:`group_tokens` — tokens holding part of a character are grouped until whole characters
  decode (the tiktokenizer rule), optionally until whole grapheme clusters (emoji sequences, flags,
  accents), which a renderer cannot draw in several colours.

Left out: colours and layout (:mod:`workbench.tasks.inspection`), anything that draws.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import accumulate
from typing import Callable, Iterable, NamedTuple, Sequence

import regex

from workbench.core.encoder import EncodedToken, Encoder
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def utf16_table(text: str) -> list[int] | None:
    """The UTF-16 column (Qt's unit of position) of each code point of ``text`` and of its end, or
    ``None`` when the two counts agree (no astral character, the common case, costs no table).

    The one conversion between Python's code points and Qt's positions; ``table[-1]`` is the
    text's UTF-16 length.
    """
    if not ASTRAL.search(text):
        return None
    return list(accumulate((2 if ord(ch) > 0xFFFF else 1 for ch in text), initial=0))


UNKNOWN_ID = -1  # the id shown for a piece this vocabulary cannot encode

# ---- encoding with cached spans ----------------------------------------------------------------
Span = tuple  # (id, start, end, partial): one token, code points of the text it was computed on


class SpanEncoder(Encoder):
    """An Encoder that remembers each pre-token's token offsets (relative to the pre-token).

    Natural text repeats its pieces, and a keystroke changes only a few, so after the first pass
    colouring a 100 KB text is a dictionary lookup per piece. :meth:`spans` returns the same
    offsets as :meth:`Encoder.encode_with_offsets`, as plain tuples (cheaper than dataclasses).
    """

    _SPAN_CACHE_LIMIT = 300_000

    def __init__(self, tokenizer: Tokenizer, **kwargs):
        super().__init__(tokenizer, **kwargs)
        self.max_merges: int | None = kwargs.get("max_merges")
        self._span_cache: dict[str, tuple[tuple[int, int, int, bool], ...]] = {}

    def normalized(self, text: str) -> str:
        return self._normalize(text) if self._normalize is not None else text

    def spans(self, text: str, *, allow_special: bool = False, normalized: bool = False) -> list[Span]:
        """``(id, start, end, partial)`` per token; code points of the normalized text."""
        if not normalized:
            text = self.normalized(text)
        out: list[Span] = []
        append = out.append
        cache = self._span_cache
        for seg_start, seg_end, special in self.special_segments(text, allow_special):
            if special is not None:
                append((special, seg_start, seg_end, False))
                continue
            if seg_end <= seg_start:
                continue
            segment = text[seg_start:seg_end]
            for a, b in self._pre.spans(segment):
                piece = segment[a:b]
                rel = cache.get(piece)
                if rel is None:
                    rel = self.piece_spans(piece)
                base = seg_start + a
                if len(rel) == 1:
                    token_id, s, e, p = rel[0]
                    append((token_id, base + s, base + e, p))
                else:
                    for token_id, s, e, p in rel:
                        append((token_id, base + s, base + e, p))
        return out

    def piece_spans(self, piece: str) -> tuple[tuple[int, int, int, bool], ...]:
        """The tokens of one pre-token with offsets relative to it (cached).

        A piece the vocabulary cannot encode (a character-level vocabulary without an unknown
        token meeting a new character) becomes one pseudo-token with id :data:`UNKNOWN_ID`, so
        the rest of the text still shows; :meth:`Encoder.encode` raises for it instead.
        """
        rel = self._span_cache.get(piece)
        if rel is None:
            try:
                ids = self._cache.get(piece) or self._encode_piece(piece)
            except WorkbenchError:
                rel = ((UNKNOWN_ID, 0, len(piece), False),)
            else:
                rel = tuple((t.id, t.start, t.end, t.partial) for t in self._offsets_in_piece(piece, ids, 0))
            if len(self._span_cache) < self._SPAN_CACHE_LIMIT:
                self._span_cache[piece] = rel
        return rel


# ---- normalization: offsets in the normalized text → offsets in the original ---------------------
_SPACE_CHUNK = re.compile(r"\S+|\s+")


def offset_map(text: str, normalized: str, normalize: Callable[[str], str]) -> tuple[list[int], list[int]] | None:
    """Where each character of ``normalized`` came from in ``text``; ``None`` when unchanged.

    Returns ``(starts, ends)``: normalized character ``p`` comes from ``text[starts[p]:ends[p]]``.
    Found by normalizing the text piece by piece (whitespace-separated chunks, then characters
    with their combining marks) and checking that the pieces add up to the whole; where a
    normalizer reaches across pieces, the whole chunk (or the whole text) is the source.
    """
    if normalized == text:
        return None
    starts: list[int] = []
    ends: list[int] = []
    chunks = [m.group() for m in _SPACE_CHUNK.finditer(text) if m.group()]
    normed = [normalize(c) for c in chunks]
    if "".join(normed) != normalized:
        aligned = _align_words(text, normalized, chunks, normalize)
        return aligned or ([0] * len(normalized), [len(text)] * len(normalized))
    pos = 0
    for chunk, out in zip(chunks, normed):
        if out == chunk:
            starts.extend(range(pos, pos + len(chunk)))
            ends.extend(range(pos + 1, pos + len(chunk) + 1))
        else:
            _map_chunk(chunk, out, pos, normalize, starts, ends)
        pos += len(chunk)
    return starts, ends


def _align_words(text: str, normalized: str, chunks: list[str],
                 normalize: Callable[[str], str]) -> tuple[list[int], list[int]] | None:
    """For normalizers whose whitespace depends on its neighbours (SentencePiece's
    ``remove_extra_whitespaces``: no leading or trailing space, a run of spaces as one; NMT's line
    breaks read as spaces): each non-space chunk, normalized alone, is found in order in
    ``normalized``; what lies between two of them there comes from the whitespace between them in
    ``text``. ``None`` when a chunk is not found where it must be."""
    starts: list[int] = []
    ends: list[int] = []
    done = 0  # characters of ``normalized`` placed
    gap_from = 0  # where the whitespace before the next non-space chunk starts in ``text``
    pos = 0
    for chunk in chunks:
        if chunk.isspace():
            pos += len(chunk)
            continue
        out = normalize(chunk)
        at = normalized.find(out, done) if out else done
        if at < 0 or normalized[done:at].strip():  # only (normalized) whitespace may lie between
            return None
        starts.extend([gap_from] * (at - done))
        ends.extend([max(pos, gap_from + 1)] * (at - done))
        if out:
            _map_chunk(chunk, out, pos, normalize, starts, ends)
        done = at + len(out)
        pos += len(chunk)
        gap_from = pos
    if normalized[done:].strip():
        return None
    starts.extend([gap_from] * (len(normalized) - done))
    ends.extend([len(text)] * (len(normalized) - done))
    return starts, ends


def _map_chunk(chunk: str, out: str, pos: int, normalize, starts: list[int], ends: list[int]) -> None:
    pieces: list[str] = []
    for ch in chunk:
        if pieces and unicodedata.combining(ch):
            pieces[-1] += ch
        else:
            pieces.append(ch)
    normed = [normalize(p) for p in pieces]
    if "".join(normed) != out:
        if len(out) == len(chunk):  # a context rule such as the final sigma: same places
            starts.extend(range(pos, pos + len(chunk)))
            ends.extend(range(pos + 1, pos + len(chunk) + 1))
            return
        starts.extend([pos] * len(out))
        ends.extend([pos + len(chunk)] * len(out))
        return
    for piece, n in zip(pieces, normed):
        if len(n) == len(piece):
            starts.extend(range(pos, pos + len(piece)))
            ends.extend(range(pos + 1, pos + len(piece) + 1))
        else:
            starts.extend([pos] * len(n))
            ends.extend([pos + len(piece)] * len(n))
        pos += len(piece)


def remap_spans(spans: list[Span], mapping: tuple[list[int], list[int]], length: int) -> list[Span]:
    starts, ends = mapping
    size = len(starts)
    out = []
    for token_id, s, e, p in spans:
        if e > s:
            out.append((token_id, starts[s], ends[e - 1], p))
        else:
            at = starts[s] if s < size else length
            out.append((token_id, at, at, p))
    return out


# ---- display groups ---------------------------------------------------------------------------------
class Group(NamedTuple):
    """What the editor colours as one token: ``tokens[first:last]`` covering ``text[start:end]``.

    More than one token when tokens hold parts of the same character(s) (``partial``): the
    tiktokenizer rule groups them until whole characters decode.
    """

    start: int
    end: int
    first: int
    last: int
    partial: bool
    special: bool


def group_tokens(spans: Sequence[Span | EncodedToken], special_ids: Iterable[int] = (),
                 text: str | None = None) -> list[Group]:
    """Consecutive tokens whose character spans overlap form one group (they share a character).

    The core gives a token that holds part of a character the span of the whole character, so
    the tokens of one emoji or CJK character overlap, and spans that merely touch never do.
    With ``text``, groups are also joined where a token boundary falls inside a grapheme cluster
    (a flag, an emoji ZWJ sequence or skin tone, a letter and its combining accent): a text
    renderer cannot draw a cluster whose parts have different colours, so it is shown whole, as
    one group marked ``partial``, and the hover lists its tokens.
    """
    specials = frozenset(special_ids)
    groups: list[Group] = []
    n = len(spans)
    i = 0
    while i < n:
        token_id, start, end, partial = _fields(spans[i])
        j = i + 1
        while j < n:
            _nid, ns, ne, _np = _fields(spans[j])
            if ns >= end:
                break
            end = max(end, ne)
            j += 1
        groups.append(Group(start, end, i, j, partial or j - i > 1, j - i == 1 and token_id in specials))
        i = j
    if text is not None and groups:
        groups = _join_inside_graphemes(groups, text)
    return groups


_GRAPHEME = regex.compile(r"\X")


def grapheme_starts(text: str) -> set[int] | None:
    """Where grapheme clusters begin, or None when every character is its own cluster."""
    if text.isascii() and "\r\n" not in text:
        return None
    return {m.start() for m in _GRAPHEME.finditer(text)} | {len(text)}


def _join_inside_graphemes(groups: list[Group], text: str) -> list[Group]:
    starts = grapheme_starts(text)
    if starts is None:
        return groups
    out = [groups[0]]
    for g in groups[1:]:
        last = out[-1]
        if g.start not in starts and last.end > last.start and g.end > g.start and not (g.special or last.special):
            out[-1] = Group(last.start, max(last.end, g.end), last.first, g.last, True, False)
        else:
            out.append(g)
    return out


def _fields(span) -> tuple[int, int, int, bool]:
    if isinstance(span, EncodedToken):
        return span.id, span.start, span.end, span.partial
    return span
