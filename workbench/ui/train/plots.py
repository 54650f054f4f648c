"""Live training curves: vocabulary size, what the model optimises, token count L, compression.

One ``pyqtgraph`` scene with four linked plots over training steps. The second plot shows the
number each model picks its steps by (:func:`workbench.tasks.train.step_value`): BPE the merged
pair's frequency (log), WordPiece its likelihood score (log), Unigram the corpus log-likelihood of
each EM round, with its pruning steps (▼) and final cut (★) marked on the vocabulary plot. Runs of
another kind than the first shown are left out of that one plot (its title says so): a frequency
and a log-likelihood share no axis. Points are appended to growing
numpy buffers by :meth:`TrainingPlots.append` and drawn only by :meth:`TrainingPlots.redraw`, which
the training panel calls from a ~100 ms timer — never once per merge (STYLE.md trap 11). Several
runs can be shown at once (overlay); hovering shows the merge made at the step under the mouse.
A parity-aware BPE run adds to the compression plot one curve per language: its development
text's characters per token after each merge (the merges rows' ``parity_cpt``), named in a legend.

What it leaves out: where the points come from (the training panel reads them from the project
file) and what a merge's pieces are (a lookup function is passed in).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.store import RunStepRow, StepRow
from workbench.ui import style, turns
from workbench.ui.plot_labels import LegendFitter, TickAxis, set_title, title_text

PLOTS = ("vocab", "frequency", "tokens", "compression")  # "frequency": the model's value (see VALUE_TITLES)
TITLES = {
    "vocab": "Vocabulary size |V|",
    "frequency": "Frequency of the merged pair (log)",
    "tokens": "Corpus tokens L",
    "compression": "Compression (characters per token)",
}
#: The second plot's title for each kind of step value: what the model optimises.
#: Short enough to fit a quarter of the plots at 1280 × 800; what each means is in the title's tooltip.
VALUE_TITLES = {
    "frequency": "Frequency of the merged pair (log)",
    "score": "WordPiece score of the merged pair (log)",
    "log_likelihood": "Corpus log-likelihood per EM round",
}
VALUE_TIPS = {
    "frequency": "What BPE (and WordPiece scored by frequency) merges by: the most frequent pair of symbols",
    "score": "WordPiece merges the pair with the highest score c(ab) / (c(a)·c(b))",
    "log_likelihood": "What Unigram maximises: the corpus log-likelihood after each EM round",
}
LEFT_OUT = " · others left out"
NO_CHARS_NOTE = "characters per token appear\nonce the Corpus tab has read the files"
LEFT_OUT_TIP = ("Runs of another model are left out of this plot: a frequency, a score and a log-likelihood "
                "share no axis. The other three plots show every selected run.")
#: Where a step comes from: a merge, or a Unigram EM round, pruning step or final cut.
PHASES = {"merge": 0, "em": 1, "prune": 2, "final": 3, "remove": 4}
_PHASE_NAMES = {0: "merge", 1: "EM round", 2: "pruning step", 3: "final cut", 4: "merge and removal"}


#: A parity-aware BPE run's languages on the compression plot: colours apart from the first runs'
#: (blue, orange), in an order that keeps neighbours distinct in both themes.
LANGUAGE_COLOURS = tuple(style.RUN_COLOURS[i] for i in (5, 2, 3, 4, 1, 7, 6))
PARITY_TITLE = "Characters per token · dev set per language"
PARITY_TIP = ("Thin line: the run's training text. Thick lines: parity-aware BPE's development text of each "
              "language, after each merge. Each merge (after the global merges) serves the language whose "
              "development text takes the most tokens: on a parallel set the same content, so a language "
              "written in fewer characters (Chinese) ends lower here at parity.")


# Which way each curve usually goes, so a live range keeps its headroom on that side.
GROWS_UP = {"vocab": True, "frequency": False, "tokens": False, "compression": True}


class _Growing:
    """An append-only float64 buffer with amortised doubling; ``view`` is the filled part."""

    def __init__(self, columns: int, capacity: int = 1024):
        self.data = np.zeros((capacity, columns), dtype=np.float64)
        self.n = 0

    def extend(self, rows: np.ndarray) -> None:
        need = self.n + len(rows)
        if need > len(self.data):
            cap = max(need, 2 * len(self.data))
            grown = np.zeros((cap, self.data.shape[1]), dtype=np.float64)
            grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n: need] = rows
        self.n = need

    @property
    def view(self) -> np.ndarray:
        return self.data[: self.n]


@dataclass
class RunCurves:
    run_id: int
    name: str
    colour: str
    points: _Growing = field(default_factory=lambda: _Growing(5))  # step, vocab, value, tokens, phase
    chars: int | None = None
    kind: str = "frequency"  # what the value is: frequency | score | log_likelihood
    dirty: bool = True
    items: dict = field(default_factory=dict)
    marks: pg.ScatterPlotItem | None = None  # pruning steps and the final cut, on the vocabulary plot
    transition: int | None = None  # SuperBPE: the merge step after which stage 2 (superwords) began
    transition_lines: dict = field(default_factory=dict)  # plot name → its marker line at that step
    # A PickyBPE run: ids made minus the vocabulary in use, as its last removal said (× marks it).
    removed: int = 0
    # A parity-aware BPE run: each language's characters per token on its development text after
    # each merge (the merges rows' ``parity_cpt``): columns step, then one per language.
    languages: list[str] = field(default_factory=list)
    parity: _Growing | None = None
    parity_items: dict = field(default_factory=dict)  # language → its curve on the compression plot

    @property
    def last_step(self) -> int:
        return int(self.points.view[-1, 0]) if self.points.n else 0


MergeLookup = Callable[[int, int], str | None]


def steps_array(rows: Sequence[StepRow]) -> np.ndarray | None:
    """Merges rows as :meth:`TrainingPlots.append` buffers them, built where they were read (a
    worker: 20,000 rows are ~15–30 ms of Python); None when a row has extras (a parity-aware or
    PickyBPE run): :func:`stored_curve` builds those. Touches no Qt object."""
    if any(r.extra for r in rows):
        return None
    return np.array([(r.step, r.vocab_size, r.frequency, r.token_count, 0) for r in rows],
                    dtype=np.float64).reshape(-1, 5)


@dataclass(frozen=True)
class StoredCurve:
    """A stored run's points as :class:`TrainingPlots` buffers them, built by :func:`stored_curve`
    on the worker that read the rows: the window's thread only hands the arrays to the curves.

    ``removed`` is a PickyBPE run's ids made minus the vocabulary in use after its last row;
    ``languages`` and ``parity`` a parity-aware run's languages and their characters per token
    (columns: step, then one per language), None for other runs.
    """

    points: np.ndarray
    removed: int = 0
    languages: tuple[str, ...] = ()
    parity: np.ndarray | None = None


def _step_rows_array(rows: Sequence[StepRow], removed: int) -> tuple[np.ndarray, int]:
    """Merges rows with extras as buffered, and the removed count after them (PickyBPE: the
    vocabulary in use is ids made minus the removed ones, as the last removal said)."""
    out = []
    for r in rows:
        gone = r.extra.get("removed") if r.extra else None
        if gone and isinstance(r.extra.get("in_use"), int):
            removed = r.vocab_size - r.extra["in_use"]
        out.append((r.step, r.vocab_size - removed, r.frequency, r.token_count,
                    PHASES["remove"] if gone else 0))
    return np.array(out, dtype=np.float64).reshape(-1, 5), removed


def _parity_array(rows: Sequence[StepRow], languages: Sequence[str] | None) -> tuple[list[str], np.ndarray | None]:
    """The ``parity_cpt`` of a parity-aware run's merges rows: (languages — those given, else the
    first row's, in its order — and an array of step then one column per language), or None."""
    found = [(r.step, r.extra["parity_cpt"]) for r in rows
             if r.extra and isinstance(r.extra.get("parity_cpt"), dict)]
    if not found:
        return list(languages or ()), None
    langs = list(languages) if languages else [str(lang) for lang in found[0][1]]
    arr = np.array([(step, *(_number(cpt.get(lang)) for lang in langs)) for step, cpt in found],
                   dtype=np.float64).reshape(-1, 1 + len(langs))
    return langs, arr


