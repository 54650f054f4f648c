"""How every plot in the window labels itself: one tick formatter, one title fitter, one legend fitter.

The Train tab's curves and the Compare tab's charts share :class:`TickAxis`. Its labels are never
repeated and never lie about a small value (issue 19: ``3M 3M 3M`` on a corpus-token axis, ``1.25``
four times on a flat compression curve, ``0`` for 0.001 on WordPiece's log score axis):

* a linear axis picks one SI suffix for the whole axis from its visible range (``k`` from 10,000,
  ``M``, ``G``; plain numbers with thousands separators below) and the fewest decimals that
  write every labelled tick exactly, the same on every level pyqtgraph labels — so ticks 0.005M
  apart read ``3.005M 3.010M``, and ``1.0 1.5 2.0`` rather than ``1 1.5 2``;
* a log axis labels each tick with its own value written as short as it is exact (``20k``,
  ``1,000``, ``0.002``, ``1e-4``, ``2.5e-5``); with two decades or more in view only the decades
  are labelled (the 2·10ᵏ … 9·10ᵏ ticks stay marks), and on less than a decade — where pyqtgraph
  would leave one or two ticks — it places round ticks in value space instead.

:func:`set_title` shortens a plot title to the plot's width with an ellipsis and puts the full text
in the title's tooltip (a title cut by the scene's edge, as "… other models' runs lef", is gone).

:func:`fit_legend` gives a legend that sits in a row of its own under the plots (never over a bar or
a curve) as many columns as its entries allow, eliding long run names in the middle (full name in
the tooltip) rather than stacking one per row; :class:`LegendFitter` keeps it fitted on resize.

What it leaves out: colours (``style``) and what a plot shows (the tab packages).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QGuiApplication, QResizeEvent

#: (smallest axis magnitude, divisor, suffix): the SI suffix one linear axis uses for all its labels.
SI_STEPS = ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))
_MAX_DECIMALS = 12


def axis_unit(magnitude: float) -> tuple[float, str]:
    """The divisor and suffix for an axis whose largest visible |value| is ``magnitude``."""
    for above, unit, suffix in SI_STEPS:
        if magnitude >= above:
            return unit, suffix
    return 1.0, ""


def _decimals(scaled: Sequence[float], tolerance: float) -> int:
    """The fewest decimals (0 …) that write every value within ``tolerance`` and keep them apart."""
    for places in range(_MAX_DECIMALS + 1):
        rounded = [round(x, places) for x in scaled]
        exact = all(abs(r - x) <= tolerance for r, x in zip(rounded, scaled))
        if exact and len(set(rounded)) == len(set(scaled)):
            return places
    return _MAX_DECIMALS


def _fixed(x: float, places: int) -> str:
    text = f"{x:,.{places}f}"
    return "0" if float(x) == 0.0 or text.lstrip("-").strip("0.,") == "" else text


def linear_labels(values: Sequence[float], spacing: float | None = None,
                  magnitude: float | None = None, finest: float | None = None) -> list[str]:
    """Labels of one tick level on a linear axis: one SI suffix for the axis, exact decimals.

    ``magnitude`` is the largest |value| the axis shows (its range), so every level of the axis
    takes the same suffix; ``spacing`` the level's tick distance (tolerance for float noise);
    ``finest`` the smallest spacing of any level, so all levels write as many decimals
    (-1.40M beside -1.45M, not -1.4M).
    """
    if not len(values):
        return []
    top = magnitude if magnitude is not None else max(abs(v) for v in values)
    unit, suffix = axis_unit(top)
    scaled = [v / unit for v in values]
    step = (spacing / unit) if spacing else (min((abs(b - a) for a, b in zip(scaled, scaled[1:]) if b != a),
                                                 default=abs(scaled[0]) or 1.0))
    places = _decimals(scaled, tolerance=max(step, 1e-300) * 1e-3)
    if finest:
        places = max(places, _decimals([finest / unit], tolerance=finest / unit * 1e-3))
    return [_fixed(x, places) + (suffix if x != 0 else "") for x in scaled]


def number(value: float) -> str:
    """One value as short as it is exact to three significant digits: 20k, 1.2M, 1,000, 0.002, 1e-4, 1e15."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = abs(value)
    for digits in range(1, 7):
        text = f"{value:.{digits}g}"
        if abs(float(text) - value) <= magnitude * 5e-4:
            break
    mantissa = float(text)
    if magnitude >= 1e12 or magnitude < 1e-3:  # beyond G, and below 0.001: 1e15, 2.5e-5
        significand, exponent = f"{mantissa:.{digits - 1}e}".split("e")
        return f"{significand}e{int(exponent)}"
    if magnitude >= 1e4:
        unit, suffix = axis_unit(magnitude)
        return f"{mantissa / unit:.6g}" + suffix
    if magnitude >= 1:
        whole = mantissa == int(mantissa)
        return f"{int(mantissa):,}" if whole else f"{mantissa:,.{max(0, digits - len(str(int(magnitude))))}f}"
    places = max(0, -math.floor(math.log10(magnitude)) + digits - 1)
    return f"{mantissa:.{places}f}"


