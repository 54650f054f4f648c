"""PickyBPE: BPE that removes an intermediate token once a merge has used up most of it.

Chizhov, Arnett, Korotkova and Yamshchikov, "BPE Gets Picky: Efficient Vocabulary Refinement
During Tokenizer Training", EMNLP 2024 (https://aclanthology.org/2024.emnlp-main.925).

Training is plain BPE (:class:`~workbench.core.bpe.BpeTrainer`'s settings, initial vocabulary, id
layout and tie rules) with one step added after each merge ``x1 x2 → x1x2``: each parent ``x``
(left first, then right; never a base symbol or a special) is removed when its
Intersection-over-Self ``IoS(x) = f(x1x2) / (f(x) + f(x1x2))`` exceeds the threshold τ, where
``f`` counts a token's occurrences in the current segmentation of the corpus (after the merge, so
``f(x) + f(x1x2)`` is ``x``'s frequency before it). A removed token is split everywhere it still
occurs into the tokens it was made of, taken down to the ones still in the vocabulary (the
reference implementation's ``walk``); each of those gains its frequency. Removals make room: the
run continues until the vocabulary *in use* reaches the target size, so it makes more merges
than plain BPE. A later merge that makes a removed piece again brings it back under its old id.

The condition is strict (``>``), as in the reference implementation ``pickybpe-bauwenst`` (the
paper's authors' trainer, packaged), which the test suite holds this trainer equal to merge for
merge and removal for removal: with τ ≥ 1 nothing is ever removed and the run is plain BPE
(also tested).

Every step is a :class:`~workbench.core.model.MergeEvent` whose ``vocab_size`` is the vocabulary
in use; the removals it caused are :attr:`PickyBpeTrainer.removals` and the log's ``extras``
(``{"removed": [[id, frequency, [split ids]], …]}`` on the merge's row) so the store keeps them
beside the merge.

The tokenizer at the end (:func:`final_merges`) is an ordinary BPE over the training ids: the
merges whose product is still in the vocabulary, plus those a kept token needs to be built — a
removed token some kept token is made from stays as an *intermediate* (exports must hold it: a
merges-only format like ``tokenizer.json`` has no step that splits a token again, so such a
token can still come out where a word stops at it; the run's settings count them). A removed
token nothing needs gets no merge and an empty piece (an unused id), so it is never produced.

Left out: the reference's character coverage (rare characters to an unknown token) and its
maximum token length; its vocabulary count also adds one for a merge that makes a piece already
present, which this trainer does not (the tests compare runs of the same number of merges).
"""

from __future__ import annotations

import heapq
import json
from collections import defaultdict
from typing import Callable, Iterator, Mapping, Sequence

from workbench.core.bpe import _SHIFT, BpeTrainer, TrainConfig, merged_word
from workbench.core.model import MergeEvent, Tokenizer
from workbench.errors import ConfigError

DEFAULT_THRESHOLD = 0.9  # the paper's recommended τ (it tried 0.6–0.9)
_POS = 1 << 32  # first-seen key = word index * _POS + unit offset inside the word
_NEVER = 1 << 80


