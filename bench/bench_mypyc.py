"""Does compiling the BPE and WordPiece core with mypyc pay? (issue 24's allowed compiled path)

    python bench/bench_mypyc.py [--vocab 8192 32768] [--rounds 3] [--callgrind]

Copies this tree's ``workbench`` package to a temporary folder and compiles
``workbench/core/{bpe,bpe_kernel,wordpiece}.py`` there with mypyc, unchanged (needs mypy and a C
compiler; ``FlatView`` gets ``__deletable__`` in the copy, the one line mypyc asks for). Then the
BPE trainer alone — byte-level, GPT-2 split, the shared corpora's word counts counted once in this
process and handed to each child — runs pure and compiled in interleaved rounds, each a fresh
process timed with ``time.process_time`` around ``bpe.train``; the merges and frequencies must be
identical (their md5 is compared). ``--callgrind`` also counts the instructions each executes
under valgrind on every fourth line of the corpora at the first V: a measure the machine's load
does not disturb (CPU time on this shared 2-core machine moves ±25 % between identical runs).

Not a test: a benchmark; the load average is printed. Result on 2026-12-02 (branch native25,
load 5–8): see the README section "A compiled core with mypyc (issue 24)".
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
MODULES = ("bpe", "bpe_kernel", "wordpiece")

CHILD = """
import hashlib, json, pickle, sys, time
from workbench.core import bpe
counts = pickle.load(open(sys.argv[1], "rb"))
t = time.process_time()
tok, freqs = bpe.train(counts, bpe.TrainConfig(vocab_size=int(sys.argv[2])))
cpu = time.process_time() - t
print(json.dumps({"cpu": cpu, "md5": hashlib.md5(repr((tok.merges, freqs)).encode()).hexdigest(),
                  "compiled": not bpe.__file__.endswith(".py")}))
"""


def word_counts(folder: Path, every: int = 1) -> Path:
    """The shared corpora's pre-token counts (GPT-2 split), pickled; ``every`` > 1 keeps every n-th line."""
    sys.path.insert(0, str(ROOT))
    from workbench.core.count import count_pretokens

    text = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*.txt")))
    if every > 1:
        text = "\n".join(text.splitlines()[::every])
    out = folder / f"counts-{every}.pkl"
    out.write_bytes(pickle.dumps(dict(count_pretokens([text]))))
    return out


def compiled_tree(folder: Path) -> Path:
    """A copy of the package with the three core modules compiled by mypyc."""
    tree = folder / "compiled"
    shutil.copytree(ROOT / "workbench", tree / "workbench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    shutil.copy(ROOT / "pyproject.toml", tree)  # the project's mypy settings (ignore_missing_imports)
    kernel = tree / "workbench" / "core" / "bpe_kernel.py"
    text, n = re.subn(r"(class FlatView:\n    \"\"\".*?\"\"\"\n)", r'\1\n    __deletable__ = ["sym", "lens"]\n',
                      kernel.read_text(encoding="utf-8"), count=1, flags=re.S)
    if not n:
        raise SystemExit("bpe_kernel.FlatView changed: update bench_mypyc.py's __deletable__ line")
    kernel.write_text(text, encoding="utf-8")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "mypyc", *(f"workbench/core/{m}.py" for m in MODULES)], cwd=tree,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{(out.stdout + out.stderr)[-3000:]}")
    print(f"mypyc: {len(MODULES)} modules compiled in {time.perf_counter() - t0:.0f} s wall", flush=True)
    return tree


def child(tree: Path, counts: Path, vocab: int, callgrind: bool = False) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-c", CHILD, str(counts), str(vocab)]
    if callgrind:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=tree)
    if out.returncode != 0:
        raise SystemExit(f"trainer in {tree} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if callgrind:
        found = re.search(r"Collected : (\d+)", out.stderr)
        result["instructions"] = int(found.group(1)) if found else 0
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--callgrind", action="store_true", help="also count instructions under valgrind")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tree = compiled_tree(folder)
        counts = word_counts(folder)
        print("| V | pure CPU s | compiled CPU s | compiled ÷ pure | rounds (pure / compiled) | identical | load |")
        print("|---:|---:|---:|---:|---|---|---:|")
        for vocab in args.vocab:
            pure, comp = [], []
            for _ in range(args.rounds):
                pure.append(child(ROOT, counts, vocab))
                comp.append(child(tree, counts, vocab))
            if not all(r["compiled"] for r in comp) or any(r["compiled"] for r in pure):
                raise SystemExit("the compiled copy did not load (or the pure tree holds a compiled module)")
            same = {r["md5"] for r in pure + comp}
            p, c = statistics.median(r["cpu"] for r in pure), statistics.median(r["cpu"] for r in comp)
            rounds = ", ".join(f"{a['cpu']:.2f}/{b['cpu']:.2f}" for a, b in zip(pure, comp))
            print(f"| {vocab:,} | {p:.2f} | {c:.2f} | {c / p:.2f} | {rounds} | {'yes' if len(same) == 1 else 'NO'} |"
                  f" {os.getloadavg()[0]:.1f} |", flush=True)
        if args.callgrind:
            small = word_counts(folder, every=4)
            a, b = child(ROOT, small, args.vocab[0], True), child(tree, small, args.vocab[0], True)
            print(f"callgrind, every 4th line, V {args.vocab[0]:,}: pure {a['instructions'] / 1e9:.2f} G, compiled "
                  f"{b['instructions'] / 1e9:.2f} G instructions ({b['instructions'] / a['instructions']:.2f}×; "
                  f"interpreter start-up and imports included), identical: {a['md5'] == b['md5']}")
    print(f"load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
