"""The Train form's Special roles box: built from the descriptors (one field per role, the
templates, the family's usual roles as placeholders and one button), and a run trained from the
window keeps the roles and template it was given."""

from __future__ import annotations

from workbench.store import ProjectStore
from workbench.tasks.models import FAMILIES, ROLES, TEMPLATES


def test_the_roles_box_follows_the_family_and_its_roles_reach_the_stored_run(make_window, qtbot, project,
                                                                              small_corpus):
    window = make_window(project, small_corpus)
    panel = window.training
    window.show_panel("train")
    box = panel.roles_box
    assert list(box.role_edits) == list(ROLES)
    assert [box.template_combo.itemData(i) for i in range(box.template_combo.count())] == list(TEMPLATES)
    assert box.roles() == {} and box.template() == "none"  # a default run has no roles
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("wordpiece"))
    panel.model_combo.activated.emit(panel.model_combo.currentIndex())
    wordpiece = FAMILIES["wordpiece"]
    assert box.role_edits["cls"].placeholderText() == "[CLS]" and "WordPiece" in box.propose_button.text()
    assert box.roles() == {}  # proposed, not applied
    box.propose_button.click()
    assert box.roles() == dict(wordpiece.proposed_roles) and box.template() == "bert"
    spec = panel.run_spec()
    assert spec.template == "bert" and dict(spec.special_roles) == dict(wordpiece.proposed_roles)
    panel.set_options(vocab_size=400)
    with qtbot.waitSignal(panel.run_finished, timeout=90000) as finished:
        assert panel.start()
    assert finished.args[1] == "finished"
    with ProjectStore.open(project, readonly=True) as store:
        settings = store.runs()[-1].settings
    assert settings["template"] == "bert" and settings["special_roles"] == dict(wordpiece.proposed_roles)
    # Another family: the roles named the previous family's tokens and are cleared.
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("unigram"))
    panel.model_combo.activated.emit(panel.model_combo.currentIndex())
    assert box.roles() == {} and box.template() == "none"
    assert box.role_edits["bos"].placeholderText() == "<s>"
