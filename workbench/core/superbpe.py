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
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Mapping

import regex

from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.encoder import _LONG_PIECE, _bpe_heap, _bpe_scan
from workbench.core.model import MergeEvent, Tokenizer
from workbench.core.pretokenize import GPT2_PATTERN
from workbench.core.trainer import TrainingCancelled, TrainLog, stop_checker
from workbench.errors import ConfigError

#: The paper's stage-2 split (its ``extend_tokenizer.sh``): digit groups, punctuation runs and all
#: but the last space of a run are pieces; the text between matches stays, as its own pieces.
STAGE2_PATTERN = r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"
#: Candidate cuts of a stage-2 piece into segments (GPT-2's pre-tokens: they cover every character).
_SEGMENTS = regex.compile(GPT2_PATTERN)
#: The paper's main models switch at 180k of 200k.
DEFAULT_TRANSITION = 0.9
DEFAULT_MAX_WORDS = 4
#: Stage-1 pre-tokenizers that drop or rewrite spaces, or do not split at all: stage 2 has nothing to add.
UNSUITED_STAGE1 = {"whitespace": "drops spaces", "bert": "drops spaces", "metaspace": "rewrites spaces as ▁",
                   "none": "does not split at spaces in the first place"}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cycle collector off while stage 2 builds and updates its index.

    Stage 2 indexes the whole text (each distinct stage-2 piece is mostly a line of its own: about
    430k distinct pairs on the shared corpora against 7k for stage 1's words), and every few hundred
    new lists the collector would walk all of it again; none of those structures can form a cycle
    (lists of ints, dicts of ints), so reference counting frees them alike. Measured: a fifth of
    stage 2's index time. Switched back on before each event reaches the caller.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
        except TrainingCancelled:  # stopped while the stage-2 pieces were encoded: stage 1 is kept
            return
        self.stage1.words, self.stage2_counts = [], {}  # stage 2 holds what it needs: free the rest
        events = stage2.run(should_stop)
        while True:
            with _gc_paused():  # the trainer's own work only: the caller runs with its collector as it was
                event = next(events, None)
            if event is None:
                return
            yield MergeEvent(event.step + done, event.left, event.right, event.new_id, event.frequency,
                             event.vocab_size, event.token_count)

    def _stage1_splits(self) -> dict[bytes, list[int]]:
        """Each stage-1 word's bytes → its ids after stage 1: what encoding those bytes with the stage-1
        merges gives, when no merge reused an existing piece's id (then merging in rank order is the
        encoder's rule exactly); empty otherwise. Most stage-2 segments are such words."""
        stage1 = self.stage1
        if len(stage1.vocab) != stage1.initial_size + len(stage1.merges):
            return {}
        words = (w for w, c in self.stage1_counts.items() if c > 0 and w)
        return {w.encode("utf-8"): ids for w, ids in zip(words, stage1.words)}

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
                 known: Mapping[bytes, list[int]] | None = None):
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
        self.words, self.freqs = encode_pieces(counts, self.vocab, self.merges, len(self.special_tokens), should_stop,
                                               known)
        self.token_count = sum(f * len(w) for w, f in zip(self.words, self.freqs))
        self.initial_token_count = self.token_count
        self.word_types = len(self.words)
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


def encode_pieces(counts: Mapping[str, int], vocab: list[bytes], merges: list[tuple[int, int, int]], offset: int,
                  should_stop: Callable[[], bool] | None = None,
                  known: Mapping[bytes, list[int]] | None = None) -> tuple[list[list[int]], list[int]]:
    """Each piece of ``counts`` as the ids the merges give it by rank (byte ``b`` is id ``offset + b``),
    with its count, in table order.

    Stage-2 pieces are long (a sentence between two punctuation runs), so each is cut into segments
    and the segments, mostly stage-1 words, are encoded once each (``known``: segments whose ids are
    known already, the stage-1 words). The candidate cuts are GPT-2's pre-token boundaries, found by
    the regex engine rather than byte by byte; a cut is taken only where no token holds the two bytes
    on either side of it — no merge can cross there — else the two segments stay one. Identical to
    encoding the whole piece (a coarser cut only makes a segment longer, never changes its ids).
    """
    pair_rank = {(a, b): (rank, new) for rank, (a, b, new) in enumerate(merges)}
    inside = bytearray(1 << 16)  # byte pairs some token holds side by side
    for piece in vocab[offset:]:
        for k in range(1, len(piece)):
            inside[(piece[k - 1] << 8) | piece[k]] = 1
    cache: dict[bytes, list[int]] = dict(known or {})
    check = stop_checker(should_stop)
    words: list[list[int]] = []
    freqs: list[int] = []
    candidates = _SEGMENTS.findall

    def ids_of(segment: bytes) -> list[int]:
        symbols = [offset + b for b in segment]
        if len(symbols) > 1:
            symbols = (_bpe_heap if len(symbols) > _LONG_PIECE else _bpe_scan)(symbols, pair_rank)
        cache[segment] = symbols
        return symbols

    for n, (text, count) in enumerate(counts.items()):
        check(n)
        if count <= 0 or not text:
            continue
        ids: list[int] = []
        segment = b""
        for part in candidates(text):
            data = part.encode("utf-8")
            if segment and inside[(segment[-1] << 8) | data[0]]:
                segment += data  # some token holds the bytes across this boundary: no cut here
                continue
            if segment:
                got = cache.get(segment)
                ids.extend(got if got is not None else ids_of(segment))
            segment = data
        got = cache.get(segment)
        ids.extend(got if got is not None else ids_of(segment))
        words.append(ids)
        freqs.append(count)
    return words, freqs
