"""Byte-level BPE at vocabulary 32,768 on a large generated ``.jsonl.zst`` corpus: the workbench
against Hugging Face ``tokenizers`` (``train_from_iterator`` on the same lines), one thread and two
(issue 22).

    python bench/bench_scale.py [--mb 1024] [--vocab-size 32768] [--keep DIR] [--only ours|tok1|tok2] [--json]

**The corpus.** The shared corpora (de, en ×2, ru, zh: 8.5 MB, 205,000 non-blank lines, 945,000
``\\w+`` words, 148,000 of them distinct) repeated until ``--mb`` MiB of UTF-8 text are written, as
shards of 32 MiB of text each, ``shard-NNNNN.jsonl.zst``, one record ``{"text": line}`` per line
(zstandard level 3). Copy *k* has its lines in another order (shuffled with seed *k*) and, for
*k* ≥ 1, brings new words at the rate **Heaps' law fitted on the shared corpora themselves**
predicts: distinct words after *c* copies ``V(c) = V₁·c^β`` with ``V₁`` the corpora's own distinct
words and β the slope of log V against log N over the upper half of doubling prefixes of the
shuffled corpora (β ≈ 0.72; the same fit the pre-flight estimate uses), so copy *k* adds
``V₁·((k+1)^β − k^β)`` new words (96,000 for the second copy, 28,000 for the 112th). A new word is an
existing word of the copy with two letters (one in a Han run) replaced by random letters of the same
script and case — a typo or an unseen name, a hapax like most of a large corpus's new words. The
frequent words, and so the Zipf head, stay the original's. This replaces the earlier variation
(every line of every copy got a new word: distinct pre-tokens grew linearly, ~23 M at 1 GB, which no
real corpus does). β fitted on 8.5 MB is if anything high (Heaps' slope falls with corpus size), so
the tail is generous to neither tool. The generator prints the distinct ``\\w+`` words it aimed at;
the workbench's run reports the distinct pre-tokens it counted.

**The runs**, each a fresh process, one after the other (ours, tokenizers 1 thread, tokenizers 2
threads), each once — on a shared machine the load average before and after each run is printed:

- ``workbench train SHARDS --vocab-size V --no-count-cache`` (byte-level BPE, GPT-2 pre-tokenizer,
  lines as sequences, every other setting its default; the shards read with the default loader
  options: JSONL field ``text``);
- ``tokenizers``: ``Tokenizer(BPE())`` with the ``ByteLevel`` pre-tokenizer (GPT-2 regex, no prefix
  space), ``BpeTrainer(vocab_size=V, initial_alphabet=ByteLevel.alphabet())``, fed every record's
  text by ``train_from_iterator`` — the shards decompressed (``zstandard``) and parsed (``json``) in
  its own process — with ``RAYON_NUM_THREADS=1`` and ``=2``.

Wall time from start to exit; CPU time (user + system) of the process and every descendant it
waited for (``RUSAGE_CHILDREN``); peak resident memory = peak of the summed RSS of the process tree,
polled every 200 ms.

Not a test: a benchmark. ``bench/bench_dask_scale.py`` uses :func:`generate_shards` for its 10 GB;
``bench/bench_bpe_train.py`` uses :func:`generate`, the same lines as one ``.txt``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
WORD = re.compile(r"\w+")
SHARD_BYTES = 32 * 2**20


def shared_lines() -> list[str]:
    return [line for p in sorted(CORPORA.glob("*.txt")) for line in p.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def fit_heaps(lines: list[str]) -> tuple[int, float, int]:
    """``(V₁, β, N)``: distinct and total ``\\w+`` words of ``lines`` and Heaps' slope β, fitted by least
    squares on log V / log N over the upper half of doubling prefixes of the lines shuffled with seed 0."""
    order = lines[:]
    random.Random(0).shuffle(order)
    seen: set[str] = set()
    n, points, mark = 0, [], 1000
    for line in order:
        for w in WORD.findall(line):
            n += 1
            seen.add(w)
            if n >= mark:
                points.append((math.log(n), math.log(len(seen))))
                mark *= 2
    points.append((math.log(n), math.log(len(seen))))
    upper = points[len(points) // 2:]
    mx = sum(x for x, _ in upper) / len(upper)
    my = sum(y for _, y in upper) / len(upper)
    beta = sum((x - mx) * (y - my) for x, y in upper) / sum((x - mx) ** 2 for x, _ in upper)
    return len(seen), beta, n


def _pool(c: str) -> tuple[int, int] | None:
    """The code-point range a replacement letter for ``c`` is drawn from (same script and case)."""
    o = ord(c)
    if 0x4E00 <= o <= 0x9FA5:
        return 0x4E00, 0x9FA5
    if 0x430 <= o <= 0x44F:
        return 0x430, 0x44F
    if 0x410 <= o <= 0x42F:
        return 0x410, 0x42F
    if c.isalpha() and o < 0x250:
        return (0x61, 0x7A) if c.islower() else (0x41, 0x5A)
    return None


def mutate(line: str, rng: random.Random) -> str:
    """``line`` with one word made new: two of its letters (one if Han) replaced (see the docstring)."""
    words = [m for m in WORD.finditer(line) if len(m.group()) >= 3] or list(WORD.finditer(line))
    if not words:
        return line
    m = rng.choice(words)
    chars = list(m.group())
    slots = [i for i, c in enumerate(chars) if _pool(c)]
    if not slots:
        return line
    han = any(0x4E00 <= ord(chars[i]) <= 0x9FA5 for i in slots)
    for i in rng.sample(slots, 1 if han or len(slots) < 2 else 2):
        lo, hi = _pool(chars[i])  # type: ignore[misc]
        chars[i] = chr(rng.randint(lo, hi))
    return line[: m.start()] + "".join(chars) + line[m.end():]


def copy_lines(lines: list[str], v1: int, beta: float, k: int) -> Iterator[tuple[int, str | None]]:
    """Copy ``k`` of ``lines``: ``(j, None)`` for line ``j`` unchanged, ``(j, text)`` for line ``j`` varied."""
    rng = random.Random(k)
    order = list(range(len(lines)))
    rng.shuffle(order)
    new = 0 if k == 0 else round(v1 * ((k + 1) ** beta - k ** beta))
    varied = set(rng.sample(range(len(order)), min(new, len(order))))
    for i, j in enumerate(order):
        yield (j, mutate(lines[j], rng)) if i in varied else (j, None)


def generate(out: Path, megabytes: float) -> int:
    """The same corpus as one UTF-8 ``.txt`` (a line per record), for ``bench_bpe_train.py``; its size."""
    lines = shared_lines()
    v1, beta, _ = fit_heaps(lines)
    target = int(megabytes * 2**20)
    written, k = 0, 0
    with open(out, "w", encoding="utf-8", newline="\n") as handle:
        while written < target:
            for j, text in copy_lines(lines, v1, beta, k):
                line = (lines[j] if text is None else text) + "\n"
                handle.write(line)
                written += len(line.encode("utf-8"))
                if written >= target:
                    break
            k += 1
    return written


def generate_shards(out_dir: Path, megabytes: float, *, shard_bytes: int = SHARD_BYTES,
                    first_shard: int = 0, first_copy: int = 0, log=print) -> dict:
    """Write the corpus (see the module docstring) as ``.jsonl.zst`` shards into ``out_dir``;
    ``first_copy`` continues an earlier corpus's copies (so ten 1 GB parts are ten different GB)."""
    import zstandard

    lines = shared_lines()
    v1, beta, n_words = fit_heaps(lines)
    # Each line's record and text size, encoded once: a copy is mostly these in another order.
    encoded = [(json.dumps({"text": line}, ensure_ascii=False) + "\n").encode("utf-8") for line in lines]
    sizes = [len(line.encode("utf-8")) + 1 for line in lines]
    target = int(megabytes * 2**20)
    out_dir.mkdir(parents=True, exist_ok=True)
    cctx = zstandard.ZstdCompressor(level=3)
    written = records = 0
    shard_no = first_shard
    shards: list[Path] = []
    handle = writer = None
    in_shard = 0
    k = first_copy
    t0 = time.perf_counter()
    pending: list[bytes] = []
    while written < target:
        for j, text in copy_lines(lines, v1, beta, k):
            if text is not None:
                record = (json.dumps({"text": text}, ensure_ascii=False) + "\n").encode("utf-8")
                size = len(text.encode("utf-8")) + 1
            else:
                record, size = encoded[j], sizes[j]
            if writer is None or in_shard >= shard_bytes:
                if writer is not None:
                    writer.write(b"".join(pending))
                    writer.close()
                    handle.close()  # type: ignore[union-attr]
                pending = []
                path = out_dir / f"shard-{shard_no:05d}.jsonl.zst"
                shard_no += 1
                shards.append(path)
                handle = open(path, "wb")
                writer = cctx.stream_writer(handle)
                in_shard = 0
            pending.append(record)
            written += size
            in_shard += size
            records += 1
            if written >= target:
                break
        k += 1
        if (k - first_copy) % 20 == 0:
            log(f"  copy {k}: {written / 2**20:.0f} MiB, {time.perf_counter() - t0:.0f} s")
    if writer is not None:
        writer.write(b"".join(pending))
        writer.close()
        handle.close()  # type: ignore[union-attr]
    aimed = round(v1 * (k ** beta - first_copy ** beta))  # new to this corpus, if the copies before were not in it
    if first_copy:
        aimed += v1  # copy first_copy's own words were in the earlier part too: count its vocabulary once
    return {"text_bytes": written, "records": records, "copies": k - first_copy, "first_copy": first_copy,
            "shards": [str(p) for p in shards], "zst_bytes": sum(p.stat().st_size for p in shards),
            "heaps": {"V1": v1, "beta": round(beta, 4), "N1": n_words}, "distinct_words_aimed": aimed}


