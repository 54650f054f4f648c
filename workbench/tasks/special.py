"""What happens to special tokens when a text is encoded: the options of both libraries people
compare against, in one place for the CLI's ``encode --special`` and the window.

* ``tokenizers``' ``add_special_tokens``: ``add`` (the default, as the library's) wraps the text as
  the tokenizer's post-processor says (``[CLS] … [SEP]``, ``<s> …``); ``none`` (``encode
  --no-special-tokens``) adds nothing. A tokenizer without a post-processor adds nothing either way.
* tiktoken's ``allowed_special``: ``allow=all`` or ``allow=A,B`` — those special tokens are found in
  the text and become their ids; the others are text. Without it a workbench tokenizer keeps
  special tokens as text (tiktoken's ``encode_ordinary``) and an imported ``tokenizer.json`` finds
  all of them (the library's default; ``allow=`` with nothing after it is its
  ``encode_special_tokens=True``).
* tiktoken's ``disallowed_special``: ``disallow=all`` (tiktoken's own default) or ``disallow=A,B``
  — a text containing one of them is refused; :attr:`DisallowedSpecial.tiktoken_text` is
  tiktoken's exact ``ValueError`` text. ``disallow=none`` turns the check off.

Left out: pair inputs (``encode(a, b)``) and tiktoken's ``allowed_special`` on a tokenizer without
special tokens (nothing to allow).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

import regex

from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

All = Literal["all"]


@dataclass(frozen=True)
class SpecialPolicy:
    add: bool = False
    allowed: frozenset[str] | All | None = None  # None: the tokenizer's own default
    disallowed: frozenset[str] | All = frozenset()


class DisallowedSpecial(WorkbenchError):
    """A disallowed special token in the text; ``tiktoken_text`` is tiktoken's own message."""

    def __init__(self, token: str, position: int):
        super().__init__(
            f"encountered text corresponding to disallowed special token {token!r} at character {position}: "
            f"pass --special allow={token} to encode it as that token, or --special disallow=none to encode "
            "it as text")
        self.token = token
        self.tiktoken_text = tiktoken_error_text(token)


def tiktoken_error_text(token: str) -> str:
    """tiktoken's ``raise_disallowed_special_token`` message, character for character."""
    return (
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


def special_set(tokenizer: Tokenizer) -> frozenset[str]:
    """tiktoken's ``special_tokens_set``: a pipeline's added tokens marked special, else all of ours."""
    if tokenizer.pipeline is not None:
        return frozenset(t.content for t in tokenizer.pipeline.added_tokens if t.special)
    return frozenset(t for t in tokenizer.special_tokens if t)


def parse_special(values: Sequence[str] | None, tokenizer: Tokenizer, *, add: bool = True) -> SpecialPolicy:
    """``--special`` values (repeatable): ``add``, ``none``, ``allow=all|A,B|``, ``disallow=all|none|A,B``;
    ``add`` is where they start (``encode`` applies the post-processor unless told not to, as
    ``tokenizers``' ``encode()`` does)."""
    allowed: frozenset[str] | All | None = None
    disallowed: frozenset[str] | All = frozenset()
    known = special_set(tokenizer)
    for value in values or ():
        key, eq, rest = value.partition("=")
        key = key.strip().lower()
        if not eq and key in ("add", "none"):
            add = key == "add"
        elif eq and key in ("allow", "disallow"):
            names: frozenset[str] | All
            if rest.strip().lower() == "all":
                names = "all"
            elif rest.strip().lower() == "none" and key == "disallow":
                names = frozenset()
            else:
                names = frozenset(n for n in rest.split(",") if n)
                unknown = sorted(names - known)
                if unknown:
                    shown = ", ".join(sorted(known)[:8]) or "none"
                    raise WorkbenchError(f"--special {value}: {unknown[0]!r} is not a special token of this "
                                         f"tokenizer (its special tokens: {shown})")
            if key == "allow":
                allowed = names
            else:
                disallowed = names
        else:
            raise WorkbenchError(f"--special {value!r}: use add, none, allow=all|TOKEN,…, disallow=all|none|TOKEN,…")
    return SpecialPolicy(add, allowed, disallowed)


def check_disallowed(text: str, tokenizer: Tokenizer, policy: SpecialPolicy) -> None:
    """Raise :class:`DisallowedSpecial` as tiktoken does before encoding (on the text as given)."""
    known = special_set(tokenizer)
    allowed = known if policy.allowed == "all" else (policy.allowed or frozenset())
    disallowed = known - allowed if policy.disallowed == "all" else policy.disallowed
    if not disallowed:
        return
    pattern = regex.compile("|".join(regex.escape(t) for t in sorted(disallowed, key=len, reverse=True)))
    match = pattern.search(text)
    if match is not None:
        raise DisallowedSpecial(match.group(), match.start())


def allow_argument(tokenizer: Tokenizer, policy: SpecialPolicy) -> bool | Collection[str]:
    """The encoder's ``allow_special`` for ``policy``."""
    if policy.allowed is None:
        return False
    if policy.allowed == "all":
        return True
    return policy.allowed


def encode_text(encoder: Encoder, text: str, policy: SpecialPolicy) -> list[int]:
    """Ids of ``text`` under ``policy`` (the disallowed check first, as tiktoken)."""
    check_disallowed(text, encoder.tok, policy)
    return encoder.encode(text, allow_special=allow_argument(encoder.tok, policy), add_special_tokens=policy.add)
