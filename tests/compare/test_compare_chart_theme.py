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
