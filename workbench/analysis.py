"""What a learned merge table means: where a token came from, who uses it, which entries the
corpus never needs, and how two tokenizers differ.

Plain Python over :class:`~workbench.core.model.Tokenizer` and the corpus readers (no Qt, no
numpy), shared by the merge browser and scripts:

* :func:`piece_text` — a piece as readable text (escapes for control characters and whitespace,
  ``␣`` for a space, ``\\xNN`` for bytes that are not whole UTF-8 characters; never GPT-2's ``Ġ``).
* :func:`build_ancestry` / :func:`ancestry` — the binary tree of merges that built a token, down
  to base bytes or characters; :func:`children` — the later merges that use a token.
* :func:`corpus_word_counts` + :func:`vocab_usage` — how often each vocabulary entry occurs when
  the training corpus is fully encoded; entries that never occur are flagged.
* :func:`diff_vocab` + :func:`split_differences` — tokens only in A, only in B, shared ones with
  their rank shift; corpus words that split differently, most frequent first.
* CSV writers for merge, vocabulary and diff tables.

Long functions take ``should_stop`` / ``progress`` hooks and return ``None`` when stopped, so a
Qt worker can drive them off the GUI thread and cancel between two words. What this module
leaves out: SQL paging (``workbench.ui.merge_source``) and any widget.
"""

from __future__ import annotations

import csv
import io
import time
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Collection, Iterable, Iterator, Mapping, Sequence

from workbench.core.count import count_pretokens
from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

ShouldStop = Callable[[], bool]
Progress = Callable[[int, int, str], None]  # done, total, what


class _Pacer:
    """For long loops: stop when asked, and report progress at most every 50 ms."""

    def __init__(self, total: int, what: str, should_stop: ShouldStop | None,
                 progress: Progress | None) -> None:
        self.total, self.what = total, what
        self.should_stop, self.progress = should_stop, progress
        self.last = time.monotonic()

    def stopped(self, done: int) -> bool:
        if self.should_stop is not None and self.should_stop():
            return True
        now = time.monotonic()
        if self.progress is not None and now - self.last > 0.05:
            self.last = now
            self.progress(done, self.total, self.what)
        return False


# ---------------------------------------------------------------------------------------------------
# pieces as text

VISIBLE_SPACE = "\u2423"  # ␣
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", " ": VISIBLE_SPACE,
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
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
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


# ---------------------------------------------------------------------------------------------------
# ancestry and children

MergeLookup = Callable[[Collection[int]], Mapping[int, tuple[int, int, int]]]
PieceLookup = Callable[[Collection[int]], Mapping[int, bytes]]


@dataclass(frozen=True)
class AncestryNode:
    """A token and, if a merge made it, the two tokens it was made of (``parts``)."""

    token_id: int
    piece: bytes
    rank: int | None = None  # rank of the (first) merge that created the token; None for base tokens
    parts: tuple["AncestryNode", ...] = ()

    @property
    def is_base(self) -> bool:
        return not self.parts

    def leaves(self) -> list["AncestryNode"]:
        """The base tokens the piece is made of, left to right."""
        if not self.parts:
            return [self]
        return [leaf for part in self.parts for leaf in part.leaves()]

    def walk(self) -> Iterator["AncestryNode"]:
        yield self
        for part in self.parts:
            yield from part.walk()

    def depth(self) -> int:
        return 1 + max((p.depth() for p in self.parts), default=0)

    def merges(self) -> list[int]:
        """Ranks of every merge in the tree, in the order they were learned."""
        return sorted({n.rank for n in self.walk() if n.rank is not None})


def build_ancestry(token_id: int, merges_of: MergeLookup, pieces_of: PieceLookup) -> AncestryNode:
    """The tree of merges that built ``token_id``.

    ``merges_of(ids)`` returns ``{id: (rank, left, right)}`` for the ids among ``ids`` that a merge
    created (its first merge, when a later one recreated the same piece); ``pieces_of(ids)`` their
    pieces. Lookups are batched one tree level at a time, so an SQL-backed lookup costs one query
    per level, not one per node. A merge's parts always come from earlier merges; a part that does
    not (a damaged file) is shown as a leaf instead of looping.
    """
    made: dict[int, tuple[int, int, int]] = {}
    frontier = {token_id}
    seen = set(frontier)
    while frontier:
        found = merges_of(frontier)
        made.update(found)
        nxt = set()
        for _rank, left, right in found.values():
            for part in (left, right):
                if part not in seen:
                    seen.add(part)
                    nxt.add(part)
        frontier = nxt
    pieces = pieces_of(seen)
    memo: dict[int, AncestryNode] = {}

    def node(tid: int, limit: float) -> AncestryNode:
        entry = made.get(tid)
        if entry is not None and entry[0] < limit:
            key = tid
            if key in memo:
                return memo[key]
            rank, left, right = entry
            built = AncestryNode(tid, pieces.get(tid, b""), rank,
                                 (node(left, rank), node(right, rank)))
            memo[key] = built
            return built
        return AncestryNode(tid, pieces.get(tid, b""), None)

    return node(token_id, float("inf"))


