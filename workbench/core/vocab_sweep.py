"""The vocabulary-size sweep: what each extra vocabulary entry buys, from one trained run.

A BPE run with M merges holds every smaller vocabulary too: its first k merges are the run as it
stood at |V_initial| + k. :func:`sweep` encodes a held-out text with the first k merges for a
range of k (:class:`~workbench.core.encoder.Encoder`'s ``max_merges``) and reports, per point,
tokens L, characters and bytes per token, the attention cost Σ L_seq² and the embedding size
V × d — the trade-off of choosing |V|.

**Knee.** The gain of a segment between two points is the relative rise in characters/token per
1,000 added vocabulary entries: ``(r_i / r_{i-1} − 1) / (V_i − V_{i-1}) × 1000``. The knee is the
first point after which every later segment gains less than ``threshold`` (default 1 %, i.e.
0.01) per 1k entries — beyond it the vocabulary grows (and V × d with it) for little compression.
No knee (``None``) means the curve was still climbing at the last point.

**Other models.** Points come from a checkpoint provider chosen by the tokenizer's model family
(:data:`CHECKPOINTS`); each point has a ``kind``.

* BPE (``"merges"``): the merge-prefix rule above.
* WordPiece (``"merges"``): the first k merges made the pieces with the lowest ids (a merge that
  re-makes an existing piece adds none), so the vocabulary at k is the initial one plus the pieces
  the first k merges made, and the encoder is BERT's greedy longest match over those (specials and
  ``[UNK]`` always there) — :class:`~workbench.core.wordpiece.WordPieceModel`'s ``max_merges``.
  The sweep keeps one piece → id table for every point and only tests "made before merge k"
  (:func:`_wordpiece_lengths`). **L is not monotone in k** for greedy longest match: a new piece
  can take characters the old split used better — German quotes, ``--wordpiece-score frequency``:
  merge 65 makes ``da`` and ``dann`` goes from ``d ##ann`` to ``da ##n ##n`` (on 60k characters
  of held-out text some 100 words rise at some merge; with the likelihood score about 1), and a word
  that fell to ``[UNK]`` (one token) gains tokens once it can be spelled. What holds (tested): every
  point is exactly the run's encoder limited to its first k merges, the last point is the run's own
  encoding, the sizes grow strictly with k, and over the whole run L falls.
* Unigram: no merge list. Above the final size the points are the trainer's pruning checkpoints
  (``"pruning round"``: the vocabulary after a pruning round and its EM, kept while it is at most
  4 × the target, :class:`~workbench.core.unigram.PruningCheckpoint`), each encoded with Viterbi
  over its own pieces and scores. At and below the final size there are none: the final model is cut
  to its k most probable pieces (``"cut"``), the required characters always kept — the trainer's own
  last cut (:func:`~workbench.core.unigram.cut_pieces`); the required characters are the final
  model's one-character pieces. A run trained before checkpoints were kept gets the cut points only.
  The unit encoded is the line (SentencePiece's lattice spans it), as :class:`TokenMeter` counts.

A ``.tiktoken`` ranks-only tokenizer (no merge list), or a WordPiece ``vocab.txt`` without merges,
is refused with a clear message.

Left out: reading files and caching (``workbench.tasks.compare``), charts (``workbench.ui.compare``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from operator import mul, sub

from workbench.core.corpus_metrics import DEFAULT_D, Recut, TextTally, sequence_pretokens
from workbench.core.encoder import (  # the encoder's own loops: one BPE rule, not two
    Encoder,
    bpe_merge_rule,
)
from workbench.core.metrics import Pacer, Progress, ShouldStop, encode_pretoken
from workbench.core.model import Tokenizer
from workbench.core.unigram import PruningCheckpoint, byte_block, cut_pieces, is_spm_model, to_float32
from workbench.core.wordpiece import WordPieceModel
from workbench.errors import ConfigError, WorkbenchError

DEFAULT_POINTS = 16
DEFAULT_THRESHOLD = 0.01  # 1 % more characters per token per 1,000 entries


@dataclass(frozen=True)
class Checkpoint:
    """One vocabulary of the sweep: ``step`` merges (or the pruning round's trainer step, or the
    pieces kept by a cut), ``vocab_size`` rows, ``kind`` one of :data:`KINDS`."""

    step: int
    vocab_size: int
    encoder: Encoder
    kind: str = "merges"


KINDS = ("merges", "pruning round", "cut")


CheckpointProvider = Callable[[Tokenizer, int], Iterator[Checkpoint]]


def check_points(points: int) -> None:
    """Refuse a sweep of fewer than 2 points (a ``ConfigError`` about ``points``: callers name their control)."""
    if points < 2:
        raise ConfigError("points", f"a sweep needs at least 2 points (got {points})")


def sweep_steps(total: int, points: int) -> list[int]:
    """``points`` merge counts evenly spaced from 0 to ``total`` (both included, no repeats)."""
    check_points(points)
    return sorted({round(i * total / (points - 1)) for i in range(points)})


def bpe_checkpoints(tokenizer: Tokenizer, points: int) -> Iterator[Checkpoint]:
    """The run as of its first k merges, for evenly spaced k."""
    total = len(tokenizer.merges)
    if total == 0:
        raise WorkbenchError(
            f"{tokenizer.name or 'this tokenizer'} has no merge list (a .tiktoken file holds ranks only): "
            "sweep a trained run or an imported tokenizer.json / GPT-2 vocab with merges"
        )
    full = len(tokenizer.vocab)
    for k in sweep_steps(total, points):
        yield Checkpoint(k, full - (total - k), Encoder(tokenizer, max_merges=k))


def _no_merges(tokenizer: Tokenizer) -> WorkbenchError:
    return WorkbenchError(
        f"{tokenizer.name or 'this tokenizer'} is a WordPiece vocabulary without its merge list (a vocab.txt "
        "or an imported tokenizer.json): sweep a WordPiece run trained in the workbench")


def wordpiece_plan(tokenizer: Tokenizer, points: int) -> tuple[list[tuple[int, int]], list[int]]:
    """``[(k, vocabulary size at k)]`` for evenly spaced k, and ``born``: per id, the rank of the
    merge that first made it (−1: there from the start)."""
    total = len(tokenizer.merges)
    if total == 0:
        raise _no_merges(tokenizer)
    born = [-1] * len(tokenizer.vocab)
    made = [0] * (total + 1)  # made[k]: distinct pieces the first k merges created
    for rank, (_a, _b, new) in enumerate(tokenizer.merges):
        fresh = born[new] < 0
        if fresh:
            born[new] = rank
        made[rank + 1] = made[rank] + fresh
    initial = len(tokenizer.vocab) - made[total]
    return [(k, initial + made[k]) for k in sweep_steps(total, points)], born


def wordpiece_checkpoints(tokenizer: Tokenizer, points: int) -> Iterator[Checkpoint]:
    """The run as of its first k merges: greedy longest match over the pieces made so far."""
    plan, _born = wordpiece_plan(tokenizer, points)
    for k, size in plan:
        yield Checkpoint(k, size, Encoder(tokenizer, max_merges=k))


def _meta_ids(tokenizer: Tokenizer) -> list[int]:
    """Ids every Unigram model of a run shares: specials and the byte-fallback block."""
    meta = set(tokenizer.special_ids)
    if tokenizer.byte_fallback:
        meta.update(byte_block(tokenizer) or ())
    return sorted(meta)


def with_pieces(tokenizer: Tokenizer, pieces: Sequence[str], scores: Sequence[float]) -> Tokenizer:
    """``tokenizer`` (a Unigram model) with other pieces: its specials and byte pieces first, as the
    trainer lays them out, then ``pieces`` by score (float32, as the trainer stores them)."""
    meta = _meta_ids(tokenizer)
    ranked = sorted(((p, to_float32(x)) for p, x in zip(pieces, scores)), key=lambda kv: (-kv[1], kv[0]))
    ids = {old: new for new, old in enumerate(meta)}
    return replace(tokenizer, vocab=(*(tokenizer.vocab[i] for i in meta), *(p.encode("utf-8") for p, _x in ranked)),
                   scores=(*(0.0 for _ in meta), *(x for _p, x in ranked)),
                   special_tokens={t: ids[i] for t, i in tokenizer.special_tokens.items() if i in ids})


def unigram_checkpoints(pruning: Sequence[PruningCheckpoint] = ()) -> CheckpointProvider:
    """Cuts of the final model at and below its size, then the pruning checkpoints above it."""

    def provide(tokenizer: Tokenizer, points: int) -> Iterator[Checkpoint]:
        if len(tokenizer.scores) != len(tokenizer.vocab):
            raise WorkbenchError(f"{tokenizer.name or 'this tokenizer'} is a Unigram model without a score for "
                                 "every piece: its sweep cuts pieces by score")
        meta = set(_meta_ids(tokenizer))
        alive = {tokenizer.vocab[i].decode("utf-8", "replace"): tokenizer.scores[i]
                 for i in range(len(tokenizer.vocab)) if i not in meta and tokenizer.vocab[i]}
        if not alive:
            raise WorkbenchError(f"{tokenizer.name or 'this tokenizer'} has no Unigram pieces to sweep")
        required = sorted((p for p in alive if len(p) == 1), key=lambda p: (-alive[p], p))
        final = len(alive)
        low = min(len(required), final)
        for k in sorted({low + j for j in sweep_steps(final - low, points)}):
            cut = cut_pieces(required, alive, k)
            yield Checkpoint(k, len(meta) + len(cut), Encoder(with_pieces(tokenizer, list(cut), list(cut.values()))),
                             "cut")
        for cp in sorted(pruning, key=lambda c: (len(c.pieces), c.step)):
            if len(cp.pieces) > final:
                yield Checkpoint(cp.step, len(meta) + len(cp.pieces),
                                 Encoder(with_pieces(tokenizer, cp.pieces, cp.scores)), "pruning round")

    return provide


# Model family → checkpoint provider (a Unigram run's stored pruning checkpoints come through
# ``sweep(checkpoints=unigram_checkpoints(stored))``; the registry's has the cuts only).
CHECKPOINTS: dict[str, CheckpointProvider] = {
    "bpe": bpe_checkpoints,
    "unigram": unigram_checkpoints(),
    "wordpiece": wordpiece_checkpoints,
}


class HeldOut:
    """A held-out text as the sweep needs it: distinct pre-tokens with counts, and each line as a
    run of pre-token indices (for Σ L_seq²). Pre-tokens are cut once, by the tokenizer's own
    normalizer and pre-tokenizer, which every checkpoint shares; sequences are cut before
    normalization (:func:`~workbench.core.corpus_metrics.sequence_pretokens`, as ``stats`` counts).
    For a Unigram (SentencePiece) tokenizer the unit is the whole line (``whole_lines``).
    """

    def __init__(self, tokenizer: Tokenizer):
        self._pre = tokenizer.pre
        self._normalize = tokenizer.normalize if tokenizer.normalizer else None
        self.whole_lines = is_spm_model(tokenizer)
        self.index: dict[str, int] = {}
        self.pieces: list[str] = []
        self.counts: list[int] = []
        self.sequence = array("i")      # pre-token indices in text order
        self.line_ends = array("q")     # positions in ``sequence`` where a line ends
        self.text = TextTally()
        self._recut = Recut(tokenizer.pretokenizer)

    def add(self, text: str) -> None:
        """Add a chunk that ends at a line boundary (chunks in order)."""
        self.text.add(text)
        self._add(text if self.whole_lines else self._recut.push(text))

    def _add(self, text: str) -> None:
        if not text:
            return
        index, pieces, counts, seq, ends = self.index, self.pieces, self.counts, self.sequence, self.line_ends
        breaks: Sequence[int]
        if self.whole_lines:
            found = text.split("\n")
            if found[-1] == "":
                found.pop()
            breaks = range(1, len(found) + 1)
        else:
            found, breaks = sequence_pretokens(text, self._normalize, self._pre)
        base = len(seq)
        for piece in found:
            i = index.get(piece)
            if i is None:
                i = index[piece] = len(pieces)
                pieces.append(piece)
                counts.append(0)
            counts[i] += 1
            seq.append(i)
        ends.extend(base + e for e in breaks)

    def finish(self) -> HeldOut:
        self._add(self._recut.flush())
        self.text.finish()
        if not self.line_ends or self.line_ends[-1] != len(self.sequence):
            self.line_ends.append(len(self.sequence))
        return self

    def measure(self, lengths: list[int]) -> tuple[int, int]:
        """(L, Σ L_line²) given the token count of every distinct pre-token (all in C loops)."""
        tokens = sum(map(mul, lengths, self.counts))
        prefix = list(accumulate(map(lengths.__getitem__, self.sequence), initial=0))
        at_ends = list(map(prefix.__getitem__, self.line_ends))
        per_line = list(map(sub, at_ends, [0, *at_ends[:-1]]))
        return tokens, sum(map(mul, per_line, per_line))


def held_out(tokenizer: Tokenizer, chunks: Iterable[str]) -> HeldOut:
    out = HeldOut(tokenizer)
    for chunk in chunks:
        out.add(chunk)
    return out.finish()


@dataclass(frozen=True)
class SweepPoint:
    step: int
    vocab_size: int
    tokens: int
    attention: int
    chars: int
    bytes: int
    d: int
    kind: str = "merges"  # see KINDS

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else 0.0

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.d

    def as_dict(self) -> dict:
        return {"merges": self.step if self.kind == "merges" else None, "vocab_size": self.vocab_size, "tokens": self.tokens,
                "chars_per_token": round(self.chars_per_token, 4), "bytes_per_token": round(self.bytes_per_token, 4),
                "attention": self.attention, "embedding_params": self.embedding_params,
                "kind": self.kind, "step": self.step}


@dataclass(frozen=True)
class Sweep:
    tokenizer: str
    points: list[SweepPoint]
    threshold: float
    d: int
    note: str = ""  # what the reader should know about the points (e.g. a Unigram run without checkpoints)

    @property
    def gains(self) -> list[float | None]:
        """Per point: relative chars/token gain per 1k entries since the previous point (None first)."""
        out: list[float | None] = [None]
        for a, b in zip(self.points, self.points[1:]):
            grow = b.vocab_size - a.vocab_size
            if grow <= 0 or a.chars_per_token == 0:
                out.append(None)
            else:
                out.append((b.chars_per_token / a.chars_per_token - 1.0) * 1000.0 / grow)
        return out

    @property
    def knee(self) -> int | None:
        """Index of the first point after which every segment gains less than ``threshold``."""
        gains = self.gains
        knee = None
        for i in range(len(self.points) - 2, -1, -1):
            g = gains[i + 1]
            if g is not None and g >= self.threshold:
                break
            knee = i
        return knee

    def as_dict(self) -> dict:
        knee = self.knee
        gains = self.gains
        rows = []
        for p, g in zip(self.points, gains):
            row = p.as_dict()
            row["gain_per_1k"] = None if g is None else round(g, 6)
            rows.append(row)
        return {"tokenizer": self.tokenizer, "d": self.d, "threshold": self.threshold, "note": self.note,
                "knee": None if knee is None else self.points[knee].step,
                "knee_vocab_size": None if knee is None else self.points[knee].vocab_size,
                "points": rows}


def sweep(tokenizer: Tokenizer, text: HeldOut, *, points: int = DEFAULT_POINTS, d: int = DEFAULT_D,
          threshold: float = DEFAULT_THRESHOLD, name: str = "", should_stop: ShouldStop | None = None,
          progress: Progress | None = None, checkpoints: CheckpointProvider | None = None) -> Sweep | None:
    """Encode ``text`` at each checkpoint; ``None`` if ``should_stop`` said so between two pieces."""
    n = len(text.pieces)
    kinds: list[str] | None = None
    if checkpoints is None and _prefix_closed(tokenizer):
        plan = _bpe_plan(tokenizer, points)
        steps = [k for k, _v in plan]
        lengths_at = _native_lengths(tokenizer, text.pieces, steps) or _continued_lengths(tokenizer, text.pieces, steps)
    elif checkpoints is None and tokenizer.model == "wordpiece":
        plan, born = wordpiece_plan(tokenizer, points)
        lengths_at = _wordpiece_lengths(tokenizer, text.pieces, [k for k, _v in plan], born)
    else:
        provider = checkpoints or CHECKPOINTS.get(tokenizer.model, bpe_checkpoints)
        cps = list(provider(tokenizer, points))
        plan = [(cp.step, cp.vocab_size) for cp in cps]
        kinds = [cp.kind for cp in cps]
        lengths_at = _fresh_lengths(cps, text.pieces, text.whole_lines)
    total = n * len(plan)
    pace = Pacer(total, "sweeping", should_stop, progress)
    out = []
    for index, (step, vocab_size) in enumerate(plan):
        def stop_at(j: int, i: int = index) -> bool:
            return j % 1024 == 0 and pace.stopped(i * n + j)

        lengths = next(lengths_at)(stop_at)
        if lengths is None:
            return None
        tokens, attention = text.measure(lengths)
        out.append(SweepPoint(step, vocab_size, tokens, attention, text.text.chars, text.text.bytes, d,
                              kinds[index] if kinds else "merges"))
    if progress is not None:
        progress(total, total, "sweeping")
    return Sweep(name or tokenizer.name, out, threshold, d)


StopAt = Callable[[int], bool]


def _bpe_plan(tokenizer: Tokenizer, points: int) -> list[tuple[int, int]]:
    total, full = len(tokenizer.merges), len(tokenizer.vocab)
    if total == 0:
        next(bpe_checkpoints(tokenizer, points))  # raises the user-facing message
    return [(k, full - (total - k)) for k in sweep_steps(total, points)]


def _fresh_lengths(cps: list[Checkpoint], pieces: list[str],
                   whole_lines: bool = False) -> Iterator[Callable[[StopAt], list[int] | None]]:
    """Per checkpoint: encode every distinct pre-token (or line) with that checkpoint's encoder."""
    for cp in cps:
        def run(stop: StopAt, encoder: Encoder = cp.encoder) -> list[int] | None:
            lengths: list[int] = []
            append = lengths.append
            for j, piece in enumerate(pieces):
                if stop(j):
                    return None
                append(len(encoder.encode(piece) if whole_lines else encode_pretoken(encoder, piece)))
            return lengths
        yield run


