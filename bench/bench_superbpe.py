"""SuperBPE against plain BPE on the shared corpora: training time and memory, tokens at the same V.

    python bench/bench_superbpe.py [--vocab 8000 32000] [--transition 0.9 0.4] [--rounds 3]
                                   [--before OTHER_CHECKOUT]

The shared corpora (``../shared/corpora/*.txt``, ~9 MB, five languages) are cut into training lines
and held-out lines (every 10th line held out). The training text is counted once, up front (wall
clock, as counting may use a second process): the GPT-2 counts serve both models, the stage-2
counts (the paper's split, no cut at spaces) are SuperBPE's extra pass (done once per corpus: the
count cache keeps it). Then for each vocabulary size, plain BPE (GPT-2 split) and SuperBPE at each
transition point are trained, each in a fresh child process that loads the two count tables
(pickled), interleaved round by round (BPE, SuperBPE …, BPE, SuperBPE …); each child reports its
training CPU seconds and its peak RSS (tables loaded, training done; before the held-out text is
encoded), a hash of its merges, and the tokens of the held-out lines with its tokenizer.

``--before DIR``: a second checkout (``git worktree add DIR <commit>``) whose SuperBPE is trained
too, in the same rounds right after this checkout's (plain BPE is this checkout's): its CPU time
and memory beside the current ones, and whether both made the same merges.

The table gives the median over the rounds: CPU seconds, the ratio to plain BPE *of the same round*
(its median), peak MB. The load average is printed each round (2 cores shared: CPU time, not wall
time, and interleaved rounds). Not a test: it prints a table for the docs (docs/superbpe.md).
"""

from __future__ import annotations

import argparse
import json
import os
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
if not CORPORA.is_dir():
    CORPORA = Path("/work/shared/corpora")


def _child(root: str, model: str, vocab: int, transition: float, counts: str, held: str) -> None:
    """Train one model with ``root``'s workbench; print one JSON line."""
    sys.path.insert(0, root)
    import hashlib

    from workbench.core.bpe import BpeTrainer, TrainConfig
    from workbench.core.encoder import Encoder
    from workbench.core.superbpe import SuperBpeConfig, SuperBpeTrainer

    with open(counts, "rb") as f:
        stage1, stage2 = pickle.load(f)
    start = time.process_time()
    trainer: BpeTrainer | SuperBpeTrainer
    if model == "bpe":
        trainer = BpeTrainer(stage1, TrainConfig(vocab_size=vocab))
    else:
        trainer = SuperBpeTrainer(stage1, stage2, SuperBpeConfig(TrainConfig(vocab_size=vocab), transition))
    del stage1, stage2
    for _event in trainer.run():
        pass
    train_s = time.process_time() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tokenizer = trainer.tokenizer()
    encoder = Encoder(tokenizer)
    lines = Path(held).read_text(encoding="utf-8").split("\n")
    tokens = sum(len(encoder.encode(line)) for line in lines if line.strip())
    print(json.dumps({"train_s": train_s, "peak_mb": peak_mb, "tokens": tokens,
                      "merges": hashlib.sha1(repr(tokenizer.merges).encode()).hexdigest()}))


