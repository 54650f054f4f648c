"""WordPiece training benchmark: ours against ``tokenizers``' WordPieceTrainer, in one run, as ratios.

    python bench/bench_wordpiece.py [--vocab 8000 30000] [--rounds 3] [--before DIR] [--profile]

Corpus: the shared corpora (``../shared/corpora/*.txt``, 8.9 MB) concatenated and fed as lines to
both sides (``train_from_iterator`` over the lines, as ``train(files)`` reads them), BERT cased
normalizer and pre-tokenizer. Anchor: ``tokenizers`` with one thread (``RAYON_NUM_THREADS=1``),
timed from the lines to the trained vocabulary (its counting included). Ours: counting pre-tokens
(``count_pretokens``) plus the trainer, with the ``frequency`` score (the same algorithm as the
anchor — the vocabulary is checked identical, replaying its ``##x`` order) and the ``likelihood``
score; and the textbook loop timed on its first merges and extrapolated (first round only). Each
measurement runs in its own process; times are CPU seconds (``time.process_time``) of the timed
part, and each child's peak RSS is printed too. Rounds are interleaved (anchor, ours, before …) and
medians reported as ratios to the anchor of the same run, with the load average. ``--before DIR``
measures our side again with the package of ``DIR`` (a checkout of an earlier commit). Not a test:
timings never decide pass/fail. ``--profile`` prints where our training time goes (cProfile, top
functions). Whole-process ratios (imports, reading, the store): ``bench_families.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def lines() -> list[str]:
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*.txt")))
    return text.split("\n")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_hf(vocab: int) -> dict:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    data = lines()
    t0 = time.process_time()
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(data, trainer)
    seconds = time.process_time() - t0
    pieces = [p for p, _ in sorted(tok.get_vocab().items(), key=lambda item: item[1])]
    return {"seconds": seconds, "vocab": len(pieces), "pieces": pieces, "peak_mb": peak_mb()}


def _counts():
    from workbench.core.count import chunks_for, count_pretokens

    text = "\n".join(lines())
    return count_pretokens(chunks_for("bert", [text]), pretokenizer="bert", normalizer=("bert",))


def measure_ours(vocab: int, score: str, replay: list[str] | None = None) -> dict:
    from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer

    t0 = time.process_time()
    counts = _counts()
    t1 = time.process_time()
    config = WordPieceConfig(vocab_size=vocab, score=score)  # type: ignore[arg-type]
    if replay is not None:
        probe = WordPieceTrainer(counts, config)
        replay = replay[len(SPECIALS) + probe.alphabet_size : probe.initial_size]
    t1b = time.process_time()
    trainer = WordPieceTrainer(counts, config, continuation_order=replay)
    gc.disable()  # as the BPE pipeline does around the merge loop: millions of small objects, no cycles
    merges = sum(1 for _ in trainer.run())
    gc.enable()
    t2 = time.process_time()
    return {"seconds": (t1 - t0) + (t2 - t1b), "count_s": t1 - t0, "train_s": t2 - t1b, "merges": merges,
            "vocab": len(trainer.pieces), "pieces": trainer.pieces, "peak_mb": peak_mb()}


def measure_textbook(vocab: int, score: str, first: int = 5) -> dict:
    from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer
    from workbench.core.wordpiece_reference import train_reference

    counts = _counts()
    config = WordPieceConfig(merges=first, score=score)  # type: ignore[arg-type]
    t0 = time.process_time()
    train_reference(counts, config)
    per_merge = (time.process_time() - t0) / first
    merges = vocab - WordPieceTrainer(counts, config).initial_size
    return {"seconds": per_merge * merges, "per_merge_s": per_merge, "extrapolated_from": first, "merges": merges}


def profile(vocab: int, score: str) -> None:
    import cProfile
    import pstats

    from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer

    counts = _counts()
    profiler = cProfile.Profile()
    profiler.enable()
    trainer = WordPieceTrainer(counts, WordPieceConfig(vocab_size=vocab, score=score))  # type: ignore[arg-type]
    for _ in trainer.run():
        pass
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(8)


def run_child(*args: str, root: Path = ROOT) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run([sys.executable, __file__, "--child", *args], env=env, capture_output=True, text=True,
                         check=False, cwd=root)
    if out.returncode != 0:
        raise SystemExit(f"{args} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, nargs="+", default=[8000, 30000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a checkout whose workbench package is measured too")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, vocab, *rest = args.child
        if kind == "hf":
            print(json.dumps(measure_hf(int(vocab))))
        elif kind == "ours":
            replay = json.loads(Path(rest[1]).read_text("utf-8")) if len(rest) > 1 else None
            print(json.dumps(measure_ours(int(vocab), rest[0], replay)))
        else:
            print(json.dumps(measure_textbook(int(vocab), rest[0])))
        return
    if args.profile:
        for vocab in args.vocab:
            for score in ("frequency", "likelihood"):
                print(f"\n== profile: {score}, vocab {vocab} ==")
                profile(vocab, score)
        return
    import tempfile

    size = sum(p.stat().st_size for p in CORPORA.glob("*.txt")) / 1e6
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; corpora {size:.1f} MB; "
          f"tokenizers with RAYON_NUM_THREADS=1; load {os.getloadavg()}")
    ours_roots = [("ours", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    for vocab in args.vocab:
        rows: dict[str, list[dict]] = {}
        loads: list[float] = []
        same = True
        book = None
        for round_ in range(args.rounds):
            hf = run_child("hf", str(vocab))
            rows.setdefault("hf", []).append(hf)
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
                json.dump(hf["pieces"], handle)
            for name, root in ours_roots:
                freq = run_child("ours", str(vocab), "frequency", handle.name, root=root)
                same = same and freq["pieces"] == hf["pieces"]
                rows.setdefault(f"{name} frequency", []).append(freq)
                rows.setdefault(f"{name} likelihood", []).append(
                    run_child("ours", str(vocab), "likelihood", root=root))
            os.unlink(handle.name)
            if round_ == 0:
                book = run_child("textbook", str(vocab), "likelihood")
            loads.append(os.getloadavg()[0])
        med = {name: {k: statistics.median(r[k] for r in rs) for k in ("seconds", "peak_mb", "count_s", "train_s")
                      if k in rs[0]} for name, rs in rows.items()}
        anchor = med["hf"]["seconds"]
        print(f"\n-- vocab {vocab}: CPU seconds, medians of {args.rounds} interleaved rounds; "
              f"load after each round: {', '.join(f'{x:.1f}' for x in loads)} --")
        print(f"tokenizers WordPieceTrainer   {anchor:7.2f} s  (1.00×)  peak {med['hf']['peak_mb']:.0f} MB   rounds: "
              + ", ".join(f"{r['seconds']:.2f}" for r in rows["hf"]))
        for name, m in med.items():
            if name == "hf":
                continue
            print(f"{name:<29} {m['seconds']:7.2f} s  ({m['seconds'] / anchor:.2f}×)  "
                  f"[count {m['count_s']:.2f} s + train {m['train_s']:.2f} s, {rows[name][0]['merges']} merges]  "
                  f"peak {m['peak_mb']:.0f} MB   rounds: " + ", ".join(f"{r['seconds']:.2f}" for r in rows[name]))
        if book is not None:
            print(f"textbook loop (likelihood)    {book['seconds']:7.0f} s  ({book['seconds'] / anchor:.0f}×, "
                  f"{book['per_merge_s']:.2f} s/merge × {book['merges']}, from {book['extrapolated_from']} merges)")
        print(f"frequency vocabulary identical to tokenizers' (replaying its ##x order), every round: {same}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
