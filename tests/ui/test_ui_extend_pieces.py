"""The Train tab extends a Unigram (SentencePiece) model: a real child runs the extension; the run
holds every base piece at its id, the state line counts new pieces (no merges), the report shows
no unused new piece."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from shared_corpora import CORPORA, require_corpora

from workbench.store import ProjectStore
from workbench.tasks.sources import load_tokenizer

SHOTS = os.environ.get("WORKBENCH_SCREENSHOTS")


def _slice(folder: Path, name: str, count: int) -> Path:
    with open(CORPORA / name, encoding="utf-8") as handle:
        lines = handle.readlines()[:count]
    path = folder / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_extending_a_sentencepiece_model_in_the_window(make_window, qtbot, tmp_path, project):
    require_corpora()
    spm = pytest.importorskip("sentencepiece")
    english = _slice(tmp_path, "en_shakespeare.txt", 1200)
    spm.SentencePieceTrainer.train(input=str(english), model_prefix=str(tmp_path / "base"), vocab_size=600,
                                   model_type="unigram", normalization_rule_name="identity", minloglevel=2)
    ru = _slice(tmp_path, "ru_fortunes.txt", 600)
    window = make_window(project, [ru])
    window.show_panel("train")
    panel = window.training
    panel.extend_radio.setChecked(True)
    box = panel.extend_box
    box.base_combo.setEditText(str(tmp_path / "base.model"))
    box.add_spin.setValue(100)
    with qtbot.waitSignal(panel.run_finished, timeout=180_000) as finished:
        assert panel.start()
    run_id, status = finished.args
    assert status == "finished", panel.error_text()
    with ProjectStore.open(project, readonly=True) as store:
        info = store.run(run_id)
    assert info.settings["extend"]["family"] == "unigram" and info.vocab_size == 700
    base = load_tokenizer(str(tmp_path / "base.model"))
    extended = load_tokenizer(f"{project}#{run_id}")
    assert extended.vocab[:600] == base.vocab
    assert "100 new pieces after the base's 600 ids, |V| 700" in panel.state_label.text()
    dialog = panel.report_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert "<b>100 new tokens</b>" in dialog.summary.text() and "Rank-dead new tokens: <b>0</b>" in dialog.summary.text()
    if SHOTS:
        window.resize(1400, 860)
        qtbot.wait(300)
        panel.plots.redraw()
        assert window.grab().save(str(Path(SHOTS) / "extend-unigram-plots.png"))
        assert dialog.grab().save(str(Path(SHOTS) / "extend-unigram-report.png"))


def test_extending_a_wordpiece_vocabulary_in_the_window(make_window, qtbot, tmp_path, project):
    """A BERT vocab.txt base: the new pieces come after its ids (and the characters it lacked)."""
    require_corpora()
    english = _slice(tmp_path, "en_shakespeare.txt", 1200)
    from workbench.core.wordpiece import WordPieceConfig, train
    from workbench.tasks.spec import CorpusFile
    from workbench.tasks.train import count_words, open_sources

    counts, _ = count_words(open_sources([CorpusFile(str(english))]), "bert", ("bert",))
    base_tok, _ = train(counts, WordPieceConfig(vocab_size=500, normalizer=("bert",)))
    vocab_txt = tmp_path / "vocab.txt"
    vocab_txt.write_text("".join(p.decode("utf-8") + "\n" for p in base_tok.vocab), encoding="utf-8")
    ru = _slice(tmp_path, "ru_fortunes.txt", 400)
    window = make_window(project, [ru])
    window.show_panel("train")
    panel = window.training
    panel.extend_radio.setChecked(True)
    panel.extend_box.base_combo.setEditText(str(vocab_txt))
    panel.extend_box.add_spin.setValue(80)
    with qtbot.waitSignal(panel.run_finished, timeout=180_000) as finished:
        assert panel.start()
    run_id, status = finished.args
    assert status == "finished", panel.error_text()
    with ProjectStore.open(project, readonly=True) as store:
        meta = store.run(run_id).settings["extend"]
    first = 500 + meta["alphabet_added"]
    assert meta["family"] == "wordpiece" and load_tokenizer(f"{project}#{run_id}").vocab[:500] == base_tok.vocab
    assert f"80 new pieces after the base's 500 ids, |V| {first + 80:,}" in panel.state_label.text()
    assert "no merge will be made" not in panel.error_text()  # the base's size is no goal to reach
    dialog = panel.report_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert "Rank-dead new tokens: <b>0</b>" in dialog.summary.text()
    if SHOTS:
        window.resize(1400, 860)
        qtbot.wait(300)
        panel.plots.redraw()
        assert window.grab().save(str(Path(SHOTS) / "extend-wordpiece-plots.png"))
