"""BPE training, whole process, against one-thread ``tokenizers`` ``train(files)`` (issue 24).

    python bench/bench_bpe_train.py [--vocab 8192 32768] [--scale 1 4] [--code] [--rounds 2] [--before DIR]

Each contender is a fresh process, run in interleaved rounds (ours, theirs, ours, theirs …):

- ours: ``python -m workbench train CORPUS --vocab-size V --project P --no-count-cache`` — byte-level
  BPE, GPT-2 split, each line a sequence, every merge written to the project file (by the store's
  writer process once the trainer's own commits have cost what starting it would: a short run, e.g.
  V 8,192, commits its few batches itself; see ``store/writer.py``), cold count cache;
- theirs: ``tokenizers`` ``Tokenizer(BPE())`` with ``ByteLevel(add_prefix_space=False)`` (the GPT-2
  regex), ``BpeTrainer(vocab_size=V, initial_alphabet=ByteLevel.alphabet())``, ``train([CORPUS])``,
  ``RAYON_NUM_THREADS=1``.

CPU time is user + system of the process and every child it waited for (``os.wait4``); peak memory
is the peak of the summed RSS of the process tree, polled every 20 ms (counting may fork a second
process; the store writes from a child). Ratios are medians over rounds, ours ÷ theirs. Beside it,
``PSS``: the peak of the tree's summed proportional set size (``smaps_rollup``; a page shared by n
processes counts 1/n in each), which does not count twice the libpython/libc pages a trainer and its
writer process share — a second view, not the target: the target is the RSS column.

``pure``: the same workbench with ``WORKBENCH_PURE=1`` (the pure-Python merge loop instead of the C one,
``workbench/core/_bpe_merge.c``), run interleaved beside them when the C loop is built (``--no-pure``:
not). ``ours`` is whatever the tree uses by default: the C loop when it was built.

``--before DIR`` adds a further contender, the workbench of another source tree (e.g. ``git archive``
of the commit before a change), run interleaved with the other two; its ratios are printed beside.

Corpora: ``×1`` is the shared corpora concatenated (8.9 MB); ``code`` (``--code``) the standard
library's top-level ``*.py`` files concatenated (as bench_preflight.py's code corpus); ``×k`` is
``bench_scale.generate`` at k times that size (copies with reshuffled lines, one word per line shifted — new rare words, the long
tail a larger corpus brings). The growth exponent of a measure m between ×1 and ×k is
log(m_k / m_1) / log(k). Not a test: a benchmark on a shared machine; the load is printed.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "workbench-bench"

HF_SCRIPT = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
trainer = trainers.BpeTrainer(vocab_size=int(sys.argv[2]), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False)
tok.train([sys.argv[1]], trainer)
print(tok.get_vocab_size())
"""


