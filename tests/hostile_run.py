"""A project whose one run holds hostile merges: a lone ``\\r`` joined to ``x``, a piece with a NUL
and a split character (``b" the\\x00\\xe4"``), a zero-width space, an emoji. Written through the
store's real RunWriter (imported by name from tests/formats and tests/inspect)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from workbench.core.model import MergeEvent, base_vocab
from workbench.store import ProjectStore

# (left, right) in rank order; every side is a base byte or an earlier result.
HOSTILE_PAIRS: list[tuple[bytes, bytes]] = [
    (b"\r", b"x"), (b" ", b"t"), (b" t", b"h"), (b" th", b"e"), (b" the", b"\x00"),
    (b" the\x00", b"\xe4"), (b"\xe2", b"\x80"), (b"\xe2\x80", b"\x8b"),
    (b"\xf0", b"\x9f"), (b"\xf0\x9f", b"\x91"), (b"\xf0\x9f\x91", b"\x8d"),
]
# Encoded with pre-tokenizer "none", this text yields each hostile piece as one token.
HOSTILE_TEXT = " the\x00中\rx\u200b👍"
HOSTILE_PIECES = [b" the\x00\xe4", b"\xb8", b"\xad", b"\rx", "\u200b".encode(), "👍".encode()]


def write_hostile_project(path: Path, pretokenizer: str = "none") -> Path:
    """The hostile run; ``pretokenizer="gpt2"`` makes it a run the GPT-2 pair fits (its loaders split
    with GPT-2's pattern), for the export tests."""
    vocab = base_vocab("bytes")
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("hostile", {"units": "bytes", "pretokenizer": pretokenizer}, [], vocab,
                               ["base"] * len(vocab))
        with store.run_writer(run, interval=float("inf")) as writer:
            for step, (left, right) in enumerate(HOSTILE_PAIRS, start=1):
                vocab.append(left + right)
                event = MergeEvent(step, vocab.index(left), vocab.index(right), len(vocab) - 1,
                                   100 - step, len(vocab), 1000 - step)
                writer.add(event, left + right)
        store.finish_run(run, "finished")
    # Rollback journal instead of WAL: a reader then needs no -shm file, so a child process
    # under a small file-size limit (the failed-export test) can still open the project.
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()
    return path
