"""Checks on a training request that need no corpus: run them before reading a single byte.

A bad setting (a vocabulary of 10⁹, an empty or ordinary special token) used to surface only
inside :class:`~workbench.core.bpe.BpeTrainer`, after the whole corpus had been read (9.5 s on
50 MB). :meth:`workbench.tasks.spec.RunSpec.validate` calls these checks at once; they raise
:class:`~workbench.errors.ConfigError` naming the setting, so the CLI names its flag and the window
its field. What needs the corpus (the alphabet of a character run, a marker that occurs in the
text) is left to the trainer.

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

from workbench.errors import ConfigError

# The trainer packs a pair of ids into one integer (ids below 2**21) and keeps room for merges
# (see workbench.core.bpe._SHIFT); larger vocabularies are refused there, after the corpus is read.
MAX_VOCAB_SIZE = (1 << 21) - 1_000_000


def check_special_tokens(tokens: Iterable[str]) -> None:
    """Refuse special tokens that could be ordinary text (see the module docstring for the rule)."""
    seen: set[str] = set()
    for token in tokens:
        shown = repr(token)
        if not token:
            raise ConfigError("special_tokens", "a special token cannot be empty: remove the empty one")
        if not token.strip():
            raise ConfigError("special_tokens", f"{shown}: a special token cannot be only whitespace: "
                                 "use markup such as <|endoftext|> or [PAD]")
        if "\n" in token or "\r" in token:
            raise ConfigError("special_tokens", f"{shown}: a special token cannot hold a line break")
        if len(token) < 2:
            raise ConfigError("special_tokens", f"{shown}: one character is an ordinary piece of every vocabulary: "
                                 "use markup such as <|endoftext|> or [PAD]")
        if all(ch.isalnum() or ch.isspace() for ch in token):
            raise ConfigError("special_tokens", f"{shown}: letters and digits alone can be learned as an ordinary "
                                 "piece: mark it up, e.g. <|" + token.strip() + "|> or [" + token.strip() + "]")
        if token in seen:
            raise ConfigError("special_tokens", f"{shown} is given twice: give each special token once")
        seen.add(token)
