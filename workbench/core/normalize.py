"""Text normalizers, composable in the order given (``"nfkc,lower"``).

Deliberately small: Unicode normal forms, lower-casing and accent stripping cover what
the GPT/BERT families use. Anything fancier belongs in the user's own pipeline.

SentencePiece's own steps (Unigram's defaults are ``nmt,spm-whitespace``): ``nmt`` removes C0/C1
control characters and reads tabs, line breaks and invisible spaces as a space (its NMT rules,
without NFKC); ``spm-whitespace`` is its ``remove_extra_whitespaces`` (no leading or trailing
spaces, a run of spaces as one); ``nmt-nfkc`` is its default ``nmt_nfkc`` rule, NMT then NFKC.

``bert`` and ``bert-lower`` are Hugging Face's ``BertNormalizer`` (cased: lowercase=False,
strip_accents=False; uncased: its defaults, lowercase=True with accents stripped): drop control
characters, NUL and U+FFFD, turn whitespace into a space, put spaces around CJK ideographs, then
(uncased) NFD without nonspacing marks — *not* recomposed, as BERT leaves it — and lower-case one
character at a time (so a final Σ becomes σ, as in Rust, not ς as ``str.lower`` makes it).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence

from workbench.errors import WorkbenchError


def _strip_accents(text: str) -> str:
    # Decompose, drop combining marks (category Mn), recompose what is left.
    decomposed = unicodedata.normalize("NFD", text)
    kept = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
    return unicodedata.normalize("NFC", kept)


# BERT's "Chinese character" blocks (CJK Unified Ideographs and extensions, compatibility ideographs).
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
CJK_CLASS = "".join(f"\\U{a:08X}-\\U{b:08X}" for a, b in CJK_RANGES)  # for a regex [...] class
# Rust's char::is_whitespace (the White_Space property) minus the ones that are also controls.
_BERT_SPACES = frozenset("\t\n\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000") | frozenset(
    chr(c) for c in range(0x2000, 0x200B))


def _is_cjk(code: int) -> bool:
    return any(a <= code <= b for a, b in CJK_RANGES)


def _bert_char(ch: str) -> str:
    """What BERT's cleaning and CJK padding make of one character."""
    if ch in _BERT_SPACES:
        return " "
    code = ord(ch)
    if code == 0 or code == 0xFFFD or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs"):
        return ""
    if _is_cjk(code):
        return f" {ch} "
    return ch


class _BertTable(dict):
    """``str.translate`` table filled on first sight of each character (hits stay in C)."""

    def __missing__(self, code: int) -> str:
        value = self[code] = _bert_char(chr(code))
        return value


_BERT_TABLE = _BertTable()


def _bert_clean(text: str) -> str:
    if text.isascii() and text.isprintable():
        return text
    return text.translate(_BERT_TABLE)


class _LowerTable(dict):
    """``str.translate`` table for the uncased step after NFD: a nonspacing mark (category Mn) goes,
    any other character becomes its own ``lower()`` — one character at a time, as the per-character
    loop it replaces (a mark that lower-casing makes stays, as it did). Filled on first sight."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        value = self[code] = "" if unicodedata.category(ch) == "Mn" else ch.lower()
        return value


_LOWER_TABLE = _LowerTable()


def _bert_lower(text: str) -> str:
    text = _bert_clean(text)
    if text.isascii():  # no marks, nothing NFD changes: str.lower is the per-character lower here
        return text.lower()
    return unicodedata.normalize("NFD", text).translate(_LOWER_TABLE)


def _spm_whitespace(text: str) -> str:
    # SentencePiece's remove_extra_whitespaces: no leading/trailing spaces, runs of spaces become one.
    return " ".join(part for part in text.split(" ") if part)


# SentencePiece's NMT rules (the part of its default nmt_nfkc that is not NFKC), as its compiled
# character map does them (read off sentencepiece itself, character by character): C0/C1 control
# characters removed; tab, line breaks, the Arabic letter mark, Ogham space, zero-width space and
# non-joiner, LRM/RLM, line/paragraph separators, ▁, BOM and U+FFFD read as a space. NUL is left
# alone (a character map cannot hold it; SentencePiece's trainer never makes it a piece). Note:
# tokenizers' own ``Nmt`` normalizer differs (it also spaces U+200D ZWJ, and not U+061C).
NMT_REMOVED = (*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F)
NMT_SPACES = (0x09, 0x0A, 0x0C, 0x0D, 0x061C, 0x1680, 0x200B, 0x200C, 0x200E, 0x200F, 0x2028, 0x2029, 0x2581,
              0xFEFF, 0xFFFD)
_NMT_TABLE: dict[int, str | None] = {**{c: None for c in NMT_REMOVED}, **{c: " " for c in NMT_SPACES}}


def _nmt(text: str) -> str:
    return text if text.isascii() and text.isprintable() else text.translate(_NMT_TABLE)


def _nmt_nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", _nmt(text))


NORMALIZERS: dict[str, Callable[[str], str]] = {
    "none": lambda text: text,
    "nfc": lambda text: unicodedata.normalize("NFC", text),
    "nfd": lambda text: unicodedata.normalize("NFD", text),
    "nfkc": lambda text: unicodedata.normalize("NFKC", text),
    "nfkd": lambda text: unicodedata.normalize("NFKD", text),
    "lower": str.lower,
    "strip-accents": _strip_accents,
    "bert": _bert_clean,
    "bert-lower": _bert_lower,
    "spm-whitespace": _spm_whitespace,
    "nmt": _nmt,
    "nmt-nfkc": _nmt_nfkc,
}


def parse_normalizer(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """Turn ``"nfkc,lower"`` (or a list) into a validated tuple of normalizer names."""
    if spec is None:
        return ()
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for raw in names:
        name = raw.strip().lower().replace("_", "-")
        if name in ("", "none"):
            continue
        if name == "lowercase":
            name = "lower"
        if name not in NORMALIZERS:
            known = ", ".join(sorted(NORMALIZERS))
            raise WorkbenchError(f"unknown normalizer {raw!r}: choose from {known} (comma-separated to combine)")
        out.append(name)
    return tuple(out)


def make_normalizer(names: Sequence[str]) -> Callable[[str], str]:
    """Compose the named normalizers into one function applied left to right."""
    funcs = [NORMALIZERS[name] for name in names if name != "none"]
    if not funcs:
        return lambda text: text
    if len(funcs) == 1:
        return funcs[0]

    def normalize(text: str) -> str:
        for func in funcs:
            text = func(text)
        return text

    return normalize
