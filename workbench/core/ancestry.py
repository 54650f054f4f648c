"""Where a token came from: the binary tree of merges that built it, down to base bytes or
characters, and the later merges that use it. Plain functions over lookups, so the merge browser
can feed them from SQL pages and tests from a :class:`~workbench.core.model.Tokenizer`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Collection, Iterator, Mapping

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

MergeLookup = Callable[[Collection[int]], Mapping[int, tuple[int, int, int]]]


PieceLookup = Callable[[Collection[int]], Mapping[int, bytes]]


@dataclass(frozen=True)
class AncestryNode:
    """A token and, if a merge made it, the two tokens it was made of (``parts``)."""

    token_id: int
    piece: bytes
    rank: int | None = None  # rank of the (first) merge that created the token; None for base tokens
    parts: tuple[AncestryNode, ...] = ()

    @property
    def is_base(self) -> bool:
        return not self.parts

    # Every walk below is iterative: a legitimately trained chain (a 1,500-letter line without a
    # pre-tokenizer) nests merges 1,500 deep, beyond Python's recursion limit.

    def walk(self) -> Iterator[AncestryNode]:
        """Every node, parent before its parts, left part before right (a shared part once per use)."""
        stack: list[AncestryNode] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.parts))

    def leaves(self) -> list[AncestryNode]:
        """The base tokens the piece is made of, left to right."""
        return [node for node in self.walk() if not node.parts]

    def depth(self) -> int:
        """Nodes on the longest path down to a base token (1 for a base token itself)."""
        deepest = 0
        stack: list[tuple[AncestryNode, int]] = [(self, 1)]
        while stack:
            node, level = stack.pop()
            deepest = max(deepest, level)
            stack.extend((part, level + 1) for part in node.parts)
        return deepest

    def merges(self) -> list[int]:
        """Ranks of every merge in the tree, in the order they were learned."""
        return sorted({n.rank for n in self.walk() if n.rank is not None})

    def __repr__(self) -> str:  # the generated one recurses through every level
        return f"AncestryNode(token_id={self.token_id}, piece={self.piece!r}, rank={self.rank}, parts={len(self.parts)})"


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
    # Built bottom-up with an explicit stack (no recursion: chains can be thousands of merges deep).
    # ``limit`` is the rank of the merge a part belongs to: a part made at or after it is shown as a
    # leaf, so a damaged file whose merges refer forward cannot loop.
    memo: dict[int, AncestryNode] = {}
    built: list[AncestryNode] = []
    todo: list[tuple[int, float, bool]] = [(token_id, math.inf, False)]
    while todo:
        tid, limit, parts_done = todo.pop()
        entry = made.get(tid)
        if entry is None or entry[0] >= limit:
            built.append(AncestryNode(tid, pieces.get(tid, b""), None))
            continue
        if not parts_done:
            if tid in memo:
                built.append(memo[tid])
                continue
            rank, left, right = entry
            todo += [(tid, limit, True), (right, rank, False), (left, rank, False)]
            continue
        right_node, left_node = built.pop(), built.pop()
        memo[tid] = node = AncestryNode(tid, pieces.get(tid, b""), entry[0], (left_node, right_node))
        built.append(node)
    return built[0]


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
