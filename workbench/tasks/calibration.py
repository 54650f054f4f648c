"""This machine's rates for the pre-flight estimate: memory and time per unit of corpus, measured
once and cached.

Each model family is trained by a child process of the app's own interpreter on the bundled demo
corpus (five ~50 KB files: English, German, Russian, Chinese; vocabulary 2,000), which reports:

- ``base_rss``: the resident memory of a fresh training process (interpreter + workbench) — what
  every run pays before its first byte;
- ``count_factor``: growth of the peak resident memory while counting, per byte of the count
  table as :func:`table_bytes` sizes it (``sys.getsizeof`` of the dict, its keys and counts) —
  the allocator's slack and the reader's buffers on top of the table itself;
- per family, ``bytes_per_symbol``: growth of the peak while training, per UTF-8 byte of the
  distinct pre-tokens (BPE's symbol lists and pair index, WordPiece's likewise, Unigram's seed
  pieces and lattices all grow with it);
- per family, the training time as ``seconds = S/S_cal · a · steps^γ`` (``a``, ``γ`` fitted on
  the calibration run's step times, log-log least squares; Unigram, whose step count is not
  known in advance, as ``S/S_cal · total_cal``).

The result is cached as JSON in the user cache folder (``WORKBENCH_CALIBRATION`` names another
file), keyed by workbench and Python version, machine type and CPU count: another machine or
version calibrates again. Without a calibration (``calibrate=False`` and no cache) the constants
measured on the development machine (2 cores, Linux, CPython 3.12) are used and the estimate says so.

Left out: native-thread trainers (there are none) and disk speed (the rate of counting is measured
on the user's own corpus by the estimate itself, :mod:`workbench.tasks.preflight`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from workbench.core.model import ENCODES_AS

CAL_VOCAB = 2000
CALIBRATION_ENV = "WORKBENCH_CALIBRATION"
FORMAT = 1


@dataclass(frozen=True)
class TrainerRates:
    """One family's measured costs (see the module docstring)."""

    bytes_per_symbol: float
    symbols: int            # S_cal: UTF-8 bytes of the calibration table's distinct pre-tokens
    a: float                # seconds at one step, for S_cal symbols
    gamma: float            # how the time grows with the steps
    total_s: float          # the whole calibration run

    def seconds(self, symbols: float, steps: int | None) -> float:
        scale = symbols / max(self.symbols, 1)
        if steps is None:
            return scale * self.total_s
        return scale * self.a * max(steps, 1) ** self.gamma


@dataclass(frozen=True)
class Rates:
    base_rss: int
    count_factor: float
    trainers: Mapping[str, TrainerRates] = field(default_factory=dict)
    measured: bool = True   # False: the development machine's constants (no calibration here yet)

    def trainer(self, model: str) -> TrainerRates:
        found = self.trainers.get(model) or DEFAULT_RATES.trainers.get(model)
        if found is None and model in ENCODES_AS:  # SuperBPE, PickyBPE, parity-aware BPE: BPE's rates
            return self.trainer(ENCODES_AS[model])
        return found or DEFAULT_RATES.trainers[model]


#: Measured on the development machine (2 cores, Linux x86-64, CPython 3.12) by :func:`calibrate`.
DEFAULT_RATES = Rates(
    base_rss=29 << 20, count_factor=1.26, measured=False,
    trainers={"bpe": TrainerRates(189.0, 101_311, 0.066, 0.37, 1.0),
              "wordpiece": TrainerRates(146.0, 71_149, 0.044, 0.32, 0.37),
              "unigram": TrainerRates(208.0, 208_716, 7.0, 0.0, 7.0)})


def table_bytes(counts: Mapping[str, int]) -> int:
    """Bytes a ``{pre-token: count}`` table holds: the dict, its keys, and its counts (small ints
    are shared by CPython and cost nothing)."""
    size = sys.getsizeof(counts)
    getsizeof = sys.getsizeof
    size += sum(map(getsizeof, counts))
    size += sum(getsizeof(n) for n in counts.values() if n > 256)
    return size


def calibration_path() -> Path:
    from workbench.corpus.count_cache import default_cache_dir

    given = os.environ.get(CALIBRATION_ENV)
    return Path(given) if given else default_cache_dir().parent / "calibration.json"


def machine_key() -> dict:
    """What the cached rates hold for: this machine, this Python, and this code of the trainers —
    the version alone does not change when a trainer gets faster between releases (a checkout, an
    editable install), and rates of the slower code made every estimate high (×4 on the shared
    corpora after a speed-up)."""
    from workbench import __version__

    return {"format": FORMAT, "workbench": __version__, "code": _trainer_code(), "python": platform.python_version(),
            "machine": platform.machine(), "system": platform.system(), "cpus": os.cpu_count() or 1}


def _trainer_code() -> str:
    """A digest of the counting and training code (``workbench/core/*.py``; a few ms to read)."""
    import hashlib

    digest = hashlib.blake2b(digest_size=8)
    core = Path(__file__).resolve().parents[1] / "core"
    for path in sorted(core.glob("*.py")):
        try:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        except OSError:
            continue
    return digest.hexdigest()


