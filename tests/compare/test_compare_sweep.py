"""Sweep properties on real text: L never grows with k for BPE, the last point is the run's own
encoding, the knee follows its definition, results come back from the cache, stop works, and
tokenizers with nothing to sweep by (no merge list, no scores) are refused with one clear line."""

from __future__ import annotations

from itertools import pairwise

import pytest
from compare_helpers import corpus_slice

from workbench.core.corpus_metrics import count_text
from workbench.core.encoder import Encoder
from workbench.core.vocab_sweep import (
    Sweep,
    SweepPoint,
    bpe_checkpoints,
    held_out,
    sweep,
    sweep_steps,
)
from workbench.corpus import open_source
from workbench.errors import ConfigError, WorkbenchError
from workbench.tasks.compare import ResultCache, sweep_files


@pytest.fixture(scope="module")
def held_text(corpora) -> str:
    return corpus_slice(corpora, "en_wiki_taylorswift.txt", 40_000)


def test_tokens_fall_with_merges_and_the_end_is_the_runs_encoding(shakespeare_run, held_text):
    lines = held_text.splitlines(keepends=True)
    chunks = ["".join(lines[i : i + 40]) for i in range(0, len(lines), 40)]
    result = sweep(shakespeare_run, held_out(shakespeare_run, chunks), points=9)
    tokens = [p.tokens for p in result.points]
    assert all(a >= b for a, b in pairwise(tokens)) and tokens[0] > tokens[-1]
    assert tokens[0] == len(held_text.encode("utf-8"))  # no merges: one token per byte
    assert [p.step for p in result.points] == sweep_steps(400, 9) == [0, 50, 100, 150, 200, 250, 300, 350, 400]
    assert result.points[-1].tokens == len(Encoder(shakespeare_run).encode(held_text))
    _tally, counts = count_text(shakespeare_run, [held_text])
    assert result.points[-1].attention == counts.attention  # one definition of L² for stats and sweep
    assert [p.vocab_size for p in result.points] == [256 + p.step for p in result.points]
    for point in result.points:  # every point is the encoder limited to its merges
        assert point.tokens == len(Encoder(shakespeare_run, max_merges=point.step).encode(held_text))
    # Continuing each split from the previous point gives what fresh encoders per point give.
    fresh = sweep(shakespeare_run, held_out(shakespeare_run, chunks), points=9, checkpoints=bpe_checkpoints)
    assert [(p.tokens, p.attention) for p in fresh.points] == [(p.tokens, p.attention) for p in result.points]


def pts(pairs):
    return [SweepPoint(i, v, t, 0, 1000, 1000, 768) for i, (v, t) in enumerate(pairs)]


def test_knee_is_where_every_later_gain_falls_below_the_threshold():
    # chars/token: 1000/t. Gains per 1k entries: 100 %, 25 %, 0.5 %, 0.4 %.
    curve = Sweep("t", pts([(1000, 1000), (2000, 500), (3000, 400), (4000, 398), (5000, 396.4143)]), 0.01, 768)
    gains = curve.gains
    assert gains[0] is None and gains[1] == pytest.approx(1.0) and gains[2] == pytest.approx(0.25)
    assert gains[3] == pytest.approx(400 / 398 - 1) and gains[3] < 0.01
    assert curve.knee == 2
    assert curve.as_dict()["knee_vocab_size"] == 3000
    still_climbing = Sweep("t", pts([(1000, 1000), (2000, 900), (3000, 800)]), 0.01, 768)
    assert still_climbing.knee is None


def test_sweep_files_cache_and_stop(shakespeare_run, corpora, tmp_path, isolated_cache):
    path = tmp_path / "held.txt"
    path.write_text(corpus_slice(corpora, "de_zitate.txt", 20_000), encoding="utf-8")
    src = open_source(path)
    cache = ResultCache(isolated_cache)
    assert sweep_files(shakespeare_run, [src], points=5, cache=cache, should_stop=lambda: True) is None
    first = sweep_files(shakespeare_run, [src], points=5, cache=cache)
    assert cache.hits == 0
    again = sweep_files(shakespeare_run, [src], points=5, d=1024, cache=cache)
    assert cache.hits == 1
    assert [p.tokens for p in again.points] == [p.tokens for p in first.points]
    assert again.points[-1].embedding_params == 656 * 1024
    path.write_text("ganz anderer Text\n", encoding="utf-8")  # a changed file is counted afresh
    changed = sweep_files(shakespeare_run, [open_source(path)], points=5, cache=cache)
    assert changed.points[0].tokens == len("ganz anderer Text\n")


def test_models_without_merge_prefixes_are_refused(shakespeare_run):
    from dataclasses import replace

    ranks_only = replace(shakespeare_run, merges=(), merge_rule="bytes")
    with pytest.raises(WorkbenchError, match="no merge list"):
        sweep(ranks_only, held_out(ranks_only, ["text\n"]))
    unigram = replace(shakespeare_run, model="unigram")  # no scores: nothing to cut by
    with pytest.raises(WorkbenchError, match="Unigram model without a score"):
        sweep(unigram, held_out(unigram, ["text\n"]))
    vocab_txt = replace(shakespeare_run, model="wordpiece", merges=())  # a vocab.txt has no merge list
    with pytest.raises(WorkbenchError, match="WordPiece vocabulary without its merge list"):
        sweep(vocab_txt, held_out(vocab_txt, ["text\n"]))
    with pytest.raises(ConfigError, match="at least 2 points") as few:
        sweep_steps(10, 1)
    assert few.value.field == "points" and "--" not in str(few.value)
