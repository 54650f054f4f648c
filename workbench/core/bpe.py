"""Incremental BPE training over a word-frequency table.

Each distinct pre-token is stored once, as a list of symbol ids, with its corpus frequency. Pair
counts and a pair → words index are built once; a merge then touches only the words that contain
the merged pair and updates the counts of the neighbouring pairs there (the scheme of Hugging Face
``tokenizers``' trainer). The best pair comes from a lazy max-heap: stale entries are dropped when
popped. There is never a full recount per merge.

Ties between equally frequent pairs follow an explicit rule:

* ``first-seen`` (default): the pair whose first occurrence comes earliest when the corpus is read
  in order — words in order of first appearance, left to right inside a word, in the current
  segmentation. That is what the textbook loop (``max`` over a dict filled in reading order) does.
  Heap keys are lower bounds of that position; the winner's true first position is checked when it
  is popped and the entry pushed back if it was too optimistic.
* ``hf``: the rule of Hugging Face's ``BpeTrainer``: the smallest (left, right) in its id order —
  special tokens, then the alphabet sorted by the code point of its byte-level character (GPT-2's
  byte-to-unicode map), then new tokens in creation order.

A merge whose result equals an existing piece reuses that piece's id, as ``tokenizers`` and the
textbook code (symbols as strings) do. The trainer is a generator of :class:`MergeEvent`; asking
it to stop takes effect between two merges. :class:`BpeTrainer` implements
:class:`workbench.core.trainer.Trainer`: its merge log is a :class:`~workbench.core.trainer.TrainLog`
that the store reads in bulk. Settings it cannot use raise :class:`~workbench.errors.ConfigError`
naming the setting, never a front end's flag or widget.

Plain training (no ``refuse``/``refit`` hook, not a subclass) runs its merge loop in C when the
optional extension ``_bpe_merge`` was built at install (``setup.py``; no compiler: not built, and
nothing else changes): the same merges in the same order, ~7 times faster at V 32,768. The pure
loops below stay the reference, are used when the module is absent or ``WORKBENCH_PURE=1`` is set,
and a hypothesis test holds the two equal (tests/core/test_bpe_native.py).
"""

from __future__ import annotations

import heapq
import os
from array import array
from collections import defaultdict, deque
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate, chain, islice, repeat
from operator import add
from types import ModuleType
from typing import Callable, Iterator, Literal, Mapping, Sequence

from workbench.core.byte_level import byte_encoder
from workbench.core.model import MergeEvent, Tokenizer, base_vocab
from workbench.core.trainer import TrainLog
from workbench.errors import ConfigError

TieBreak = Literal["first-seen", "hf"]
_SHIFT = 1 << 21  # pair key = left * _SHIFT + right; ids stay below two million
_POS = 1 << 32  # first-seen key = word index * _POS + offset inside the word
_NEVER = 1 << 80
_P_BITS = 42  # a pair key fits in 42 bits (two ids below 2**21)
_P_MASK = (1 << _P_BITS) - 1
_K_BITS = 64  # tie keys (first-seen position or Hugging Face order) fit in 64 bits
_K_MASK = (1 << _K_BITS) - 1
_C_SHIFT = _P_BITS + _K_BITS
_CMAX = 1 << 62  # counts stay below this
_EMPTY = array("i")


def _load_native() -> ModuleType | None:
    """The optional C merge loop (``workbench/core/_bpe_merge.c``, built at install when a compiler is
    there), or None: not built, or ``WORKBENCH_PURE=1`` in the environment (tests and benches)."""
    if os.environ.get("WORKBENCH_PURE", "") not in ("", "0"):
        return None
    try:
        from workbench.core import _bpe_merge
    except ImportError:
        return None
    return _bpe_merge


_native = _load_native()


@dataclass(frozen=True)
class TrainConfig:
    """What to train. Exactly one of ``vocab_size`` / ``merges`` is usually given; both may be."""

    units: Literal["bytes", "chars"] = "bytes"
    vocab_size: int | None = None
    merges: int | None = None
    min_frequency: int = 1
    special_tokens: tuple[str, ...] = ()
    end_of_word: str = ""
    tie_break: TieBreak = "first-seen"
    pretokenizer: str = "gpt2"
    normalizer: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    def settings(self) -> dict:
        return {
            "model": "bpe",
            "units": self.units,
            "vocab_size": self.vocab_size,
            "merges": self.merges,
            "min_frequency": self.min_frequency,
            "special_tokens": list(self.special_tokens),
            "end_of_word": self.end_of_word,
            "tie_break": self.tie_break,
            "pretokenizer": self.pretokenizer,
            "normalizer": list(self.normalizer),
            **self.extra,
        }



def merged_word(sym: Sequence[int], positions: list[int], new: int) -> list[int]:
    """``sym`` with the pair at each of ``positions`` (ascending, not overlapping) replaced by ``new``:
    the one word rebuild every merging trainer (BPE, PickyBPE, parity-aware BPE, WordPiece) shares."""
    out: list[int] = []
    prev = 0
    for i in positions:
        out.extend(sym[prev:i])
        out.append(new)
        prev = i + 2
    out.extend(sym[prev:])
    return out


