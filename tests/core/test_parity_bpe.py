"""Parity-aware BPE (core/parity_bpe.py): with one language, or with every merge global, it is
plain BPE (``BpeTrainer``, tokenizers' tie rule) merge for merge; with several, each merge serves
the language whose development text is compressed worst, and that language gains from it."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
    require_corpora()
    train, dev = {}, {}
    for lang, name in (("en", "en_shakespeare.txt"), ("ru", "ru_fortunes.txt"), ("zh", "zh_fortunes.txt")):
        lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
        train[lang] = count_pretokens(["\n".join(lines[:1500])], pretokenizer="gpt2")
        dev[lang] = count_pretokens(["\n".join(lines[2000:2100])], pretokenizer="gpt2")
    config = TrainConfig(units="bytes", vocab_size=900, tie_break="hf")
    parity = ParityBpeTrainer(train, dev, config, global_merges=100)
    list(parity.run())
    assert parity.chosen[:100] == [-1] * 100 and set(parity.chosen[100:]) <= {0, 1, 2}
    before = [None, *parity.curves]
    for step in range(100, len(parity.chosen)):
        served = parity.chosen[step]
        previous = before[step]
        assert previous[served] == min(previous)  # the language served was the worst compressed
    # Each merge's point of the curves goes to the store with it (merges.extra), rounded as the settings.
    assert parity.log.extras is parity.extras
    assert [rank for rank, _text in parity.extras] == list(range(len(parity.merges)))
    assert [json.loads(text)["parity_cpt"] for _rank, text in parity.extras] == \
        [{lang: round(x, 6) for lang, x in zip(("en", "ru", "zh"), point)} for point in parity.curves]
    assert json.loads(parity.extras[-1][1])["parity_cpt"] == parity.extra_settings()["parity_chars_per_token"]
    # Plain BPE at the same size, measured the same way (every merge global), leaves the languages
    # further apart: a higher Gini of the per-language token cost (tokens per character).
    plain = ParityBpeTrainer(train, dev, config, global_merges=10**9)
    list(plain.run())
    assert len(plain.merges) == len(parity.merges)
    cost = [1 / x for x in parity.curves[-1]]
    plain_cost = [1 / x for x in plain.curves[-1]]
    assert gini(cost) < gini(plain_cost)
    assert len(set(parity.chosen[100:])) > 1
