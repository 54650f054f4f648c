"""Pre-tokenizer presets, custom patterns (validated, with a timeout) and normalizers."""

from __future__ import annotations

import pytest

from workbench.core import pretokenize
from workbench.core.normalize import make_normalizer, parse_normalizer
from workbench.core.pretokenize import make_pretokenizer
from workbench.errors import WorkbenchError


def test_presets_split_as_published():
    assert make_pretokenizer("gpt2").split("Hello world's 123") == ["Hello", " world", "'s", " 123"]
    assert make_pretokenizer("cl100k").split("Hello  1234567") == ["Hello", " ", " ", "123", "456", "7"]
    assert make_pretokenizer("whitespace").split("Hi, you!  ok") == ["Hi", ",", "you", "!", "ok"]
    assert make_pretokenizer("digits").split("in 2024") == ["in", " ", "2", "0", "2", "4"]
    assert make_pretokenizer("none").split("a b") == ["a b"]
    assert make_pretokenizer("metaspace").split("a  b c") == ["a", "▁▁b", "▁c"]


@pytest.mark.parametrize("preset", ["gpt2", "cl100k", "o200k", "digits", "none", "metaspace"])
def test_lossless_presets_cover_the_text(preset):
    text = "Mixed: naïve 中文 😀 1234\r\n\t  end "
    pre = make_pretokenizer(preset)
    joined = "".join(pre.split(text))
    assert joined.replace("▁", " ") == text


def test_custom_pattern_is_validated_with_a_clear_message():
    with pytest.raises(WorkbenchError, match="neither a preset .* nor a valid regular expression"):
        make_pretokenizer("([a-z")
    assert make_pretokenizer(r"\w+|\W").split("ab,c") == ["ab", ",", "c"]
    assert make_pretokenizer(r"\w+").name == "custom"


def test_catastrophic_custom_pattern_times_out(monkeypatch):
    monkeypatch.setattr(pretokenize, "CUSTOM_TIMEOUT_S", 0.2)
    pre = make_pretokenizer(r"(a|a)+$")
    with pytest.raises(WorkbenchError, match="took longer"):
        pre.split("a" * 40 + "b")


def test_normalizers_compose_in_order():
    assert make_normalizer(parse_normalizer("nfkc,lower"))("ＡＢＣ ﬁ") == "abc fi"
    assert make_normalizer(parse_normalizer("strip-accents"))("Café naïve") == "Cafe naive"
    assert make_normalizer(parse_normalizer("nfc"))("e\u0301") == "é"
    with pytest.raises(WorkbenchError, match="unknown normalizer 'upper'"):
        parse_normalizer("upper")