class FlatWords:
    """All words' symbol ids in one ``array('i')``: word ``w`` owns the slot
    ``sym[start[w] : start[w] + its initial length]`` and keeps its ``lens[w]`` current symbols at
    the slot's front (merges only shorten words, so a slot never moves). 4 bytes a symbol instead
    of a list per word, and one buffer that numpy reads and writes in place
    (:mod:`workbench.core.bpe_kernel`)."""

    __slots__ = ("sym", "start", "lens")

    def __init__(self, sym: array, lens: array):
        self.sym = sym
        self.lens = lens
        self.start: list[int] = list(accumulate(lens, initial=0))[:-1]

    @classmethod
    def from_lists(cls, words: list[list[int]]) -> FlatWords:
        return cls(array("i", chain.from_iterable(words)), array("i", map(len, words)))

    def to_lists(self) -> list[list[int]]:
        sym = self.sym
        return [sym[s : s + n].tolist() for s, n in zip(self.start, self.lens)]


def _pick_best(heap: list[int], counts: dict[int, int], first: dict[int, int] | None,
               first_position: Callable[[int], int | None],
               bound: Callable[[int], int | None] | None = None) -> int | None:
    """The pair to merge next: the top of ``heap`` once it is current, or None when the heap is empty.

    Counts only shrink without a push, so an entry's count is an upper bound: a stale one is
    re-pushed with the current count (the scheme of tokenizers' trainer). With ``first`` (the
    first-seen tie-break) an entry's key is a lower bound of the pair's first position, made exact
    by ``first_position`` before the pair may win (None: the pair no longer occurs). Shared by the
    list loop and the flat loop of :class:`BpeTrainer`, which differ in ``first_position`` and in
    where a stale entry's bound comes from: the list loop keeps a dict ``first``; the flat loop
    passes ``bound(p)`` instead (its smallest listed word; None: none listed) and ``first`` None.

    Any lower bound gives the same merges: the pair returned is the one whose exact entry (count,
    exact first position) is smallest, as every live pair keeps an entry at or below its exact one."""
    while heap:
        entry = heap[0]
        p = entry & _P_MASK
        c = counts.get(p)
        if c is None:
            heapq.heappop(heap)
            continue
        key = (entry >> _P_BITS) & _K_MASK
        if c != _CMAX - (entry >> _C_SHIFT):
            if bound is not None:
                low = bound(p)
                if low is None:
                    heapq.heappop(heap)
                    continue
                key = low
            elif first is not None:
                key = first[p]
            heapq.heapreplace(heap, ((_CMAX - c) << _C_SHIFT) | (key << _P_BITS) | p)
            continue
        if first is not None or bound is not None:
            true_key = first_position(p)
            if true_key != key:
                if true_key is None:
                    heapq.heappop(heap)
                    continue
                if first is not None:
                    first[p] = true_key
                heapq.heapreplace(heap, ((_CMAX - c) << _C_SHIFT) | (true_key << _P_BITS) | p)
                continue
        return p
    return None


def _pair_offset(sym: array, a: int, b: int, unit_len: list[int]) -> int:
    """Unit offset of the first ``(a, b)`` in ``sym``, or -1: C-level ``index`` jumps to each ``a``,
    and the units before it are summed only once it is found."""
    n = len(sym) - 1
    i = -1
    try:
        while True:
            i = sym.index(a, i + 1)
            if i >= n:
                return -1
            if sym[i + 1] == b:
                return sum(map(unit_len.__getitem__, sym[:i]))
    except ValueError:
        return -1


