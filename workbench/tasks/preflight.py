"""The pre-flight estimate: what a training run will read, count, hold in memory and take, before it
starts (``workbench train … --dry-run``, the Train tab's pre-flight panel, and the figures a run
records beside what it really used).

Method:

- **Reading.** Bytes on disk are the files' sizes. A sample is read from the start of each file
  (up to 32 files, evenly spread over the list; the budget :data:`SAMPLE_BYTES` shared among them),
  cut into sequences exactly as counting cuts them. Text bytes per byte on disk (decompression,
  JSON/CSV syntax) come from where the reader stood; lines and pre-tokens scale with text bytes.
  When the sample is the whole corpus every figure is exact.
- **Distinct pre-tokens: Heaps' law** ``V(N) = K·N^β`` (N pre-tokens read, V distinct). The
  sample's sequences are shuffled (seeded) and counted in growing prefixes (each twice the last);
  ``β`` and ``K`` are fitted by least squares on log V against log N over the upper half of the
  prefixes (the local slope, which is what continues), and again over all of them. The estimate
  extrapolates the upper-half fit to the corpus' N; the error bar is the factor between the two
  fits' extrapolations, at least ×/÷ 1.25 (sampling each file's start, not the whole file, is a
  bias no fit sees). Distinct never exceeds N nor falls below what the sample saw.
- **Memory.** The count table's bytes per distinct pre-token are measured on the sample's own table
  (``sys.getsizeof`` of the dict, keys and counts; new pre-tokens are sized like the sample's
  hapaxes, the words seen once, which is what the unseen tail looks like). Counting's peak is the
  machine's base plus the table times the calibrated counting factor; training's adds the family's
  calibrated bytes per UTF-8 byte of distinct pre-tokens (:mod:`workbench.tasks.calibration`).
- **Time.** Counting at the rates measured on the sample — this process's CPU time, so that other
  work on the machine does not inflate them (the run itself is slower on a busy machine): reading
  per byte the readers decoded (whole batches), pre-tokenizing and counting per byte counted,
  divided by the counting processes the run will use; training from the calibrated per-family model for the number of steps the
  target asks for.

Left out: the time to write merges into the project (small beside training), and remote files.
Known limits, at scale (1 GiB of text, BPE V 32,768, measured): both the trainer's memory and its
time are scaled linearly from a calibration on a small corpus, while a large corpus's new words are
mostly rare ones that hold few pairs and that few merges touch, so both projections come out high
there (memory ×7, training time ×20: safe for the memory warning, pessimistic for the time). Two
figures measured on the sample's own table do not mend it: the trainer's memory over its first steps
is right at 1 GiB but half the real peak on a small CJK corpus (the pair index grows through the
run), and the first merges' time grows linearly (they touch every word; the saving is in the late
merges).
"""

from __future__ import annotations

import math
import random
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

from workbench.tasks.calibration import Rates, load_rates

SAMPLE_BYTES = 4 << 20
MAX_SAMPLED_FILES = 32
MIN_FILE_SAMPLE = 64 << 10
MIN_ERROR = 1.25
#: Above this corpus size ``train_run`` estimates on its own (and the window shows the panel).
PREFLIGHT_BYTES = 64 << 20
CLUSTER_RECIPE = "examples/dask_count.py"


