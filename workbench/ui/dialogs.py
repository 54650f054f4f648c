"""Small dialogs: export a run, the keyboard shortcuts, About.

What it leaves out: the export itself (``workbench.formats.export_tokenizer``, run off the GUI
thread by the main window) — a dialog only collects choices. Which formats fit a run is
``workbench.formats.export.formats_for``'s answer; the dialog greys out the others and says why.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence, cast

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpacerItem,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.formats.export import formats_for, why_not
from workbench.store import RunInfo
from workbench.tasks.models import FAMILIES

FAMILY_NAMES = {name: f.label for name, f in FAMILIES.items()}
EXPORT_FORMATS = {
    "hf": ("Hugging Face tokenizer.json", "tokenizer.json", "JSON (*.json)"),
    "hf-folder": ("Hugging Face folder (tokenizer.json + tokenizer_config.json, for AutoTokenizer)", "", ""),
    "gpt2": ("GPT-2 vocab.json + merges.txt (a folder)", "", ""),
    "tiktoken": ("tiktoken ranks (.tiktoken + JSON sidecar)", "{name}.tiktoken", "tiktoken (*.tiktoken)"),
    "wordpiece": ("WordPiece vocab.txt", "vocab.txt", "Text (*.txt)"),
    "spm": ("SentencePiece model (.model)", "{name}.model", "SentencePiece (*.model)"),
    "spm-vocab": ("SentencePiece-style .vocab", "{name}.vocab", "Vocab (*.vocab)"),
    "merges-csv": ("Merge table as CSV", "{name}-merges.csv", "CSV (*.csv)"),
}


class ExportDialog(QDialog):
    """Choose a run, a format and where to write it."""

    def __init__(self, runs: Sequence[RunInfo], selected: int | None, folder: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export tokenizer")
        self.setMinimumWidth(560)
        self.folder = folder
        self.runs = {run.id: run for run in runs}
        form = QFormLayout()
        self.run_combo = QComboBox()
        for run in sorted(runs, key=lambda r: -r.id):
            if run.merge_count > 0 or run.status == "finished":
                self.run_combo.addItem(f"{run.name} — run {run.id}, {run.status}, |V| {run.vocab_size:,}", run.id)
        if selected is not None:
            i = self.run_combo.findData(selected)
            if i >= 0:
                self.run_combo.setCurrentIndex(i)
        form.addRow("Run", self.run_combo)
        self.format_combo = QComboBox()
        for key, (label, _name, _filter) in EXPORT_FORMATS.items():
            self.format_combo.addItem(label, key)
        form.addRow("Format", self.format_combo)
        # The formats this run's family cannot be loaded from with the same ids, and why.
        self.not_offered = QLabel()
        self.not_offered.setWordWrap(True)
        self.not_offered.setTextFormat(Qt.TextFormat.RichText)
        self.not_offered.setObjectName("exportNotOffered")
        row = QHBoxLayout()
        self.path_edit = QLineEdit()
        browse = QPushButton("Browse…")
        browse.clicked.connect(lambda _c=False: self._browse())
        row.addWidget(self.path_edit, 1)
        row.addWidget(browse)
        form.addRow("Write to", row)
        self.force_check = QCheckBox("Replace existing files")
        form.addRow("", self.force_check)
        self.note = QLabel("The export is checked against the real library (tokenizers / tiktoken) where installed.")
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.not_offered)  # full width: in a form row its wrapped height came out wrong
        layout.addWidget(self.note)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.format_combo.currentIndexChanged.connect(lambda _i: self._suggest())
        self.run_combo.currentIndexChanged.connect(lambda _i: self._offer_formats())
        self.path_edit.textChanged.connect(lambda _t: self._validate())
        self._offer_formats()

    def _offer_formats(self) -> None:
        """Enable the formats that fit the chosen run, grey out the others with their reason (in the
        item's tooltip and in a note under the list), and keep the choice when it still fits."""
        run = self.runs.get(self.run_combo.currentData())
        model = (run.settings.get("model") if run else None) or "bpe"
        settings = run.settings if run else None
        fitting = formats_for(model, settings)
        combo_model = cast(QStandardItemModel, self.format_combo.model())  # QComboBox's own model
        current = self.format_combo.currentData()
        lines = []
        for index in range(self.format_combo.count()):
            fmt = self.format_combo.itemData(index)
            reason = why_not(model, fmt, settings)
            item = combo_model.item(index)
            item.setEnabled(not reason)
            item.setToolTip(f"Not offered for this run: {reason}" if reason else "")
            if reason:
                lines.append(f"•&nbsp;<b>{html.escape(EXPORT_FORMATS[fmt][0])}</b> — {html.escape(reason)}")
        family = FAMILY_NAMES.get(model, model)
        self.not_offered.setText(f"Not offered for this {family} run:<br>" + "<br>".join(lines) if lines else "")
        self.not_offered.setVisible(bool(lines))
        if fitting and current not in fitting:
            self.format_combo.setCurrentIndex(self.format_combo.findData(fitting[0]))
        self._suggest()

    def _slug(self) -> str:
        text = self.run_combo.currentText().split(" — ")[0] or "tokenizer"
        return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in text).strip("-")[:60] or "tokenizer"

    def _suggest(self) -> None:
        fmt = self.fmt
        name = EXPORT_FORMATS[fmt][1].format(name=self._slug()) or f"{self._slug()}-{fmt}"
        self.path_edit.setText(str(Path(self.folder) / name))
        self._validate()

    def _browse(self) -> None:
        fmt = self.fmt
        if fmt in ("gpt2", "hf-folder"):
            path = QFileDialog.getExistingDirectory(self, "Folder for the tokenizer files", self.folder)
        else:
            path, _ = QFileDialog.getSaveFileName(self, "Export to", self.path_edit.text(), EXPORT_FORMATS[fmt][2])
        if path:
            self.path_edit.setText(path)

    def _validate(self) -> None:
        run = self.runs.get(self.run_combo.currentData())
        fits = run is None or not why_not(run.settings.get("model") or "bpe", self.fmt, run.settings)
        ok = self.run_combo.count() > 0 and bool(self.path_edit.text().strip()) and fits
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)
        if self.run_combo.count() == 0:
            self.note.setText("There is no run with merges to export yet: train one first.")

    @property
    def fmt(self) -> str:
        return self.format_combo.currentData()

    def choice(self) -> tuple[int, str, str, bool]:
        return self.run_combo.currentData(), self.fmt, self.path_edit.text().strip(), self.force_check.isChecked()


