"""The Train form's "Special roles" box: what each special token is for, and the template.

Built from the descriptors (:mod:`workbench.tasks.models`): one field per role in ``ROLES``, the
templates of ``TEMPLATES``, and the chosen family's usual roles (``proposed_roles`` /
``proposed_template``) shown as placeholders and filled in by one button — never on their own, so
a run without roles exports as it always did. It only collects values: ``RunSpec.validate`` checks
them (a role's token becomes a special token; a template needs the roles it places).
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLineEdit, QPushButton, QWidget

from workbench.tasks.models import ROLES, TEMPLATES, ModelFamily


class SpecialRolesBox(QGroupBox):
    """Role fields, the template list and "Use <family>'s usual roles"."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Special roles", parent)
        self.setObjectName("specialRolesBox")
        self.setAccessibleName("Special roles")
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.template_combo = QComboBox()
        for name, (_before, _after, label) in TEMPLATES.items():
            self.template_combo.addItem(label, name)
        self.template_combo.setToolTip("What the exported tokenizer adds around each text when it encodes "
                                       "(tokenizer.json's post-processor, add_bos_token)")
        self.template_combo.setAccessibleName("Template")
        form.addRow("Template", self.template_combo)
        self.role_edits: dict[str, QLineEdit] = {}
        for role in ROLES:
            edit = QLineEdit()
            edit.setMinimumWidth(120)
            edit.setAccessibleName(f"{role} token")
            edit.setToolTip(f"The special token model code reads as {role}_token (added to the special "
                            "tokens if it is not one yet); empty: no such role")
            form.addRow(role, edit)
            self.role_edits[role] = edit
        self.propose_button = QPushButton("Use the usual roles")
        self.propose_button.clicked.connect(self._use_proposed)
        form.addRow("", self.propose_button)
        self._family: ModelFamily | None = None

    def set_family(self, fam: ModelFamily) -> None:
        """Placeholders and the button follow the chosen family's usual roles."""
        self._family = fam
        for role, edit in self.role_edits.items():
            edit.setPlaceholderText(fam.proposed_roles.get(role, ""))
        self.propose_button.setText(f"Use {fam.label}'s usual roles")
        self.propose_button.setToolTip(", ".join(f"{r}={t}" for r, t in fam.proposed_roles.items())
                                       + f"; template {fam.proposed_template}")

    def _use_proposed(self, _checked: bool = False) -> None:
        if self._family is not None:
            self.set_values(dict(self._family.proposed_roles), self._family.proposed_template)

    def roles(self) -> dict[str, str]:
        return {role: edit.text().strip() for role, edit in self.role_edits.items() if edit.text().strip()}

    def template(self) -> str:
        return str(self.template_combo.currentData() or "none")

    def set_values(self, roles: dict, template: str) -> None:
        for role, edit in self.role_edits.items():
            value = roles.get(role, "") if isinstance(roles, dict) else ""
            edit.setText(value if isinstance(value, str) else "")
        index = self.template_combo.findData(template)
        self.template_combo.setCurrentIndex(max(index, 0))

    def clear(self) -> None:
        self.set_values({}, "none")
