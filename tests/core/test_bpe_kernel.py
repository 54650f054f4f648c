"""The numpy merge passes (core/bpe_kernel.py) must make exactly the changes the Python loop makes.

BpeTrainer keeps the words flat and runs a merge held by at least ``numpy_min_words`` words in
numpy, the others in the Python loop over the flat store; a small table (below ``flat_min_words``)
or an extension's refit keeps the list loop. Here the threshold is forced to 0 (every merge in
numpy), 2 (a mix) and never (the list loop), and the flat loop's heap starts with the most frequent
pairs only (the others given entries when the best count falls below theirs): the event streams
and the final words must agree."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.bpe_reference import train_reference
from workbench.core.count import count_pretokens

NEVER = 1 << 40

# Few symbols: long runs ("aaaa" merges at even offsets), repeated pairs in one word, ties.
texts = st.text(alphabet=st.sampled_from("aaab c\né中"), max_size=160)
configs = st.fixed_dictionaries({
    "units": st.sampled_from(["bytes", "chars"]),
    "tie_break": st.sampled_from(["first-seen", "hf"]),
    "pretokenizer": st.sampled_from(["gpt2", "none", "whitespace"]),
    "merges": st.integers(1, 40),
    "min_frequency": st.integers(1, 3),
    "specials": st.booleans(),
})


def _run(counts: dict[str, int], config: TrainConfig, threshold: int,
         few_entries: bool = False) -> tuple[list, list[list[int]]]:
    trainer = BpeTrainer(counts, config)
    trainer.native = False  # the pure loops (the C loop is held to them in test_bpe_native.py)
    trainer.numpy_min_words = threshold
    if few_entries:  # heap entries at the start for the most frequent pairs only: the rest added later
        trainer.heap_min_entries = -NEVER
    trainer.flat_min_words = 0 if threshold < NEVER else NEVER  # the flat store, or the list loop
    events = list(trainer.run())
    return events, trainer.words


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, options=configs)
def test_numpy_merges_equal_python_loop(text, options):
    config = TrainConfig(units=options["units"], merges=options["merges"], tie_break=options["tie_break"],
                         pretokenizer=options["pretokenizer"], min_frequency=options["min_frequency"],
                         special_tokens=("<s>", "</s>") if options["specials"] else ())
    counts = count_pretokens([text], pretokenizer=options["pretokenizer"])
    if not counts:
        return
    python = _run(counts, config, NEVER)
    assert _run(counts, config, 0) == python
    assert _run(counts, config, 2) == python
    assert _run(counts, config, NEVER - 1) == python  # flat store, every merge in the Python loop
    assert _run(counts, config, 2, few_entries=True) == python


@settings(max_examples=60, deadline=None)
@given(counts=st.dictionaries(st.text(alphabet="aab", min_size=1, max_size=16), st.integers(1, 9), max_size=40))
def test_weighted_runs_of_one_symbol(counts):
    """Words like "aaaaab" weighted unequally: the (a, a) merges and their neighbour counts."""
    config = TrainConfig(units="chars", merges=30)
    events, words = _run(counts, config, 0)
    assert [(e.left, e.right, e.frequency, e.token_count) for e in events] == [
        (e.left, e.right, e.frequency, e.token_count) for e in _run(counts, config, NEVER)[0]]
    ours = BpeTrainer(counts, config)
    assert [(ours.vocab[e.left], ours.vocab[e.right]) for e in ours.run()] == train_reference(counts, config)
    if events:
        assert events[-1].token_count == sum(f * len(w) for w, f in zip(words, BpeTrainer(counts, config).freqs))


@pytest.mark.parametrize("native", [False, None])
def test_words_read_mid_run_then_continued(native):
    """Asking for ``words`` between merges turns them into lists; the run takes them back flat (the
    C loop, when built: a fresh loop on the words as they are)."""
    counts = count_pretokens(["the cat sat on the mat with the hat " * 30 + "aaaa aaa bbbb"], pretokenizer="gpt2")
    config = TrainConfig(merges=25)
    plain = _run(counts, config, 0)
    trainer = BpeTrainer(counts, config)
    trainer.native = native
    trainer.numpy_min_words = trainer.flat_min_words = 0
    events = []
    for event in trainer.run():
        events.append(event)
        assert len(trainer.words) == trainer.word_types
    assert (events, trainer.words) == plain


def test_split_rare_keeps_every_pair_tied_with_the_last_kept_hot():
    """The flat loop adds the cold pairs only when the best count falls *below* ``floor``: that is
    sound only if every cold pair is below it and every pair at it is hot (a pair tied at the floor
    but cold could lose a first-seen tie it should win)."""
    import random

    from workbench.core.bpe_kernel import split_rare

    values = [9, 7, 5, 5, 5, 3] + [1] * 14
    random.Random(0).shuffle(values)
    counts = dict(enumerate(values))
    hot, cold, floor = split_rare(counts, 3)
    assert floor == 5
    assert sorted(counts[p] for p in hot) == [5, 5, 5, 7, 9]
    assert all(counts[p] < floor for p in cold) and len(hot) + len(cold) == len(counts)
    assert split_rare(counts, 5)[1:] == ([], 0)  # a quarter of the pairs or more: all hot


def test_a_merge_given_a_word_twice_merges_it_once():
    """A word may be listed twice under a pair (a merge that re-makes an existing piece lists it
    again): apply_merge must count its changes once, as the Python loop (which finds the pair gone
    the second time) does."""
    from array import array

    from workbench.core import bpe_kernel
    from workbench.core.bpe import _POS, _SHIFT, FlatWords

    def merged(ids: list[int]):
        store = FlatWords.from_lists([[1, 2, 3, 1, 2], [3, 1, 2], [2, 2]])
        view = bpe_kernel.FlatView(store, [5, 2, 1])
        where: dict = {}
        out = bpe_kernel.apply_merge(view, array("i", ids), 1, 2, 9, _SHIFT, _POS, where, None, front_min=True)
        view.release()
        return out, store.to_lists(), {q: sorted(ws) for q, ws in where.items()}

    once = merged([0, 1])
    assert once[1] == [[9, 3, 9], [3, 9], [2, 2]]
    assert merged([0, 1, 0]) == once
    assert merged([1, 0, 1, 0]) == once


def test_a_smaller_word_added_to_a_pair_goes_in_front():
    """The first-seen bound of a pair is its word list's front times _POS: a merge adding a word
    smaller than the listed front (a re-made piece whose pair is listed already) must put it in
    front, or the bound is no lower bound and a tie can go to the wrong pair."""
    from array import array

    from workbench.core import bpe_kernel
    from workbench.core.bpe import _POS, _SHIFT, FlatWords

    store = FlatWords.from_lists([[4, 1, 2], [7, 7], [4, 1, 2, 5], [4, 9, 5]])
    view = bpe_kernel.FlatView(store, [1, 1, 1, 1])
    left, right = 4 * _SHIFT + 9, 9 * _SHIFT + 5  # (4, new) and (new, 5)
    where = {left: array("i", [3]), right: array("i", [3])}  # listed before, by a larger word
    bpe_kernel.apply_merge(view, array("i", [0, 2]), 1, 2, 9, _SHIFT, _POS, where, None, front_min=True)
    view.release()
    assert where[left][0] == 0 and sorted(where[left]) == [0, 2, 3]
    assert where[right][0] == 2 and sorted(where[right]) == [2, 3]