def _run(root: Path, model: str, vocab: int, transition: float, counts: Path, held: Path) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # imports cached, as a user's are
    env["PYTHONPATH"] = str(root)
    out = subprocess.run([sys.executable, __file__, "--child", str(root), model, str(vocab), str(transition),
                          str(counts), str(held)], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        root, model, vocab, transition, counts_file, held_path = sys.argv[2:8]
        _child(root, model, int(vocab), float(transition), counts_file, held_path)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=[8000, 32000])
    parser.add_argument("--transition", type=float, nargs="+", default=[0.9, 0.4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout whose SuperBPE is measured beside this one")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from workbench.core.superbpe import STAGE2_PATTERN
    from workbench.tasks.train import count_words, open_sources, resolve_files

    train_lines: list[str] = []
    held: list[str] = []
    for path in sorted(CORPORA.glob("*.txt")):
        lines = path.read_text(encoding="utf-8").split("\n")
        train_lines += [line for i, line in enumerate(lines) if i % 10]
        held += [line for i, line in enumerate(lines) if i % 10 == 0 and line.strip()]
    folder = Path(tempfile.mkdtemp(prefix="bench-superbpe-"))
    train = folder / "train.txt"
    train.write_text("\n".join(train_lines) + "\n", encoding="utf-8")
    held_file = folder / "held.txt"
    held_file.write_text("\n".join(held) + "\n", encoding="utf-8")
    held_chars = sum(len(line) for line in held)
    start = time.perf_counter()
    stage1, _ = count_words(open_sources(resolve_files([str(train)])), "gpt2", (), cache=False)
    count_s = time.perf_counter() - start
    start = time.perf_counter()
    stage2, _ = count_words(open_sources(resolve_files([str(train)])), STAGE2_PATTERN, (), cache=False)
    stage2_s = time.perf_counter() - start
    counts = folder / "counts.pickle"
    counts.write_bytes(pickle.dumps((dict(stage1), dict(stage2))))
    print(f"load {os.getloadavg()[0]:.2f} (1 min) · training text {train.stat().st_size / 1e6:.1f} MB, held out "
          f"{len(held):,} lines, {held_chars:,} characters · counted (wall) GPT-2 split {count_s:.1f} s "
          f"({len(stage1):,} distinct), stage-2 split {stage2_s:.1f} s ({len(stage2):,} distinct)")
    if args.before:
        print(f"before = {args.before.resolve()} ({_describe(args.before)}); after = {ROOT} ({_describe(ROOT)})")
    models = [("bpe", 0.0, ROOT)] + [("superbpe", t, ROOT) for t in args.transition]
    if args.before:
        models = [("bpe", 0.0, ROOT)] + [m for t in args.transition
                                         for m in (("superbpe", t, ROOT), ("superbpe", t, args.before))]
    header = (f"{'V':>6} {'model':<24} {'train CPU s':>11} {'× BPE':>6} {'rounds (× BPE)':<20} {'peak MB':>8} "
              f"{'held-out tokens':>15} {'chars/token':>11} {'vs BPE':>7}")
    for vocab in args.vocab:
        results: dict[tuple, list[dict]] = {m: [] for m in models}
        for r in range(args.rounds):
            for model in models:  # interleaved: BPE, SuperBPE …, BPE, SuperBPE …
                results[model].append(_run(model[2], model[0], vocab, model[1], counts, held_file))
            print(f"V {vocab:,} round {r + 1}: load {os.getloadavg()[0]:.2f} · " + " · ".join(
                f"{_label(m, args.before)} {results[m][-1]['train_s']:.2f} s" for m in models), flush=True)
        print(header)
        bpe = results[models[0]]
        for model in models:
            rows = results[model]
            ratios = [row["train_s"] / base["train_s"] for row, base in zip(rows, bpe)]
            tokens = rows[-1]["tokens"]
            same = ""
            if args.before and model[2] == args.before:
                now = results[("superbpe", model[1], ROOT)][-1]["merges"]
                same = " same merges" if rows[-1]["merges"] == now else " OTHER MERGES"
            print(f"{vocab:>6} {_label(model, args.before):<24} {statistics.median(r['train_s'] for r in rows):>11.2f} "
                  f"{statistics.median(ratios):>6.2f} {' '.join(f'{x:.2f}' for x in ratios):<20} "
                  f"{statistics.median(r['peak_mb'] for r in rows):>8.0f} {tokens:>15,} {held_chars / tokens:>11.3f} "
                  f"{tokens / bpe[-1]['tokens'] - 1:>+7.1%}{same}")


def _label(model: tuple, before: Path | None) -> str:
    if model[0] == "bpe":
        return "BPE"
    tail = (" before" if model[2] == before else " after") if before else ""
    return f"SuperBPE t={model[1]:g}{tail}"


def _describe(root: Path) -> str:
    """The checkout's commit, and whether its work tree has changes."""
    def git(*cmd: str) -> str:
        return subprocess.run(["git", *cmd], cwd=root, capture_output=True, text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + (" + changes" if git("status", "--porcelain", "--untracked-files=no") else "")


if __name__ == "__main__":
    main()
