"""Counting a large ``.jsonl.zst`` corpus through the Dask recipe (``examples/dask_count.py``) on a
local cluster of 2 worker processes, each bounded by ``--memory-limit`` (issue 22).

    python bench/bench_dask_scale.py [--gb 10] [--memory-limit 4GB] [--dir DIR] [--keep] [--json]
    python bench/bench_dask_scale.py --shards 'DIR/shard-*.jsonl.zst' --expect-distinct N

**The corpus**: ``--gb`` parts of 1 GiB of text each, written by ``bench_scale.generate_shards`` into
``--dir`` one part after the other, each continuing the copies of the one before (part *j* starts
at the copy after part *j*−1's last — 121 copies a GiB), so the ten GB are ten different GB whose
new words keep following the Heaps' law fitted on the shared corpora (see ``bench_scale.py``).
Without ``--keep`` the shards are deleted afterwards. ``--shards GLOB`` counts existing shards
instead (e.g. the 1 GB of ``bench_scale.py``).

**The run**: ``examples/dask_count.py`` (``main``, GPT-2 pre-tokenizer, lines) with a client on a
``LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=BOUND)``. A thread
samples every 100 ms the RSS of each worker process (and of this process: the scheduler and the
client that receives the table); CPU time is each worker's own (psutil) at the end.

**Correct**: the table's header totals equal its rows' sums (distinct rows, tokens); with
``--expect-distinct`` (the distinct pre-tokens the workbench counted on the same shards, e.g. from
``bench_scale.py``'s run) the distinct count must equal it; per-shard check with ``--check-shards K``:
K shards counted alone (``count_file``) must each have every row ≤ the table's.

Not a test: a benchmark.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import generate_shards  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "dask_count.py"


def load_example():
    spec = importlib.util.spec_from_file_location("dask_count_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def read_table(path: Path) -> tuple[dict, int, int, dict[str, int]]:
    """``(header, rows, token sum, {})`` — streamed, not held (rows split at their last tab)."""
    rows = tokens = 0
    with open(path, encoding="utf-8") as f:
        header = json.loads(f.readline().split(" ", 3)[-1])
        for line in f:
            rows += 1
            tokens += int(line.rsplit("\t", 1)[1])
    return header, rows, tokens, {}


def main() -> None:
    import psutil
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gb", type=int, default=10)
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--dir", default="/work/tmp_dask_scale")
    parser.add_argument("--shards", help="count these existing shards (a glob) instead of generating")
    parser.add_argument("--keep", action="store_true", help="keep the generated shards")
    parser.add_argument("--expect-distinct", type=int)
    parser.add_argument("--check-shards", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    folder = Path(args.dir)
    generated = False
    if args.shards:
        shards = sorted(glob.glob(args.shards))
        info = Path(shards[0]).parent / "corpus.json"  # written by bench_scale.py beside its shards
        text_bytes = json.loads(info.read_text())["text_bytes"] if info.exists() else None
    else:
        info_path = folder / "parts.json"
        parts = json.loads(info_path.read_text()) if info_path.exists() else []
        for j in range(len(parts), args.gb):
            log(f"generating part {j + 1}/{args.gb}")
            first_copy = sum(p["copies"] for p in parts)  # the rest of the previous part's last copy is left out
            parts.append(generate_shards(folder, 1024, first_shard=10_000 * j, first_copy=first_copy, log=log))
            info_path.write_text(json.dumps(parts))
        generated = True
        shards = [s for p in parts for s in p["shards"]]
        text_bytes = sum(p["text_bytes"] for p in parts)
    zst_bytes = sum(os.path.getsize(s) for s in shards)
    out = folder / "dask.wordcounts.tsv"
    folder.mkdir(parents=True, exist_ok=True)
    example = load_example()
    peaks: dict[str, int] = {}
    stop = threading.Event()
    load_before = os.getloadavg()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=args.memory_limit,
                      dashboard_address=None, local_directory=str(folder / "dask-work")) as cluster, \
            Client(cluster) as client:
        pids = client.run(os.getpid)  # {worker address: pid}
        procs = {addr: psutil.Process(pid) for addr, pid in pids.items()}
        me = psutil.Process()
        limit = next(iter(cluster.workers.values())).memory_manager.memory_limit

        def sample() -> None:
            while not stop.is_set():
                for name, p in [*procs.items(), ("client+scheduler", me)]:
                    try:
                        peaks[name] = max(peaks.get(name, 0), p.memory_info().rss)
                    except psutil.Error:
                        pass
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        cpu0 = {a: sum(p.cpu_times()[:2]) for a, p in procs.items()}
        example.main([*shards, "--out", str(out), "--pretokenizer", "gpt2"], client=client)
        seconds = time.perf_counter() - t0
        cpu = {a: round(sum(p.cpu_times()[:2]) - cpu0[a], 1) for a, p in procs.items()}
        restarted = {a: p.is_running() and p.pid == pids[a] for a, p in procs.items()}
        stop.set()
        sampler.join()
        checks = {}
        if args.check_shards:
            from collections import Counter

            counted: dict[str, Counter] = {}
            step = max(1, len(shards) // args.check_shards)
            for s in shards[::step][: args.check_shards]:
                counted[s] = client.submit(example.count_file, s, {"pretokenizer": "gpt2", "normalizer": [],
                                                                   "sequences": "lines"}).result()
    header, rows, tokens, _ = read_table(out)
    checks["header_equals_rows"] = header["distinct"] == rows and header["tokens"] == tokens
    if args.expect_distinct is not None:
        checks["distinct_equals_expected"] = rows == args.expect_distinct
    if args.check_shards:
        from workbench.corpus import iter_word_counts, open_source

        wanted = set().union(*counted.values())
        # The table's reader unescapes rows (a pre-token may hold "\n" or "\t").
        table = {w: n for w, n in iter_word_counts(open_source(out, kind="wordcounts")) if w in wanted}
        checks["shards_within_table"] = all(table.get(w, 0) >= c for cnt in counted.values() for w, c in cnt.items())
        checks["shard_tokens"] = {Path(s).name: sum(cnt.values()) for s, cnt in counted.items()}
    result = {
        "shards": len(shards), "zst_gb": round(zst_bytes / 2**30, 2),
        "text_gb": round(text_bytes / 2**30, 2) if text_bytes else None,
        "memory_limit_mb": round(limit / 2**20), "seconds": round(seconds, 1),
        "throughput_mb_s": round((text_bytes or 0) / 2**20 / seconds, 2) if text_bytes else None,
        "worker_cpu_s": cpu, "workers_kept": restarted,
        "peak_rss_mb": {k: round(v / 2**20) for k, v in peaks.items()},
        "distinct": rows, "tokens": tokens, "checks": checks,
        "load_before": [round(x, 1) for x in load_before], "load_after": [round(x, 1) for x in os.getloadavg()],
    }
    if generated and not args.keep:
        shutil.rmtree(folder)
    print(json.dumps(result, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
