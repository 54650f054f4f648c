"""The textbook BPE loop: recount every pair after every merge.

Kept as the oracle for the incremental trainer (tests compare merge for merge) and as the
"textbook algorithm" anchor of the benchmark. Quadratic on purpose; never used for real work.
"""

from __future__ import annotations

from typing import Mapping

from workbench.core.bpe import BpeTrainer, TrainConfig


def train_reference(word_counts: Mapping[str, int], config: TrainConfig) -> list[tuple[bytes, bytes]]:
    """Merges as ``(left piece, right piece)`` in order, by full recount each step."""
    setup = BpeTrainer(word_counts, config)  # same initial vocabulary and symbol lists
    vocab = list(setup.vocab)
    words = [list(w) for w in setup.words]
    freqs = list(setup.freqs)
    piece_id = {p: i for i, p in enumerate(vocab) if i >= len(setup.special_tokens)}
    hf_rank = setup._hf_rank() if config.tie_break == "hf" else None
    merges: list[tuple[bytes, bytes]] = []
    target_vocab = config.vocab_size if config.vocab_size is not None else float("inf")
    target_merges = config.merges if config.merges is not None else float("inf")
    while len(merges) < target_merges and len(vocab) < target_vocab:
        stats: dict[tuple[int, int], int] = {}
        for sym, f in zip(words, freqs):  # words in order of first appearance, pairs left to right
            for pair in zip(sym, sym[1:]):
                stats[pair] = stats.get(pair, 0) + f
        if not stats:
            break
        if hf_rank is None:
            best = max(stats, key=lambda p: stats[p])  # first maximal pair in reading order
        else:
            best = min(stats, key=lambda p: (-stats[p], hf_rank[p[0]], hf_rank[p[1]]))
        if stats[best] < max(1, config.min_frequency):
            break
        piece = vocab[best[0]] + vocab[best[1]]
        new = piece_id.get(piece)
        if new is None:
            new = len(vocab)
            vocab.append(piece)
            piece_id[piece] = new
            if hf_rank is not None:
                hf_rank.append(new)
        merges.append((vocab[best[0]], vocab[best[1]]))
        words[:] = [replace_pair(sym, best, new) for sym in words]
    return merges


def replace_pair(sym: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """``sym`` with every occurrence of ``pair`` (left to right, not overlapping) replaced by ``new``:
    one merge applied to one word, the textbook way (the WordPiece twin applies merges with it too)."""
    out, i = [], 0
    while i < len(sym):
        if i < len(sym) - 1 and (sym[i], sym[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(sym[i])
            i += 1
    return out

