"""The one vocabulary the whole workbench speaks: ids, byte-string pieces, ranked merges.

A :class:`Tokenizer` is plain data: which normalizer and pre-tokenizer run first, the unit the
model works on (UTF-8 ``bytes`` or ``chars``), the piece of every id, the merges in rank order as
``(left_id, right_id, new_id)``, and the special tokens. Trained runs, imported ``.tiktoken``
files, ``tokenizer.json`` and GPT-2 files all become this. Behaviour lives elsewhere: encoding in
:mod:`workbench.core.encoder`, training in :mod:`workbench.core.bpe`.

Id layout of trained tokenizers (imported ones keep theirs): special tokens first (as Hugging Face
and SentencePiece place them), then the base symbols (256 bytes in byte order, or the corpus
alphabet in code-point order), then the end-of-word marker if any, then one id per merge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Mapping, Sequence

from workbench.core.normalize import make_normalizer
from workbench.core.pipeline import Pipeline
from workbench.core.pretokenize import PreTokenizer, make_pretokenizer

Units = Literal["bytes", "chars"]
ModelKind = Literal["bpe", "wordpiece", "unigram"]
TokenKind = Literal["special", "base", "merge"]
#: Training families whose tokenizers are another kind's at inference (a run's settings name the
#: family; its Tokenizer, encoder and export formats are the kind's): PickyBPE and parity-aware
#: BPE train a BPE, and so does SuperBPE (whose split, not its kind, holds its superwords).
ENCODES_AS: dict[str, ModelKind] = {"superbpe": "bpe", "pickybpe": "bpe", "parity-bpe": "bpe"}


@dataclass(frozen=True)
class Tokenizer:
    """A BPE tokenizer as data. Build with keywords; ``vocab[i]`` is the piece of id ``i``."""

    vocab: tuple[bytes, ...]
    merges: tuple[tuple[int, int, int], ...]
    units: Units = "bytes"
    pretokenizer: str = "gpt2"
    normalizer: tuple[str, ...] = ()
    special_tokens: Mapping[str, int] = field(default_factory=dict)
    end_of_word: str = ""
    name: str = ""
    unk_token: str | None = None
    # "pairs": merge the adjacent pair with the lowest merge rank (GPT-2, Hugging Face, our runs).
    # "bytes": merge the adjacent pair whose concatenation has the lowest rank (tiktoken's rule,
    # used for imported .tiktoken files, which carry ranks but no merge list).
    merge_rule: str = "pairs"
    # Which model family decides the split of a pre-token. BPE applies ``merges``; WordPiece is
    # greedy longest match with ``continuing_prefix`` on non-initial pieces; Unigram is Viterbi
    # over ``scores`` (one log probability per id; specials score 0.0).
    model: ModelKind = "bpe"
    scores: tuple[float, ...] = ()
    continuing_prefix: str = ""
    max_input_chars_per_word: int = 100
    byte_fallback: bool = False
    # What special tokens are for (role → token, see workbench.core.special_roles) and what a
    # post-processor adds around each text ("none", "bert", "llama"); exports write them.
    special_roles: Mapping[str, str] = field(default_factory=dict)
    template: str = "none"
    # An imported tokenizer.json's own stages around the model (normalizers, added tokens with their
    # flags, pre-tokenizers, post-processor, decoder): :class:`~workbench.core.encoder.Encoder`'s
    # ``encode``/``decode`` run them exactly; ``normalizer``/``pretokenizer`` above then only
    # summarise them for the per-pre-token views (statistics, the inspector's colouring).
    pipeline: Pipeline | None = None

    # ---- derived views (computed once; the dataclass is frozen) -------------------------------
    @cached_property
    def pre(self) -> PreTokenizer:
        return make_pretokenizer(self.pretokenizer)

    @cached_property
    def normalize(self):
        return make_normalizer(self.normalizer)

    @cached_property
    def merge_of_id(self) -> dict[int, tuple[int, int, int]]:
        """new id → (rank, left, right) for every id created by a merge."""
        return {new: (rank, a, b) for rank, (a, b, new) in enumerate(self.merges)}

    @cached_property
    def id_of_piece(self) -> dict[bytes, int]:
        specials = set(self.special_tokens.values())
        out: dict[bytes, int] = {}
        for i, piece in enumerate(self.vocab):
            if i not in specials and piece and piece not in out:  # b"" marks an unused id
                out[piece] = i
        return out

    @cached_property
    def special_ids(self) -> frozenset[int]:
        return frozenset(self.special_tokens.values())

    @cached_property
    def end_of_word_id(self) -> int | None:
        if not self.end_of_word:
            return None
        return self.id_of_piece.get(self.end_of_word.encode("utf-8"))

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def kind(self, token_id: int) -> TokenKind:
        """special / base / merge. Imported vocabularies may leave ids unused: their piece is ``b""``."""
        if token_id in self.special_ids:
            return "special"
        return "merge" if token_id in self.merge_of_id else "base"

    def settings(self) -> dict:
        """The JSON-able description the project file and exports keep beside the vocabulary.

        Roles and the template only when set: a trained model's own description (which knows none)
        must not overwrite the ones its run was given."""
        out: dict = {
            "units": self.units,
            "pretokenizer": self.pretokenizer,
            "normalizer": list(self.normalizer),
            "special_tokens": dict(self.special_tokens),
            "end_of_word": self.end_of_word,
            "unk_token": self.unk_token,
            "merge_rule": self.merge_rule,
            "model": self.model,
            "continuing_prefix": self.continuing_prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "byte_fallback": self.byte_fallback,
            **({"pipeline": self.pipeline.spec()} if self.pipeline is not None else {}),
        }
        if self.special_roles:
            out["special_roles"] = dict(self.special_roles)
        if self.template != "none":
            out["template"] = self.template
        return out


def base_vocab(units: Units, alphabet: Sequence[str] = (), specials: Sequence[str] = (),
               end_of_word: str = "") -> list[bytes]:
    """The initial vocabulary in the documented id order (specials, base symbols, marker)."""
    pieces = [s.encode("utf-8") for s in specials]
    if units == "bytes":
        pieces.extend(bytes([b]) for b in range(256))
    else:
        pieces.extend(ch.encode("utf-8") for ch in sorted(set(alphabet)))
        if end_of_word:
            pieces.append(end_of_word.encode("utf-8"))
    return pieces


@dataclass(frozen=True, slots=True)
class MergeEvent:
    """One merge as the trainer reports it; ``step`` is 1-based, the merge's rank is ``step - 1``."""

    step: int
    left: int
    right: int
    new_id: int
    frequency: int  # weighted count of the pair when it was merged
    vocab_size: int  # vocabulary size after this merge
    token_count: int  # tokens in the whole training corpus after this merge

    @property
    def value(self) -> float:
        """The model-specific number of :class:`workbench.core.trainer.TrainEvent`: the frequency."""
        return self.frequency