def log_labels(exponents: Sequence[float], label_minor: bool = True) -> list[str]:
    """Labels of log-axis ticks given as log10 values; blank for the non-decades when asked."""
    out = []
    for e in exponents:
        decade = abs(e - round(e)) < 1e-6
        out.append(number(10.0 ** (round(e) if decade else e)) if decade or label_minor else "")
    return out


#: A log axis over more decades than this marks no 2·10ᵏ … 9·10ᵏ ticks (only its labelled decades).
MINOR_DECADES = 60


def log_ticks(low: float, high: float, size: float) -> list[tuple[float | None, list[float]]]:
    """Tick levels (spacing, log10 values) for a log axis showing 10^low … 10^high on ``size`` px."""
    low, high = sorted((low, high))
    decades = [float(k) for k in range(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1)]
    if len(decades) >= 2:
        every = max(1, math.ceil(len(decades) / max(2, size / 28)))  # a label needs ~28 px
        major = [d for d in decades if int(d) % every == 0] or decades[:1]
        if len(decades) > MINOR_DECADES:  # 2·10ᵏ … 9·10ᵏ of each would be a smear (and cost: a range
            return [(float(every), major)]  # 10^-400000 … 1 asked for 3 million of them)
        minor = [k + math.log10(m) for k in range(math.floor(low), math.ceil(high))
                 for m in range(2, 10) if low <= k + math.log10(m) <= high]
        return [(float(every), major), (None, minor)]
    mantissa = [k + math.log10(m) for k in range(math.floor(low), math.ceil(high) + 1)
                for m in range(1, 10) if low - 1e-9 <= k + math.log10(m) <= high + 1e-9]
    if len(mantissa) >= 3:
        if len(mantissa) > max(3, size / 24):  # too many to label: 1, 2 and 5 × 10^k
            keep = [v for v in mantissa if round(10 ** (v - math.floor(v + 1e-9))) in (1, 2, 5)]
            mantissa = keep if len(keep) >= 2 else mantissa
        return [(None, mantissa)]
    # Less than a decade with fewer than three 1…9 × 10^k in view: round ticks in value space.
    lo, hi = 10.0 ** low, 10.0 ** high
    step = _nice_step((hi - lo) / max(2.0, min(6.0, size / 40)))
    first = math.ceil(lo / step)
    count = min(50, max(0, math.floor(hi * (1 + 1e-12) / step) - first + 1))
    values = [math.log10((first + i) * step) for i in range(count) if (first + i) * step > 0]
    return [(None, values)]


def _nice_step(raw: float) -> float:
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


