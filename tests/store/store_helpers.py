"""Helpers for the store tests: synthetic training runs and file fingerprints.

Imported by name (``tests/store`` is on ``sys.path`` under pytest's default import mode); the
unusual module name avoids clashing with helpers of other test folders.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from workbench.core.model import MergeEvent, base_vocab
from workbench.store import ProjectStore

DATA = Path(__file__).with_name("data")
SIDE_FILES = ("-wal", "-shm", "-journal")


def synthetic_run(n: int, seed: int = 0, specials: tuple[str, ...] = ("<|endoftext|>",)):
    """(initial vocab, kinds, events, pieces) of a consistent byte-level run of ``n`` merges.

    Each merge joins two existing pieces (short ones, so lengths stay varied), its frequency
    never increases, and some frequencies repeat so sorting needs its rank tie-break.
    """
    rng = random.Random(seed)
    vocab = base_vocab("bytes", specials=specials)
    kinds = ["special"] * len(specials) + ["base"] * 256
    initial = list(vocab)
    short = list(range(len(specials), len(vocab)))
    events, pieces = [], []
    freq = 10 * n
    tokens = 100 * n
    for step in range(1, n + 1):
        a, b = rng.choice(short), rng.choice(short)
        piece = vocab[a] + vocab[b]
        vocab.append(piece)
        if len(piece) <= 5:
            short.append(len(vocab) - 1)
        freq -= rng.choice((0, 0, 1, 3))
        tokens -= freq
        events.append(MergeEvent(step, a, b, len(vocab) - 1, max(freq, 1), len(vocab), tokens))
        pieces.append(piece)
    return initial, kinds, events, pieces


def write_run(store: ProjectStore, name: str, n: int, seed: int = 0, status: str = "finished",
              settings: dict | None = None) -> int:
    initial, kinds, events, pieces = synthetic_run(n, seed)
    run = store.create_run(name, settings or {"units": "bytes", "pretokenizer": "gpt2"}, [],
                           initial, kinds)
    with store.run_writer(run) as w:
        for e, p in zip(events, pieces):
            w.add(e, p)
    if status != "running":
        store.finish_run(run, status)
    return run


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def side_files(path: Path) -> list[str]:
    return [s for s in SIDE_FILES if Path(f"{path}{s}").exists()]
