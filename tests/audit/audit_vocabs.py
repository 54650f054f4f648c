"""Tiny vocabularies where every audit category is built on purpose (the numbers in the tests are
worked out by hand in each builder's docstring)."""

from __future__ import annotations

from workbench.core.model import Tokenizer

BASE = [bytes([b]) for b in range(256)]


def _bpe(merges: list[tuple[bytes, bytes]], pretokenizer: str = "gpt2") -> Tokenizer:
    vocab = list(BASE)
    ids = {p: i for i, p in enumerate(vocab)}
    rows = []
    for left, right in merges:
        new = left + right
        ids[new] = len(vocab)
        vocab.append(new)
        rows.append((ids[left], ids[right], ids[new]))
    return Tokenizer(vocab=tuple(vocab), merges=tuple(rows), units="bytes", pretokenizer=pretokenizer)


def audit_vocab() -> Tokenizer:
    """GPT-2 pattern, 256 bytes + 6 merges (ids 256–261):

    * 256 ``bc``, 257 ``ab``: reachable.
    * 258 ``abc`` = ``ab``+``c``: **never produced** — on ``a b c`` the earlier merge ``b c`` (rank 0)
      always wins, leaving ``a bc``, which no merge joins.
    * 259 ``xy``, 260 ``xyz``: reachable; on the corpus ``{xyz: 3, xy: 1}`` ``xy`` is emitted once
      (F1 = 1) and consumed by ``xyz`` three times (F2 = 3): R = 0.25, a residue below 0.3.
    * 261 ``E4 B8``: the first two bytes of 中 (E4 B8 AD): undecodable, ill-formed (partial).
    * the 128 bytes 0x80–0xFF: undecodable and ill-formed; 13 of them (C0, C1, F5–FF) occur in no
      UTF-8 text at all (impossible).
    """
    return _bpe([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"x", b"y"), (b"xy", b"z"), (b"\xe4", b"\xb8")])


def context_vocab() -> Tokenizer:
    """A pre-tokenizer that keeps letters together only after a space (`` \\p{L}+`` or one character):
    ``pq`` (id 256) alone is split into ``p`` ``q``; after a space it is made: reachable only in context."""
    return _bpe([(b"p", b"q")], pretokenizer=r" \p{L}+|[\s\S]")
