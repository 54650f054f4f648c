"""The Compare tab's two charts, drawn with pyqtgraph in the window's palette (light or dark).

* :class:`LanguageBarChart` — one group of bars per language, one bar per tokenizer: tokens relative
  to the baseline language (a dashed line marks 1.0), or characters per token when no baseline
  is chosen.
* :class:`SweepChart` — the vocabulary-size sweep: characters/token, L² and V × d against |V|,
  stacked with a shared x axis; a dashed line marks the knee. Points are filled circles (a merge
  prefix, or a Unigram cut of the final model) or hollow squares (a Unigram pruning round).

Both export themselves as PNG (``pyqtgraph.exporters``) or SVG (Qt's ``QSvgGenerator``), by the
file's suffix (:meth:`export`). What they leave out: computing anything — they draw the rows handed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPalette
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.core.corpus_metrics import Fairness, Metrics, percent
from workbench.core.vocab_sweep import Sweep
from workbench.errors import WorkbenchError
from workbench.ui import style
from workbench.ui.plot_labels import LegendFitter, TickAxis, recolour_title, set_title


class _Chart(QWidget):
    """A GraphicsLayoutWidget in the palette's colours, exportable as PNG or SVG."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.view = pg.GraphicsLayoutWidget()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.plots: list[pg.PlotItem] = []
        self.legend: pg.LegendItem | None = None
        self._fitter: LegendFitter | None = None

    def _fg(self) -> QColor:
        return self.palette().color(QPalette.ColorRole.Text)

    def _apply_palette(self) -> None:
        pal = self.palette()
        bg, fg = pal.color(QPalette.ColorRole.Base), self._fg()
        axis = QColor(fg)
        axis.setAlpha(170)
        self.view.setBackground(bg)
        for plot in self.plots:
            recolour_title(plot, fg.name())
            for side in ("left", "bottom"):
                ax = plot.getAxis(side)
                ax.setPen(pg.mkPen(axis))
                ax.setTextPen(pg.mkPen(fg))
                ax.label.setDefaultTextColor(axis)
        if self.legend is not None:
            style.recolour_legend(self.legend, fg)
            lb = QColor(bg)
            lb.setAlpha(210)
            self.legend.setBrush(pg.mkBrush(lb))
            self.legend.setPen(pg.mkPen(axis))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._apply_palette()

    def _fit_legend(self) -> None:
        if self.legend is not None:
            if self._fitter is None:
                self._fitter = LegendFitter(self.view, self.legend)
            self._fitter.fit()

    def export(self, path: str | Path, width: int = 1200) -> Path:
        """Write the chart as PNG or SVG (chosen by the suffix); returns the path.

        PNG goes through ``pyqtgraph.exporters.ImageExporter``. SVG is drawn by Qt's own
        ``QSvgGenerator``: pyqtgraph's ``SVGExporter`` fails on the paths Qt 6 writes (``ValueError``
        in ``correctCoordinates``, pyqtgraph issue #3485), for bars and dashed lines alike.
        """
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix not in (".png", ".svg"):
            raise WorkbenchError(f"{target.name}: charts export as .png or .svg")
        scene = self.view.scene()
        try:
            if suffix == ".png":
                from pyqtgraph import exporters

                exporter = exporters.ImageExporter(scene)
                exporter.parameters()["width"] = width
                exporter.export(str(target))
            else:
                self._export_svg(target)
        except OSError as exc:
            raise WorkbenchError(f"Cannot write {target} ({exc.strerror or exc}); choose a writable folder.") from None
        if not target.exists():
            raise WorkbenchError(f"Cannot write {target}; choose a writable folder.")
        return target

    def _export_svg(self, target: Path) -> None:
        from PySide6.QtSvg import QSvgGenerator

        scene = self.view.scene()
        rect = scene.sceneRect()
        generator = QSvgGenerator()
        generator.setFileName(str(target))
        generator.setSize(rect.size().toSize())
        generator.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
        generator.setTitle(type(self).__name__)
        painter = QPainter(generator)
        try:
            # The view paints the background, not the scene: fill it so dark charts stay readable.
            painter.fillRect(QRectF(0, 0, rect.width(), rect.height()), self.view.backgroundBrush())
            scene.render(painter, QRectF(0, 0, rect.width(), rect.height()), rect)
        finally:
            painter.end()


