"""PickyBPE (core/pickybpe.py) held to three things:

* the reference trainer ``pickybpe-bauwenst`` 1.3.1 (the paper authors' code, packaged), merge for
  merge and removal for removal on slices of the shared corpora — with two fixes to it, each the
  evident intent of its own code (see :class:`FixedReference`): unfixed, it leaves every removed
  token in the words (``Token.remove()`` forgets the token's words and zeroes its frequency before
  the split reads them) and then asserts on merging it again, on every slice tried here;
* a textbook twin (a full recount per step), by hypothesis, with ties and overlapping pairs common;
* the property that τ ≥ 1 removes nothing: the run is plain BPE (``BpeTrainer``), merge for merge.
"""

from __future__ import annotations

import collections
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_corpora import CORPORA, require_corpora

from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.count import count_pretokens
from workbench.core.pickybpe import PickyBpeTrainer, final_merges
from workbench.errors import ConfigError


# ---- the textbook twin ---------------------------------------------------------------------------
def picky_textbook(counts: dict[str, int], config: TrainConfig, tau: float) -> list[tuple]:
    """PickyBPE as the paper states it, recounting everything each step: the events as
    ("merge", left piece, right piece) and ("remove", piece, split pieces)."""
    base = BpeTrainer(counts, config)  # the initial vocabulary, ids and words (its loop is not used)
    vocab = list(base.vocab)
    words = [list(w) for w in base.words]
    freqs = list(base.freqs)
    initial = base.initial_size
    hf_rank = base._hf_rank()
    parents: dict[int, tuple[int, int]] = {}
    present = [True] * len(vocab)
    in_use = len(vocab)
    events: list[tuple] = []
    made = 0

    def walk(t: int) -> list[int]:
        return [t] if t < initial or present[t] else walk(parents[t][0]) + walk(parents[t][1])

    while made < (config.merges or 10**9) and in_use < (config.vocab_size or 10**9):
        pairs: dict[tuple[int, int], int] = {}
        where: dict[tuple[int, int], tuple[int, int]] = {}
        for w, sym in enumerate(words):
            offset = 0
            for i in range(len(sym) - 1):
                p = (sym[i], sym[i + 1])
                pairs[p] = pairs.get(p, 0) + freqs[w]
                where.setdefault(p, (w, offset))
                offset += len(vocab[sym[i]]) if config.units == "bytes" else len(vocab[sym[i]].decode())
        if not pairs:
            break
        top = max(pairs.values())
        tied = [p for p, c in pairs.items() if c == top]
        if config.tie_break == "hf":
            a, b = min(tied, key=lambda p: (hf_rank[p[0]] if p[0] < len(hf_rank) else p[0],
                                            hf_rank[p[1]] if p[1] < len(hf_rank) else p[1]))
        else:
            a, b = min(tied, key=lambda p: where[p])
        piece = vocab[a] + vocab[b]
        if piece in vocab[initial:]:
            new = vocab.index(piece, initial)
            if not present[new]:
                present[new] = True
                in_use += 1
        else:
            new = len(vocab)
            vocab.append(piece)
            present.append(True)
            parents[new] = (a, b)
            in_use += 1
        for w, sym in enumerate(words):
            out, i = [], 0
            while i < len(sym):
                if i + 1 < len(sym) and sym[i] == a and sym[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(sym[i])
                    i += 1
            words[w] = out
        made += 1
        events.append(("merge", vocab[a], vocab[b]))
        for parent in dict.fromkeys((a, b)):
            tf = collections.Counter()
            for sym, f in zip(words, freqs):
                for t in sym:
                    tf[t] += f
            if parent < initial or not present[parent] or tf[new] / (tf[parent] + tf[new]) <= tau:
                continue
            present[parent] = False
            in_use -= 1
            split = walk(parent)
            words = [[s for t in sym for s in (split if t == parent else (t,))] for sym in words]
            events.append(("remove", vocab[parent], tuple(vocab[s] for s in split)))
    return events


def picky_events(trainer: PickyBpeTrainer) -> list[tuple]:
    """The trained run's events in the textbook twin's form."""
    for _ in trainer.run():
        pass
    removals = collections.defaultdict(list)
    for rank, tid, _f, split in trainer.removals:
        removals[rank].append(("remove", trainer.vocab[tid], tuple(trainer.vocab[s] for s in split)))
    events: list[tuple] = []
    for rank, (a, b, _n) in enumerate(trainer.merges):
        events.append(("merge", trainer.vocab[a], trainer.vocab[b]))
        events.extend(removals[rank])
    return events


texts = st.text(alphabet=st.sampled_from("aab c\nbé"), max_size=150)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, units=st.sampled_from(["bytes", "chars"]), tie=st.sampled_from(["first-seen", "hf"]),
       merges=st.integers(1, 40), tau=st.sampled_from([0.3, 0.5, 0.7, 0.9]))
