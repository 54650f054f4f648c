"""How much the project file costs: writing merges during training, reading merge-table pages.

    python bench/bench_store.py [--merges 100000] [--words 150000] [--repeat 5] [--no-thread]

1. Trains byte-level BPE (``workbench.core.bpe``) on a synthetic word table to ``--merges`` merges,
   alone, while the ``RunWriter`` (writer *process*) stores every merge, and while a writer
   *thread* does (:class:`ThreadWriter`: the design of commit cc12da1 — one JSON insert per
   table, SQLite parsing with the GIL released — rebuilt on today's schema and TrainLog, for
   comparison only). Each is the loop of ``workbench.tasks.train`` (the TrainLog handed over every
   100 ms), each in a fresh child process (in one process the second training inherits the first
   one's heap and GC work, which once inflated the "overhead" six-fold), the three modes back to
   back in rotating order ``--repeat`` times; prints each writer's overhead as the median of the
   rounds' ratios, and from medians and best times, for wall time and for the training thread's
   CPU time (a writer process's work on the other core is not in the latter, the trainer's
   share of the writing is), and the median ratio process / thread. It also times the writer on
   recorded events: everything, waiting for
   each commit, and the trainer's share alone. Falls back to synthetic events when the trainer is
   not importable.
2. Reopens the project and times ``open`` plus pages of 200 rows: first, middle, last, sorted by
   frequency (descending) deep in the table, a text filter and a length filter.
Targets (issue): writing adds < 5 % to training; open + any page well under a second.
"""

from __future__ import annotations

import argparse
import gc
import json
import queue
import random
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from workbench.core.model import MergeEvent, base_vocab
from workbench.core.trainer import TrainLog
from workbench.store import ProjectStore, opening

MODES = ("alone", "process", "thread")

# ---- the writer-thread design of cc12da1, for comparison only ------------------------------------
_BATCH_ROWS = (
    "SELECT key, json_extract(value, '$[0]') AS rank, json_extract(value, '$[1][0]') AS a, "
    "json_extract(value, '$[1][1]') AS b, json_extract(value, '$[1][2]') AS n, "
    "json_extract(value, '$[2]') AS f, json_extract(value, '$[3]') AS t, "
    "json_extract(value, '$[4]') AS len FROM json_each(?2)")
_MERGES_FROM_JSON = (
    "INSERT INTO merges (run_id, rank, left_id, right_id, new_id, frequency, length, vocab_size, "
    "token_count) SELECT ?1, rank, a, b, n, f, len, "
    "max((SELECT coalesce(max(id), -1) FROM vocab WHERE run_id = ?1), "
    f"max(n) OVER (ORDER BY key)) + 1, t FROM ({_BATCH_ROWS})")
_VOCAB_FROM_JSON = (
    "INSERT OR IGNORE INTO vocab (run_id, id, piece, kind) "
    "SELECT ?1, n, substr(?3, ends - len + 1, len), 'merge' FROM ("
    f"SELECT n, len, sum(len) OVER (ORDER BY key) AS ends FROM ({_BATCH_ROWS}))")
_ROWS_TO_JSON = json.JSONEncoder(check_circular=False, separators=(",", ":")).encode


class ThreadWriter:
    """A writer thread with its own connection: the trainer's thread serialises each batch to one
    JSON text (C code), the thread runs one ``INSERT … SELECT … FROM json_each`` per table."""

    interval = 0.1

    def __init__(self, path: str, run_id: int):
        self.run_id = run_id
        self.conn = opening.connect(Path(path), "rw")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.taken = 0
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._commit, daemon=True)
        self.thread.start()

    def add_log(self, log: TrainLog) -> None:
        if len(log) == self.taken:
            return
        new = log.since(self.taken)
        rows = list(zip(range(new.start, new.end), new.merges, new.frequencies, new.token_counts,
                        map(len, new.pieces)))
        self.queue.put((_ROWS_TO_JSON(rows), b"".join(new.pieces)))
        self.taken = new.end

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        self.conn.close()

    def _commit(self) -> None:
        conn = self.conn
        while (batch := self.queue.get()) is not None:
            rows_json, pieces = batch
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(_MERGES_FROM_JSON, (self.run_id, rows_json))
            conn.execute(_VOCAB_FROM_JSON, (self.run_id, rows_json, pieces))
            conn.execute("UPDATE runs SET updated = ? WHERE id = ?", (time.time(), self.run_id))
            conn.execute("COMMIT")


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
        BpeTrainer = None  # noqa: N806 - the class, or None when the core is too old to have it
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


