"""The Train tab's pre-flight panel: a long run is estimated first; with too little memory it warns,
offers a sample, and the sampled run trains and shows its actual ÷ estimate in the run history."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QMessageBox

from workbench.store import ProjectStore
from workbench.tasks import calibration, preflight


@pytest.fixture(autouse=True)
def rates(tmp_path, monkeypatch):
    """The development machine's rates, cached as this machine's: no calibration run in tests."""
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"key": calibration.machine_key(),
                                "rates": calibration._rates_dict(calibration.DEFAULT_RATES)}))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))


@pytest.fixture
def corpus_slice(corpora, tmp_path):
    src = next(p for p in corpora if p.name.startswith("en_shakespeare"))
    data = src.read_bytes()[:120_000]
    out = tmp_path / "shakespeare.txt"
    out.write_bytes(data[: data.rfind(b"\n") + 1])
    return out


def test_long_run_is_estimated_warned_and_trained_on_a_sample(make_window, qtbot, project, corpus_slice,
                                                              monkeypatch, answer):
    monkeypatch.setattr(preflight, "PREFLIGHT_BYTES", 1)  # every run counts as long here
    monkeypatch.setattr(preflight, "available_memory", lambda: 20 << 20)  # 20 MB free
    window = make_window(project, [corpus_slice])
    panel = window.training
    panel.set_options(vocab_size=500, pretokenizer="gpt2", units="bytes")
    window.show_panel("train")
    box = answer(QMessageBox.StandardButton.No)  # "Start anyway?" — no
    assert panel.start()
    qtbot.waitUntil(lambda: bool(box.texts), timeout=30000)
    assert "exceeds the 20.0 MB free" in box.texts[0] and "--sample-lines" in box.texts[0]
    assert not panel.is_training()
    pre = panel.preflight
    assert pre.warning.isVisible() and pre.remedies.isVisible()
    assert "distinct pre-tokens" in pre.text.text() and "Not enough memory" in pre.warning.text()
    assert "examples/dask_count.py" in pre.warning.text()

    # The remedy: a sample whose projected peak fits; then there is memory enough.
    pre.sample_button.click()
    lines = panel.sample_lines_spin.value()
    assert 1000 <= lines < pre.estimate.lines
    monkeypatch.setattr(preflight, "available_memory", lambda: 16 << 30)
    with qtbot.waitSignal(panel.run_finished, timeout=60000) as finished:
        assert panel.start()  # the spec changed (a sample): estimated again, then started
    run_id, status = finished.args
    assert status == "finished" and not pre.warning.isVisible()
    assert f"sample: {lines:,} of" in pre.text.text()
    with ProjectStore.open(project, readonly=True) as store:
        run = store.run(run_id)
    assert run.settings["sample_lines"] == lines and run.settings["sampled_from_lines"] > lines
    qtbot.waitUntil(lambda: panel.history.item_for(run_id) is not None
                    and "mem ×" in panel.history.item_for(run_id).text(6), timeout=10000)
    assert "actual ÷ estimate" in panel.history.item_for(run_id).toolTip(0)


def test_estimate_button_estimates_any_run(make_window, qtbot, project, corpus_slice):
    window = make_window(project, [corpus_slice])
    panel = window.training
    panel.set_options(vocab_size=400)
    with qtbot.waitSignal(panel.preflight.estimated, timeout=30000) as got:
        panel.preflight.estimate_button.click()
    est = got.args[0]
    assert est.exact and est.distinct > 1000 and not panel.preflight.warning.isVisible()
    assert f"~{est.distinct:,}" in panel.preflight.text.text()
    assert not panel.is_training()  # estimating starts nothing
