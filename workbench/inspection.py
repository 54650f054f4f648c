"""What the token inspector shows, computed without Qt: spans, display groups, colours, counts.

The inspector's editor only *applies* what this module computes (the Frescobaldi pattern: the
highlighter never tokenizes). Everything here is plain Python so it runs in a worker thread, the
CLI and tests alike:

* :class:`SpanEncoder` — an :class:`~workbench.core.encoder.Encoder` that caches each pre-token's
  token offsets; its spans are exactly ``Encoder.encode_with_offsets``'s (tests hold it to that).
* :class:`Inspector` → :class:`TextLayout` — a text split for display. The text is cut into
  chunks of whole lines at line starts no pre-token straddles; a chunk's tokens depend only on its
  own pieces, so it is cached and a keystroke re-splits one chunk. Offsets are moved back onto the
  original text when the tokenizer normalizes (NFKC, lowercase …) first.
* display groups (:func:`group_tokens`): tokens holding part of a character are grouped until
  whole characters decode (the tiktokenizer rule), and optionally until whole grapheme clusters
  (emoji sequences, flags, accents), which a renderer cannot draw in several colours; marked.
* colours (:func:`assign_colours`, :func:`palette`): soft colours for light and dark themes,
  neighbours never equal, a stable colour per id as an option; every line starts afresh, so an
  edit repaints only its own lines.
* :class:`BlockMap` — the Qt boundary: code points of the inspected text ↔ UTF-16 positions of
  the editor's lines (an emoji is two UTF-16 units and one code point).
* readable pieces, whitespace glyphs, counts, parsing pasted ids, boundary disagreements.

Left out on purpose: anything that draws, threads, or reads the project file.
"""

from __future__ import annotations

import bisect
import json
import re
import unicodedata
from dataclasses import dataclass
from itertools import accumulate
from typing import Callable, Iterable, NamedTuple, Sequence

import regex

from workbench.core.encoder import EncodedToken, Encoder
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

# ---- display constants ---------------------------------------------------------------------------
WHITESPACE_GLYPHS = {" ": "⋅", "\t": "→", "\n": "↵", "\r": "␍"}
# Style bits of a coloured span: the low byte is the colour index, the flags sit above it.
COLOUR_MASK = 0xFF
PARTIAL = 0x100  # several tokens share these characters (byte-level BPE inside a character)
SPECIAL = 0x200  # a recognised special token
UNKNOWN = 0x800  # a piece this vocabulary cannot encode (shown, counted apart, never given an id)
UNKNOWN_ID = -1

# Soft backgrounds, ordered so that consecutive entries differ in hue by far (blue, amber, green,
# pink, …). Light ones under dark text, dark ones under light text; both pass WCAG AA (4.5:1).
LIGHT_PALETTE = ("#c7dcfb", "#fbe5a1", "#c3f0d2", "#f9cfe4", "#b5ecf3", "#fbd5b3", "#ddd6fb", "#dcf0ac")
DARK_PALETTE = ("#24436b", "#5b4a14", "#1d5234", "#64284a", "#17535a", "#643818", "#42357a", "#3f5418")
TEXT_ON_LIGHT = "#1b1b1b"
TEXT_ON_DARK = "#ececec"
SPECIAL_COLOURS = {False: ("#6d28d9", "#ffffff"), True: ("#c4b5fd", "#1e1b4b")}  # (background, text)
MARK_COLOURS = {  # the other marks, per theme (dark = True)
    "partial": {False: "#57534e", True: "#d6d3d1"},
    "disagree": {False: "#dc2626", True: "#f87171"},
    "selected": {False: "#f59e0b", True: "#fbbf24"},
    "hover": {False: "#1d4ed8", True: "#93c5fd"},
    "glyph": {False: "#8a8a8a", True: "#9a9a9a"},
}

