"""The incremental trainer must equal the textbook full-recount loop, merge for merge."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.bpe import BpeTrainer, TrainConfig, train
from workbench.core.bpe_reference import train_reference
from workbench.core.count import count_pretokens

# Small alphabets make ties and overlapping pairs ("aaa") common: the hard cases for the bookkeeping.
texts = st.text(alphabet=st.sampled_from("aab c\né中"), max_size=120)
configs = st.fixed_dictionaries({
    "units": st.sampled_from(["bytes", "chars"]),
    "tie_break": st.sampled_from(["first-seen", "hf"]),
    "pretokenizer": st.sampled_from(["gpt2", "none", "whitespace", "metaspace"]),
    "merges": st.integers(1, 40),
    "min_frequency": st.integers(1, 3),
    "marker": st.booleans(),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, options=configs)
def test_incremental_equals_full_recount(text, options):
    marker = "</w>" if options["marker"] and options["units"] == "chars" else ""
    config = TrainConfig(units=options["units"], merges=options["merges"], tie_break=options["tie_break"],
                         pretokenizer=options["pretokenizer"], min_frequency=options["min_frequency"],
                         end_of_word=marker)
    counts = count_pretokens([text], pretokenizer=options["pretokenizer"])
    if not counts:
        return
    tok, _ = train(counts, config)
    ours = [(tok.vocab[a], tok.vocab[b]) for a, b, _ in tok.merges]
    assert ours == train_reference(counts, config)


@settings(max_examples=60, deadline=None)
@given(counts=st.dictionaries(st.text(alphabet="abcd", min_size=1, max_size=12), st.integers(1, 50), max_size=30))
def test_weighted_word_tables_and_token_counts(counts):
    config = TrainConfig(units="chars", merges=25)
    trainer = BpeTrainer(counts, config)
    events = list(trainer.run())
    assert [(trainer.vocab[e.left], trainer.vocab[e.right]) for e in events] == train_reference(counts, config)
    # The reported corpus token count is the real one after each merge.
    if events:
        assert events[-1].token_count == sum(f * len(w) for w, f in zip(trainer.words, trainer.freqs))
    for before, after in zip(events, events[1:]):
        # A merge removes one token per occurrence it joins: exactly its frequency, except that a
        # pair of equal symbols overlaps itself ("aaa" counts (a, a) twice but joins it once).
        removed = before.token_count - after.token_count
        if after.left != after.right:
            assert removed == after.frequency
        else:
            assert 0 < removed <= after.frequency


def test_same_input_same_merges():
    text = "the quick brown fox jumps over the lazy dog " * 20 + "ünïcödé 中文 文中"
    counts = count_pretokens([text])
    first, _ = train(counts, TrainConfig(vocab_size=300))
    second, _ = train(dict(counts), TrainConfig(vocab_size=300))
    assert first.merges == second.merges and first.vocab == second.vocab


def test_stops_between_merges_when_asked():
    counts = count_pretokens(["abcdefgh " * 50 + "ijklmnop " * 40])
    trainer = BpeTrainer(counts, TrainConfig(merges=100))
    seen = []
    for event in trainer.run(should_stop=lambda: len(seen) >= 3):
        seen.append(event)
    assert len(seen) == 3 and len(trainer.merges) == 3


def test_min_frequency_stops_training():
    counts = {"ab": 5, "cd": 1}
    tok, freqs = train(counts, TrainConfig(units="chars", merges=10, min_frequency=2))
    assert freqs == [5]


def test_vocab_size_counts_specials_and_alphabet():
    counts = count_pretokens(["hello hello world"])
    tok, _ = train(counts, TrainConfig(vocab_size=256 + 2 + 4, special_tokens=("<|endoftext|>", "<pad>")))
    assert len(tok.vocab) == 262
    assert tok.special_tokens == {"<|endoftext|>": 0, "<pad>": 1}
    assert tok.vocab[2] == b"\x00" and tok.vocab[2 + ord("h")] == b"h"
