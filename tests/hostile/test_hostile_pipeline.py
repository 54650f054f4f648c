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


HOSTILE_VALUES = [2**40, -1, 1.5, "x", "", None, True, [], {}, [[1]], {"a": 1}, {"type": "Sequence"},
                  {"type": "Replace"}, "\ud800", "(a+)+$"]


def _paths(value, prefix=()):
    out = []
    items = value.items() if isinstance(value, dict) else enumerate(value[:5]) if isinstance(value, list) else ()
    for key, item in items:
        out.append(prefix + (key,))
        out.extend(_paths(item, prefix + (key,)))
    return out


@pytest.mark.parametrize("family", ["bert", "llama"])
def test_mutated_pipeline_components_import_or_refuse_in_one_line(tmp_path, family):
    """A hostile value anywhere in a real pipeline's components: refused in one line, or imported
    and then encoded, decoded and explained without a crash."""
    import random
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hf_pipelines import BUILDERS

    from workbench.core.encoder import Encoder
    from workbench.errors import WorkbenchError
    from workbench.formats import load_tokenizer_file
    from workbench.tasks.pipeline_view import round_trip, stages

    base = json.loads(BUILDERS[family](["Hello world, a test line.", "Another one here!"] * 30).to_str())
    rng = random.Random(family)
    for case in range(30):
        document = json.loads(json.dumps(base))
        stage = rng.choice(["normalizer", "pre_tokenizer", "decoder", "post_processor", "added_tokens"])
        paths = _paths(document[stage], (stage,)) if document.get(stage) is not None else []
        target, key = (document, stage) if not paths else (None, None)
        if paths:
            path = rng.choice(paths)
            target = document
            for part in path[:-1]:
                target = target[part]
            key = path[-1]
        target[key] = rng.choice(HOSTILE_VALUES)
        file = tmp_path / f"case{case}.json"
        file.write_text(json.dumps(document), encoding="utf-8")
        try:
            tok = load_tokenizer_file(file)
            encoder = Encoder(tok)
            for text in ("Hello, World! [CLS] x", "  a\tb ", "数字 ꙮ"):
                encoder.decode(encoder.encode(text, add_special_tokens=True), skip_special_tokens=True)
                stages(encoder, text)
                round_trip(encoder, text)
        except WorkbenchError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(f"case{case}.json"), (case, str(exc))
