"""The pre-export check as the window shows it: the warnings, before anything is written.

File ▸ Export runs :func:`workbench.tasks.export_check.check_run` off the GUI thread once the
export dialog is confirmed; when it warns, this dialog lists each warning (its rule as a title, its
one-line reason) with **Export anyway** and **Cancel**. A clean check shows nothing and exports at
once. The dialog only displays findings; it computes none.
"""

from __future__ import annotations

import html
from typing import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QScrollArea, QVBoxLayout, QWidget

from workbench.tasks.export_check import Finding

#: Each rule's title in the list.
RULE_TITLES = {
    "merges-space": "Merges that merges.txt cannot hold",
    "ill-formed-utf8": "Ill-formed UTF-8 pieces",
    "unreachable": "Unreachable tokens",
    "special-in-corpus": "Special tokens found in the corpus",
    "vocab-multiple": "Vocabulary size not a multiple of 64",
    "llama-cpp": "Pre-tokenizer unknown to llama.cpp",
}


class ExportCheckDialog(QDialog):
    """The warnings of one export, and the choice to write it anyway."""

    def __init__(self, findings: Sequence[Finding], what: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("exportCheckDialog")
        self.setWindowTitle("Before exporting")
        self.setMinimumWidth(600)
        self.findings = list(findings)
        layout = QVBoxLayout(self)
        count = len(self.findings)
        self.header = QLabel(f"<b>{html.escape(what)}</b>: the pre-export check found {count} "
                             f"warning{'s' if count != 1 else ''}. The export itself loads and gives the "
                             "workbench's ids; these are problems the next tool or the model will meet.")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.header)
        self.list_label = QLabel("<br><br>".join(
            f"⚠&nbsp;<b>{html.escape(RULE_TITLES.get(f.rule, f.rule))}</b><br>{html.escape(f.message)}"
            for f in self.findings))
        self.list_label.setObjectName("exportCheckFindings")
        self.list_label.setWordWrap(True)
        self.list_label.setTextFormat(Qt.TextFormat.RichText)
        self.list_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.list_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.list_label.setContentsMargins(10, 8, 10, 8)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.list_label)
        scroll.setMinimumHeight(220)
        layout.addWidget(scroll, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export anyway")
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
