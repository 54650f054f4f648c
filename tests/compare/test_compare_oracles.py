"""Metrics equal to what the real libraries count, on slices of the shared corpora.

tiktoken's cl100k (built from the file, never downloaded) and a ``tokenizers`` BPE trained on a
slice are the oracles: L is their token count; L² is recomputed from their counts per pre-token,
each pre-token counted on the line it starts (our documented rule); utilisation agrees with the
merge browser's :func:`vocab_usage` over the same text.
"""

from __future__ import annotations

import pytest
import regex
from compare_helpers import corpus_slice

from workbench.core.corpus_metrics import Metrics, TokenMeter, count_text, word_units
from workbench.core.count import count_pretokens
from workbench.core.metrics import vocab_usage
from workbench.core.pretokenize import CL100K_PATTERN

tiktoken = pytest.importorskip("tiktoken")
NAMES = ["de_zitate.txt", "en_shakespeare.txt", "en_wiki_taylorswift.txt", "ru_fortunes.txt", "zh_fortunes.txt"]


def attention_by_pieces(text: str, pattern: str, count) -> int:
    """Σ per line of tokens, a pre-token's tokens on the line where it starts (oracle side)."""
    per_line: dict[int, int] = {}
    for m in regex.finditer(pattern, text):
        line = text.count("\n", 0, m.start())
        per_line[line] = per_line.get(line, 0) + count(m.group())
    return sum(n * n for n in per_line.values())


@pytest.fixture(scope="module")
def oracle(cl100k_file):
    from tiktoken.load import load_tiktoken_bpe

    return tiktoken.Encoding(name="cl100k_test", pat_str=CL100K_PATTERN,
                             mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)), special_tokens={})


@pytest.mark.parametrize("name", NAMES)
def test_cl100k_counts_equal_tiktoken(corpora, cl100k, oracle, name):
    text = corpus_slice(corpora, name, 20_000, start=5_000)
    # Streamed in several chunks, as the corpus readers hand text over.
    lines = text.splitlines(keepends=True)
    chunks = ["".join(lines[i : i + 50]) for i in range(0, len(lines), 50)]
    tally, counts = count_text(cl100k, chunks)
    ids = oracle.encode_ordinary(text)
    assert counts.tokens == len(ids)
    assert counts.attention == attention_by_pieces(text, CL100K_PATTERN, lambda p: len(oracle.encode_ordinary(p)))
    assert sum(counts.frequencies.values()) == len(ids)
    assert counts.frequencies == {i: ids.count(i) for i in set(ids)}
    assert (tally.chars, tally.bytes, tally.lines) == (len(text), len(text.encode()), text.count("\n"))
    m = Metrics.of(cl100k, "cl100k", name, "x", tally, counts)
    assert m.unknown_rate == 0.0
    assert m.used == len(set(ids))
    assert m.vocab_size == 100277 and m.embedding_params == 100277 * 768


def test_utilisation_agrees_with_vocab_usage(corpora, shakespeare_run):
    text = corpus_slice(corpora, "en_wiki_taylorswift.txt", 30_000)
    meter = TokenMeter(shakespeare_run)
    meter.add(text)
    counts = meter.finish()
    from workbench.core.corpus_metrics import usage

    ours = usage(shakespeare_run, counts)
    reference = vocab_usage(shakespeare_run, count_pretokens([text], pretokenizer="gpt2"))
    assert ours.frequencies == reference.frequencies
    assert ours.never_used == reference.never_used and ours.never_used  # some merges never occur here


def test_counts_equal_a_tokenizers_bpe_trained_on_a_slice(corpora, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    from workbench.formats import load_tokenizer_file

    train_text = corpus_slice(corpora, "de_zitate.txt", 80_000)
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    hf.train_from_iterator(train_text.splitlines(keepends=True), trainer)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    ours = load_tokenizer_file(path)
    for name in ("de_zitate.txt", "ru_fortunes.txt"):
        text = corpus_slice(corpora, name, 15_000, start=100_000)
        _tally, counts = count_text(ours, [text])
        assert counts.tokens == len(hf.encode(text).ids)


def test_unknown_tokens_are_counted():
    from workbench.core.model import Tokenizer, base_vocab

    vocab = base_vocab("chars", alphabet="abc", specials=("[UNK]",))
    tok = Tokenizer(vocab=tuple(vocab), merges=(), units="chars", pretokenizer="whitespace",
                    special_tokens={"[UNK]": 0}, unk_token="[UNK]")
    tally, counts = count_text(tok, ["ab xyz\naa é\n"])
    assert counts.tokens == 8 and counts.unknown == 4  # x y z é
    assert counts.attention == 5 * 5 + 3 * 3
    m = Metrics.of(tok, "t", "f", "Latin", tally, counts)
    assert m.unknown_rate == 4 / 8
    assert m.eligible == 3 and m.used == 2  # the special token is not a vocabulary entry to use


def test_word_units_count_unsegmented_characters():
    assert word_units("the cat sat") == (3, 3)
    assert word_units("我爱你 hello") == (2, 4)        # 3 Han characters + 1 word
    assert word_units("日本語のテキスト、abc中") == (1, 9)  # 8 Han/Kana + 1 more Han; punctuation is not a unit
    assert word_units("Привет, мир!") == (2, 2)