class LanguageBarChart(_Chart):
    """Tokens per language against the baseline, a bar per tokenizer."""

    # (tokenizer, language) → the mark above a bar of a tokenizer that loses characters there
    # (a class default: a palette change may arrive during __init__)
    lossy_marks: Mapping[tuple[str, str], pg.TextItem] = MappingProxyType({})

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Tokens per language chart")
        self.view.setAccessibleName("Tokens per language chart")
        self.plot = self.view.addPlot(row=0, col=0, axisItems={"left": TickAxis("left")})
        self.plots = [self.plot]
        self.plot.showGrid(y=True, alpha=0.25)
        self.plot.setMouseEnabled(x=False, y=False)
        # Under the bars, in a row of its own: inside the plot it covered the last language's bars
        # once a few tokenizers were compared (issue 19).
        self.legend = pg.LegendItem(offset=None)
        self.view.addItem(self.legend, row=1, col=0)
        self.bars: list[pg.BarGraphItem] = []
        self.values: dict[tuple[str, str], float] = {}  # (tokenizer, language) → bar height
        self._apply_palette()
        self.set_rows([], [], None)  # its empty state now, not in the turn that opens the first project

    def _apply_palette(self) -> None:
        super()._apply_palette()
        for mark in self.lossy_marks.values():
            mark.setColor(self._fg())

    def set_rows(self, per_language: Sequence[Metrics], fairness: Sequence[Fairness], baseline: str | None) -> None:
        empty = not per_language and not fairness and not baseline
        if empty and getattr(self, "_empty_shown", False):
            return  # the Compare tab clears on every project opened: the axis label and title rebuilt were ~5 ms
        self._empty_shown = empty
        self.plot.clear()
        if self.legend is not None:
            self.legend.clear()
        self.bars, self.values = [], {}
        marks: dict[tuple[str, str], pg.TextItem] = {}
        self.lossy_marks = marks
        languages = list(dict.fromkeys(m.language for m in per_language))
        lost = {(m.tokenizer, m.language): m.chars_lost_to_unknown or 0.0 for m in per_language if m.loses_text}
        tokenizers = list(dict.fromkeys(m.tokenizer for m in per_language))
        if baseline:
            for f in fairness:
                if f.ratio is not None:
                    self.values[(f.tokenizer, f.language)] = f.ratio
            basis = "parallel text" if fairness and fairness[0].basis == "parallel" else "per character"
            set_title(self.plot, f"Tokens relative to {baseline} ({basis})", self._fg().name())
            self.plot.setLabel("left", f"× {baseline}")
            line = pg.InfiniteLine(1.0, angle=0, pen=pg.mkPen(self._fg(), width=1, style=Qt.PenStyle.DashLine))
            self.plot.addItem(line)
        else:
            for m in per_language:
                if m.tokens:
                    self.values[(m.tokenizer, m.language)] = m.tokens / max(m.text.chars, 1)
            set_title(self.plot, "Tokens per character (choose a baseline language to compare)", self._fg().name())
            self.plot.setLabel("left", "tokens / char")
        n = max(len(tokenizers), 1)
        width = 0.8 / n
        for t_index, name in enumerate(tokenizers):
            xs, hs = [], []
            for l_index, lang in enumerate(languages):
                if (name, lang) in self.values:
                    xs.append(l_index - 0.4 + width * (t_index + 0.5))
                    hs.append(self.values[(name, lang)])
            colour = QColor(style.RUN_COLOURS[t_index % len(style.RUN_COLOURS)])
            # A hatch per tokenizer as well as a colour: the bars read without telling colours apart.
            bar = pg.BarGraphItem(x=xs, height=hs, width=width * 0.92, brush=QBrush(colour, style.run_hatch(t_index)),
                                  pen=pg.mkPen(colour.darker(130), width=1.5))
            self.plot.addItem(bar)
            if self.legend is not None:
                lossy = any(key[0] == name for key in lost)
                self.legend.addItem(bar, _short(name) + (" ⚠ loses characters to unknown" if lossy else ""))
            self.bars.append(bar)
            # The ranking rule (core.corpus_metrics.lossy_note): a bar that looks short because
            # [UNK] swallowed text says so on the bar itself.
            for x, lang in zip(xs, [lang for lang in languages if (name, lang) in self.values]):
                if (name, lang) in lost:
                    mark = pg.TextItem(f"⚠ {percent(lost[(name, lang)])} lost", color=self._fg(), anchor=(0.5, 1.0))
                    mark.setPos(x, self.values[(name, lang)])
                    self.plot.addItem(mark)
                    marks[(name, lang)] = mark
        self.plot.getAxis("bottom").setTicks([[(i, lang) for i, lang in enumerate(languages)]])
        self.plot.setXRange(-0.6, max(len(languages), 1) - 0.4, padding=0)
        top = max(self.values.values(), default=1.0)
        self.plot.setYRange(0, top * 1.08, padding=0)
        self._fit_legend()
        self._apply_palette()