class TickAxis(pg.AxisItem):
    """A pyqtgraph axis whose labels never repeat and show small log values (see the module doc)."""

    _label_minor = True
    _finest: float | None = None

    def setRange(self, mn: float, mx: float) -> None:  # noqa: N802 - pyqtgraph override
        """The range, drawn afresh only when it changed. pyqtgraph sets it again — and makes and
        paints the axis anew (~1–2 ms each) — whenever the linked view is resized or another axis
        of it changes: the four bottom axes were redrawn when a legend row took the plots' height.
        Without a grid the axis is drawn from its own geometry and range alone (a resize of the
        axis itself still redraws it); with one the grid lines span the view, so it always redraws.
        """
        if getattr(self, "grid", None) is False and self.picture is not None and self.range == [mn, mx]:
            return
        super().setRange(mn, mx)

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph override
        if not self.logMode:
            levels = super().tickValues(minVal, maxVal, size)
            self._finest = self._finest_labelled(levels, size)
            return levels
        levels = log_ticks(minVal * self.scale, maxVal * self.scale, size)
        self._label_minor = len(levels) == 1
        return [(spacing, [v / self.scale for v in values]) for spacing, values in levels]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        if self.logMode:
            return log_labels([v * scale for v in values], label_minor=self._label_minor or spacing is not None)
        return self._linear(values, scale, spacing, self._finest)

    def _linear(self, values, scale: float, spacing: float | None, finest: float | None) -> list[str]:
        lo, hi = self.range if self.range else (0.0, 0.0)
        magnitude = max(abs(lo), abs(hi)) * scale
        shown = [abs(v * scale) for v in values]
        return linear_labels([v * scale for v in values], spacing * scale if spacing else None,
                             magnitude=max([magnitude, *shown]) if magnitude else None,
                             finest=finest * scale if finest else None)

    def _finest_labelled(self, levels, size: float) -> float | None:
        """The spacing of the finest level pyqtgraph will label: its own crowding rule
        (``generateDrawSpecs``: text extent against ``textFillLimits``), measured in the tick font."""
        metrics = QFontMetricsF(self.style["tickFont"] or QGuiApplication.font())
        vertical = self.orientation in ("left", "right")
        scale = self.autoSIPrefixScale * self.scale
        filled, drawn, finest = 0.0, 0, None
        for level, (spacing, values) in enumerate(levels[: self.style["maxTextLevel"] + 1]):
            rects = [metrics.boundingRect(QRectF(0, 0, 100, 100), Qt.AlignmentFlag.AlignCenter, text)
                     for text in self._linear(values, scale, spacing, None)]
            filled += sum(r.height() * 0.8 if vertical else r.width() for r in rects)
            if level > 0 and size > 0 and any(drawn >= count and filled / size >= limit
                                               for count, limit in self.style["textFillLimits"]):
                break
            drawn += len(rects)
            finest = spacing or finest
        return finest

    def labels(self, size: float | None = None) -> list[str]:
        """Every label the axis draws now, level by level (for tests and accessibility)."""
        length = size if size is not None else max(self.geometry().width(), self.geometry().height(), 200.0)
        out: list[str] = []
        for spacing, values in self.tickValues(self.range[0], self.range[1], length):
            out += [s for s in self.tickStrings(values, self.autoSIPrefixScale * self.scale, spacing) if s]
        return out


def set_title(plot: pg.PlotItem, text: str, colour: str, size: str = "10pt", tip: str = "") -> None:
    """Give ``plot`` a title that fits its width: elided with "…", the full text in its tooltip.

    ``tip`` says more than the title (what the value means); it is the tooltip, after the full
    title when the title is elided.
    pyqtgraph makes a title's full width the plot's minimum width, so one long title (a second
    clause such as "other models' runs left out") pushed its column wide and squeezed the plot
    beside it. Here the title asks for no width; it is elided again whenever the plot is resized.
    """
    label = plot.titleLabel
    first = getattr(label, "full_text", None) is None
    same = (not first and (label.full_text, label.colour, label.size, label.tip) == (text, colour, size, tip)
            and getattr(label, "fit_width", None) == plot.vb.geometry().width())
    if same:  # fitted to this width already: the views set their titles on every redraw
        return
    label.full_text, label.colour, label.size, label.tip = text, colour, size, tip
    if first:
        plot.geometryChanged.connect(lambda p=plot: _fit(p))
    _fit(plot)


def recolour_title(plot: pg.PlotItem, colour: str) -> None:
    """A theme switch: the same title (and tooltip) in the new text colour."""
    label = plot.titleLabel
    if getattr(label, "full_text", None):
        set_title(plot, label.full_text, colour, label.size, label.tip)


def title_text(plot: pg.PlotItem) -> str:
    """The full title of a plot given one by :func:`set_title` (the shown text may be elided)."""
    return str(getattr(plot.titleLabel, "full_text", None) or plot.titleLabel.text or "")


def _fit(plot: pg.PlotItem) -> None:
    """Show as much of the title as the plot's width holds.

    Candidates are measured with the title's font (what the drawn text item measures, to the
    pixel: the text's advance and the document's margins) and only the one chosen is set: each
    ``setTitle`` lays an HTML document out and asks the scene's layout to run again, and the
    bisection once set a dozen of them per plot on every resize (~10–25 ms of a frame for four
    plots). The plot's geometry changes on every move too: nothing is done when neither the text
    nor the width changed.
    """
    label = plot.titleLabel
    text: str = label.full_text
    width = plot.vb.geometry().width()
    key = (text, label.colour, label.size, label.tip, width)
    if getattr(label, "fitted", None) == key:
        return
    label.fit_width = width
    available = width - 4  # the title is centred over the view box, not the axis
    measure = _title_measure(label)

    shown, lo = text, len(text)
    if measure(text) > available > 0:
        lo, hi = 0, len(text)  # the longest prefix + "…" that fits: bisection on the measured width
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if measure(text[:mid].rstrip() + "…") <= available:
                lo = mid
            else:
                hi = mid - 1
        shown = text[:lo].rstrip() + "…"
    _show_title(plot, shown)
    while shown != text and lo > 0 and float(label.item.boundingRect().width()) > available > 0:
        lo -= 1  # the drawn text is wider than measured (a font fallback): one character less
        shown = text[:lo].rstrip() + "…"
        _show_title(plot, shown)
    label.shown_text = shown
    label.setToolTip("\n".join(t for t in (text if shown != text else "", label.tip) if t))
    label.setMinimumWidth(0)  # setTitle made the text's width the minimum: the plot's column decides
    label.setPreferredWidth(0)
    label.fitted = key


