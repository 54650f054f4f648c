"""PickyBPE training time beside plain BPE on the shared corpora (target: within 2 ×).

    python bench/bench_pickybpe.py [--vocab 8000] [--rounds 3] [--threshold 0.9]

The corpora of ``../shared/corpora`` are counted once (GPT-2 split, byte-level); each round then
trains plain BPE (``BpeTrainer``) and PickyBPE (``PickyBpeTrainer``) to the same vocabulary size,
each in its own child process (so its peak memory, ru_maxrss, is its own), interleaved. Prints
CPU seconds and peak MB per round and the median ratios. PickyBPE makes more merges than BPE to
reach the same size (each removal frees a slot): the merges are printed too.
Not a test: timings never decide pass/fail.
"""

from __future__ import annotations

import argparse
import json
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"

CHILD = """
import json, pickle, resource, sys, time
sys.path.insert(0, {root!r})
from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.pickybpe import PickyBpeTrainer
counts = pickle.load(open({counts!r}, "rb"))
config = TrainConfig(units="bytes", vocab_size={vocab})
t0 = time.process_time()
trainer = PickyBpeTrainer(counts, config, {threshold}) if {picky} else BpeTrainer(counts, config)
for _ in trainer.run():
    pass
cpu = time.process_time() - t0
print(json.dumps({{"cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "merges": len(trainer.merges), "removals": len(getattr(trainer, "removals", ()))}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threshold", type=float, default=0.9)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from workbench.core.count import count_pretokens

    files = sorted(CORPORA.glob("*.txt"))
    counts = count_pretokens([p.read_text(encoding="utf-8") for p in files], pretokenizer="gpt2")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "counts.pickle"
        path.write_bytes(pickle.dumps(dict(counts)))
        rows: dict[str, list[dict]] = {"bpe": [], "pickybpe": []}
        for _round in range(args.rounds):
            for name in ("bpe", "pickybpe"):
                code = CHILD.format(root=str(ROOT), counts=str(path), vocab=args.vocab, threshold=args.threshold,
                                    picky=name == "pickybpe")
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                rows[name].append(json.loads(out.stdout))
                print(name, rows[name][-1], flush=True)
    mb = sum(p.stat().st_size for p in files) / 1e6
    for name in rows:
        r = rows[name][0]
        print(f"{name:9s} V={args.vocab:,}  merges {r['merges']:,}  removals {r['removals']:,}  "
              f"CPU median {statistics.median(x['cpu'] for x in rows[name]):.2f} s  "
              f"peak {statistics.median(x['rss_mb'] for x in rows[name]):.0f} MB  ({mb:.1f} MB of text)")
    cpu = statistics.median(p["cpu"] / b["cpu"] for p, b in zip(rows["pickybpe"], rows["bpe"]))
    rss = statistics.median(p["rss_mb"] / b["rss_mb"] for p, b in zip(rows["pickybpe"], rows["bpe"]))
    print(f"PickyBPE / BPE: CPU × {cpu:.2f}, peak memory × {rss:.2f} (median of {args.rounds} interleaved rounds); "
          f"load {open('/proc/loadavg').read().split()[:3] if Path('/proc/loadavg').exists() else '?'}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    _ = resource  # the children measure themselves


if __name__ == "__main__":
    main()
