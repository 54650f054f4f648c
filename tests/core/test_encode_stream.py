"""Encoding a file piece by piece gives the ids of one pass over the whole text, in bounded memory.

The oracle is tiktoken itself on the real ``cl100k_base`` file (``encode --file`` is checked against
``tiktoken.Encoding.encode_ordinary`` on text made of the shared corpora); a hypothesis test holds
:func:`encode_chunks` with tiny chunk sizes equal to ``Encoder.encode`` on hostile text; a child
process encodes a 40 MB file and its peak memory is compared with encoding one word.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.core.encode_stream import encode_chunks, streams_exactly
from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.tasks.sources import load_tokenizer

tiktoken = pytest.importorskip("tiktoken")


@pytest.fixture(scope="module")
def cl100k(cl100k_file) -> Encoder:
    return Encoder(load_tokenizer(str(cl100k_file)))


LETTERS = st.sampled_from(list("ab\n \t.!1éИ中😀'\r") + ["\n\n", "  ", "ab\nc", "'s", "<|endoftext|>"])


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(LETTERS, max_size=80), size=st.integers(1, 12), allow=st.booleans())
def test_streamed_ids_equal_one_pass(cl100k, parts, size, allow):
    text = "".join(parts)
    assert streams_exactly(cl100k, allow)
    # the reader's blocks themselves cut anywhere: feed the text in 3-character pieces
    blocks = [text[i:i + 3] for i in range(0, len(text), 3)]
    streamed = [i for ids in encode_chunks(cl100k, blocks, allow_special=allow, size=size) for i in ids]
    assert streamed == cl100k.encode(text, allow_special=allow)


def test_a_tokenizer_with_a_normalizer_is_encoded_whole():
    tok = Tokenizer(vocab=tuple(bytes([b]) for b in range(256)), merges=(), pretokenizer="gpt2",
                    normalizer=("bert",))
    enc = Encoder(tok)
    assert not streams_exactly(enc)
    assert list(encode_chunks(enc, ["a\nb", "c"], size=1)) == [enc.encode("a\nbc")]


def test_encode_file_matches_tiktoken_on_the_corpora(cl100k_file, tmp_path):
    require_corpora()
    text = "".join(path.read_text(encoding="utf-8") for path in CORPUS_FILES)[:300_000]
    file = tmp_path / "text.txt"
    file.write_text(text, encoding="utf-8", newline="")
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(cl100k_file))
    from workbench.core.pretokenize import CL100K_PATTERN

    oracle = tiktoken.Encoding(name="cl100k_test", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    out = subprocess.run([sys.executable, "-m", "workbench", "encode", "--tokenizer", str(cl100k_file), "--file",
                          str(file), "--json"], capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    expected = oracle.encode_ordinary(text)
    assert doc["ids"] == expected and doc["count"] == len(expected) == len(doc["tokens"])
    plain = subprocess.run([sys.executable, "-m", "workbench", "encode", "--tokenizer", str(cl100k_file), "--file",
                            str(file)], capture_output=True, text=True, check=True).stdout
    assert list(map(int, plain.split())) == expected


def _peak_rss_of(args: list[str]) -> int:
    """Peak resident memory (bytes) of ``workbench ARGS`` run as a child, its output discarded."""
    script = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", script, sys.executable, "-m", "workbench", *args],
                         capture_output=True, text=True, check=True).stdout
    return int(out) * 1024  # ru_maxrss is in KiB on Linux


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss units differ elsewhere")
def test_encode_file_memory_does_not_grow_with_the_file(cl100k_file, tmp_path):
    """Peak memory for 18 MB minus peak memory for 6 MB of the same text: it was 18 × the 12 MB
    between them; now each chunk is encoded and printed before the next is read."""
    require_corpora()
    block = "".join(path.read_text(encoding="utf-8") for path in CORPUS_FILES)
    peaks, sizes = [], []
    for megabytes in (6, 18):
        file = tmp_path / f"{megabytes}.txt"
        with open(file, "w", encoding="utf-8") as f:
            while f.tell() < megabytes * 1_000_000:
                f.write(block)
        sizes.append(file.stat().st_size)
        peaks.append(_peak_rss_of(["encode", "--tokenizer", str(cl100k_file), "--file", str(file)]))
    grown, more = peaks[1] - peaks[0], sizes[1] - sizes[0]
    assert grown < 0.5 * more, f"peak memory grew by {grown / 1e6:.0f} MB for {more / 1e6:.0f} MB more text"
