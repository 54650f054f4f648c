"""Rényi and Shannon efficiency, single-token retention, average token rank and the Gini of
per-language cost: through ``compare_corpus`` (the code ``stats`` and the Compare tab run) on real
corpus slices, against ``tokenization-scorer`` as the oracle and against hand counts."""

from __future__ import annotations

import json
import math

import pytest
import tokenization_scorer
from compare_helpers import corpus_slice

from workbench.core.encoder import Encoder
from workbench.core.expert_metrics import gini, renyi_efficiency
from workbench.core.unigram import UnigramConfig, count_spm_words
from workbench.core.unigram import train as train_unigram
from workbench.corpus import open_source
from workbench.errors import WorkbenchError
from workbench.tasks.compare import ResultCache, compare_corpus

SLICES = [("en_shakespeare.txt", "en"), ("de_zitate.txt", "de"), ("ru_fortunes.txt", "ru"), ("zh_fortunes.txt", "zh")]


@pytest.fixture(scope="module")
def slice_files(corpora, tmp_path_factory) -> list:
    root = tmp_path_factory.mktemp("expert")
    paths = []
    for name, lang in SLICES:
        path = root / f"{lang}_{name}"
        path.write_text(corpus_slice(corpora, name, 6_000, start=70_000 if lang == "en" else 0), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def unigram_run(corpora):
    text = corpus_slice(corpora, "en_shakespeare.txt", 30_000)
    return train_unigram(count_spm_words(text.splitlines()), UnigramConfig(vocab_size=400))


def scorer_text(tokenizer, paths) -> str:
    """The files encoded whole by the encoder (not the meter's per-pre-token cache), ids as the
    scorer's words; a SentencePiece model encodes a line as one sentence, so it gets line by line."""
    enc = Encoder(tokenizer)
    lines = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for part in text.splitlines() if enc.spm_model is not None else [text]:
            lines.append(" ".join(str(i) for i in enc.encode(part)))
    return "\n".join(line for line in lines if line)


@pytest.mark.parametrize("which", ["bpe", "cl100k", "unigram"])
def test_efficiencies_equal_tokenization_scorer(which, slice_files, shakespeare_run, cl100k, unigram_run,
                                                isolated_cache):
    tok = {"bpe": shakespeare_run, "cl100k": cl100k, "unigram": unigram_run}[which]
    text = scorer_text(tok, slice_files)
    sources = [open_source(p) for p in slice_files]
    cache = ResultCache(isolated_cache)  # counted once; α and the basis act on the counts
    for basis, alpha in (("declared", 2.5), ("observed", 3.0)):
        total = compare_corpus([(which, tok)], sources, alpha=alpha, basis=basis, cache=cache).totals[0]
        v = {"vocab": len(tok.vocab)} if basis == "declared" else {}
        assert total.basis_size == (len(tok.vocab) if basis == "declared" else len(set(text.split())))
        expected = tokenization_scorer.score(text, metric="renyi", power=alpha, **v)
        assert total.renyi_efficiency == pytest.approx(expected, abs=1e-9)
        expected = tokenization_scorer.score(text, metric="shannon", **v)
        assert total.shannon_efficiency == pytest.approx(expected, abs=1e-9)
        assert 0 < total.renyi_efficiency < total.shannon_efficiency <= 1  # H_α falls with α


def test_retention_rank_and_gini_by_hand(worked_project):
    """The worked example (PRODUCT.md): 3 merges of characters, whitespace pre-tokenizer."""
    from workbench.tasks.sources import load_tokenizer

    project, corpus = worked_project
    tok = load_tokenizer(str(project))
    enc = Encoder(tok)
    words = corpus.read_text(encoding="utf-8").split()
    single = sum(len(enc.encode(w)) == 1 for w in words)
    m = compare_corpus([("w", tok)], [open_source(corpus)]).totals[0]
    assert m.counts.single_words == single and m.single_token_retention == single / len(words)
    ids = [i for w in words for i in enc.encode(w)]
    ranks = {i: r for r, i in enumerate((i for i in range(len(tok.vocab)) if i not in tok.special_ids), 1)}
    assert m.average_rank == pytest.approx(sum(ranks[i] for i in ids) / len(ids))
    assert gini([1.0, 1.0, 1.0]) == 0 and gini([0.0, 0.0, 3.0]) == pytest.approx(2 / 3)
    assert gini([5.0]) is None and renyi_efficiency([], 10) is None


def test_gini_over_languages_and_alpha_from_the_cache(slice_files, shakespeare_run, isolated_cache):
    sources = [open_source(p) for p in slice_files]
    cache = ResultCache(isolated_cache)
    first = compare_corpus([("bpe", shakespeare_run)], sources, cache=cache)
    costs = [m.tokens / m.text.chars for m in first.per_language]
    assert len(costs) == 4 and first.totals[0].gini == pytest.approx(gini(costs)) and first.totals[0].gini > 0.05
    # α and the |V| basis act on the cached id frequencies: changing them is answered from the
    # cache (4 files × text + tokens), and the numbers are those of a fresh count.
    again = compare_corpus([("bpe", shakespeare_run)], sources, cache=cache, alpha=4.0, basis="observed")
    fresh = compare_corpus([("bpe", shakespeare_run)], sources, alpha=4.0, basis="observed")
    assert again.cache_hits == 8
    assert again.totals[0].renyi_efficiency == fresh.totals[0].renyi_efficiency != first.totals[0].renyi_efficiency
    assert again.totals[0].single_token_retention == first.totals[0].single_token_retention > 0
    with pytest.raises(WorkbenchError, match="Rényi α"):
        compare_corpus([("bpe", shakespeare_run)], sources, alpha=0)


def test_stats_prints_and_reports_the_metrics(slice_files, shakespeare_run, tmp_path, capsys):
    from workbench.cli import run_cli
    from workbench.formats.export import export_tokenizer

    path = tmp_path / "bpe.json"
    export_tokenizer(shakespeare_run, "hf", path)
    files = [str(p) for p in slice_files[:2]]
    assert run_cli(["stats", *files, "--tokenizer", str(path), "--json", "--renyi-alpha", "3",
                    "--vocab-basis", "observed"]) == 0
    doc = json.loads(capsys.readouterr().out)
    total = doc["totals"][0]
    assert total["renyi_alpha"] == 3.0 and total["efficiency_vocab_basis"] == "observed"
    assert math.isclose(total["renyi_efficiency"], doc["totals"][0]["renyi_efficiency"])
    assert 0 < total["renyi_efficiency"] < total["shannon_efficiency"] < 1
    assert total["gini_language_cost"] > 0 and 0 < total["single_token_retention"] < 1
    baseline = doc["files"][0]["language"]  # with a baseline, fairness carries each tokenizer's Gini too
    assert run_cli(["stats", *files, "--tokenizer", str(path), "--json", "--baseline-language", baseline]) == 0
    fair = json.loads(capsys.readouterr().out)["fairness"]
    assert list(fair["gini"].values()) == [pytest.approx(total["gini_language_cost"], rel=1e-5)]
    assert run_cli(["stats", *files, "--tokenizer", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Rényi eff. (α 2.5, |V| declared" in out and "retention" in out and "Gini" in out
    assert run_cli(["stats", *files, "--tokenizer", str(path), "--renyi-alpha", "-1"]) == 2
    assert "Rényi α -1.0: must be a positive number" in capsys.readouterr().err


def test_the_compare_tab_shows_the_metrics_with_their_definitions(panel, qtbot, slice_files, shakespeare_run,
                                                                  tmp_path):
    from pathlib import Path

    from PySide6.QtCore import Qt

    from workbench.core.expert_metrics import METRIC_NOTES
    from workbench.formats.export import export_tokenizer

    src = tmp_path / "bpe.json"
    export_tokenizer(shakespeare_run, "hf", src)
    panel.add_tokenizer_file(src)
    for path in slice_files[:2]:
        panel.add_corpus_file(path)
    panel.alpha_spin.setValue(3.0)
    panel.basis_combo.setCurrentIndex(panel.basis_combo.findData("observed"))
    model = panel.language_model
    assert panel.compute()
    qtbot.waitUntil(lambda: model.rowCount() == 3, timeout=60_000)  # en, de, all files
    headers = model.csv_header()
    total = model.rows[-1]
    renyi = model.data(model.index(2, headers.index("Rényi efficiency")))
    assert renyi == f"{total.renyi_efficiency:.3f} · α 3 · |V| {total.basis_size:,} observed"
    assert total.basis_size == len(total.counts.frequencies)
    for name in ("Shannon efficiency", "single-token retention", "average token rank", "Gini (language cost)"):
        cell = model.data(model.index(2, headers.index(name)))
        assert cell and cell != "—", name
        tip = model.headerData(headers.index(name), Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
        assert tip == METRIC_NOTES[name] and "Caveat" in tip
    assert model.data(model.index(0, headers.index("Gini (language cost)"))) == "—"  # a language row has none
    docs = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert all(note in docs for note in METRIC_NOTES.values())  # the tooltip is the documentation