_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")
_WORD = re.compile(r"\S+")


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
        return [0] * len(normalized), [len(text)] * len(normalized)
    pos = 0
    for chunk, out in zip(chunks, normed):
        if out == chunk:
            starts.extend(range(pos, pos + len(chunk)))
            ends.extend(range(pos + 1, pos + len(chunk) + 1))
        else:
            _map_chunk(chunk, out, pos, normalize, starts, ends)
        pos += len(chunk)
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


def _remap(spans: list[Span], mapping: tuple[list[int], list[int]], length: int) -> list[Span]:
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


# ---- colours ----------------------------------------------------------------------------------------
def palette(dark: bool) -> tuple[str, ...]:
    """The token backgrounds for a light or dark theme (hex ``#rrggbb``)."""
    return DARK_PALETTE if dark else LIGHT_PALETTE


def stable_colour(token_id: int, n: int) -> int:
    """The same colour for the same id everywhere (Knuth's multiplicative hash)."""
    return ((token_id * 2654435761) & 0xFFFFFFFF) % n


def assign_colours(groups: Sequence[Group], tokens: Sequence[Span], text: str, n: int,
                   stable: bool = False, *, prev: int = -1, restart: bool = True) -> list[int]:
    """A colour index per group; two neighbouring groups never get the same one.

    By position (default): colours cycle within a line and restart at 0 after a group holding a
    line break (which itself never takes 0), so an edit changes the colours of its own line only. ``stable``: a colour per token id,
    moved to the next colour where it would equal its left neighbour's. ``prev`` is the colour of
    the group before the first (``-1``: none); ``restart``: the first group begins a line.
    """
    if n < 2:
        raise ValueError("need at least two colours to keep neighbours apart")
    out: list[int] = []
    append = out.append
    find = text.find
    for g in groups:
        start, end, first = g[0], g[1], g[2]  # plain tuples in the caches (the GC skips those)
        line_break = find("\n", start, end) != -1 or find("\r", start, end) != -1
        if stable:
            colour = stable_colour(tokens[first][0], n)
            if colour == prev:
                colour = (colour + 1) % n
        else:
            if restart:
                colour = 1 if prev == 0 else 0
            else:
                colour = prev + 1 if prev + 1 < n else 0
            if line_break and colour == 0 and n > 2:
                # A line's last group never takes colour 0, so every line starts with 0 and a
                # line's colours never depend on the line above.
                colour = 1 if prev != 1 else 2
        append(colour)
        prev = colour
        restart = line_break
    return out


