"""A stored run's first curves are drawn a plot per turn, and a log axis over a huge range asks
for a bounded number of ticks (issue 26: the window never stalls more than a frame).

Showing the newest run of a 10M-merge project set four plots' points and ranges in one turn and
painted them in one frame (~40–100 ms); switching the value plot from a Unigram run's linear
log-likelihood axis to a log axis left it showing 10^-400000 … 1 for a frame, for which the log
axis made 2·10ᵏ … 9·10ᵏ ticks of every decade (11,000 measured labels: ~0.1 s of painting).
"""

from __future__ import annotations

import numpy as np

from workbench.store import StepRow
from workbench.ui.plot_labels import log_ticks
from workbench.ui.train.plots import PLOTS, TrainingPlots, steps_array


def test_a_log_axis_over_thousands_of_decades_asks_for_a_few_ticks() -> None:
    levels = log_ticks(-400_000.0, 0.0, 300.0)
    assert sum(len(values) for _spacing, values in levels) <= 300 / 28 + 2
    assert levels[0][1][-1] == 0.0  # the decades still labelled, 10^0 among them
    few = log_ticks(0.0, 7.0, 100.0)  # a usual range (decades labelled every other): the 2…9 marks stay
    assert len(few) == 2 and len(few[1][1]) == 8 * 7


def test_a_stored_runs_curves_are_drawn_a_plot_per_turn(qtbot) -> None:
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    qtbot.waitExposed(plots)
    rows = [StepRow(step=1 + 500 * k, vocab_size=300 + 500 * k, token_count=5_000_000 - 100 * k,
                    frequency=10_000_000 - 500 * k) for k in range(2_000)]
    points = steps_array(rows)
    assert points is not None and points.shape == (2_000, 5)
    assert steps_array([StepRow(1, 2, 3, 4, {"parity_cpt": {"en": 3.0}})]) is None  # append reads those
    plots.show_runs([(1, "run one (run 1)")])
    plots.set_chars(1, 20_000_000)
    plots.append_array(1, points)
    drawn: list[dict[str, int]] = []
    plots.redrawn.connect(lambda _n: drawn.append({name: len(plots.curve_data(1, name)[0]) for name in PLOTS}))
    plots.redraw_in_turns()
    # Nothing drawn in the calling turn; then one plot at a time, the vocabulary plot first.
    assert plots.drawing() and all(len(plots.curve_data(1, name)[0]) == 0 for name in PLOTS)
    seen: list[list[str]] = []  # after each turn of the plots' own timer: the plots that have points
    plots._stage_timer.timeout.connect(lambda: seen.append([n for n in PLOTS if len(plots.curve_data(1, n)[0])]))
    qtbot.waitUntil(lambda: not plots.drawing(), timeout=5000)
    assert [len(s) for s in seen] == [1, 2, 3, 4] and seen[0] == ["vocab"]
    assert not plots.drawing() and drawn == [{name: 2_000 for name in PLOTS}]  # redrawn once, at the end
    x, y = plots.curve_data(1, "tokens")
    assert np.array_equal(x, points[:, 0]) and np.array_equal(y, points[:, 3])
    x_lo, x_hi = plots.plots["vocab"].vb.viewRange()[0]
    assert x_lo <= 1 and x_hi >= points[-1, 0]  # fitted, the other plots following its x range


def test_the_window_keeps_its_width_while_a_projects_files_are_read(make_window, qtbot, small_corpus, tmp_path) -> None:
    """The Corpus tab's reading progress and a long project path in the status bar once asked for
    more than a 1,200-px window: it grew by a few pixels on every open and repainted whole."""
    window = make_window(None)
    window.resize(1200, 800)
    corpus = window.corpus
    corpus.rate_label.setText("12.3 MB/s · 1,234 files/s")
    for widget in (corpus.rate_label, corpus.progress, corpus.cancel_button):
        widget.show()
    window.opening_label.setText(f"Opening {'a-rather-long-project-name-' * 4}.tokproj…")
    window.opening_label.show()
    window.project_label.setText(str(tmp_path / ("deep-folder-" * 8) / "project.tokproj"))
    qtbot.wait(50)
    assert window.minimumSizeHint().width() <= 1000
    assert window.width() == 1200