def child(mode: str, n_merges: int, n_words: int, path: str) -> tuple[float, float]:
    """Wall and thread CPU seconds of one training in this (fresh) process: ``alone``, or with
    the writer ``process`` (RunWriter) or a writer ``thread`` storing the merges."""
    from workbench.core.bpe import BpeTrainer, TrainConfig

    cfg = TrainConfig(units="bytes", merges=n_merges, pretokenizer="none")
    trainer = BpeTrainer(word_table(n_words), cfg)
    gc.disable()  # as workbench.tasks.train does around the merge loop, in both modes
    # Both modes run the loop of workbench.tasks.train.train_into_project, which looks at the clock
    # after every merge for its progress lines; only the store's part differs.
    if mode == "alone":
        t, c = time.perf_counter(), time.thread_time()
        last = 0.0
        for _ in trainer.run():
            now = time.monotonic()
            if now - last >= 0.1:
                last = now
        return time.perf_counter() - t, time.thread_time() - c
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("bench", cfg.settings(), [], trainer.vocab,
                               ["base"] * len(trainer.vocab))
        t, c = time.perf_counter(), time.thread_time()
        last = 0.0
        w = store.run_writer(run) if mode == "process" else ThreadWriter(path, run)
        for _ in trainer.run():
            now = time.monotonic()
            if now - last >= w.interval:
                last = now
                w.add_log(trainer.log)
        w.add_log(trainer.log)
        w.close()
        store.finish_run(run, "finished")
        return time.perf_counter() - t, time.thread_time() - c


def timed_children(args, tmp: Path) -> dict[str, list[tuple[float, float]]]:
    """Per mode, the (wall, thread CPU) seconds of each child, the modes alternating."""
    modes = MODES if args.thread else MODES[:2]
    times: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for i in range(args.repeat):
        for mode in modes[i % len(modes):] + modes[:i % len(modes)]:  # rotate who goes first
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--merges", str(args.merges),
                 "--words", str(args.words), "--path", str(tmp / f"child{i}.tokproj")],
                check=True, capture_output=True, text=True).stdout
            wall, cpu = map(float, out.split()[-2:])
            times[mode].append((wall, cpu))
            print(f"  training {mode:<7} (round {i + 1}): {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    return times


def overheads(times: dict[str, list[tuple[float, float]]], which: int, label: str,
              mode: str = "process", base: str = "alone") -> None:
    """Overhead three ways. This VM's speed drifts by 5-15 % between minutes, so the figure to
    trust is the median of the ratios of the runs of each round, which ran back to back."""
    alone = [t[which] for t in times[base]]
    store = [t[which] for t in times[mode]]
    a_med, s_med = statistics.median(alone), statistics.median(store)
    a_min, s_min = min(alone), min(store)
    paired = statistics.median(s / a for s, a in zip(store, alone))
    print(f"{label}: {base} median {a_med:.2f} s, best {a_min:.2f} s; {mode} median "
          f"{s_med:.2f} s, best {s_min:.2f} s; ratio {paired:.3f} = {100 * (paired - 1):+.1f} % (median of "
          f"{len(alone)} back-to-back rounds), {100 * (s_med - a_med) / a_med:+.1f} % (medians), "
          f"{100 * (s_min - a_min) / a_min:+.1f} % (best)")


def write_only(path: Path, events, pieces, initial) -> tuple[float, float, int]:
    """(seconds waiting for every commit, seconds of the caller's share alone, transactions)."""
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
        total = time.perf_counter() - t
        # What the trainer's thread pays: the merge log handed over every 1000 merges with
        # add_log, as workbench.tasks.train does every 100 ms. Only add_log is timed, and the
        # commits are waited for between hand-overs (as training's 100 ms give them time), so
        # a full pipe never counts. The log is hot in cache here; in training it is not
        # (measured there: about 0.6 µs per merge).
        run = store.create_run("bench 2", {"units": "bytes"}, [], initial, ["base"] * len(initial))
        vocab = list(initial)
        for e, p in zip(events, pieces):
            if e.new_id == len(vocab):
                vocab.append(p)
        log = TrainLog(vocab)
        caller = 0.0
        with store.run_writer(run) as w:
            for i, e in enumerate(events, 1):
                log.append((e.left, e.right, e.new_id), e.frequency, e.token_count)
                if i % 1000 == 0 or i == len(events):
                    t = time.perf_counter()
                    w.add_log(log)
                    caller += time.perf_counter() - t
                    w.wait()
        store.finish_run(run, "finished")
        return total, caller, w.batches


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
    ]  # filtered and sorted pages are the Merges tab's browser: bench/bench_merge_table.py
    worst = 0.0
    for label, kw in probes:
        t = time.perf_counter()
        total = n
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
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-thread", dest="thread", action="store_false",
                    help="leave out the writer-thread comparison")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(*child(args.child, args.merges, args.words, args.path))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        events, pieces, initial, alone, _job = train_events(args.merges, args.words)
        print(f"{len(events)} merge events")
        w_time, caller, batches = write_only(tmp / "w.tokproj", events, pieces, initial)
        n = max(1, len(events))
        print(f"writer alone: {w_time:.3f} s for {len(events)} merges in {batches} transactions "
              f"({w_time / n * 1e6:.1f} µs per merge); the trainer's share (add_log): "
              f"{caller:.3f} s ({caller / n * 1e6:.2f} µs per merge)")
        if alone is not None and args.repeat > 0:
            times = timed_children(args, tmp)
            for mode in times:
                if mode != "alone":
                    overheads(times, 0, f"wall time, {mode} writer", mode)
                    overheads(times, 1, f"training thread CPU, {mode} writer", mode)
            if "thread" in times:
                overheads(times, 0, "wall time, process vs thread writer", "process", "thread")
            print(f"writer alone, waiting for each commit, would be {100 * w_time / alone:.1f} % "
                  "of training time")
        read_pages(tmp / "w.tokproj")
    return 0


if __name__ == "__main__":
    sys.exit(main())