@dataclass(frozen=True)
class Estimate:
    """What a run will cost; every size in bytes, every time in seconds."""

    files: int
    bytes: int                  # on disk
    text_bytes: int             # the text the readers will give (after decompression and parsing)
    lines: int
    exact: bool                 # the sample was the whole corpus
    sample_bytes: int
    tokens: int                 # pre-token occurrences
    distinct: int
    distinct_low: int
    distinct_high: int
    heaps_k: float
    heaps_beta: float
    bytes_per_entry: float      # of the count table, per distinct pre-token
    count_peak: int
    train_peak: int
    train_peak_high: int
    count_s: float
    train_s: float
    available: int              # memory free now (psutil)
    model: str
    trained_lines: int = 0      # --sample-lines: the lines the trainer gets (0: all)
    calibrated: bool = True
    method: str = ("Heaps' law V=K*N^beta fitted on doubling prefixes of a shuffled sample; error bar: "
                   "whole-sample fit vs upper-half fit, at least x/÷1.25")

    @property
    def peak(self) -> int:
        return max(self.count_peak, self.train_peak)

    @property
    def seconds(self) -> float:
        return self.count_s + self.train_s

    @property
    def memory_short(self) -> bool:
        return self.train_peak_high > self.available

    def warning(self) -> str:
        """One line when the projected peak (upper end) exceeds the free memory, with both remedies."""
        if not self.memory_short:
            return ""
        return (f"projected peak memory up to {_size(self.train_peak_high)} exceeds the {_size(self.available)} free: "
                f"train on a sample (--sample-lines {suggest_sample_lines(self):,}), or count with the cluster "
                f"recipe ({CLUSTER_RECIPE}) and train from its counts table")

    def as_dict(self) -> dict:
        out = asdict(self)
        # the names PRODUCT.md's CLI block promises: distinct_pretokens, peak_memory_bytes, seconds
        out.update(peak=self.peak, seconds=round(self.seconds, 3), memory_short=self.memory_short,
                   warning=self.warning(), distinct_pretokens=self.distinct, peak_memory_bytes=self.peak)
        return out

    def recorded(self) -> dict:
        """What a run keeps of its estimate (beside what it really used)."""
        return {"distinct": self.distinct, "distinct_low": self.distinct_low, "distinct_high": self.distinct_high,
                "peak_mb": round(self.peak / 2**20, 1), "seconds": round(self.seconds, 2),
                "exact": self.exact, "calibrated": self.calibrated}

    def text(self) -> list[str]:
        """The estimate as lines for people (the CLI's dry run and the window's panel)."""
        how = "exact (the whole corpus was read)" if self.exact else \
            f"from a {_size(self.sample_bytes)} sample, Heaps' law β={self.heaps_beta:.2f}"
        lines = [f"read: {_size(self.bytes)} on disk, {_size(self.text_bytes)} of text, ~{self.lines:,} lines "
                 f"in {self.files} file{'s' if self.files != 1 else ''}",
                 f"distinct pre-tokens: ~{self.distinct:,} (range {self.distinct_low:,}–{self.distinct_high:,}; {how})",
                 f"peak memory: counting ~{_size(self.count_peak)}, training ~{_size(self.train_peak)} "
                 f"(up to {_size(self.train_peak_high)}); {_size(self.available)} free",
                 f"time: counting ~{_duration(self.count_s)}, training ~{_duration(self.train_s)}"
                 + ("" if self.calibrated else " (rates of the development machine: not yet calibrated here)")]
        if self.trained_lines:
            lines.insert(1, f"sample: {self.trained_lines:,} of ~{self.lines:,} lines, drawn evenly over all files")
        warning = self.warning()
        if warning:
            lines.append("warning: " + warning)
        return lines


def _size(n: float) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ---- the sample ----------------------------------------------------------------------------------
@dataclass
class _Sample:
    sequences: list[str]
    text_bytes: int        # of the sequences kept
    corpus_text: float     # estimated text bytes of the whole corpus
    exact: bool
    seconds: float         # reading and cutting the sample
    read_bytes: int = 0    # text the readers decoded for it (whole batches: more than ``text_bytes``)


