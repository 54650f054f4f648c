"""The real Hugging Face ``tokenizers`` BpeTrainer as an oracle: its merges for texts or for files
(``train(files)`` reads each line as a sequence — STYLE.md trap 16). A uniquely named helper module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable


def _byte_level_bpe(pattern: str | None):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.BPE())
    if pattern is None:  # GPT-2's own split inside ByteLevel
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    return tok


def _trainer(vocab_size: int):
    from tokenizers import pre_tokenizers, trainers

    return trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                               show_progress=False)


def _merges(tok) -> list[list[str]]:
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [m.split(" ") if isinstance(m, str) else list(m) for m in merges]


def hf_merges(texts: Iterable[str], vocab_size: int, pattern: str | None) -> list[list[str]]:
    """Merges of ``train_from_iterator(texts)``; ``pattern`` None = ByteLevel's GPT-2 split."""
    tok = _byte_level_bpe(pattern)
    tok.train_from_iterator(texts, _trainer(vocab_size))
    return _merges(tok)


def hf_merges_from_files(files: Iterable[Path], vocab_size: int, pattern: str | None) -> list[list[str]]:
    """Merges of ``train(files)``: each line of each file a sequence."""
    tok = _byte_level_bpe(pattern)
    tok.train([str(f) for f in files], _trainer(vocab_size))
    return _merges(tok)
