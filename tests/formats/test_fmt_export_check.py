"""The pre-export check: a tokenizer built to trip one rule gets exactly that warning, a clean one
none; through the CLI the warnings are printed before writing and ``--strict`` writes nothing
(exit 2), while a clean run on real text exports without a word on stderr."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from fmt_helpers import build
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.cli import run_cli
from workbench.core.model import Tokenizer
from workbench.tasks.export_check import check_tokenizer

LETTERS = "abcdefghijklmnop"


def padded(units: str, pairs=(), *, alphabet: str = "", specials=(), **kw) -> Tokenizer:
    """``build`` plus distinct filler merges of two letters until |V| is a multiple of 64."""
    base = len(specials) + (256 if units == "bytes" else len(set(alphabet)))
    fillers = [(a, b) for a, b in itertools.product(LETTERS, LETTERS) if a != b]
    needed = (-(base + len(pairs))) % 64
    return build(units, [*pairs, *fillers[:needed]], alphabet=alphabet, specials=specials, **kw)


def rules(tok: Tokenizer, fmt: str = "hf", **kw) -> set[str]:
    return {finding.rule for finding in check_tokenizer(tok, fmt, **kw)}


CHARS = " " + LETTERS


@pytest.mark.parametrize(("case", "expected"), [
    ("clean", set()),
    ("merges-space", {"merges-space"}),
    ("ill-formed-utf8", {"ill-formed-utf8"}),
    ("unreachable", {"unreachable"}),
    ("special-in-corpus", {"special-in-corpus"}),
    ("vocab-multiple", {"vocab-multiple"}),
    ("llama-cpp", {"llama-cpp"}),
])
def test_a_tokenizer_built_to_trip_a_rule_gets_that_warning_and_no_other(case, expected):
    corpus = ["plain text, no markup at all\n", "a second line\n"]
    kw: dict = {"corpus_texts": corpus, "unreachable": []}
    if case == "clean":  # byte-level, GPT-2's split, a fragment of a CJK character, a special token
        tok = padded("bytes", [(b"\xe6", b"\x97"), ("a", "b")], specials=("<|endoftext|>",), pretokenizer="gpt2")
    elif case == "merges-space":
        tok = padded("chars", [(" ", "a")], alphabet=CHARS, pretokenizer="cl100k")
    elif case == "ill-formed-utf8":
        tok = padded("bytes", [(b"\xff", b"a")], pretokenizer="o200k")
    elif case == "unreachable":
        tok = padded("bytes", pretokenizer="gpt2")
        kw["unreachable"] = [300]
    elif case == "special-in-corpus":
        tok = padded("bytes", specials=("<|endoftext|>",), pretokenizer="gpt2")
        kw["corpus_texts"] = [*corpus, "a document<|endoftext|>the next\n"]
    elif case == "vocab-multiple":
        tok = build("bytes", [("a", "b")], pretokenizer="gpt2")
    else:
        tok = padded("bytes", pretokenizer="whitespace")
    assert rules(tok, **kw) == expected
    for finding in check_tokenizer(tok, "hf", **kw):
        assert "\n" not in finding.message and len(finding.message) < 300


def test_rules_apply_where_they_mean_something():
    spaced = padded("chars", [(" ", "a")], alphabet=CHARS, pretokenizer="cl100k")
    assert rules(spaced, "merges-csv") == set()  # a CSV quotes the space
    assert rules(padded("bytes", [(" ", "a")], pretokenizer="gpt2")) == set()  # byte-level spells it Ġ
    custom = padded("bytes", pretokenizer=r"\w+|\s+|[^\w\s]+")
    assert rules(custom, "hf-folder") == {"llama-cpp"} and rules(custom, "tiktoken") == set()
    wordpiece = Tokenizer(vocab=tuple(f"[{i}]".encode() for i in range(128)), merges=(), units="chars",
                          pretokenizer="bert", model="wordpiece")
    assert rules(wordpiece) == set()  # llama.cpp reads BERT vocabularies its own way
    assert rules(padded("bytes", specials=("<|endoftext|>",), pretokenizer="gpt2"),
                 corpus_texts=None) == set()  # no corpus given: not searched


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    require_corpora()
    folder = tmp_path_factory.mktemp("check")
    lines = [line for path in CORPUS_FILES for line in path.read_text(encoding="utf-8").split("\n")[:40]]
    (folder / "train.txt").write_text("\n".join(lines) + "\n<|endoftext|> appears here as text\n", encoding="utf-8")
    project = folder / "p.tokproj"
    for name, flags in {"clean": ("--vocab-size", "640", "--special", "<|fim|>"),
                        "noisy": ("--vocab-size", "600", "--special", "<|endoftext|>", "--pretokenizer", "whitespace"),
                        "unigram": ("--model", "unigram", "--vocab-size", "512")}.items():
        assert run_cli(["train", str(folder / "train.txt"), "--project", str(project), *flags, "--name", name,
                        "--progress", "none", "--no-count-cache"]) == 0
    return project


def test_a_clean_run_exports_without_a_warning(project, capsys):
    capsys.readouterr()
    for run, fmt in ((1, "hf-folder"), (1, "gpt2"), (3, "hf-folder"), (3, "spm")):
        out = project.parent / f"clean-{run}-{fmt}"
        assert run_cli(["export", str(project), "--run", str(run), "--format", fmt, "--out", str(out),
                        "--strict"]) == 0
        assert capsys.readouterr().err == "", (run, fmt)


def test_warnings_are_printed_before_writing_and_strict_writes_nothing(project, capsys):
    capsys.readouterr()
    out = project.parent / "noisy"
    assert run_cli(["export", str(project), "--run", "2", "--format", "hf-folder", "--out", str(out), "--strict"]) == 2
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if line.startswith("workbench export: warning: ")]
    assert len(warnings) == 4 and not out.exists()
    # the whitespace pre-tokenizer drops every space, tab and line break: their byte tokens are unreachable
    assert "unreachable" in warnings[0] and "'<|endoftext|>' occur in the training corpus" in warnings[1]
    assert "600 is not a multiple of 64" in warnings[2] and "llama.cpp" in warnings[3]
    assert err[-1].startswith("workbench export: error: --strict: the pre-export check gave 4 warning(s)")
    assert run_cli(["export", str(project), "--run", "2", "--format", "hf-folder", "--out", str(out)]) == 0
    assert len(capsys.readouterr().err.splitlines()) == 4 and (out / "tokenizer_config.json").exists()