def test_incremental_picky_equals_the_textbook_twin(text, units, tie, merges, tau):
    counts = count_pretokens([text], pretokenizer="whitespace")
    if not counts:
        return
    config = TrainConfig(units=units, merges=merges, tie_break=tie)
    assert picky_events(PickyBpeTrainer(counts, config, tau)) == picky_textbook(counts, config, tau)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, units=st.sampled_from(["bytes", "chars"]), tie=st.sampled_from(["first-seen", "hf"]),
       merges=st.integers(1, 40), tau=st.sampled_from([1.0, 1.5]))
def test_a_threshold_of_one_or_more_is_plain_bpe(text, units, tie, merges, tau):
    counts = count_pretokens([text], pretokenizer="gpt2")
    if not counts:
        return
    config = TrainConfig(units=units, merges=merges, tie_break=tie)
    plain = BpeTrainer(counts, config)
    list(plain.run())
    picky = PickyBpeTrainer(counts, config, tau)
    list(picky.run())
    assert picky.merges == plain.merges and not picky.removals


@pytest.mark.parametrize("tie", ["first-seen", "hf"])
def test_plain_bpe_on_real_text_above_one(tie):
    require_corpora()
    text = (CORPORA / "en_wiki_taylorswift.txt").read_text(encoding="utf-8")[:60_000]
    counts = count_pretokens([text], pretokenizer="gpt2")
    config = TrainConfig(units="bytes", vocab_size=700, tie_break=tie)
    plain = BpeTrainer(counts, config)
    list(plain.run())
    picky = PickyBpeTrainer(counts, config, 1.01)
    list(picky.run())
    assert picky.merges == plain.merges and len(plain.merges) == 700 - 256


def test_the_run_ends_at_the_vocabulary_in_use_and_its_tokenizer_makes_every_kept_token():
    require_corpora()
    text = (CORPORA / "de_zitate.txt").read_text(encoding="utf-8")[:60_000]
    counts = count_pretokens([text], pretokenizer="gpt2")
    trainer = PickyBpeTrainer(counts, TrainConfig(units="bytes", vocab_size=600), 0.8)
    events = list(trainer.run())
    assert trainer.removals and events[-1].vocab_size == trainer.in_use == 600
    assert len(trainer.merges) >= 600 - 256 + len(trainer.removed_ids())  # each removal bought a merge
    # The corpus as the trainer holds it uses no removed token, and its count is the events' count.
    removed = trainer.removed_ids()
    assert not any(t in removed for w in trainer.words for t in w)
    assert sum(f * len(w) for w, f in zip(trainer.words, trainer.freqs)) == events[-1].token_count
    vocab, merges = final_merges(trainer.vocab, trainer.merges, removed)
    made = {n for _a, _b, n in merges}
    kept = set(range(256, len(trainer.vocab))) - removed
    assert kept <= made  # every kept token still has a merge that makes it
    assert all(vocab[i] == b"" for i in removed - made)  # a removed token nothing needs is unused


def test_a_bad_threshold_names_its_setting():
    with pytest.raises(ConfigError) as info:
        PickyBpeTrainer({"ab": 2}, TrainConfig(merges=3), 0)
    assert info.value.field == "options.picky_threshold"


# ---- the reference implementation ----------------------------------------------------------------
reference = pytest.importorskip("pickybpe.vocabularisation")
counters = pytest.importorskip("pickybpe.util.counters")


class TieHeap(counters.MaxHeap):
    """The reference's pair heap with ties broken by the ids of the pair (tokenizers' rule, the
    trainer's ``hf``); the reference leaves them to heapdict's internal order."""

    def set(self, key, value):
        self._minheap[key] = (-value, key[0].id, key[1].id)

    def get(self, key):
        return -self._minheap[key][0]

    def get_argmax(self):
        key, value = self._minheap.peekitem()
        return key, -value[0]

    def pop(self, key):
        return -self._minheap.pop(key)[0]


