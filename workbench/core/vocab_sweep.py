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
(:data:`CHECKPOINTS`). BPE's is the merge-prefix rule above. Unigram has no merge list: its
points would be the trainer's pruning checkpoints (the vocabulary after each pruning round);
the Unigram trainer registers ``CHECKPOINTS["unigram"]`` when it keeps them. Until then a
Unigram (or WordPiece, or a ``.tiktoken`` ranks-only) tokenizer is refused with a clear message.

Left out: reading files and caching (``workbench.tasks.compare``), charts (``workbench.ui.compare``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from operator import mul, sub

from workbench.core.corpus_metrics import DEFAULT_D, Recut, TextTally
from workbench.core.encoder import (  # the encoder's own loops: one BPE rule, not two
    Encoder,
    _bpe_heap,
    _bpe_scan,
)
from workbench.core.metrics import Pacer, Progress, ShouldStop, encode_pretoken
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

DEFAULT_POINTS = 16
DEFAULT_THRESHOLD = 0.01  # 1 % more characters per token per 1,000 entries


@dataclass(frozen=True)
class Checkpoint:
    """One vocabulary of the sweep: ``step`` merges (or pruning round), ``vocab_size`` rows."""

    step: int
    vocab_size: int
    encoder: Encoder


CheckpointProvider = Callable[[Tokenizer, int], Iterator[Checkpoint]]


def sweep_steps(total: int, points: int) -> list[int]:
    """``points`` merge counts evenly spaced from 0 to ``total`` (both included, no repeats)."""
    if points < 2:
        raise WorkbenchError(f"--points {points}: a sweep needs at least 2 points")
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


def _not_yet(model: str) -> CheckpointProvider:
    def refuse(tokenizer: Tokenizer, points: int) -> Iterator[Checkpoint]:
        raise WorkbenchError(
            f"{tokenizer.name or 'this tokenizer'} is a {model} model: its vocabulary-size sweep needs "
            f"the {model} trainer's checkpoints, which this version does not keep; sweep a BPE run"
        )
    return refuse


# Model family → checkpoint provider. The Unigram trainer plugs its pruning checkpoints in here.
CHECKPOINTS: dict[str, CheckpointProvider] = {
    "bpe": bpe_checkpoints,
    "unigram": _not_yet("Unigram"),
    "wordpiece": _not_yet("WordPiece"),
}


class HeldOut:
    """A held-out text as the sweep needs it: distinct pre-tokens with counts, and each line as a
    run of pre-token indices (for Σ L_seq²). Pre-tokens are cut once, by the tokenizer's own
    normalizer and pre-tokenizer, which every checkpoint shares.
    """

    def __init__(self, tokenizer: Tokenizer):
        self._pre = tokenizer.pre
        self._normalize = tokenizer.normalize if tokenizer.normalizer else None
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
        self._add(self._recut.push(text))

    def _add(self, text: str) -> None:
        if not text:
            return
        if self._normalize is not None:
            text = self._normalize(text)
        index, pieces, counts, seq, ends = self.index, self.pieces, self.counts, self.sequence, self.line_ends
        count = text.count
        last = 0
        for a, b in self._pre.spans(text):
            if count("\n", last, a):
                ends.append(len(seq))
            last = a
            piece = text[a:b]
            i = index.get(piece)
            if i is None:
                i = index[piece] = len(pieces)
                pieces.append(piece)
                counts.append(0)
            counts[i] += 1
            seq.append(i)
        if count("\n", last, len(text)):
            ends.append(len(seq))

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
        return {"merges": self.step, "vocab_size": self.vocab_size, "tokens": self.tokens,
                "chars_per_token": round(self.chars_per_token, 4), "bytes_per_token": round(self.bytes_per_token, 4),
                "attention": self.attention, "embedding_params": self.embedding_params}


@dataclass(frozen=True)
class Sweep:
    tokenizer: str
    points: list[SweepPoint]
    threshold: float
    d: int

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
        return {"tokenizer": self.tokenizer, "d": self.d, "threshold": self.threshold,
                "knee": None if knee is None else self.points[knee].step,
                "knee_vocab_size": None if knee is None else self.points[knee].vocab_size,
                "points": rows}


def sweep(tokenizer: Tokenizer, text: HeldOut, *, points: int = DEFAULT_POINTS, d: int = DEFAULT_D,
          threshold: float = DEFAULT_THRESHOLD, name: str = "", should_stop: ShouldStop | None = None,
          progress: Progress | None = None, checkpoints: CheckpointProvider | None = None) -> Sweep | None:
    """Encode ``text`` at each checkpoint; ``None`` if ``should_stop`` said so between two pieces."""
    n = len(text.pieces)
    if checkpoints is None and _prefix_closed(tokenizer):
        plan = _bpe_plan(tokenizer, points)
        lengths_at = _continued_lengths(tokenizer, text.pieces, [k for k, _v in plan])
    else:
        provider = checkpoints or CHECKPOINTS.get(tokenizer.model, bpe_checkpoints)
        cps = list(provider(tokenizer, points))
        plan = [(cp.step, cp.vocab_size) for cp in cps]
        lengths_at = _fresh_lengths(cps, text.pieces)
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
        out.append(SweepPoint(step, vocab_size, tokens, attention, text.text.chars, text.text.bytes, d))
    if progress is not None:
        progress(total, total, "sweeping")
    return Sweep(name or tokenizer.name, out, threshold, d)


StopAt = Callable[[int], bool]


def _bpe_plan(tokenizer: Tokenizer, points: int) -> list[tuple[int, int]]:
    total, full = len(tokenizer.merges), len(tokenizer.vocab)
    if total == 0:
        next(bpe_checkpoints(tokenizer, points))  # raises the user-facing message
    return [(k, full - (total - k)) for k in sweep_steps(total, points)]


def _fresh_lengths(cps: list[Checkpoint], pieces: list[str]) -> Iterator[Callable[[StopAt], list[int] | None]]:
    """Per checkpoint: encode every distinct pre-token with that checkpoint's encoder."""
    for cp in cps:
        def run(stop: StopAt, encoder: Encoder = cp.encoder) -> list[int] | None:
            lengths: list[int] = []
            append = lengths.append
            for j, piece in enumerate(pieces):
                if stop(j):
                    return None
                append(len(encode_pretoken(encoder, piece)))
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
                    symbols = _bpe_heap(symbols, window) if len(symbols) > 48 else _bpe_scan(symbols, window)
                states[j] = symbols
                append(len(symbols))
            return lengths
        done = k
        yield run