def first_merges(tokenizer: Tokenizer) -> dict[int, tuple[int, int, int]]:
    """new id → (rank, left, right) of the first merge that created it."""
    out: dict[int, tuple[int, int, int]] = {}
    for rank, (left, right, new) in enumerate(tokenizer.merges):
        out.setdefault(new, (rank, left, right))
    return out


def ancestry(tokenizer: Tokenizer, token_id: int) -> AncestryNode:
    """:func:`build_ancestry` over an in-memory tokenizer."""
    if not 0 <= token_id < len(tokenizer.vocab):
        raise WorkbenchError(f"id {token_id} is not in this vocabulary (0 to {len(tokenizer.vocab) - 1})")
    made = first_merges(tokenizer)
    vocab = tokenizer.vocab
    return build_ancestry(token_id, lambda ids: {i: made[i] for i in ids if i in made},
                          lambda ids: {i: vocab[i] for i in ids if 0 <= i < len(vocab)})


@dataclass(frozen=True, slots=True)
class ChildMerge:
    """A merge that takes the token as its left or right part."""

    rank: int
    left: int
    right: int
    new_id: int


def children(tokenizer: Tokenizer, token_id: int) -> list[ChildMerge]:
    """Every merge that uses ``token_id`` as a part, in rank order."""
    return [ChildMerge(rank, a, b, n) for rank, (a, b, n) in enumerate(tokenizer.merges)
            if a == token_id or b == token_id]


# ---------------------------------------------------------------------------------------------------
# the corpus as word counts


def corpus_sources(paths_and_options: Sequence[tuple[str, Mapping]], fingerprints: Sequence[str] = ()):
    """Open the project's corpus files again; returns ``(sources, warnings)``.

    A missing file raises :class:`WorkbenchError` naming it; a file whose fingerprint changed since
    training is read anyway, with a warning (its counts no longer describe the training corpus).
    """
    from workbench.corpus import fingerprint_matches, open_source

    sources, warnings = [], []
    for index, (path, options) in enumerate(paths_and_options):
        if not Path(path).exists():
            raise WorkbenchError(f"{path}: the corpus file is missing (moved or deleted since training): "
                                 "put it back to count token frequencies")
        opts = {k: v for k, v in dict(options).items() if k in ("field", "column", "encoding", "kind")}
        sources.append(open_source(path, **opts))
        if index < len(fingerprints) and fingerprints[index] and \
                not fingerprint_matches(path, fingerprints[index]):
            warnings.append(f"{Path(path).name} changed since training")
    return sources, warnings


def corpus_word_counts(sources: Sequence, *, pretokenizer: str, normalizer: Sequence[str] = (),
                       should_stop: ShouldStop | None = None,
                       progress: Progress | None = None) -> dict[str, int] | None:
    """``{pre-token: count}`` over the files, exactly as training counted them (None if stopped).

    Running text goes through the normalizer and pre-tokenizer; word-count tables are normalized
    and added as they are (their words are already pre-tokens), as :mod:`workbench.training` does.
    """
    from workbench.training import count_sources

    stop = should_stop or (lambda: False)
    report = None if progress is None else (lambda done, total: progress(done, total, "reading the corpus"))
    counts = count_sources(sources, pretokenizer=pretokenizer, normalizer=normalizer, progress=report,
                           should_stop=stop)
    return None if stop() else counts


def word_counts_of_text(text: str, *, pretokenizer: str = "whitespace",
                        normalizer: Sequence[str] = ()) -> dict[str, int]:
    """``{pre-token: count}`` of one string (tests, small samples)."""
    return count_pretokens([text], pretokenizer=pretokenizer, normalizer=tuple(normalizer))


# ---------------------------------------------------------------------------------------------------
# vocabulary usage


@dataclass(frozen=True)
class VocabUsage:
    """Occurrences of every id when the corpus is encoded with the tokenizer.

    ``never_used`` lists entries that never occur: they were only stepping stones of later merges
    (or bytes the corpus does not contain) — the candidates for under-trained tokens. Special
    tokens are left out of the flag and of its share: corpus text never contains them as tokens.
    Ids an imported vocabulary leaves empty are left out too.
    """

    frequencies: tuple[int, ...]
    counted: tuple[bool, ...]  # which ids take part in the never-used share
    total_tokens: int
    word_types: int

    @property
    def never_used(self) -> list[int]:
        return [i for i, (f, c) in enumerate(zip(self.frequencies, self.counted)) if c and f == 0]

    @property
    def eligible(self) -> int:
        return sum(self.counted)

    @property
    def never_used_share(self) -> float:
        """Never-used entries as a fraction of the (non-special) vocabulary."""
        return len(self.never_used) / self.eligible if self.eligible else 0.0

    def is_never_used(self, token_id: int) -> bool:
        return (0 <= token_id < len(self.frequencies) and self.counted[token_id]
                and self.frequencies[token_id] == 0)