def _wordpiece_lengths(tokenizer: Tokenizer, pieces: list[str], steps: list[int],
                       born: list[int]) -> Iterator[Callable[[StopAt], list[int] | None]]:
    """Per step k: token counts of BERT's greedy longest match over the pieces made before merge k.

    One piece → id table (the run's full one) serves every point: a match counts only if its id
    was there from the start or was made by one of the first k merges (``born[id] < k``), which is
    :class:`WordPieceModel`'s ``max_merges`` table without building it per point.
    """
    model = WordPieceModel(tokenizer)
    lookup, prefix, longest, max_chars = model.lookup, model.prefix, model.longest, model.max_chars
    for k in steps:
        def run(stop: StopAt, k: int = k) -> list[int] | None:
            lengths: list[int] = []
            append = lengths.append
            get = lookup.get
            for j, word in enumerate(pieces):
                if stop(j):
                    return None
                n = len(word)
                if n > max_chars:
                    append(1)  # [UNK]
                    continue
                count, start = 0, 0
                while start < n:
                    end = min(n, start + longest)
                    while end > start:
                        found = get(word[start:end] if start == 0 else prefix + word[start:end])
                        if found is not None and born[found] < k:
                            break
                        end -= 1
                    if end == start:  # nothing matches here: the whole word is [UNK]
                        count = 1
                        break
                    count += 1
                    start = end
                append(count)
            return lengths
        yield run


