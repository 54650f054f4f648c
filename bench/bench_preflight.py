"""Pre-flight estimate against the actual run, on three corpora of different shapes (issue 22).

    python bench/bench_preflight.py [--vocab-size 4000] [--model bpe] [--json]

Corpora: **prose** — the shared German, English and Russian files (~6.5 MB, 3 files); **code** — the
top-level ``*.py`` files of this Python's standard library (~4.7 MB, ~170 files: the estimate reads
every 6th); **CJK** — the shared Chinese file (~2 MB; with the GPT-2 pre-tokenizer a run of Han
characters is one pre-token, so nearly every pre-token is new: the hardest shape for Heaps' law).

For each: the real run in a fresh process (``workbench train … --estimate``), whose stored
settings and timings give the distinct pre-tokens it counted, its peak resident memory and its
total time; and the pre-flight estimate (what ``train --dry-run`` prints, this machine's
calibration) with the CLI's sample budget (4 MB: the CJK file is then read whole, exact) and a
smaller one (512 KB) that must extrapolate. The table gives each figure and the factor
actual ÷ estimate. Not a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"


def corpora() -> dict[str, list[Path]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return {
        "prose": [CORPORA / n for n in ("de_zitate.txt", "en_shakespeare.txt", "ru_fortunes.txt")],
        "code": sorted(p for p in stdlib.glob("*.py") if p.stat().st_size > 0),
        "cjk": [CORPORA / "zh_fortunes.txt"],
    }


def workbench(*args: str) -> dict | list:
    out = subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    return json.loads(out.stdout)


def estimated(files: list[Path], vocab: int, model: str, budget: int) -> dict:
    """The estimate as ``train --dry-run`` makes it, with a sample budget of ``budget`` bytes."""
    from workbench.tasks.preflight import estimate
    from workbench.tasks.spec import RunSpec
    from workbench.tasks.train import resolve_files

    spec = RunSpec(files=resolve_files([str(p) for p in files], kind="text"), vocab_size=vocab, model=model)
    return estimate(spec, budget=budget).as_dict()


def measure(name: str, files: list[Path], vocab: int, model: str, folder: Path, budgets: list[int]) -> list[dict]:
    paths = [str(p) for p in files]
    project = folder / f"{name}.tokproj"
    workbench("train", *paths, "--vocab-size", str(vocab), "--model", model, "--kind", "text",
              "--project", str(project), "--estimate", "--no-count-cache", "--progress", "none", "--json")
    runs = workbench("runs", str(project), "--json")
    assert isinstance(runs, list)
    run = runs[-1]
    rows = []
    for budget in budgets:
        est = estimated(files, vocab, model, budget)
        rows.append({
            "corpus": name, "files": len(files), "mb": round(est["bytes"] / 2**20, 1),
            "sample_kb": budget >> 10, "exact": est["exact"],
            "distinct_est": est["distinct"], "distinct_low": est["distinct_low"],
            "distinct_high": est["distinct_high"], "distinct": run["settings"]["distinct_pretokens"],
            "peak_est_mb": round(est["peak"] / 2**20, 1), "peak_mb": run["timings"]["peak_rss_mb"],
            "time_est_s": est["seconds"], "time_s": run["timings"]["total_s"],
        })
    return rows


def table(rows: list[dict]) -> str:
    head = ("| corpus | MB | sample KB | distinct est. (range) | distinct | × | peak est. MB | peak MB | × | time est. s | "
            "time s | × |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    lines = [head]
    for r in rows:
        sample = "all (exact)" if r["exact"] else r["sample_kb"]
        lines.append(f"| {r['corpus']} ({r['files']} files) | {r['mb']} | {sample} | {r['distinct_est']:,} "
                     f"({r['distinct_low']:,}–{r['distinct_high']:,}) | {r['distinct']:,} | "
                     f"{r['distinct'] / r['distinct_est']:.2f} | {r['peak_est_mb']} | {r['peak_mb']} | "
                     f"{r['peak_mb'] / r['peak_est_mb']:.2f} | {r['time_est_s']:.1f} | {r['time_s']:.1f} | "
                     f"{r['time_s'] / r['time_est_s']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--model", default="bpe")
    parser.add_argument("--only", help="one corpus: prose, code or cjk")
    parser.add_argument("--budgets", default="4096,512", help="sample budgets in KB (default 4096 = the CLI's, 512)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    budgets = [int(kb) << 10 for kb in args.budgets.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, files in corpora().items():
            if args.only and name != args.only:
                continue
            rows.extend(measure(name, files, args.vocab_size, args.model, Path(tmp), budgets))
            print(f"{name}: done", file=sys.stderr)
    print(json.dumps(rows, indent=1) if args.json else table(rows))


if __name__ == "__main__":
    main()
