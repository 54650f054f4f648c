"""The Compare charts stay readable with several tokenizers, in both themes (issue 19).

Before: the tokens-per-language legend sat inside the plot and covered the last language's bars
once a few tokenizers were compared; the sweep's |V| axis mixed ``5,000`` and ``10k``. Here five
real BPE tokenizers (trained on Shakespeare with 60 … 400 merges) are measured on four languages of
the shared corpora and swept, and the charts are measured at the size the Compare tab gives them
in a 1280 × 800 window, after the event loop ran.
"""

from __future__ import annotations

import re

import pytest
from compare_helpers import corpus_slice

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QRectF  # noqa: E402

from workbench.core.bpe import TrainConfig, train  # noqa: E402
from workbench.core.count import count_pretokens  # noqa: E402
from workbench.corpus import open_source  # noqa: E402
from workbench.tasks.compare import compare_corpus, sweep_files  # noqa: E402
from workbench.ui import style  # noqa: E402
from workbench.ui.compare.charts import LanguageBarChart, SweepChart  # noqa: E402

CHART_SIZE = (830, 640)  # the chart's share of the Compare tab in a 1280 × 800 window


@pytest.fixture(scope="module")
def measured(tmp_path_factory, corpora):
    root = tmp_path_factory.mktemp("chart-layout")
    counts = count_pretokens([corpus_slice(corpora, "en_shakespeare.txt", 60_000)], pretokenizer="gpt2")
    tokenizers = []
    for merges in (60, 120, 200, 300, 400):
        tok, _ = train(counts, TrainConfig(units="bytes", merges=merges, pretokenizer="gpt2"))
        tokenizers.append((f"Shakespeare byte-level BPE with {merges} merges", tok))
    files = []
    for name in ("de_zitate.txt", "en_shakespeare.txt", "ru_fortunes.txt", "zh_fortunes.txt"):
        path = root / name
        path.write_text(corpus_slice(corpora, name, 6_000, start=100_000), encoding="utf-8")
        files.append(path)
    sources = [open_source(p) for p in files]
    result = compare_corpus(tokenizers, sources, baseline="en")
    assert result is not None
    sweeps = [sweep_files(tok, sources[1:2], name=name, points=6) for name, tok in tokenizers]
    assert all(s is not None for s in sweeps)
    return result, sweeps


def _scene_rect(item) -> QRectF:
    return item.mapRectToScene(item.boundingRect())


def _show(qtbot, chart):
    qtbot.addWidget(chart)
    chart.resize(*CHART_SIZE)
    chart.show()
    qtbot.waitExposed(chart)
    return chart


def _unique_labels(axis) -> list[str]:
    labels = axis.labels()
    assert labels and len(labels) == len(set(labels)), labels
    return labels


@pytest.mark.parametrize("palette", [style.light_palette, style.dark_palette])
def test_the_language_legend_covers_no_bar(qtbot, measured, palette) -> None:
    result, _sweeps = measured
    chart = _show(qtbot, LanguageBarChart())
    chart.setPalette(palette())
    chart.set_rows(result.per_language, result.fairness, result.baseline)
    legend = chart.legend
    assert legend is not None and len(legend.items) == 5
    qtbot.waitUntil(lambda: legend.columnCount >= 2, timeout=5000)  # five entries side by side, not a column
    qtbot.wait(50)
    view = QRectF(chart.view.viewport().rect())
    box = _scene_rect(legend)
    assert view.contains(box), (view, box)
    assert len(chart.bars) == 5
    for bar in chart.bars:
        assert not box.intersects(_scene_rect(bar)), (box, _scene_rect(bar))
    assert not box.intersects(_scene_rect(chart.plot.vb))
    assert chart.plot.vb.height() >= 300  # the legend row under the bars leaves them the height
    _unique_labels(chart.plot.getAxis("left"))
    title = chart.plot.titleLabel
    assert title.item.boundingRect().width() <= chart.plot.vb.width() + 1


def test_five_sweeps_keep_three_readable_plots_and_one_suffix_per_axis(qtbot, measured) -> None:
    _result, sweeps = measured
    chart = _show(qtbot, SweepChart())
    for palette in (style.light_palette, style.dark_palette):
        chart.setPalette(palette())
        chart.set_sweeps(sweeps)
        qtbot.waitUntil(lambda: chart.legend is not None and chart.legend.columnCount >= 2, timeout=5000)
        qtbot.wait(50)
        view = QRectF(chart.view.viewport().rect())
        legend = _scene_rect(chart.legend)
        assert view.contains(legend)
        for plot in chart.plots:
            assert plot.vb.height() >= 80, plot.vb.height()
            assert not legend.intersects(_scene_rect(plot))
            assert view.contains(_scene_rect(plot))
            _unique_labels(plot.getAxis("left"))
        bottom = _unique_labels(chart.plots[-1].getAxis("bottom"))
        suffixes = {re.sub(r"[-\d.,]", "", s) for s in bottom if s != "0"}
        assert len(suffixes) == 1, bottom