def encode_pretoken(encoder: Encoder, piece: str) -> Sequence[int]:
    """Ids of one pre-token, exactly as :meth:`Encoder.encode` produces them inside a text.

    Uses the encoder's per-pre-token step (what ``encode`` calls after splitting), because
    splitting a pre-token again is not guaranteed to give it back unchanged.
    """
    step = getattr(encoder, "_encode_piece", None)
    if step is not None:
        return step(piece)
    return encoder.encode(piece)


def vocab_usage(tokenizer: Tokenizer, word_counts: Mapping[str, int], *,
                should_stop: ShouldStop | None = None,
                progress: Progress | None = None) -> VocabUsage | None:
    """Frequencies of every id over a ``{pre-token: count}`` table (None if stopped).

    Each distinct pre-token is encoded once and weighted by its count — the same ids as encoding
    the whole corpus, in a fraction of the time.
    """
    encoder = Encoder(tokenizer)
    freq = [0] * len(tokenizer.vocab)
    total = len(word_counts)
    pace = _Pacer(total, "encoding", should_stop, progress)
    tokens = 0
    for index, (word, n) in enumerate(word_counts.items()):
        if index % 512 == 0 and pace.stopped(index):
            return None
        ids = encode_pretoken(encoder, word)
        for token_id in ids:
            freq[token_id] += n
        tokens += n * len(ids)
    specials = tokenizer.special_ids
    counted = tuple(i not in specials and bool(p) for i, p in enumerate(tokenizer.vocab))
    if progress is not None:
        progress(total, total, "encoding")
    return VocabUsage(tuple(freq), counted, tokens, total)


# ---------------------------------------------------------------------------------------------------
# comparing two tokenizers


@dataclass(frozen=True, slots=True)
class TokenDiff:
    """One piece and where it sits in A and B (``None`` where a side lacks it or it is a base token)."""

    piece: bytes
    id_a: int | None
    id_b: int | None
    rank_a: int | None
    rank_b: int | None

    @property
    def shift(self) -> int | None:
        """How many merges later B learned it than A (negative: earlier)."""
        if self.rank_a is None or self.rank_b is None:
            return None
        return self.rank_b - self.rank_a


@dataclass(frozen=True)
class VocabDiff:
    only_a: list[TokenDiff]
    only_b: list[TokenDiff]
    shared: list[TokenDiff]


def _ranks_by_piece(tok: Tokenizer) -> dict[bytes, tuple[int, int | None]]:
    """piece → (id, rank of the merge that made it, or None): special tokens count by their text."""
    made = first_merges(tok)
    out: dict[bytes, tuple[int, int | None]] = {}
    for i, piece in enumerate(tok.vocab):
        if piece and piece not in out:
            entry = made.get(i)
            out[piece] = (i, entry[0] if entry else None)
    return out


def diff_vocab(a: Tokenizer, b: Tokenizer) -> VocabDiff:
    """Pieces only in A, only in B, and shared, each list in the order A (or B) learned them."""
    pa, pb = _ranks_by_piece(a), _ranks_by_piece(b)

    def order(entry: TokenDiff, side: str) -> tuple:
        rank = entry.rank_a if side == "a" else entry.rank_b
        tid = entry.id_a if side == "a" else entry.id_b
        return (rank is not None, rank if rank is not None else tid)

    only_a = [TokenDiff(p, i, None, r, None) for p, (i, r) in pa.items() if p not in pb]
    only_b = [TokenDiff(p, None, i, None, r) for p, (i, r) in pb.items() if p not in pa]
    shared = [TokenDiff(p, i, pb[p][0], r, pb[p][1]) for p, (i, r) in pa.items() if p in pb]
    only_a.sort(key=lambda e: order(e, "a"))
    only_b.sort(key=lambda e: order(e, "b"))
    shared.sort(key=lambda e: order(e, "a"))
    return VocabDiff(only_a, only_b, shared)


@dataclass(frozen=True, slots=True)
class SplitDifference:
    """A corpus word whose tokens differ; a split is ``None`` when that tokenizer cannot encode it."""

    word: str
    count: int
    split_a: tuple[bytes, ...] | None
    split_b: tuple[bytes, ...] | None


@dataclass(frozen=True)
class SplitReport:
    differences: list[SplitDifference]  # most frequent first
    word_types: int
    word_tokens: int
    differing_tokens: int  # occurrences of the differing words

    @property
    def differing_share(self) -> float:
        return self.differing_tokens / self.word_tokens if self.word_tokens else 0.0