def _run_steps_array(rows: Sequence[RunStepRow]) -> np.ndarray:
    return np.array([(r.step, r.vocab_size, np.nan if r.value is None else r.value, r.token_count,
                      PHASES.get(r.phase, 0)) for r in rows], dtype=np.float64).reshape(-1, 5)


def stored_curve(rows: Sequence[StepRow] | Sequence[RunStepRow]) -> StoredCurve:
    """A stored run's rows, read from its start, as :meth:`TrainingPlots.add_stored` takes them —
    merges rows (``StepRow``, with a parity-aware or PickyBPE run's extras) or ``run_steps`` rows
    (``RunStepRow``). Built where the rows were read (a worker): touches no Qt object."""
    if not rows:
        return StoredCurve(np.zeros((0, 5), dtype=np.float64))
    if not isinstance(rows[0], StepRow):
        return StoredCurve(_run_steps_array(rows))  # type: ignore[arg-type]
    steps: Sequence[StepRow] = rows  # type: ignore[assignment]
    plain = steps_array(steps)
    if plain is not None:
        return StoredCurve(plain)
    languages, parity = _parity_array(steps, None)
    points, removed = _step_rows_array(steps, 0)
    return StoredCurve(points, removed, tuple(languages), parity)


class TrainingPlots(QWidget):
    """Four linked plots; ``append`` buffers, ``redraw`` draws what changed."""

    hovered = Signal(int, int)  # run id, step (0, 0 when the mouse leaves)
    redrawn = Signal(int)       # points drawn in total, after each redraw that changed something

    def __init__(self, merge_lookup: MergeLookup | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Training plots")
        self.merge_lookup = merge_lookup or (lambda run_id, step: None)
        self.runs: dict[int, RunCurves] = {}
        self._hover_text = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.view = pg.GraphicsLayoutWidget()
        self.view.ci.setSpacing(6)
        self.view.setAccessibleName("Training curves")
        self.view.setAccessibleDescription("Vocabulary size, merged-pair frequency, corpus tokens and compression "
                                           "by merge step; hover for the merge made at a step")
        # The curves take the keyboard (Tab); style.FocusRing shows the focus, as on every control.
        layout.addWidget(self.view)
        self.plots: dict[str, pg.PlotItem] = {}
        for i, name in enumerate(PLOTS):
            axes = {"bottom": TickAxis("bottom"), "left": TickAxis("left")}
            plot = self.view.addPlot(row=i // 2, col=i % 2, axisItems=axes)
            # No grid and no per-frame auto-range: measured on the offscreen raster, a pyqtgraph grid
            # costs ~20 ms per repaint and re-fitting the axes every 100 ms another ~15 ms, all on
            # the GUI thread. Ranges are set here in steps instead (see _fit_ranges).
            plot.disableAutoRange()
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.vb.sigRangeChangedManually.connect(lambda *_a, n=name: self._user_zoomed(n))
            plot.setLabel("bottom", "merge step")
            plot.getAxis("left").setWidth(62)
            if name == "frequency":
                plot.setLogMode(x=False, y=True)
            if name != "vocab":
                plot.setXLink(self.plots["vocab"])
            self.plots[name] = plot
        # The overlay legend is a row of its own under the plots: inside a plot, wherever it was
        # put, a legend of a few long run names covered some curve on a small window (issue 14).
        self.legend = pg.LegendItem()
        self.view.addItem(self.legend, row=2, col=0, colspan=2)
        self.legend.setVisible(False)
        self.legend_fitter = LegendFitter(self.view, self.legend)
        self.cursors = {}
        for name, plot in self.plots.items():
            line = pg.InfiniteLine(angle=90, movable=False)
            line.setVisible(False)
            plot.addItem(line, ignoreBounds=True)
            self.cursors[name] = line
        # Said in the compression plot while no shown run's corpus size is known (the Corpus tab is
        # still reading the files): an empty plot with a 0 … 1 axis read as a broken one.
        compression = self.plots["compression"].vb
        self.no_chars_note = pg.TextItem(NO_CHARS_NOTE, anchor=(0.5, 0.5))
        self.no_chars_note.setParentItem(compression)
        self.no_chars_note.setVisible(False)
        compression.sigResized.connect(lambda vb: self.no_chars_note.setPos(vb.width() / 2, vb.height() / 2))
        # A parity-aware run's languages, named in the compression plot's bottom right: the curves
        # rise, and end high on the right; in the top left a language that climbs fast went under it.
        self.parity_legend = pg.LegendItem(offset=(-6, -4), labelTextSize="8pt")
        self.parity_legend.setParentItem(compression)
        self.parity_legend.setVisible(False)
        self.label = pg.TextItem(anchor=(0, 0))
        self.label.setVisible(False)
        self.label.setZValue(100)
        self._label_plot: pg.PlotItem | None = None
        self.marker = pg.ScatterPlotItem(size=9)
        self.marker.setZValue(90)
        self._marker_plot: pg.PlotItem | None = None
        self.view.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.view.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.follow = {name: True for name in PLOTS}  # False once the user zooms or pans that plot
        self.live = False  # while a run trains, ranges keep headroom so the axes change rarely
        # redraw_in_turns: plot name -> the runs whose curves it is still to draw, one plot a turn
        self._staged: dict[str, set[int]] = {}
        # staged plots whose y range (and value scale) has been set in a turn before their curves:
        # one paint lays out the left axis, the next the bottom one, never both (_draw_next_plot)
        self._y_done: set[str] = set()
        self._stage_timer = QTimer(self)
        self._stage_timer.setSingleShot(True)
        self._stage_timer.setInterval(0)
        # (a turn already spent by other views' steps puts the next plot off to a later one)
        self._stage_timer.timeout.connect(self._timed_draw)
        self._legend_due = False  # the runs' legend is to be filled (in a turn of its own)
        # Plots whose axis label, title or value scale is still to follow the runs shown: each is
        # changed in its plot's own turn (_draw_next_plot), with its curves, not all in the turn
        # that switched runs — a Unigram run → a BPE run changed the value axis's scale and all four
        # bottom labels there, and one paint then laid out and painted eight axes (~13–29 ms).
        self._axes_due: set[str] = set()
        # The plots are painted one per turn the first time the widget is shown (_draw_next_plot):
        # four plots' eight axes made and painted in one frame were ~20–30 ms of the window's thread.
        # Until its turn a plot is fully transparent — the scene paints nothing of it — but laid
        # out as shown (a hidden item would leave the layout, and its showing lay all four out again).
        self._unrevealed = list(PLOTS)
        for plot in self.plots.values():
            plot.setOpacity(0.0)
        self._apply_palette()

    # ---- data ----------------------------------------------------------------------------------
    def show_runs(self, specs: Sequence[tuple[int, str]]) -> list[int]:
        """Show exactly these runs (id, name); returns the ids that are new (and need their points)."""
        wanted = {rid for rid, _ in specs}
        for rid in [r for r in self.runs if r not in wanted]:
            self._remove(rid)
        new = []
        for index, (rid, name) in enumerate(specs):
            colour = style.RUN_COLOURS[index % len(style.RUN_COLOURS)]
            curves = self.runs.get(rid)
            if curves is None:
                # its curve items are made in the turn that draws each plot (_draw_plot): four
                # PlotDataItems, the marks and the legend entry were ~5–10 ms of this turn
                curves = self.runs[rid] = RunCurves(rid, name, colour)
                new.append(rid)
            elif curves.colour != colour or curves.name != name:
                curves.colour, curves.name = colour, name
                self._style_items(curves)
        self.runs = {rid: self.runs[rid] for rid, _ in specs}  # in the order asked for: the first sets the value plot
        if len(self.runs) <= 1:
            if self.legend.items or self.legend.isVisible():
                self._fill_legend()  # (hidden; emptied now so no removed run lingers in it)
            else:
                self._legend_due = False  # empty and hidden already: fitting it lays all four plots out
        else:
            self._legend_due = True  # filled in a turn of its own: it lays the plots out afresh
        self._style_parity()  # one parity run or several: line styles and legend entries differ
        self._hide_hover()
        self._update_value_axis()
        return new

    def clear(self) -> None:
        self._staged.clear()
        self._y_done.clear()
        self._stage_timer.stop()
        self._follow_links()
        if self._unrevealed and self.isVisible():
            self._stage_timer.start()  # the plots still to be shown, one a turn
        for rid in list(self.runs):
            self._remove(rid)
        self.legend.setVisible(False)
        self.no_chars_note.setVisible(False)
        self._hide_hover()
        self._update_value_axis()

    def reset_run(self, run_id: int) -> None:
        """Forget a run's points (it will be read again from the start)."""
        curves = self.runs.get(run_id)
        if curves is not None:
            curves.points = _Growing(5)
            if curves.parity is not None:
                curves.parity = _Growing(1 + len(curves.languages))
            curves.dirty = True

    def has_run(self, run_id: int) -> bool:
        return run_id in self.runs

    def last_step(self, run_id: int) -> int:
        curves = self.runs.get(run_id)
        return curves.last_step if curves else 0

    def append_array(self, run_id: int, arr: np.ndarray) -> None:
        """Add a run's steps as built by :func:`steps_array` (off the GUI thread)."""
        curves = self.runs.get(run_id)
        if curves is None or not len(arr):
            return
        if curves.removed:  # (a PickyBPE run's removals come with extras: never through here)
            arr = arr.copy()
            arr[:, 1] -= curves.removed
        curves.points.extend(arr)
        curves.dirty = True

    def append(self, run_id: int, rows: Sequence[StepRow] | Sequence[RunStepRow]) -> None:
        """Add a run's new steps: merges rows (``StepRow``) or ``run_steps`` rows (``RunStepRow``)."""
        curves = self.runs.get(run_id)
        if curves is None or not rows:
            return
        if isinstance(rows[0], StepRow) and any(r.extra for r in rows):  # type: ignore[union-attr]
            self._append_parity(curves, rows)  # type: ignore[arg-type]
            before = curves.removed
            arr, curves.removed = _step_rows_array(rows, curves.removed)  # type: ignore[arg-type]
            curves.points.extend(arr)
            curves.dirty = True
            if not before and curves.removed and hasattr(self, "_fg"):
                self._set_titles()  # the vocabulary plot now says what × marks
            return
        if isinstance(rows[0], StepRow):
            steps: Sequence[StepRow] = rows  # type: ignore[assignment]
            arr = np.array([(r.step, r.vocab_size - curves.removed, r.frequency, r.token_count, 0)
                            for r in steps], dtype=np.float64)
        else:
            arr = _run_steps_array(rows)  # type: ignore[arg-type]
        curves.points.extend(arr)
        curves.dirty = True

    def add_stored(self, run_id: int, curve: StoredCurve) -> None:
        """A stored run's points, read from its start and built off the GUI thread
        (:func:`stored_curve`): into the run's buffers, drawn by the next redraw."""
        curves = self.runs.get(run_id)
        if curves is None or not len(curve.points):
            return
        if curve.parity is not None and curve.languages:
            if curves.parity is None:
                curves.languages = list(curve.languages)
                curves.parity = _Growing(1 + len(curves.languages))
                self._make_parity_items(curves)
            if curves.parity.data.shape[1] == curve.parity.shape[1]:
                curves.parity.extend(curve.parity)
        before = curves.removed
        curves.removed = curve.removed
        curves.points.extend(curve.points)
        curves.dirty = True
        if not before and curves.removed and hasattr(self, "_fg"):
            self._set_titles()  # the vocabulary plot now says what × marks

    def _append_parity(self, curves: RunCurves, rows: Sequence[StepRow]) -> None:
        """Buffer the ``parity_cpt`` of a parity-aware BPE run's merges rows (one column per language,
        in the order the first row names them)."""
        languages, arr = _parity_array(rows, curves.languages if curves.parity is not None else None)
        if arr is None:
            return
        if curves.parity is None:
            curves.languages = languages
            curves.parity = _Growing(1 + len(curves.languages))
            self._make_parity_items(curves)
        curves.parity.extend(arr)

    def parity_data(self, run_id: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """A parity-aware run's curve of each language (x, y) as drawn — for tests and export."""
        curves = self.runs[run_id]
        out = {}
        for lang, item in curves.parity_items.items():
            out[lang] = (np.array([]), np.array([])) if item.xData is None else \
                (np.asarray(item.xData), np.asarray(item.yData))
        return out

    def _make_parity_items(self, curves: RunCurves) -> None:
        for lang in curves.languages:
            item = pg.PlotDataItem()
            item.setDownsampling(auto=True, method="peak")
            item.setClipToView(True)
            item.setZValue(5)
            self.plots["compression"].addItem(item)
            curves.parity_items[lang] = item
        self._style_parity()
        if hasattr(self, "_fg"):
            self._set_titles()

    def _style_parity(self) -> None:
        """Each language its colour (the same in every run). One parity run: a line style per
        language too — the curves of a balanced run lie on one another, and a dashed line over a
        solid one still shows both. Several: the run's line style, as in the runs' legend below."""
        parity_runs = [c for c in self.runs.values() if c.parity_items]
        overlay = len(parity_runs) > 1
        order: dict[str, int] = {}
        for c in parity_runs:
            for lang in c.parity_items:
                order.setdefault(lang, len(order))
        for c in parity_runs:
            for lang, item in c.parity_items.items():
                j = order[lang]
                dash = style.run_line_style(c.colour) if overlay else style.RUN_LINE_STYLES[j % len(style.RUN_LINE_STYLES)]
                item.setPen(pg.mkPen(LANGUAGE_COLOURS[j % len(LANGUAGE_COLOURS)], width=2, style=dash))
        self._fill_parity_legend()

    def _fill_parity_legend(self) -> None:
        """The languages of the shown parity runs, each once (and the training text's curve when
        one run is shown: with several, the runs' legend below names the line styles)."""
        self.parity_legend.clear()
        parity_runs = [c for c in self.runs.values() if c.parity_items]
        if len(self.runs) == 1 and parity_runs and "compression" in parity_runs[0].items:
            self.parity_legend.addItem(parity_runs[0].items["compression"], "training text")
        named: set[str] = set()
        for c in parity_runs:
            for lang, item in c.parity_items.items():
                if lang not in named:
                    named.add(lang)
                    self.parity_legend.addItem(item, f"{lang} (dev)")
        # two columns from three entries on: half as tall, so it stays below the curves' ends
        self.parity_legend.setColumnCount(2 if len(self.parity_legend.items) > 2 else 1)
        self.parity_legend.setVisible(bool(parity_runs))
        if hasattr(self, "_fg"):
            style.recolour_legend(self.parity_legend, self._fg)

    def set_kind(self, run_id: int, kind: str) -> None:
        """What the run's step value is (``workbench.tasks.train.step_value``): titles and scales follow."""
        curves = self.runs.get(run_id)
        if curves is not None and curves.kind != kind:
            curves.kind = kind
            curves.dirty = True
            self._update_value_axis()

    def value_kind(self) -> str:
        """The kind of value the second plot shows: the first shown run's."""
        return next(iter(self.runs.values())).kind if self.runs else "frequency"

    def titles(self) -> dict[str, str]:
        """Each plot's full title now (it depends on the models of the runs shown)."""
        kind = self.value_kind()
        kinds = {c.kind for c in self.runs.values()}
        titles = dict(TITLES)
        titles["frequency"] = VALUE_TITLES.get(kind, TITLES["frequency"])
        if len(kinds) > 1:
            titles["frequency"] += LEFT_OUT
        if "log_likelihood" in kinds:
            titles["vocab"] = "Vocabulary size |V| (▼ pruning · ★ final cut)"
        elif any(c.removed for c in self.runs.values()):
            titles["vocab"] = "Vocabulary in use |V| (× below: a merge that removed a token)"
        if any(c.parity_items for c in self.runs.values()):
            titles["compression"] = PARITY_TITLE
        return titles

    def title_tips(self) -> dict[str, str]:
        """What a title means, for its tooltip: the value plot's model rule, why runs are left out."""
        kinds = {c.kind for c in self.runs.values()}
        tip = VALUE_TIPS.get(self.value_kind(), "")
        if len(kinds) > 1:
            tip += "\n" + LEFT_OUT_TIP
        tips = {"frequency": tip}
        if "log_likelihood" in kinds:
            tips["vocab"] = "▼ a Unigram pruning step, ★ its final cut to the target size"
        if any(c.parity_items for c in self.runs.values()):
            tips["compression"] = PARITY_TIP
        return tips

    def _update_value_axis(self) -> None:
        """Log scale for counts and scores, linear for a log-likelihood; titles and step labels.

        While the plots are shown, each plot's changes wait for its own turn (:meth:`_apply_axes`
        from :meth:`_draw_next_plot`); a curve of another kind than the value plot's is emptied at
        once, so no curve is ever drawn on the other scale meanwhile."""
        for curves in self.runs.values():  # which runs the second plot takes may have changed
            curves.dirty = True
        for curves in self.runs.values():  # now, not in a later turn: a log-likelihood left on a log
            if curves.kind != self.value_kind() and "frequency" in curves.items:  # axis reads as NaN
                curves.items["frequency"].setData([], [])
        if not hasattr(self, "_fg"):  # (during __init__: the palette sets the titles)
            self._apply_axes(PLOTS)
            return
        due = [name for name in PLOTS if not self._axes_current(name)]
        if not due:
            return
        if not self.isVisible():  # nothing is painted: at once, as a redraw expects them
            self._apply_axes(due)
            return
        # in each plot's own turn (with its curves): the runs switched now stay correct, for the
        # curves the plot shows are those of its kind (emptied above) until the plot's turn
        self._axes_due.update(due)
        if not self._stage_timer.isActive():
            self._stage_timer.start()

    def _unit(self) -> str:
        kinds = {c.kind for c in self.runs.values()}
        return ("merge step" if kinds <= {"frequency", "score"} else
                "EM round / pruning step" if kinds == {"log_likelihood"} else "step")

    def _axes_current(self, name: str) -> bool:
        """Whether plot ``name`` shows the bottom label, value scale and title of the runs shown."""
        plot = self.plots[name]
        if plot.getAxis("bottom").labelText != self._unit():
            return False
        if name == "frequency" and plot.getAxis("left").logMode != (self.value_kind() != "log_likelihood"):
            return False
        if not hasattr(self, "_fg"):
            return True
        label = plot.titleLabel
        return (getattr(label, "full_text", None), getattr(label, "tip", None)) == \
            (self.titles()[name], self.title_tips().get(name, ""))

    def _apply_scale(self) -> None:
        """The value plot's scale to the runs shown: log for counts and scores, linear for a
        log-likelihood (its range reset: the last run's means nothing on the other scale)."""
        plot = self.plots["frequency"]
        log = self.value_kind() != "log_likelihood"
        if plot.getAxis("left").logMode != log:
            plot.setLogMode(x=False, y=log)
            if self.follow["frequency"]:  # (a log-likelihood's -400,000 read as 10^-400000)
                plot.vb.setYRange(0.0, 1.0, padding=0)

    def _apply_axes(self, names: Sequence[str]) -> None:
        """Bring the plots ``names``' bottom label, value scale and title to the runs shown; only
        what differs is set (each set lays the axis out and paints it afresh)."""
        unit = self._unit()
        for name in names:
            self._axes_due.discard(name)
            plot = self.plots[name]
            if name == "frequency":
                self._apply_scale()
            if plot.getAxis("bottom").labelText != unit:  # setLabel lays the axis out and paints it afresh
                plot.setLabel("bottom", unit)
        if hasattr(self, "_fg"):
            self._set_titles(names)

    def set_chars(self, run_id: int, chars: int | None) -> None:
        curves = self.runs.get(run_id)
        if curves is not None and curves.chars != chars:
            curves.chars = chars
            if not curves.dirty:  # only its compression curve changes: that plot alone, in a turn
                self._staged.setdefault("compression", set()).add(run_id)
                if self.isVisible() and not self._stage_timer.isActive():
                    self._stage_timer.start()

    def set_transition(self, run_id: int, step: int | None) -> None:
        """Mark a SuperBPE run's transition point t: a dashed line in the run's colour at that merge
        step on every plot, labelled on the vocabulary plot (None removes it)."""
        curves = self.runs.get(run_id)
        if curves is None or curves.transition == step:
            return
        self._remove_transition(curves)
        curves.transition = step
        if step is None:
            return
        for name, plot in self.plots.items():
            line = pg.InfiniteLine(pos=step, angle=90, movable=False,
                                   pen=pg.mkPen(curves.colour, width=1.5, style=Qt.PenStyle.DashLine),
                                   label="t" if name == "vocab" else None,
                                   labelOpts={"position": 0.94, "color": curves.colour, "anchors": [(0, 0.5), (0, 0.5)]})
            line.setToolTip(f"SuperBPE's transition point t: the {step:,} merges before it are subwords (split at "
                            f"spaces); from merge {step + 1:,} on, merges may cross spaces (superwords)")
            line.setZValue(15)
            label = getattr(line, "label", None)  # only a line made with a label has one
            if label is not None:
                font = label.textItem.font()
                font.setBold(True)
                label.setFont(font)
            plot.addItem(line, ignoreBounds=True)
            curves.transition_lines[name] = line

    def _remove_transition(self, curves: RunCurves) -> None:
        for name, line in curves.transition_lines.items():
            self.plots[name].removeItem(line)
        curves.transition_lines = {}

    def point_count(self) -> int:
        return sum(c.points.n for c in self.runs.values())

    def curve_data(self, run_id: int, plot: str) -> tuple[np.ndarray, np.ndarray]:
        """What the curve ``plot`` of ``run_id`` holds (x, y) as drawn — for tests and export."""
        item = self.runs[run_id].items.get(plot)
        if item is None:  # not drawn yet: items are made in the turn that draws their plot
            return np.array([]), np.array([])
        # xData/yData are the data as given (getData() would be log10'd, clipped and downsampled).
        if item.xData is None:
            return np.array([]), np.array([])
        return np.asarray(item.xData), np.asarray(item.yData)

    @Slot()
    def redraw(self) -> bool:
        """Push changed buffers into the curves; returns True when anything was drawn."""
        if not self.isVisible():
            return False  # buffers stay dirty; showEvent draws them when the plots are shown again
        self._reveal(len(self._unrevealed))
        if self._axes_due:  # everything is drawn now: every plot's axes with it
            self._apply_axes([n for n in PLOTS if n in self._axes_due])
        staged = set().union(*self._staged.values()) if self._staged else set()
        self._staged.clear()  # what redraw_in_turns had still to draw is drawn now, whole
        self._y_done.clear()
        self._stage_timer.stop()
        self._follow_links()
        dirty = [c for c in self.runs.values() if c.dirty or c.run_id in staged]
        for curves in dirty:
            curves.dirty = False
            for name in PLOTS:
                self._draw_plot(curves, name)
        if self._legend_due:
            self._fill_legend()
        if not dirty:
            return False
        self._drawn(PLOTS)
        return True

    def redraw_in_turns(self) -> None:
        """:meth:`redraw`, one plot at a time over turns of the event loop (its y range in one,
        its curves and x range in the next): a stored run's first curves.

        Setting a long run's points and fitting the ranges of all four plots, then painting them
        (eight axes laid out afresh) took 40–100 ms of the window's thread in one frame; a plot a
        turn is a quarter of that in each. The first turn draws the vocabulary plot, whose x range
        the others follow. Live drawing while a run trains stays :meth:`redraw` (a batch at a time).
        """
        if not self.isVisible():
            return
        dirty = [c.run_id for c in self.runs.values() if c.dirty]
        if not dirty and not self._legend_due and not self._staged:
            return
        for rid in dirty:
            self.runs[rid].dirty = False
        for name in PLOTS:
            self._staged.setdefault(name, set()).update(dirty)
        if not self._stage_timer.isActive():
            self._stage_timer.start()

    def drawing(self) -> bool:
        """Plots of :meth:`redraw_in_turns` (or the legend after them) are still to be drawn, or
        the plots still to be shown the first time (one a turn)."""
        return (bool(self._staged) or bool(self._axes_due) or self._stage_timer.isActive()
                or (bool(self._unrevealed) and self.isVisible()))

    @Slot()
    def _timed_draw(self) -> None:
        if turns.room(self._stage_timer):
            self._draw_next_plot()

    @Slot()
    def _draw_next_plot(self) -> None:
        """One turn of :meth:`redraw_in_turns`: one plot's y range (and value scale), then in the
        next its curves, x range, bottom label and title — each paint lays out one axis afresh.

        The other plots follow the vocabulary plot's x range (``setXLink``): each in its own turn,
        not when the vocabulary plot's range is set — four bottom axes laid out and painted in the
        vocabulary plot's frame were half its cost. A legend of several runs is filled in a turn
        of its own after the curves (it lays all four plots out afresh).
        """
        if self._unrevealed:  # the first showing: one empty plot a turn, then the curves
            self._reveal(1)
            if self._unrevealed or self._staged or self._legend_due or self._axes_due:
                self._stage_timer.start()
            return
        if not self._staged:
            if self._axes_due:  # a plot's axes to follow the runs shown, with no curves to draw: alone
                self._apply_axes([next(n for n in PLOTS if n in self._axes_due)])
                if self._axes_due or self._legend_due:
                    self._stage_timer.start()
            elif self._legend_due:
                self._fill_legend()
            return
        name = next(n for n in PLOTS if n in self._staged)  # the vocabulary plot first: the others follow its x
        if name == "vocab":
            for other in self._staged:  # their x follows in their own turn
                if other != "vocab":
                    self.plots[other].vb.blockLink(True)
        if name not in self._y_done:
            # First its y range (from the buffered points) and value scale: a paint of its left
            # axis. Its curves, x range, label and title come in the next turn: its bottom axis.
            # (Both axes laid out and painted in one frame were most of a plot's turn.)
            self._y_done.add(name)
            if name == "frequency" and name in self._axes_due:
                self._apply_scale()
            self._fit_ranges((name,), x=False)
            self._stage_timer.start()
            return
        self._y_done.discard(name)
        ids = self._staged.pop(name)
        if name in self._axes_due:  # its label and title: its bottom axis is laid out afresh now anyway
            self._apply_axes([name])
        if name != "vocab":
            self._follow_links((name,))
        for rid in ids:
            curves = self.runs.get(rid)
            if curves is not None:
                self._draw_plot(curves, name)
        self._drawn((name,), done=not self._staged)
        if self._staged or self._legend_due or self._axes_due:
            self._stage_timer.start()

    def _reveal(self, count: int) -> None:
        """Paint the next ``count`` plots not painted yet (each in the next frame)."""
        for name in self._unrevealed[:count]:
            self.plots[name].setOpacity(1.0)
        del self._unrevealed[:count]

    def _follow_links(self, names: Sequence[str] = PLOTS) -> None:
        """The plots ``names`` follow the vocabulary plot's x range again, and take it now."""
        source = self.plots["vocab"].vb
        for name in names:
            vb = self.plots[name].vb
            if name != "vocab" and vb.linksBlocked:
                vb.blockLink(False)
                vb.linkedViewChanged(source, pg.ViewBox.XAxis)

    def _drawn(self, names: Sequence[str], *, done: bool = True) -> None:
        """After points went into the curves of ``names``: their ranges, the note, the signal."""
        self._fit_ranges(names)
        if done:
            self.no_chars_note.setVisible(self.point_count() > 0 and not any(c.chars or c.parity_items
                                                                             for c in self.runs.values()))
            self.redrawn.emit(self.point_count())

    def _draw_plot(self, curves: RunCurves, name: str) -> None:
        """A run's buffered points into its curve (and marks) of plot ``name`` (made now if new)."""
        if name not in curves.items:
            self._make_item(curves, name)
        v = curves.points.view
        x = v[:, 0]
        # Views of the buffer are safe to hand over: rows are only ever appended, never changed.
        if name == "vocab":
            curves.items["vocab"].setData(x, v[:, 1], skipFiniteCheck=True)
            marked = v[:, 4] >= PHASES["prune"]
            if curves.marks is not None:
                if marked.any():
                    phase = v[marked, 4]
                    # Removals are many and come at every height: a rug along the foot of the plot
                    # shows where they crowd; pruning steps sit on the curve.
                    y = np.where(phase == PHASES["remove"], v[0, 1], v[marked, 1])
                    curves.marks.setData(x[marked], y,
                                         symbol=["star" if p == PHASES["final"] else "x" if p == PHASES["remove"]
                                                 else "t" for p in phase],
                                         size=[13 if p == PHASES["final"] else 6 if p == PHASES["remove"] else 8
                                               for p in phase])
                else:
                    curves.marks.setData([], [])
        elif name == "frequency":
            self._draw_value(curves, v)
        elif name == "tokens":
            curves.items["tokens"].setData(x, v[:, 3], skipFiniteCheck=True)
        else:
            if curves.chars:
                with np.errstate(divide="ignore"):
                    ratio = np.where(v[:, 3] > 0, curves.chars / np.maximum(v[:, 3], 1), np.nan)
                curves.items["compression"].setData(x, ratio)
            else:
                curves.items["compression"].setData([], [])
            if curves.parity is not None:
                p = curves.parity.view
                for j, item in enumerate(curves.parity_items.values()):
                    item.setData(p[:, 0], p[:, 1 + j], connect="finite")

    def _draw_value(self, curves: RunCurves, v: np.ndarray) -> None:
        """The second plot's curve: counts and scores over every merge, a log-likelihood over the EM
        rounds only (pruning steps have none); a run of another kind than the plot's gets none."""
        item = curves.items["frequency"]
        if curves.kind != self.value_kind():
            item.setData([], [])
        elif curves.kind == "log_likelihood":
            em = np.isfinite(v[:, 2])
            item.setData(v[em, 0], v[em, 2], symbol="o", symbolSize=4, symbolPen=None,
                         symbolBrush=pg.mkBrush(curves.colour))
        elif curves.kind == "score":
            item.setData(v[:, 0], np.where(v[:, 2] > 0, v[:, 2], np.nan), connect="finite")
        else:
            item.setData(v[:, 0], np.maximum(v[:, 2], 1.0), skipFiniteCheck=True)

    def _value_column(self, curves: RunCurves, v: np.ndarray) -> np.ndarray | None:
        """The second plot's y values of a run in view coordinates (log10 on a log axis)."""
        if curves.kind != self.value_kind():
            return None
        if curves.kind == "log_likelihood":
            col = v[:, 2]
            return col[np.isfinite(col)]
        if curves.kind == "score":
            col = v[:, 2]
            return np.log10(col[np.isfinite(col) & (col > 0)])
        return np.log10(np.maximum(v[:, 2], 1.0))

    # ---- ranges ------------------------------------------------------------------------------------
    def _bounds(self, name: str) -> tuple[float, float, float, float] | None:
        xs, ys = [], []
        for curves in self.runs.values():
            v = curves.points.view
            if not len(v):
                continue
            xs += [v[0, 0], v[-1, 0]]
            if name == "vocab":
                col = v[:, 1]
            elif name == "frequency":
                value = self._value_column(curves, v)
                if value is None or not len(value):
                    continue
                col = value
            elif name == "tokens":
                col = v[:, 3]
            elif curves.parity is not None and curves.parity.n:
                col = curves.parity.view[:, 1:].ravel()
                if curves.chars:
                    col = np.concatenate([col, curves.chars / np.maximum(v[:, 3], 1.0)])
            elif curves.chars:
                col = curves.chars / np.maximum(v[:, 3], 1.0)
            else:
                continue
            ys += [float(np.nanmin(col)), float(np.nanmax(col))]
        if not xs:
            return None
        if not ys:
            ys = [0.0, 1.0]
        return min(xs), max(xs), min(ys), max(ys)

    @staticmethod
    def _stepped(current: tuple[float, float], lo: float, hi: float, live: bool, floor: float | None = None,
                 up: bool = True):
        span = max(hi - lo, abs(hi) * 1e-3, 1e-9)
        a, b = current
        fits = a <= lo and hi <= b and (b - a) <= 3.0 * span + 1e-9
        if live and fits:
            return None
        # While live, leave room on the side the curve is heading so the axes change rarely.
        below, above = ((0.04, 0.25) if up else (0.25, 0.04)) if live else (0.04, 0.04)
        new = (lo - below * span, hi + above * span)
        if floor is not None:
            new = (max(new[0], floor), new[1])
        if not live and abs(new[0] - a) < 1e-9 * span and abs(new[1] - b) < 1e-9 * span:
            return None
        return new

    def _fit_ranges(self, names: Sequence[str] = PLOTS, *, x: bool = True) -> None:
        for name in names:
            plot = self.plots[name]
            if not self.follow[name]:
                continue
            bounds = self._bounds(name)
            if bounds is None:
                continue
            x0, x1, y0, y1 = bounds
            (cx, cy) = plot.vb.viewRange()
            # x starts a little left of 0 so the 0 tick label is drawn — or of the first step, for
            # curves that begin far from 0 (an extension's merges after its base's 100,000)
            lo = x0 - 1.0 if x0 > 0.5 * x1 else 0.0
            x_new = self._stepped(tuple(cx), lo, x1, self.live, floor=lo - 0.02 * max(x1 - lo, 1.0)) \
                if name == "vocab" and x else None
            y_new = self._stepped(tuple(cy), y0, y1, self.live, up=GROWS_UP[name])
            if x_new is not None:
                plot.vb.setXRange(*x_new, padding=0)
            if y_new is not None:
                plot.vb.setYRange(*y_new, padding=0)

    def fit_all(self) -> None:
        """Follow the data again in every plot (double click)."""
        for name in PLOTS:
            self.follow[name] = True
        for plot in self.plots.values():
            plot.vb.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)  # force a fresh fit
        self._fit_ranges()

    def set_live(self, live: bool) -> None:
        """While live, ranges grow in steps with headroom; afterwards they fit the data tightly."""
        self.live = live
        self._fit_ranges()

    def _user_zoomed(self, name: str) -> None:
        self.follow[name] = False

    @Slot(object)
    def _on_mouse_clicked(self, event) -> None:
        if event.double():
            self.fit_all()

    # ---- items -----------------------------------------------------------------------------------
    def _make_item(self, curves: RunCurves, name: str) -> None:
        """A run's curve on plot ``name`` (and its marks, on the vocabulary plot), in its style."""
        item = pg.PlotDataItem(name=curves.name if name == "vocab" else None)
        item.setDownsampling(auto=True, method="peak")
        item.setClipToView(True)
        item.setPen(self._pen(curves))
        self.plots[name].addItem(item)
        curves.items[name] = item
        if name == "vocab":
            curves.marks = pg.ScatterPlotItem(pxMode=True)
            curves.marks.setZValue(20)
            self._style_marks(curves)
            self.plots["vocab"].addItem(curves.marks)
            if len(self.runs) > 1:
                self._legend_due = True  # its entry, in the legend's own turn
        elif name == "compression" and curves.parity_items and len(self.runs) == 1:
            self._fill_parity_legend()  # names the training text's curve

    @staticmethod
    def _pen(curves: RunCurves):
        # 1-px cosmetic lines take the fast path; the first run is solid, others dashed, dotted …
        return pg.mkPen(curves.colour, width=1, style=style.run_line_style(curves.colour))

    @staticmethod
    def _style_marks(curves: RunCurves) -> None:
        if curves.marks is not None:
            curves.marks.setPen(pg.mkPen(curves.colour, width=1.5))
            curves.marks.setBrush(pg.mkBrush(curves.colour))
            curves.marks.setSymbol("t")

    def _style_items(self, curves: RunCurves) -> None:
        for name, item in curves.items.items():
            item.setPen(self._pen(curves))
            if name == "vocab":
                item.opts["name"] = curves.name
        if curves.parity_items:
            self._style_parity()
        self._style_marks(curves)
        self._legend_due = True

    def _fill_legend(self) -> None:
        """One entry per shown run, in the order shown, in as many columns as the width holds."""
        self._legend_due = False
        self.legend.setVisible(len(self.runs) > 1)
        self.legend.clear()
        for c in self.runs.values():
            if "vocab" in c.items:
                self.legend.addItem(c.items["vocab"], c.name)
        style.recolour_legend(self.legend, self._fg)
        self.legend_fitter.fit()

    def _remove(self, run_id: int) -> None:
        curves = self.runs.pop(run_id)
        for name, item in curves.items.items():
            self.plots[name].removeItem(item)
        if curves.marks is not None:
            self.plots["vocab"].removeItem(curves.marks)
        self._remove_transition(curves)
        for item in curves.parity_items.values():
            self.plots["compression"].removeItem(item)
        if curves.parity_items:
            curves.parity_items = {}
            self._style_parity()
        if self.legend is not None and "vocab" in curves.items:
            self.legend.removeItem(curves.items["vocab"])

    # ---- hover -------------------------------------------------------------------------------------
    def hover_text(self) -> str:
        return self._hover_text

    def hover_at(self, step: int, plot_name: str = "vocab") -> str:
        """Show the hover label for ``step`` as if the mouse were there; returns the text."""
        self._show_hover(step, self.plots[plot_name])
        return self._hover_text

    @Slot(object)
    def _on_mouse_moved(self, pos: QPointF) -> None:
        for plot in self.plots.values():
            if plot.vb.sceneBoundingRect().contains(pos):
                x = plot.vb.mapSceneToView(pos).x()
                self._show_hover(int(round(x)), plot)
                return
        self._hide_hover()

    def _show_hover(self, step: int, plot: pg.PlotItem) -> None:
        lines = []
        first = None
        for curves in self.runs.values():
            v = curves.points.view
            if not len(v):
                continue
            i = int(np.searchsorted(v[:, 0], step))
            if i >= len(v) or int(v[i, 0]) != step:
                continue
            _s, vocab, value, tokens, phase = v[i]
            ratio = f" · {curves.chars / tokens:.2f} chars/tok" if curves.chars and tokens else ""
            ratio += self._parity_hover(curves, step)
            who = f"<span style='color:{curves.colour}'>■</span> {_html(curves.name)} · " if len(self.runs) > 1 else ""
            if phase:  # a Unigram step: no merge to show
                what = _PHASE_NAMES.get(int(phase), "step")
                ll = f" · log-likelihood {value:,.1f}" if np.isfinite(value) else ""
                lines.append(f"{who}<b>step {step:,}</b> · {what}{ll}<br>|V| {int(vocab):,} · L {int(tokens):,}{ratio}")
            else:
                merge = self.merge_lookup(curves.run_id, step) or ""
                number = f"score {value:.3g}" if curves.kind == "score" else f"freq {int(value):,}"
                lines.append(f"{who}<b>step {step:,}</b> · {number}<br>{_html(merge)}<br>"
                             f"|V| {int(vocab):,} · L {int(tokens):,}{ratio}")
            if first is None:
                first = (curves, i)
        if first is None:
            self._hide_hover()
            return
        curves, i = first
        self._hover_text = "\n".join(_plain(line) for line in lines)
        for line in self.cursors.values():
            line.setPos(step)
            line.setVisible(True)
        if self._label_plot is not plot:
            if self._label_plot is not None:
                self._label_plot.removeItem(self.label)
                self._label_plot.removeItem(self.marker)
            plot.addItem(self.label, ignoreBounds=True)
            plot.addItem(self.marker, ignoreBounds=True)
            self._label_plot = plot
        name = next(n for n, p in self.plots.items() if p is plot)
        v = curves.points.view
        value = v[i, 2]
        if curves.kind == "log_likelihood":
            value_y = value
        else:
            value_y = np.log10(value) if curves.kind == "score" and value > 0 else np.log10(max(value, 1.0))
        if curves.kind != self.value_kind():
            value_y = np.nan
        y = {"vocab": v[i, 1], "frequency": value_y, "tokens": v[i, 3],
             "compression": (curves.chars / v[i, 3]) if curves.chars and v[i, 3] else np.nan}[name]
        if np.isfinite(y):
            self.marker.setData([step], [y], brush=pg.mkBrush(curves.colour), pen=pg.mkPen(self._fg, width=1))
            self.marker.setVisible(True)
        else:
            self.marker.setVisible(False)
        # The label sits in a top corner of the plot, away from the point, so it is never clipped
        # by the plot's edge and never hides the point it describes.
        (x0, x1), (y0, y1) = plot.vb.viewRange()
        point_on_right = step > (x0 + x1) / 2
        high = np.isfinite(y) and y > y0 + 0.6 * (y1 - y0)
        dx, dy = 0.015 * (x1 - x0), 0.03 * (y1 - y0)
        corner_y = (y0 + dy) if high else (y1 - dy)
        if point_on_right:
            self.label.setAnchor((0.0, 1.0 if high else 0.0))
            self.label.setPos(x0 + dx, corner_y)
        else:
            self.label.setAnchor((1.0, 1.0 if high else 0.0))
            self.label.setPos(x1 - dx, corner_y)
        self.label.setHtml(f"<div style='color:{self._fg.name()}'>{'<br>'.join(lines)}</div>")
        self.label.setVisible(True)
        self.hovered.emit(curves.run_id, step)

    @staticmethod
    def _parity_hover(curves: RunCurves, step: int) -> str:
        """A parity-aware run's languages at ``step``: their characters per token on the dev set."""
        if curves.parity is None or not curves.parity.n:
            return ""
        p = curves.parity.view
        i = int(np.searchsorted(p[:, 0], step))
        if i >= len(p) or int(p[i, 0]) != step:
            return ""
        parts = [f"{lang} {p[i, 1 + j]:.2f}" for j, lang in enumerate(curves.languages) if np.isfinite(p[i, 1 + j])]
        return "<br>dev chars/tok: " + " · ".join(_html(x) for x in parts)

    def _hide_hover(self) -> None:
        if self._hover_text or self.label.isVisible():
            self._hover_text = ""
            self.label.setVisible(False)
            self.marker.setVisible(False)
            for line in self.cursors.values():
                line.setVisible(False)
            self.hovered.emit(0, 0)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self.redraw_in_turns()  # what arrived while hidden: a plot a turn, as a stored run's curves
        if self._unrevealed and not self._stage_timer.isActive():
            self._stage_timer.start()  # the plots shown one a turn

    def leaveEvent(self, event) -> None:  # noqa: N802
        super().leaveEvent(event)
        self._hide_hover()

    # ---- palette -------------------------------------------------------------------------------------
    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._apply_palette()

    def _apply_palette(self) -> None:
        pal = self.palette()
        bg = pal.color(QPalette.ColorRole.Base)
        fg = pal.color(QPalette.ColorRole.Text)
        self._fg = fg
        axis = QColor(fg)
        axis.setAlpha(170)
        self.view.setBackground(bg)
        self._set_titles()
        for _name, plot in self.plots.items():
            for side in ("left", "bottom"):
                ax = plot.getAxis(side)
                ax.setPen(pg.mkPen(axis))
                ax.setTextPen(pg.mkPen(fg))
                ax.label.setDefaultTextColor(axis)
        for line in self.cursors.values():
            c = QColor(fg)
            c.setAlpha(110)
            line.setPen(pg.mkPen(c, width=1, style=Qt.PenStyle.DashLine))
        tip = pal.color(QPalette.ColorRole.ToolTipBase)
        tip.setAlpha(235)
        border = QColor(fg)
        border.setAlpha(90)
        self.no_chars_note.setColor(axis)
        self.label.fill = pg.mkBrush(tip)
        self.label.border = pg.mkPen(border)
        if self.legend is not None:
            style.recolour_legend(self.legend, fg)
            lb = QColor(bg)
            lb.setAlpha(200)
            self.legend.setBrush(pg.mkBrush(lb))
            style.recolour_legend(self.parity_legend, fg)
            self.parity_legend.setBrush(pg.mkBrush(lb))
            self.parity_legend.setPen(pg.mkPen(border))


    def _set_titles(self, names: Sequence[str] = PLOTS) -> None:
        tips = self.title_tips()
        titles = self.titles()
        for name in names:
            set_title(self.plots[name], titles[name], self._fg.name(), tip=tips.get(name, ""))

    def shown_titles(self) -> dict[str, tuple[str, str, str]]:
        """Each plot's (full title, text shown, tooltip): a title too wide for its plot is elided."""
        return {name: (title_text(plot), plot.titleLabel.shown_text, plot.titleLabel.toolTip())
                for name, plot in self.plots.items()}


def _number(value: object) -> float:
    """A stored number as a float; NaN (a gap in the curve) for anything else."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else np.nan


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain(html: str) -> str:
    import re

    out = re.sub(r"<br>", "\n", html)
    out = re.sub(r"<[^>]+>", "", out)
    return out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
