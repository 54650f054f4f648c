"""Every word's Unigram lattice in flat numpy arrays: forward-backward and Viterbi over all words at once.

The trainer (:mod:`workbench.core.unigram`) keeps one lattice per distinct word: its edges
``(start, end, piece)`` sorted by ``(start, end)``. Walked edge by edge in Python that is most of a
run (~0.4 M edges/s); here the edges of all words sit in a few int32 arrays and one pass does a
*layer* — every edge that starts at character ``k`` of its word, in all words at once — with a few
numpy operations, so the work per edge is in C.

**Exact, not approximately equal.** Every float is the one the edge-by-edge loop computes, in the
same order of operations:

* forward, ``alpha[e] += alpha[s] * w``: layers go by increasing ``k``, so each ``alpha[e]`` gets its
  terms in increasing start order, as the loop adds them; inside a layer no two edges end at the
  same node (the same word's edges from one start end at different places).
* backward, ``beta[s] += w * beta[e]`` over the edges in reverse order: layers by decreasing ``k``;
  the edges of one start are summed by ``bincount`` (a plain running sum in array order) in
  decreasing ``end`` order, as the loop meets them.
* expected counts, ``expected[p] += alpha[s] * t``: one ``bincount`` over every edge in the loop's
  order (word by word, each word's edges in reverse).
* Viterbi: strictly better candidates win, layer by layer in start order, as the loop compares them.

Words whose scaled sum over- or underflows are handed back to the caller (it redoes them in log space,
edge by edge) with their slots in the expected-count order, so their terms land where the loop put
them. Left out: any use of float reductions that sum in another order (``np.sum`` is pairwise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np


class FlatLattice:
    """The lattices of ``len(lens)`` words: edges in word order, each word's sorted by (start, end)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, pieces: np.ndarray, edges_per_word: np.ndarray,
                 lens: np.ndarray, counts: np.ndarray, check: Callable[[], None] = lambda: None):
        """``starts``/``ends`` are positions inside each word, ``pieces`` the piece ids, all in word
        order; ``edges_per_word[w]`` edges belong to word ``w`` of ``lens[w]`` characters, seen
        ``counts[w]`` times. ``check`` is called between the steps of building the layout (a
        stop flag's look: each step is a pass over the edges)."""
        self.lens = lens.astype(np.int64)
        self.counts = counts.astype(np.int64)
        self.node_off = np.zeros(len(lens), dtype=np.int64)  # node of each word's position 0
        if len(lens):
            np.cumsum(self.lens[:-1] + 1, out=self.node_off[1:])
        self.n_nodes = int(self.node_off[-1] + self.lens[-1] + 1) if len(lens) else 0
        # Positions inside a word in 16 bits when every word is shorter than 32,767 characters.
        ptype = np.int16 if not len(lens) or int(lens.max()) < (1 << 15) - 1 else np.int32
        self._set_edges(np.ascontiguousarray(starts, dtype=ptype), np.ascontiguousarray(ends, dtype=ptype),
                        np.ascontiguousarray(pieces, dtype=np.int32), np.ascontiguousarray(edges_per_word, dtype=np.int64),
                        check)

    # ---- layout --------------------------------------------------------------------------------
    def _set_edges(self, starts: np.ndarray, ends: np.ndarray, pieces: np.ndarray, per_word: np.ndarray,
                   check: Callable[[], None]) -> None:
        # Index arrays are int32 while every node and edge number fits (a corpus of ~2 billion
        # characters would not): ~4 bytes per edge and array, and the temporaries go at once.
        self.local_s, self.local_e, self.pieces, self.per_word = starts, ends, pieces, per_word
        self.edge_off = np.zeros(len(per_word) + 1, dtype=np.int64)
        np.cumsum(per_word, out=self.edge_off[1:])
        n_edges = len(pieces)
        itype = np.int32 if max(self.n_nodes, n_edges) < (1 << 31) - 1 else np.int64
        word = np.repeat(np.arange(len(per_word), dtype=itype), per_word)
        # Layer order: by start inside the word, then word order (a stable sort keeps it: a radix
        # sort for 16-bit starts).
        order = np.argsort(starts, kind="stable").astype(itype)
        check()
        self.layer_pieces = pieces[order]
        word_in_layers = word[order]
        base = self.node_off.astype(itype)
        self.gs = base[word_in_layers] + starts[order].astype(itype)
        self.ge = base[word_in_layers] + ends[order].astype(itype)
        del word_in_layers
        check()
        sorted_starts = starts[order]
        bounds = np.flatnonzero(np.diff(sorted_starts)) + 1
        del sorted_starts
        cuts = [0, *bounds.tolist(), n_edges] if n_edges else [0]
        self.layers = list(zip(cuts[:-1], cuts[1:]))
        check()
        # Backward sums, per layer: for the layer's edges reversed (decreasing word, then end), the
        # distinct start nodes and each edge's index among them.
        self.back: list[tuple[np.ndarray, np.ndarray]] = []
        for k, (a, b) in enumerate(self.layers):
            if not k & 31:
                check()
            # In a layer the start nodes never decrease (words in order): equal ones are neighbours.
            rev = self.gs[a:b][::-1]
            new_group = np.empty(b - a, dtype=bool)
            new_group[:1] = True
            np.not_equal(rev[1:], rev[:-1], out=new_group[1:])
            self.back.append((rev[new_group], (np.cumsum(new_group, dtype=itype) - 1)))
        # The expected-count order of the edge-by-edge loop: words in order, each word's edges
        # reversed — flat edge i of word w goes to slot edge_off[w] + edge_off[w + 1] - 1 - i.
        mirror = (self.edge_off[:-1] + self.edge_off[1:] - 1).astype(itype)
        visit_of_flat = mirror[word]
        del word, mirror
        check()
        visit_of_flat -= np.arange(n_edges, dtype=itype)
        self.visit_of_layer = visit_of_flat[order]
        del order
        self.visit_pieces = np.empty(n_edges, dtype=np.int32)
        self.visit_pieces[visit_of_flat] = pieces

    def word_edges(self, w: int) -> tuple[list[int], list[int], list[int]]:
        """Word ``w``'s lattice as lists (starts, ends, pieces), sorted by (start, end)."""
        a, b = int(self.edge_off[w]), int(self.edge_off[w + 1])
        return self.local_s[a:b].tolist(), self.local_e[a:b].tolist(), self.pieces[a:b].tolist()

    def word_window(self, w: int, lo: int, hi: int) -> tuple[list[int], list[int], list[int]]:
        """The edges of word ``w`` that start in ``lo..hi-1``, as lists (starts, ends, pieces)."""
        a, b = int(self.edge_off[w]), int(self.edge_off[w + 1])
        starts = self.local_s[a:b]
        i, j = a + int(np.searchsorted(starts, lo)), a + int(np.searchsorted(starts, hi))
        return self.local_s[i:j].tolist(), self.local_e[i:j].tolist(), self.pieces[i:j].tolist()

    def keep(self, kept_piece: Sequence[bool], check: Callable[[], None] = lambda: None) -> None:
        """Drop every edge whose piece is not kept (``kept_piece[p]`` False); ``check`` as in the
        constructor."""
        mask = np.array(kept_piece, dtype=bool)[self.pieces]
        if mask.all():
            return
        word = np.repeat(np.arange(len(self.per_word), dtype=np.int32), self.per_word)
        per_word = np.bincount(word[mask], minlength=len(self.per_word)).astype(np.int64)
        del word
        starts, ends, pieces = self.local_s[mask], self.local_e[mask], self.pieces[mask]
        del mask
        # The old layout goes before the new one is made: the two never coexist.
        self.local_s = self.local_e = self.pieces = self.layer_pieces = self.gs = self.ge = np.zeros(0, np.int32)
        self.visit_of_layer = self.visit_pieces = self.local_s
        self.back = []
        check()
        self._set_edges(starts, ends, pieces, per_word, check)

    def last_occurrence(self, n_pieces: int) -> tuple[np.ndarray, np.ndarray]:
        """For each piece, the word of its last edge (−1: none) and that edge's start."""
        itype = np.int32 if len(self.pieces) < (1 << 31) - 1 else np.int64
        idx = np.arange(len(self.pieces), dtype=itype)
        last = np.full(n_pieces, -1, dtype=itype)
        np.maximum.at(last, self.pieces, idx)
        del idx
        word = np.searchsorted(self.edge_off, last, side="right") - 1
        word[last < 0] = -1
        start = np.where(last >= 0, self.local_s[np.maximum(last, 0)], 0)
        return word.astype(np.int64), start.astype(np.int64)

    # ---- passes ----------------------------------------------------------------------------------
    def forward_backward(self, weights: Sequence[float], check: Callable[[], None],
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Scaled forward-backward over every word: ``(z, bad, visit_pieces, contributions)``.

        ``z[w]`` is word ``w``'s sum over its segmentations; ``bad`` the words where it is not
        within (1e-250, 1e250) — their contributions are garbage, for the caller to replace;
        ``contributions`` are ``alpha[s] * w * beta[e]`` of every edge in the expected-count order,
        whose pieces are ``visit_pieces``."""
        # Each layer's edge weights are gathered when the layer is walked (twice), not kept for all
        # edges at once: 8 bytes per edge less at the E step's peak.
        weight = np.asarray(weights, dtype=np.float64)
        layer_pieces = self.layer_pieces
        alpha = np.zeros(self.n_nodes, dtype=np.float64)
        alpha[self.node_off] = 1.0
        gs, ge = self.gs, self.ge
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            for k, (a, b) in enumerate(self.layers):
                if not k & 31:
                    check()
                ends = ge[a:b]
                alpha[ends] += alpha[gs[a:b]] * weight[layer_pieces[a:b]]
            end_nodes = self.node_off + self.lens
            z = alpha[end_nodes]
            bad = ~((z > 1e-250) & (z < 1e250))
            beta = np.zeros(self.n_nodes, dtype=np.float64)
            beta[end_nodes] = np.where(bad, 0.0, self.counts / np.where(bad, 1.0, z))
            visit = np.empty(len(layer_pieces), dtype=np.float64)  # each edge's term, in the expected-count order
            slot = self.visit_of_layer
            for k in range(len(self.layers) - 1, -1, -1):
                if not k & 31:
                    check()
                a, b = self.layers[k]
                t = weight[layer_pieces[a:b]] * beta[ge[a:b]]
                visit[slot[a:b]] = alpha[gs[a:b]] * t
                targets, inverse = self.back[k]
                beta[targets] = np.bincount(inverse, weights=t[::-1], minlength=len(targets))
        return z, bad, self.visit_pieces, visit

    def viterbi(self, logs: Sequence[float], check: Callable[[], None]) -> tuple[np.ndarray, np.ndarray]:
        """The best path of every word (strictly better wins, first found kept): the piece of each
        token, and the word it belongs to."""
        lp = np.asarray(logs, dtype=np.float64)[self.layer_pieces]
        best = np.full(self.n_nodes, -math.inf, dtype=np.float64)
        best[self.node_off] = 0.0
        back_s = np.zeros(self.n_nodes, dtype=np.int64)
        back_p = np.zeros(self.n_nodes, dtype=np.int64)
        layer_pieces = self.layer_pieces
        gs, ge = self.gs, self.ge
        with np.errstate(invalid="ignore"):
            for k, (a, b) in enumerate(self.layers):
                if not k & 31:
                    check()
                s, e = gs[a:b], ge[a:b]
                cand = best[s] + lp[a:b]
                better = cand > best[e]
                won = e[better]
                best[won] = cand[better]
                back_s[won] = s[better]
                back_p[won] = layer_pieces[a:b][better]
        token_pieces: list[np.ndarray] = []
        token_words: list[np.ndarray] = []
        cur = self.node_off + self.lens
        word = np.arange(len(self.lens), dtype=np.int64)
        live = cur > self.node_off
        cur, word = cur[live], word[live]
        while len(cur):
            check()
            token_pieces.append(back_p[cur])
            token_words.append(word)
            cur = back_s[cur]
            live = cur > self.node_off[word]
            cur, word = cur[live], word[live]
        if not token_pieces:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(token_pieces), np.concatenate(token_words)


class LatticeBuilder:
    """Collects the seeding's edges block by block (a block's ``(start, end, piece)`` tuples become
    one small array at once, so the Python tuples of the whole corpus never coexist)."""

    def __init__(self) -> None:
        self.chunks: list[np.ndarray] = []
        self.per_word: list[int] = []

    def add_block(self, pieces: list[int], limits: Sequence[Sequence[int]]) -> None:
        """One block of words: ``limits[w][i]`` is the last end of a substring from start ``i`` of word
        ``w`` (at least ``i + 1``) and ``pieces`` the piece id of each such substring (−1: none),
        word by word, by start then end."""
        lens = np.fromiter(map(len, limits), dtype=np.int64, count=len(limits))
        lim = np.fromiter(chain.from_iterable(limits), dtype=np.int64, count=int(lens.sum()))
        word_first = np.cumsum(lens) - lens
        local = np.arange(len(lim), dtype=np.int64) - np.repeat(word_first, lens)
        spans = np.maximum(lim, local + 1) - local  # substrings from each start
        starts = np.repeat(local, spans)
        span_first = np.cumsum(spans) - spans
        ends = starts + 1 + (np.arange(len(starts), dtype=np.int64) - np.repeat(span_first, spans))
        word = np.repeat(np.repeat(np.arange(len(lens), dtype=np.int64), lens), spans)
        ids = np.array(pieces, dtype=np.int64)
        hit = ids >= 0
        self.chunks.append(np.stack([starts[hit], ends[hit], ids[hit]], axis=1).astype(np.int32))
        self.per_word.extend(np.bincount(word[hit], minlength=len(lens)).tolist())

    def finish(self, lens: Sequence[int], counts: Sequence[int]) -> FlatLattice:
        columns = []
        for k in range(3):  # column by column: no copy of all edges × 3 beside the blocks
            columns.append(np.concatenate([c[:, k] for c in self.chunks]) if self.chunks
                           else np.zeros(0, dtype=np.int32))
        self.chunks = []
        return FlatLattice(columns[0], columns[1], columns[2], np.array(self.per_word, dtype=np.int64),
                           np.array(lens, dtype=np.int64), np.array(counts, dtype=np.int64))


#: Redoes one word in log space: (starts, ends, pieces, length, count) → (log of its sum, each
#: edge's expected count in edge order).
LogWord = Callable[[list[int], list[int], list[int], int, int], tuple[float, list[float]]]


def e_step(lattice: FlatLattice, weights: Sequence[float], log_k: float, redo: LogWord,
           check: Callable[[], None]) -> tuple[list[float], float]:
    """Expected count of every piece and the corpus log-likelihood, as the edge-by-edge loop sums them:
    each word's ``count * (log z - length * log_k)`` (``math.log``, added one by one in word order),
    words outside the scaled range redone by ``redo``."""
    z, bad, visit_pieces, visit = lattice.forward_backward(weights, check)
    check()
    lens, counts = lattice.lens, lattice.counts
    terms = counts * (np.array(list(map(math.log, np.where(bad, 1.0, z).tolist()))) - lens * log_k)
    if bad.any():
        visit_pieces = visit_pieces.copy()
        for w in np.flatnonzero(bad).tolist():
            starts, ends, pieces = lattice.word_edges(w)
            c = int(counts[w])
            log_z, contributions = redo(starts, ends, pieces, int(lens[w]), c)
            terms[w] = c * log_z
            a, b = int(lattice.edge_off[w]), int(lattice.edge_off[w + 1])
            visit_pieces[a:b] = pieces
            visit[a:b] = contributions
    # A running sum in word order (np.add.accumulate adds one by one; np.sum would pair them up).
    log_lik = float(np.add.accumulate(terms)[-1]) if len(terms) else 0.0
    # Summed into each piece in visit order (np.add.at adds one term after another, as bincount
    # would), a slice at a time: bincount would first copy all the int32 piece ids to int64.
    expected = np.zeros(len(weights), dtype=np.float64)
    for a in range(0, len(visit), 1 << 20):
        np.add.at(expected, visit_pieces[a:a + (1 << 20)], visit[a:a + (1 << 20)])
    return expected.tolist(), log_lik


def viterbi_counts(lattice: FlatLattice, logs: Sequence[float], alive: Sequence[bool],
                   check: Callable[[], None]) -> tuple[list[float], int]:
    """Each live piece's weighted count in the Viterbi segmentations, and the weighted token count."""
    pieces, words = lattice.viterbi(logs, check)
    weight = lattice.counts[words]
    live = np.array(alive, dtype=bool)[pieces]
    # Counts are whole numbers: summed as floats in any order they are exact.
    freq = np.bincount(pieces[live], weights=weight[live].astype(np.float64), minlength=len(logs))
    return freq.tolist(), int(weight.sum())