def load_rates(*, calibrate: bool = True, path: Path | None = None) -> Rates:
    """The cached rates of this machine; measured now (a few seconds) when there are none and
    ``calibrate``; else :data:`DEFAULT_RATES`. A damaged cache file is measured again."""
    path = path or calibration_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") == machine_key():
            return _rates_from(data["rates"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if not calibrate:
        return DEFAULT_RATES
    rates = calibrate_here()
    try:
        from workbench.core.atomic import replacing

        path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(path) as tmp:
            tmp.write_text(json.dumps({"key": machine_key(), "rates": _rates_dict(rates)}, indent=1),
                           encoding="utf-8")
    except OSError:
        pass  # an unwritable cache folder: measured again next time
    return rates


def _rates_dict(rates: Rates) -> dict:
    return {"base_rss": rates.base_rss, "count_factor": rates.count_factor,
            "trainers": {k: asdict(v) for k, v in rates.trainers.items()}}


def _rates_from(data: Mapping) -> Rates:
    trainers = {k: TrainerRates(float(v["bytes_per_symbol"]), int(v["symbols"]), float(v["a"]), float(v["gamma"]),
                                float(v["total_s"]))
                for k, v in data["trainers"].items()}
    return Rates(int(data["base_rss"]), float(data["count_factor"]), trainers)


def calibrate_here(models: Sequence[str] = ("bpe", "wordpiece", "unigram")) -> Rates:
    """Train each family once in a fresh child process and turn what it measured into rates."""
    trainers: dict[str, TrainerRates] = {}
    base, factors = [], []
    for model in models:
        out = subprocess.run([sys.executable, "-m", "workbench.tasks.calibration", model], capture_output=True,
                             text=True, timeout=300, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
        if out.returncode != 0:
            continue
        m = json.loads(out.stdout.strip().splitlines()[-1])
        base.append(m["base_rss"])
        factors.append(max(m["count_rss"] - m["base_rss"], 0) / max(m["table_bytes"], 1))
        trainers[model] = TrainerRates(max(m["train_rss"] - m["count_rss"], 0) / max(m["symbols"], 1),
                                       m["symbols"], *_fit_time(m["points"], m["total_s"]), m["total_s"])
    if not trainers:
        return DEFAULT_RATES
    return Rates(int(sorted(base)[len(base) // 2]), max(1.0, sorted(factors)[len(factors) // 2]), trainers)


def _fit_time(points: Sequence[Sequence[float]], total: float) -> tuple[float, float]:
    """``(a, γ)`` of ``t = a·step^γ`` by least squares in log-log over the steps ≥ 20 (γ clamped
    to [0.3, 1.2]); a run of few steps (Unigram) gives ``(total, 0)``."""
    pts = [(math.log(s), math.log(t)) for s, t in points if s >= 20 and t > 0]
    if len(pts) < 5:
        return total, 0.0
    n = len(pts)
    mx, my = sum(p[0] for p in pts) / n, sum(p[1] for p in pts) / n
    var = sum((p[0] - mx) ** 2 for p in pts)
    gamma = sum((p[0] - mx) * (p[1] - my) for p in pts) / var if var else 1.0
    gamma = min(max(gamma, 0.3), 1.2)
    return math.exp(my - gamma * mx), gamma


def peak_rss() -> int:
    """This process's peak resident memory in bytes (``ru_maxrss``: KB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def children_peak_rss() -> int:
    """The largest peak of this process's finished children (counting workers), in bytes."""
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _child(model: str) -> dict:
    """Run in a fresh process: count the demo corpus, train ``model``, report peaks and times."""
    import psutil

    from workbench.corpus.demo import demo_corpus_files
    from workbench.tasks.models import family
    from workbench.tasks.spec import RunSpec
    from workbench.tasks.train import count_words, open_sources, resolve_files

    fam = family(model)
    spec = RunSpec(files=resolve_files([str(p) for p in demo_corpus_files()]), model=model,
                   vocab_size=CAL_VOCAB).validate()
    base = psutil.Process().memory_info().rss
    counts, _ = count_words(open_sources(spec.files), fam.counted_as or spec.pretokenizer,
                            () if fam.counted_as else (spec.normalizer or ()), sequences=spec.sequences)
    count_rss = peak_rss()
    t0 = time.perf_counter()
    trainer = fam.trainer(counts, spec, None)
    points = []
    for event in trainer.run(lambda: False):
        points.append((event.step, time.perf_counter() - t0))
    total = time.perf_counter() - t0
    train_rss = peak_rss()
    del trainer
    # The resident peak moves in steps of the allocator's arenas, which on a corpus this small can
    # hide the trainer: its Python allocations are traced too, over its first steps (where the
    # peak is: the pair index, the seed pieces), and the larger of the two counts.
    if train_rss - count_rss >= 4 << 20:  # visible as it is
        return {"base_rss": base, "count_rss": count_rss, "train_rss": train_rss, "table_bytes": table_bytes(counts),
                "symbols": sum(len(w.encode("utf-8")) for w in counts), "total_s": total, "points": points[::8]}
    import tracemalloc

    tracemalloc.start()
    trainer = fam.trainer(counts, spec, None)
    first = max(len(points) // 10, 3) if fam.progress.measure == "merges" else 3
    for step, _event in enumerate(trainer.run(lambda: False)):
        if step >= first:
            break
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"base_rss": base, "count_rss": count_rss, "train_rss": max(train_rss, count_rss + traced),
            "table_bytes": table_bytes(counts), "symbols": sum(len(w.encode("utf-8")) for w in counts),
            "total_s": total, "points": points[::8]}


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1])))
