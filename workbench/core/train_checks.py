"""Checks on a training request that need no corpus: run them before reading a single byte.

A bad argument (``--vocab-size 1000000000``, an empty or ordinary ``--special``) used to surface
only inside :class:`~workbench.core.bpe.BpeTrainer`, after the whole corpus had been read (9.5 s
on 50 MB). :func:`check_train_config` raises the same one-line :class:`WorkbenchError` at once.
What needs the corpus (the alphabet of a character run, a marker that occurs in the text) is
left to the trainer.

The special-token rule (:func:`check_special_tokens`): a special token must be told apart from
text forever, in every export format. So it may not be empty or whitespace only, may not hold a
line break (vocab.txt and merges.txt are line formats), must be at least two characters long (one
character is a base piece of every vocabulary), and must contain at least one character that is
not a letter, digit or space — markup such as ``<|endoftext|>``, ``[CLS]``, ``<s>``. ``--special a``
or ``--special " "`` would equal an ordinary piece, which tiktoken, tokenizer.json, vocab.json and
the vocabulary lists cannot hold, so every export but the merges CSV failed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.errors import WorkbenchError

# The trainer packs a pair of ids into one integer (ids below 2**21) and keeps room for merges
# (see workbench.core.bpe._SHIFT); larger vocabularies are refused there, after the corpus is read.
MAX_VOCAB_SIZE = (1 << 21) - 1_000_000


def check_special_tokens(tokens: Iterable[str]) -> None:
    """Refuse special tokens that could be ordinary text (see the module docstring for the rule)."""
    seen: set[str] = set()
    for token in tokens:
        shown = repr(token)
        if not token:
            raise WorkbenchError("--special: a special token cannot be empty: remove the empty --special")
        if not token.strip():
            raise WorkbenchError(f"--special {shown}: a special token cannot be only whitespace: "
                                 "use markup such as <|endoftext|> or [PAD]")
        if "\n" in token or "\r" in token:
            raise WorkbenchError(f"--special {shown}: a special token cannot hold a line break")
        if len(token) < 2:
            raise WorkbenchError(f"--special {shown}: one character is an ordinary piece of every vocabulary: "
                                 "use markup such as <|endoftext|> or [PAD]")
        if all(ch.isalnum() or ch.isspace() for ch in token):
            raise WorkbenchError(f"--special {shown}: letters and digits alone can be learned as an ordinary "
                                 "piece: mark it up, e.g. <|" + token.strip() + "|> or [" + token.strip() + "]")
        if token in seen:
            raise WorkbenchError(f"--special {shown} is given twice: give each special token once")
        seen.add(token)


def check_train_config(config) -> None:
    """Everything about a :class:`~workbench.core.bpe.TrainConfig` knowable before reading text."""
    if config.vocab_size is None and config.merges is None:
        raise WorkbenchError("say how far to train: --vocab-size N or --merges N")
    for flag, value in (("--vocab-size", config.vocab_size), ("--merges", config.merges)):
        if value is not None and value < 0:
            raise WorkbenchError(f"{flag} must be a positive number, not {value}")
        if value is not None and value > MAX_VOCAB_SIZE:
            raise WorkbenchError(f"{flag} {value} is beyond what the trainer supports "
                                 f"(at most {MAX_VOCAB_SIZE}): choose a smaller size")
    if config.min_frequency is not None and config.min_frequency < 1:
        raise WorkbenchError(f"--min-frequency must be 1 or more, not {config.min_frequency}")
    if config.end_of_word and config.units != "chars":
        raise WorkbenchError("--end-of-word needs --units chars (byte-level BPE keeps spaces instead)")
    check_special_tokens(config.special_tokens)
    if config.end_of_word and config.end_of_word in config.special_tokens:
        raise WorkbenchError(f"--end-of-word {config.end_of_word!r} is also a --special token: choose another")
    minimum = 256 + len(set(config.special_tokens))
    if config.units == "bytes" and config.vocab_size is not None and config.vocab_size < minimum:
        raise WorkbenchError(f"--vocab-size {config.vocab_size} is below the initial vocabulary of {minimum} "
                             f"(256 bytes{' + specials' if config.special_tokens else ''}): choose at least {minimum}")
