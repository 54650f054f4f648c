"""Helpers for the merge-browser tests: synthetic runs written through the store's RunWriter.

Imported by name (``tests/merges`` is on ``sys.path`` under pytest's default import mode); the
unusual module name avoids clashing with other folders' helpers and conftest files.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QFont

from workbench.core.bpe import TrainConfig
from workbench.core.model import MergeEvent, Tokenizer, base_vocab
from workbench.corpus import fingerprint
from workbench.store import ProjectStore

WORKED_TEXT = "low lower lowest newer\n"
WORKED_CONFIG = TrainConfig(units="chars", merges=5, end_of_word="</w>", pretokenizer="whitespace")


@dataclass
class Synthetic:
    """A consistent byte-level run: every merge joins two existing pieces."""

    initial: list[bytes]
    kinds: list[str]
    events: list[MergeEvent]
    pieces: list[bytes]  # the merged piece of each event
    vocab: list[bytes]  # every piece by id, after all merges


def synthetic_run(n: int, seed: int = 0, specials: tuple[str, ...] = ("<|endoftext|>",),
                  start_step: int = 1, base: Synthetic | None = None) -> Synthetic:
    rng = random.Random(seed)
    if base is None:
        vocab = base_vocab("bytes", specials=specials)
        kinds = ["special"] * len(specials) + ["base"] * 256
        initial = list(vocab)
        events, pieces = [], []
    else:
        vocab, kinds, initial = list(base.vocab), base.kinds, base.initial
        events, pieces = list(base.events), list(base.pieces)
    letters = [bytes([c]) for c in b"abcdefghij "]
    short = [i for i, p in enumerate(vocab) if i >= len(specials) and len(p) <= 4]
    freq = 10 * (n + len(events)) - len(events)
    for step in range(start_step, start_step + n):
        a, b = rng.choice(short), rng.choice(short)
        if rng.random() < 0.5:  # keep plenty of readable pieces for text filters
            a = vocab.index(rng.choice(letters))
        piece = vocab[a] + vocab[b]
        vocab.append(piece)
        if len(piece) <= 4:
            short.append(len(vocab) - 1)
        freq = max(1, freq - rng.choice((0, 0, 1, 3)))
        events.append(MergeEvent(step, a, b, len(vocab) - 1, freq, len(vocab), 10**9 - step))
        pieces.append(piece)
    return Synthetic(initial, kinds, events, pieces, vocab)


def write_synthetic(path: Path, n: int, seed: int = 0, name: str = "synthetic") -> Synthetic:
    data = synthetic_run(n, seed)
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run(name, {"units": "bytes", "pretokenizer": "gpt2"}, [], data.initial, data.kinds)
        with store.run_writer(run, interval=float("inf")) as writer:
            for event, piece in zip(data.events, data.pieces):
                writer.add(event, piece)
        store.finish_run(run, "finished")
    return data


def hand_pair():
    """A: a b → ab, ab c → abc, b c → bc.  B: b c → bc, a b → ab (no abc)."""
    a = Tokenizer(vocab=(b"a", b"b", b"c", b"ab", b"abc", b"bc"), merges=((0, 1, 3), (3, 2, 4), (1, 2, 5)),
                  units="chars", pretokenizer="whitespace", name="A")
    b = Tokenizer(vocab=(b"a", b"b", b"c", b"bc", b"ab"), merges=((1, 2, 3), (0, 1, 4)),
                  units="chars", pretokenizer="whitespace", name="B")
    return a, b


def diff_project(tmp_path: Path):
    """A project holding A and B as references, and a corpus file of the words abc bca cab aa."""
    a, b = hand_pair()
    corpus = tmp_path / "abc.txt"
    corpus.write_text("abc bca abc cab aa abc bca abc aa bca abc\n", encoding="utf-8")
    project = tmp_path / "diff.tokproj"
    with ProjectStore.open(project, create=True) as store:
        store.add_corpus(str(corpus), size=corpus.stat().st_size, mtime=corpus.stat().st_mtime,
                         fingerprint=fingerprint(corpus), reader_options={"kind": "text"})
        ra = store.add_reference("A", a, fmt="hf", source_path="a.json", sha256="0" * 64)
        rb = store.add_reference("B", b, fmt="hf", source_path="b.json", sha256="1" * 64)
    return project, ra, rb


# ---- the tables' cell cache ------------------------------------------------------------------------

ROLES = (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.FontRole, Qt.ItemDataRole.ForegroundRole,
         Qt.ItemDataRole.TextAlignmentRole)


def _plain(value):
    """A role's value in a comparable form (a brush by its colour, a font by what is drawn)."""
    if isinstance(value, QBrush):
        return ("brush", value.color().name())
    if isinstance(value, QFont):
        return ("font", value.family(), value.pointSizeF(), value.strikeOut())
    if isinstance(value, Qt.AlignmentFlag):
        return int(value.value)
    return value


def assert_cells_match_cell(model, rows) -> int:
    """Every drawn role of ``rows`` read through ``data()`` (the cache) equals ``cell()``; returns
    how many cells were compared."""
    checked = 0
    for row in rows:
        entry = model.entry(row)
        assert entry is not None
        for column in range(model.columnCount()):
            for role in ROLES:
                got = _plain(model.data(model.index(row, column), role))
                want = _plain(model.cell(entry, column, role))
                assert got == want, (row, column, role, got, want)
                checked += 1
    return checked
