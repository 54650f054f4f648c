"""Counting in chunks gives exactly the table of a single pass, in first-appearance order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# Whitespace of every kind (U+001C-U+001F: str.split's but not Unicode's), punctuation, CJK, marks.
_BERT_CHARS = "ab c,.!'#-\n\t\r\x0b\x1c\x1f\x00\u3000\u00a0\u2003\u0085日本，。ÉéΣ\u0301\ufffd\u1100\u1161\u0345ﬁ"
_BERT_TEXT = st.text(alphabet=st.sampled_from(list(_BERT_CHARS)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(batch=st.lists(_BERT_TEXT, max_size=8),
       normalizer=st.sampled_from([(), ("bert",), ("bert-lower",), ("nfkc", "bert-lower"), ("lower",), ("nfc",),
                                   ("strip-accents",), ("spm-whitespace",), ("nmt-nfkc", "spm-whitespace")]),
       group=st.sampled_from([1, 3, 512]))
def test_bert_batch_count_equals_the_regex_over_each_sequence(batch, normalizer, group):
    """``bert`` counts a batch by splitting at whitespace and running the regex once per distinct
    word, normalizing ``group`` lines joined by a line break per call: the table (order included)
    is the one of the regex over each sequence normalized on its own."""
    from collections import Counter

    from workbench.core import count
    from workbench.core.count import _batch_counter, _batch_splitter

    expected = Counter(_batch_splitter("bert", normalizer)(batch))
    saved, count._GROUP = count._GROUP, group
    try:
        got = _batch_counter("bert", normalizer)(batch)
    finally:
        count._GROUP = saved
    assert list(got.items()) == list(expected.items())


def test_bert_counts_on_the_corpora_in_order(corpora):
    from workbench.core.count import count_batches, split_lines
    from workbench.core.normalize import make_normalizer
    from workbench.core.pretokenize import make_pretokenizer

    text = "".join(path.read_text(encoding="utf-8")[:60_000] for path in corpora)
    lines = split_lines(text)
    batches = [lines[i:i + 700] for i in range(0, len(lines), 700)]
    findall, normalize = make_pretokenizer("bert").compiled().findall, make_normalizer(("bert-lower",))
    expected: dict[str, int] = {}
    for line in lines:
        for piece in findall(normalize(line)):
            expected[piece] = expected.get(piece, 0) + 1
    got = count_batches(batches, pretokenizer="bert", normalizer=("bert-lower",))
    assert len(got) > 5000 and list(got.items()) == list(expected.items())