class FixedReference(reference.PickyBPETrainer):
    """pickybpe-bauwenst 1.3.1 with two fixes, each the evident intent of its code:

    1. ``_remove_if_possible`` called ``token.remove()`` — which zeroes the token's frequency and
       forgets its words — before reading both, so no word was split and the parts gained nothing;
       here the token is marked removed after its words are split.
    2. ``_merge_token_in_words`` looked at the parents before the merge's pair counts were settled,
       so a pair of the new token with a parent removed just then stayed counted though gone.
    The parents are looked at left first (the reference iterates a set of the two).
    """

    def _initialize_state(self):
        state = super()._initialize_state()
        state.pairs._counts = TieHeap()
        return state

    def _dump(self, state, path):
        self.state = state

    def _remove_if_possible(self, token, merged_freq, state):
        if token.atomic or merged_freq / (token.freq + merged_freq) <= self._threshold:
            return False
        subtokens = token.split_if_possible()
        freq = token.freq
        for t in subtokens:
            t.freq += freq
        state.actual_vocab_size -= 1
        state.corpus_token_count += freq * (len(subtokens) - 1)
        for pair in zip(subtokens[:-1], subtokens[1:]):
            if self._validate_pair(pair):
                state.pairs.counts.increment(pair, freq)
        obsolete = counters.MulCounter()
        for word in list(token.words):
            if token in word.tokens:
                obsolete.update({pair: f for pair, f in word.pairs.items() if token in pair})
                word.split_token(token, subtokens)
        token.remove()
        self._update_pairs_on_remove(token, subtokens, obsolete, state)
        return True

    def _merge_token_in_words(self, new_token, pair, state):
        actual = 0
        created = collections.Counter()
        for word in pair[0].words & pair[1].words:
            if pair in word.pairs:
                actual += word.merge_pair(pair, new_token)
                created.update({p: f for p, f in word.pairs.items() if new_token in p})
        state.actual_vocab_size += 1
        state.corpus_token_count -= actual * (len(pair) - 1)
        new_token.freq += actual
        for token in set(pair):
            token.freq -= actual * pair.count(token)
        self._update_pairs_on_merge(new_token, pair, created, state)
        for token in dict.fromkeys(pair):
            self._scrutinize_parent_after_merge(token, new_token, actual, state)
        return actual


def reference_events(counts: dict[str, int], vocab_size: int, tau: float) -> list[tuple]:
    trainer = FixedReference(vocab_size=vocab_size, picky_threshold=tau, max_type_length=10**6,
                             character_coverage=1.0)
    trainer._fit_from_counts(collections.Counter(counts), "unused", 10**9)
    out: list[tuple] = []
    for event in trainer.state.events:
        if event[0] == reference.EventType.MERGE:
            out.append(("merge", event[1][0].str.encode(), event[1][1].str.encode()))
        else:
            out.append(("remove", event[1].str.encode(), tuple(t.str.encode() for t in event[2])))
    return out


@pytest.mark.parametrize("name, size, tau", [("en_shakespeare.txt", 450, 0.9), ("de_zitate.txt", 450, 0.7),
                                             ("ru_fortunes.txt", 400, 0.8)])
def test_equal_to_the_reference_merge_for_merge_and_removal_for_removal(name, size, tau):
    require_corpora()
    text = (CORPORA / name).read_text(encoding="utf-8")[:15_000]
    # Words as the reference reads them (split at spaces, ▁ in front); a run of three equal symbols
    # is left out: the reference counts a pair once per non-overlapping occurrence, BPE (and
    # tokenizers) at every position.
    words = collections.Counter(w for w in text.split() if not re.search(r"(.+)\1\1", "▁" + w))
    ref = reference_events(words, size, tau)
    merges = sum(1 for e in ref if e[0] == "merge")
    ours = picky_events(PickyBpeTrainer({"▁" + w: c for w, c in words.items()},
                                        TrainConfig(units="chars", merges=merges, tie_break="hf"), tau))
    assert sum(1 for e in ref if e[0] == "remove") >= 10
    assert ours == ref