def _read_sample(sources: Sequence, pretokenizer: str, sequences: str, budget: int,
                 should_stop: Callable[[], bool]) -> _Sample:
    from workbench.corpus.counts import source_batches

    texts = [s for s in sources if s.kind != "wordcounts"]
    step = max(1, math.ceil(len(texts) / MAX_SAMPLED_FILES))
    chosen = texts[::step]
    per_file = max(budget // max(len(chosen), 1), MIN_FILE_SAMPLE)
    kept: list[str] = []
    kept_bytes = decoded = 0
    ratios: list[float] = []  # text bytes per byte on disk, per sampled file
    exact = step == 1
    t0 = time.process_time()
    for src in chosen:
        if should_stop():
            break
        if _seekable(src) and src.size > per_file * 2:
            seqs, taken = _spread_sample(src, per_file, sequences)
            kept.extend(seqs)
            kept_bytes += taken
            decoded += taken
            ratios.append(1.0)
            exact = False
            continue
        where = [0]

        def at(done: int, _total: int, where=where) -> None:
            where[0] = done

        batches = source_batches(src, pretokenizer=pretokenizer, sequences=sequences, should_stop=should_stop,
                                 progress=at)
        taken = consumed = 0
        complete = True
        for batch in batches:
            for seq in batch:
                n = len(seq.encode("utf-8"))
                consumed += n
                if taken < per_file:
                    kept.append(seq)
                    taken += n
            if taken >= per_file:
                complete = False
                break
        if not complete:
            exact = False
            if src.kind == "text" and not src.compressed:
                ratios.append(1.0)
            else:
                extra = next(batches, None) or ()  # the reader reports where it stands after the batch just taken
                ratios.append(consumed / where[0] if where[0] else 1.0)
                decoded += sum(len(seq.encode("utf-8")) for seq in extra)
        else:
            ratios.append(consumed / src.size if src.size else 1.0)
        if hasattr(batches, "close"):
            batches.close()
        kept_bytes += taken
        decoded += consumed
    ratio = sum(ratios) / len(ratios) if ratios else 1.0
    corpus_text = float(kept_bytes) if exact else sum(s.size for s in texts) * ratio
    return _Sample(kept, kept_bytes, max(corpus_text, float(kept_bytes)), exact, time.process_time() - t0,
                   max(decoded, kept_bytes))


WINDOW = 32 << 10


def _seekable(src) -> bool:
    """A plain, uncompressed text file in an encoding where a newline is the byte ``\n``."""
    import codecs

    from workbench.corpus import sniff

    if src.kind != "text" or src.compressed or sniff.is_wide_encoding(src.encoding):
        return False
    try:
        codecs.lookup(src.encoding or "utf-8")
    except LookupError:
        return False
    return True


def _spread_sample(src, budget: int, sequences: str) -> tuple[list[str], int]:
    """Whole lines from windows spread evenly over the file (a corpus file is often ordered —
    by source, topic or date — so its start alone would say too little about the rest)."""
    from workbench.core.count import split_lines

    windows = max(1, budget // WINDOW)
    out: list[str] = []
    taken = 0
    with open(src.path, "rb") as handle:
        for i in range(windows):
            handle.seek(src.size * i // windows)
            block = handle.read(WINDOW + (1 << 16))
            start = 0 if i == 0 else block.find(b"\n") + 1
            end = block.rfind(b"\n", start, WINDOW + start) + 1
            if start <= 0 and i or end <= start:
                continue
            part = block[start:end]
            if i == 0 and part.startswith(b"\xef\xbb\xbf"):
                part = part[3:]
            text = part.decode(src.encoding or "utf-8", "replace")
            out.extend(split_lines(text) if sequences == "lines" else [text])
            taken += len(part)
    return out, taken


def _heaps_fit(points: Sequence[tuple[int, int]]) -> tuple[float, float]:
    """``(K, β)`` by least squares on log V against log N."""
    pts = [(math.log(n), math.log(v)) for n, v in points if n > 0 and v > 0]
    if len(pts) < 2:
        n, v = points[-1] if points else (1, 1)
        return max(v, 1) / max(n, 1), 1.0
    mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    var = sum((p[0] - mx) ** 2 for p in pts)
    beta = sum((p[0] - mx) * (p[1] - my) for p in pts) / var if var else 1.0
    beta = min(max(beta, 0.05), 1.0)
    return math.exp(my - beta * mx), beta


def heaps_extrapolate(points: Sequence[tuple[int, int]], tokens: float) -> tuple[int, int, int, float, float]:
    """``(estimate, low, high, K, β)`` of the distinct pre-tokens at ``tokens`` from the sample's
    ``(pre-tokens, distinct)`` prefix points (see the module docstring)."""
    seen_n, seen_v = points[-1]
    if tokens >= seen_n * 0.999 and tokens <= seen_n:
        return seen_v, seen_v, seen_v, seen_v / max(seen_n, 1), 1.0
    if tokens < seen_n:  # a sample of the sample (--sample-lines): read off the shuffled prefixes
        lo = max((p for p in points if p[0] <= tokens), default=(1, 1))
        hi = min(p for p in points if p[0] >= tokens)
        beta = math.log(hi[1] / lo[1]) / math.log(hi[0] / lo[0]) if hi[0] > lo[0] else 1.0
        est = lo[1] * (tokens / lo[0]) ** beta
        return int(est), int(est / 1.1), int(min(est * 1.1, tokens)), est / tokens ** beta, beta
    upper = points[len(points) // 2:] if len(points) >= 4 else points
    k, beta = _heaps_fit(upper)
    k_all, beta_all = _heaps_fit(points)
    # Anchored at the last point (the fit's own value there may be off by a few per cent).
    est = seen_v * (tokens / seen_n) ** beta
    other = seen_v * (tokens / seen_n) ** beta_all
    factor = max(MIN_ERROR, other / est, est / other)
    clamp = lambda v: int(min(max(v, seen_v), tokens))  # noqa: E731
    return clamp(est), clamp(est / factor), clamp(est * factor), k, beta


# ---- the estimate --------------------------------------------------------------------------------
def estimate(spec, *, budget: int = SAMPLE_BYTES, rates: Rates | None = None, calibrate: bool = True,
             should_stop: Callable[[], bool] | None = None, sources: Sequence | None = None) -> Estimate:
    """The pre-flight estimate of ``spec`` (a validated or raw RunSpec; its files are opened here)."""
    from workbench.core.count import pieces_of
    from workbench.tasks.models import family
    from workbench.tasks.train import open_sources

    spec = spec.validate()
    fam = family(spec.model)
    stop = should_stop or (lambda: False)
    rates = rates or load_rates(calibrate=calibrate)
    sources = list(sources) if sources is not None else open_sources(spec.files)
    pretokenizer = fam.counted_as or spec.pretokenizer
    normalizer = () if fam.counted_as else tuple(spec.normalizer or ())
    sample = _read_sample(sources, pretokenizer, spec.sequences, budget, stop)
    table_rows = _table_rows(sources)

    # Counted in growing prefixes of the shuffled sample.
    seqs = list(sample.sequences)
    random.Random(0).shuffle(seqs)
    pieces = pieces_of(pretokenizer, normalizer)
    counts: dict[str, int] = {}
    points: list[tuple[int, int]] = []
    t0 = time.process_time()
    marks = sorted({len(seqs) >> k for k in range(0, 24) if len(seqs) >> k >= 16} | {len(seqs)})
    start = tokens = 0
    get = counts.get
    for mark in marks:
        for piece in pieces(seqs[start:mark]):
            counts[piece] = get(piece, 0) + 1
            tokens += 1
        start = mark
        if tokens:
            points.append((tokens, len(counts)))
    pass_seconds = time.process_time() - t0
    scale = sample.corpus_text / max(sample.text_bytes, 1)
    total_tokens = tokens * scale
    total_lines = len(seqs) * scale if spec.sequences == "lines" else _lines(seqs) * scale
    trained_lines = int(min(spec.sample_lines, total_lines)) if getattr(spec, "sample_lines", None) else 0
    trained_tokens = total_tokens * (trained_lines / total_lines) if trained_lines and total_lines else total_tokens
    if points:
        distinct, low, high, k, beta = heaps_extrapolate(points, trained_tokens)
    else:
        distinct = low = high = 0
        k, beta = 0.0, 1.0
    distinct += table_rows
    low += table_rows
    high += table_rows

    # Memory: the sample's own table sizes its entries; the unseen tail is sized like its hapaxes.
    from workbench.tasks.calibration import table_bytes

    seen = len(counts)
    per_entry = table_bytes(counts) / seen if seen else 100.0
    symbols_seen = sum(len(w.encode("utf-8")) for w in counts)
    hapax = [w for w, n in counts.items() if n == 1] or list(counts)[:1]
    hapax_symbols = sum(len(w.encode("utf-8")) for w in hapax) / max(len(hapax), 1)
    hapax_entry = sum(map(sys.getsizeof, hapax)) / max(len(hapax), 1) + sys.getsizeof(counts) / max(seen, 1)

    def table(v: int) -> float:
        return min(v, seen) * per_entry + max(v - seen, 0) * hapax_entry

    def symbols(v: int) -> float:
        return symbols_seen * min(v, seen) / max(seen, 1) + max(v - seen, 0) * hapax_symbols

    reservoir = 0.0
    if trained_lines:
        line_bytes = sum(map(sys.getsizeof, seqs)) / max(len(seqs), 1) + 8
        reservoir = trained_lines * line_bytes
    trainer = rates.trainer(spec.model)
    steps = _steps(spec, fam, counts)

    def peaks(v: int) -> tuple[int, int]:
        counting = rates.base_rss + rates.count_factor * table(v) + reservoir
        return int(counting), int(counting + trainer.bytes_per_symbol * symbols(v))

    count_peak, train_peak = peaks(distinct)
    _, train_high = peaks(high)
    # Reading is timed per byte the readers decoded (a compressed or JSON file is read in whole
    # ~1 MB batches, more than the sample keeps), counting per byte counted; the run counts with
    # ``counting_workers`` processes side by side.
    from workbench.corpus.counts import counting_workers

    per_byte = sample.seconds / max(sample.read_bytes, 1) + pass_seconds / max(sample.text_bytes, 1)
    workers = counting_workers(sum(s.size for s in sources))
    return Estimate(
        files=len(sources), bytes=sum(s.size for s in sources), text_bytes=int(sample.corpus_text),
        lines=int(round(total_lines)), exact=sample.exact and not table_rows and not trained_lines,
        sample_bytes=sample.text_bytes,
        tokens=int(total_tokens), distinct=distinct, distinct_low=low, distinct_high=high, heaps_k=round(k, 3),
        heaps_beta=round(beta, 4), bytes_per_entry=round(per_entry, 1), count_peak=count_peak,
        train_peak=train_peak, train_peak_high=train_high, count_s=round(sample.corpus_text * per_byte / workers, 2),
        train_s=round(trainer.seconds(symbols(distinct), steps), 2), available=available_memory(),
        model=spec.model, trained_lines=trained_lines, calibrated=rates.measured)


def available_memory() -> int:
    """Memory free for a new run now (psutil's ``available``: free plus reclaimable caches)."""
    import psutil

    return int(psutil.virtual_memory().available)


def _lines(seqs: Sequence[str]) -> int:
    return sum(s.count("\n") for s in seqs) or len(seqs)


def _table_rows(sources: Sequence) -> int:
    """Rows of the word-count tables among the sources (their header says; else ~24 bytes a row)."""
    from workbench.corpus.counts_table import read_counts_header

    rows = 0
    for src in sources:
        if src.kind == "wordcounts":
            header = read_counts_header(src) or {}
            rows += int(header.get("distinct") or src.size // 24)
    return rows


def _steps(spec, fam, counts) -> int | None:
    """Training steps the target asks for (merges), or None for a model that prunes (Unigram)."""
    if fam.progress.measure != "merges":
        return None
    if spec.units == "bytes":
        initial = 256 + len(spec.special_tokens or ())
    else:
        initial = len({c for w in counts for c in w}) + len(spec.special_tokens or ())
    wanted = []
    if spec.vocab_size is not None:
        wanted.append(max(spec.vocab_size - initial, 0))
    if spec.merges is not None:
        wanted.append(spec.merges)
    return min(wanted) if wanted else 0


def suggest_sample_lines(est: Estimate, share: float = 0.6) -> int:
    """A number of lines whose projected training peak fits in ``share`` of the free memory."""
    if est.lines <= 0:
        return 0
    room = max(est.available * share, 1.0)
    peak = max(est.train_peak_high, 1)
    # The peak grows about as the distinct pre-tokens, ~ lines^β: invert that.
    fraction = min(1.0, (room / peak) ** (1.0 / max(est.heaps_beta, 0.2)))
    return max(1000, int(est.lines * fraction) // 1000 * 1000)


def warn_if_short(est: Estimate, note: Callable[[str], None]) -> bool:
    """Say the warning (if any) through ``note``; True when memory is short."""
    warning = est.warning()
    if warning:
        note(warning)
    return bool(warning)


def should_estimate(sources: Sequence) -> bool:
    """Whether a run is long enough to estimate before it starts (:data:`PREFLIGHT_BYTES`)."""
    return sum(getattr(s, "size", 0) for s in sources) >= PREFLIGHT_BYTES


# ---- judging estimates ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EstimateRatios:
    """A stored run's actual figures divided by its estimate (1.0: spot on; None: not measured)."""

    distinct: float | None
    memory: float | None
    time: float | None

    def text(self) -> str:
        parts = [f"{what} ×{value:.2f}" for what, value in
                 (("distinct", self.distinct), ("memory", self.memory), ("time", self.time)) if value is not None]
        return " · ".join(parts)


def estimate_ratios(settings: dict, timings: dict) -> EstimateRatios | None:
    """Actual ÷ estimated, from what a run stored (None when it stored no estimate)."""
    est = settings.get("estimate")
    if not isinstance(est, dict):
        return None

    def ratio(actual: object, estimated: object) -> float | None:
        if isinstance(actual, (int, float)) and isinstance(estimated, (int, float)) and estimated > 0 and actual > 0:
            return round(float(actual) / float(estimated), 3)
        return None

    return EstimateRatios(ratio(settings.get("distinct_pretokens"), est.get("distinct")),
                          ratio(timings.get("peak_rss_mb"), est.get("peak_mb")),
                          ratio(timings.get("total_s"), est.get("seconds")))