def _prefix_closed(tokenizer: Tokenizer) -> bool:
    """True when BPE by pair rank can be continued from one checkpoint to the next.

    With the ``pairs`` rule the merges applied to a pre-token come in rising rank order as long as
    every merge's parts exist before it (each new pair involves the token just made, whose merges
    all rank later). Then the split with the first k' merges is the split with the first k merges,
    continued with merges k … k'−1 only — and the sweep never re-encodes from bytes. Trained runs
    always qualify; an imported merge list that breaks the order falls back to fresh encoders.
    """
    if tokenizer.model != "bpe" or tokenizer.merge_rule != "pairs" or not tokenizer.merges:
        return False
    made = tokenizer.merge_of_id
    for rank, (a, b, _new) in enumerate(tokenizer.merges):
        for part in (a, b):
            info = made.get(part)
            if info is not None and info[0] >= rank:
                return False
    return True


def _native_lengths(tokenizer: Tokenizer, pieces: list[str],
                    steps: list[int]) -> Iterator[Callable[[StopAt], list[int] | None]] | None:
    """Per step k: token counts with the first k merges from tiktoken's core, when its rule provably
    gives this merge list's ids (:mod:`workbench.core.rank_equivalence`, prefixes included): a
    fresh encode per point in Rust beats continuing each split in Python. None otherwise."""
    encoder = Encoder(tokenizer)
    if encoder.native_prefix(0) is None:
        return None
    prepare = tokenizer.pre.prepare
    data = [prepare(piece).encode("utf-8") for piece in pieces]

    def at_steps() -> Iterator[Callable[[StopAt], list[int] | None]]:
        for k in steps:
            core = encoder.native_prefix(k)
            assert core is not None  # a prefix of a proven merge list is proven

            def run(stop: StopAt, length: Callable[[bytes], int] = core.length) -> list[int] | None:
                lengths: list[int] = []
                append = lengths.append
                for j, one in enumerate(data):
                    if stop(j):
                        return None
                    append(length(one))
                return lengths
            yield run
    return at_steps()


def _continued_lengths(tokenizer: Tokenizer, pieces: list[str],
                       steps: list[int]) -> Iterator[Callable[[StopAt], list[int] | None]]:
    """Per step k: token counts with the first k merges, each step continuing the previous split."""
    base = Encoder(tokenizer, max_merges=0)
    states: list[list[int] | None] = [None] * len(pieces)
    done = 0
    for k in steps:
        window = {(a, b): (rank, new) for rank, (a, b, new) in enumerate(tokenizer.merges[done:k], start=done)}

        def run(stop: StopAt, window: dict = window) -> list[int] | None:
            lengths: list[int] = []
            append = lengths.append
            for j, piece in enumerate(pieces):
                if stop(j):
                    return None
                symbols = states[j]
                if symbols is None:
                    symbols = list(encode_pretoken(base, piece))
                if window and len(symbols) > 1:
                    symbols = bpe_merge_rule(symbols, window)
                states[j] = symbols
                append(len(symbols))
            return lengths
        done = k
        yield run
