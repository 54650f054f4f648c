"""The Compare tab sweeps a WordPiece and a Unigram run (no refusal), keeps both curves on one
chart, and marks the Unigram pruning rounds apart from its cuts."""

from __future__ import annotations

import pytest
from compare_helpers import corpus_slice

pytest.importorskip("PySide6")
pg = pytest.importorskip("pyqtgraph")

from workbench.cli import run_cli


def test_panel_sweeps_wordpiece_and_unigram_runs(panel, qtbot, tmp_path, corpora):
    corpus = tmp_path / "train.txt"
    corpus.write_text(corpus_slice(corpora, "en_shakespeare.txt", 50_000), encoding="utf-8")
    project = tmp_path / "two.tokproj"
    for model, size in (("wordpiece", "400"), ("unigram", "500")):
        assert run_cli(["train", str(corpus), "--project", str(project), "--model", model, "--vocab-size", size,
                        "--progress", "none"]) == 0
    panel.set_project(project)
    panel.sweep_points.setValue(5)
    results = []
    for run in (1, 2):
        panel.sweep_source.setCurrentIndex(panel.sweep_source.findData(f"{project}#{run}"))
        with qtbot.waitSignal(panel.swept, timeout=120_000) as blocker:
            assert panel.run_sweep()
        results.append(blocker.args[0])
    wordpiece, unigram = results
    assert {p.kind for p in wordpiece.points} == {"merges"} and wordpiece.points[-1].vocab_size == 400
    kinds = [p.kind for p in unigram.points]
    assert kinds[:5] == ["cut"] * 5 and kinds[5:] and set(kinds[5:]) == {"pruning round"}
    assert unigram.points[4].vocab_size == 500 and not unigram.note
    assert panel.sweep_chart.sweeps == [wordpiece, unigram]  # both curves share the chart
    top = panel.sweep_chart.plots[0]
    squares = [item for item in top.items if isinstance(item, pg.ScatterPlotItem) and item.opts["symbol"] == "s"]
    assert len(squares) == 1 and len(squares[0].data) == len(kinds) - 5  # one hollow square per pruning round
    assert "Run 2" in panel.sweep_note.text() and "knee" in panel.sweep_note.text()