def fit_title(dialog: QDialog, extra: int = 160) -> None:
    """Make ``dialog`` at least as wide as its title needs: a window manager clips a title that is
    wider than the dialog ("Cannot import the tok…"). A message box sizes itself from its text and
    ignores a minimum width, so it gets a spacer in its grid instead."""
    width = dialog.fontMetrics().horizontalAdvance(dialog.windowTitle()) + extra
    layout = dialog.layout()
    if isinstance(layout, QGridLayout):
        layout.addItem(QSpacerItem(width, 0, QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Minimum),
                       layout.rowCount(), 0, 1, layout.columnCount())
    else:
        dialog.setMinimumWidth(max(dialog.minimumWidth(), width))


def short_message(message: str, limit: int = 110) -> str:
    """A status-bar line: the first ``limit`` characters (the whole text goes in its tooltip)."""
    return message if len(message) <= limit else message[: limit - 1].rstrip() + "…"


def shortcuts_dialog(rows: Sequence[tuple[str, str]], parent: QWidget | None = None) -> QDialog:
    dialog = QDialog(parent)
    dialog.setWindowTitle("Keyboard shortcuts")
    dialog.setMinimumSize(620, 480)
    table = QTableWidget(len(rows), 2)
    table.setHorizontalHeaderLabels(["Action", "Shortcut"])
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    table.setAlternatingRowColors(True)
    table.setShowGrid(False)
    # The action names take the width they need (they were wrapped into two lines); the keys,
    # some of which list several sequences, get the rest and elide with a tooltip.
    table.setWordWrap(False)
    table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
    table.setAccessibleName("Keyboard shortcuts")
    for i, (action, keys) in enumerate(rows):
        table.setItem(i, 0, QTableWidgetItem(action))
        item = QTableWidgetItem(keys)
        item.setToolTip(keys)
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        table.setItem(i, 1, item)
    layout = QVBoxLayout(dialog)
    layout.addWidget(table)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout.addWidget(buttons)
    return dialog
