"""A parity-aware BPE run shows each language's characters per token on its development text, one
curve per language in the Train tab's compression plot, named in a legend; the curves come from the
stored run (reopened), have a point per merge, and end at the run's ``parity_chars_per_token`` —
which equals the development text encoded by the finished tokenizer. With WORKBENCH_SCREENSHOTS set
to a folder, the test leaves its grabs there (light and dark theme)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from shared_corpora import CORPORA, require_corpora

from workbench.core.encoder import Encoder
from workbench.store import ProjectStore

SHOTS = os.environ.get("WORKBENCH_SCREENSHOTS")  # a folder: the test leaves its grabs there


def _slices(folder: Path) -> dict[str, Path]:
    """Training (300 lines) and development (100 other lines) files of English and German."""
    dev = {}
    for lang, name in (("en", "en_shakespeare.txt"), ("de", "de_zitate.txt")):
        lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
        (folder / f"{lang}_train.txt").write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
        dev[lang] = folder / f"{lang}_dev.txt"
        dev[lang].write_text("\n".join(lines[1000:1100]) + "\n", encoding="utf-8")
    return dev


def _chars_per_token(tokenizer, path: Path) -> float:
    """Characters per token of a whole file (its line ends too) encoded by the finished tokenizer."""
    text = path.read_text(encoding="utf-8")
    return len(text) / len(Encoder(tokenizer).encode(text))


def test_a_parity_run_draws_one_curve_per_language_ending_at_its_stored_numbers(make_window, qtbot, tmp_path,
                                                                                 project):
    require_corpora()
    dev = _slices(tmp_path)
    done = subprocess.run([sys.executable, "-m", "workbench", "train", "en_train.txt", "de_train.txt",
                           "--model", "parity-bpe", "--parity-dev", "en_dev.txt,de_dev.txt",
                           "--parity-global-merges", "20", "--vocab-size", "420", "--project", str(project)],
                          capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stderr
    with ProjectStore.open(project, readonly=True) as store:
        (run,) = store.runs()
        tokenizer = store.load_tokenizer(run.id)
    settings = run.settings
    stored = settings["parity_chars_per_token"]
    assert list(stored) == ["en", "de"]
    steps = len(tokenizer.merges)
    assert steps > 100
    # The stored end numbers are the development text under the finished tokenizer.
    for lang, path in dev.items():
        assert abs(stored[lang] - _chars_per_token(tokenizer, path)) < 1e-5, lang

    window = make_window(project)
    window.resize(1400, 860)
    window.show_panel("train")
    plots = window.training.plots
    qtbot.waitUntil(lambda: plots.has_run(run.id) and plots.last_step(run.id) == steps
                    and plots.runs[run.id].parity is not None and plots.runs[run.id].parity.n == steps,
                    timeout=15_000)
    plots.redraw()
    curves = plots.parity_data(run.id)
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