def corpus(scale: int) -> Path:
    """The ×``scale`` corpus as one file (made once, kept in the bench cache folder); scale 0: code."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / (f"bpe-x{scale}.txt" if scale else "bpe-code.txt")
    if out.exists():
        return out
    if scale == 0:
        import sysconfig

        stdlib = Path(sysconfig.get_paths()["stdlib"])
        out.write_bytes(b"".join(p.read_bytes() for p in sorted(stdlib.glob("*.py")) if p.stat().st_size > 0))
        return out
    files = sorted(CORPORA.glob("*.txt"))
    if scale == 1:
        out.write_bytes(b"".join(p.read_bytes() for p in files))
    else:
        sys.path.insert(0, str(ROOT / "bench"))
        from bench_scale import generate

        generate(out, scale * sum(p.stat().st_size for p in files) / 2**20)
    return out


def measure(cmd: list[str], env: dict[str, str], cwd: str | Path = ROOT) -> tuple[float, float, float, float]:
    """``(wall s, CPU s of the process tree, peak summed RSS MB, peak summed PSS MB)`` of one command."""
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **env},
                            cwd=cwd)
    ps = psutil.Process(proc.pid)
    peak = peak_pss = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            tree = [ps, *ps.children(recursive=True)]
            rss = pss = 0
            for p in tree:
                full = p.memory_full_info()  # /proc/PID/smaps_rollup: RSS and PSS of one moment
                rss += full.rss
                pss += full.pss
            peak, peak_pss = max(peak, rss), max(peak_pss, pss)
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {err[-2000:]}")
    peak = max(peak, usage.ru_maxrss * 1024)
    return wall, usage.ru_utime + usage.ru_stime, peak / 2**20, peak_pss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--scale", type=int, nargs="*", default=[1, 4], help="corpus sizes (none: the code corpus alone)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--code", action="store_true", help="also the code corpus (standard library *.py)")
    parser.add_argument("--no-pure", action="store_true", help="do not time the pure-Python merge loop beside")
    parser.add_argument("--before", help="a second workbench source tree to time beside (interleaved)")
    parser.add_argument("--ours", default=str(ROOT),
                        help="the source tree of the workbench to time (default: this one; e.g. an older commit's)")
    args = parser.parse_args()
    hf_env = {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start; "
          f"medians of {args.rounds} interleaved rounds")
    check = subprocess.run([sys.executable, "-c", "import workbench.core.bpe as b; print(b._native is not None)"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": args.ours}, cwd=args.ours)
    native = check.stdout.strip() == "True"
    pure = native and not args.no_pure
    print(f"ours: {'the C merge loop' if native else 'the pure-Python merge loop (the C loop is not built)'}")
    before_cols = (" before CPU s | before CPU × | before peak MB | before memory × | before PSS MB |"
                   if args.before else "")
    pure_cols = " pure CPU s | pure CPU × | pure peak MB | pure memory × |" if pure else ""
    print("| corpus | V | ours CPU s | tokenizers CPU s | CPU × | ours peak MB | tokenizers peak MB | memory × |"
          " ours PSS MB | tokenizers PSS MB | PSS × |"
          f" ours wall s | tokenizers wall s |{pure_cols}{before_cols} load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" * 4 if pure else "")
          + ("---:|" * 5 if args.before else "") + "---:|")
    results: dict[tuple[int, int], tuple[float, float, float, float]] = {}
    corpora = ([0] if args.code else []) + list(args.scale)
    for scale in corpora:
        path = corpus(scale)
        for vocab in args.vocab if scale else args.vocab[:1]:
            ours, theirs, before, pures = [], [], [], []

            def workbench(tree: str, path: Path = path, vocab: int = vocab,
                          extra: dict[str, str] | None = None) -> tuple[float, float, float, float]:
                with tempfile.TemporaryDirectory() as tmp:
                    return measure([sys.executable, "-m", "workbench", "train", str(path), "--vocab-size",
                                    str(vocab), "--project", str(Path(tmp) / "b.tokproj"),
                                    "--no-count-cache", "--progress", "none"], {"PYTHONPATH": tree, **(extra or {})},
                                   cwd=tree)

            for _ in range(args.rounds):
                if args.before:
                    before.append(workbench(args.before))
                if pure:
                    pures.append(workbench(args.ours, extra={"WORKBENCH_PURE": "1"}))
                ours.append(workbench(args.ours))
                theirs.append(measure([sys.executable, "-c", HF_SCRIPT, str(path), str(vocab)], hf_env))
            o = [statistics.median(m[i] for m in ours) for i in range(4)]
            t = [statistics.median(m[i] for m in theirs) for i in range(4)]
            results[(scale, vocab)] = (o[1], o[2], t[1], t[2])
            extra = ""
            if pure:
                u = [statistics.median(m[i] for m in pures) for i in range(3)]
                extra += f" {u[1]:.1f} | {u[1] / t[1]:.2f} | {u[2]:.0f} | {u[2] / t[2]:.2f} |"
            if args.before:
                b = [statistics.median(m[i] for m in before) for i in range(4)]
                extra += f" {b[1]:.1f} | {b[1] / t[1]:.2f} | {b[2]:.0f} | {b[2] / t[2]:.2f} | {b[3]:.0f} |"
            name = f"×{scale}" if scale else "code"
            print(f"| {name} ({path.stat().st_size / 1e6:.1f} MB) | {vocab:,} | {o[1]:.1f} | {t[1]:.1f} | "
                  f"{o[1] / t[1]:.2f} | {o[2]:.0f} | {t[2]:.0f} | {o[2] / t[2]:.2f} | {o[3]:.0f} | {t[3]:.0f} | "
                  f"{o[3] / t[3]:.2f} | {o[0]:.1f} | {t[0]:.1f} |{extra}"
                  f" {os.getloadavg()[0]:.1f} |", flush=True)
    scales = sorted(args.scale)
    if len(scales) > 1:
        lo, hi = scales[0], scales[-1]
        for vocab in args.vocab:
            a, b = results[(lo, vocab)], results[(hi, vocab)]
            k = math.log(hi / lo)
            print(f"growth ×{lo}→×{hi}, V {vocab:,}: ours CPU n^{math.log(b[0] / a[0]) / k:.2f}, "
                  f"memory n^{math.log(b[1] / a[1]) / k:.2f}; tokenizers CPU n^{math.log(b[2] / a[2]) / k:.2f}, "
                  f"memory n^{math.log(b[3] / a[3]) / k:.2f}")
    print(f"load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
