"""Counting in chunks gives exactly the table of a single pass, in first-appearance order."""

from __future__ import annotations

import pytest

from workbench.core.count import chunks_for, count_pretokens


@pytest.mark.parametrize("pre", ["gpt2", "cl100k", "o200k", "whitespace", "digits", "metaspace"])
def test_chunked_counts_equal_one_pass(corpora, pre):
    text = "".join(path.read_text(encoding="utf-8")[:150_000] for path in corpora)
    chunks = list(chunks_for(pre, [text], 20_000))
    assert len(chunks) > 5 and "".join(chunks) == text
    chunked = count_pretokens(chunks, pretokenizer=pre)
    whole = count_pretokens([text], pretokenizer=pre)
    assert chunked == whole and list(chunked) == list(whole)


def test_two_worker_processes_give_the_same_ordered_table(corpora):
    text = "".join(path.read_text(encoding="utf-8")[:100_000] for path in corpora)
    chunks = list(chunks_for("gpt2", [text], 30_000))
    assert list(count_pretokens(chunks, workers=2).items()) == list(count_pretokens(chunks).items())
