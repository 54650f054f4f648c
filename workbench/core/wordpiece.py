"""WordPiece (BERT): training over a word-frequency table, greedy longest-match inference, decoding.

**Training.** Each distinct pre-token is stored once, split into characters; every character but
the first carries the continuation prefix (``##``). Initial ids follow Hugging Face's layout:
special tokens (``[PAD] [UNK] [CLS] [SEP] [MASK]`` by default), the alphabet in code-point order,
then the ``##x`` pieces in order of first appearance (words in table order, left to right).
Two scores pick the pair to merge:

* ``likelihood`` (default): ``freq(xy) / (freq(x) * freq(y))`` over the current segmentation,
  frequencies weighted by word counts. Ties: the higher pair count, then the smaller
  ``(left id, right id)``. Scores are compared as floats (equal fractions give equal floats; two
  unequal fractions closer than a float can tell would count as a tie).
* ``frequency``: what ``tokenizers``' ``WordPieceTrainer`` really does — its ``BpeTrainer`` with
  the ``##`` prefix: the most frequent pair, ties by the smallest ``(left id, right id)``. With this
  score the run replays that trainer's priority queue *including its quirks*, so the vocabulary is
  the library's piece for piece: a merged pair's count is never reset, and a queue entry merges
  only the words it was pushed with (when the same piece can be made by two different pairs, a
  pair's occurrences can then be merged in two steps). Where no merge re-makes an existing piece
  this is exactly the textbook loop (:mod:`workbench.core.wordpiece_reference`). One thing cannot
  be replayed: two queue entries for the same pair with the same count (an old one and one pushed
  after the pair was made again) that hold different words. The library's heap pops them in an order
  set by its hash maps' random seeds, so its vocabulary differs run to run from there (measured:
  half and half over 200 runs on one table). The trainer pops the older one first and records the
  vocabulary size at that point in ``undetermined_from``; that only happens when some words contain
  the prefix's characters (a ``#`` that the ``bert`` pre-tokenizer would have split off).

Hugging Face iterates a hash map when it numbers the ``##x`` pieces, so its ids for them change
from run to run (and with them the id tie-break); ``continuation_order`` replays a given order. The
merged piece of ``x`` and ``##y`` is ``xy``; a piece that already exists keeps its id. Training
stops at ``vocab_size`` (counting specials, alphabet and ``##x`` pieces — an initial vocabulary
already that large gets no merges, as in ``tokenizers``), after ``merges`` merges, or when no pair
reaches ``min_frequency``.

Both scores are incremental: pair counts and a pair → words index are built once and a merge
touches only the words that hold the pair. For ``likelihood`` a merge also raises the score of
every pair that contains the two merged symbols (their frequencies dropped): those pairs are found
through a symbol → pairs index and pushed again; on pop an entry is re-validated against the
current score — a stale higher one is pushed back with its true value, a stale lower one dropped
(a fresh one is always in the heap, because every rise pushes).

The words live in BPE's flat store (:class:`~workbench.core.bpe.FlatWords`, one ``array('i')``)
from the run's start; a merge held by many words runs as numpy passes of
:func:`workbench.core.bpe_kernel.apply_merge` (the same matches and count changes as the Python
loop of :meth:`WordPieceTrainer._merge`: tests hold them equal), and a large table's pair index is
:func:`~workbench.core.bpe_kernel.build_index`. The kernel's "words where a pair gained" map is
exactly the word set a queue entry of the frequency score merges.

The frequency score's loop runs in C when the optional extension :mod:`workbench.core._wordpiece_queue`
was built (:meth:`WordPieceTrainer._run_native`: the same queue, quirks included, over the flat
store's own buffers, with its own pair index — no numpy); :meth:`WordPieceTrainer._run_frequency`
stays the reference, used when the module is absent, with ``WORKBENCH_PURE=1``, by subclasses and
with ``native = False``, and a hypothesis test holds the two equal (tests/core/test_wordpiece_native.py).

**Inference** (:class:`WordPieceModel`) is BERT's: greedy longest match per pre-token, the
prefix on non-initial pieces, the whole word becoming ``[UNK]`` when some part matches nothing or
the word is longer than ``max_input_chars_per_word`` characters. **Decoding** is the WordPiece
decoder of ``tokenizers`` with ``cleanup`` off (no "do n't" → "don't" repairs): pieces joined,
``##`` pieces glued to the previous one, a space before every other piece.

Left out: ``end_of_word_suffix`` and ``max_token_length`` (HF options BERT does not use).
"""

from __future__ import annotations

