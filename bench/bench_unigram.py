"""Unigram benchmark: our trainer against ``sentencepiece`` (one thread), in one run, as ratios.

    python bench/bench_unigram.py [--vocab 8000] [--rounds 2] [--profile]

Corpus: the five files of ``../shared/corpora``, read line by line (each line a sequence, as
``sentencepiece`` reads a text file); every 10th line is held out. Both trainers see the same
training lines with the same settings (identity normalization, no whitespace clean-up,
character coverage 1.0, max piece length 16). Reported: training time of each and their ratio
(target ≤ 3), held-out token counts of each model and their ratio (target within 2 %), and the
share of pieces both vocabularies hold, and how many held-out lines get different ids from
sentencepiece on our exported ``.model`` and from our reader on sentencepiece's ``.model`` (both
should be 0). ``--profile`` prints where our trainer spends its time.
Not a test: timings never decide pass/fail.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"

from workbench.core.unigram import (
    UnigramConfig,
    UnigramTrainer,
    count_spm_words,
    model_of,
)
from workbench.formats.spm_model import read_spm_model, render_spm_model


def split_corpus() -> tuple[list[str], list[str]]:
    train, held = [], []
    for path in sorted(CORPORA.glob("*.txt")):
        if path.name == "SOURCES.md":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").split("\n")):
            if line:
                (held if i % 10 == 0 else train).append(line)
    return train, held


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of both trainers (default 2)")
    args = parser.parse_args()
    import sentencepiece as spm

    train, held = split_corpus()
    work = Path(tempfile.mkdtemp(prefix="bench-unigram-"))
    (work / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")

    def train_spm() -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        spm.SentencePieceTrainer.train(
            input=str(work / "train.txt"), model_prefix=str(work / "ref"), vocab_size=args.vocab, num_threads=1,
            model_type="unigram", normalization_rule_name="identity", remove_extra_whitespaces=False,
            character_coverage=1.0, max_sentencepiece_length=16, minloglevel=2)
        return time.perf_counter() - t0, time.process_time() - c0

    def train_ours():
        profiler = cProfile.Profile() if args.profile else None
        t0, c0 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        counts = count_spm_words(train)
        trainer = UnigramTrainer(counts, UnigramConfig(vocab_size=args.vocab))
        steps = sum(1 for _ in trainer.run())
        tokenizer = trainer.tokenizer()
        if profiler:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(15)
        return time.perf_counter() - t0, time.process_time() - c0, trainer, steps, tokenizer

    # Interleaved rounds (sentencepiece, ours, sentencepiece, ours …): on a shared machine the load
    # changes during a run, so each round's ratio is reported, and the best time of each side (the
    # least disturbed) gives the headline ratio; CPU time beside wall time.
    rounds = []
    for _ in range(args.rounds):
        spm_wall, spm_cpu = train_spm()
        our_wall, our_cpu, trainer, steps, tokenizer = train_ours()
        rounds.append({"spm_s": round(spm_wall, 2), "ours_s": round(our_wall, 2), "ratio": round(our_wall / spm_wall, 2),
                       "spm_cpu_s": round(spm_cpu, 2), "ours_cpu_s": round(our_cpu, 2),
                       "cpu_ratio": round(our_cpu / spm_cpu, 2), "loadavg_1min": os.getloadavg()[0]})
    spm_seconds = min(r["spm_s"] for r in rounds)
    our_seconds = min(r["ours_s"] for r in rounds)

    sp = spm.SentencePieceProcessor(model_file=str(work / "ref.model"))
    model = model_of(tokenizer)
    ours = sum(len(model.encode(line)) for line in held)
    theirs = sum(len(sp.encode(line)) for line in held)
    # Exactness on real text: sentencepiece on our .model, and our reader on sentencepiece's.
    (work / "ours.model").write_bytes(render_spm_model(tokenizer)[0])
    sp_ours = spm.SentencePieceProcessor(model_file=str(work / "ours.model"))
    ids_differ_ours = sum(model.encode(line) != sp_ours.encode(line) for line in held)
    theirs_read = model_of(read_spm_model(work / "ref.model")[0])
    ids_differ_theirs = sum(theirs_read.encode(line) != sp.encode(line) for line in held)
    mine = {p.decode("utf-8") for p in tokenizer.vocab}
    ref = {sp.id_to_piece(i) for i in range(sp.get_piece_size())}
    result = {
        "vocab": args.vocab, "train_lines": len(train), "held_lines": len(held), "steps": steps,
        "seed_pieces": trainer.initial_size,
        "spm_train_s": round(spm_seconds, 2), "ours_train_s": round(our_seconds, 2),
        "train_time_ratio": round(our_seconds / spm_seconds, 2),
        "train_cpu_ratio_best": round(min(r["ours_cpu_s"] for r in rounds) / min(r["spm_cpu_s"] for r in rounds), 2),
        "rounds": rounds,
        "held_tokens_spm": theirs, "held_tokens_ours": ours, "held_token_ratio": round(ours / theirs, 4),
        "shared_pieces": round(len(mine & ref) / len(ref), 3),
        "held_lines_ids_differ_spm_on_our_model": ids_differ_ours,
        "held_lines_ids_differ_our_reader_on_spm_model": ids_differ_theirs,
        "loadavg_1min": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
