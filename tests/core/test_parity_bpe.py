"""Parity-aware BPE (core/parity_bpe.py): with one language, or with every merge global, it is
plain BPE (``BpeTrainer``, tokenizers' tie rule) merge for merge; with several, each merge serves
the language whose parallel development text takes the most tokens, and that language gains from it."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parallel_text import UDHR_1_TO_5
from shared_corpora import CORPORA, require_corpora

from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.count import count_pretokens
from workbench.core.expert_metrics import gini
from workbench.core.parity_bpe import ParityBpeTrainer

texts = st.text(alphabet=st.sampled_from("aab c\nbé中"), min_size=1, max_size=150)


def _plain(counts, config):
    trainer = BpeTrainer(counts, config)
    list(trainer.run())
    return trainer.merges


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, dev=texts, merges=st.integers(1, 40))
def test_one_language_is_plain_bpe(text, dev, merges):
    counts = count_pretokens([text], pretokenizer="gpt2")
    config = TrainConfig(units="bytes", merges=merges, tie_break="hf")
    parity = ParityBpeTrainer({"xx": counts}, {"xx": count_pretokens([dev], pretokenizer="gpt2") or {"a": 1}}, config)
    list(parity.run())
    assert parity.merges == _plain(counts, config)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one=texts, two=texts, merges=st.integers(1, 30))
def test_all_merges_global_is_plain_bpe_on_the_union(one, two, merges):
    a, b = count_pretokens([one], pretokenizer="gpt2"), count_pretokens([two], pretokenizer="gpt2")
    union = dict(a)
    for word, count in b.items():
        union[word] = union.get(word, 0) + count
    config = TrainConfig(units="bytes", merges=merges, tie_break="hf")
    parity = ParityBpeTrainer({"a": a, "b": b}, {"a": {"x": 1}, "b": {"y": 1}}, config, global_merges=merges)
    list(parity.run())
    assert parity.merges == _plain(union, config)


def test_each_merge_serves_the_worst_compressed_language():
    """The language served is the one whose (parallel) development text takes the most tokens — the
    paper's rule — and its lead shrinks: at the end the languages need about as many tokens."""
    require_corpora()
    train, dev = {}, {}
    for lang, name in (("en", "en_shakespeare.txt"), ("ru", "ru_fortunes.txt"), ("zh", "zh_fortunes.txt")):
        lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
        train[lang] = count_pretokens(["\n".join(lines[:1500])], pretokenizer="gpt2")
        dev[lang] = count_pretokens(["\n".join(UDHR_1_TO_5[lang])], pretokenizer="gpt2")
    config = TrainConfig(units="bytes", vocab_size=900, tie_break="hf")
    parity = ParityBpeTrainer(train, dev, config, global_merges=100)
    start = tuple(parity.dev_tokens)
    list(parity.run())
    assert parity.chosen[:100] == [-1] * 100 and set(parity.chosen[100:]) <= {0, 1, 2}
    before = [start, *parity.token_curves]
    for step in range(100, len(parity.chosen)):
        served = parity.chosen[step]
        previous = before[step]
        assert previous[served] == max(previous)  # the language served needed the most tokens
        assert previous.index(max(previous)) == served  # ties: the first named
    # In bytes Russian starts with the most tokens and Chinese (3 bytes a character) is not the least:
    # characters per token would have picked Chinese every time (it has the fewest characters).
    assert start[1] == max(start) and parity.curves[0][2] < parity.curves[0][0]
    # Each merge's point of the curves goes to the store with it (merges.extra), rounded as the settings.
    assert parity.log.extras is parity.extras
    assert [rank for rank, _text in parity.extras] == list(range(len(parity.merges)))
    assert [json.loads(text)["parity_cpt"] for _rank, text in parity.extras] == \
        [{lang: round(x, 6) for lang, x in zip(("en", "ru", "zh"), point)} for point in parity.curves]
    assert [tuple(json.loads(text)["parity_tokens"].values()) for _rank, text in parity.extras] == parity.token_curves
    settings = parity.extra_settings()
    assert json.loads(parity.extras[-1][1])["parity_cpt"] == settings["parity_chars_per_token"]
    assert tuple(settings["parity_dev_tokens"].values()) == parity.token_curves[-1]
    # Plain BPE at the same size, measured the same way (every merge global), leaves the languages
    # further apart: a higher Gini of the per-language token cost (tokens of the same content).
    plain = ParityBpeTrainer(train, dev, config, global_merges=10**9)
    list(plain.run())
    assert len(plain.merges) == len(parity.merges)
    assert gini(parity.token_curves[-1]) < gini(plain.token_curves[-1]) / 2
    assert len(set(parity.chosen[100:])) > 1
