"""SuperBPE: byte-level BPE that learns subwords first, then superwords that bridge spaces.

Liu, Hayase, Hofmann, Oh, Smith and Choi, "SuperBPE: Space Travel for Language Models" (COLM 2025,
arXiv:2503.13423). Training is a pre-tokenization curriculum on one BPE run:

* **Stage 1** — ordinary byte-level BPE with the run's own pre-tokenizer (GPT-2's pattern by
  default), until the vocabulary reaches the transition point *t*. It *is* the plain trainer
  (:class:`~workbench.core.bpe.BpeTrainer`) on the plain counts, so its merges, pieces and ids are
  exactly those of a BPE run stopped at *t*.
* **Stage 2** — BPE continues from there on the corpus split by :data:`STAGE2_PATTERN`, the paper's
  second-stage regex (its released ``extend_tokenizer.sh``): it no longer splits at spaces. Each
  distinct stage-2 piece is first encoded with the stage-1 merges (by rank, as the final tokenizer
  encodes it — the released trainer replays those merges over the new pieces, the same split), and
  new merges follow the stage-1 ones; new ids follow the last stage-1 id.

The paper's rules for stage 2, exactly (its regex and its fork of ``tokenizers``, commit "limit to
4-word tokens and special case colon"):

1. the stage-2 split, ``\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]{2,}[\\r\\n/]*| +(?!\\S)`` with the text between
   matches kept as pieces (Hugging Face's ``Split`` with ``isolated``): runs of one to three digits,
   runs of two or more punctuation marks (with the space before them and line breaks or ``/`` after),
   and the spaces of a run of spaces but its last are pieces of their own — so no merge crosses a
   digit group, a punctuation run or a run of spaces; everything else, *including single
   punctuation marks such as ``,`` ``.`` and line breaks*, may be merged across (the paper's
   released tokenizer makes ``",ĠIĠam"`` a token);
2. no token holds a colon followed by a space (``": "``: it would swallow the answer of
   "Question: … Answer: …" prompts);
3. no token holds more than four words (space-separated non-empty parts; :attr:`SuperBpeConfig.max_words`).

A candidate pair breaking rule 2 or 3 is never merged (its occurrences stay as they are) and is
counted in :attr:`SuperBpeTrainer.skipped`. The finished tokenizer splits text with the stage-2
pattern and applies every merge by rank — what a ``tokenizer.json`` with
``Sequence[Split(stage-2 regex, isolated), ByteLevel(use_regex=False)]`` does in stock
``tokenizers`` (the layout of the paper's released tokenizers).

The transition point is a vocabulary size, as in the paper (*t* = 180k of 200k for its main models):
:attr:`SuperBpeConfig.transition` below 1 is a share of the final vocabulary size (default 0.9, the
paper's 180k/200k), from 1 on a vocabulary size. Left out: the paper's other stage-2 corpus (both
stages read the same files here), extending a tokenizer someone ships (``workbench extend`` does
subword extension), character-level units (SuperBPE is byte-level).
"""

from __future__ import annotations

import gc
import re
from array import array
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import chain, compress, repeat
from operator import is_, mul
from typing import Callable, Iterator, Mapping

from workbench.core.bpe import _SHIFT, BpeTrainer, FlatWords, TrainConfig
from workbench.core.encoder import bpe_merge_rule
from workbench.core.model import MergeEvent, Tokenizer
from workbench.core.trainer import TrainingCancelled, TrainLog
from workbench.errors import ConfigError

#: The paper's stage-2 split (its ``extend_tokenizer.sh``): digit groups, punctuation runs and all
#: but the last space of a run are pieces; the text between matches stays, as its own pieces.
STAGE2_PATTERN = r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"
#: Candidate cuts of a stage-2 piece into segments: GPT-2's pre-tokens
#: (:data:`~workbench.core.pretokenize.GPT2_PATTERN`) as Python's ``re`` finds them, a quarter faster
#: than ``regex`` with ``\p{L}``: a letter is a ``\w`` that is neither a digit nor ``_``, so a few
#: characters (``²``, ``½``: numbers to GPT-2) fall in another alternative. Every cut is judged
#: before it is taken (:func:`encode_flat`), so that only changes which segments are looked up, never
#: the ids. The alternatives cover every character (whitespace; ``\w`` as a letter, digit or ``_``;
#: anything else), so no text is skipped.
_SEGMENTS = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]++| ?\d++| ?(?:[^\s\w]|_)++|\s++$|\s+(?!\S)|\s")
#: The paper's main models switch at 180k of 200k.
DEFAULT_TRANSITION = 0.9
DEFAULT_MAX_WORDS = 4
#: Stage-1 pre-tokenizers that drop or rewrite spaces, or do not split at all: stage 2 has nothing to add.
UNSUITED_STAGE1 = {"whitespace": "drops spaces", "bert": "drops spaces", "metaspace": "rewrites spaces as ▁",
                   "none": "does not split at spaces in the first place"}

