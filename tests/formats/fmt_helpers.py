"""Helpers shared by the format tests (a uniquely named module, safe to import from tests)."""

from __future__ import annotations

from shared_corpora import CORPORA, require_corpora

from workbench.core.model import Tokenizer, base_vocab

# Hard Unicode every byte-level export must survive in the real libraries.
HARD_TEXTS = [
    "family 👩\u200d👩\u200d👧\u200d👦 and 🏳️\u200d🌈 flags 🇩🇪🇯🇵🇺🇸, thumbs 👍🏽👍🏿",
    "combining: e\u0301 a\u0308\u0301 Z\u0351\u0352 ñ vs n\u0303, Hangul 한국어, Devanagari नमस्ते",
    "CJK 日本語のテキスト、中文字符。 mixed漢字and ascii",
    "windows\r\nline\r\n\r\nends\rand\n\n\nnewlines",
    "long          spaces     here\t\t\ttabs  \u00a0nbsp   trailing    ",
    "digits 1 12 123 1234 12345 3.14159 2024-06-01 ١٢٣ ４５",
    "contractions: it's we'll they've I'M 'tis",
]


def build(units: str, pairs=(), *, alphabet: str = "", eow: str = "", specials=(), **kw) -> Tokenizer:
    """A tokenizer from named merges, ids in the documented layout (specials, base, marker, merges)."""
    vocab = base_vocab(units, alphabet=alphabet, specials=specials, end_of_word=eow)
    merges = []
    for a, b in pairs:
        left = vocab.index(a if isinstance(a, bytes) else a.encode("utf-8"))
        right = vocab.index(b if isinstance(b, bytes) else b.encode("utf-8"))
        vocab.append(vocab[left] + vocab[right])
        merges.append((left, right, len(vocab) - 1))
    return Tokenizer(vocab=tuple(vocab), merges=tuple(merges), units=units, end_of_word=eow,
                     special_tokens={s: i for i, s in enumerate(specials)}, **kw)


# Merges chosen to hit spaces, CRLF, digit runs, partial UTF-8 (emoji/CJK lead bytes) and words.
BYTE_PAIRS = [
    (" ", "t"), ("h", "e"), (" t", "he"), ("i", "n"), (" ", " "), ("  ", "  "), (b"\xf0", b"\x9f"),
    (b"\xe6", b"\x97"), ("1", "2"), ("12", "3"), ("\r", "\n"), ("e", "s"), (" ", "a"), ("n", "d"),
    (" a", "nd"), ("'", "s"), (b"\xf0\x9f", b"\x91"), ("\u00e4".encode()[:1], "\u00e4".encode()[1:]),
]


def corpus_lines(name: str, count: int) -> list[str]:
    require_corpora()
    path = CORPORA / name
    with open(path, encoding="utf-8", newline="") as handle:
        return [line for _, line in zip(range(count), handle)]
