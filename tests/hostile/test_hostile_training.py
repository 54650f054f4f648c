"""Hostile training arguments and corpora through the real CLI (issue 15, items 7, 8, 11, 12).

Arguments are checked before a byte of the corpus is read: the corpus used here decodes badly
past its first 64 KB, so an argument check that ran after reading would report the corpus instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostile_helpers import one_line_error, run_inproc

from workbench.errors import WorkbenchError


@pytest.fixture
def late_bad_corpus(tmp_path) -> Path:
    """Valid for 70 KB (what opening a file checks), then a byte that is not UTF-8."""
    path = tmp_path / "late.txt"
    path.write_bytes(b"plain words on a line\n" * 3300 + b"bad \xff byte\n")
    return path


@pytest.mark.parametrize("extra, says", [
    (["--vocab-size", str(10**9)], "--vocab-size: the vocabulary size 1000000000"),
    (["--merges", "50", "--special", ""], "empty"),
    (["--merges", "50", "--special", "a"], "'a'"),
    (["--merges", "50", "--special", " "], "whitespace"),
    (["--merges", "50", "--special", "cls"], "'cls'"),
    (["--merges", "50", "--special", "<s>", "--special", "<s>"], "twice"),
])
def test_bad_arguments_are_refused_before_the_corpus_is_read(late_bad_corpus, tmp_path, extra, says):
    project = tmp_path / "p.tokproj"
    code, _out, err = run_inproc(["train", str(late_bad_corpus), "--project", str(project), "--progress", "none",
                                  *extra])
    assert code == 2
    line = one_line_error(err)
    assert says in line and "late.txt" not in line, line
    assert not project.exists()


def test_the_corpus_check_still_fires_with_good_arguments(late_bad_corpus, tmp_path):
    """The fixture really is bad past its head: otherwise the test above proves nothing."""
    code, _out, err = run_inproc(["train", str(late_bad_corpus), "--project", str(tmp_path / "p.tokproj"),
                                  "--merges", "5", "--progress", "none"])
    assert code == 2 and "late.txt" in one_line_error(err)


def test_special_token_rule():
    from workbench.core.train_checks import check_special_tokens

    check_special_tokens(["<|endoftext|>", "[CLS]", "<s>", "</s>", "<pad>", "<|a b|>"])
    for bad in ("", " ", "a", "é", "\n", "ab", "CLS", "12", "<s>\n"):
        with pytest.raises(WorkbenchError):
            check_special_tokens([bad])


def test_accepted_special_tokens_export_in_every_format(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("some <s> text and [CLS] more text here\n" * 30, "utf-8")
    project = tmp_path / "p.tokproj"
    code, _out, err = run_inproc(["train", str(corpus), "--project", str(project), "--vocab-size", "300",
                                  "--special", "<s>", "--special", "[CLS]", "--progress", "none"])
    assert code == 0, err
    for fmt, out in (("hf", "t.json"), ("gpt2", "g"), ("tiktoken", "t.tiktoken"), ("merges-csv", "m.csv")):
        code, _out, err = run_inproc(["export", str(project), "--format", fmt, "--out", str(tmp_path / out)])
        assert code == 0, (fmt, err)


@pytest.mark.parametrize("pattern", ["a*", r"\p{L}+", "x"])
def test_custom_pattern_keeps_the_text_it_does_not_match(tmp_path, pattern):
    corpus = tmp_path / "c.txt"
    corpus.write_text("banana split, bananas and splits 123\n" * 30, "utf-8")
    project = tmp_path / "p.tokproj"
    code, _out, err = run_inproc(["train", str(corpus), "--project", str(project), "--vocab-size", "280",
                                  "--pretokenizer", pattern, "--progress", "none"])
    assert code == 0, err
    for text in ("banana split", "  split 42 ünï  "):
        code, out, err = run_inproc(["encode", "--tokenizer", str(project), "--text", text, "--json"])
        assert code == 0, err
        ids = json.loads(out)["ids"]
        code, out, err = run_inproc(["decode", "--tokenizer", str(project), "--ids", ",".join(map(str, ids))])
        assert code == 0, err
        assert out == text + "\n"  # "a*" once gave "aaa"


def test_custom_pattern_export_to_hf_agrees(tmp_path):
    """HF's Split(pattern, isolated) also keeps unmatched text as pieces: the export verifies."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("banana split, bananas and splits\n" * 30, "utf-8")
    project = tmp_path / "p.tokproj"
    assert run_inproc(["train", str(corpus), "--project", str(project), "--vocab-size", "280",
                       "--pretokenizer", "a+", "--progress", "none"])[0] == 0
    code, out, err = run_inproc(["export", str(project), "--format", "hf", "--out", str(tmp_path / "t.json")])
    assert code == 0, err
    assert "tokenizers" in out
    # tiktoken drops unmatched text (and its Rust core panicked on empty matches): refused in one line
    code, out, err = run_inproc(["export", str(project), "--format", "tiktoken", "--out", str(tmp_path / "t.tiktoken")])
    assert code == 2 and "skips text" in one_line_error(err)
    assert not (tmp_path / "t.tiktoken").exists()


def test_explicit_encoding_reads_a_utf8_file_with_nul_characters(tmp_path):
    corpus = tmp_path / "nul.txt"
    corpus.write_bytes(b"hello world\x00 and more\x00 text here\nsecond line of text\n")
    args = ["train", str(corpus), "--project", str(tmp_path / "p.tokproj"), "--merges", "5", "--progress", "none"]
    code, _out, err = run_inproc(args)
    assert code == 2 and "encoding" in one_line_error(err)  # sniffed: looks binary, says how to insist
    code, _out, err = run_inproc([*args, "--encoding", "utf-8"])
    assert code == 0, err


def test_a_file_given_twice_is_read_once_with_a_note(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("one two three four\n" * 20, "utf-8")
    (tmp_path / "link.txt").symlink_to(corpus)
    once = run_inproc(["stats", str(corpus), "--json"])
    twice = run_inproc(["stats", str(corpus), str(tmp_path / "link.txt"), str(corpus), "--json"])
    assert twice[0] == 0
    assert json.loads(twice[1]) == json.loads(once[1])  # counted once
    notes = [line for line in twice[2].splitlines() if line.strip()]
    assert len(notes) == 2 and all("given more than once" in n for n in notes)


def test_training_counts_a_file_given_twice_once(tmp_path):
    """With reader options (--encoding) training opens the files itself: same rule, same note."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("one two three four\n" * 20, "utf-8")
    os.link(corpus, tmp_path / "hard.txt")
    counts = []
    for name, files in (("once", [corpus]), ("twice", [corpus, tmp_path / "hard.txt", corpus])):
        project = tmp_path / f"{name}.tokproj"
        code, _out, err = run_inproc(["train", *map(str, files), "--project", str(project), "--merges", "3",
                                      "--encoding", "utf-8", "--progress", "none"])
        assert code == 0, err
        assert len([line for line in err.splitlines() if "given more than once" in line]) == len(files) - 1
        code, out, _err = run_inproc(["runs", str(project), "--json"])
        counts.append(json.loads(out)[0]["settings"]["initial_token_count"])
    assert counts[0] == counts[1]
