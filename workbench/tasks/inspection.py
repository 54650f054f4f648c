"""What the token inspector shows, computed without Qt: a text split for display, in chunks.

The inspector's editor only *applies* what this module computes (the Frescobaldi pattern: the
highlighter never tokenizes). :class:`Inspector` → :class:`TextLayout`: the text is cut into chunks
of whole lines at line starts no pre-token straddles; a chunk's tokens depend only on its own
pieces, so it is cached and a keystroke re-splits one chunk. :class:`BlockMap` is the Qt boundary:
code points of the inspected text ↔ UTF-16 positions of the editor's lines (an emoji is two UTF-16
units and one code point). Also: counts, boundary disagreements between panes.

Left out on purpose: anything that draws, threads, or reads the project file.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Callable, Sequence

from workbench.core import unigram
from workbench.core.display import piece_text
from workbench.core.model import Tokenizer
from workbench.core.offsets import (
    UNKNOWN_ID,
    Group,
    Span,
    SpanEncoder,
    group_tokens,
    offset_map,
    remap_spans,
    utf16_table,
)
from workbench.errors import WorkbenchError
from workbench.tasks.token_colours import PARTIAL, SPECIAL, SUPERWORD, UNKNOWN, assign_colours

_WORD = re.compile(r"\S+")


def _superword_text(text: str, start: int, end: int) -> bool:
    """Whether one token's characters cross a space (a space after a non-space: SuperBPE's
    superwords; a word with its leading space is not one)."""
    return text.find(" ", start, end) != -1 and " " in text[start:end].lstrip()


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

    def __init__(self, text: str, tokens: list[Span], groups: Sequence[Group], sep_len: int):
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
        self.u16: dict[int, tuple[int, ...]] = {}
        for n, start in enumerate(starts):
            table = utf16_table(text[start:start + lens[n]])
            if table is not None:
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
            elif not special and g_last - g_first == 1 and _superword_text(self.text, s, e):
                code |= SUPERWORD
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
    def blockmap(self) -> BlockMap:
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

    For a SentencePiece model (Unigram, or its score-ordered BPE) the pieces are the model's words,
    which start at spaces and hold the line breaks: prose is then one chunk, and so is any text
    with a near tie (the encoder redoes it as one lattice); only lines starting with a space
    (indented code) are cut, without the dummy ▁ the encoder puts in front of the text only.
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
        self._pre = tok.pre
        self._spm = encoder.spm_model
        self._findall = None
        compiled = self._pre.compiled() if self._pre.name != "custom" else None
        if compiled is not None:
            self._findall = compiled.findall

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
        if self.encoder.tok.pipeline is not None:
            return self._pipeline_layout(text, separator)
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
            if self._spm is not None and (k0 == 0 or k0 - 1 in special_at):
                key = key + ("\x00dummy",)  # its first word has SentencePiece's dummy ▁ in front
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

    def _pipeline_layout(self, text: str, separator: str) -> TextLayout:
        """An imported tokenizer.json's pipeline (normalizers, added tokens, its pre-tokenizers) is
        run on the whole text as ``tokenizers`` runs it, so the text is one chunk: exact, not cut
        into cached pieces (a keystroke re-encodes the whole text)."""
        key = ("\x00pipeline", text)
        chunk = self._chunks.get(key)
        if chunk is None:
            spans: list[Span] = [(t.id, t.start, t.end, t.partial) for t in self.encoder.pipeline_tokens(text)]
            special = self.encoder.tok.special_ids
            chunk = _Chunk(text, spans, group_tokens(spans, special, text if self.whole_graphemes else None),
                           len(separator))
        self._chunks = {key: chunk}
        colours, lines, id_lines, id_spans, _last = chunk.layout(-1, True, self.n_colours, self.stable_colours)
        block_spans, ids_lines, ids_sp = list(lines), list(id_lines), list(id_spans)
        while len(block_spans) < text.count("\n") + 1:
            block_spans.append(())
            ids_lines.append("")
            ids_sp.append(())
        counts = Counts(len(chunk.tokens), len(text), chunk.bytes, chunk.words)
        return TextLayout(text, separator, [(chunk, 0, 0, 0, 0, colours)], len(chunk.tokens), counts, block_spans,
                          ids_lines, ids_sp)

    # ---- pieces and chunks ----------------------------------------------------------------------
    def _pieces(self, text: str) -> tuple[list[str], list[int], list[int], dict[int, int]]:
        """Every pre-token (and recognised special token) of ``text`` with its span."""
        pieces: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        special_at: dict[int, int] = {}
        for a, b, special in self.encoder.special_segments(text, self.allow_special):
            if special is not None:
                special_at[len(pieces)] = special
                pieces.append(text[a:b])
                starts.append(a)
                ends.append(b)
                continue
            if b <= a:
                continue
            segment = text[a:b] if (a, b) != (0, len(text)) else text
            if self._spm is not None:
                for s, e in self._spm_words(segment):
                    pieces.append(segment[s:e])
                    starts.append(s + a)
                    ends.append(e + a)
                continue
            if self._findall is not None:
                found = self._findall(segment, concurrent=True)
                piece_ends = list(accumulate(map(len, found)))
                if not found and not self._pre.keeps_whitespace:
                    continue  # only whitespace, which this pre-tokenizer drops: no piece
                if piece_ends and piece_ends[-1] == len(segment) and "" not in found:
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

    def _spm_words(self, segment: str) -> list[tuple[int, int]]:
        """Spans of the words a SentencePiece model cuts ``segment`` into (what its lattice never
        crosses): a word starts at every space, so a line break stays inside the word before it and
        a chunk can only start at a line that starts with a space.

        One span for the whole segment when the lattice does span it: a model whose pieces hold ▁
        inside, one without ▁ escaping, or a segment with a near tie, which the encoder redoes as
        one float32 lattice (:meth:`~workbench.core.unigram.UnigramModel.encode`).
        """
        model = self._spm
        assert model is not None
        whole = [(0, len(segment))]
        if not model.escape or model.crosses_words:
            return whole
        spans = model.word_spans(segment)
        if model.line_is_fragile([word for word, _s, _e in spans]):
            return whole
        return [(s, e) for _word, s, e in spans if e > s]  # the dummy ▁ alone has no width

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
        if self._spm is not None:
            spans = self._spm_spans(norm, pieces, starts, ends, k0, k1, pos, special_at)
            k1 = k0
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
                spans = remap_spans(spans, mapping, len(orig))
            text = orig
        groups = group_tokens(spans, self._specials, text if self.whole_graphemes else None)
        return _Chunk(text, spans, groups, sep_len)


    def _spm_spans(self, norm: str, pieces, starts, ends, k0, k1, pos, special_at) -> list[Span]:
        """A SentencePiece chunk's tokens: each run of words between special tokens is one call of
        the encoder's own ``encode_spans``; the dummy ▁ only where the encoder puts it, in front of
        the text and of the text after a special token, never at a chunk cut inside the text."""
        model = self._spm
        assert model is not None
        vocab = self.encoder.tok.vocab
        spans: list[Span] = []
        i = k0
        while i < k1:
            if i in special_at:
                spans.append((special_at[i], starts[i] - pos, ends[i] - pos, False))
                i += 1
                continue
            j = i
            while j < k1 and j not in special_at:
                j += 1
            base = starts[i] - pos
            dummy = i == 0 or i - 1 in special_at
            for token_id, a, b in model.encode_spans(norm[base:ends[j - 1] - pos], dummy_prefix=dummy):
                raw = vocab[token_id]
                spans.append((token_id, base + a, base + b, len(raw) == 1 and raw[0] >= 0x80))
            i = j
        return spans


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
                table = utf16_table(block)
                if table is not None:
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


# ---- a Unigram word's n best segmentations -----------------------------------------------------------
NBEST_DEFAULT = 5
NBEST_MAX = 20
NBEST_MAX_WORD = 400  # characters: longer "words" (a line of CJK without spaces) are not searched


@dataclass(frozen=True)
class Segmentation:
    """One way to split the word: its ids (as the encoder would give them), their pieces rendered by
    :func:`~workbench.core.display.piece_text`, ``log_p`` (natural log of the product of the piece
    probabilities), ``share`` (its probability over the sum for every segmentation of the word) and
    whether it is the Viterbi one, the split the pane shows."""

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    log_p: float
    share: float
    viterbi: bool

    @property
    def probability(self) -> float:
        return math.exp(self.log_p)


@dataclass(frozen=True)
class NBest:
    """The word around a position, in SentencePiece's form (``word``: ▁ for the space before it, and
    for the text's first word the dummy ▁), its span ``start:end`` in the inspected text, and up to
    ``n`` segmentations, best first. ``log_z`` is the log of the word's total probability."""

    word: str
    start: int
    end: int
    rows: tuple[Segmentation, ...]
    log_z: float

    @property
    def covered(self) -> float:
        """How much of the word's probability the listed segmentations hold."""
        return sum(row.share for row in self.rows)


