"""The numpy seeding's per-position limits equal the string version's, word by word.

``unigram_seed.valid_lengths`` computes ``unigram.valid_limits`` for every position of all words
at once (script classes, combining marks taking the class before them, ▁ only first, the unknown
character never inside a piece, the piece length cap); the fingerprint tests pin the seeds it
leads to. Here the tricky cases are held directly, including words the corpora rarely show.
"""

from __future__ import annotations

import pytest

from workbench.core.unigram import METASPACE, UNK_CHAR, script_class, valid_limits
from workbench.core.unigram_seed import valid_lengths, word_codes

WORDS = [
    "a", "ab", f"{METASPACE}hello", f"{METASPACE}{METASPACE}x", f"x{METASPACE}", f"{METASPACE}",
    "e\u0301te\u0301", "\u0301\u0301a", f"{METASPACE}\u0301a", f"a{UNK_CHAR}bc", f"{UNK_CHAR}{UNK_CHAR}",
    "2014).", "abcπδ", "Привет!", "日本語のテキスト", "カタカナー漢字", "aaaaaaaaaaaaaaaaaaaaaa",
    f"{METASPACE}中文{UNK_CHAR}字", "ab\u0301\u0301cd", "ქართული", "ab12cd",
]


@pytest.mark.parametrize("max_len", [1, 2, 3, 16])
def test_valid_lengths_equal_the_string_limits(max_len: int) -> None:
    codes, first = word_codes(WORDS, pad=4)
    got = valid_lengths(codes, max_len, script_class)
    for word, at in zip(WORDS, first.tolist()):
        want = [lim - i for i, lim in enumerate(valid_limits(word, max_len))]
        assert got[at:at + len(word)].tolist() == want, word
        assert got[at + len(word)] == 0  # the separator after each word
