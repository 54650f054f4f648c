"""How two tokenizers differ: tokens only in A, only in B, shared ones with their rank shift
(:func:`diff_vocab`), and corpus words that split differently, most frequent first
(:func:`split_differences`). Left out: SQL paging (:mod:`workbench.store.browse`) and widgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from workbench.core.ancestry import first_merges
from workbench.core.encoder import Encoder
from workbench.core.metrics import Pacer, Progress, ShouldStop
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError


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
    pace = Pacer(total, "comparing splits", should_stop, progress)
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
