"""cl100k on a slice of every shared corpus: the audit's F1 is tiktoken's own token counts, its F2
the direct merge trace, and the CLI prints the summary and the rows."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import tiktoken
from tiktoken.load import load_tiktoken_bpe

from workbench.core.audit import traced_counts
from workbench.corpus import open_source
from workbench.formats.tiktoken_file import tiktoken_pattern
from workbench.tasks.audit import audit_tokenizer, corpus_counts
from workbench.tasks.sources import load_tokenizer

SLICE = 5_000  # bytes of each file, cut at a line end


@pytest.fixture(scope="module")
def slices(corpora, tmp_path_factory):
    folder = tmp_path_factory.mktemp("slices")
    out = []
    for path in corpora:
        data = path.read_bytes()[:SLICE]
        data = data[: data.rfind(b"\n") + 1]
        target = folder / path.name
        target.write_bytes(data)
        out.append(target)
    return out


@pytest.fixture(scope="module")
def cl100k(cl100k_file):
    return load_tokenizer(str(cl100k_file))


def test_f1_is_tiktokens_count_and_f2_the_trace(cl100k, cl100k_file, slices):
    encoding = tiktoken.Encoding(name="cl100k_audit_test", pat_str=tiktoken_pattern("cl100k"),
                                 mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)), special_tokens={})
    expected: Counter[int] = Counter()
    for path in slices:
        expected.update(encoding.encode_ordinary(path.read_bytes().decode("utf-8")))
    report = audit_tokenizer("cl100k", cl100k, [open_source(str(p)) for p in slices])
    assert report is not None and report.audit.f1 is not None and report.audit.f2 is not None
    f1 = report.audit.f1
    assert {i: n for i, n in enumerate(f1) if n} == dict(expected)
    assert report.summary()["tokens"] == sum(expected.values())
    counts = corpus_counts(cl100k, [open_source(str(p)) for p in slices])
    assert counts is not None
    traced_f1, traced_f2 = traced_counts(cl100k, counts)
    assert traced_f1 == list(f1) and traced_f2 == list(report.audit.f2)
    s = report.summary()
    assert s["undecodable"] == 773 and s["model_unreachable"] == 0  # cl100k: every merge can be produced
    assert 0 < s["residues"] < s["merge_tokens_seen"]


@pytest.fixture(scope="module")
def small_tiktoken(cl100k_file, tmp_path_factory):
    """cl100k's first 3,000 ranks as a file of its own (loads in a blink; needs --pattern)."""
    path = tmp_path_factory.mktemp("small") / "small.tiktoken"
    lines = cl100k_file.read_bytes().splitlines(keepends=True)[:3000]
    path.write_bytes(b"".join(lines))
    return path


def test_cli_audit_json_and_csv(small_tiktoken, slices, capsys):
    from workbench.cli import run_cli

    run = ["audit", str(small_tiktoken), str(slices[0]), "--pattern", "cl100k"]
    assert run_cli([*run, "--json", "--only", "residue"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["counts"]["residues"] == doc["counts"]["residue"] == len(doc["rows"]) > 0
    assert doc["counts"]["unreachable"] == 0 and doc["counts"]["ill_formed_utf8"] > 0 and "never_used" in doc["counts"]
    assert all(e["residue"] and e["r"] < 0.1 and e["kind"] == "merge" for e in doc["rows"])
    assert run_cli([*run, "--csv", "--only", "undecodable"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("id,piece,hex,kind,reachability")
    assert len(lines) == 1 + doc["counts"]["undecodable"] and doc["counts"]["undecodable"] >= 128
    assert run_cli([*run, "--threshold", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--threshold 2" in err
