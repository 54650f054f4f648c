"""The Train form follows the model families' descriptors and keeps its state (issue 19).

The model and every family's options come back after a restart (it used to come back as BPE with
Unigram's settings, and F5 trained what nobody chose); Unigram's fixed split stays disabled after
the preview's refresh; the README's first session makes a meaningful WordPiece run or says why not;
a running Unigram run shows its size and a cancelled one says that its model is a cut. Every check
runs after the event loop has.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.corpus.demo import demo_corpus_files
from workbench.store import ProjectStore
from workbench.tasks.models import FAMILIES
from workbench.ui.settings import AppSettings


def _choose(panel, model: str) -> None:
    """As a user picks a model: the combo's index, then its ``activated`` (the user's choice only)."""
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(model))
    panel.model_combo.activated.emit(panel.model_combo.currentIndex())


def _settle(qtbot, panel) -> None:
    """Let the preview's 150 ms refresh run and come back (it re-enabled the pre-tokenizer list once).
    The split runs on a worker: wait for its result to be delivered, not a fixed 400 ms (under load the
    worker can take longer, and the assertions then saw the form before the refresh)."""
    qtbot.waitUntil(lambda: not panel._preview_timer.isActive() and not panel.previewer.jobs.busy(),
                    timeout=30000)


def test_the_form_comes_back_with_its_model_and_options(make_window, qtbot, project, small_corpus):
    window = make_window(project, small_corpus)
    panel = window.training
    window.show_panel("train")
    _choose(panel, "unigram")
    panel.option_widgets["byte_fallback"].setChecked(True)
    panel.option_widgets["max_piece_length"].setValue(8)
    window.shutdown()  # the form is kept when the window closes, trained or not

    again = make_window(project, small_corpus)
    form = again.training
    again.show_panel("train")
    _settle(qtbot, form)
    assert form.model_combo.currentData() == "unigram"
    assert form.option_widgets["byte_fallback"].isChecked() and form.option_widgets["max_piece_length"].value() == 8
    assert form.option_widgets["byte_fallback"].isVisibleTo(form)
    assert not form.option_widgets["wordpiece_score"].isVisibleTo(form)
    assert not form.pre_combo.isEnabled() and not form.units_combo.isVisibleTo(form)
    spec = form.run_spec().validate()  # what F5 would train: the model that was chosen
    assert (spec.model, spec.pretokenizer, spec.options["byte_fallback"]) == ("unigram", "metaspace", True)


def test_a_form_saved_without_its_model_comes_back_as_the_model_it_was_set_up_for(make_window, qtbot, project):
    AppSettings().train_settings = {"units": "chars", "pretokenizer": "metaspace", "tie_break": "hf",
                                    "normalize": "none", "vocab_size": 3000}  # as earlier versions kept it
    window = make_window(project)
    panel = window.training
    _settle(qtbot, panel)
    assert panel.model_combo.currentData() == "unigram" and panel.size_spin.value() == 3000
    assert not panel.pre_combo.isEnabled()


def test_unigram_keeps_the_pretokenizer_list_disabled_after_the_preview_refresh(make_window, qtbot, project):
    window = make_window(project)
    panel = window.training
    window.show_panel("train")
    _choose(panel, "unigram")
    panel.sample_edit.setText("Hello world, naïve café")  # a refresh 150 ms later
    _settle(qtbot, panel)
    assert "▁Hello" in panel.preview_text()
    assert not panel.pre_combo.isEnabled() and panel.pre_combo.currentData() == "metaspace"
    assert FAMILIES["unigram"].why_not["pretokenizer"] in panel.pre_combo.toolTip()
    _choose(panel, "bpe")
    _settle(qtbot, panel)
    assert panel.pre_combo.isEnabled() and panel.pre_combo.currentData() == "gpt2"


def test_the_readme_first_session_trains_a_wordpiece_that_merges_or_says_why_not(make_window, qtbot, project):
    window = make_window(project, demo_corpus_files())
    panel = window.training
    window.show_panel("train")
    assert panel.size_spin.value() == FAMILIES["bpe"].defaults["vocab_size"]  # README step 2: F5 on BPE 1,000
    with qtbot.waitSignal(panel.run_finished, timeout=120000) as bpe:
        assert panel.start()
    assert bpe.args[1] == "finished"
    _choose(panel, "wordpiece")  # step 3: its settings fill in, and its size with them
    assert panel.size_spin.value() == FAMILIES["wordpiece"].defaults["vocab_size"]
    with qtbot.waitSignal(panel.run_finished, timeout=120000) as wordpiece:
        qtbot.keyClick(window, Qt.Key.Key_F5)
    run_id, status = wordpiece.args
    assert status == "finished"
    with ProjectStore.open(project, readonly=True) as store:
        info = store.run(run_id)
    assert info.settings["model"] == "wordpiece" and info.merge_count > 500, info.merge_count
    assert "merges" in panel.state_label.text() and panel.error_text() == ""
    # A size the corpus's alphabet already fills: the window says why nothing merges.
    panel.set_options(vocab_size=600)  # the demo corpus's lowercased alphabet and ## forms: ~980
    with qtbot.waitSignal(panel.run_finished, timeout=120000) as small:
        assert panel.start()
    assert small.args[1] == "finished"
    qtbot.waitUntil(lambda: "no merge will be made" in panel.error_text(), timeout=5000)
    assert "raise the vocabulary size above" in panel.error_text() and "--" not in panel.error_text()


def test_a_running_unigram_shows_its_size_and_a_cancelled_one_says_it_was_cut(make_window, qtbot, project):
    window = make_window(project, demo_corpus_files())
    panel = window.training
    window.show_panel("train")
    _choose(panel, "unigram")
    panel.set_options(vocab_size=1000)
    assert panel.start()
    qtbot.waitUntil(lambda: int(panel._last_progress.get("step", 0)) >= 2, timeout=120000)
    qtbot.waitUntil(lambda: panel.history.tree.topLevelItem(0) is not None
                    and int(panel.history.tree.topLevelItem(0).text(2).replace(",", "") or 0) > 1000, timeout=10000)
    assert "EM rounds and pruning, step" in panel.state_label.text()
    assert "merges" not in panel.progress.format()
    with qtbot.waitSignal(panel.run_finished, timeout=120000) as finished:
        panel.cancel()
    run_id, status = finished.args
    assert status == "cancelled"
    qtbot.waitUntil(lambda: "cut to" in panel.progress.format(), timeout=10000)
    assert "cancelled at step" in panel.state_label.text() and "cut to 1,000 pieces" in panel.state_label.text()
    assert panel.progress.value() < 1000  # not shown as complete
    item = panel.history.tree.topLevelItem(0)
    assert "cancelled at |V|" in item.toolTip(0) and "tie-break" not in item.toolTip(0)