import heapq
import os
from array import array
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import add, mul
from types import ModuleType
from typing import TYPE_CHECKING, Literal, cast

from workbench.core.bpe import FlatWords, merged_word
from workbench.core.model import MergeEvent, Tokenizer
from workbench.core.trainer import TrainLog
from workbench.errors import ConfigError, WorkbenchError

if TYPE_CHECKING:
    from workbench.core.bpe_kernel import FlatView


def _load_native() -> ModuleType | None:
    """The optional C queue loop of the frequency score (``workbench/core/_wordpiece_queue.c``, built at
    install when a compiler is there), or None: not built, or ``WORKBENCH_PURE=1`` in the environment
    (tests and benches)."""
    if os.environ.get("WORKBENCH_PURE", "") not in ("", "0"):
        return None
    try:
        from workbench.core import _wordpiece_queue
    except ImportError:
        return None
    return _wordpiece_queue


_native = _load_native()

Score = Literal["likelihood", "frequency"]
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_SHIFT = 1 << 21  # pair key = left * _SHIFT + right
_I_BITS = 40  # queue-entry index inside a heap key (frequency score)
_P_BITS = 42
_CMAX = 1 << 62


@dataclass(frozen=True)
class WordPieceConfig:
    """What to train; ``vocab_size`` and/or ``merges`` say how far."""

    vocab_size: int | None = None
    merges: int | None = None
    min_frequency: int = 0
    special_tokens: tuple[str, ...] = BERT_SPECIALS
    score: Score = "likelihood"
    tie_break: str = "hf"
    pretokenizer: str = "bert"
    normalizer: tuple[str, ...] = ("bert",)
    continuing_prefix: str = "##"
    unk_token: str = "[UNK]"
    limit_alphabet: int | None = None
    initial_alphabet: str = ""
    max_input_chars_per_word: int = 100

    def settings(self) -> dict:
        return {
            "model": "wordpiece",
            "units": "chars",
            "vocab_size": self.vocab_size,
            "merges": self.merges,
            "min_frequency": self.min_frequency,
            "special_tokens": list(self.special_tokens),
            "wordpiece_score": self.score,
            "tie_break": self.tie_break,
            "pretokenizer": self.pretokenizer,
            "normalizer": list(self.normalizer),
            "continuing_prefix": self.continuing_prefix,
            "unk_token": self.unk_token,
            "limit_alphabet": self.limit_alphabet,
            "initial_alphabet": self.initial_alphabet,
            "max_input_chars_per_word": self.max_input_chars_per_word,
        }


def _check(config: WordPieceConfig) -> list[str]:
    """The special tokens in id order (the unknown token appended when missing), or a clear error."""
    if config.score not in ("likelihood", "frequency"):
        raise ConfigError("options.wordpiece_score", f"unknown WordPiece score {config.score!r}: use likelihood or "
                          "frequency")
    if config.tie_break != "hf":
        raise ConfigError("tie_break", f"tie-break {config.tie_break!r} is not available for WordPiece: it breaks "
                          "ties by id order (hf)")
    if config.vocab_size is None and config.merges is None:
        raise ConfigError("vocab_size", "say how far to train: give a vocabulary size or a number of merges")
    if not config.continuing_prefix:
        raise ConfigError("continuing_prefix", "the WordPiece continuation prefix cannot be empty: use ## (BERT's)")
    specials = list(dict.fromkeys(config.special_tokens))
    if any(not token for token in specials):
        raise ConfigError("special_tokens", "a special token cannot be empty: remove the empty one")
    if not config.unk_token:
        raise ConfigError("special_tokens", "WordPiece needs an unknown token: add [UNK] to the special tokens")
    if config.unk_token not in specials:
        specials.append(config.unk_token)
    return specials


