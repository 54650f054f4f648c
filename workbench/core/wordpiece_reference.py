"""The textbook WordPiece loop: recount every pair and symbol after every merge.

Kept as the oracle for :mod:`workbench.core.wordpiece` (a hypothesis test holds them equal) and
as the "textbook algorithm" of the benchmark. Quadratic on purpose; never used for real work.

It shares the trainer's setup (initial ids, words as symbol lists) and its rules — likelihood
``c(xy) / (c(x) c(y))`` with ties by higher count then smaller ``(left id, right id)``; frequency
with ties by smaller ids — but not the priority-queue quirks ``tokenizers`` has and the fast
trainer replays for ``frequency``: the two agree whenever no merge re-makes an existing piece.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.core.bpe_reference import replace_pair
from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer


def train_reference(word_counts: Mapping[str, int], config: WordPieceConfig, *,
                    continuation_order: Sequence[str] | None = None) -> tuple[list[str], list[tuple[int, int, int]]]:
    """``(pieces in id order, merges as (left, right, new))`` by full recount each step."""
    setup = WordPieceTrainer(word_counts, config, continuation_order=continuation_order)
    pieces = list(setup.pieces)
    id_of = {piece: i for i, piece in enumerate(pieces)}
    words = [list(w) for w in setup.words]
    freqs = list(setup.freqs)
    prefix = config.continuing_prefix
    min_freq = max(1, config.min_frequency)
    target_vocab = config.vocab_size if config.vocab_size is not None else float("inf")
    target_merges = config.merges if config.merges is not None else float("inf")
    merges: list[tuple[int, int, int]] = []
    while len(merges) < target_merges and len(pieces) < target_vocab:
        pair_count: dict[tuple[int, int], int] = {}
        symbol_count: dict[int, int] = {}
        for sym, f in zip(words, freqs):
            for s in sym:
                symbol_count[s] = symbol_count.get(s, 0) + f
            for pair in zip(sym, sym[1:]):
                pair_count[pair] = pair_count.get(pair, 0) + f
        if config.score == "frequency":
            if not pair_count:
                break
            best = min(pair_count, key=lambda p: (-pair_count[p], p))
            if pair_count[best] < min_freq:
                break
        else:
            eligible = [p for p, c in pair_count.items() if c >= min_freq]
            if not eligible:
                break
            best = min(eligible, key=lambda p: (-pair_count[p] / (symbol_count[p[0]] * symbol_count[p[1]]),
                                                -pair_count[p], p))
        left, right = pieces[best[0]], pieces[best[1]]
        piece = left + (right.removeprefix(prefix))
        new = id_of.get(piece)
        if new is None:
            new = id_of[piece] = len(pieces)
            pieces.append(piece)
        merges.append((best[0], best[1], new))
        words[:] = [replace_pair(sym, best, new) for sym in words]
    return pieces, merges