def piece_paths(lattice: FlatLattice, pieces: Sequence[int], where: tuple[Sequence[int], Sequence[int]],
                piece_lens: Sequence[int], logs: Sequence[float], check: Callable[[], None],
                ) -> tuple[list[float], list[list[int]]]:
    """SentencePiece's two-best for many pieces at once, over each piece's own lattice: the edges of
    word ``words[k]`` that lie inside ``starts[k] .. starts[k] + lens[k]``, without the piece's own
    edge (the one spanning it all).

    Returns, per piece, the best score of a path of two or more pieces (−inf: none) and that path's
    pieces from the last to the first. The pruning step keeps a piece when that score is not above
    its own and uses the path as the piece's alternative. One Viterbi over every piece's lattice,
    layer by start as :meth:`FlatLattice.viterbi` (strictly better wins, the first found stays):
    the floats and choices of the piece-by-piece loop it replaces.
    """
    at = np.asarray(pieces, dtype=np.int64)
    words = np.asarray(where[0], dtype=np.int64)[at]
    starts = np.asarray(where[1], dtype=np.int64)[at]
    lens = np.asarray(piece_lens, dtype=np.int64)[at]
    del at
    k_of = np.arange(len(words), dtype=np.int64)
    if not len(words):
        return [], []
    check()
    # Each edge's start node, ascending (edges are in (word, start) order); int32 while nodes fit.
    ntype = np.int32 if lattice.n_nodes < (1 << 31) - 1 else np.int64
    start_node = np.repeat(lattice.node_off.astype(ntype), lattice.per_word)
    start_node += lattice.local_s
    base = (lattice.node_off[words] + starts).astype(ntype)
    lo = np.searchsorted(start_node, base, side="left")
    hi = np.searchsorted(start_node, base + lens.astype(ntype), side="left")
    del start_node
    cnt = hi - lo
    owner = np.repeat(k_of, cnt)
    first = np.cumsum(cnt) - cnt
    idx = np.repeat(lo, cnt) + (np.arange(len(owner), dtype=np.int64) - np.repeat(first, cnt))
    s = lattice.local_s[idx].astype(np.int64) - starts[owner]
    e = lattice.local_e[idx].astype(np.int64) - starts[owner]
    q = lattice.pieces[idx].astype(np.int64)
    n = lens[owner]
    inside = (e < n) | ((e == n) & (s > 0))
    owner, s, e, q = owner[inside], s[inside], e[inside], q[inside]
    del idx, n, inside, lo, hi, cnt, first
    check()
    node0 = np.zeros(len(words), dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=node0[1:])
    gs, ge = node0[owner] + s, node0[owner] + e
    lp = np.asarray(logs, dtype=np.float64)[q]
    n_nodes = int(node0[-1] + lens[-1] + 1)
    best = np.full(n_nodes, -math.inf, dtype=np.float64)
    best[node0] = 0.0
    back_s = np.zeros(n_nodes, dtype=np.int64)
    back_p = np.full(n_nodes, -1, dtype=np.int64)
    order = np.argsort(s, kind="stable")  # layers by start; inside one, the (start, end) order of each piece
    s_sorted = s[order]
    cuts = np.flatnonzero(np.diff(s_sorted)) + 1
    bounds = [0, *cuts.tolist(), len(order)]
    with np.errstate(invalid="ignore"):
        for a, b in zip(bounds[:-1], bounds[1:]):
            check()
            sel = order[a:b]
            src, dst = gs[sel], ge[sel]
            cand = best[src] + lp[sel]
            better = cand > best[dst]
            won = dst[better]
            best[won] = cand[better]
            back_s[won] = src[better]
            back_p[won] = q[sel][better]
    end = node0 + lens
    other = best[end]
    # Backtrack every piece's path at once: step by step, the pieces still short of their start.
    steps_p: list[np.ndarray] = []
    steps_k: list[np.ndarray] = []
    cur, k = end, k_of
    while len(cur):
        check()
        steps_p.append(back_p[cur])
        steps_k.append(k)
        cur = back_s[cur]
        live = cur > node0[k]
        cur, k = cur[live], k[live]
    path_pieces = np.concatenate(steps_p)
    who = np.concatenate(steps_k)
    by = np.argsort(who, kind="stable")
    cut = np.searchsorted(who[by], k_of, side="left").tolist() + [len(by)]
    flat = path_pieces[by].tolist()
    paths = [flat[cut[j]:cut[j + 1]] for j in range(len(words))]
    return other.tolist(), paths


