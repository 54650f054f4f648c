"""Byte-level BPE encoding by tiktoken's own core, where it computes exactly what we compute.

Our pure-Python encoder reaches about a quarter of tiktoken's throughput; every view that encodes a
corpus (``stats``, the sweep, Compare, Inspect) waits on it. tiktoken's Rust core (``CoreBPE``) does
the same thing — split with the pattern, then merge the adjacent pair whose joined bytes have the
lowest rank — so for a tokenizer that *is* that algorithm we hand it the work:

- ranks-only tokenizers (``merge_rule="bytes"``: an imported ``.tiktoken`` file), every merge allowed;
- byte units, no end-of-word marker, every one of the 256 bytes a token;
- a preset pre-tokenizer whose pattern is tiktoken's published one character for character (gpt2 =
  r50k/p50k, cl100k, o200k): a custom pattern runs in Python's ``regex`` here and in fancy-regex
  there, which may differ, so it stays on the Python path.

Special tokens never reach it (the encoder cuts them out first), nor do normalizers (applied
before). Left out: trained runs (``merge_rule="pairs"``: pair-rank BPE and tiktoken's byte-rank BPE
can differ), greedy and prefix (``max_merges``) encodings. tiktoken is optional: without it, or when
a tokenizer does not fit, everything stays on the pure-Python path, which the tests hold equal.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any

from workbench.core.model import Tokenizer
from workbench.core.pretokenize import PRESET_PATTERNS

#: The presets whose pattern string is tiktoken's own (r50k/p50k, cl100k, o200k).
NATIVE_PRESETS = frozenset({"gpt2", "cl100k", "o200k"})
#: Characters encoded before the native core is built: one line never pays for its set-up.
NATIVE_AFTER_CHARS = 20_000


def native_fits(tok: Tokenizer, byte_ids: Sequence[int] | None, unknown: int | None) -> bool:
    """Whether tiktoken's core computes the ordinary encoding of ``tok`` exactly (``byte_ids``: the
    encoder's id of each byte when not the byte itself; ``unknown``: its unknown id)."""
    return (tok.units == "bytes" and tok.merge_rule == "bytes" and not tok.end_of_word and not tok.normalizer
            and tok.pre.name in NATIVE_PRESETS
            and (byte_ids is None or all(i >= 0 and i != unknown for i in byte_ids)))


class NativeBPE:
    """``encode(text)`` = tiktoken's ``encode_ordinary`` over the encoder's usable ranks."""

    def __init__(self, core: Any):
        self._core = core

    @classmethod
    def build(cls, tok: Tokenizer, usable: Iterable[int]) -> NativeBPE | None:
        """The core over the ``usable`` ids as ranks; None without tiktoken or when two ids share bytes."""
        try:  # optional, and imported only for long texts
            core_module = importlib.import_module("tiktoken._tiktoken")
        except ImportError:
            return None
        ids = list(usable)
        ranks = {tok.vocab[i]: i for i in ids}
        if len(ranks) != len(ids):  # two ids with the same bytes: not a rank table
            return None
        return cls(core_module.CoreBPE(ranks, {}, PRESET_PATTERNS[tok.pre.name]))

    def encode(self, text: str) -> list[int]:
        return list(self._core.encode_ordinary(text))
