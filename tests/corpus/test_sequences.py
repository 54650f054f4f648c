"""Sequence boundaries: each line is a sequence (as ``tokenizers``' ``train(files)`` reads text files),
or each document is; pre-tokens never cross a boundary and no separator is invented.

The oracle is the real ``tokenizers`` library training from the same files (STYLE.md trap 16).
"""

from __future__ import annotations

import pytest
from hf_oracle import hf_merges_from_files
from shared_corpora import raw_line_slices, require_corpora

from workbench.core.bpe import TrainConfig, train
from workbench.core.byte_level import byte_encoder
from workbench.core.pretokenize import PRESET_PATTERNS, onig_compatible
from workbench.corpus import open_source
from workbench.corpus.counts import count_sources
from workbench.errors import WorkbenchError

tokenizers = pytest.importorskip("tokenizers")




def our_merges(counts, vocab_size, preset):
    tok, _ = train(counts, TrainConfig(vocab_size=vocab_size, tie_break="hf", pretokenizer=preset))
    to_unicode = byte_encoder()
    return [["".join(to_unicode[c] for c in tok.vocab[a]), "".join(to_unicode[c] for c in tok.vocab[b])]
            for a, b, _ in tok.merges]


@pytest.fixture(scope="module")
def line_slices(tmp_path_factory):
    """The first 1500 lines of every shared corpus file as their real bytes (CRLF and lone CR included,
    see ``raw_line_slices``), the last one without a final newline."""
    require_corpora()
    files = raw_line_slices(tmp_path_factory.mktemp("slices"), 1500)
    files[-1].write_bytes(files[-1].read_bytes().rstrip(b"\r\n"))
    assert any(b"\r\n" in f.read_bytes() for f in files) and any(b"\r" in f.read_bytes().replace(b"\r\n", b"")
                                                                  for f in files)
    return files


@pytest.mark.parametrize("preset, vocab_size", [("gpt2", 1100), ("cl100k", 1100)])
def test_lines_with_hf_tie_break_equal_tokenizers_train_files(line_slices, preset, vocab_size):
    expected = hf_merges_from_files(line_slices, vocab_size, onig_compatible(PRESET_PATTERNS[preset]))
    counts = count_sources([open_source(f) for f in line_slices], pretokenizer=preset, sequences="lines")
    ours = our_merges(counts, vocab_size, preset)
    assert len(ours) == len(expected) > 700
    first_difference = next((i for i, (a, b) in enumerate(zip(ours, expected)) if a != b), None)
    assert first_difference is None, (first_difference, ours[first_difference], expected[first_difference])


def test_a_pre_token_never_crosses_a_line_or_a_file(tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    a.write_text("end.\n\n\nword  \n tail", encoding="utf-8")
    b.write_text("head more\n", encoding="utf-8")
    sources = [open_source(a), open_source(b)]
    lines = count_sources(sources, pretokenizer="cl100k", sequences="lines")
    assert lines == {"end": 1, ".\n": 1, "\n": 3, "word": 1, "  \n": 1, " tail": 1, "head": 1, " more": 1}
    documents = count_sources(sources, pretokenizer="cl100k", sequences="documents")
    # One file is one sequence: cl100k's "[\r\n]*" joins the blank lines, yet "tail" (end of a.txt,
    # no final newline) and "head" (start of b.txt) stay apart — one pass over a + b gives " tailhead".
    assert documents == {"end": 1, ".\n\n\n": 1, "word": 1, "  \n": 1, " tail": 1, "head": 1, " more": 1, "\n": 1}


def test_records_are_sequences_without_an_invented_separator(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"text": "one two"}\n{"text": "three\\nfour"}\n{"text": "five"}\n', encoding="utf-8")
    src = open_source(path)
    documents = count_sources([src], pretokenizer="gpt2", sequences="documents")
    assert documents == {"one": 1, " two": 1, "three": 1, "\n": 1, "four": 1, "five": 1}
    lines = count_sources([src], pretokenizer="gpt2", sequences="lines")
    assert lines == documents  # the record's own line break is the only one either way


def test_sequences_must_be_lines_or_documents(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("x\n", encoding="utf-8")
    with pytest.raises(WorkbenchError, match="use lines .* or documents"):
        count_sources([open_source(path)], pretokenizer="gpt2", sequences="paragraphs")
