"""When merge-rank BPE and tiktoken's token-rank BPE give the same ids, proven at load time.

Two rules split a pre-token's bytes (both start from single bytes and join two adjacent parts at a
time; among equals the leftmost goes first):

* **merge rank** (GPT-2, ``tokenizers``, our runs): join the adjacent pair ``(p, q)`` that is a
  merge, the one with the lowest merge rank;
* **token rank** (tiktoken): join the adjacent pair whose *bytes* ``p + q`` are a token, the one
  with the lowest token rank.

Give each merged token the rank of the merge that makes it. Every merge candidate is then a token
candidate of the same rank, but not the other way round: parts ``t`` + ``he`` are a token candidate
for ``the`` when the merge is ``(th, e)``. The rules agree on **every** input when

1. the 256 single bytes are tokens; every merge ``(l, r) → t`` has ``bytes(t) = bytes(l) + bytes(r)``
   with ``l`` and ``r`` single bytes or made by an *earlier* merge; no two tokens (bytes, merged
   ones) have the same bytes — the table holds only these, so a multi-byte token no merge makes is
   not in it (the merge rule never produces it either);
2. every merged token encodes to itself by the merge rule: ``E(bytes(t)) = [t]`` (no rank-dead
   merged token; :func:`workbench.core.audit` calls the others unreachable).

*Proof.* By (1) a merge only creates pairs of a higher rank, so the merge rule applies merges in
rank order, each left to right, and the token rule does the same while it picks merge candidates.
Suppose the token rule first differs: parts ``p``, ``q`` are adjacent, ``p + q = t`` is the token
of lowest rank among the candidates, and ``(p, q)`` is not ``t``'s merge ``(l, r)``. Up to here both
rules ran alike, so every merge of rank below ``rank(t)`` has been applied. Encode ``t`` alone by
the merge rule: by (2) it ends in ``[t]`` through ``(l, r)``, so some merge of rank ``k < rank(t)``
joins two symbols across the offset ``|p|`` (``l`` or ``r`` straddles it); take the first such.
Before ``k`` that run keeps ``[0, |p|)`` and ``[|p|, |t|)`` apart, so each half evolves as the
merge rule on ``p`` alone and on ``q`` alone — exactly as the spans of the current parts ``p`` and
``q`` evolved in the text, whose edges were never crossed either (they are parts now; a run of equal
pairs is taken left to right from the same edge in both). So at rank ``k`` the text, too, held
the two symbols of that merge side by side at the offset ``|p|`` and joined them: ``p`` would not be
a part. Hence the token rule only ever picks merge candidates, of the same rank and position, and
the two runs are the same. ∎

Both conditions are checked here in one pass over the merges (2 is the merge rule itself run on
each merged token: ~0.07 s for 8k merges, ~1.4 s for cl100k_base read as its 100,000 recovered
merges — which meets them too — against ~40 s to encode the shared corpora in Python). Runs trained by BPE meet them by
construction; a hand-edited, trimmed or extended vocabulary may not (a token reachable by two
splits, a rank-dead token), and then the merge rule stays on the Python path. A merge-rank prefix
(``max_merges``) of a tokenizer that meets them meets them too: a merged token's own run uses
only lower ranks.

The table's ranks are the tokenizer's ids when the merged ids grow with the merge rank (our runs,
GPT-2's files): tiktoken returns ids directly. Otherwise the ranks are positions and ``ids`` maps
them back.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.core.model import Tokenizer


@dataclass(frozen=True)
class RankTable:
    """tiktoken ranks for a merge-rank tokenizer: ``ranks`` (bytes → rank), ``ids`` (rank → id)
    or None when ranks are ids; ``merged_ranks[k]`` the rank of merge ``k``'s token."""

    ranks: dict[bytes, int]
    ids: list[int] | None
    merged_ranks: list[int]

    def prefix(self, merges: int) -> RankTable:
        """The table of the first ``merges`` merges (the bytes always stay)."""
        if merges >= len(self.merged_ranks):
            return self
        dropped = set(self.merged_ranks[merges:])
        return RankTable({p: r for p, r in self.ranks.items() if r not in dropped}, self.ids,
                         self.merged_ranks[:merges])


_PROVEN: dict[int, tuple[weakref.ref, RankTable | None]] = {}


def tiktoken_table(tok: Tokenizer, byte_ids: Sequence[int]) -> RankTable | None:
    """The rank table under which tiktoken's rule gives ``tok``'s merge-rule ids (all its merges),
    or None when the conditions above do not hold. ``byte_ids[b]``: the id of byte ``b``.
    Computed once per tokenizer object."""
    key = id(tok)
    found = _PROVEN.get(key)
    if found is not None and found[0]() is tok:
        return found[1]
    table = _prove(tok, byte_ids)
    _PROVEN[key] = (weakref.ref(tok, _forget(key)), table)
    return table


def _forget(key: int) -> Callable[[weakref.ref], None]:
    def drop(_ref: weakref.ref) -> None:
        _PROVEN.pop(key, None)
    return drop


def _prove(tok: Tokenizer, byte_ids: Sequence[int]) -> RankTable | None:
    vocab = tok.vocab
    specials = tok.special_ids
    if len(byte_ids) != 256 or len(set(byte_ids)) != 256:
        return None
    byte_of = {token_id: b for b, token_id in enumerate(byte_ids)}
    seen = {bytes([b]) for b in range(256)}
    formed: dict[int, int] = {}  # id → merge rank
    for rank, (left, right, new) in enumerate(tok.merges):  # condition 1
        if new in specials or new in formed or new in byte_of:
            return None
        if not ((left in byte_of or left in formed) and (right in byte_of or right in formed)):
            return None
        piece = vocab[left] + vocab[right]
        if vocab[new] != piece or piece in seen:
            return None
        seen.add(piece)
        formed[new] = rank
    pair_rank = {(a, b): (rank, new) for rank, (a, b, new) in enumerate(tok.merges)}
    if not _self_encoding(tok, byte_ids, pair_rank):  # condition 2
        return None
    merged_ids = [new for _a, _b, new in tok.merges]
    ranks: dict[bytes, int]
    if all(a < b for a, b in zip(merged_ids, merged_ids[1:])):  # byte ranks are never compared
        ranks = {bytes([b]): byte_ids[b] for b in range(256)}
        ranks.update((vocab[new], new) for new in merged_ids)
        return RankTable(ranks, None, merged_ids)
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update((vocab[new], 256 + k) for k, new in enumerate(merged_ids))
    return RankTable(ranks, list(byte_ids) + merged_ids, list(range(256, 256 + len(merged_ids))))


def _self_encoding(tok: Tokenizer, byte_ids: Sequence[int],
                   pair_rank: dict[tuple[int, int], tuple[int, int]]) -> bool:
    """Condition 2: each merged token's bytes encode, by the merge rule, to that token alone
    (the encoder's own merge rule, so the proof holds for exactly what the Python path computes)."""
    from workbench.core.encoder import bpe_merge_rule

    vocab = tok.vocab
    for _a, _b, new in tok.merges:
        symbols = [byte_ids[b] for b in vocab[new]]
        if bpe_merge_rule(symbols, pair_rank) != [new]:
            return False
    return True