class WordPieceTrainer:
    """Train WordPiece on an ordered ``{pre-token: count}`` table (see the module docstring)."""

    value_name = "frequency"  # what the store keeps per merge (the score is in ``scores``)
    # A merge whose words number at least this runs as numpy passes over all of them
    # (:func:`workbench.core.bpe_kernel.apply_merge`); fewer, the Python loop of :meth:`_merge`.
    numpy_min_words = 128
    # From this many distinct words the pair index at the start is built by numpy too
    # (:func:`workbench.core.bpe_kernel.build_index`); below, numpy's import (0.1 s) is not worth it.
    numpy_index_min_words = 50_000
    # The words: as lists until :meth:`run` starts, then in one flat store (:class:`FlatWords`,
    # shared with BPE's trainer and kernel) that merges rewrite in place.
    _flat: FlatWords | None = None
    _view: FlatView | None = None  # the numpy views over ``_flat`` (bpe_kernel.FlatView), made by the first big merge
    # The C queue loop (``_wordpiece_queue``) runs the frequency score when it was built: None follows
    # the environment (``WORKBENCH_PURE=1``: the pure loop); False keeps the pure loop (tests of it).
    native: bool | None = None

    @property
    def words(self) -> list[list[int]]:
        """Each word's current symbol ids, in table order (a copy: the store is :attr:`_flat`)."""
        return self._flatten().to_lists()

    def __init__(self, word_counts: Mapping[str, int], config: WordPieceConfig, *,
                 continuation_order: Sequence[str] | None = None):
        self.config = config
        specials = _check(config)
        prefix = config.continuing_prefix
        # Piece texts; ``vocab`` holds the same as UTF-8 bytes (the attribute BpeTrainer has).
        self.pieces: list[str] = []
        self.vocab: list[bytes] = []
        self._id_of: dict[str, int] = {}  # HF's word_to_id: specials included
        self.special_tokens = {s: self._add(s) for s in specials}

        limited = config.limit_alphabet is not None
        frequency: dict[str, int] = {}
        seen: set[str] = set()
        for word, count in word_counts.items():
            if count > 0:
                if limited:  # character frequencies only matter when the alphabet is cut
                    for ch in word:
                        frequency[ch] = frequency.get(ch, 0) + count
                else:
                    seen.update(word)
        if not limited:
            frequency = dict.fromkeys(seen, 0)
        for ch in config.initial_alphabet:
            frequency[ch] = _CMAX
        kept = list(frequency)
        if config.limit_alphabet is not None and len(kept) > config.limit_alphabet:
            # Drop the rarest; ties by code point (HF's unstable sort leaves them unspecified).
            kept.sort(key=lambda ch: (frequency[ch], ord(ch)))
            kept = kept[len(kept) - max(0, config.limit_alphabet):]
        for ch in sorted(kept):
            self._add(ch)
        self.alphabet_size = len(self.pieces) - len(specials)
        id_of = self._id_of
        cont: dict[str, int] = {}  # character → id of its continuation piece ("##" + character)
        for piece in continuation_order or ():
            ch = piece[len(prefix):]
            if piece.startswith(prefix) and ch in id_of:
                cont[ch] = self._add(piece)

        # The words go straight into the flat store (4 bytes a symbol; a list per word held next to
        # the table of strings was the set-up's peak) and their counts into a machine array.
        sym, lens = array("i"), array("i")
        freqs = array("q")
        extend, add_len, add_freq = sym.extend, lens.append, freqs.append
        continuation = cont.__getitem__
        for word, count in word_counts.items():
            if count <= 0 or not word:
                continue
            n0 = len(sym)
            # "First" is the word's own first character, even when a cut alphabet drops it (as HF).
            head = id_of.get(word[0])
            if head is not None:
                sym.append(head)
            try:
                extend(map(continuation, word[1:]))  # (a C loop: the hot line of setting up)
            except KeyError:  # a character seen after a word's start for the first time (or cut)
                del sym[n0 + (head is not None):]
                for ch in word[1:]:
                    if ch not in cont and ch in id_of:
                        cont[ch] = self._add(prefix + ch)
                extend([cont[ch] for ch in word[1:] if ch in cont])
            if len(sym) > n0:
                add_len(len(sym) - n0)
                add_freq(count)
        self._flat = _flat_store(sym, lens)
        self.freqs: Sequence[int] = freqs
        self.initial_size = len(self.pieces)
        # score = frequency: where tokenizers' own result stops being a function of its input (see
        # ``_check_tie``); ``pieces[:undetermined_from + 1]`` are the library's whatever its seed.
        self.undetermined_from: int | None = None
        self.token_count = sum(map(mul, lens, freqs))
        # The merge log, one entry per applied merge (what a run writer stores).
        self.merges: list[tuple[int, int, int]] = []
        self.frequencies: list[int] = []
        self.scores: list[float] = []
        self.token_counts: list[int] = []
        # The Trainer interface (workbench.core.trainer): the log shares the lists above.
        # With the likelihood score the log carries each merge's score too (the store's run_steps,
        # what the Train tab plots); with score = frequency the score is the frequency already kept.
        self.log = TrainLog(self.vocab, self.merges, self.frequencies, self.token_counts,
                            self.scores if config.score == "likelihood" else None)
        self.initial_vocab = tuple(self.vocab)
        special_ids = set(self.special_tokens.values())
        self.initial_kinds = tuple("special" if i in special_ids else "base" for i in range(len(self.vocab)))
        self.initial_token_count = self.token_count
        self.word_types = len(lens)
        if config.vocab_size is not None:
            self.target = max(0, config.vocab_size - self.initial_size)
            if config.merges is not None:
                self.target = min(self.target, config.merges)
        else:
            self.target = config.merges or 0

    def _add(self, text: str) -> int:
        token_id = self._id_of.get(text)
        if token_id is None:
            token_id = self._id_of[text] = len(self.pieces)
            self.pieces.append(text)
            self.vocab.append(text.encode("utf-8"))
        return token_id

    def _merged_piece(self, a: int, b: int) -> int:
        prefix = self.config.continuing_prefix
        right = self.pieces[b]
        right = right.removeprefix(prefix)
        return self._add(self.pieces[a] + right)

    def _limits(self) -> tuple[float, float]:
        cfg = self.config
        return (cfg.merges if cfg.merges is not None else float("inf"),
                cfg.vocab_size if cfg.vocab_size is not None else float("inf"))

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[MergeEvent]:
        """Merge until a limit is reached or no pair qualifies; ``should_stop()`` ends between merges."""
        if self.config.score == "frequency":
            # (the C loop counts in 64-bit ints: a corpus of 2**61 tokens or more — huge frequencies —
            # trains on the pure loop, whose Python ints do not wrap; _wordpiece_queue.c refuses it too)
            if (self.native is not False and _native is not None and type(self) is WordPieceTrainer
                    and self.token_count < 1 << 61):
                return self._run_native(should_stop)
            return self._run_frequency(should_stop)
        return self._run_likelihood(should_stop)

    # ---- merging one pair inside the words that hold it ------------------------------------------
    def _flatten(self) -> FlatWords:
        """The words' flat store (made by ``__init__``)."""
        assert self._flat is not None
        return self._flat

    def _symbols(self, w: int) -> array:
        """Word ``w``'s current symbols."""
        store = self._flatten()
        s = store.start[w]
        return store.sym[s : s + store.lens[w]]

    def _merge(self, ws: Collection[int], a: int, b: int, new: int
               ) -> tuple[list[int], list[int], Mapping[int, Collection[int]], int]:
        """Merge ``(a, b)`` → ``new`` left to right in each word of ``ws`` (distinct ids; words
        without the pair are left alone). Returns ``(pairs, changes, grown, made)``: every pair whose
        count the merge changes with its weighted change (zero sums included), the words in which
        each pair gained (ascending), and the weighted number of merges made. The changes are
        tokenizers' ``Word::merge``; a merge held by many words runs in numpy (the BPE kernel,
        which makes the same changes), the others in the loop below."""
        store = self._flatten()
        if len(ws) >= self.numpy_min_words:
            from workbench.core import bpe_kernel

            if self._view is None:
                self._view = bpe_kernel.FlatView(store, cast("list[int]", self.freqs))
            grown: dict[int, array] = {}
            ids = ws if isinstance(ws, array) else array("i", ws)
            pairs, changes, made = bpe_kernel.apply_merge(self._view, ids, a, b, new, _SHIFT, 0, grown, None)
            return pairs, changes, grown, made
        S = _SHIFT
        flat, start, lens, freqs = store.sym, store.start, store.lens, self.freqs
        b_s, new_s = b * S, new * S
        delta: defaultdict[int, int] = defaultdict(int)
        grown_lists: dict[int, list[int]] = {}
        grown_get = grown_lists.get
        made = 0
        for w in ws:
            s = start[w]
            n = lens[w]
            sym = flat[s : s + n]
            occurrences = sym.count(a)  # C loops find the matches; Python touches only them
            if not occurrences:
                continue
            f = freqs[w]
            if occurrences == 1:  # the common case: one place, the rest of the word moved up in C
                i = sym.index(a)
                if i + 1 >= n or sym[i + 1] != b:
                    continue
                if i > 0:
                    x = sym[i - 1] * S
                    delta[x + a] -= f
                    q = x + new
                    delta[q] += f
                    listed = grown_get(q)
                    if listed is None:
                        grown_lists[q] = [w]
                    else:
                        listed.append(w)  # one place: this word is not listed yet
                if i + 2 < n:
                    y = sym[i + 2]
                    delta[b_s + y] -= f
                    q = new_s + y
                    delta[q] += f
                    listed = grown_get(q)
                    if listed is None:
                        grown_lists[q] = [w]
                    elif listed[-1] != w:  # (x, new) and (new, y) are one pair when x == y == new
                        listed.append(w)
                    flat[s + i + 1 : s + n - 1] = sym[i + 2 :]
                flat[s + i] = new
                lens[w] = n - 1
                made += f
                continue
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
                    listed = grown_get(q)
                    if listed is None:
                        grown_lists[q] = [w]
                    elif listed[-1] != w:
                        listed.append(w)
                if i + 2 < n:
                    y = sym[i + 2]
                    delta[b_s + y] -= f
                    q = new_s + y
                    delta[q] += f
                    listed = grown_get(q)
                    if listed is None:
                        grown_lists[q] = [w]
                    elif listed[-1] != w:
                        listed.append(w)
                positions.append(i)
                last_end = i + 2
            if not positions:
                continue
            out = merged_word(sym, positions, new)
            flat[s : s + len(out)] = array("i", out)
            lens[w] = len(out)
            made += len(positions) * f
        return list(delta), list(delta.values()), grown_lists, made

    def _log(self, a: int, b: int, new: int, count: int, score: float, made: int) -> MergeEvent:
        """Log one merge (``score``: the frequency score passes the count itself, one object for both
        lists; :meth:`id_scores` makes it a float)."""
        self.token_count -= made
        self.merges.append((a, b, new))
        self.frequencies.append(count)
        self.scores.append(score)
        self.token_counts.append(self.token_count)
        return MergeEvent(len(self.merges), a, b, new, count, len(self.pieces), self.token_count)

    # ---- score = frequency: tokenizers' BpeTrainer queue, quirks included --------------------------
    def _pair_index(self) -> tuple[dict[int, int], Mapping[int, Collection[int]]]:
        """``(counts, where)`` over the words as they stand: each adjacent pair's weighted count and
        the words holding it (ascending, each once); the words go into the flat store. A large
        table is indexed by the BPE kernel's numpy passes, a small one here (numpy's import is not
        worth it there)."""
        if self.word_types >= self.numpy_index_min_words:
            from workbench.core import bpe_kernel

            self._view = bpe_kernel.FlatView(self._flatten(), cast("list[int]", self.freqs))
            pair_counts, pair_words, _first = bpe_kernel.build_index(self._view, _SHIFT, 1, False)
            return pair_counts, pair_words
        S = _SHIFT
        counts: dict[int, int] = {}
        lists: dict[int, list[int]] = {}
        get = counts.get
        store = self._flatten()
        flat = store.sym
        for w, (s, n, f) in enumerate(zip(store.start, store.lens, self.freqs)):
            sym = flat[s : s + n]
            for x, y in zip(sym, sym[1:]):
                p = x * S + y
                c = get(p)
                if c is None:
                    counts[p] = f
                    lists[p] = [w]
                else:
                    counts[p] = c + f
                    listed = lists[p]
                    if listed[-1] != w:
                        listed.append(w)
        return counts, lists

    def _run_frequency(self, should_stop: Callable[[], bool] | None) -> Iterator[MergeEvent]:
        S = _SHIFT
        PI = _P_BITS + _I_BITS
        counts, where = self._pair_index()
        # A heap key: most frequent first, then smallest (left, right), then the entry's index,
        # whose words are ``entries[index]`` (tokenizers' ``Merge.pos``).
        # Each entry's words as a machine array (4 bytes a word), not a list of int objects (~40):
        # the entries the queue still holds are most of the loop's memory (measured on 3.9 MB of
        # text: 57k words, 70k entries pushed; arrays cut the run's peak by ~7 MB), for the cost
        # of one C copy per list. Same words, same order: the same merges.
        entries: list[Collection[int] | None] = [ws if isinstance(ws, array) else array("i", ws)
                                                 for ws in where.values()]
        heap = [((_CMAX - counts[p]) << PI) | (p << _I_BITS) | index for index, p in enumerate(where)]
        del where
        heapq.heapify(heap)
        heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
        counts_get = counts.get
        max_merges, target_vocab = self._limits()
        min_freq = self.config.min_frequency
        pmask, imask = (1 << _P_BITS) - 1, (1 << _I_BITS) - 1
        merges, pieces = self.merges, self.pieces
        while len(merges) < max_merges and len(pieces) < target_vocab and heap:
            if should_stop is not None and should_stop():
                return
            entry = heap[0]
            p = (entry >> _I_BITS) & pmask
            c = counts[p]
            if c != _CMAX - (entry >> PI):  # stale: back in with the pair's count, same words
                heapreplace(heap, ((_CMAX - c) << PI) | (entry & ((1 << PI) - 1)))
                continue
            heappop(heap)
            if c < 1 or min_freq > c:
                return
            a, b = divmod(p, S)
            if heap and heap[0] >> _I_BITS == entry >> _I_BITS and self.undetermined_from is None:
                self._check_tie(heap, entry, entries, a, b)
            new = self._merged_piece(a, b)
            index = entry & imask
            pos = entries[index]
            entries[index] = None
            pairs, changes, grown, made = self._merge(pos or (), a, b, new)
            # The merged pair's own count is left as it was (only changes in delta are applied).
            counts.update(zip(pairs, map(add, map(counts_get, pairs, repeat(0)), changes)))
            for q, qws in grown.items():
                cq = counts[q]
                if cq > 0:
                    heappush(heap, ((_CMAX - cq) << PI) | (q << _I_BITS) | len(entries))
                    entries.append(qws if isinstance(qws, array) else array("i", qws))
            if made:  # an entry whose words hold the pair no more merges nothing: not a step
                yield self._log(a, b, new, c, c, made)

    def _run_native(self, should_stop: Callable[[], bool] | None) -> Iterator[MergeEvent]:
        """:meth:`_run_frequency` with its queue, counts and word edits in C
        (:mod:`workbench.core._wordpiece_queue`): the same entries popped in the same order, the same
        merges, the same :attr:`undetermined_from` (a hypothesis test holds them equal). The C side
        builds the pair index, pops and applies entries; the piece table, the minimum frequency, the
        log and the events stay here, and ``should_stop`` is asked before every merge as in the pure
        loop."""
        store = self._flatten()
        native = _native
        assert native is not None  # (run() chose this loop because it is)
        loop = native.QueueLoop(store.sym, store.lens, store.start, self.freqs)
        max_merges, target_vocab = self._limits()
        min_freq = self.config.min_frequency
        merges, pieces = self.merges, self.pieces
        pop, tied, merge = loop.pop, loop.tied, loop.merge
        # One int object per id, shared by every merge that names it (the C side returns new ones:
        # 64 bytes a merge on 30k merges).
        ids = list(range(len(pieces)))
        while len(merges) < max_merges and len(pieces) < target_vocab:
            if should_stop is not None and should_stop():
                return
            picked = pop()
            if picked is None:
                return
            a, b, c = picked
            if c < 1 or min_freq > c:
                return
            if self.undetermined_from is None and tied():
                self.undetermined_from = len(pieces)
            new = self._merged_piece(a, b)
            if new == len(ids):
                ids.append(new)
            made = merge(new)
            if made:  # (as in _run_frequency: an entry that merged nothing is no step)
                yield self._log(ids[a], ids[b], ids[new], c, c, made)

    def _check_tie(self, heap: list[int], entry: int, entries: Sequence[Collection[int] | None], a: int, b: int
                   ) -> None:
        """Set :attr:`undetermined_from` when ``entry`` ties with other queue entries (same count and
        pair) and two of them would merge different words: which one tokenizers pops first depends
        on its hash maps' random seeds, and so does the rest of its vocabulary."""
        key, imask = entry >> _I_BITS, (1 << _I_BITS) - 1
        tied = [entry]
        todo = [0]
        while todo:  # the equal keys form a subtree at the heap's root (nothing sorts before them)
            i = todo.pop()
            if i < len(heap) and heap[i] >> _I_BITS == key:
                tied.append(heap[i])
                todo += (2 * i + 1, 2 * i + 2)
        live: set[frozenset[int]] = set()
        for e in tied:
            ws = frozenset(w for w in entries[e & imask] or () if _holds(self._symbols(w), a, b))
            if ws:
                live.add(ws)
        if len(live) > 1:
            self.undetermined_from = len(self.pieces)

    # ---- score = likelihood ------------------------------------------------------------------------
    def _run_likelihood(self, should_stop: Callable[[], bool] | None) -> Iterator[MergeEvent]:
        S = _SHIFT
        counts: dict[int, int] = {}
        where: defaultdict[int, set[int]] = defaultdict(set)
        sym_count: list[int] = [0] * len(self.pieces)
        pairs_of: defaultdict[int, set[int]] = defaultdict(set)
        for w, sym in enumerate(self.words):  # (a copy of the store as lists)
            f = self.freqs[w]
            for s in sym:
                sym_count[s] += f
            for i in range(len(sym) - 1):
                p = sym[i] * S + sym[i + 1]
                counts[p] = counts.get(p, 0) + f
                where[p].add(w)
        for p in counts:
            a, b = divmod(p, S)
            pairs_of[a].add(p)
            pairs_of[b].add(p)
        min_freq = max(1, self.config.min_frequency)

        def key(p: int, c: int) -> tuple[float, int, int]:
            a, b = divmod(p, S)
            return (-c / (sym_count[a] * sym_count[b]), -c, p)

        heap = [key(p, c) for p, c in counts.items() if c >= min_freq]
        heapq.heapify(heap)
        heappush, heappop = heapq.heappush, heapq.heappop
        max_merges, target_vocab = self._limits()
        while len(self.merges) < max_merges and len(self.pieces) < target_vocab and heap:
            if should_stop is not None and should_stop():
                return
            entry = heappop(heap)
            p = entry[2]
            c = counts.get(p, 0)
            if c < min_freq:
                continue
            current = key(p, c)
            if current != entry:
                if current < entry:
                    continue  # an entry at least this good is in the heap: every rise pushes one
                heappush(heap, current)
                continue
            a, b = divmod(p, S)
            new = self._merged_piece(a, b)
            if new >= len(sym_count):
                sym_count.append(0)
            pairs, changes, grown, made = self._merge(where.pop(p), a, b, new)
            del counts[p]
            sym_count[a] -= made
            sym_count[b] -= made  # a == b: both halves were a
            sym_count[new] += made
            for q, d in zip(pairs, changes):
                if q == p:
                    continue
                cq = counts.get(q, 0) + d
                if cq <= 0:
                    counts.pop(q, None)
                    where.pop(q, None)
                    continue
                counts[q] = cq
                if d > 0 and cq >= min_freq:
                    heappush(heap, key(q, cq))
            for q, qws in grown.items():
                if q in counts:
                    where[q].update(qws)
                    qa, qb = divmod(q, S)
                    pairs_of[qa].add(q)
                    pairs_of[qb].add(q)
            # Every pair holding a or b now scores higher: push its current value.
            # (The key is written out here: this loop is the hot one.)
            counts_get = counts.get
            for s in (a, b) if a != b else (a,):
                live = []
                for q in pairs_of[s]:
                    now = counts_get(q)
                    if now is not None:
                        live.append(q)
                        if now >= min_freq:
                            qa, qb = divmod(q, S)
                            heappush(heap, (-now / (sym_count[qa] * sym_count[qb]), -now, q))
                pairs_of[s] = set(live)
            if len(heap) > 4 * len(counts) + 100_000:
                # Mostly stale entries by now: start over from the exact scores (less memory, shallower heap).
                heap = [key(q, cq) for q, cq in counts.items() if cq >= min_freq]
                heapq.heapify(heap)
            yield self._log(a, b, new, c, -entry[0], made)

    # ------------------------------------------------------------------------------------------------
    def tokenizer(self, name: str = "") -> Tokenizer:
        """The tokenizer trained so far (callable mid-run), with :meth:`id_scores` as its ``scores``.

        The scores only describe the training (the Merges tab shows them): WordPiece inference is
        greedy longest match, so nothing encodes or exports by them.
        """
        cfg = self.config
        return Tokenizer(
            vocab=tuple(self.vocab), merges=tuple(self.merges), units="chars", pretokenizer=cfg.pretokenizer,
            normalizer=tuple(cfg.normalizer), special_tokens=dict(self.special_tokens), name=name,
            unk_token=cfg.unk_token, model="wordpiece", continuing_prefix=cfg.continuing_prefix,
            max_input_chars_per_word=cfg.max_input_chars_per_word, scores=self.id_scores(),
        )

    def id_scores(self) -> tuple[float, ...]:
        """One score per id: the score of the merge that first made it, 0.0 for the ids training
        started with (specials, characters, ``##`` pieces).

        A merge whose result already existed (two pairs spelling the same piece) adds no id, so its
        score is kept only in :attr:`scores` (one per merge), not here.
        """
        out = [0.0] * len(self.vocab)
        made = set(range(self.initial_size))
        for (_a, _b, new), score in zip(self.merges, self.scores):
            if new not in made:
                made.add(new)
                out[new] = float(score)
        return tuple(out)


