"""``workbench encode --special …``: tokenizers' ``add_special_tokens`` and tiktoken's
``allowed_special``/``disallowed_special``, each held equal to the library that defines it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "hostile"))

from hf_pipelines import bert, save  # noqa: E402
from hostile_helpers import run_inproc  # noqa: E402

from workbench.core.encoder import Encoder  # noqa: E402
from workbench.core.model import Tokenizer  # noqa: E402
from workbench.core.pretokenize import GPT2_PATTERN  # noqa: E402
from workbench.tasks.special import DisallowedSpecial, encode_text, parse_special  # noqa: E402

EOT, FIM = "<|endoftext|>", "<|fim|>"
TEXTS = ["plain text, nothing special", f"one {EOT} two", f"{FIM}{EOT}{FIM}x", f"the {EOT}{EOT} end", ""]


@pytest.fixture(scope="module")
def pair():
    """A tiktoken Encoding and the same ranks as a workbench tokenizer (tiktoken's byte rule)."""
    import tiktoken

    pieces = [bytes([b]) for b in range(256)] + [b"th", b"the", b" the", b"en", b" t", b"ex", b"ext"]
    ranks = {p: i for i, p in enumerate(pieces)}
    specials = {EOT: len(pieces), FIM: len(pieces) + 1}
    enc = tiktoken.Encoding("t", pat_str=GPT2_PATTERN.replace("++", "+"), mergeable_ranks=ranks,
                            special_tokens=specials)
    tok = Tokenizer(vocab=tuple(pieces) + (EOT.encode(), FIM.encode()), merges=(), units="bytes",
                    pretokenizer="gpt2", special_tokens=specials, merge_rule="bytes", name="t")
    return enc, tok


@pytest.mark.parametrize("text", TEXTS)
def test_allowed_and_disallowed_special_equal_tiktoken(pair, text):
    enc, tok = pair
    encoder = Encoder(tok)
    cases = [(["allow=all"], {"allowed_special": "all"}),
             ([f"allow={FIM}"], {"allowed_special": {FIM}, "disallowed_special": ()}),
             (["disallow=none"], {"disallowed_special": ()}),
             (["allow=", "disallow=none"], {"allowed_special": set(), "disallowed_special": ()}),
             ([], {"disallowed_special": ()})]
    for options, kwargs in cases:
        assert encode_text(encoder, text, parse_special(options, tok)) == enc.encode(text, **kwargs), options
    # tiktoken's own default: refuse a special token in the text, with its exact words
    policy = parse_special(["disallow=all"], tok)
    try:
        expected = enc.encode(text)
    except ValueError as exc:
        with pytest.raises(DisallowedSpecial) as ours:
            encode_text(encoder, text, policy)
        assert ours.value.tiktoken_text == str(exc)
    else:
        assert encode_text(encoder, text, policy) == expected
    try:
        expected = enc.encode(text, allowed_special={FIM})
    except ValueError as exc:
        with pytest.raises(DisallowedSpecial) as ours:
            encode_text(encoder, text, parse_special([f"allow={FIM}", "disallow=all"], tok))
        assert ours.value.tiktoken_text == str(exc)
    else:
        assert encode_text(encoder, text, parse_special([f"allow={FIM}", "disallow=all"], tok)) == expected


def test_cli_prints_one_line_or_tiktokens_own_text(tmp_path, pair):
    from workbench.formats import export_tokenizer

    enc, tok = pair
    path = tmp_path / "t.tiktoken"
    export_tokenizer(tok, "tiktoken", path)
    text = f"a {EOT} b"
    code, _out, err = run_inproc(["encode", "--tokenizer", str(path), "--text", text, "--special", "disallow=all"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "disallowed special token '<|endoftext|>'" in err
    code, _out, err = run_inproc(["encode", "--tokenizer", str(path), "--text", text, "--special", "disallow=all",
                                  "--tiktoken-errors"])
    with pytest.raises(ValueError) as real:
        enc.encode(text)
    assert code == 2 and err == str(real.value)
    code, out, _err = run_inproc(["encode", "--tokenizer", str(path), "--text", text, "--special", "allow=all"])
    assert code == 0 and list(map(int, out.split())) == enc.encode(text, allowed_special="all")
    code, _out, err = run_inproc(["encode", "--tokenizer", str(path), "--text", text, "--special", "allow=<nope>"])
    assert code == 2 and "'<nope>' is not a special token of this tokenizer" in err


def test_add_special_tokens_equals_tokenizers(tmp_path):
    real = bert(["Hello world, this is a test.", "Another line of text here!"] * 20)
    path = save(real, tmp_path, "bert")
    text = "Hello [SEP] world"
    for options, add in (([], True), (["--special", "add"], True), (["--special", "none"], False),
                         (["--no-special-tokens"], False)):
        args = ["encode", "--tokenizer", str(path), "--text", text, "--json", *options]
        code, out, err = run_inproc(args)
        assert code == 0, err
        assert json.loads(out)["ids"] == real.encode(text, add_special_tokens=add).ids
    # tokenizers' encode_special_tokens=True: no special token is found in the text
    real.encode_special_tokens = True
    code, out, _err = run_inproc(["encode", "--tokenizer", str(path), "--text", text, "--special", "allow=",
                                  "--no-special-tokens"])
    assert list(map(int, out.split())) == real.encode(text, add_special_tokens=False).ids
    ids = real.encode(text).ids
    code, out, _err = run_inproc(["decode", "--tokenizer", str(path), "--ids", ",".join(map(str, ids)),
                                  "--skip-special-tokens"])
    assert out.rstrip("\n") == real.decode(ids)
