"""``workbench count`` and ``workbench encode --jsonl`` through the real entry point (a child process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.corpus import open_source
from workbench.corpus.counts import count_sources
from workbench.corpus.counts_table import read_counts_table


def workbench(*args, cwd):
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture
def slices(tmp_path, corpora):
    files = []
    for path in sorted(corpora.glob("*.txt"))[:2]:
        out = tmp_path / path.name
        out.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:300]), encoding="utf-8")
        files.append(out)
    return files


def test_count_then_merge_equals_counting_both(tmp_path, slices):
    a, b = slices
    for name, path in (("a", a), ("b", b)):
        done = workbench("count", path, "--out", f"{name}.wordcounts.tsv", "--pretokenizer", "o200k", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    done = workbench("count", "--merge", "a.wordcounts.tsv", "b.wordcounts.tsv", "--out", "ab.wordcounts.tsv",
                     "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    settings_read, merged = read_counts_table(tmp_path / "ab.wordcounts.tsv")
    expected = count_sources([open_source(a), open_source(b)], pretokenizer="o200k", sequences="lines")
    assert list(merged.items()) == list(expected.items())
    assert result["distinct"] == len(expected) and result["tokens"] == sum(expected.values())
    assert settings_read["sequences"] == "lines" and settings_read["pretokenizer"] == "o200k"


def test_count_errors_are_one_line(tmp_path, slices):
    a, _b = slices
    assert workbench("count", a, "--out", "a.wordcounts.tsv", cwd=tmp_path).returncode == 0
    assert workbench("count", a, "--out", "d.wordcounts.tsv", "--sequences", "documents", cwd=tmp_path).returncode == 0
    done = workbench("count", "--merge", "a.wordcounts.tsv", "d.wordcounts.tsv", "--out", "x.wordcounts.tsv", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "sequences documents" in done.stderr
    done = workbench("count", "--out", "x.wordcounts.tsv", cwd=tmp_path)
    assert done.returncode == 2 and "name the corpus files" in done.stderr
    assert not (tmp_path / "x.wordcounts.tsv").exists()


def test_encode_jsonl_is_tiktoken_line_by_line(tmp_path, cl100k_file):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    from workbench.core.pretokenize import CL100K_PATTERN

    lines = ["hello world", "", "  two  spaces ", "Привет, мир 👋", "tab\there\r"]
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    done = workbench("encode", "--tokenizer", cl100k_file, "--file", path, "--jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    oracle = tiktoken.Encoding(name="cl100k_jsonl", pat_str=CL100K_PATTERN,
                               mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)), special_tokens={})
    assert rows == [{"ids": oracle.encode(line.removesuffix("\r")), "count": len(oracle.encode(line.removesuffix("\r")))}
                    for line in lines]
