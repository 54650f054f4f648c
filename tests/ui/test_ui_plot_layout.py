"""The Train tab's plots stay readable at 1280 × 800 with five runs overlaid, in both themes (issue 19).

Before: a long value-plot title ("… · other models' runs left out") set its plot's minimum width,
so the right column grew past the window's edge and the left plots were squeezed; titles were cut
by the scene's edge. Here five real runs (WordPiece, three BPE with long names, Unigram) trained
headless are overlaid in the real window, and the geometry is measured after the event loop ran.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF
from ui_helpers import train_cli, wait_for_curves

from workbench.corpus.demo import demo_corpus_files

MIN_PLOT_WIDTH = 250  # px of a view box: a quarter of the plot area at 1280 × 800 is ~360


@pytest.fixture(scope="module")
def five_runs(tmp_path_factory):
    files = [p for p in demo_corpus_files() if p.name in ("de_zitate.txt", "en_shakespeare.txt")]
    project = tmp_path_factory.mktemp("five") / "five.tokproj"
    train_cli(files, project, "--model", "wordpiece", "--wordpiece-score", "likelihood", "--vocab-size", "400",
              "--name", "wordpiece likelihood")
    for merges in (40, 80, 120):
        train_cli(files, project, "--merges", str(merges),
                  "--name", f"bytes BPE with {merges} merges on the German and English demo files")
    train_cli(files, project, "--model", "unigram", "--vocab-size", "500", "--name", "unigram")
    return project


def _scene_rect(item) -> QRectF:
    return item.mapRectToScene(item.boundingRect())


def _assert_readable(plots, width_floor: float = MIN_PLOT_WIDTH, height_floor: float = 120) -> None:
    view_rect = QRectF(plots.view.viewport().rect())
    boxes = {name: _scene_rect(plot.vb) for name, plot in plots.plots.items()}
    for name, box in boxes.items():
        assert box.width() >= width_floor and box.height() >= height_floor, (name, box)
        assert view_rect.contains(_scene_rect(plots.plots[name])), (name, view_rect)  # nothing off the edge
    # The two columns share the width: a long title no longer widens its own column.
    left, right = boxes["vocab"].width(), boxes["frequency"].width()
    assert abs(left - right) <= 0.1 * max(left, right), (left, right)
    assert abs(boxes["vocab"].width() - boxes["tokens"].width()) < 1  # the left column lines up
    legend = _scene_rect(plots.legend)
    assert plots.legend.isVisible() and view_rect.contains(legend)
    for name, plot in plots.plots.items():
        assert not legend.intersects(_scene_rect(plot)), name  # the legend covers no plot
    full = plots.titles()
    for name, (title, shown, tip) in plots.shown_titles().items():
        assert title == full[name]
        label = plots.plots[name].titleLabel
        assert label.item.boundingRect().width() <= boxes[name].width() + 1, (name, shown)
        assert shown == title or (shown.endswith("…") and title in tip), (name, shown, tip)
        axis = plots.plots[name].getAxis("left")
        labels = axis.labels()
        assert len(labels) == len(set(labels)) and labels, (name, labels)


def test_five_overlaid_runs_keep_every_plot_readable_in_both_themes(make_window, qtbot, five_runs) -> None:
    window = make_window(five_runs)
    window.resize(1280, 800)
    window.show_panel("train")
    panel = window.training
    plots = panel.plots
    ids = panel.history.run_ids()
    assert len(ids) == 5
    panel.history.select(ids)
    wait_for_curves(qtbot, plots, ids)  # each run's points read on a worker, then drawn a plot per turn
    qtbot.waitUntil(lambda: plots.legend.columnCount >= 2, timeout=5000)
    assert "others left out" in plots.titles()["frequency"]
    assert "share no axis" in plots.title_tips()["frequency"]
    for theme in ("light", "dark", "light"):  # ends light: the application's palette outlives this window
        window.set_theme(theme)
        qtbot.wait(50)  # the palette change and the layout run in the event loop
        qtbot.waitUntil(lambda: plots.plots["frequency"].titleLabel.opts.get("color") == plots._fg.name(),
                        timeout=5000)
        _assert_readable(plots)
        # The value plot is WordPiece's score (the first run's): a log axis whose small values show.
        scores = plots.plots["frequency"].getAxis("left").labels()
        assert "0" not in scores and any(s.startswith("0.0") or "e-" in s for s in scores), scores
    # Five runs of legend take at most three rows, in at least two columns.
    assert plots.legend.columnCount >= 2 and plots.legend.layout.rowCount() <= 3


def test_a_narrow_window_elides_titles_and_keeps_their_full_text_in_the_tooltip(make_window, qtbot,
                                                                                five_runs) -> None:
    window = make_window(five_runs)
    window.show_panel("train")
    panel = window.training
    plots = panel.plots
    ids = panel.history.run_ids()
    panel.history.select(ids)
    wait_for_curves(qtbot, plots, ids)  # the legend of several runs is filled in a turn after the curves
    window.resize(1000, 700)
    qtbot.waitUntil(lambda: plots.shown_titles()["frequency"][1].endswith("…"), timeout=5000)
    title, shown, tip = plots.shown_titles()["frequency"]
    assert title.startswith("WordPiece score") and title in tip and "share no axis" in tip
    _assert_readable(plots, width_floor=150, height_floor=80)
    window.resize(1600, 900)  # wide again: the whole title comes back
    qtbot.waitUntil(lambda: plots.shown_titles()["frequency"][1] == title, timeout=5000)


def test_the_compression_plot_says_why_it_is_empty_until_the_corpus_size_is_known(qtbot, five_runs) -> None:
    from workbench.store import ProjectStore
    from workbench.ui.train.plots import TrainingPlots

    with ProjectStore.open(five_runs, readonly=True) as store:
        run = next(r for r in store.runs() if r.name.startswith("bytes BPE"))
        rows = store.steps(run.id)
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(880, 520)
    plots.show()
    qtbot.waitExposed(plots)
    plots.show_runs([(run.id, run.name)])
    plots.append(run.id, rows)
    assert plots.redraw()
    assert plots.no_chars_note.isVisible() and len(plots.curve_data(run.id, "compression")[0]) == 0
    box = plots.plots["compression"].vb.sceneBoundingRect()
    assert box.contains(plots.no_chars_note.sceneBoundingRect())  # centred in the empty plot, not clipped
    plots.set_chars(run.id, 60_000)
    assert plots.redraw()
    assert not plots.no_chars_note.isVisible() and len(plots.curve_data(run.id, "compression")[0]) == len(rows)
