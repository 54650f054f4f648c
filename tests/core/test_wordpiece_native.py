"""The C queue loop (core/_wordpiece_queue.c) must replay the pure frequency-score loop bit for bit.

Random small tables over few characters, ``#`` among them (so pieces are made twice, queue entries
go stale, merge nothing, and the seed-dependent tie of ``undetermined_from`` happens), weighted
words, a minimum frequency, a vocabulary size or a number of merges, a continuation order: the
events, the log (merges, frequencies, token counts), the pieces, the final words and
``undetermined_from`` must equal the pure loop's (its Python merges and its numpy passes). The
library itself is the oracle of tests/core/test_wordpiece_vs_tokenizers.py, which runs the C loop
when it is built. Skipped when the extension was not built (no C compiler at install); under
CI=true that is a failure: CI installs gcc and must test it."""

from __future__ import annotations

import os
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from shared_corpora import in_ci

from workbench.core import wordpiece
from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer

ROOT = Path(__file__).resolve().parents[2]

if wordpiece._native is None:
    if in_ci() and not os.environ.get("WORKBENCH_PURE"):
        pytest.fail("CI=true: the C queue loop (workbench.core._wordpiece_queue) was not built; CI installs gcc "
                    "so `pip install -e .` builds it", pytrace=False)
    pytest.skip("the C queue loop was not built (no C compiler at install) or WORKBENCH_PURE=1",
                allow_module_level=True)

tables = st.dictionaries(st.text(alphabet="aab#c", min_size=1, max_size=12), st.integers(0, 30), min_size=1,
                         max_size=30)
options = st.fixed_dictionaries({
    "size": st.integers(1, 60),
    "by_vocab": st.booleans(),
    "min_frequency": st.integers(0, 4),
    "order": st.permutations(["##a", "##b", "##c", "###"]),
})
# Two queue entries for one pair with one count, holding different words (test_wordpiece_vs_tokenizers).
SEEDED = {"a#c#aa": 1, "###a#aa#": 1, "###c#aa###": 3}
QUIRKS = {"c#a#": 1, "##aa": 12, "aaabcbc": 5, "#": 3, "#b#baa": 30, "ba#a#b": 21, "c": 18, "####ba#a": 22}


def _run(counts: dict[str, int], config: WordPieceConfig, order, native: bool, numpy: bool = False) -> tuple:
    trainer = WordPieceTrainer(counts, config, continuation_order=order)
    trainer.native = native
    if numpy:  # the pure loop with every merge and the index in numpy passes
        trainer.numpy_min_words = trainer.numpy_index_min_words = 0
    events = list(trainer.run())
    return (events, list(trainer.merges), list(trainer.frequencies), list(trainer.scores), list(trainer.token_counts),
            list(trainer.pieces), trainer.token_count, trainer.words, trainer.undetermined_from)


def _config(options: dict) -> WordPieceConfig:
    size = options["size"]
    return WordPieceConfig(vocab_size=10 + size if options["by_vocab"] else None,
                           merges=None if options["by_vocab"] else size, score="frequency",
                           min_frequency=options["min_frequency"], special_tokens=("[UNK]",), normalizer=(),
                           pretokenizer="none")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=tables, options=options)
@example(counts=SEEDED, options={"size": 4, "by_vocab": True, "min_frequency": 0, "order": ["###", "##a", "##c", "##b"]})
@example(counts=QUIRKS, options={"size": 46, "by_vocab": True, "min_frequency": 0, "order": ["##a", "##b", "##c", "###"]})
def test_c_loop_equals_the_pure_loop(counts, options):
    config = _config(options)
    native = _run(counts, config, options["order"], True)
    assert native == _run(counts, config, options["order"], False)
    assert native == _run(counts, config, options["order"], False, numpy=True)


def test_the_seed_dependent_tie_is_found():
    config = WordPieceConfig(vocab_size=14, score="frequency", special_tokens=("[UNK]",), normalizer=(),
                             pretokenizer="none")
    trainer = WordPieceTrainer(SEEDED, config)
    assert trainer.native is None and wordpiece._native is not None
    list(trainer.run())
    assert trainer.undetermined_from is not None
    assert trainer.undetermined_from == trainer.pieces.index("###c")


def test_demo_corpus_to_3000():
    """A real multilingual table (the shipped demo corpus, BERT's pre-tokenizer and lower-casing)."""
    from workbench.core.count import count_pretokens
    from workbench.corpus.demo import demo_corpus_files

    text = "".join(p.read_text(encoding="utf-8") for p in demo_corpus_files())
    counts = count_pretokens([text.lower()], pretokenizer="bert")
    config = WordPieceConfig(vocab_size=3000, score="frequency")
    assert _run(counts, config, None, True) == _run(counts, config, None, False)


def test_stops_between_merges_when_asked():
    counts = {"abcdefgh": 50, "ijklmnop": 40}
    trainer = WordPieceTrainer(counts, WordPieceConfig(merges=100, score="frequency"))
    seen: list = []
    for event in trainer.run(should_stop=lambda: len(seen) >= 3):
        seen.append(event)
    assert len(seen) == 3 and len(trainer.merges) == 3


def test_pure_env_var_keeps_the_pure_loop():
    """``WORKBENCH_PURE=1`` (tests, benches): the module is not used even when built."""
    code = "import workbench.core.wordpiece as w; print(w._native is None)"
    env = {**os.environ, "WORKBENCH_PURE": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip() == "True", out.stderr


def test_subclasses_and_the_likelihood_score_keep_the_pure_loops(monkeypatch):
    calls: list = []
    monkeypatch.setattr(WordPieceTrainer, "_run_native", lambda self, stop: calls.append(1) or iter(()))
    counts = {"the": 5, "cat": 3, "sat": 2}

    class Sub(WordPieceTrainer):
        pass

    assert list(Sub(counts, WordPieceConfig(merges=2, score="frequency")).run()) and not calls
    assert list(WordPieceTrainer(counts, WordPieceConfig(merges=2)).run()) and not calls  # likelihood
    assert list(WordPieceTrainer(counts, WordPieceConfig(merges=2, score="frequency")).run()) == [] and calls == [1]


def test_bad_input_is_refused_not_read_past():
    """The store's arrays are checked before the loop trusts them: a word past the symbols, a symbol
    id past what a pair key holds, and calls out of order are one clear error, never a crash."""
    loop_type = wordpiece._native.QueueLoop
    with pytest.raises(ValueError):
        loop_type(array("i", [0, 1]), array("i", [3]), [0], [1])
    with pytest.raises(OverflowError):
        loop_type(array("i", [0, 1 << 21]), array("i", [2]), [0], [1])
    loop = loop_type(array("i", [0, 1, 0, 1]), array("i", [4]), [0], [2])
    with pytest.raises(RuntimeError):
        loop.merge(5)
    assert loop.pop() == (0, 1, 4)
    with pytest.raises(RuntimeError):
        loop.pop()
    assert loop.merge(5) == 4
    # "0 1 0 1" (weight 2) is "5 5": (5, 5) gained, (1, 0) fell to 0 and sinks below it
    assert loop.pop() == (5, 5, 2)
    assert loop.merge(6) == 2
    assert loop.pop() == (1, 0, 0) and loop.merge(7) == 0  # (the trainer stops at a count below 1)
    assert loop.pop() is None
