"""The numpy merge passes (core/bpe_kernel.py) must make exactly the changes the Python loop makes.

BpeTrainer keeps the words flat and runs a merge held by at least ``numpy_min_words`` words in
numpy, the others in the Python loop over the flat store; a small table (below ``flat_min_words``)
or an extension's refit keeps the list loop. Here the threshold is forced to 0 (every merge in
numpy), 2 (a mix) and never (the list loop), and the flat loop's heap starts with the most frequent
pairs only (the others given entries when the best count falls below theirs): the event streams
and the final words must agree."""

from __future__ import annotations

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


def test_words_read_mid_run_then_continued():
    """Asking for ``words`` between merges turns them into lists; the run takes them back flat."""
    counts = count_pretokens(["the cat sat on the mat with the hat " * 30 + "aaaa aaa bbbb"], pretokenizer="gpt2")
    config = TrainConfig(merges=25)
    plain = _run(counts, config, 0)
    trainer = BpeTrainer(counts, config)
    trainer.numpy_min_words = trainer.flat_min_words = 0
    events = []
    for event in trainer.run():
        events.append(event)
        assert len(trainer.words) == trainer.word_types
    assert (events, trainer.words) == plain
