"""How much the project file costs: writing merges during training, reading merge-table pages.

    python bench/bench_store.py [--merges 100000] [--words 150000]

1. Trains byte-level BPE (``workbench.core.bpe``) on a synthetic word table to ``--merges`` merges,
   alone and while writing every event through a ``RunWriter``, each in a fresh child process
   (in one process the second training inherits the first one's heap and GC work, which once
   inflated the "overhead" six-fold), alternating ``--repeat`` times; prints the best time of each
   and the overhead. It also times the writer alone on recorded events (the store's own cost).
   Falls back to synthetic events when the trainer is not importable.
2. Reopens the project and times ``open`` plus pages of 200 rows: first, middle, last, sorted by
   frequency (descending) deep in the table, a text filter and a length filter.
Targets (issue): writing adds < 5 % to training; open + any page well under a second.
"""

from __future__ import annotations

import argparse
import gc
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workbench.core.model import MergeEvent, base_vocab
from workbench.store import MergeFilter, ProjectStore


def word_table(n: int, seed: int = 1) -> dict[str, int]:
    rng = random.Random(seed)
    letters = string.ascii_lowercase
    words: dict[str, int] = {}
    while len(words) < n:
        w = "".join(rng.choice(letters) for _ in range(rng.randint(3, 12)))
        words[w] = words.get(w, 0) + rng.randint(1, 50)
    return words


def train_events(n_merges: int, n_words: int):
    """(events, pieces, vocab, seconds) from the real trainer, or synthetic ones."""
    try:
        from workbench.core.bpe import BpeTrainer, TrainConfig
    except ImportError:
        BpeTrainer = None
    if BpeTrainer is None:
        vocab = base_vocab("bytes")
        events, pieces = [], []
        for i in range(n_merges):
            a, b = random.randrange(len(vocab)), random.randrange(len(vocab))
            vocab.append((vocab[a] + vocab[b])[:16])
            events.append(MergeEvent(i + 1, a, b, len(vocab) - 1, n_merges - i, len(vocab), 10**6))
            pieces.append(vocab[-1])
        return events, pieces, base_vocab("bytes"), None, None
    words = word_table(n_words)
    cfg = TrainConfig(units="bytes", merges=n_merges, pretokenizer="none")
    trainer = BpeTrainer(words, cfg)
    initial = list(trainer.vocab)
    t = time.perf_counter()
    events = list(trainer.run())
    alone = time.perf_counter() - t
    pieces = [trainer.vocab[e.new_id] for e in events]
    return events, pieces, initial, alone, (words, cfg)


def child(mode: str, n_merges: int, n_words: int, path: str) -> float:
    """Time one training in this (fresh) process: ``alone`` or with the ``store`` writing."""
    from workbench.core.bpe import BpeTrainer, TrainConfig

    cfg = TrainConfig(units="bytes", merges=n_merges, pretokenizer="none")
    trainer = BpeTrainer(word_table(n_words), cfg)
    gc.disable()  # as workbench.training does around the merge loop, in both modes
    if mode == "alone":
        t = time.perf_counter()
        for _ in trainer.run():
            pass
        return time.perf_counter() - t
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("bench", cfg.settings(), [], trainer.vocab,
                               ["base"] * len(trainer.vocab))
        t = time.perf_counter()
        with store.run_writer(run) as w:
            for e in trainer.run():
                w.add(e, trainer.vocab[e.new_id])
        store.finish_run(run, "finished")
        return time.perf_counter() - t


def timed_children(args, tmp: Path) -> dict[str, float]:
    best = {"alone": float("inf"), "store": float("inf")}
    for i in range(args.repeat):
        for mode in ("alone", "store"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--merges", str(args.merges),
                 "--words", str(args.words), "--path", str(tmp / f"child{i}.tokproj")],
                check=True, capture_output=True, text=True).stdout
            best[mode] = min(best[mode], float(out.split()[-1]))
            print(f"  training {mode:<5} (child {i + 1}): {float(out.split()[-1]):.2f} s")
    return best


def write_only(path: Path, events, pieces, initial) -> tuple[float, int]:
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("bench", {"units": "bytes"}, [], initial, ["base"] * len(initial))
        t = time.perf_counter()
        # Commit every 1000 merges, as the 100 ms timer does for a trainer at ~100 µs per merge.
        with store.run_writer(run, interval=float("inf")) as w:
            for i, (e, p) in enumerate(zip(events, pieces), 1):
                w.add(e, p)
                if i % 1000 == 0:
                    w.flush()
        store.finish_run(run, "finished")
        return time.perf_counter() - t, w.batches


def read_pages(path: Path) -> None:
    t = time.perf_counter()
    store = ProjectStore.open(path)
    opened = time.perf_counter() - t
    run = store.latest_run_id()
    n = store.merge_count(run)
    print(f"open: {opened * 1000:.1f} ms  ({n} merges, {path.stat().st_size / 1e6:.1f} MB)")
    probes = [
        ("first page by rank", dict(offset=0)),
        ("middle page by rank", dict(offset=n // 2)),
        ("last page by rank", dict(offset=max(0, n - 200))),
        ("deep page, frequency desc", dict(offset=n * 3 // 4, order_by="frequency", descending=True)),
        ("deep page, length desc", dict(offset=n * 3 // 4, order_by="length", descending=True)),
        ("deep page, by piece", dict(offset=n // 2, order_by="piece")),
        ("text filter 'ing' + count", dict(flt=MergeFilter(text="ing"))),
        ("length 4..6 filter + count, last page", dict(flt=MergeFilter(min_length=4, max_length=6))),
    ]
    worst = 0.0
    for label, kw in probes:
        t = time.perf_counter()
        flt = kw.get("flt")
        total = store.merge_count(run, flt) if flt else n
        if flt and "last" in label:
            kw = dict(kw, offset=max(0, total - 200))
        rows = store.merges(run, limit=200, **kw)
        dt = time.perf_counter() - t
        worst = max(worst, dt)
        print(f"  {label:<40} {dt * 1000:7.1f} ms  ({len(rows)} rows of {total})")
    print(f"worst page: {worst * 1000:.1f} ms; open + worst page: {(opened + worst) * 1000:.1f} ms")
    store.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--merges", type=int, default=100_000)
    ap.add_argument("--words", type=int, default=150_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", choices=("alone", "store"), help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(child(args.child, args.merges, args.words, args.path))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        events, pieces, initial, alone, _job = train_events(args.merges, args.words)
        print(f"{len(events)} merge events")
        w_time, batches = write_only(tmp / "w.tokproj", events, pieces, initial)
        print(f"writer alone: {w_time:.3f} s for {len(events)} merges in {batches} transactions "
              f"({w_time / max(1, len(events)) * 1e6:.1f} µs per merge)")
        if alone is not None:
            best = timed_children(args, tmp)
            a, s = best["alone"], best["store"]
            print(f"training alone: {a:.2f} s; training + store: {s:.2f} s (best of "
                  f"{args.repeat}): overhead {100 * (s - a) / a:+.1f} %; writer alone is "
                  f"{100 * w_time / a:.1f} % of training time")
        read_pages(tmp / "w.tokproj")
    return 0


if __name__ == "__main__":
    sys.exit(main())
