"""Fixtures for the hostile-input tests: a small trained project and its exports."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

TEXT = ("The quick brown fox jumps over the lazy dog. Ünïcödé text, 数字 123 and 4567! "
        "Another line with words, words and more words.\n") * 40


@pytest.fixture(scope="session")
def trained(tmp_path_factory) -> Path:
    """A project with one finished byte-level run (one special token), trained through the CLI."""
    from hostile_helpers import run_inproc

    root = tmp_path_factory.mktemp("hostile")
    corpus = root / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    project = root / "p.tokproj"
    code, _out, err = run_inproc(["train", str(corpus), "--project", str(project), "--vocab-size", "300",
                                  "--special", "<|endoftext|>", "--progress", "none"], timeout_s=60)
    assert code == 0, err
    return project


@pytest.fixture(scope="session")
def exports(trained: Path) -> dict[str, Path]:
    """The run exported in every importable format: {format: path to import}."""
    from hostile_helpers import run_inproc

    root = trained.parent / "exports"
    root.mkdir()
    outs = {"hf": root / "tokenizer.json", "gpt2": root / "gpt2", "tiktoken": root / "run.tiktoken",
            "wordpiece": root / "vocab.txt", "spm-vocab": root / "run.vocab"}
    for fmt, out in outs.items():
        if fmt in ("wordpiece", "spm-vocab"):
            continue
        code, _out, err = run_inproc(["export", str(trained), "--format", fmt, "--out", str(out)], timeout_s=60)
        assert code == 0, err
    # A BPE run is not exported as vocab.txt or .vocab (a loader would give other ids); the importers
    # still read such files, so they are written here as other tools write them.
    from workbench.formats.vocab_lists import render_spm_vocab, render_wordpiece
    from workbench.tasks.sources import load_tokenizer

    tokenizer = load_tokenizer(str(trained))
    outs["wordpiece"].write_bytes(render_wordpiece(tokenizer)[0])
    outs["spm-vocab"].write_bytes(render_spm_vocab(tokenizer)[0])
    return outs


@pytest.fixture(scope="session")
def three_runs(tmp_path_factory) -> Path:
    """A project with a finished BPE, WordPiece and Unigram run (ids 1, 2, 3), trained once through
    the CLI on 30 kB of the bundled demo corpus; tests copy it before changing anything."""
    from hostile_helpers import run_inproc

    from workbench.corpus.demo import demo_corpus_files

    root = tmp_path_factory.mktemp("three")
    source = next(p for p in demo_corpus_files() if p.name.startswith("en_wiki"))
    data = source.read_bytes()[:30000]
    corpus = root / "corpus.txt"
    corpus.write_bytes(data[: data.rindex(b"\n") + 1])
    project = root / "three.tokproj"
    for flags in (["--vocab-size", "400", "--special", "<|endoftext|>"],
                  ["--model", "wordpiece", "--vocab-size", "200"],
                  ["--model", "unigram", "--vocab-size", "200"]):
        code, _out, err = run_inproc(["train", str(corpus), "--project", str(project), "--progress", "none",
                                      "--no-count-cache", *flags], timeout_s=120)
        assert code == 0, err
    return project
