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
    qtbot.waitUntil(lambda: not plots.drawing(), timeout=5000)  # the empty plots painted (test below)
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
    def turn() -> None:  # (a turn another view's work had spent puts the plot off: nothing new then)
        now = [n for n in PLOTS if len(plots.curve_data(1, n)[0])]
        if now and (not seen or now != seen[-1]):
            seen.append(now)
    plots._stage_timer.timeout.connect(turn)
    qtbot.waitUntil(lambda: not plots.drawing(), timeout=5000)
    assert [len(s) for s in seen] == [1, 2, 3, 4] and seen[0] == ["vocab"]
    assert not plots.drawing() and drawn == [{name: 2_000 for name in PLOTS}]  # redrawn once, at the end
    x, y = plots.curve_data(1, "tokens")
    assert np.array_equal(x, points[:, 0]) and np.array_equal(y, points[:, 3])
    x_lo, x_hi = plots.plots["vocab"].vb.viewRange()[0]
    assert x_lo <= 1 and x_hi >= points[-1, 0]  # fitted, the other plots following its x range


def test_the_first_showing_paints_the_empty_plots_one_a_turn(qtbot) -> None:
    """Eight axes made and painted in one frame were ~20–30 ms: until its turn a plot is laid out
    but fully transparent (nothing of it painted), and the layout does not move when it shows."""
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    assert all(plot.opacity() == 0.0 for plot in plots.plots.values())
    plots.show()  # (its first turn runs in the event loop, after this)
    shown: list[list[str]] = []
    boxes: list[list[tuple[float, float]]] = []
    def turn() -> None:
        now = [n for n in PLOTS if plots.plots[n].opacity() == 1.0]
        if now and (not shown or now != shown[-1]):  # (nothing new in a turn another view's work had spent)
            shown.append(now)
        boxes.append([(plots.plots[n].vb.width(), plots.plots[n].vb.height()) for n in PLOTS])
    plots._stage_timer.timeout.connect(turn)
    qtbot.waitUntil(lambda: not plots.drawing(), timeout=5000)
    assert shown == [list(PLOTS[:k]) for k in range(1, 5)]
    assert all(b == boxes[0] for b in boxes) and min(min(wh) for wh in boxes[0]) > 100  # nothing moved
    plots.show_runs([(1, "run one (run 1)")])
    plots.append_array(1, np.array([[1, 300, 50, 1000, 0], [2, 301, 40, 990, 0]], dtype=np.float64))
    assert plots.redraw()  # a live run's redraw draws everything at once, whatever is left
    assert len(plots.curve_data(1, "tokens")[0]) == 2


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


def _extras_rows() -> list[StepRow]:
    """A parity-aware PickyBPE-like run: per-language characters per token, and two removals."""
    rows = []
    for k in range(1, 41):
        extra: dict = {"parity_cpt": {"en": 2.0 + k / 100, "zh": 1.0 + k / 200}}
        if k in (10, 30):
            extra.update(removed=[100 + k], in_use=256 + k - (1 if k == 10 else 2))
        rows.append(StepRow(step=k, vocab_size=256 + k, token_count=10_000 - k, frequency=500 - k, extra=extra))
    return rows


