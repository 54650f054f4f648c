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
from workbench.core.encoder import Encoder
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
    provider = checkpoints or CHECKPOINTS.get(tokenizer.model, bpe_checkpoints)
    plan = list(provider(tokenizer, points))
    n = len(text.pieces)
    pace = Pacer(n * len(plan), "sweeping", should_stop, progress)
    out = []
    for index, cp in enumerate(plan):
        lengths: list[int] = []
        append = lengths.append
        encoder = cp.encoder
        for j, piece in enumerate(text.pieces):
            if j % 1024 == 0 and pace.stopped(index * n + j):
                return None
            append(len(encode_pretoken(encoder, piece)))
        tokens, attention = text.measure(lengths)
        out.append(SweepPoint(cp.step, cp.vocab_size, tokens, attention, text.text.chars, text.text.bytes, d))
    if progress is not None:
        progress(n * len(plan), n * len(plan), "sweeping")
    return Sweep(name or tokenizer.name, out, threshold, d)