def nbest_applies(tokenizer: Tokenizer) -> bool:
    """Only a Unigram model has a distribution over segmentations (SentencePiece's BPE has none)."""
    return tokenizer.model == "unigram" and len(tokenizer.scores) == len(tokenizer.vocab)


def spm_word_spans(tokenizer: Tokenizer, text: str) -> tuple[str, list[tuple[str, int, int]]]:
    """The normalized text and its words as the encoder cuts them, with their spans in it.

    The model's own cut (:meth:`~workbench.core.unigram.UnigramModel.word_spans`) after the normalizer: ▁ for
    every space, one dummy ▁ in front of the text (no width), a word at every ▁ — so a line break
    stays inside a word, as it does when the text is encoded.
    """
    normalized = tokenizer.normalize(text) if tokenizer.normalizer else text
    return normalized, unigram.model_of(tokenizer).word_spans(normalized)


def nbest_segmentations(tokenizer: Tokenizer, text: str, position: int, n: int = NBEST_DEFAULT) -> NBest | None:
    """The ``n`` (1…:data:`NBEST_MAX`) best segmentations of the word of ``text`` at code point
    ``position`` (a position at the end, or on nothing, takes the word before it).

    ``None`` when the tokenizer is not a Unigram model or there is no word there. The word is cut
    as encoding cuts it (:func:`spm_word_spans`), a run of unknown characters is one ``<unk>`` (or
    its byte pieces with byte fallback), as in the encoder, so the Viterbi row's ids are the ids the
    text's encoding gives this word. Of segmentations with equal probability the Viterbi one is
    listed first. Raises :class:`~workbench.errors.WorkbenchError` for a word longer than
    :data:`NBEST_MAX_WORD` characters.

    Left out: special tokens recognised in the text (the word is cut as if they were text), and
    SentencePiece's float32 sums over a whole line: on a near tie (< 0.05 in log p) the pane may
    show the other split, which is then the one marked only if it is listed.
    """
    if not nbest_applies(tokenizer) or not text:
        return None
    n = max(1, min(int(n), NBEST_MAX))
    model = unigram.model_of(tokenizer)
    base = 0
    if model.escape and not model.crosses_words:
        # Words start at spaces (normalizers keep a space a space): cut the text at the spaces
        # around the position, so a keystroke in a 100 KB text does not normalize all of it.
        # The window's own dummy ▁ is a separate zero-width word, as for a text that starts with a space.
        position = min(max(position, 0), len(text) - 1)
        base = max(text.rfind(" ", 0, position + 1), 0)
        if "spm-whitespace" in tokenizer.normalizer:
            # It drops a text's leading spaces: start the window inside the word before, so the
            # word's own ▁ (a space there) stays the space it is in the whole text.
            while base > 0 and text[base - 1] == " ":
                base -= 1
            base = max(base - 1, 0)
        stop = text.find(" ", position + 1)
        text = text[base:stop if stop >= 0 else len(text)]
        position -= base
    normalized, words = spm_word_spans(tokenizer, text)
    mapping = offset_map(text, normalized, tokenizer.normalize) if tokenizer.normalizer else None
    norm_pos = min(max(position, 0), len(text) - 1)
    if mapping is not None:
        starts = mapping[0]
        norm_pos = max(0, bisect.bisect_right(starts, norm_pos) - 1)
    found = None
    for word, start, end in words:
        if start <= norm_pos < end:
            found = (word, start, end)
            break
    if found is None:
        return None
    word, start, end = found
    if len(word) > NBEST_MAX_WORD:
        raise WorkbenchError(f"this word is {len(word):,} characters long: n-best segmentations are listed for "
                             f"words of up to {NBEST_MAX_WORD} characters")
    viterbi_ids = model.ids_of(word, model.viterbi(word))
    rows: list[Segmentation] = []
    log_z = 0.0
    for path, share in unigram.nbest(tokenizer, word, n):
        ids: list[int] = []
        log_p = 0.0
        at = 0
        unknown_from = -1  # start of the current run of unknown characters
        for pid in path:
            if pid < 0:
                log_p += model.unk_score
                if unknown_from < 0:
                    unknown_from = at
                at += 1
                continue
            if unknown_from >= 0:
                ids.extend(model.unknown_ids(word[unknown_from:at]))
                unknown_from = -1
            log_p += model.score[pid]
            ids.append(pid)
            at += len(tokenizer.vocab[pid].decode("utf-8", "replace"))  # the piece's characters (as model.piece_id)
        if unknown_from >= 0:
            ids.extend(model.unknown_ids(word[unknown_from:at]))
        if not rows and share > 0:
            log_z = log_p - math.log(share)
        rows.append(Segmentation(tuple(ids), tuple(piece_text(tokenizer.vocab[i]) for i in ids), log_p, share,
                                 tuple(ids) == viterbi_ids))
    best = next((k for k, row in enumerate(rows) if row.viterbi), None)
    if best is not None and best > 0 and math.isclose(rows[best].log_p, rows[0].log_p, rel_tol=0, abs_tol=1e-9):
        rows.insert(0, rows.pop(best))  # a tie: the encoder's choice first
    o_start, o_end = start, end
    if mapping is not None and end > start:
        o_start, o_end = mapping[0][start], mapping[1][end - 1]
    return NBest(word, base + o_start, base + o_end, tuple(rows), log_z)


def piece_segmentations(tokenizer: Tokenizer, token_id: int, n: int = 3) -> list[tuple[list[int], float]]:
    """The ``n`` best ways a Unigram tokenizer could spell piece ``token_id`` with *other* pieces,
    each with its probability among every segmentation of the piece's text (the piece alone
    included, which is why the list may sum to well under 1).

    What the Merges tab's piece detail shows instead of a BPE ancestry. Empty for special tokens,
    byte pieces and models other than Unigram.
    """
    if tokenizer.model != "unigram" or not 0 <= token_id < len(tokenizer.vocab):
        return []
    if token_id in tokenizer.special_ids or token_id in set(unigram.byte_block(tokenizer) or ()):
        return []
    try:
        text = tokenizer.vocab[token_id].decode("utf-8")
    except UnicodeDecodeError:
        return []
    return [(ids, p) for ids, p in unigram.nbest(tokenizer, text, n + 1) if ids != [token_id]][:n]