class SweepChart(_Chart):
    """Characters/token, L² and V × d against |V| for one or more sweeps; the knee marked."""

    sweeps: Sequence[Sweep] = ()  # (class defaults: a palette change may arrive during __init__)
    _drawing = False

    SERIES = (("chars_per_token", "Compression (characters per token)"),
              ("attention", "Attention cost L² (Σ per line)"),
              ("embedding_params", "Embedding parameters V × d"))

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plots = []
        self.setAccessibleName("Vocabulary-size sweep chart")
        self.view.setAccessibleName("Vocabulary-size sweep chart")
        for row, (_key, title) in enumerate(self.SERIES):
            plot = self.view.addPlot(row=row, col=0,
                                     axisItems={"left": TickAxis("left"), "bottom": TickAxis("bottom")})
            set_title(plot, title, self._fg().name())
            plot.showGrid(x=True, y=True, alpha=0.2)
            if self.plots:
                plot.setXLink(self.plots[0])
            self.plots.append(plot)
        self.plots[-1].setLabel("bottom", "vocabulary size |V|")
        # Below the plots, in a row of its own: inside any plot some curve's end sits under it once
        # several runs of different sizes share the chart (issue 14: a legend never covers a curve).
        self.legend = pg.LegendItem(offset=None)
        self.view.addItem(self.legend, row=len(self.SERIES), col=0)
        self.knees: list[pg.InfiniteLine] = []
        self.advice: float | None = None  # the advisor's compute-optimal |V|, marked on every plot
        self.advice_lines: list[pg.InfiniteLine] = []
        self._apply_palette()
        self.set_sweeps([])  # its empty state now, not in the turn that opens the first project

    def set_advice(self, vocab: float | None) -> None:
        """Mark the compute-optimal vocabulary size (workbench.core.vocab_advisor) beside the knee."""
        self.advice = vocab
        if vocab is not None:
            self._empty_drawn = False
        for plot, line in zip(self.plots, self.advice_lines):
            plot.removeItem(line)
        self.advice_lines = []
        if vocab is None:
            return
        for plot in self.plots:
            line = pg.InfiniteLine(vocab, angle=90, pen=pg.mkPen(self._fg(), width=1, style=Qt.PenStyle.DotLine),
                                   label="compute-optimal |V|" if plot is self.plots[0] else None,
                                   labelOpts={"position": 0.3, "color": self._fg().name()})
            plot.addItem(line)
            self.advice_lines.append(line)

    def _apply_palette(self) -> None:
        super()._apply_palette()
        if self.sweeps and not self._drawing:  # hollow marks are filled with the background colour:
            self.set_sweeps(self.sweeps)  # drawn again in the new one

    def set_sweeps(self, sweeps: Sequence[Sweep]) -> None:
        if not sweeps and self.advice is None and getattr(self, "_empty_drawn", False):
            return  # drawn empty already (the Compare tab clears on every project opened)
        self._empty_drawn = not sweeps and self.advice is None
        self.sweeps = list(sweeps)
        for plot in self.plots:
            plot.clear()
        if self.legend is not None:
            self.legend.clear()
        self.knees = []
        background = self.palette().color(QPalette.ColorRole.Base)
        pruned_legend = False
        for index, result in enumerate(self.sweeps):
            colour = QColor(style.RUN_COLOURS[index % len(style.RUN_COLOURS)])
            xs = [p.vocab_size for p in result.points]
            knee = result.knee
            # Per point: a filled circle, or a hollow square for a Unigram pruning round.
            pruned = [p.kind == "pruning round" for p in result.points]
            for plot, (key, _title) in zip(self.plots, self.SERIES):
                ys = [getattr(p, key) for p in result.points]
                # One legend entry per sweep (its curve in the last plot).
                # A line style and a marker per sweep as well as a colour (issue 14: never colour alone).
                curve = plot.plot(xs, ys, pen=pg.mkPen(colour, width=2, style=style.run_line_style(colour.name())),
                                  symbol=style.run_symbol(index), symbolSize=7, symbolBrush=colour,
                                  symbolPen=pg.mkPen(colour))
                if plot is self.plots[-1] and self.legend is not None:
                    self.legend.addItem(curve, _short(result.tokenizer))
                if any(pruned):
                    marks = pg.ScatterPlotItem(
                        x=[x for x, q in zip(xs, pruned) if q], y=[y for y, q in zip(ys, pruned) if q],
                        symbol="s", size=10, brush=pg.mkBrush(background), pen=pg.mkPen(colour, width=2))
                    plot.addItem(marks)
                if knee is not None:
                    line = pg.InfiniteLine(xs[knee], angle=90, pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine),
                                           label="knee" if plot is self.plots[0] else None,
                                           labelOpts={"position": 0.12, "color": colour.name()})
                    plot.addItem(line)
                    self.knees.append(line)
            if any(pruned) and not pruned_legend and self.legend is not None:
                pruned_legend = True
                sample = pg.ScatterPlotItem(symbol="s", size=8, brush=pg.mkBrush(background), pen=pg.mkPen(self._fg()))
                self.legend.addItem(sample, "Unigram pruning round (filled marks: cuts of the final model)")
        self._fit_legend()
        self.advice_lines = []  # cleared with the plots: drawn again
        self.set_advice(self.advice)
        self._drawing = True
        try:
            self._apply_palette()
        finally:
            self._drawing = False


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1):]