def _show_title(plot: pg.PlotItem, shown: str) -> None:
    """``setTitle``, unless the title shows this text in this colour and size already."""
    label = plot.titleLabel
    state = (shown, label.colour, label.size)
    if getattr(label, "set_state", None) != state:
        plot.setTitle(_escape(shown), color=label.colour, size=label.size)
        label.set_state = state


def _title_measure(label: pg.LabelItem):
    """A function giving the width a title's text item would have for a candidate text."""
    size = str(label.size or "")
    margin = 2 * label.item.document().documentMargin()
    font = QFont(label.item.font())
    try:
        if size.endswith("pt"):
            font.setPointSizeF(float(size[:-2]))
        elif size.endswith("px"):
            font.setPixelSize(round(float(size[:-2])))
    except ValueError:
        pass
    metrics = QFontMetricsF(font)
    return lambda candidate: metrics.horizontalAdvance(candidate) + margin


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: The view's width a legend row does not get: the layout's margins and spacing (px).
LEGEND_MARGIN = 24
#: A legend entry's sample and the gaps around it, beside its label's own width (px).
_SAMPLE_WIDTH = 40
#: The narrowest a legend column gets before the legend takes another row instead (px).
_MIN_ENTRY = 200


def fit_legend(legend: pg.LegendItem, width: float, max_rows: int = 3) -> int:
    """Lay ``legend``'s entries out in columns that fit ``width``; returns the number of columns.

    Entries fill rows left to right and each column is as wide as its widest entry. When whole
    names would need more than ``max_rows`` rows (five runs with long names: one per row, the
    plots above squeezed), long names are elided in the middle — the "(run N)" end stays — with
    the full name in the entry's tooltip.
    """
    if not legend.items:
        return int(legend.columnCount)
    labels = [label for _sample, label in legend.items]
    for label in labels:
        if getattr(label, "full_text", None) is None or label.text not in (label.full_text, label.shown_text):
            label.full_text = label.text  # a new entry, or renamed since
        if label.text != label.full_text:
            label.setText(label.full_text)
        label.shown_text = label.full_text
        label.setToolTip("")
    widths = [label.item.boundingRect().width() + _SAMPLE_WIDTH for label in labels]
    natural = 1
    for count in range(len(widths), 1, -1):
        if sum(max(widths[c::count]) for c in range(count)) <= width:
            natural = count
            break
    wanted = max(natural, -(-len(labels) // max_rows))
    columns = max(1, min(len(labels), wanted, max(natural, int(width // _MIN_ENTRY))))
    if columns > natural:
        room = width / columns - _SAMPLE_WIDTH
        for label in labels:
            _elide_middle(label, room)
    legend.setColumnCount(columns)
    return columns


def _elide_middle(label: pg.LabelItem, room: float) -> None:
    text: str = label.full_text
    if label.item.boundingRect().width() <= room:
        return
    keep = len(text)
    while keep > 4:
        keep -= max(1, keep // 12)
        head = (keep + 1) // 2
        shown = text[:head].rstrip() + "…" + text[len(text) - (keep - head):].lstrip()
        label.setText(shown)
        if label.item.boundingRect().width() <= room:
            break
    label.shown_text = label.text
    label.setToolTip(text)


class LegendFitter(QObject):
    """Fits a legend to its view's new width before the view lays its scene out (a resize filter).

    Fitting after the view's own resize (in a parent's ``resizeEvent``) was too late: the scene
    kept the old, wider legend's minimum width and ran past the window's edge.
    """

    def __init__(self, view: pg.GraphicsView, legend: pg.LegendItem):
        super().__init__(view)
        self.view, self.legend = view, legend
        view.installEventFilter(self)

    def fit(self, width: float | None = None) -> int:
        columns = fit_legend(self.legend, (self.view.width() if width is None else width) - LEGEND_MARGIN)
        # The scene's layout caches its minimum size until the event loop runs: drop the cache now,
        # or the view's resize that follows clamps the scene to the old legend's width.
        self.legend.updateGeometry()
        self.view.ci.layout.invalidate()
        return columns

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.view and isinstance(event, QResizeEvent):
            self.fit(event.size().width())
        return False