TOKENIZERS_SCRIPT = """
import io, json, sys
import zstandard
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
trainer = trainers.BpeTrainer(vocab_size=int(sys.argv[1]), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False)
def texts():
    for path in sys.argv[2:]:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as z:
            for line in io.TextIOWrapper(z, encoding="utf-8"):
                if line.strip():
                    yield json.loads(line)["text"]
tok.train_from_iterator(texts(), trainer=trainer)
print(tok.get_vocab_size())
"""


def run_measured(cmd: list[str], env: dict | None = None) -> dict:
    """Wall s, CPU s (the tree's, ``RUSAGE_CHILDREN``), peak MB of the tree's summed RSS, load, stdout."""
    import psutil

    load_before = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=ROOT)
    ps = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            rss = ps.memory_info().rss
            for c in ps.children(recursive=True):
                try:
                    rss += c.memory_info().rss
                except psutil.Error:
                    pass
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.2)
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {err[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": round(seconds, 1), "cpu_s": round(cpu, 1), "peak_mb": round(peak / 2**20, 1),
            "load_before": [round(x, 1) for x in load_before],
            "load_after": [round(x, 1) for x in os.getloadavg()], "stdout": out}


def run_ours(shards: list[str], vocab: int, project: Path) -> dict:
    r = run_measured([sys.executable, "-m", "workbench", "train", *shards, "--vocab-size", str(vocab),
                      "--project", str(project), "--no-count-cache", "--progress", "none", "--estimate", "--json"])
    result = json.loads(r.pop("stdout"))
    runs = subprocess.run([sys.executable, "-m", "workbench", "runs", str(project), "--json"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    run = json.loads(runs.stdout)[-1]
    r.update(tool="workbench train (count: 2 processes, train: 1)", vocab=result.get("vocab_size"),
             distinct_pretokens=run["settings"].get("distinct_pretokens"), timings=run["timings"],
             estimate_ratio=run["estimate_ratio"])
    return r


def run_tokenizers(shards: list[str], vocab: int, threads: int) -> dict:
    r = run_measured([sys.executable, "-c", TOKENIZERS_SCRIPT, str(vocab), *shards],
                     env={"RAYON_NUM_THREADS": str(threads)})
    r.update(tool=f"tokenizers train_from_iterator, {threads} thread{'s' if threads > 1 else ''}",
             vocab=int(r.pop("stdout").split()[-1]))
    return r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=1024.0, help="corpus size in MiB of text (default 1024)")
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--keep", help="write the shards into this folder (and reuse them if it has them)")
    parser.add_argument("--only", choices=["ours", "tok1", "tok2"], action="append",
                        help="run only these sides (repeatable; default all three, in this order)")
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp) / "corpus"
        info_path = folder / "corpus.json"
        if info_path.exists():
            info = json.loads(info_path.read_text())
        else:
            t0 = time.perf_counter()
            info = generate_shards(folder, args.mb, log=lambda s: print(s, file=sys.stderr, flush=True))
            info["generate_s"] = round(time.perf_counter() - t0, 1)
            info_path.write_text(json.dumps(info))
        print(f"corpus: {info['text_bytes'] / 2**20:.0f} MiB of text in {len(info['shards'])} shards "
              f"({info['zst_bytes'] / 2**20:.0f} MiB .jsonl.zst), {info['records']:,} records, "
              f"{info['copies']} copies; Heaps V1={info['heaps']['V1']:,} beta={info['heaps']['beta']}; "
              f"distinct words aimed at ~{info['distinct_words_aimed']:,}", file=sys.stderr, flush=True)
        if args.generate_only:
            return
        rows = []
        for side in args.only or ["ours", "tok1", "tok2"]:
            if side == "ours":
                row = run_ours(info["shards"], args.vocab_size, Path(tmp) / f"scale-{time.time_ns()}.tokproj")
            else:
                row = run_tokenizers(info["shards"], args.vocab_size, 1 if side == "tok1" else 2)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    if args.json:
        print(json.dumps({"corpus": {k: v for k, v in info.items() if k != "shards"}, "rows": rows}, indent=1))
        return
    print(f"\nBPE V {args.vocab_size:,}\n")
    print("| tool | wall s | CPU s | peak RSS MB | vocabulary | load before → after |\n|---|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['tool']} | {r['seconds']} | {r['cpu_s']} | {r['peak_mb']} | {r['vocab']:,} | "
              f"{r['load_before'][0]} → {r['load_after'][0]} |")


if __name__ == "__main__":
    main()
