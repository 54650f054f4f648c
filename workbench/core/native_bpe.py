"""Byte-level BPE encoding by tiktoken's own core, where it computes exactly what we compute.

Our pure-Python encoder reaches about a quarter of tiktoken's throughput on a cold cache; every view
that encodes a corpus (``stats``, the sweep, Compare, Inspect) waits on it. tiktoken's Rust core
(``CoreBPE``) joins, inside a pre-token, the adjacent parts whose joined bytes have the lowest rank,
so we hand it the work for every byte-level BPE whose ids that rule gives:

- ranks-only tokenizers (``merge_rule="bytes"``: an imported ``.tiktoken`` file): that is their rule;
- merge-rank tokenizers (``merge_rule="pairs"``: our runs, GPT-2 files, a byte-level
  ``tokenizer.json``) whose merges meet the conditions proven in
  :mod:`workbench.core.rank_equivalence` (checked once per tokenizer; BPE training meets them);
- byte units, no end-of-word marker, every one of the 256 bytes a token (not the unknown token).

Two entry points: :meth:`NativeBPE.piece` encodes one pre-token's bytes (``encode_single_piece``:
any pre-tokenizer, the encoder splits); :meth:`NativeBPE.encode` a whole text, only for a preset
whose pattern is tiktoken's published one character for character (gpt2 = r50k/p50k, cl100k,
o200k), or for a tokenizer.json whose pipeline is plain ``ByteLevel`` (:func:`plain_byte_level`:
the encoder cuts out its added tokens and hands over the text between them) — a custom pattern runs
in Python's ``regex`` here and in fancy-regex there, which may differ.
Special tokens never reach it (the encoder cuts them out first); normalizers run before.

Left out: greedy encodings, and merge lists that fail the proof (they stay on the Python path).
tiktoken is a dependency but treated as optional: without it everything stays on the Python path,
which the tests hold equal.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any

from workbench.core.model import Tokenizer
from workbench.core.pipeline import Pipeline
from workbench.core.pretokenize import GPT2_PATTERN, PRESET_PATTERNS
from workbench.core.rank_equivalence import tiktoken_table

#: The presets whose pattern string is tiktoken's own (r50k/p50k, cl100k, o200k).
NATIVE_PRESETS = frozenset({"gpt2", "cl100k", "o200k"})
#: Characters (or bytes of pre-tokens not in the cache) encoded before the native core is built:
#: one line never pays for its set-up (~0.1 s for 100k ranks, plus the proof for merge lists).
NATIVE_AFTER_CHARS = 20_000


def native_fits(tok: Tokenizer, byte_ids: Sequence[int] | None, unknown: int | None) -> bool:
    """Whether ``tok`` may go to tiktoken's core at all (cheap checks; the merge-list proof waits
    for :meth:`NativeBPE.build`). ``byte_ids``: the encoder's id of each byte when not the byte
    itself; ``unknown``: its unknown id."""
    return (tok.model == "bpe" and tok.units == "bytes" and not tok.end_of_word
            and tok.merge_rule in ("bytes", "pairs")
            and (byte_ids is None or all(i >= 0 and i != unknown for i in byte_ids)))


def whole_text_fits(tok: Tokenizer) -> bool:
    """Whether tiktoken's own pattern splits ``tok``'s texts as ours does (a tiktoken preset)."""
    return tok.pre.name in NATIVE_PRESETS and tok.pipeline is None


def plain_byte_level(pipeline: Pipeline | None) -> bool | None:
    r"""For a tokenizer.json whose only stage before the model is ``ByteLevel`` with its regex (no
    normalizer, no other pre-tokenizer, no model option): its ``add_prefix_space``; else None.

    Such a pipeline cuts each stretch between added tokens with GPT-2's pattern (``tokenizers``'
    spelling of it: ``\s+`` where tiktoken has ``\s`` last, which only ever matches one character
    there, and no ``\s++$``, which ``\s+(?!\S)`` covers), so tiktoken's core can split it too."""
    if pipeline is None or pipeline.normalizer is not None or pipeline.model_options:
        return None
    spec = pipeline.pre_tokenizer
    if isinstance(spec, dict) and spec.get("type") == "Sequence":
        items = spec.get("pretokenizers")
        spec = items[0] if isinstance(items, list) and len(items) == 1 else None
    if not isinstance(spec, dict) or spec.get("type") != "ByteLevel" or spec.get("use_regex", True) is not True:
        return None
    prefix = spec.get("add_prefix_space", True)
    return prefix if isinstance(prefix, bool) else None


class NativeBPE:
    """tiktoken's core over a rank table; ``ids`` maps its ranks to our ids when they differ."""

    def __init__(self, core: Any, ids: list[int] | None):
        self._core = core
        self._ids = ids
        self._single = core.encode_single_piece

    @classmethod
    def build(cls, tok: Tokenizer, usable: Iterable[int], byte_ids: Sequence[int] | None = None,
              max_merges: int | None = None) -> NativeBPE | None:
        """The core for ``tok`` (``usable``: the ids a ranks-only tokenizer may produce; ``max_merges``:
        a merge-rank prefix), or None without tiktoken or when tiktoken's rule is not ours."""
        try:  # optional, and imported only for long texts
            core_module = importlib.import_module("tiktoken._tiktoken")
        except ImportError:
            return None
        ids: list[int] | None = None
        if tok.merge_rule == "bytes":
            usable_ids = list(usable)
            ranks = {tok.vocab[i]: i for i in usable_ids}
            if len(ranks) != len(usable_ids):  # two ids with the same bytes: not a rank table
                return None
        else:
            table = tiktoken_table(tok, list(byte_ids) if byte_ids is not None else list(range(256)))
            if table is None:
                return None
            if max_merges is not None:
                table = table.prefix(max(0, max_merges))
            ranks, ids = table.ranks, table.ids
        # a tiktoken preset's own pattern; a plain ByteLevel tokenizer.json's is GPT-2's
        pattern = PRESET_PATTERNS.get(tok.pre.name) if whole_text_fits(tok) else None
        return cls(core_module.CoreBPE(ranks, {}, pattern or GPT2_PATTERN), ids)

    def encode(self, text: str) -> list[int]:
        """``encode_ordinary`` of a whole text (only for :func:`whole_text_fits` tokenizers)."""
        found = self._core.encode_ordinary(text)
        ids = self._ids
        return found if ids is None else [ids[r] for r in found]

    def length(self, data: bytes) -> int:
        """How many tokens one pre-token's bytes become."""
        return len(self._single(data)) if data else 0

    def piece(self, data: bytes) -> tuple[int, ...]:
        """The ids of one pre-token's bytes."""
        if not data:
            return ()
        ids = self._ids
        return tuple(self._single(data)) if ids is None else tuple(ids[r] for r in self._single(data))