def lattice_scores(scores: Sequence[float], order: Sequence[int], alive: Sequence[bool], is_char: Sequence[bool],
                   penalty: float) -> list[float]:
    """Score per piece as the lattice uses it: live pieces their own; removed characters and the
    unknown character ``min − penalty`` (the lowest live score); removed longer pieces −inf."""
    arr = np.array(scores, dtype=np.float64)
    unk = float(arr[np.array(order, dtype=np.int64)].min()) - penalty
    return np.where(np.array(alive, dtype=bool), arr, np.where(np.array(is_char, dtype=bool), unk, -math.inf)).tolist()


def scaled_weights(logs: Sequence[float], lens: Sequence[int], log_k: float) -> list[float]:
    """``exp(log + log_k × length)`` per piece: ``math.exp`` on the doubles numpy adds, the same
    numbers as a loop of Python floats (exp(−inf) is 0)."""
    x = np.array(logs, dtype=np.float64) + log_k * np.array(lens, dtype=np.float64)
    return list(map(math.exp, x.tolist()))


def lattice_of(found: Any, unk_from: int, unk_to: int, word_lens: Sequence[int], counts: Sequence[int],
               check: Callable[[], None]) -> FlatLattice:
    """The flat lattice of seeding's edges (:class:`workbench.core.unigram_seed.Seeds`), the
    placeholder id ``unk_from`` of the unknown character renumbered ``unk_to``."""
    ids = found.ids
    if unk_from != unk_to:
        ids[ids == unk_from] = unk_to
    return FlatLattice(found.starts, found.ends, ids, found.per_word, np.array(word_lens, dtype=np.int64),
                       np.array(counts, dtype=np.int64), check)