def test_a_stored_curve_built_off_the_window_is_what_append_buffers(qtbot) -> None:
    """stored_curve (run on a worker) gives the buffers append gives, extras included: a parity-aware
    run's languages and a PickyBPE run's vocabulary in use and removal marks."""
    from workbench.store import RunStepRow
    from workbench.ui.train.plots import stored_curve

    rows = _extras_rows()
    unigram = [RunStepRow(step=k, phase="em" if k % 3 else "prune", vocab_size=900 - k, token_count=5_000 + k,
                          value=None if k % 3 == 0 else -1000.0 + k) for k in range(1, 20)]
    for case in (rows, unigram, [StepRow(k, 256 + k, 1000 - k, 50 - k) for k in range(1, 30)]):
        by_append, by_worker = TrainingPlots(), TrainingPlots()
        qtbot.addWidget(by_append)
        qtbot.addWidget(by_worker)
        for plots in (by_append, by_worker):
            plots.show_runs([(1, "run (run 1)")])
        by_append.append(1, case)
        by_worker.add_stored(1, stored_curve(case))
        a, w = by_append.runs[1], by_worker.runs[1]
        np.testing.assert_array_equal(a.points.view, w.points.view)
        assert a.removed == w.removed and a.languages == w.languages
        if a.parity is None:
            assert w.parity is None
        else:
            assert w.parity is not None
            np.testing.assert_array_equal(a.parity.view, w.parity.view)
            assert list(w.parity_items) == ["en", "zh"]
    assert by_append.runs[1].removed == 0  # the last case: plain BPE, nothing removed
    picky = stored_curve(rows)
    assert picky.removed == 2 and picky.languages == ("en", "zh")
    assert int((picky.points[:, 4] == 4).sum()) == 2  # two removal marks


def test_selecting_a_stored_run_reads_and_builds_its_points_off_the_window_thread(
        make_window, qtbot, project, small_corpus, monkeypatch) -> None:
    """However short the run: its steps are read on a worker's connection and built into points
    there; the window's own connection reads no step, and the curves are the stored steps."""
    import threading

    from ui_helpers import train_cli, wait_for_curves

    from workbench.store import ProjectStore
    from workbench.store.browse import store_connection
    from workbench.ui.train import panel as train_panel

    train_cli(small_corpus, project, "--merges", "25", "--name", "short")
    train_cli(small_corpus, project, "--merges", "15", "--name", "shorter", "--units", "chars")
    window = make_window(project)
    window.show_panel("train")
    training = window.training
    history, plots = training.history, training.plots
    ids = history.run_ids()
    wait_for_curves(qtbot, plots, [rid for rid in ids if rid in plots.runs])
    built_on: list[int] = []
    real = train_panel.stored_curve

    def spy(rows):
        built_on.append(threading.get_ident())
        return real(rows)
    monkeypatch.setattr(train_panel, "stored_curve", spy)
    statements: list[str] = []
    conn = store_connection(training.session.store)
    conn.set_trace_callback(statements.append)
    try:
        history.select(ids)
        # In the selection's turn: the runs are listed, no point is read or drawn yet.
        assert sorted(plots.runs) == sorted(ids)
        new = [rid for rid in ids if not len(plots.curve_data(rid, "vocab")[0])]
        assert new
        wait_for_curves(qtbot, plots, ids)
    finally:
        conn.set_trace_callback(None)
    assert len(built_on) == len(new) and threading.get_ident() not in built_on
    assert not [s for s in statements if "FROM merges" in s or "FROM run_steps" in s], statements
    with ProjectStore.open(project, readonly=True) as store:
        for rid in ids:
            steps = store.steps(rid)
            x, y = plots.curve_data(rid, "tokens")
            np.testing.assert_array_equal(x, [s.step for s in steps])
            np.testing.assert_array_equal(y, [s.token_count for s in steps])


def _settled(qtbot, plots: TrainingPlots) -> None:
    qtbot.waitUntil(lambda: not plots.drawing(), timeout=5000)


def _axes(plots: TrainingPlots) -> dict[str, tuple]:
    """What each plot shows of the runs' kind: its bottom label, value scale and title."""
    return {name: (plot.getAxis("bottom").labelText, plot.getAxis("left").logMode, plots.shown_titles()[name][0])
            for name, plot in plots.plots.items()}


def _kinds_plots(qtbot) -> TrainingPlots:
    """Plots holding a Unigram run (1, shown, settled), a BPE run (2) and a WordPiece run (3)."""
    from workbench.store import RunStepRow

    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    qtbot.waitExposed(plots)
    _settled(qtbot, plots)
    plots.show_runs([(1, "unigram (run 1)")])
    plots.set_kind(1, "log_likelihood")
    plots.append(1, [RunStepRow(step=k, phase="em", vocab_size=900 - k, token_count=5_000 + k, value=-4e5 + k)
                     for k in range(1, 30)])
    plots.redraw_in_turns()
    _settled(qtbot, plots)
    return plots


