"""A tokenizer.json whose pipeline cannot be run exactly is refused in one line naming the piece,
exit 2, through the real CLI: an unknown component, a damaged Precompiled character map, added
tokens that overlap (one content with two ids, two contents on one id)."""

from __future__ import annotations

import base64
import json

import pytest
from hostile_helpers import one_line_error, run_inproc


def _document() -> dict:
    from tokenizers import Tokenizer, models

    return json.loads(Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]")).to_str())


def _encode(tmp_path, document: dict) -> tuple[int, str]:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    code, _out, err = run_inproc(["encode", "--tokenizer", str(path), "--text", "ab"])
    return code, err


@pytest.mark.parametrize("stage,component", [
    ("normalizer", {"type": "Chaos"}),
    ("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "UnicodeScripts"}]}),
    ("decoder", {"type": "CTC", "pad_token": "<pad>"}),
    ("post_processor", {"type": "Shuffle"}),
])
def test_an_unknown_component_is_named_in_one_line(tmp_path, stage, component):
    document = _document()
    document[stage] = component
    code, err = _encode(tmp_path, document)
    line = one_line_error(err)
    kind = component["pretokenizers"][1]["type"] if "pretokenizers" in component else component["type"]
    assert code == 2 and "tokenizer.json" in line and repr(kind) in line and "not supported" in line


@pytest.mark.parametrize("charsmap", [
    b"",  # nothing
    b"\x10\x00\x00\x00abc",  # a trie longer than the data
    b"\x04\x00\x00\x00\xff\xff\xff\xff\xfe\xfe",  # a unit pointing outside the trie, strings not UTF-8
    "not base64!",
])
def test_a_broken_precompiled_charsmap_is_refused(tmp_path, charsmap):
    document = _document()
    text = charsmap if isinstance(charsmap, str) else base64.b64encode(charsmap).decode()
    document["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": text}
    code, err = _encode(tmp_path, document)
    line = one_line_error(err)
    assert code == 2 and "Precompiled" in line and "tokenizer.json" in line


@pytest.mark.parametrize("entries,expected", [
    ([("[X]", 3), ("[X]", 4)], r"'\[X\]' is listed twice, as ids 3 and 4"),
    ([("[X]", 3), ("[Y]", 3)], r"'\[X\]' and '\[Y\]' share id 3"),
])
def test_overlapping_added_tokens_are_refused(tmp_path, entries, expected):
    import re

    document = _document()
    document["added_tokens"] = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                                 "normalized": False, "special": True} for c, i in entries]
    code, err = _encode(tmp_path, document)
    line = one_line_error(err)
    assert code == 2 and re.search(expected, line), line