def _flat_store(sym: array, lens: array) -> FlatWords:
    """A :class:`FlatWords` store whose word starts are an ``array('q')`` (8 bytes a word, where the
    store's own list of int objects takes ~36): the loops only index it, and numpy and the C loop
    read it as int64 the same."""
    store = FlatWords.__new__(FlatWords)
    store.sym, store.lens = sym, lens
    start = array("q", accumulate(lens, initial=0))
    start.pop()
    store.start = cast("list[int]", start)  # (typed a list in core/bpe.py: an index-only sequence here)
    return store


def _holds(sym: Sequence[int], a: int, b: int) -> bool:
    """Whether ``a`` is directly followed by ``b`` somewhere in ``sym``."""
    return any(sym[i] == a and sym[i + 1] == b for i in range(len(sym) - 1))


def train(word_counts: Mapping[str, int], config: WordPieceConfig,
          should_stop: Callable[[], bool] | None = None, *,
          continuation_order: Sequence[str] | None = None) -> tuple[Tokenizer, list[int]]:
    """Train to completion; returns the tokenizer and the pair count of each merge when made."""
    trainer = WordPieceTrainer(word_counts, config, continuation_order=continuation_order)
    for _event in trainer.run(should_stop):
        pass
    return trainer.tokenizer(), trainer.frequencies


