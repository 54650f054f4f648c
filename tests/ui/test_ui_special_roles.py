"""The Train form's Special roles box: built from the descriptors (one field per role, the
templates, the family's usual roles as placeholders and one button), and the spec the window hands
its training child carries the roles and template (the child's storing of them is the CLI's, tested
in tests/formats/test_fmt_hf_folder.py)."""

from __future__ import annotations

from workbench.tasks.models import FAMILIES, ROLES, TEMPLATES
from workbench.tasks.spec import RunSpec


def test_the_roles_box_follows_the_family_and_its_roles_reach_the_run_spec(make_window, qtbot, project,
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
    spec = RunSpec.from_json(panel.run_spec().to_json()).validate()  # as the training child reads it
    assert spec.settings()["template"] == "bert"
    assert spec.settings()["special_roles"] == dict(wordpiece.proposed_roles)
    panel.save_form()  # the form comes back with its roles
    assert panel.form_state()["special_roles"] == dict(wordpiece.proposed_roles)
    box.role_edits["cls"].clear()  # a template without the roles it places is refused, its control marked
    assert not panel.start()
    assert panel.marked_field == "template" and "cls" in panel.error_text()
    # Another family: the roles named the previous family's tokens and are cleared.
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("unigram"))
    panel.model_combo.activated.emit(panel.model_combo.currentIndex())
    assert box.roles() == {} and box.template() == "none"
    assert box.role_edits["bos"].placeholderText() == "<s>"