#: Stage-1 words in the order of a store and that store (:meth:`SuperBpeTrainer._stage1_splits`).
Known = tuple[list[str], FlatWords]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cycle collector off while stage 2 builds and updates its index.

    Stage 2 indexes the whole text (each distinct stage-2 piece is mostly a line of its own: about
    430k distinct pairs on the shared corpora against 7k for stage 1's words), and every few hundred
    new lists the collector would walk all of it again; none of those structures can form a cycle
    (lists of ints, dicts of ints), so reference counting frees them alike. Measured: a fifth of
    stage 2's index time. Switched back on before each event reaches the caller; once the index is
    built, :func:`_freeze_index` keeps it out of the collections the caller's work triggers.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _freeze_index() -> bool:
    """Move every object the collector tracks, stage 2's index among them, out of its reach until
    stage 2 ends (:func:`gc.freeze`); True if done. The index holds one ``array`` per pair (about
    430k on the shared corpora), and arrays are tracked: each time the collector ran it walked them
    again — the first collections after the set-up walked all of them, into the oldest generation,
    and every full one after that again (measured: 0.9 s of a 5 s stage 2). None of them can be in
    a cycle; they are freed by reference counting as before. Objects created after this are
    collected as usual. Left alone when something else froze objects already (its unfreeze is its own)."""
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


def transition_step(settings: Mapping) -> int | None:
    """The merge step after which a stored SuperBPE run's stage 2 began (planned while stage 1
    runs, as made once it ended); None for any other run."""
    recorded = settings.get("superbpe") if settings.get("model") == "superbpe" else None
    step = recorded.get("transition_merge") if isinstance(recorded, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def is_superword(piece: bytes) -> bool:
    """A token that bridges a space: a space after some non-space byte (``"ĠofĠthe"``, ``",ĠI"``,
    ``"word "``); a word with its leading space (``"Ġthe"``) or a run of whitespace is not one."""
    stripped = piece.lstrip(b" \t\r\n\x0b\x0c")
    return b" " in stripped


def words_in(piece: bytes) -> int:
    """The paper's word count of a token: its non-empty space-separated parts."""
    return sum(1 for part in piece.split(b" ") if part)


@dataclass(frozen=True)
class SuperBpeConfig:
    """Stage 1's :class:`~workbench.core.bpe.TrainConfig` (byte units, the run's pre-tokenizer and
    final size) and where stage 2 starts."""

    base: TrainConfig
    transition: float = DEFAULT_TRANSITION
    max_words: int = DEFAULT_MAX_WORDS

    def final_vocab(self, initial: int) -> int:
        """The vocabulary size the run aims at (a number of merges counts from ``initial``)."""
        cfg = self.base
        sizes = [s for s in (cfg.vocab_size, initial + cfg.merges if cfg.merges is not None else None) if s is not None]
        return min(sizes)

    def transition_vocab(self, initial: int) -> int:
        """*t* as a vocabulary size, between the initial vocabulary and the final size."""
        final = self.final_vocab(initial)
        t = round(self.transition * final) if self.transition < 1 else int(self.transition)
        return max(initial, min(t, final))


class SuperBpeTrainer:
    """:class:`~workbench.core.trainer.Trainer` for SuperBPE, on two ``{piece: count}`` tables of
    the same text: ``stage1_counts`` split by the run's pre-tokenizer, ``stage2_counts`` by
    :data:`STAGE2_PATTERN` (both normalized alike). One :class:`TrainLog` holds both stages."""

    value_name = "frequency"

    def __init__(self, stage1_counts: Mapping[str, int], stage2_counts: Mapping[str, int], config: SuperBpeConfig):
        base = config.base
        if base.units != "bytes":
            raise ConfigError("units", "SuperBPE is byte-level (as in the paper): use bytes")
        if not config.transition > 0:  # NaN too
            raise ConfigError("transition", f"the transition point must be above 0, not {config.transition}")
        if config.max_words < 1:
            raise ConfigError("max_words", f"a superword holds at least 1 word, not {config.max_words}")
        pre = base.pretokenizer.strip().lower()
        if pre in UNSUITED_STAGE1:
            raise ConfigError("pretokenizer", f"the {pre} pre-tokenizer {UNSUITED_STAGE1[pre]}: SuperBPE's stage 1 "
                              "needs a split that keeps spaces (gpt2, cl100k, o200k, digits or a pattern)")
        self.config = config
        probe = BpeTrainer({}, replace(base, vocab_size=base.vocab_size, merges=base.merges))
        self.transition_vocab = config.transition_vocab(probe.initial_size)
        self.final_vocab = config.final_vocab(probe.initial_size)
        stage1_merges = self.transition_vocab - probe.initial_size
        self.stage1 = BpeTrainer(stage1_counts, replace(base, vocab_size=self.transition_vocab, merges=stage1_merges))
        self.stage1_counts = stage1_counts
        self.stage2_counts = stage2_counts
        self.log: TrainLog = self.stage1.log
        self.special_tokens = self.stage1.special_tokens
        self.initial_vocab = self.stage1.initial_vocab
        self.initial_kinds = self.stage1.initial_kinds
        self.initial_size = self.stage1.initial_size
        self.initial_token_count = self.stage1.initial_token_count
        self.word_types = self.stage1.word_types
        self.target = self.final_vocab - self.initial_size
        #: Merges stage 1 made: stage 2's first merge has this rank (the plots' marker).
        self.transition_merge: int | None = None
        self.stage2: _Stage2 | None = None
        self.skipped = {"colon": 0, "words": 0}

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[MergeEvent]:
        """Stage 1 to *t*, then stage 2 to the final size (a stop between any two merges)."""
        yield from self.stage1.run(should_stop)
        if should_stop is not None and should_stop():
            return
        done = len(self.log)
        self.transition_merge = done
        try:
            with _gc_paused():
                stage2 = self.stage2 = _Stage2(self.stage1, self.stage2_counts, self.config, self.final_vocab - done
                                               - self.initial_size, self.final_vocab, self.skipped, should_stop,
                                               self._stage1_splits())
                self.stage1.words, self.stage2_counts = [], {}  # stage 2 holds what it needs: free the rest
                events = stage2.run(should_stop)
                # The first merge builds the index: no collection between the set-up and the freeze
                # (one would walk everything the set-up made).
                event = next(events, None)
                frozen = event is not None and _freeze_index()
        except TrainingCancelled:  # stopped while the stage-2 pieces were encoded: stage 1 is kept
            return
        try:
            while event is not None:
                yield MergeEvent(event.step + done, event.left, event.right, event.new_id, event.frequency,
                                 event.vocab_size, event.token_count)
                with _gc_paused():  # the trainer's own work only: the caller runs with its collector as it was
                    event = next(events, None)
        finally:
            if frozen:
                gc.unfreeze()

    def _stage1_splits(self) -> Known | None:
        """The stage-1 words and the store of their ids after stage 1 (read in place, not copied into
        lists): what encoding those bytes with the stage-1 merges gives, when no merge reused an
        existing piece's id (then merging in rank order is the encoder's rule exactly); None
        otherwise. Most stage-2 segments are such words."""
        stage1 = self.stage1
        if len(stage1.vocab) != stage1.initial_size + len(stage1.merges):
            return None
        # The trainer's own store, whichever form it holds the words in (the ``words`` property
        # would turn a flat store into lists).
        store = stage1._flat if stage1._flat is not None else FlatWords.from_lists(stage1._words or [])
        return [w for w, c in self.stage1_counts.items() if c > 0 and w], store

    def tokenizer(self, name: str = "") -> Tokenizer:
        """Stage 1's tokenizer until stage 2 starts; then the stage-2 split with every merge."""
        tok = self.stage1.tokenizer(name)
        if self.transition_merge is None:
            return tok
        return replace(tok, vocab=tuple(self.log.vocab), merges=tuple(self.log.merges), pretokenizer=STAGE2_PATTERN)

    def extra_settings(self) -> dict:
        """What the run records: the family, stage 1's own split and where stage 2 began."""
        made = self.transition_merge
        return {"model": "superbpe", "stage1_pretokenizer": self.config.base.pretokenizer,
                "superbpe": {"transition_vocab": self.transition_vocab,
                             "transition_merge": made if made is not None else self.transition_vocab - self.initial_size,
                             "stage2_pretokenizer": STAGE2_PATTERN, "max_words": self.config.max_words,
                             "skipped": dict(self.skipped),
                             "stage2_pieces": self.stage2.word_types if self.stage2 is not None else None}}


class _Stage2(BpeTrainer):
    """The plain trainer continued from stage 1's log on the stage-2 pieces, each encoded with the
    stage-1 merges; :attr:`refuse` applies the paper's colon and word-count rules. (Set up as
    :class:`~workbench.core.extend.ExtendTrainer` sets up its continuation.)"""

    def __init__(self, stage1: BpeTrainer, counts: Mapping[str, int], config: SuperBpeConfig, merges: int,
                 final_vocab: int, skipped: dict[str, int], should_stop: Callable[[], bool] | None,
                 known: Known | None = None):
        self.config = replace(config.base, vocab_size=final_vocab, merges=max(0, merges))
        self.log = stage1.log
        self.vocab = self.log.vocab
        self.merges = self.log.merges
        self.frequencies = self.log.frequencies
        self.token_counts = self.log.token_counts
        self.special_tokens = stage1.special_tokens
        self.initial_size = len(self.vocab)
        self.initial_vocab = tuple(self.vocab)
        self.target = max(0, merges)
        self._piece_id = {p: i for i, p in enumerate(self.vocab) if i >= len(self.special_tokens)}
        self._unit_len = [max(1, len(p)) for p in self.vocab]
        self._flat, self.freqs = encode_flat(counts, self.vocab, self.merges, len(self.special_tokens), should_stop,
                                             known)
        self.token_count = sum(map(mul, self._flat.lens, self.freqs))
        self.initial_token_count = self.token_count
        self.word_types = len(self.freqs)
        self.max_words = config.max_words
        self.skipped = skipped
        self.refuse = self._refuse
        self.refit = None

    def _refuse(self, left: int, right: int, piece: bytes) -> bool:
        if b": " in piece:
            self.skipped["colon"] += 1
            return True
        if words_in(piece) > self.max_words:
            self.skipped["words"] += 1
            return True
        return False


def _spine(token: int, side: int, made_by: Mapping[int, list[tuple[int, int]]],
           memo: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    """The ids that were, encoding by rank, the first (``side`` 0) or last (``side`` 1) symbol of
    whatever ends up as ``token``: it and, for each merge that makes it, the spine of the merge's
    left or right half (a proper part, so this ends). A plain function, not a closure calling
    itself: that would be a reference cycle holding the memo until a collection."""
    got = memo.get(token)
    if got is None:
        members = {token}
        for halves in made_by.get(token, ()):
            members.update(_spine(halves[side], side, made_by, memo))
        got = memo[token] = tuple(members)
    return got


#: Stage-2 pieces encoded per batch: bounds the batch's candidate strings (about 30k at a time on
#: real text) and asks ``should_stop`` once per batch.
_BATCH = 4096

def encode_pieces(counts: Mapping[str, int], vocab: list[bytes], merges: list[tuple[int, int, int]], offset: int,
                  should_stop: Callable[[], bool] | None = None,
                  known: Known | None = None) -> tuple[list[list[int]], list[int]]:
    """:func:`encode_flat` with each piece's ids as a list (what the tests compare with the encoder)."""
    store, freqs = encode_flat(counts, vocab, merges, offset, should_stop, known)
    return store.to_lists(), freqs


def encode_flat(counts: Mapping[str, int], vocab: list[bytes], merges: list[tuple[int, int, int]], offset: int,
                should_stop: Callable[[], bool] | None = None,
                known: Known | None = None) -> tuple[FlatWords, list[int]]:
    """Each piece of ``counts`` as the ids the merges give it by rank (byte ``b`` is id ``offset + b``),
    with its count, in table order, in a flat store (stage 2's words).

    Stage-2 pieces are long (a sentence between two punctuation runs), so each is cut into segments
    and the segments, mostly stage-1 words, are encoded once each (``known``: stage-1 words and the
    store holding their ids after stage 1, read in place). The candidate cuts are GPT-2's pre-token
    boundaries, found by the regex engine rather than byte by byte. A cut is taken where no merge
    can join the two sides: encoding by rank, the last symbol of the left side runs through the
    right spine of its final last token (the token, the right half of the merge that made it, that
    one's right half …: it only ever merges with what is on its left) and the first symbol of the
    right side through the left spine of its first token; when no pair of the two spines is a
    merge, encoding the two sides apart gives what encoding them together does. Else the two
    segments are joined, encoded together, and the next boundary is judged against that. Identical
    to encoding the whole piece. (A token several merges make — a reused id — has the spines of all
    of them: more pairs to check, never fewer.) Most boundaries need no spines: when no token holds
    the two bytes either side, nothing can cross; the others are judged once per pair of tokens
    (the same boundaries recur throughout the text).

    Done a batch of pieces at a time, not piece by piece: every candidate segment of the batch is
    looked up in one C-level pass (distinct segments are encoded once and kept in a table of ids),
    the boundaries are judged in numpy from each segment's first and last token, and the ids of
    every piece none of whose cuts joins (nearly all) are gathered from the table in one pass. A
    piece with a cut that joins is encoded segment by segment as described above (on the shared
    corpora a few hundred of 130k).
    """
    import numpy as np

    pair_rank = {(a, b): (rank, new) for rank, (a, b, new) in enumerate(merges)}
    inside = bytearray(1 << 16)  # byte pairs some token holds side by side
    for piece in vocab[offset:]:
        for k in range(1, len(piece)):
            inside[(piece[k - 1] << 8) | piece[k]] = 1
    # Each id's last byte (shifted to index ``inside``) and first byte (a special token's never meet a piece).
    last_byte = [piece[-1] << 8 if piece else 0 for piece in vocab]
    first_byte = [piece[0] if piece else 0 for piece in vocab]
    inside_np = np.frombuffer(bytes(inside), dtype=np.bool_)
    last_byte_np = np.array(last_byte, dtype=np.int64)
    first_byte_np = np.array(first_byte, dtype=np.int64)
    made_by: dict[int, list[tuple[int, int]]] = {}
    for a, b, new in merges:
        made_by.setdefault(new, []).append((a, b))
    left_spines: dict[int, tuple[int, ...]] = {}
    right_spines: dict[int, tuple[int, ...]] = {}

    def apart(left: int, right: int) -> bool:
        """No merge joins a left side ending in ``left`` and a right side starting with ``right``."""
        firsts = _spine(right, 0, made_by, left_spines)
        return not any((x, y) in pair_rank for x in _spine(left, 1, made_by, right_spines) for y in firsts)

    cut_ok: dict[int, bool] = {}

    def joined(left: int, right: int) -> bool:
        """A cut between these two tokens may change the ids (judged once per pair of tokens)."""
        if not inside[last_byte[left] | first_byte[right]]:
            return False
        key = left * _SHIFT + right
        ok = cut_ok.get(key)
        if ok is None:
            ok = cut_ok[key] = apart(left, right)
        return not ok

    # The segment table: segment ``i``'s ids are ``table[seg_start[i] : seg_start[i] + seg_len[i]]``;
    # ``seg_of`` numbers the distinct candidate segments met so far (the stage-1 words to begin with).
    if known is not None:
        names, words = known
        table = words.sym[:]  # a copy: segments met later are appended
        seg_start = array("q", words.start)
        seg_len = array("q", words.lens)
        seg_of = dict(zip(names, range(len(seg_len))))
    else:
        table, seg_start, seg_len, seg_of = array("i"), array("q"), array("q"), {}
    seg_get = seg_of.get

    def add(segment: str) -> int:
        """Encode a segment not met before into the table; its number."""
        symbols = [offset + b for b in segment.encode("utf-8")]
        if len(symbols) > 1:
            symbols = bpe_merge_rule(symbols, pair_rank)
        i = seg_of[segment] = len(seg_len)
        seg_start.append(len(table))
        seg_len.append(len(symbols))
        table.extend(symbols)
        return i

    def ids(segment: str) -> list[int]:
        i = seg_get(segment)
        if i is None:
            i = add(segment)
        s = seg_start[i]
        return table[s : s + seg_len[i]].tolist()

    def one_by_one(text: str) -> list[int]:
        """A piece whose segments join somewhere: encoded segment by segment, each cut judged
        against the segment before it as it has grown."""
        texts: list[str] = []  # the piece's segments so far, and their ids
        done: list[list[int]] = []
        segment = ""
        seg_ids: list[int] = []
        for part in candidates(text):
            got = ids(part)
            if segment:
                if joined(seg_ids[-1], got[0]):
                    segment += part  # a merge may join across this boundary: encode the two together
                    seg_ids = ids(segment)
                    # Its first token may differ now: the cut before it is judged again (and so on).
                    while done and joined(done[-1][-1], seg_ids[0]):
                        done.pop()
                        segment = texts.pop() + segment
                        seg_ids = ids(segment)
                    continue
                texts.append(segment)
                done.append(seg_ids)
            segment, seg_ids = part, got
        done.append(seg_ids)
        return list(chain.from_iterable(done))

    candidates = _SEGMENTS.findall
    texts = [text for text, count in counts.items() if count > 0 and text]
    freqs = [count for text, count in counts.items() if count > 0 and text]
    out_sym = array("i")
    out_lens = array("i")
    for lo in range(0, len(texts), _BATCH):
        if should_stop is not None and should_stop():
            raise TrainingCancelled
        batch = texts[lo : lo + _BATCH]
        split = list(map(candidates, batch))  # GPT-2's pre-tokens cover every character: none empty
        nparts = np.fromiter(map(len, split), dtype=np.int64, count=len(batch))
        parts = list(chain.from_iterable(split))
        del split
        found = list(map(seg_get, parts))
        if None in found:
            for segment in dict.fromkeys(compress(parts, map(is_, found, repeat(None)))):
                add(segment)
            found = list(map(seg_get, parts))
        seg = np.array(found, dtype=np.int64)
        del found
        # Views of the table for this batch only (the table grows between batches).
        tab = np.frombuffer(table, dtype=np.int32)
        src = np.frombuffer(seg_start, dtype=np.int64)[seg]
        n = np.frombuffer(seg_len, dtype=np.int64)[seg]
        firsts = tab[src].astype(np.int64)
        lasts = tab[src + n - 1].astype(np.int64)
        del tab
        piece_end = np.cumsum(nparts)
        # Boundary k lies between parts k and k + 1 of the same piece; it may join only when some
        # token holds the two bytes across it, and then per pair of tokens (``joined``).
        maybe = inside_np[last_byte_np[lasts[:-1]] | first_byte_np[firsts[1:]]]
        maybe[piece_end[:-1] - 1] = False
        at = np.flatnonzero(maybe)
        if at.size:
            keys = lasts[at] * _SHIFT + firsts[at + 1]
            joins = [key for key in np.unique(keys).tolist() if joined(*divmod(key, _SHIFT))]
            if joins:
                dirty = np.unique(np.searchsorted(piece_end, at[np.isin(keys, joins)], side="right"))
                begin = piece_end - nparts
                for p in dirty.tolist():  # its ids as one segment of their own, in its first part's place
                    symbols = one_by_one(batch[p])
                    b, e = int(begin[p]), int(piece_end[p])
                    src[b] = len(table)
                    n[b] = len(symbols)
                    n[b + 1 : e] = 0
                    table.extend(symbols)
        ends = np.cumsum(n)
        tab = np.frombuffer(table, dtype=np.int32)
        out_sym.frombytes(tab[np.repeat(src - (ends - n), n) + np.arange(int(ends[-1]))].tobytes())
        del tab
        out_lens.frombytes(np.add.reduceat(n, piece_end - nparts).astype(np.int32).tobytes())
    return FlatWords(out_sym, out_lens), freqs
