"""Pre-tokenizers: split normalized text into the pieces BPE merges never cross.

The presets are the published patterns (GPT-2, GPT-4 ``cl100k``, GPT-4o ``o200k``) run with the
``regex`` module, plus the textbook ``whitespace`` split, a digit-splitting variant, ``none``
(the whole text is one piece) and ``metaspace`` (SentencePiece style: spaces become ``▁`` and a
piece starts at each one). A custom pattern is validated up front and always run with a timeout,
so a catastrophic pattern fails with a message instead of hanging the window or the CLI.

``bert`` is BERT's split (Hugging Face ``BertPreTokenizer``): whitespace separates and is dropped,
every punctuation character (Unicode P* and all ASCII punctuation, ``$+<=>^`|~`` included) is a
piece of its own, and so is every CJK ideograph (what ``BertNormalizer``'s handle_chinese_chars
achieves by padding them with spaces).

Only ``whitespace`` and ``bert`` drop characters; every other preset covers the text, which is what makes
``decode(encode(s)) == s`` hold — for ``metaspace`` on text without a literal ``▁``, which decodes
as a space there, as it does in SentencePiece.

A custom pattern never drops text either: whatever it does not match (the gaps between matches,
and everything around empty matches such as ``a*`` finds) stays, each gap its own piece — what
Hugging Face's ``Split(pattern, "isolated")`` does, so an exported tokenizer.json agrees. Dropping
text silently (``a*`` once encoded "banana split" as "aaa") is never what a user meant; tiktoken,
which does drop unmatched text, is the one exporter that cannot express this (its export check
reports the difference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import regex

from workbench.core.normalize import CJK_CLASS
from workbench.errors import WorkbenchError

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
# Hugging Face's ``Whitespace`` pre-tokenizer: words and punctuation runs; whitespace is dropped.
WHITESPACE_PATTERN = r"""\w+|[^\w\s]+"""
# GPT-2 with every digit its own piece (as LLaMA-style tokenizers do); keeps all whitespace.
DIGITS_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++|\p{N}| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_BERT_PUNCT = r"\p{P}!-/:-@\[-`{-~"
BERT_PATTERN = rf"[{_BERT_PUNCT}{CJK_CLASS}]|[^{_BERT_PUNCT}{CJK_CLASS}\p{{White_Space}}]+"
METASPACE = "\u2581"  # ▁

PRESET_PATTERNS: dict[str, str | None] = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "whitespace": WHITESPACE_PATTERN,
    "digits": DIGITS_PATTERN,
    "bert": BERT_PATTERN,
    "none": None,
    "metaspace": None,
}
PRESETS = tuple(PRESET_PATTERNS)
# Presets whose pieces cover the whole input, so decoding is an exact inverse.
LOSSLESS_PRESETS = frozenset({"gpt2", "cl100k", "o200k", "digits", "none", "metaspace"})

CUSTOM_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PreTokenizer:
    """A named way of splitting text; ``name`` is a preset or ``"custom"`` with ``pattern`` set."""

    name: str
    pattern: str | None = None

    @property
    def keeps_whitespace(self) -> bool:
        return self.name not in ("whitespace", "bert")

    def spec(self) -> str:
        """The string the CLI and the project file use for this pre-tokenizer."""
        return (self.pattern or "") if self.name == "custom" else self.name

    def compiled(self) -> regex.Pattern[str] | None:
        return _compile(self.pattern) if self.pattern is not None else None

    def split(self, text: str) -> list[str]:
        """The pieces of ``text`` in order (empty pieces are never returned)."""
        return [text[a:b] for a, b in self.spans(text)] if self.name != "metaspace" else _metaspace(text)

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Code-point spans of the pieces: what editors use to colour them."""
        if self.name == "metaspace":
            # Spaces become ▁ one for one, so offsets in the marked text are offsets in the input.
            pos = 0
            for piece in _metaspace(text):
                yield pos, pos + len(piece)
                pos += len(piece)
            return
        compiled = self.compiled()
        if compiled is None:
            if text:
                yield 0, len(text)
            return
        custom = self.name == "custom"
        timeout = CUSTOM_TIMEOUT_S if custom else None
        try:
            pos = 0
            for match in compiled.finditer(text, concurrent=True, timeout=timeout):
                start, end = match.span()
                if end > start:
                    if custom and start > pos:
                        yield pos, start  # text the pattern skipped stays, as its own piece
                    yield start, end
                    pos = end
            if custom and pos < len(text):
                yield pos, len(text)
        except TimeoutError as exc:
            raise WorkbenchError(
                f"the pre-tokenizer pattern took longer than {CUSTOM_TIMEOUT_S:.0f} s on one text "
                "(catastrophic backtracking?): simplify the pattern"
            ) from exc

    def prepare(self, text: str) -> str:
        """Text as the model sees it before splitting (only ``metaspace`` changes it)."""
        return text.replace(" ", METASPACE) if self.name == "metaspace" else text


_COMPILED: dict[str, regex.Pattern[str]] = {}


def _compile(pattern: str) -> regex.Pattern[str]:
    compiled = _COMPILED.get(pattern)
    if compiled is None:
        compiled = _COMPILED[pattern] = regex.compile(pattern)
    return compiled


def _metaspace(text: str) -> list[str]:
    marked = text.replace(" ", METASPACE)
    pieces: list[str] = []
    start = 0
    for i in range(1, len(marked)):
        if marked[i] == METASPACE and marked[i - 1] != METASPACE:
            pieces.append(marked[start:i])
            start = i
    if marked:
        pieces.append(marked[start:])
    return pieces


def make_pretokenizer(spec: str | None) -> PreTokenizer:
    """A preset name (``gpt2``, ``cl100k`` …) or a custom regex, validated with a clear error."""
    if spec is None or spec == "":
        spec = "none"
    key = spec.strip().lower()
    if key in PRESET_PATTERNS:
        return PreTokenizer(key, PRESET_PATTERNS[key])
    try:
        _compile(spec)
    except regex.error as exc:
        presets = ", ".join(PRESETS)
        raise WorkbenchError(
            f"pre-tokenizer {spec!r} is neither a preset ({presets}) nor a valid regular expression: {exc}"
        ) from exc
    for pattern_name, pattern in PRESET_PATTERNS.items():
        if pattern == spec:
            return PreTokenizer(pattern_name, pattern)
    return PreTokenizer("custom", spec)


def onig_compatible(pattern: str) -> str:
    """The same pattern for Oniguruma (Hugging Face ``tokenizers``' regex engine).

    Oniguruma reads ``X{1,3}+`` as "one or more repetitions of X{1,3}", not as a possessive
    ``{1,3}``, so cl100k's ``\\p{N}{1,3}+`` would swallow whole digit runs there. Dropping the
    possessive mark keeps our meaning: each such quantifier ends its alternative, where possessive
    and greedy match the same text.
    """
    return regex.sub(r"(\{\d+(?:,\d*)?\})\+", r"\1", pattern)