class BpeTrainer:
    """Train byte- or character-level BPE on an ordered ``{pre-token: count}`` table.

    ``merges``, ``frequencies``, ``token_counts`` and ``vocab`` are the lists of ``log`` itself.
    """

    value_name = "frequency"
    # ``refuse(left, right, piece)`` → True keeps a candidate pair from ever being merged (an
    # extension's filter: :mod:`workbench.core.extend`); plain training refuses nothing.
    refuse: Callable[[int, int, bytes], bool] | None = None
    # ``refit(symbols)`` → the word's symbols as the final tokenizer's rule would leave them after a
    # merge (None: unchanged). An extension of a ``.tiktoken`` base needs it: tiktoken's byte-rank
    # rule joins a new token with a neighbour at once when their bytes are already a token.
    refit: Callable[[list[int]], list[int] | None] | None = None
    # A merge whose pair is in at least this many words runs as numpy passes over all of them
    # (bpe_kernel.apply_merge); fewer, the Python loop (per-call overhead beats it there).
    numpy_min_words = 128
    # Below this many distinct words the list loop is as fast and numpy's import (0.1 s, 14 MB) is
    # not worth it: e.g. a 4.7 MB code corpus has 30,000.
    flat_min_words = 50_000
    # The flat loop gives heap entries at the start to the 4 most frequent pairs per merge to make
    # and this many more; the rarer ones get theirs if ever needed (bpe_kernel.split_rare). Tests
    # set it far below zero: the fewest entries at the start (one count), the rest needed soon.
    heap_min_entries = 1024
    # The words are held either as lists (``_words``) or flat (``_flat``), never both: the plain
    # trainer keeps them flat; ``words`` turns them into lists for the trainers that edit lists.
    _words: list[list[int]] | None = None
    _flat: FlatWords | None = None
    # The C merge loop (``_bpe_merge``) runs plain training when it was built: None follows the
    # environment (``WORKBENCH_PURE=1``: the pure loops); False keeps the pure loops (tests of them).
    # Subclasses and extensions (``refuse``, ``refit``) always run the pure loops.
    native: bool | None = None

    @property
    def words(self) -> list[list[int]]:
        """Each word's current symbol ids, in order of first appearance (made into lists on first use)."""
        if self._words is None:
            self._words = self._flat.to_lists() if self._flat is not None else []
            self._flat = None
        return self._words

    @words.setter
    def words(self, value: list[list[int]]) -> None:
        self._words = value
        self._flat = None

    def __init__(self, word_counts: Mapping[str, int], config: TrainConfig):
        self.config = config
        specials = list(dict.fromkeys(config.special_tokens))
        if any(not token for token in specials):
            raise ConfigError("special_tokens", "a special token cannot be empty: remove the empty one")
        if config.units not in ("bytes", "chars"):
            raise ConfigError("units", f"unknown units {config.units!r}: use bytes or chars")
        if config.tie_break not in ("first-seen", "hf"):
            raise ConfigError("tie_break", f"unknown tie-break {config.tie_break!r}: use first-seen or hf")
        largest = config.vocab_size if config.vocab_size is not None else 256 + len(specials) + (config.merges or 0)
        if largest >= _SHIFT - 1_000_000:
            field = "vocab_size" if config.vocab_size is not None else "merges"
            raise ConfigError(field, f"a vocabulary of {largest} is beyond what the trainer supports (about 1 million)")
        eow = config.end_of_word if config.units == "chars" else ""
        if config.units == "bytes":
            if config.end_of_word:
                raise ConfigError("end_of_word", "an end-of-word marker needs character units "
                                  "(byte-level BPE keeps spaces instead)")
            alphabet: list[str] = []
        else:
            seen: dict[str, None] = {}
            for word in word_counts:
                seen.update(dict.fromkeys(word))
            alphabet = sorted(seen)
            if eow and any(eow in word for word in word_counts):
                raise ConfigError("end_of_word", f"the end-of-word marker {eow!r} occurs in the corpus: "
                                  "choose another marker")
        # The merge log, one entry per step: what a RunWriter stores, read in bulk (add_log).
        self.log = TrainLog(base_vocab(config.units, alphabet, specials, eow))
        self.vocab: list[bytes] = self.log.vocab
        self.merges = self.log.merges
        self.frequencies = self.log.frequencies
        self.token_counts = self.log.token_counts  # tokens in the corpus after each merge
        self.special_tokens = {s: i for i, s in enumerate(specials)}
        self.initial_size = len(self.vocab)
        self.initial_vocab = tuple(self.vocab)
        self.initial_kinds = tuple("special" if i < len(specials) else "base" for i in range(self.initial_size))
        if config.vocab_size is not None and config.vocab_size < self.initial_size:
            what = "256 bytes" if config.units == "bytes" else f"an alphabet of {len(alphabet)} characters"
            raise ConfigError("vocab_size",
                f"the vocabulary size {config.vocab_size} is below the initial vocabulary of {self.initial_size} "
                f"({what}{' + specials' if specials else ''}): choose at least {self.initial_size}"
            )
        if config.vocab_size is None and config.merges is None:
            raise ConfigError("vocab_size", "say how far to train: give a vocabulary size or a number of merges")
        if config.vocab_size is not None:
            self.target = config.vocab_size - self.initial_size
            if config.merges is not None:
                self.target = min(self.target, config.merges)
        else:
            self.target = config.merges or 0
        self._piece_id = {piece: i for i, piece in enumerate(self.vocab) if i >= len(specials)}
        # Words as symbol-id lists, in order of first appearance.
        offset = len(specials)
        self.freqs: list[int] = []
        if config.units == "bytes":
            # Byte ids are the bytes themselves (plus the specials before them): the words go
            # straight into the flat store, built in C.
            encoded: list[bytes] = []
            for word, count in word_counts.items():
                if count > 0 and word:
                    encoded.append(word.encode("utf-8"))
                    self.freqs.append(count)
            joined = b"".join(encoded)
            sym = array("i", array("B", joined)) if not offset else array("i", (b + offset for b in joined))
            self._flat = FlatWords(sym, array("i", map(len, encoded)))
            del encoded, joined
            lens: list[int] | array = self._flat.lens
        else:
            char_id = {ch: offset + i for i, ch in enumerate(alphabet)}
            tail = [offset + len(alphabet)] if eow else []
            words: list[list[int]] = []
            for word, count in word_counts.items():
                if count > 0 and word:
                    words.append([char_id[ch] for ch in word] + tail)
                    self.freqs.append(count)
            self.words = words
            lens = list(map(len, words))
        # Symbol length in base units (for first-seen positions).
        self._unit_len: list[int] = [1] * len(self.vocab)
        self.token_count = sum(f * n for n, f in zip(lens, self.freqs))
        self.initial_token_count = self.token_count
        self.word_types = len(self.freqs)

    # ------------------------------------------------------------------------------------------------
    def _hf_rank(self) -> list[int]:
        """Each base id's position in Hugging Face's id order (specials, then sorted alphabet)."""
        n_special = len(self.special_tokens)
        ranks = list(range(len(self.vocab)))
        if self.config.units == "bytes":
            mapping = byte_encoder()
            order = sorted(range(256), key=lambda b: mapping[b])
            for position, byte in enumerate(order):
                ranks[n_special + byte] = n_special + position
        return ranks

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[MergeEvent]:
        """Merge until the target is reached, no pair is frequent enough, or ``should_stop()``."""
        # (the C loop counts in 64-bit ints: a corpus of 2**62 tokens or more — huge frequencies —
        # trains on the pure loops, whose Python ints do not wrap; _bpe_merge.c refuses it too)
        if (self.native is not False and _native is not None and type(self) is BpeTrainer
                and self.refit is None and self.refuse is None and self.token_count < 1 << 62):
            return self._run_native(should_stop)
        # An extension's refit may make a word longer again: lists, not fixed slots.
        if self.refit is not None or self.word_types < self.flat_min_words:
            return self._run_lists(should_stop)
        return self._run_flat(should_stop)

    def _run_native(self, should_stop: Callable[[], bool] | None) -> Iterator[MergeEvent]:
        """The merge loop in C (:mod:`workbench.core._bpe_merge`) over the flat store: the same
        merges, in the same order, as :meth:`_run_flat` (a hypothesis test holds them equal). The C
        side picks the best pair and applies it; the piece table, the log and the events stay here,
        and ``should_stop`` is asked before every merge as in the pure loops."""
        cfg = self.config
        first_seen = cfg.tie_break == "first-seen"
        store = self._flat
        if store is None:
            store = self._flat = FlatWords.from_lists(self._words or [])
            self._words = None
        unit_len = self._unit_len
        hf_rank = self._hf_rank() if not first_seen else []
        native = _native
        assert native is not None  # (run() chose this loop because it is)
        loop = native.MergeLoop(store.sym, store.lens, store.start, self.freqs, unit_len, first_seen, hf_rank)
        max_merges = cfg.merges if cfg.merges is not None else float("inf")
        target_vocab = cfg.vocab_size if cfg.vocab_size is not None else float("inf")
        min_freq = max(1, cfg.min_frequency)
        step = 0
        token_count = self.token_count
        vocab = self.vocab
        piece_id = self._piece_id
        while step < max_merges and len(vocab) < target_vocab:
            if should_stop is not None and should_stop():
                return
            picked = loop.pop_best()
            if picked is None:
                return
            a, b, frequency = picked
            if frequency < min_freq:
                return
            piece = vocab[a] + vocab[b]
            new = piece_id.get(piece)
            if new is None:
                new = len(vocab)
                vocab.append(piece)
                unit_len.append(unit_len[a] + unit_len[b])
                piece_id[piece] = new
            token_count -= loop.merge(a, b, new)
            step += 1
            self.merges.append((a, b, new))
            self.frequencies.append(frequency)
            self.token_counts.append(token_count)  # last: len(self.log) counts complete entries
            self.token_count = token_count
            yield MergeEvent(step, a, b, new, frequency, len(vocab), token_count)
            if self._flat is not store:  # someone asked for the words as lists: a fresh loop on them
                del loop
                store = self._flat = FlatWords.from_lists(self._words or [])
                self._words = None
                loop = native.MergeLoop(store.sym, store.lens, store.start, self.freqs, unit_len, first_seen,
                                        hf_rank)

    def _run_lists(self, should_stop: Callable[[], bool] | None) -> Iterator[MergeEvent]:
        """The loop over words held as lists (an extension's refit needs them)."""
        cfg = self.config
        words, freqs = self.words, self.freqs
        first_seen = cfg.tie_break == "first-seen"
        S = _SHIFT
        counts: dict[int, int] = {}
        # Pair → the words it occurs in, as a list (8 bytes an entry; a set costs 3–4 times that, and
        # this index is the trainer's largest structure). An entry goes stale when a merge takes the
        # pair out of the word, and a word may be listed twice (a merge that rebuilds an existing
        # piece): both are harmless, as applying a merge to a word without the pair changes nothing.
        where: dict[int, list[int]] = {}
        first: dict[int, int] = {}
        get = counts.get
        for w, sym in enumerate(words):
            f = freqs[w]
            # i: the first-seen key of the pair at each position (word index, then offset).
            for i, (x, y) in enumerate(zip(sym, islice(sym, 1, None)), w * _POS):
                p = x * S + y
                c = get(p)
                if c is None:
                    counts[p] = f
                    where[p] = [w]
                    if first_seen:
                        first[p] = i
                else:
                    counts[p] = c + f
                    listed = where[p]
                    if listed[-1] != w:
                        listed.append(w)
        hf_rank = self._hf_rank() if not first_seen else []
        # Heap entries are single ints — (count, tie key, pair) packed so that the smallest int is
        # the most frequent pair with the smallest tie key; int comparison is far cheaper than tuples.
        if first_seen:
            heap = [((_CMAX - c) << _C_SHIFT) | (first[p] << _P_BITS) | p for p, c in counts.items()]
        else:
            heap = [((_CMAX - c) << _C_SHIFT) | ((hf_rank[p // S] * S + hf_rank[p % S]) << _P_BITS) | p
                    for p, c in counts.items()]
        heapq.heapify(heap)
        # From here on, as in the flat loop, a word list keeps its smallest word in front and
        # ``front * _POS`` is the pair's first-seen bound: the exact positions above go.
        del first
        W = _P_BITS + _POS.bit_length() - 1  # a word index shifted to its place in a heap entry

        def bound(p: int) -> int | None:
            ws = where.get(p)
            return ws[0] * _POS if ws else None
        heappush = heapq.heappush
        unit_len = self._unit_len
        max_merges = cfg.merges if cfg.merges is not None else float("inf")
        target_vocab = cfg.vocab_size if cfg.vocab_size is not None else float("inf")
        min_freq = max(1, cfg.min_frequency)
        step = 0
        token_count = self.token_count
        vocab = self.vocab
        refuse, refit = self.refuse, self.refit
        refused: set[int] = set()
        first_position = partial(self._first_position, where=where, unit_len=unit_len, front_min=True)
        while step < max_merges and len(vocab) < target_vocab and heap:
            if should_stop is not None and should_stop():
                return
            best = _pick_best(heap, counts, None, first_position, bound if first_seen else None)
            if best is None or counts[best] < min_freq:
                return
            frequency = counts.pop(best)
            a, b = divmod(best, S)
            piece = vocab[a] + vocab[b]
            if refuse is not None and refuse(a, b, piece):
                # Never merged (an extension's rank-dead or out-of-scope candidate): the pair leaves
                # the counts for good, its occurrences stay as they are.
                refused.add(best)
                where.pop(best, None)
                continue
            new = self._piece_id.get(piece)
            if new is None:
                new = len(vocab)
                vocab.append(piece)
                unit_len.append(unit_len[a] + unit_len[b])
                self._piece_id[piece] = new
            # ---- apply it where it occurs ------------------------------------------------------------
            delta: defaultdict[int, int] = defaultdict(int)
            for w in where.pop(best, ()):
                sym = words[w]
                occurrences = sym.count(a)  # C loops find the matches; Python touches only them
                if not occurrences:
                    continue  # stale index entry: an earlier merge took the pair away
                f = freqs[w]
                n = len(sym)
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
                        ws = where.get(q)
                        if ws is None:
                            where[q] = [w]
                        elif ws[-1] != w:
                            ws.append(w)
                            if w < ws[0]:  # the smallest word in front
                                ws[-1] = ws[0]
                                ws[0] = w
                    if i + 2 < n:
                        y = sym[i + 2]
                        delta[b * S + y] -= f
                        q = new * S + y
                        delta[q] += f
                        ws = where.get(q)
                        if ws is None:
                            where[q] = [w]
                        elif ws[-1] != w:
                            ws.append(w)
                            if w < ws[0]:  # the smallest word in front
                                ws[-1] = ws[0]
                                ws[0] = w
                    positions.append(i)
                    last_end = i + 2
                if not positions:
                    continue
                if len(positions) == 1:
                    i = positions[0]
                    sym[i : i + 2] = [new]
                else:
                    words[w] = merged_word(sym, positions, new)
                token_count -= len(positions) * f
                if refit is not None:
                    token_count -= self._refit(w, f, refit, delta, where, None)
            # ---- update counts and the heap ---------------------------------------------------------
            if not first_seen:
                while len(hf_rank) < len(vocab):
                    hf_rank.append(len(hf_rank))
            for q, d in delta.items():
                if q == best or q in refused:
                    continue
                c = counts.get(q, 0) + d
                if c <= 0:
                    counts.pop(q, None)
                    where.pop(q, None)
                    continue
                counts[q] = c
                if d > 0:
                    if first_seen:
                        heappush(heap, ((_CMAX - c) << _C_SHIFT) | (where[q][0] << W) | q)
                    else:
                        key = hf_rank[q // S] * S + hf_rank[q % S]
                        heappush(heap, ((_CMAX - c) << _C_SHIFT) | (key << _P_BITS) | q)
                elif first_seen and d == 0:
                    # Same count, but an occurrence may have appeared earlier: refresh the key.
                    heappush(heap, ((_CMAX - c) << _C_SHIFT) | (where[q][0] << W) | q)
            step += 1
            self.merges.append((a, b, new))
            self.frequencies.append(frequency)
            self.token_counts.append(token_count)  # last: len(self.log) counts complete entries
            self.token_count = token_count
            yield MergeEvent(step, a, b, new, frequency, len(vocab), token_count)

    def _run_flat(self, should_stop: Callable[[], bool] | None) -> Iterator[MergeEvent]:
        """The loop over the flat store: a merge held by many words runs in numpy
        (:func:`workbench.core.bpe_kernel.apply_merge`), one held by few in the Python loop below;
        both make the same changes (tests hold them equal)."""
        from workbench.core import bpe_kernel
        cfg = self.config
        freqs = self.freqs
        first_seen = cfg.tie_break == "first-seen"
        S = _SHIFT
        store = self._flat
        if store is None:
            store = self._flat = FlatWords.from_lists(self._words or [])
            self._words = None
        flat, start, lens = store.sym, store.start, store.lens
        view = bpe_kernel.FlatView(store, freqs)
        # counts: pair → summed frequency; where: pair → the words it occurs in, as a list (8 bytes
        # an entry; the trainer's largest structure). An entry goes stale when a merge takes the
        # pair out of the word, and a word may be listed twice (a merge that rebuilds an existing
        # piece): both are harmless, as applying a merge to a word without the pair changes nothing.
        # With first-seen, a list keeps its smallest word in front (a word smaller than the front one
        # is swapped there when added): ``front * _POS`` is a lower bound of the pair's first-seen
        # position, and no dict of bounds is kept (it was 15 % of the memory at V 32,768).
        counts, where, _ = bpe_kernel.build_index(view, S, _POS, False)
        numpy_min = self.numpy_min_words
        hf_rank = self._hf_rank() if not first_seen else []
        max_merges = cfg.merges if cfg.merges is not None else float("inf")
        target_vocab = cfg.vocab_size if cfg.vocab_size is not None else float("inf")
        W = _P_BITS + _POS.bit_length() - 1  # a word index shifted to its place in a heap entry

        def entries_of(pairs: list[int]) -> list[int]:
            """Heap entries are single ints — (count, tie key, pair) packed so that the smallest int
            is the most frequent pair with the smallest tie key; int comparison is far cheaper than tuples."""
            if first_seen:
                return [((_CMAX - counts[p]) << _C_SHIFT) | (where[p][0] << W) | p for p in pairs]
            return [((_CMAX - counts[p]) << _C_SHIFT) | ((hf_rank[p // S] * S + hf_rank[p % S]) << _P_BITS) | p
                    for p in pairs]

        # Pairs too rare to be merged soon get no entry yet (SuperBPE's stage 2 starts with ~430k
        # pairs for a few thousand merges): ``cold`` holds them, each counted below ``floor`` then.
        # A count only grows in a merge, which pushes an entry for it anyway; so while the best
        # entry's count is at least ``floor`` no cold pair can beat or tie it, and when it falls
        # below (or the heap runs dry) the cold pairs get their entries. The same picks, from fewer entries.
        hot, cold, floor = bpe_kernel.split_rare(
            counts, 4 * min(max_merges, target_vocab - len(self.vocab)) + self.heap_min_entries)
        heap = entries_of(hot)
        del hot
        heapq.heapify(heap)
        heappush = heapq.heappush
        unit_len = self._unit_len

        def bound(p: int) -> int | None:
            ws = where.get(p)
            return ws[0] * _POS if ws else None
        min_freq = max(1, cfg.min_frequency)
        step = 0
        token_count = self.token_count
        vocab = self.vocab
        refuse = self.refuse
        refused: set[int] = set()
        first_position = partial(self._first_position_flat, where=where, unit_len=unit_len, store=store,
                                 front_min=True)
        pick_bound = bound if first_seen else None
        while step < max_merges and len(vocab) < target_vocab and (heap or cold):
            if should_stop is not None and should_stop():
                return
            best = _pick_best(heap, counts, None, first_position, pick_bound)
            if cold and (best is None or counts[best] < floor):
                heap += entries_of([p for p in cold if p in counts])
                heapq.heapify(heap)
                cold = []
                best = _pick_best(heap, counts, None, first_position, pick_bound)
            if best is None or counts[best] < min_freq:
                return
            frequency = counts.pop(best)
            a, b = divmod(best, S)
            piece = vocab[a] + vocab[b]
            if refuse is not None and refuse(a, b, piece):
                # Never merged (an extension's rank-dead or out-of-scope candidate): the pair leaves
                # the counts for good, its occurrences stay as they are.
                refused.add(best)
                where.pop(best, None)
                continue
            new = self._piece_id.get(piece)
            if new is None:
                new = len(vocab)
                vocab.append(piece)
                unit_len.append(unit_len[a] + unit_len[b])
                self._piece_id[piece] = new
            # ---- apply it where it occurs ------------------------------------------------------------
            ws_best = where.pop(best, _EMPTY)
            if len(ws_best) >= numpy_min:
                pairs, changes, removed = bpe_kernel.apply_merge(view, ws_best, a, b, new, S, _POS, where, None,
                                                                 front_min=first_seen)
                token_count -= removed

            else:
                delta: defaultdict[int, int] = defaultdict(int)
                for w in ws_best:
                    s = start[w]
                    n = lens[w]
                    sym = flat[s : s + n]
                    occurrences = sym.count(a)  # C loops find the matches; Python touches only them
                    if not occurrences:
                        continue  # stale index entry: an earlier merge took the pair away
                    f = freqs[w]
                    if occurrences == 1:  # most words: one a, so no run and at most one match
                        i = sym.index(a)
                        if i + 1 >= n or sym[i + 1] != b:
                            continue
                        positions = [i]
                    else:  # left to right, a match not overlapping the one before
                        positions = []
                        last_end = -1
                        i = -1
                        for _ in range(occurrences):
                            i = sym.index(a, i + 1)
                            if i >= last_end and i + 1 < n and sym[i + 1] == b:
                                positions.append(i)
                                last_end = i + 2
                        if not positions:
                            continue
                    last_end = -1
                    for i in positions:
                        if i > 0:
                            x = (new if i == last_end else sym[i - 1]) * S
                            delta[x + a] -= f
                            q = x + new
                            delta[q] += f
                            ws = where.get(q)
                            if ws is None:
                                where[q] = array("i", (w,))
                            elif ws[-1] != w:
                                ws.append(w)
                                if w < ws[0]:  # the smallest word in front
                                    ws[-1] = ws[0]
                                    ws[0] = w
                        if i + 2 < n:
                            y = sym[i + 2]
                            delta[b * S + y] -= f
                            q = new * S + y
                            delta[q] += f
                            ws = where.get(q)
                            if ws is None:
                                where[q] = array("i", (w,))
                            elif ws[-1] != w:
                                ws.append(w)
                                if w < ws[0]:  # the smallest word in front
                                    ws[-1] = ws[0]
                                    ws[0] = w
                        last_end = i + 2
                    if len(positions) == 1:
                        i = positions[0]
                        flat[s + i] = new
                        if i + 2 < n:  # (an empty slice assignment would count as a resize)
                            flat[s + i + 1 : s + n - 1] = sym[i + 2 :]
                    else:
                        out = merged_word(sym, positions, new)
                        flat[s : s + len(out)] = array("i", out)
                    lens[w] = n - len(positions)
                    token_count -= len(positions) * f
                pairs, changes = list(delta), list(delta.values())
            # ---- update counts and the heap ---------------------------------------------------------
            if not first_seen:
                while len(hf_rank) < len(vocab):
                    hf_rank.append(len(hf_rank))
            # In bulk (C-level maps over the dicts): the pairs are distinct, so order does not matter.
            if refused or (a == b and best in pairs):  # only a run (a, a) can change the merged pair
                kept = [(q, d) for q, d in zip(pairs, changes) if q != best and q not in refused]
                pairs, changes = [q for q, _ in kept], [d for _, d in kept]
            now = list(map(add, map(counts.get, pairs, repeat(0)), changes))
            counts.update(zip(pairs, now))
            if now and min(now) <= 0:
                for q, c in zip(pairs, now):
                    if c <= 0:
                        counts.pop(q, None)
                        where.pop(q, None)
            # A pair that gained is pushed with its count; with first-seen, one whose count stayed
            # is pushed too (an occurrence may have appeared earlier: a lower key).
            if first_seen:
                entries = [((_CMAX - c) << _C_SHIFT) | (where[q][0] << W) | q
                           for q, c, d in zip(pairs, now, changes) if d > 0 or (d == 0 and c > 0)]
            else:
                entries = [((_CMAX - c) << _C_SHIFT) | ((hf_rank[q // S] * S + hf_rank[q % S]) << _P_BITS) | q
                           for q, c, d in zip(pairs, now, changes) if d > 0]
            if entries:
                deque(map(heappush, repeat(heap, len(entries)), entries), 0)  # a C loop, not a Python one
            step += 1
            self.merges.append((a, b, new))
            self.frequencies.append(frequency)
            self.token_counts.append(token_count)  # last: len(self.log) counts complete entries
            self.token_count = token_count
            yield MergeEvent(step, a, b, new, frequency, len(vocab), token_count)
            if self._flat is not store:  # someone asked for the words as lists: take them back
                view.release()
                store = self._flat = FlatWords.from_lists(self._words or [])
                self._words = None
                flat, start, lens = store.sym, store.start, store.lens
                view = bpe_kernel.FlatView(store, freqs)
                first_position = partial(self._first_position_flat, where=where, unit_len=unit_len, store=store,
                                         front_min=True)

    def _refit(self, w: int, f: int, refit: Callable[[list[int]], list[int] | None], delta: defaultdict[int, int],
               where: dict[int, list[int]], first: dict[int, int] | None) -> int:
        """Replace word ``w`` by what ``refit`` makes of it, moving its pair counts into ``delta``;
        returns how many tokens fewer the corpus has."""
        sym = self.words[w]
        fixed = refit(sym)
        if fixed is None or fixed == sym:
            return 0
        S = _SHIFT
        for i in range(len(sym) - 1):
            delta[sym[i] * S + sym[i + 1]] -= f
        for i in range(len(fixed) - 1):
            q = fixed[i] * S + fixed[i + 1]
            delta[q] += f
            ws = where.get(q)
            if ws is None:
                where[q] = [w]
            elif ws[-1] != w:
                ws.append(w)
                if w < ws[0]:  # the smallest word in front (the list loop's first-seen bound)
                    ws[-1] = ws[0]
                    ws[0] = w
            if first is not None and w * _POS < first.get(q, _NEVER):
                first[q] = w * _POS
        self.words[w] = fixed
        return (len(sym) - len(fixed)) * f

    def _first_position(self, p: int, where: dict[int, list[int]], unit_len: list[int],
                        front_min: bool = False) -> int | None:
        """Exact first-seen key of pair ``p``: smallest word index, then unit offset inside it.

        With ``front_min`` (the list keeps its smallest word in front) that word is tried first and
        the list left as it is when it holds the pair. Else the pair's word list is sorted in place
        (appends since the last call form a sorted tail, which the sort merges in linear time) and
        the stale words before the first true one are dropped from it."""
        ws = where.get(p)
        if not ws:
            return None
        a, b = divmod(p, _SHIFT)
        words = self.words
        if front_min:
            w = ws[0]
            sym = words[w]
            if a in sym:
                for i in range(len(sym) - 1):
                    if sym[i] == a and sym[i + 1] == b:
                        return w * _POS + sum(map(unit_len.__getitem__, sym[:i]))
        ws.sort()
        stale = 0
        for w in ws:
            sym = words[w]
            if a in sym:
                offset = 0
                for i in range(len(sym) - 1):
                    if sym[i] == a and sym[i + 1] == b:
                        if stale:
                            del ws[:stale]
                        return w * _POS + offset
                    offset += unit_len[sym[i]]
            stale += 1
        ws.clear()
        return None

    def _first_position_flat(self, p: int, where: dict[int, array], unit_len: list[int],
                             store: FlatWords, front_min: bool = False) -> int | None:
        """:meth:`_first_position` over the flat store (word lists as ``array('i')``).

        Usually the list's smallest word (its front with ``front_min``, else found with ``min``)
        still holds the pair: the list is then left as it is (no sort, no copy: this runs once a
        merge or more). Else the list is sorted into a new array without the stale words before
        the first true one."""
        ws = where.get(p)
        if not ws:
            return None
        a, b = divmod(p, _SHIFT)
        flat, start, lens = store.sym, store.start, store.lens
        w = ws[0] if front_min else min(ws)
        s = start[w]
        found = _pair_offset(flat[s : s + lens[w]], a, b, unit_len)
        if found >= 0:
            return w * _POS + found
        ordered = sorted(ws)
        for stale, w in enumerate(ordered):
            s = start[w]
            found = _pair_offset(flat[s : s + lens[w]], a, b, unit_len)
            if found >= 0:
                where[p] = array("i", ordered[stale:])
                return w * _POS + found
        where[p] = array("i")
        return None

    # ------------------------------------------------------------------------------------------------
    def tokenizer(self, name: str = "") -> Tokenizer:
        """The tokenizer trained so far (callable mid-run: the merges made up to now)."""
        cfg = self.config
        return Tokenizer(
            vocab=tuple(self.vocab),
            merges=tuple(self.merges),
            units=cfg.units,
            pretokenizer=cfg.pretokenizer,
            normalizer=tuple(cfg.normalizer),
            special_tokens=dict(self.special_tokens),
            end_of_word=cfg.end_of_word if cfg.units == "chars" else "",
            name=name,
        )


def train(word_counts: Mapping[str, int], config: TrainConfig,
          should_stop: Callable[[], bool] | None = None) -> tuple[Tokenizer, list[int]]:
    """Train to completion; returns the tokenizer and the frequency of each merge when made."""
    trainer = BpeTrainer(word_counts, config)
    for _event in trainer.run(should_stop):
        pass
    return trainer.tokenizer(), trainer.frequencies
