"""The Train tab plots what each model optimises, live and after reopening (issues 11 and 14).

Unigram: vocabulary size and log-likelihood per EM round, pruning steps and the final cut marked,
read from the stored ``run_steps``. WordPiece (likelihood): its merges' scores. BPE: the merged
pair's frequency. A fresh window on a project with finished runs of all three shows every plot
filled, the compression plot included (the "empty after reopening" report).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import Qt
from ui_helpers import train_cli, wait_for_curves

from workbench.corpus.demo import demo_corpus_files
from workbench.store import ProjectStore


def _finite_em(rows):
    return [(r.step, r.value) for r in rows if r.phase == "em"]


def _assert_unigram_curves(plots, run_id, rows):
    x, y = plots.curve_data(run_id, "vocab")
    np.testing.assert_array_equal(x, [r.step for r in rows])
    np.testing.assert_array_equal(y, [r.vocab_size for r in rows])
    x, y = plots.curve_data(run_id, "frequency")
    em = _finite_em(rows)
    np.testing.assert_array_equal(x, [s for s, _ in em])
    np.testing.assert_allclose(y, [v for _, v in em])
    np.testing.assert_array_equal(plots.curve_data(run_id, "tokens")[1], [r.token_count for r in rows])
    marks_x, marks_y = plots.runs[run_id].marks.getData()
    assert list(marks_x) == [r.step for r in rows if r.phase in ("prune", "final")]
    assert list(marks_y) == [r.vocab_size for r in rows if r.phase in ("prune", "final")]
    titles = plots.titles()
    assert "log-likelihood" in titles["frequency"] and "pruning" in titles["vocab"]
    assert not plots.plots["frequency"].ctrl.logYCheck.isChecked()  # a log-likelihood is negative


def test_a_unigram_run_is_plotted_live_and_after_reopening(make_window, qtbot, project):
    files = demo_corpus_files()
    window = make_window(project, files)
    panel = window.training
    window.show_panel("train")
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("unigram"))
    panel.model_combo.activated.emit(panel.model_combo.currentIndex())
    panel.set_options(vocab_size=1000)
    live_points: list[int] = []
    panel.plots.redrawn.connect(lambda n: live_points.append(n) if panel.live_run is not None else None)
    bars: list[tuple[int, str]] = []  # the progress bar while pruning: |V| shrinking towards the target
    panel.plots.redrawn.connect(lambda _n: bars.append((panel.progress.value(), panel.progress.format())))
    with qtbot.waitSignal(panel.run_finished, timeout=120000) as finished:
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    run_id, status = finished.args
    assert status == "finished"
    with ProjectStore.open(project, readonly=True) as store:
        rows = store.run_steps(run_id)
        info = store.run(run_id)
    assert info.settings["model"] == "unigram" and len(rows) > 4
    # Drawn while it trained: some redraws happened before the end with part of the steps.
    assert any(0 < n < len(rows) for n in live_points), live_points
    _assert_unigram_curves(panel.plots, run_id, rows)
    hover = panel.plots.hover_at(rows[0].step)
    assert "EM round" in hover and "log-likelihood" in hover
    prune = next(r for r in rows if r.phase == "prune")
    assert "pruning step" in panel.plots.hover_at(prune.step)
    # Not "0 / 0 merges": the bar follows |V| from the seed size to the target, and the run's row has no
    # merge count to show.
    assert panel.progress.format() == "|V| 1,000 · finished" and panel.progress.value() == 1000
    live = [fmt for _v, fmt in bars if fmt.startswith("step ")]
    assert live and all("→ 1,000" in fmt for fmt in live), bars
    values = [v for v, fmt in bars if fmt.startswith("step ")]
    assert values == sorted(values)
    item = panel.history.tree.topLevelItem(0)
    assert item.text(3) == "—"

    window.shutdown()
    again = make_window(project)
    assert again.training.history.run_ids() == [run_id]
    wait_for_curves(qtbot, again.training.plots, [run_id])  # read and built on a worker, drawn a plot a turn
    _assert_unigram_curves(again.training.plots, run_id, rows)


@pytest.fixture
def demo_pair():
    """Two files of the demo corpus: enough text for Unigram to prune, quick to train on."""
    return [p for p in demo_corpus_files() if p.name in ("de_zitate.txt", "en_shakespeare.txt")]


@pytest.fixture
def three_models(tmp_path, demo_pair):
    """A project with a finished BPE, WordPiece and Unigram run, trained headless."""
    project = tmp_path / "three.tokproj"
    train_cli(demo_pair, project, "--merges", "40", "--name", "bpe")
    train_cli(demo_pair, project, "--model", "wordpiece", "--vocab-size", "400", "--wordpiece-score", "likelihood",
              "--name", "wordpiece")  # its scores are plotted
    train_cli(demo_pair, project, "--model", "unigram", "--vocab-size", "500", "--name", "unigram")
    with ProjectStore.open(project, readonly=True) as store:
        runs = {r.name: r.id for r in store.runs()}
        stored = {"bpe": store.steps(runs["bpe"]), "wordpiece": store.run_steps(runs["wordpiece"]),
                  "unigram": store.run_steps(runs["unigram"])}
    return project, runs, stored


def test_a_fresh_window_plots_every_finished_run_of_the_three_models(make_window, qtbot, three_models, demo_pair):
    project, runs, stored = three_models
    window = make_window(project)
    panel = window.training
    plots = panel.plots
    chars = sum(len(p.read_text(encoding="utf-8")) for p in demo_pair)
    for model in ("bpe", "wordpiece", "unigram"):
        rid = runs[model]
        rows = stored[model]
        assert rows, model
        panel.history.select([rid])
        assert list(plots.runs) == [rid]
        wait_for_curves(qtbot, plots, [rid])
        for name in ("vocab", "frequency", "tokens", "compression"):
            x, y = plots.curve_data(rid, name)
            assert len(x) > 0 and np.isfinite(y).all(), (model, name)
        np.testing.assert_allclose(plots.curve_data(rid, "compression")[1],
                                   [chars / r.token_count for r in rows])
    panel.history.select([runs["bpe"]])
    wait_for_curves(qtbot, plots, [runs["bpe"]])
    assert plots.titles()["frequency"] == "Frequency of the merged pair (log)"
    np.testing.assert_array_equal(plots.curve_data(runs["bpe"], "frequency")[1],
                                  [r.frequency for r in stored["bpe"]])
    assert plots.plots["vocab"].getAxis("bottom").labelText == "merge step"
    panel.history.select([runs["wordpiece"]])
    wait_for_curves(qtbot, plots, [runs["wordpiece"]])
    assert plots.titles()["frequency"] == "WordPiece score of the merged pair (log)"
    scores = [r.value for r in stored["wordpiece"]]
    assert all(0 < s <= 1 for s in scores)
    np.testing.assert_allclose(plots.curve_data(runs["wordpiece"], "frequency")[1], scores)
    assert "score" in plots.hover_at(1)
    panel.history.select([runs["unigram"]])
    wait_for_curves(qtbot, plots, [runs["unigram"]])
    _assert_unigram_curves(plots, runs["unigram"], stored["unigram"])
    assert plots.plots["vocab"].getAxis("bottom").labelText == "EM round / pruning step"
    # Overlaid, the value plot keeps the first run's kind and says the others are left out.
    panel.history.select([runs["bpe"], runs["unigram"]])
    wait_for_curves(qtbot, plots, [runs["bpe"], runs["unigram"]])
    assert "left out" in plots.titles()["frequency"]
    assert len(plots.curve_data(runs["unigram"], "frequency")[0]) == 0
    assert len(plots.curve_data(runs["bpe"], "frequency")[0]) == len(stored["bpe"])
    assert math.isfinite(plots.curve_data(runs["unigram"], "vocab")[1][-1])


def test_the_unigram_split_preview_is_what_the_trainer_counts(make_window, qtbot, project):
    """The preview showed the metaspace preset's split ('Hello', '▁▁world'); Unigram trains on
    SentencePiece's words: a dummy ▁ first and a word at every ▁."""
    from workbench.core.normalize import make_normalizer
    from workbench.tasks.train import COUNTED_AS, split_for_training, unigram_words

    window = make_window(project)
    panel = window.training
    sample = "Hello  world! naïve 12345"
    panel.sample_edit.setText(sample)
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("unigram"))
    panel.model_combo.activated.emit(panel.model_combo.currentIndex())
    raw = unigram_words(sample)  # the counted line (COUNTED_AS: whole lines) as the trainer cuts it
    assert COUNTED_AS["unigram"] == "none" and raw == ["▁Hello", "▁", "▁world!", "▁naïve", "▁12345"]
    assert split_for_training("unigram", "metaspace", "none", sample) == raw
    # Unigram's default normalizer (SentencePiece's clean-up) makes the double space one.
    assert panel.normalizer_combo.currentText() == "nmt,spm-whitespace"
    trained = unigram_words(sample, make_normalizer(("nmt", "spm-whitespace")))
    assert trained == ["▁Hello", "▁world!", "▁naïve", "▁12345"]
    assert split_for_training("unigram", "metaspace", "nmt,spm-whitespace", sample) == trained
    qtbot.waitUntil(lambda: f"{len(trained)} pieces" in panel.preview_text(), timeout=5000)
    assert panel.preview_label.toolTip() == " | ".join(trained)
    panel.normalizer_combo.setCurrentText("none")
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("bpe"))  # the preset alone, for BPE
    qtbot.waitUntil(lambda: panel.preview_label.toolTip() == "Hello | ▁▁world! | ▁naïve | ▁12345", timeout=5000)