# ---------------------------------------------------------------------------------------- inference
class WordPieceModel:
    """BERT's greedy longest match and the WordPiece decoder over a ``model="wordpiece"`` tokenizer."""

    def __init__(self, tokenizer: Tokenizer, max_merges: int | None = None):
        """``max_merges=N``: only pieces the first N merges made (and the initial ones) are used —
        the vocabulary "as of merge N" of a trained run."""
        self.tok = tokenizer
        self.prefix = tokenizer.continuing_prefix or "##"
        self.max_chars = tokenizer.max_input_chars_per_word
        self.texts: list[str] = [piece.decode("utf-8", "replace") for piece in tokenizer.vocab]
        for name, token_id in tokenizer.special_tokens.items():
            self.texts[token_id] = name
        # As tokenizers' vocab map: every piece and special by its text, the first id wins.
        later: set[int] = set()
        if max_merges is not None:
            kept = max(0, max_merges)
            later = {new for *_ab, new in tokenizer.merges[kept:]} - {new for *_ab, new in tokenizer.merges[:kept]}
        self.lookup: dict[str, int] = {}
        for token_id, text in enumerate(self.texts):
            if text and text not in self.lookup and token_id not in later:
                self.lookup[text] = token_id
        prefix_len = len(self.prefix)
        self.longest = max((len(t) - prefix_len if t.startswith(self.prefix) else len(t) for t in self.lookup),
                           default=1)
        unk = tokenizer.unk_token or "[UNK]"
        self.unk = tokenizer.special_tokens.get(unk, self.lookup.get(unk))

    def _unknown(self, word: str) -> tuple[int, ...]:
        if self.unk is None:
            raise WorkbenchError(f"no vocabulary entry matches {word[:20]!r} and the tokenizer has no [UNK] token")
        return (self.unk,)

    def encode_word(self, word: str) -> tuple[int, ...]:
        """Ids of one pre-token: longest vocabulary match from the left, ``##`` after the first."""
        n = len(word)
        if n > self.max_chars:
            return self._unknown(word)
        lookup, prefix, longest = self.lookup, self.prefix, self.longest
        out: list[int] = []
        start = 0
        while start < n:
            end = min(n, start + longest)
            found = None
            while end > start:
                sub = word[start:end] if start == 0 else prefix + word[start:end]
                found = lookup.get(sub)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return self._unknown(word)
            out.append(found)
            start = end
        return tuple(out)

    def spans(self, word: str, ids: Sequence[int]) -> list[tuple[int, int]]:
        """Code-point spans of ``ids`` inside ``word``; ``[UNK]`` covers the whole word."""
        if len(ids) == 1 and ids[0] == self.unk and self.texts[self.unk] != word:
            return [(0, len(word))]
        spans = []
        pos = 0
        for index, token_id in enumerate(ids):
            text = self.texts[token_id]
            if index and text.startswith(self.prefix):
                text = text[len(self.prefix):]
            spans.append((pos, pos + len(text)))
            pos += len(text)
        return spans

    def decode(self, ids: Iterable[int]) -> str:
        """tokenizers' WordPiece decoder with cleanup off: ``##`` glues, other pieces get a space."""
        texts, prefix = self.texts, self.prefix
        size = len(texts)
        parts = []
        for index, token_id in enumerate(ids):
            if not isinstance(token_id, int) or not 0 <= token_id < size or not texts[token_id]:
                raise WorkbenchError(f"id {token_id} is not in this tokenizer's vocabulary (valid ids: 0 to {size - 1})")
            text = texts[token_id]
            if index:
                text = text[len(prefix):] if text.startswith(prefix) else " " + text
            parts.append(text)
        return "".join(parts)