class PickyBpeTrainer(BpeTrainer):
    """PickyBPE on an ordered ``{pre-token: count}`` table (see the module docstring).

    Builds on :class:`BpeTrainer` for everything but the loop: the checked settings, the initial
    vocabulary, the words as symbol-id lists (``words``/``freqs``) and the :class:`TrainLog`.
    """

    value_name = "frequency"

    def __init__(self, word_counts: Mapping[str, int], config: TrainConfig, threshold: float = DEFAULT_THRESHOLD):
        super().__init__(word_counts, config)
        if not isinstance(threshold, (int, float)) or not 0.0 < threshold:
            raise ConfigError("options.picky_threshold", f"the IoS threshold must be a number above 0, not {threshold!r}")
        self.threshold = float(threshold)
        # (merge rank, removed id, its frequency then, the ids it was split into), in order.
        self.removals: list[tuple[int, int, int, tuple[int, ...]]] = []
        self.extras: list[tuple[int, str]] = []  # (rank, JSON text) for the store's merges.extra
        self.log.extras = self.extras
        self.parents: dict[int, tuple[int, int]] = {}  # a merged id → the pair that first made it
        self.present: list[bool] = [True] * len(self.vocab)
        self.in_use = len(self.vocab)  # the vocabulary in use (removed ids left out)

    # ------------------------------------------------------------------------------------------------
    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[MergeEvent]:
        cfg = self.config
        words, freqs, vocab = self.words, self.freqs, self.vocab
        S = _SHIFT  # noqa: N806 - the pair packing of bpe.py, read in every hot line
        first_seen = cfg.tie_break == "first-seen"
        hf_rank = self._hf_rank()
        unit_len = self._unit_len
        counts: dict[int, int] = {}
        where: defaultdict[int, set[int]] = defaultdict(set)
        first: dict[int, int] = {}
        tfreq: list[int] = [0] * len(vocab)
        twords: defaultdict[int, set[int]] = defaultdict(set)
        for w, sym in enumerate(words):
            f = freqs[w]
            base = w * _POS
            offset = 0
            for i, t in enumerate(sym):
                tfreq[t] += f  # (which words hold a token is kept for merged ones only: base ones stay)
                if i:
                    p = sym[i - 1] * S + t
                    counts[p] = counts.get(p, 0) + f
                    where[p].add(w)
                    if p not in first:
                        first[p] = base + offset - unit_len[sym[i - 1]]
                offset += unit_len[t]

        def key_of(p: int) -> int:
            return first[p] if first_seen else hf_rank[p // S] * S + hf_rank[p % S]

        heap = [(-c, key_of(p), p) for p, c in counts.items()]
        heapq.heapify(heap)
        heappush, heappop = heapq.heappush, heapq.heappop

        def rewrite(w: int, new_sym: list[int], delta: defaultdict[int, int]) -> None:
            """Word ``w`` becomes ``new_sym``: its pair counts move into ``delta``."""
            old = words[w]
            f = freqs[w]
            for i in range(len(old) - 1):
                delta[old[i] * S + old[i + 1]] -= f
            base = w * _POS
            for i in range(len(new_sym) - 1):
                q = new_sym[i] * S + new_sym[i + 1]
                delta[q] += f
                where[q].add(w)
                if first_seen and base < first.get(q, _NEVER):
                    first[q] = base
                    lowered.add(q)
            words[w] = new_sym

        def settle(delta: defaultdict[int, int], skip: int = -1) -> None:
            """Apply the pair-count changes; push the pairs that gained (or moved earlier)."""
            for q, d in delta.items():
                if q == skip:
                    continue
                c = counts.get(q, 0) + d
                if c <= 0:
                    counts.pop(q, None)
                    where.pop(q, None)
                    first.pop(q, None)
                    continue
                counts[q] = c
                if d > 0 or q in lowered:
                    heappush(heap, (-c, key_of(q), q))
            lowered.clear()

        lowered: set[int] = set()
        max_merges = cfg.merges if cfg.merges is not None else float("inf")
        target_vocab = cfg.vocab_size if cfg.vocab_size is not None else float("inf")
        min_freq = max(1, cfg.min_frequency)
        step = 0
        token_count = self.token_count
        present = self.present
        initial = self.initial_size
        while step < max_merges and self.in_use < target_vocab and heap:
            if should_stop is not None and should_stop():
                return
            best = None
            while heap:
                negc, key, p = heap[0]
                c = counts.get(p)
                if c is None:
                    heappop(heap)
                    continue
                if c != -negc:
                    heapq.heapreplace(heap, (-c, key_of(p), p))
                    continue
                if first_seen:
                    # BpeTrainer keeps a pair's words in a list it sorts and prunes in place; here they
                    # are a set, so it gets a sorted copy of this pair's words.
                    exact = self._first_position(p, {p: sorted(where.get(p, ()))}, unit_len)
                    if exact is None:
                        heappop(heap)
                        counts.pop(p, None)
                        continue
                    if exact != key:
                        first[p] = exact
                        heapq.heapreplace(heap, (-c, exact, p))
                        continue
                best = p
                break
            if best is None or counts[best] < min_freq:
                return
            frequency = counts.pop(best)
            first.pop(best, None)
            a, b = divmod(best, S)
            piece = vocab[a] + vocab[b]
            new = self._piece_id.get(piece)
            if new is None:
                new = len(vocab)
                vocab.append(piece)
                unit_len.append(unit_len[a] + unit_len[b])
                hf_rank.append(len(hf_rank))
                tfreq.append(0)
                present.append(True)
                self._piece_id[piece] = new
                self.parents[new] = (a, b)
                self.in_use += 1
            elif not present[new]:
                present[new] = True  # made again: back under its old id
                self.in_use += 1
            # ---- the merge ------------------------------------------------------------------------
            # Only the occurrences are touched (bpe.py's scheme): each one moves the counts of its two
            # neighbouring pairs; consecutive occurrences ("a b a b") see the new token on their left.
            delta: defaultdict[int, int] = defaultdict(int)
            made = 0
            for w in where.pop(best):
                sym = words[w]
                occurrences = sym.count(a)
                if not occurrences:
                    continue
                f = freqs[w]
                n = len(sym)
                base = w * _POS
                positions: list[int] = []
                last_end = -1
                i = -1
                for _ in range(occurrences):
                    i = sym.index(a, i + 1)
                    if i < last_end or i + 1 >= n or sym[i + 1] != b:
                        continue
                    if i > 0:
                        x = (new if i == last_end else sym[i - 1]) * S
                        delta[x + a] -= f
                        q = x + new
                        delta[q] += f
                        where[q].add(w)
                        if first_seen and base < first.get(q, _NEVER):
                            first[q] = base
                            lowered.add(q)
                    if i + 2 < n:
                        y = sym[i + 2]
                        delta[b * S + y] -= f
                        q = new * S + y
                        delta[q] += f
                        where[q].add(w)
                        if first_seen and base < first.get(q, _NEVER):
                            first[q] = base
                            lowered.add(q)
                    positions.append(i)
                    last_end = i + 2
                if not positions:
                    continue
                words[w] = merged_word(sym, positions, new)
                twords[new].add(w)
                made += len(positions) * f
            tfreq[new] += made
            tfreq[a] -= made
            tfreq[b] -= made
            token_count -= made
            settle(delta, best)
            # ---- the picky step: each parent the merge used up is removed --------------------------
            rank = step
            removed: list[list] = []
            for parent in ((a,) if a == b else (a, b)):
                if parent < initial or not present[parent]:
                    continue
                f_parent = tfreq[parent]
                if tfreq[new] / (f_parent + tfreq[new]) <= self.threshold:
                    continue
                present[parent] = False
                self.in_use -= 1
                split = self._walk(parent)
                for t in split:
                    tfreq[t] += f_parent
                tfreq[parent] = 0
                token_count += f_parent * (len(split) - 1)
                delta = defaultdict(int)
                for w in twords.pop(parent, ()):
                    sym = words[w]
                    if parent not in sym:
                        continue
                    out = []
                    for t in sym:
                        if t == parent:
                            out.extend(split)
                        else:
                            out.append(t)
                    rewrite(w, out, delta)
                    for t in split:
                        if t >= initial:
                            twords[t].add(w)
                settle(delta)
                self.removals.append((rank, parent, f_parent, tuple(split)))
                removed.append([parent, f_parent, list(split)])
            step += 1
            if removed:
                self.extras.append((rank, json.dumps({"removed": removed, "in_use": self.in_use})))
            self.merges.append((a, b, new))
            self.frequencies.append(frequency)
            self.token_counts.append(token_count)  # last: len(self.log) counts complete entries
            self.token_count = token_count
            yield MergeEvent(step, a, b, new, frequency, self.in_use, token_count)

    def _walk(self, token: int) -> list[int]:
        """``token`` as the tokens in use it was made of (removed ones taken apart again)."""
        if token < self.initial_size or self.present[token]:
            return [token]
        left, right = self.parents[token]
        return self._walk(left) + self._walk(right)

    # ------------------------------------------------------------------------------------------------
    def removed_ids(self) -> set[int]:
        """Ids out of the vocabulary at the end (removed and not made again)."""
        return {i for i in range(self.initial_size, len(self.vocab)) if not self.present[i]}

    def tokenizer(self, name: str = "") -> Tokenizer:
        """The BPE tokenizer the run has trained so far: :func:`final_merges` over its log."""
        plain = super().tokenizer(name)
        vocab, merges = final_merges(plain.vocab, plain.merges, self.removed_ids())
        return Tokenizer(vocab=vocab, merges=merges, units=plain.units, pretokenizer=plain.pretokenizer,
                         normalizer=plain.normalizer, special_tokens=plain.special_tokens,
                         end_of_word=plain.end_of_word, name=name)

    def extra_settings(self) -> dict:
        """What the run's settings keep beside the model: its family, the threshold and how the
        removals ended (the Merges tab and the runs table read them)."""
        removed = self.removed_ids()
        _vocab, merges = final_merges(tuple(self.vocab), tuple(self.merges), removed)
        intermediates = removed & {n for _a, _b, n in merges}
        return {"model": "pickybpe", "unused_ids": sorted(removed - intermediates),
                "picky_intermediates": sorted(intermediates), "picky_removals": len(self.removals),
                "vocab_in_use": self.in_use}


def final_merges(vocab: Sequence[bytes], merges: Sequence[tuple[int, int, int]],
                 removed: set[int] | frozenset[int]) -> tuple[tuple[bytes, ...], tuple[tuple[int, int, int], ...]]:
    """The vocabulary and merges of a PickyBPE run's tokenizer, from its training log.

    A merge stays when its product is still in use, or is a removed token that a staying merge
    joins (an intermediate, kept so every token in use can still be made); a pair merged again (a
    removed token made anew) is listed once, at its first rank. The pieces of removed tokens nothing
    needs become ``b""`` (unused ids), so no merge produces them. Ids do not change.
    """
    needed = set(range(len(vocab))) - set(removed)
    makers: defaultdict[int, list[int]] = defaultdict(list)
    for rank, (_a, _b, n) in enumerate(merges):
        makers[n].append(rank)
    stack = [n for n in makers if n in needed]
    while stack:
        n = stack.pop()
        for rank in makers[n]:
            a, b, _n = merges[rank]
            for part in (a, b):
                if part not in needed:
                    needed.add(part)
                    stack.append(part)
    kept = tuple(dict.fromkeys((a, b, n) for a, b, n in merges if n in needed))  # a pair merged again: once
    out = tuple(p if i in needed else b"" for i, p in enumerate(vocab))
    return out, kept