def _show(plots: TrainingPlots, rid: int) -> None:
    kind = {1: "log_likelihood", 2: "frequency", 3: "score"}[rid]
    plots.show_runs([(rid, f"run {rid}")])
    plots.set_kind(rid, kind)
    if not plots.runs[rid].points.n:
        if kind == "log_likelihood":
            from workbench.store import RunStepRow

            plots.append(rid, [RunStepRow(step=k, phase="em", vocab_size=900 - k, token_count=5_000 + k,
                                          value=-4e5 + k) for k in range(1, 30)])
        else:
            value = 1_000_000.0 if kind == "frequency" else 0.01
            plots.append_array(rid, np.array([[k, 300 + k, value / k, 9_000 - k, 0] for k in range(1, 30)],
                                             dtype=np.float64))
    plots.redraw_in_turns()


def test_switching_runs_changes_each_plots_axes_in_its_own_turn(qtbot) -> None:
    """A Unigram run → a BPE run changes the value axis's scale and all four bottom labels: each
    plot's label and title change in the turn that draws its curves, its scale and y range in the
    turn before (one paint lays out one axis, not eight), and the value plot's curve is never drawn
    on the other scale."""
    plots = _kinds_plots(qtbot)
    before = _axes(plots)
    assert before["vocab"][0] == "EM round / pruning step" and before["frequency"][1] is False
    _show(plots, 2)
    assert _axes(plots) == before and plots.drawing()  # nothing of the axes in the switching turn
    changed: list[list[str]] = []

    def turn() -> None:
        now = _axes(plots)
        done = [n for n in PLOTS if (now[n][0], now[n][2]) != (before[n][0], before[n][2])]
        drawn = [n for n in PLOTS if n in plots.runs[2].items]  # (compression: no characters, no points)
        assert done == drawn, (done, drawn)  # a plot's label and title change with its curves, in its turn
        if len(plots.curve_data(2, "frequency")[0]):  # the scale comes a turn before (with the y range)
            assert plots.plots["frequency"].getAxis("left").logMode is True
        if done and (not changed or done != changed[-1]):
            changed.append(done)
    plots._stage_timer.timeout.connect(turn)
    _settled(qtbot, plots)
    assert [len(c) for c in changed] == [1, 2, 3, 4]
    after = _axes(plots)
    assert all(a[0] == "merge step" for a in after.values()) and after["frequency"][1] is True
    assert after["frequency"][2] == "Frequency of the merged pair (log)"


def test_switching_runs_twice_quickly_ends_with_the_second_runs_axes(qtbot) -> None:
    """Switched again before the first switch's turns are through (or at once): the plots end with
    the second run's labels, scale and titles, as if it had been shown alone."""
    expected = {}
    for rid in (1, 3):  # what each run's axes are, shown on its own and settled
        alone = _kinds_plots(qtbot)
        _show(alone, rid)
        _settled(qtbot, alone)
        expected[rid] = _axes(alone)
    assert expected[1] != expected[3]
    for first, second, turns_between in ((2, 1, 0), (2, 1, 2), (2, 3, 0), (2, 3, 1), (3, 1, 3)):
        plots = _kinds_plots(qtbot)
        ticks: list[int] = []
        plots._stage_timer.timeout.connect(lambda t=ticks: t.append(1))
        _show(plots, first)
        if turns_between:
            qtbot.waitUntil(lambda t=ticks, n=turns_between: len(t) >= n, timeout=5000)
        _show(plots, second)
        _settled(qtbot, plots)
        assert _axes(plots) == expected[second], (first, second, turns_between)
        assert all(len(plots.curve_data(second, n)[0]) for n in PLOTS[:3])
