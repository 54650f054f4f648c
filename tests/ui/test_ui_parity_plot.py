"""A parity-aware BPE run trained from the Train tab shows each language's characters per token on
its development text, one curve per language in the compression plot, named in a legend — live, and
again from the stored run when the project is opened again; a point per merge, ending at the run's
``parity_chars_per_token`` — which equals the development text encoded by the finished tokenizer. With WORKBENCH_SCREENSHOTS set
to a folder, the test leaves its grabs there (light and dark theme)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
from parallel_text import write_parallel
from shared_corpora import CORPORA, require_corpora

from workbench.core.encoder import Encoder
from workbench.store import ProjectStore

SHOTS = os.environ.get("WORKBENCH_SCREENSHOTS")  # a folder: the test leaves its grabs there


def _slices(folder: Path) -> tuple[list[Path], dict[str, Path]]:
    """Training files (300 lines) of English and German; the parallel development set (UDHR 1-5)."""
    train = []
    for lang, name in (("en", "en_shakespeare.txt"), ("de", "de_zitate.txt")):
        lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
        train.append(folder / f"{lang}_train.txt")
        train[-1].write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    return train, dict(zip(("en", "de"), write_parallel(folder, ("en", "de"))))


def _chars_per_token(tokenizer, path: Path) -> float:
    """Characters per token of a whole file (its line ends too) encoded by the finished tokenizer."""
    text = path.read_text(encoding="utf-8")
    return len(text) / len(Encoder(tokenizer).encode(text))


def test_a_parity_run_draws_one_curve_per_language_ending_at_its_stored_numbers(make_window, qtbot, tmp_path,
                                                                                 project):
    require_corpora()
    train, dev = _slices(tmp_path)
    window = make_window(project, train)
    window.resize(1400, 860)
    window.show_panel("train")
    panel = window.training
    index = panel.model_combo.findData("parity-bpe")
    assert index >= 0
    panel.model_combo.setCurrentIndex(index)
    assert panel.option_widgets["parity_dev"].isVisibleTo(panel)
    panel.option_widgets["parity_dev"].setText(f"{dev['en']},{dev['de']}")
    panel.option_widgets["parity_global_merges"].setValue(20)
    panel.set_options(vocab_size=420, pretokenizer="gpt2")
    with qtbot.waitSignal(panel.run_finished, timeout=120_000) as finished:
        assert panel.start()
    run_id, status = finished.args
    assert status == "finished", panel.error_text()
    with ProjectStore.open(project, readonly=True) as store:
        run = store.run(run_id)
        tokenizer = store.load_tokenizer(run_id)
    settings = run.settings
    stored = settings["parity_chars_per_token"]
    assert list(stored) == ["en", "de"]
    steps = len(tokenizer.merges)
    assert steps > 100
    # The stored end numbers are the development text under the finished tokenizer.
    for lang, path in dev.items():
        assert abs(stored[lang] - _chars_per_token(tokenizer, path)) < 1e-5, lang

    # Live: the curves drawn while it trained.
    plots = panel.plots
    qtbot.waitUntil(lambda: plots.last_step(run.id) == steps and plots.runs[run.id].parity is not None
                    and plots.runs[run.id].parity.n == steps, timeout=15_000)
    plots.redraw()
    live = plots.parity_data(run.id)

    # Reopened: the same curves, read from the stored run.
    window.shutdown()
    window = make_window(project)
    window.resize(1400, 860)
    window.show_panel("train")
    plots = window.training.plots
    qtbot.waitUntil(lambda: plots.has_run(run.id) and plots.last_step(run.id) == steps
                    and plots.runs[run.id].parity is not None and plots.runs[run.id].parity.n == steps,
                    timeout=15_000)
    plots.redraw()
    curves = plots.parity_data(run.id)
    assert list(live) == list(curves) and all(np.array_equal(live[k][1], curves[k][1]) for k in curves)
    assert list(curves) == ["en", "de"]
    for lang, (x, y) in curves.items():
        assert len(x) == len(y) == steps
        assert x[0] == 1 and x[-1] == steps and np.all(np.diff(x) == 1)
        assert y[-1] == stored[lang]
        assert np.all(np.isfinite(y)) and y[-1] > y[0]  # merges only ever shorten the text
        # A point mid-run: the development text under the first k merges, encoded independently.
        k = steps // 2
        first_k = dataclasses.replace(tokenizer, merges=tokenizer.merges[:k])
        assert abs(y[k - 1] - _chars_per_token(first_k, dev[lang])) < 1e-5, (lang, k)
    assert [item.text for _sample, item in plots.parity_legend.items] == ["training text", "en (dev)", "de (dev)"]
    assert plots.parity_legend.isVisible()
    pens = [item.opts["pen"].color().name() for item in plots.runs[run.id].parity_items.values()]
    assert len(set(pens)) == 2 and plots.runs[run.id].colour not in pens
    assert plots.titles()["compression"].startswith("Characters per token")
    # The compression plot's range holds every language's curve.
    (_x0, _x1), (y0, y1) = plots.plots["compression"].vb.viewRange()
    assert y0 <= min(float(y.min()) for _x, y in curves.values()) and y1 >= max(stored.values())
    if SHOTS:
        qtbot.wait(300)
        assert plots.grab().save(str(Path(SHOTS) / "parity-train-plots.png"))
        window.set_theme("dark")
        qtbot.wait(300)
        plots.redraw()
        assert plots.grab().save(str(Path(SHOTS) / "parity-train-plots-dark.png"))
    hover = plots.hover_at(steps // 2, "compression")
    half = curves["en"][1][steps // 2 - 1], curves["de"][1][steps // 2 - 1]
    assert f"dev chars/tok: en {half[0]:.2f} · de {half[1]:.2f}" in hover


def test_two_parity_runs_share_language_colours_and_differ_in_line_style(qtbot):
    from workbench.store import StepRow
    from workbench.ui.train.plots import TrainingPlots

    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(900, 560)
    plots.show()
    plots.show_runs([(1, "first"), (2, "second")])
    for rid, base in ((1, 1.0), (2, 1.5)):
        plots.append(rid, [StepRow(s, 256 + s, 1000 - s, 50,
                                   {"parity_cpt": {"en": base + s / 100, "de": base + s / 90}}) for s in range(1, 41)])
    qtbot.waitUntil(lambda: (plots.redraw(), plots.parity_data(2)["de"][0].size == 40)[1], timeout=5_000)
    assert plots.parity_data(2)["de"][1][-1] == 1.5 + 40 / 90
    pens = {(rid, lang): item.opts["pen"] for rid in (1, 2) for lang, item in plots.runs[rid].parity_items.items()}
    assert pens[1, "en"].color() == pens[2, "en"].color() != pens[1, "de"].color()
    assert pens[1, "en"].style() == pens[1, "de"].style() != pens[2, "en"].style()  # the runs' line styles
    assert [item.text for _sample, item in plots.parity_legend.items] == ["en (dev)", "de (dev)"]
    assert not plots.no_chars_note.isVisible()  # the plot is not empty: the languages' curves are there
    plots.show_runs([(2, "second")])  # one run left: a line style per language, and its training text
    pens2 = [item.opts["pen"].style() for item in plots.runs[2].parity_items.values()]
    assert pens2[0] != pens2[1]
    assert [item.text for _sample, item in plots.parity_legend.items] == ["training text", "en (dev)", "de (dev)"]
