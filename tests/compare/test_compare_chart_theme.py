"""A chart's legend follows a theme switch: entries already drawn take the new text colour."""

from __future__ import annotations

import pyqtgraph as pg

from workbench.ui import style
from workbench.ui.compare.charts import LanguageBarChart, SweepChart


def test_legend_entries_take_the_new_themes_text_colour(qtbot) -> None:
    for chart in (SweepChart(), LanguageBarChart()):
        qtbot.addWidget(chart)
        chart.setPalette(style.light_palette())
        assert chart.legend is not None
        chart.legend.addItem(pg.PlotDataItem([0, 1], [0, 1]), "Run 1")
        chart.setPalette(style.dark_palette())
        _sample, label = chart.legend.items[-1]
        fg = chart._fg().name()
        assert fg.lower() in label.item.toHtml().lower(), (fg, label.item.toHtml())
        assert style.is_dark(chart.palette())


def test_the_train_plots_legend_follows_the_theme_too(qtbot) -> None:
    from workbench.ui.train.plots import TrainingPlots

    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.setPalette(style.light_palette())
    plots.legend.addItem(pg.PlotDataItem([0, 1], [0, 1]), "Run 1")
    plots.setPalette(style.dark_palette())
    _sample, label = plots.legend.items[-1]
    assert plots._fg.name().lower() in label.item.toHtml().lower()


def test_the_sweep_chart_marks_the_knee_on_every_plot_for_every_family(qtbot) -> None:
    from workbench.core.vocab_sweep import Sweep, SweepPoint

    def sweep(kinds: list[str]) -> Sweep:
        # characters/token flattens after the third point: the knee is index 2
        chars = [100, 200, 300, 301, 302]
        return Sweep("run", [SweepPoint(i, 256 + 1000 * i, 100, 10_000, c, c, 768, kind)
                             for i, (c, kind) in enumerate(zip(chars, kinds))], threshold=0.01, d=768)

    chart = SweepChart()
    qtbot.addWidget(chart)
    bpe, unigram = sweep(["merges"] * 5), sweep(["cut", "cut", "cut", "pruning round", "pruning round"])
    assert bpe.knee == unigram.knee == 2
    chart.set_sweeps([bpe])
    assert len(chart.knees) == len(chart.plots)
    chart.set_sweeps([bpe, unigram])
    assert len(chart.knees) == 2 * len(chart.plots)
    assert {line.value() for line in chart.knees} == {256 + 2000}


def test_hollow_pruning_marks_take_the_new_themes_background(qtbot) -> None:
    from workbench.core.vocab_sweep import Sweep, SweepPoint

    chart = SweepChart()
    qtbot.addWidget(chart)
    chart.setPalette(style.light_palette())
    points = [SweepPoint(i, 256 + 1000 * i, 100, 10_000, 100 + 50 * i, 100 + 50 * i, 768, kind)
              for i, kind in enumerate(["cut", "cut", "pruning round", "pruning round"])]
    chart.set_sweeps([Sweep("unigram", points, threshold=0.01, d=768)])
    chart.setPalette(style.dark_palette())
    marks = [item for item in chart.plots[0].items if isinstance(item, pg.ScatterPlotItem)
             and item.opts["symbol"] == "s"]
    from PySide6.QtGui import QPalette

    base = style.dark_palette().color(QPalette.ColorRole.Base).name()
    assert marks and all(m.opts["brush"].color().name() == base for m in marks)
    assert len(chart.knees) in (0, len(chart.plots))  # drawn once, not piled up by the redraw
