"""Gini before → after: a parity-aware run held against the project's classic BPE run of the same
vocabulary size (measured too, though not ticked), with each language's token cost counted
independently by the encoder; no classic run of that size gives the sentence that says how to make
one; a chosen baseline pairs every other tokenizer with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.cli import run_cli
from workbench.core.encoder import Encoder
from workbench.core.expert_metrics import gini
from workbench.tasks.compare_files import compare_files
from workbench.tasks.gini_pairs import AUTO, NONE, missing_text
from workbench.tasks.sources import load_tokenizer

EN = "the cat sat on the mat and the dog sat on the log\n" * 30 + "a bird in the hand\n" * 10
DE = "der Hund und die Katze sind im Haus und der Vogel\n" * 30 + "ein Vogel in der Hand\n" * 10


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, list[Path], list[Path]]:
    """A project with classic BPE at V 300, parity-aware BPE at V 300 and at V 310."""
    root = tmp_path_factory.mktemp("pairs")
    train = [root / "en_train.txt", root / "de_train.txt"]
    dev = [root / "en_dev.txt", root / "de_dev.txt"]
    for path, text in zip(train + dev, (EN, DE, EN[:400], DE[:400])):
        path.write_text(text, encoding="utf-8")
    project = root / "p.tokproj"
    common = ["--project", str(project), "--progress", "none", "--no-count-cache"]
    assert run_cli(["train", *map(str, train), "--model", "bpe", "--vocab-size", "300", "--name", "classic",
                    *common]) == 0
    for size in ("300", "310"):
        assert run_cli(["train", *map(str, train), "--model", "parity-bpe", "--parity-dev", ",".join(map(str, dev)),
                        "--vocab-size", size, "--name", f"parity {size}", *common]) == 0
    return project, train, dev


def _cost(src: str, path: Path) -> float:
    text = path.read_text(encoding="utf-8")
    return len(Encoder(load_tokenizer(src)).encode(text)) / len(text)


def test_a_parity_run_is_held_against_the_classic_run_of_its_size(runs):
    project, _train, dev = runs
    files = [(str(p), {}, "") for p in dev]
    result = compare_files([("parity", f"{project}#2")], files, baseline=None, parallel=False, d=8, classic=AUTO)
    assert result is not None and len(result.gini_pairs) == 1
    pair = result.gini_pairs[0]
    assert pair.pair.before == "Run 1 · classic (classic BPE, added)" and pair.pair.vocab_size == 300
    assert [t.tokenizer for t in result.totals] == ["parity", "Run 1 · classic (classic BPE, added)"]
    by_lang = {c.language: c for c in pair.languages}
    assert set(by_lang) == {"en", "de"}
    for lang, path in (("en", dev[0]), ("de", dev[1])):
        assert by_lang[lang].before == pytest.approx(_cost(f"{project}#1", path), rel=1e-12)
        assert by_lang[lang].after == pytest.approx(_cost(f"{project}#2", path), rel=1e-12)
        assert by_lang[lang].change == pytest.approx(by_lang[lang].after / by_lang[lang].before - 1)
    assert pair.gini_before == pytest.approx(gini([by_lang["en"].before, by_lang["de"].before]))
    assert pair.gini_after == pytest.approx(gini([by_lang["en"].after, by_lang["de"].after]))
    assert pair.gini_after < pair.gini_before  # what parity-aware BPE is for
    assert "Gini" in pair.summary() and "→" in pair.summary()


def test_no_classic_run_of_that_size_says_how_to_make_one(runs):
    project, _train, dev = runs
    files = [(str(p), {}, "") for p in dev]
    result = compare_files([("parity 310", f"{project}#3"), ("classic", f"{project}#1")], files, baseline=None,
                           parallel=False, d=8, classic=AUTO)
    assert result is not None
    (pair,) = result.gini_pairs
    assert pair.pair.before is None and pair.languages == () and pair.gini_before is None
    assert pair.pair.missing == missing_text(310) and "--vocab-size 310" in pair.summary()
    assert len(result.totals) == 2  # nothing added


def test_a_chosen_baseline_is_held_against_every_other_tokenizer_and_none_pairs_nothing(runs):
    project, _train, dev = runs
    files = [(str(p), {}, "") for p in dev]
    chosen = [("classic", f"{project}#1"), ("parity", f"{project}#2"), ("parity 310", f"{project}#3")]
    result = compare_files(chosen, files, baseline=None, parallel=True, d=8, classic=f"{project}#1")
    assert result is not None
    assert [(p.pair.after, p.pair.before) for p in result.gini_pairs] == [("parity", "classic"),
                                                                         ("parity 310", "classic")]
    assert result.gini_pairs[0].cost == "tokens"  # parallel text: cost is tokens
    tokens = {(m.tokenizer, m.language): m.tokens for m in result.per_language}
    assert result.gini_pairs[1].languages[0].after == tokens[("parity 310", result.gini_pairs[1].languages[0].language)]
    none = compare_files(chosen, files, baseline=None, parallel=False, d=8, classic=NONE)
    assert none is not None and none.gini_pairs == []
