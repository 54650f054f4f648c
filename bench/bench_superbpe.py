"""SuperBPE against plain BPE on the shared corpora: training time and memory, tokens at the same V.

    python bench/bench_superbpe.py [--vocab 8000 32000] [--transition 0.9 0.4] [--rounds 1]

The shared corpora (``../shared/corpora/*.txt``, ~9 MB, five languages) are cut into training lines
and held-out lines (every 10th line held out). For each vocabulary size, plain BPE (GPT-2 split)
and SuperBPE at each transition point are trained in a fresh child process each, interleaved
round by round; each child reports its training CPU seconds and peak RSS. Counting is timed apart
(wall clock, as it may use a second process): the
GPT-2 counts serve both models, the stage-2 counts (the paper's split, no cut at spaces) are
SuperBPE's extra pass (done once per corpus: the count cache keeps it). Then the held-out lines are
encoded with each tokenizer: tokens, characters per token, and the change against BPE.

Not a test: it prints a table for the docs (docs/superbpe.md).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"
if not CORPORA.is_dir():
    CORPORA = Path("/work/shared/corpora")


def _counts(path: str, pattern: str) -> tuple[dict[str, int], float]:
    from workbench.tasks.train import count_words, open_sources, resolve_files

    start = time.perf_counter()  # wall clock: counting may use a second process
    counts, _sources = count_words(open_sources(resolve_files([path])), pattern, (), cache=False)
    return dict(counts), time.perf_counter() - start


def _child(model: str, path: str, vocab: int, transition: float, out: mp.Queue) -> None:
    from workbench.core.bpe import BpeTrainer, TrainConfig
    from workbench.core.superbpe import STAGE2_PATTERN, SuperBpeConfig, SuperBpeTrainer

    counts, count_s = _counts(path, "gpt2")
    extra_s = 0.0
    start = time.process_time()
    if model == "bpe":
        trainer = BpeTrainer(counts, TrainConfig(vocab_size=vocab))
    else:
        stage2, extra_s = _counts(path, STAGE2_PATTERN)
        start = time.process_time()
        trainer = SuperBpeTrainer(counts, stage2, SuperBpeConfig(TrainConfig(vocab_size=vocab), transition))
    for _event in trainer.run():
        pass
    train_s = time.process_time() - start
    out.put({"count_s": count_s, "stage2_count_s": extra_s, "train_s": train_s,
             "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
             "tokenizer": trainer.tokenizer()})


def _run(model: str, path: str, vocab: int, transition: float) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(model, path, vocab, transition, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=[8000, 32000])
    parser.add_argument("--transition", type=float, nargs="+", default=[0.9, 0.4])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    from workbench.core.encoder import Encoder

    train_lines, held = [], []
    for path in sorted(CORPORA.glob("*.txt")):
        lines = path.read_text(encoding="utf-8").split("\n")
        train_lines += [line for i, line in enumerate(lines) if i % 10]
        held += [line for i, line in enumerate(lines) if i % 10 == 0 and line.strip()]
    folder = Path(tempfile.mkdtemp(prefix="bench-superbpe-"))
    train = folder / "train.txt"
    train.write_text("\n".join(train_lines) + "\n", encoding="utf-8")
    held_chars = sum(len(line) for line in held)
    print(f"load: {os.getloadavg()[0]:.2f} (1 min) · training text {train.stat().st_size / 1e6:.1f} MB, "
          f"held out {len(held):,} lines, {held_chars:,} characters")
    print(f"{'V':>6} {'model':<16} {'count s':>8} {'stage-2 count s':>15} {'train CPU s':>11} {'× BPE':>6} "
          f"{'peak MB':>8} {'held-out tokens':>15} {'chars/token':>11} {'vs BPE':>7}")
    models = [("bpe", 0.0)] + [("superbpe", t) for t in args.transition]
    for vocab in args.vocab:
        times: dict[tuple[str, float], list[float]] = {m: [] for m in models}
        last: dict[tuple[str, float], dict] = {}
        for _round in range(args.rounds):
            for model in models:  # interleaved: BPE, SuperBPE …, BPE, SuperBPE …
                result = _run(model[0], str(train), vocab, model[1])
                times[model].append(result["train_s"])
                last[model] = result
        base_tokens = None
        for model in models:
            result = last[model]
            encoder = Encoder(result["tokenizer"])
            tokens = sum(len(encoder.encode(line)) for line in held)
            base_tokens = base_tokens or tokens
            train_s = min(times[model])
            label = "BPE" if model[0] == "bpe" else f"SuperBPE t={model[1]:g}"
            print(f"{vocab:>6} {label:<16} {result['count_s']:>8.1f} {result['stage2_count_s']:>15.1f} "
                  f"{train_s:>11.1f} {train_s / min(times[models[0]]):>6.2f} {result['peak_mb']:>8.0f} "
                  f"{tokens:>15,} {held_chars / tokens:>11.3f} {tokens / base_tokens - 1:>+7.1%}")


if __name__ == "__main__":
    main()
