"""Rebuild a merge list from a rank-only vocabulary (``.tiktoken``, SentencePiece-style scores).

A ``.tiktoken`` file lists tokens and ranks but no merges: tiktoken merges whichever adjacent pair
has the lowest-ranked *concatenation*. The merge browser still wants ``(left, right, new)`` rows, so
for every multi-byte token, in rank order, we run that same byte-rank BPE on the token's own bytes
using only lower ranks (as ``tiktoken/_educational.py`` and minbpe's ``recover_merges`` do): the two
parts left are the pair that creates it. This is bookkeeping for display and export; the imported
tokenizer keeps ``merge_rule="bytes"`` so encoding never depends on it.
"""

from __future__ import annotations

from typing import Mapping


def split_below(ranks: Mapping[bytes, int], piece: bytes, max_rank: int) -> list[bytes]:
    """Byte-rank BPE of ``piece`` with ranks below ``max_rank``; stops at two parts (the next
    merge could only be ``piece`` itself)."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    get = ranks.get
    while len(parts) > 2:
        best_i = -1
        best_rank = max_rank
        for i in range(len(parts) - 1):
            rank = get(parts[i] + parts[i + 1])
            if rank is not None and rank < best_rank:
                best_i, best_rank = i, rank
        if best_i < 0:
            break
        parts[best_i : best_i + 2] = [parts[best_i] + parts[best_i + 1]]
    return parts


# Splitting a token costs up to len(token)**2 steps: real files stop at 128 bytes (cl100k), a
# hostile one with a 100 KB token would take hours. Longer tokens are reported as unexplained.
MAX_RECOVER_BYTES = 256


def recover_merges(ranks: Mapping[bytes, int]) -> tuple[list[tuple[int, int, int]], list[int]]:
    """``(merges in rank order, ids of tokens no two-part split explains)``.

    Single bytes are base symbols. A multi-byte token whose parts are not two known tokens (a
    hand-edited file), or one longer than :data:`MAX_RECOVER_BYTES`, is reported instead of
    invented; real OpenAI files have none.
    """
    merges: list[tuple[int, int, int]] = []
    unexplained: list[int] = []
    for piece, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(piece) < 2:
            continue
        if len(piece) > MAX_RECOVER_BYTES:
            unexplained.append(rank)
            continue
        parts = split_below(ranks, piece, rank)
        if len(parts) != 2:
            unexplained.append(rank)
            continue
        merges.append((ranks[parts[0]], ranks[parts[1]], rank))
    return merges, unexplained
