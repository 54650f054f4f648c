"""The C merge loop (core/_bpe_merge.c) must make the pure trainer's merges, bit for bit.

Random small corpora over few symbols (runs like "aaaa", repeated pairs in a word, ties, merges that
rebuild an existing piece), byte and character units, both tie-breaks, specials, an end-of-word
marker, a minimum frequency, a vocabulary size or a number of merges: the event streams, the log
(merges, frequencies, token counts), the vocabulary and the final words must equal the pure loops'
(the list loop and the flat loop with its numpy passes). Skipped when the extension was not built
(no C compiler at install); under CI=true that is a failure: CI installs gcc and must test it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_corpora import in_ci

from workbench.core import bpe
from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.count import count_pretokens

ROOT = Path(__file__).resolve().parents[2]

if bpe._native is None:
    if in_ci() and not os.environ.get("WORKBENCH_PURE"):
        pytest.fail("CI=true: the C merge loop (workbench.core._bpe_merge) was not built; CI installs gcc "
                    "so `pip install -e .` builds it", pytrace=False)
    pytest.skip("the C merge loop was not built (no C compiler at install) or WORKBENCH_PURE=1",
                allow_module_level=True)

texts = st.text(alphabet=st.sampled_from("aaab c\né中"), max_size=200)
configs = st.fixed_dictionaries({
    "units": st.sampled_from(["bytes", "chars"]),
    "tie_break": st.sampled_from(["first-seen", "hf"]),
    "pretokenizer": st.sampled_from(["gpt2", "none", "whitespace"]),
    "size": st.integers(1, 60),
    "by_vocab": st.booleans(),
    "min_frequency": st.integers(1, 3),
    "specials": st.booleans(),
    "marker": st.booleans(),
})


def _run(counts: dict[str, int], config: TrainConfig, native: bool, flat: bool = False) -> tuple:
    trainer = BpeTrainer(counts, config)
    trainer.native = native
    if flat:  # the pure flat store, its merges in numpy
        trainer.flat_min_words = trainer.numpy_min_words = 0
    events = list(trainer.run())
    return (events, list(trainer.merges), list(trainer.frequencies), list(trainer.token_counts),
            list(trainer.vocab), trainer.token_count, trainer.words)


def _config(options: dict) -> TrainConfig:
    chars = options["units"] == "chars"
    base = 256 if not chars else 0
    specials = ("<s>", "</s>") if options["specials"] else ()
    return TrainConfig(units=options["units"], tie_break=options["tie_break"], pretokenizer=options["pretokenizer"],
                       min_frequency=options["min_frequency"], special_tokens=specials,
                       end_of_word="</w>" if options["marker"] and chars else "",
                       # bytes: a vocabulary size (the alphabet is known); chars: a number of merges
                       vocab_size=base + len(specials) + options["size"] if options["by_vocab"] and not chars else None,
                       merges=None if options["by_vocab"] and not chars else options["size"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, options=configs)
def test_c_loop_equals_pure_loops(text, options):
    counts = count_pretokens([text], pretokenizer=options["pretokenizer"])
    if not counts:
        return
    config = _config(options)
    native = _run(counts, config, True)
    assert native == _run(counts, config, False)
    assert native == _run(counts, config, False, flat=True)


@settings(max_examples=60, deadline=None)
@given(counts=st.dictionaries(st.text(alphabet="aab", min_size=1, max_size=16), st.integers(1, 9), max_size=40),
       tie_break=st.sampled_from(["first-seen", "hf"]))
def test_weighted_runs_of_one_symbol(counts, tie_break):
    """Words like "aaaaab" weighted unequally: the (a, a) merges, their neighbour counts, and pieces
    built twice ("aaa" from (aa, a) and from (a, aa)) reusing their id."""
    config = TrainConfig(units="chars", merges=40, tie_break=tie_break)
    assert _run(counts, config, True) == _run(counts, config, False)


def test_demo_corpus_byte_level_to_2000():
    """A real multilingual table (the shipped demo corpus), byte level, GPT-2 split, V 2,000."""
    from workbench.corpus.demo import demo_corpus_files

    text = "".join(p.read_text(encoding="utf-8") for p in demo_corpus_files())
    counts = count_pretokens([text], pretokenizer="gpt2")
    for tie_break in ("first-seen", "hf"):
        config = TrainConfig(vocab_size=2000, tie_break=tie_break)
        assert _run(counts, config, True)[1:] == _run(counts, config, False, flat=True)[1:]


def test_stops_between_merges_when_asked():
    counts = count_pretokens(["abcdefgh " * 50 + "ijklmnop " * 40])
    trainer = BpeTrainer(counts, TrainConfig(merges=100))
    seen: list = []
    for event in trainer.run(should_stop=lambda: len(seen) >= 3):
        seen.append(event)
    assert len(seen) == 3 and len(trainer.merges) == 3


def test_pure_env_var_keeps_the_pure_loops():
    """``WORKBENCH_PURE=1`` (tests, benches): the module is not used even when built."""
    code = "import workbench.core.bpe as b; print(b._native is None)"
    env = {**os.environ, "WORKBENCH_PURE": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip() == "True", out.stderr


def test_extensions_and_subclasses_keep_the_pure_loops(monkeypatch):
    """``refuse``/``refit`` hooks and subclasses are not the C loop's: it must never be constructed."""
    calls: list = []
    monkeypatch.setattr(BpeTrainer, "_run_native", lambda self, stop: calls.append(1) or iter(()))
    counts = count_pretokens(["the cat sat on the mat " * 5])
    trainer = BpeTrainer(counts, TrainConfig(merges=5))
    trainer.refuse = lambda a, b, piece: False
    assert len(list(trainer.run())) == 5 and not calls

    class Sub(BpeTrainer):
        pass

    assert len(list(Sub(counts, TrainConfig(merges=5)).run())) == 5 and not calls
    assert list(BpeTrainer(counts, TrainConfig(merges=5)).run()) == [] and calls == [1]


def test_refuses_more_units_than_a_pair_key_holds():
    """Pair keys pack two ids of 21 bits: a unit table past 2**21 ids is refused, never wrapped around
    into another pair's key (the trainer's config check keeps vocabularies far below it)."""
    from array import array

    sym, lens, start = array("i", [0, 1]), array("i", [2]), array("i", [0])
    with pytest.raises(OverflowError):
        bpe._native.MergeLoop(sym, lens, start, [1], [1] * ((1 << 21) + 1), True, [])
    loop = bpe._native.MergeLoop(sym, lens, start, [1], [1] * (1 << 21), True, [])
    assert loop.pop_best()[:2] == (0, 1)
