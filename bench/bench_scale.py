"""Byte-level BPE at vocabulary 32,768 on a large generated corpus: the workbench against Hugging Face
``tokenizers`` (``train_from_iterator`` on the same lines), one thread and two (issue 22).

    python bench/bench_scale.py [--mb 16] [--vocab-size 32768] [--json] [--keep CORPUS.txt]

**The corpus.** The shared corpora (de, en ×2, ru, zh: 8.5 MB) repeated until ``--mb`` is reached,
each copy varied so that it is not the same text again: copy *k* has its lines in another order
(shuffled with seed *k*) and, for *k* > 0, in every line one word (chosen with seed *k*) has each
letter moved *k* code points on (kept only where the result is still a letter: Latin stays
Latin-ish, Cyrillic Cyrillic, Han Han). Each copy thus adds new rare words at a rate of one per
line — the long tail a larger real corpus brings — while keeping the frequent words, and the Zipf
shape, of the original. Written as one UTF-8 ``.txt`` (the compressed JSONL readers are not needed
to measure training).

**The runs**, each a fresh process whose peak resident memory is the peak of the summed RSS of
its process tree (polled every 50 ms; the workbench counts with two processes on a corpus this
size) and whose time is wall-clock from start to exit:

- ``workbench train CORPUS --vocab-size V --no-count-cache`` (byte-level BPE, GPT-2 pre-tokenizer,
  lines as sequences; counting in two processes, training in one);
- ``tokenizers``: ``Tokenizer(BPE())`` with the ``ByteLevel`` pre-tokenizer (GPT-2 regex, no prefix
  space), ``BpeTrainer(vocab_size=V, initial_alphabet=ByteLevel.alphabet())``, fed the file's lines
  by ``train_from_iterator`` — with ``RAYON_NUM_THREADS=1`` and ``=2``.

Not a test: a benchmark on a shared 2-core machine; run it with nothing else heavy running.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
WORD = re.compile(r"\w+")


def vary(line: str, k: int, rng: random.Random) -> str:
    """``line`` with one word's letters moved ``k`` code points on (where still letters)."""
    words = list(WORD.finditer(line))
    if not words or k == 0:
        return line
    m = rng.choice(words)
    shifted = "".join(chr(ord(c) + k) if c.isalpha() and chr(ord(c) + k).isalpha() else c for c in m.group())
    return line[: m.start()] + shifted + line[m.end():]


def generate(out: Path, megabytes: float) -> int:
    """Write the corpus (see the module docstring); returns its size in bytes."""
    lines = [line for p in sorted(CORPORA.glob("*.txt")) for line in p.read_text(encoding="utf-8").splitlines()]
    target = int(megabytes * 2**20)
    written = 0
    with open(out, "w", encoding="utf-8", newline="\n") as handle:
        k = 0
        while written < target:
            rng = random.Random(k)
            order = lines[:]
            rng.shuffle(order)
            for line in order:
                text = vary(line, k, rng) + "\n"
                handle.write(text)
                written += len(text.encode("utf-8"))
                if written >= target:
                    break
            k += 1
    return written


TOKENIZERS_SCRIPT = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
trainer = trainers.BpeTrainer(vocab_size=int(sys.argv[2]), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False)
def lines():
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            yield line
tok.train_from_iterator(lines(), trainer=trainer)
print(tok.get_vocab_size())
"""


def run_measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """``(seconds, peak MB of the process tree's summed RSS, stdout)``."""
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=ROOT)
    ps = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            rss = ps.memory_info().rss + sum(c.memory_info().rss for c in ps.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.05)
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {err[-2000:]}")
    return seconds, peak / 2**20, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=16.0, help="corpus size in MB (default 16)")
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--keep", help="write the corpus here (and reuse it if it exists)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(args.keep) if args.keep else Path(tmp) / "corpus.txt"
        if not corpus.exists():
            generate(corpus, args.mb)
        size = corpus.stat().st_size
        rows = []
        project = Path(tmp) / "scale.tokproj"
        seconds, peak, out = run_measured([sys.executable, "-m", "workbench", "train", str(corpus), "--vocab-size",
                                           str(args.vocab_size), "--project", str(project), "--no-count-cache",
                                           "--progress", "none", "--estimate", "--json"])
        result = json.loads(out)
        rows.append({"tool": "workbench (count: 2 processes, train: 1)", "seconds": round(seconds, 1),
                     "peak_mb": round(peak, 1), "vocab": result["vocab_size"]})
        for threads in (1, 2):
            seconds, peak, out = run_measured([sys.executable, "-c", TOKENIZERS_SCRIPT, str(corpus),
                                               str(args.vocab_size)], env={"RAYON_NUM_THREADS": str(threads)})
            rows.append({"tool": f"tokenizers train_from_iterator, {threads} thread{'s' if threads > 1 else ''}",
                         "seconds": round(seconds, 1), "peak_mb": round(peak, 1), "vocab": int(out.split()[-1])})
    if args.json:
        print(json.dumps({"corpus_mb": round(size / 2**20, 1), "rows": rows}, indent=1))
        return
    print(f"corpus: {size / 2**20:.1f} MB generated, BPE V {args.vocab_size:,}\n")
    print("| tool | time s | peak RSS MB | vocabulary |\n|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['tool']} | {r['seconds']} | {r['peak_mb']} | {r['vocab']:,} |")


if __name__ == "__main__":
    main()