def contrast_ratio(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 … 21)."""
    def luminance(colour: str) -> float:
        channels = [int(colour[k:k + 2], 16) / 255 for k in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


# ---- one text under one tokenizer, incrementally -----------------------------------------------------
@dataclass(frozen=True)
class Counts:
    """The numbers shown beside a text: ``words`` are whitespace-separated, as fertility counts them."""

    tokens: int
    characters: int
    bytes: int
    words: int

    @property
    def chars_per_token(self) -> float:
        return self.characters / self.tokens if self.tokens else 0.0

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0

    @property
    def tokens_per_word(self) -> float:
        return self.tokens / self.words if self.words else 0.0


def count_text(text: str, tokens: int) -> Counts:
    return Counts(tokens, len(text), len(text.encode("utf-8", "surrogatepass")), len(_WORD.findall(text)))


BlockSpans = tuple  # ((utf16_start, utf16_length, style_code), ...) for one editor line


class _Chunk:
    """Whole lines of the text whose tokens never reach into another chunk (cut at line starts
    that no pre-token straddles). Cached by its pieces, so an edit re-splits only its own chunk.

    Offsets are relative to the chunk. A chunk covers ``n_lines`` editor lines: the line starts
    inside it, its last line ending with the separator (except at the end of the text).
    """

    __slots__ = ("text", "tokens", "groups", "ids", "line_starts", "line_lens", "group_line", "u16",
                 "bytes", "words", "unknown", "_layouts", "_first_plain", "ends_line")

    def __init__(self, text: str, tokens: list[Span], groups: list[tuple], sep_len: int):
        # Tuples throughout: a cache of thousands of chunks then holds almost nothing the cyclic
        # garbage collector has to scan (its full passes would otherwise stall the GUI thread).
        self.text = text
        self.tokens = tuple(tokens)
        self.groups = tuple(groups)
        self.ids = tuple(t[0] for t in tokens)
        starts = [0]
        find = text.find
        k = find("\n")
        while k != -1 and k + 1 < len(text):
            starts.append(k + 1)
            k = find("\n", k + 1)
        self.line_starts = tuple(starts)
        lens = []
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(text)
            length = end - start
            if text.endswith("\n", start, end):
                length -= sep_len
            lens.append(max(length, 0))
        self.line_lens = tuple(lens)
        self.group_line = tuple(bisect.bisect_right(starts, g[0]) - 1 for g in groups)
        self.u16: dict[int, list[int]] = {}
        for n, start in enumerate(starts):
            line = text[start:start + lens[n]]
            if _ASTRAL.search(line):
                table = [0]
                for ch in line:
                    table.append(table[-1] + (2 if ord(ch) > 0xFFFF else 1))
                self.u16[n] = tuple(table)
        self.unknown = self.ids.count(UNKNOWN_ID)
        self.bytes = len(text.encode("utf-8", "surrogatepass"))
        self.words = len(_WORD.findall(text))
        self._layouts: dict[tuple[int, bool, int], tuple] = {}
        first = groups[0] if groups else None
        # whether the first group holds no line break (so a fresh line gives it colour 0)
        self._first_plain = first is None or (text.find("\n", first[0], first[1]) == -1
                                              and text.find("\r", first[0], first[1]) == -1)
        self.ends_line = self._ends_line()

    @property
    def n_lines(self) -> int:
        return len(self.line_starts)

    def _ends_line(self) -> bool:
        """Whether the last group holds a line break (the next chunk's colours then restart)."""
        if not self.groups:
            return True
        start, end = self.groups[-1][:2]
        return self.text.find("\n", start, end) != -1 or self.text.find("\r", start, end) != -1

    def layout(self, prev: int, restart: bool, n: int, stable: bool) -> tuple:
        """(colours, spans per line, ids text per line, id spans per line, last colour).

        Everything after the first group follows from the first group's colour, so that is the
        cache key: a change in the line above rarely repaints this one.
        """
        if not self.groups:
            first = -1
        elif not stable and restart and prev != 0 and n > 2:
            first = 0 if self._first_plain else (1 if prev != 1 else 2)  # assign_colours' rule, inlined
        else:
            first = assign_colours(self.groups[:1], self.tokens, self.text, n, stable, prev=prev, restart=restart)[0]
        key = (first, stable, n)
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts[key] = self._lay_out(prev, restart, n, stable)
        return found

    def _lay_out(self, prev: int, restart: bool, n: int, stable: bool) -> tuple:
        colours = assign_colours(self.groups, self.tokens, self.text, n, stable, prev=prev, restart=restart)
        lines: list[list[tuple[int, int, int]]] = [[] for _ in self.line_starts]
        id_parts: list[list[str]] = [[] for _ in self.line_starts]
        id_spans: list[list[tuple[int, int, int]]] = [[] for _ in self.line_starts]
        id_cols = [0] * len(self.line_starts)
        starts, lens, u16, ids = self.line_starts, self.line_lens, self.u16, self.ids
        nlines = len(starts)
        for (s, e, g_first, g_last, partial, special), colour, first_line in zip(self.groups, colours,
                                                                                  self.group_line):
            code = colour | (PARTIAL if partial else 0) | (SPECIAL if special else 0)
            if ids[g_first] == UNKNOWN_ID:
                code |= UNKNOWN
            line = first_line
            while line < nlines and starts[line] < e:
                ls = starts[line]
                a = s - ls if s > ls else 0
                z = min(e - ls, lens[line])
                if z > a:
                    table = u16.get(line)
                    if table is None:
                        lines[line].append((a, z - a, code))
                    else:
                        lines[line].append((table[a], table[z] - table[a], code))
                line += 1
            col = id_cols[first_line]
            parts = id_parts[first_line]
            spans = id_spans[first_line]
            for t in range(g_first, g_last):
                word = str(ids[t]) if ids[t] != UNKNOWN_ID else "?"
                if parts:
                    col += 2
                parts.append(word)
                spans.append((col, len(word), code))
                col += len(word)
            id_cols[first_line] = col
        last = colours[-1] if colours else prev
        return (tuple(colours), tuple(tuple(x) for x in lines), tuple(", ".join(p) for p in id_parts),
                tuple(tuple(x) for x in id_spans), last)


@dataclass(frozen=True)
class GroupRef:
    """A display group with absolute offsets: ``text[start:end]`` holds ``tokens[first:last]``."""

    index: int
    start: int
    end: int
    first: int
    last: int
    partial: bool
    special: bool
    ids: tuple[int, ...]
    colour: int


class TextLayout:
    """One text under one tokenizer, ready to draw: per editor line the coloured UTF-16 spans and
    the ids, plus lookups by position, token index or id. Built by :class:`Inspector`."""

    def __init__(self, text: str, separator: str, parts: list[tuple], n_tokens: int, counts: Counts,
                 block_spans: list, ids_lines: list[str], ids_spans: list):
        self.text = text
        self.separator = separator
        # (chunk, cp_start, block_start, token_start, group_start, colours)
        self._parts = parts
        self._cp_starts = [p[1] for p in parts]
        self._tok_starts = [p[3] for p in parts]
        self.n_tokens = n_tokens
        self.counts = counts
        self.block_spans = block_spans
        self.ids_lines = ids_lines
        self.ids_spans = ids_spans
        self._blockmap: BlockMap | None = None

    @property
    def blockmap(self) -> "BlockMap":
        if self._blockmap is None:
            tables = {}
            for chunk, _base, block, *_ in self._parts:
                for line, table in chunk.u16.items():
                    tables[block + line] = table
            self._blockmap = BlockMap(self.text.split(self.separator), self.separator, tables)
        return self._blockmap

    @property
    def unknown(self) -> int:
        """Pieces this vocabulary cannot encode (shown with id ``UNKNOWN_ID``)."""
        return sum(part[0].unknown for part in self._parts)

    def ids(self) -> list[int]:
        out: list[int] = []
        for part in self._parts:
            out.extend(part[0].ids)
        return out

    def tokens(self) -> list[Span]:
        """``(id, start, end, partial)`` per token, code points of :attr:`text`."""
        out: list[Span] = []
        for chunk, base, *_ in self._parts:
            out.extend((i, s + base, e + base, p) for i, s, e, p in chunk.tokens)
        return out

    def groups(self) -> list[Group]:
        out: list[Group] = []
        for chunk, base, _b, tbase, _g, _c in self._parts:
            out.extend(Group(s + base, e + base, f + tbase, la + tbase, p, sp) for s, e, f, la, p, sp in chunk.groups)
        return out

    def colours(self) -> list[int]:
        out: list[int] = []
        for part in self._parts:
            out.extend(part[5])
        return out

    def boundaries(self) -> set[int]:
        """Where one displayed token ends and the next begins (and both ends of what is covered)."""
        out: set[int] = set()
        add = out.add
        for chunk, base, *_ in self._parts:
            for g in chunk.groups:
                add(g[0] + base)
                add(g[1] + base)
        return out

    def _ref(self, part_index: int, k: int) -> GroupRef:
        chunk, base, _b, tbase, gbase, colours = self._parts[part_index]
        start, end, first, last, partial, special = chunk.groups[k]
        return GroupRef(gbase + k, start + base, end + base, first + tbase, last + tbase, partial, special,
                        tuple(chunk.ids[first:last]), colours[k])

    def group_at(self, offset: int) -> GroupRef | None:
        """The group covering code point ``offset`` (``None`` between groups or past the end)."""
        p = bisect.bisect_right(self._cp_starts, offset) - 1
        if p < 0:
            return None
        chunk, base = self._parts[p][0], self._parts[p][1]
        rel = offset - base
        groups = chunk.groups
        k = bisect.bisect_right(groups, (rel, 1 << 62)) - 1
        while k >= 0:
            start, end = groups[k][:2]
            if start <= rel < end:
                return self._ref(p, k)
            if end > start:
                return None
            k -= 1
        return None

    def group_of_token(self, index: int) -> GroupRef | None:
        p = bisect.bisect_right(self._tok_starts, index) - 1
        if p < 0 or index >= self.n_tokens:
            return None
        chunk, tbase = self._parts[p][0], self._parts[p][3]
        rel = index - tbase
        firsts = [g[2] for g in chunk.groups]
        k = bisect.bisect_right(firsts, rel) - 1
        return self._ref(p, k) if k >= 0 else None

    def groups_with_id(self, token_id: int) -> list[GroupRef]:
        """Every group holding a token with this id (what "select it everywhere" marks)."""
        out = []
        for p, part in enumerate(self._parts):
            chunk = part[0]
            if token_id not in chunk.ids:
                continue
            ids = chunk.ids
            for k, g in enumerate(chunk.groups):
                if token_id in ids[g[2]:g[3]]:
                    out.append(self._ref(p, k))
        return out

    def first_token_of_line(self, block: int) -> int:
        """Index of the first token listed on ids line ``block``."""
        p = max(0, bisect.bisect_right([part[2] for part in self._parts], block) - 1)
        if not self._parts:
            return 0
        chunk, _base, bstart, tbase, *_ = self._parts[p]
        line = block - bstart
        count = 0
        for g, gl in zip(chunk.groups, chunk.group_line):
            if gl >= line:
                break
            count += g[3] - g[2]
        return tbase + count


class Stopped(Exception):
    """:meth:`Inspector.inspect` gave up because its ``should_stop`` said so."""


class Inspector:
    """Splits texts under one encoder for display, reusing the chunks that did not change.

    ``inspect(text)`` gives exactly what :meth:`Encoder.encode_with_offsets` gives (offsets moved
    back onto the original text when the tokenizer normalizes), grouped and coloured. The first
    call on a 100 KB text encodes every piece; after a keystroke only the edited chunk is new.
    """

    def __init__(self, encoder: SpanEncoder, *, allow_special: bool = False, n_colours: int = 8,
                 stable_colours: bool = False, whole_graphemes: bool = True):
        self.encoder = encoder
        self.whole_graphemes = whole_graphemes
        self.allow_special = allow_special
        self.n_colours = n_colours
        self.stable_colours = stable_colours
        self._chunks: dict[tuple, _Chunk] = {}
        self._separator = "\n"
        tok = encoder.tok
        self._specials = tok.special_ids if allow_special else frozenset()
        self._special_re = encoder._special_re if allow_special else None
        self._pre = encoder._pre
        self._findall = None
        if self._pre.pattern is not None and self._pre.name != "custom":
            self._findall = self._pre.compiled().findall

    def inspect(self, text: str, separator: str = "\n",
                should_stop: Callable[[], bool] | None = None) -> TextLayout:
        """Split ``text`` (its lines joined by ``separator``) for display.

        ``should_stop`` is asked every few dozen chunks (a worker uses it to give the GIL back to
        the GUI thread and to give up on a text that is already stale); when it says yes,
        :class:`Stopped` is raised.
        """
        if separator != self._separator:
            self._chunks = {}
            self._separator = separator
        normalized = self.encoder.normalized(text)
        pieces, starts, ends, special_at = self._pieces(normalized)
        cuts = self._cuts(normalized, starts, ends)  # [(position, piece index)] including 0 and end
        same = normalized is text or normalized == text
        orig_cuts = None
        if not same:
            orig_cuts = self._orig_cuts(text, normalized, cuts)
        sep_len = len(separator)
        parts: list[tuple] = []
        used: dict[tuple, _Chunk] = {}
        block_spans: list = []
        ids_lines: list[str] = []
        ids_spans: list = []
        n_tokens = n_groups = block = 0
        prev = -1
        restart = True
        words = nbytes = 0
        for c in range(len(cuts) - 1):
            (pos, k0), (end, k1) = cuts[c], cuts[c + 1]
            if orig_cuts is None:
                o0, o1 = pos, end
            else:
                o0, o1 = orig_cuts[c], orig_cuts[c + 1]
            key = self._key(pieces, starts, ends, k0, k1, pos, end,
                            text[o0:o1] if orig_cuts is not None else None)
            chunk = used.get(key) or self._chunks.get(key)
            if should_stop is not None and (chunk is None or c % 32 == 31) and should_stop():
                raise Stopped()
            if chunk is None:
                chunk = self._chunk(normalized[pos:end], text[o0:o1] if orig_cuts is not None else None,
                                    pieces, starts, ends, k0, k1, pos, special_at, sep_len)
            used[key] = chunk
            colours, lines, id_lines, id_sp, last = chunk.layout(prev, restart, self.n_colours, self.stable_colours)
            parts.append((chunk, o0, block, n_tokens, n_groups, colours))
            block_spans.extend(lines)
            ids_lines.extend(id_lines)
            ids_spans.extend(id_sp)
            block += chunk.n_lines
            n_tokens += len(chunk.tokens)
            n_groups += len(chunk.groups)
            words += chunk.words
            nbytes += chunk.bytes
            prev = last
            restart = chunk.ends_line if chunk.groups else restart
        total_blocks = text.count("\n") + 1
        while block < total_blocks:  # the empty line after a final line break has no chunk
            block_spans.append(())
            ids_lines.append("")
            ids_spans.append(())
            block += 1
        if len(used) * 2 + 1000 < len(self._chunks) + len(used):
            self._chunks = used
        else:
            self._chunks.update(used)
        counts = Counts(n_tokens, len(text), nbytes, words)
        return TextLayout(text, separator, parts, n_tokens, counts, block_spans, ids_lines, ids_spans)

    # ---- pieces and chunks ----------------------------------------------------------------------
    def _pieces(self, text: str) -> tuple[list[str], list[int], list[int], dict[int, int]]:
        """Every pre-token (and recognised special token) of ``text`` with its span."""
        pieces: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        special_at: dict[int, int] = {}
        segments: list[tuple[int, int, int | None]] = []
        pos = 0
        if self._special_re is not None:
            for match in self._special_re.finditer(text):
                segments.append((pos, match.start(), None))
                segments.append((match.start(), match.end(), self.encoder.tok.special_tokens[match.group()]))
                pos = match.end()
        segments.append((pos, len(text), None))
        for a, b, special in segments:
            if special is not None:
                special_at[len(pieces)] = special
                pieces.append(text[a:b])
                starts.append(a)
                ends.append(b)
                continue
            if b <= a:
                continue
            segment = text[a:b] if (a, b) != (0, len(text)) else text
            if self._findall is not None:
                found = self._findall(segment, concurrent=True)
                piece_ends = list(accumulate(map(len, found)))
                if (not piece_ends or piece_ends[-1] == len(segment)) and "" not in found:
                    pieces.extend(found)
                    if a == 0:
                        starts.append(0)
                        starts.extend(piece_ends[:-1])
                        ends.extend(piece_ends)
                    else:
                        starts.append(a)
                        starts.extend(e + a for e in piece_ends[:-1])
                        ends.extend(e + a for e in piece_ends)
                    continue
            for s, e in self._pre.spans(segment):
                pieces.append(segment[s:e])
                starts.append(s + a)
                ends.append(e + a)
        return pieces, starts, ends, special_at

    @staticmethod
    def _cuts(text: str, starts: list[int], ends: list[int]) -> list[tuple[int, int]]:
        """Line starts that no piece straddles, as (position, index of the first piece after)."""
        cuts = [(0, 0)]
        n = len(starts)
        find = text.find
        k = find("\n")
        while k != -1:
            line_start = k + 1
            if line_start >= len(text):
                break
            i = bisect.bisect_right(ends, line_start)
            if i >= n or starts[i] >= line_start:
                if line_start > cuts[-1][0]:
                    cuts.append((line_start, i))
            k = find("\n", line_start)
        cuts.append((len(text), n))
        return cuts

    @staticmethod
    def _orig_cuts(text: str, normalized: str, cuts: list[tuple[int, int]]) -> list[int]:
        """The same cuts in the original text: the n-th line start there is the n-th here.

        Normalizers keep line breaks; if one did not, the text becomes one chunk.
        """
        orig_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        norm_starts = [0] + [m.end() for m in re.finditer("\n", normalized)]
        if len(orig_starts) != len(norm_starts):
            return [0] * (len(cuts) - 1) + [len(text)]
        index = {p: n for n, p in enumerate(norm_starts)}
        return [orig_starts[index[pos]] if pos in index else len(text) for pos, _k in cuts[:-1]] + [len(text)]

    @staticmethod
    def _key(pieces, starts, ends, k0, k1, pos, end, orig: str | None) -> tuple:
        """The chunk's pieces decide its tokens; where pieces leave gaps, their places do too."""
        key = tuple(pieces[k0:k1])
        if k1 == k0 or starts[k0] != pos or ends[k1 - 1] != end or sum(map(len, key)) != end - pos:
            key = ("\x00gaps", end - pos) + key + tuple(s - pos for s in starts[k0:k1])
        if orig is not None:
            key = key + ("\x00orig", orig)
        return key

    def _chunk(self, norm: str, orig: str | None, pieces, starts, ends, k0, k1, pos, special_at,
               sep_len: int) -> _Chunk:
        spans: list[Span] = []
        encoder = self.encoder
        for i in range(k0, k1):
            base = starts[i] - pos
            if i in special_at:
                spans.append((special_at[i], base, ends[i] - pos, False))
                continue
            for token_id, s, e, p in encoder.piece_spans(pieces[i]):
                spans.append((token_id, base + s, base + e, p))
        text = norm
        if orig is not None and orig != norm:
            mapping = offset_map(orig, norm, encoder.tok.normalize)
            if mapping is not None:
                spans = _remap(spans, mapping, len(orig))
            text = orig
        groups = [tuple(g) for g in group_tokens(spans, self._specials, text if self.whole_graphemes else None)]
        return _Chunk(text, spans, groups, sep_len)


def inspect_text(encoder: SpanEncoder, text: str, *, allow_special: bool = False, separator: str = "\n",
                 n_colours: int = 8, stable_colours: bool = False, whole_graphemes: bool = True) -> TextLayout:
    """One-off :class:`Inspector` pass (no reuse between calls)."""
    return Inspector(encoder, allow_special=allow_special, n_colours=n_colours, stable_colours=stable_colours,
                     whole_graphemes=whole_graphemes).inspect(text, separator)


# ---- side by side -----------------------------------------------------------------------------------
def disagreement_spans(boundary_sets: Sequence[set[int]]) -> list[tuple[int, int]]:
    """Stretches between boundaries every tokenizer shares that hold a boundary some do not."""
    if len(boundary_sets) < 2:
        return []
    sets = [s if isinstance(s, set) else set(s) for s in boundary_sets]
    common = set.intersection(*sets)
    union = set.union(*sets)
    if common == union:
        return []
    cuts = sorted(common)
    out: list[tuple[int, int]] = []
    for position in sorted(union - common):
        k = bisect.bisect_left(cuts, position)
        start = cuts[k - 1] if k > 0 else min(union)
        end = cuts[k] if k < len(cuts) else max(union)
        if out and out[-1] == (start, end):
            continue
        out.append((start, end))
    return out


# ---- the Qt boundary: lines and UTF-16 ---------------------------------------------------------------
class BlockMap:
    """The inspected text as the editor's lines (Qt blocks) joined by ``separator``.

    Qt counts positions in UTF-16 code units and keeps each line as a block, one position apart;
    Python counts code points. Every conversion between the two goes through here.
    """

    def __init__(self, blocks: Sequence[str], separator: str = "\n", u16: dict[int, list[int]] | None = None):
        """``u16``: the UTF-16 column tables of the lines holding astral characters, when known."""
        self.blocks = list(blocks) or [""]
        self.separator = separator
        self.sep_len = len(separator)
        if u16 is None:
            u16 = {}
            for k, block in enumerate(self.blocks):
                if _ASTRAL.search(block):
                    table = [0]
                    for ch in block:
                        table.append(table[-1] + (2 if ord(ch) > 0xFFFF else 1))
                    u16[k] = table
        self._u16 = u16  # block → UTF-16 offset of each code point (astral blocks only)
        lengths = [len(b) for b in self.blocks]
        self.cp_starts = [0] + list(accumulate(n + self.sep_len for n in lengths[:-1]))
        lengths16 = list(lengths)
        for k, table in u16.items():
            lengths16[k] = table[-1]
        self.doc_starts = [0] + list(accumulate(n + 1 for n in lengths16[:-1]))
        self.length = self.cp_starts[-1] + lengths[-1]

    def text(self) -> str:
        return self.separator.join(self.blocks)

    def block_of(self, cp: int) -> int:
        return max(0, bisect.bisect_right(self.cp_starts, cp) - 1)

    def col16(self, block: int, col: int) -> int:
        table = self._u16.get(block)
        if table is None:
            return col
        return table[min(col, len(table) - 1)]

    def col_cp(self, block: int, col16: int) -> int:
        table = self._u16.get(block)
        if table is None:
            return col16
        return bisect.bisect_right(table, col16) - 1

    def doc_pos(self, cp: int) -> int:
        """Qt document position of code point ``cp`` (a separator maps to its line's end)."""
        k = self.block_of(cp)
        col = min(cp - self.cp_starts[k], len(self.blocks[k]))
        return self.doc_starts[k] + self.col16(k, col)

    def cp_at(self, doc_pos: int) -> int:
        """Code point of Qt document position ``doc_pos``."""
        k = max(0, bisect.bisect_right(self.doc_starts, doc_pos) - 1)
        return self.cp_starts[k] + self.col_cp(k, doc_pos - self.doc_starts[k])

    def block_spans(self, groups: Sequence[Group], codes: Sequence[int]) -> list[tuple[tuple[int, int, int], ...]]:
        """Per block, ``(utf16_start, utf16_length, style_code)`` of each group's visible part."""
        nblocks = len(self.blocks)
        per: list[list[tuple[int, int, int]]] = [[] for _ in range(nblocks)]
        starts = self.cp_starts
        lengths = [len(b) for b in self.blocks]
        astral = self._u16
        k = 0
        for g, code in zip(groups, codes):
            s, e = g[0], g[1]
            if e <= s:
                continue
            while k + 1 < nblocks and starts[k + 1] <= s:
                k += 1
            b = k
            while b < nblocks and starts[b] < e:
                bs = starts[b]
                a = s - bs if s > bs else 0
                z = min(e - bs, lengths[b])
                if z > a:
                    if b in astral:
                        table = astral[b]
                        per[b].append((table[a], table[z] - table[a], code))
                    else:
                        per[b].append((a, z - a, code))
                b += 1
        return [tuple(p) for p in per]


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
            item = int(stripped)
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