def surface_split(encoder: Encoder, word: str, *, after_space: bool = False) -> tuple[bytes, ...] | None:
    """The word's tokens as the bytes of the text each covers (markers removed), or None.

    End-of-word markers and SentencePiece's ``▁`` are spelling, not text: two tokenizers that cut a
    word at the same places give equal splits even if one writes ``low</w>`` and the other ``low``.
    With ``after_space`` the word is encoded as it appears inside running text, after a space
    (GPT-2-style tokenizers learn ``" you"``, not ``"you"``); that space is then removed from the
    split, so a tokenizer that drops whitespace compares equal to one that keeps it.
    """
    tok = encoder.tok
    try:
        ids = encoder.encode(" " + word if after_space else word)
    except WorkbenchError:
        return None
    eow = tok.end_of_word.encode("utf-8") if tok.end_of_word else b""
    meta = tok.pretokenizer == "metaspace"
    out = []
    for i in ids:
        piece = tok.vocab[i]
        if eow and piece.endswith(eow) and i not in tok.special_ids:
            piece = piece[: -len(eow)]
            if not piece:
                continue
        if meta:
            piece = piece.replace("\u2581".encode("utf-8"), b" ")
        out.append(piece)
    if after_space and out and out[0].startswith(b" "):
        out[0] = out[0][1:]
        if not out[0]:
            out.pop(0)
    return tuple(out)


def split_differences(a: Tokenizer, b: Tokenizer, word_counts: Mapping[str, int], *,
                      after_space: bool = True, should_stop: ShouldStop | None = None,
                      progress: Progress | None = None) -> SplitReport | None:
    """Words that split differently under A and B, most frequent first.

    Each distinct word is encoded on its own by both tokenizers — by default after a space, as it
    sits inside running text (see :func:`surface_split`).
    """
    ea, eb = Encoder(a), Encoder(b)
    words = sorted(word_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    total = len(words)
    pace = _Pacer(total, "comparing splits", should_stop, progress)
    diffs: list[SplitDifference] = []
    occurrences = differing = 0
    for index, (word, n) in enumerate(words):
        if index % 256 == 0 and pace.stopped(index):
            return None
        occurrences += n
        sa = surface_split(ea, word, after_space=after_space)
        sb = surface_split(eb, word, after_space=after_space)
        if sa != sb or sa is None:
            diffs.append(SplitDifference(word, n, sa, sb))
            differing += n
    if progress is not None:
        progress(total, total, "comparing splits")
    return SplitReport(diffs, total, occurrences, differing)


# ---------------------------------------------------------------------------------------------------
# CSV

MERGE_CSV_HEADER = ("rank", "left", "right", "merged", "frequency", "bytes", "chars", "token_id",
                    "merged_hex")
VOCAB_CSV_HEADER = ("id", "piece", "hex", "kind", "frequency", "never_used")


def _write_csv(path: str | Path | None, header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """Write (or, with ``path=None``, return) CSV text; files are UTF-8 with ``\\n`` line ends."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    text = buffer.getvalue()
    if path is not None:
        target = Path(path)
        tmp = target.with_name(f".{target.name}.partial")
        try:
            tmp.write_text(text, encoding="utf-8", newline="")
            tmp.replace(target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise WorkbenchError(f"Cannot write {target} ({exc.strerror or exc}); choose a writable folder.") from None
    return text


def merge_csv_rows(rows: Iterable) -> Iterator[tuple]:
    """CSV rows for merge entries (anything with rank, left/right/merged pieces, frequency, new_id)."""
    for r in rows:
        yield (r.rank, csv_piece(r.left_piece), csv_piece(r.right_piece), csv_piece(r.piece),
               "" if r.frequency is None else r.frequency, len(r.piece or b""),
               piece_chars(r.piece or b""), r.new_id, piece_hex(r.piece or b""))


def write_merges_csv(path: str | Path | None, rows: Iterable) -> str:
    """``rank,left,right,merged,frequency`` (the merges-csv export's columns) plus lengths, id, hex."""
    return _write_csv(path, MERGE_CSV_HEADER, merge_csv_rows(rows))


def write_vocab_csv(path: str | Path | None, rows: Iterable) -> str:
    """Rows with id, piece, kind, frequency (None = not counted) and never_used (None = unknown)."""
    def gen():
        for r in rows:
            yield (r.id, csv_piece(r.piece), piece_hex(r.piece), r.kind,
                   "" if r.frequency is None else r.frequency,
                   "" if r.never_used is None else int(bool(r.never_used)))
    return _write_csv(path, VOCAB_CSV_HEADER, gen())


def write_table_csv(path: str | Path | None, header: Sequence[str], rows: Iterable[Sequence]) -> str:
    return _write_csv(path, header, rows)
