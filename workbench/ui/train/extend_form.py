"""The Train tab's "Extend an existing tokenizer": the form, and the report of a finished extension.

:class:`ExtendBox` picks the base (a run or reference of the project, or a ``.tiktoken`` /
``tokenizer.json`` / GPT-2 ``vocab.json`` / ``vocab.txt`` / ``.model`` file — the sources
``--tokenizer`` takes; BPE, WordPiece and Unigram), how many tokens
to add and what they may hold, and builds the :class:`~workbench.tasks.extend.ExtendRequest` the
child process runs (``workbench extend --spec``). :class:`ExtensionReport` shows the report that
child prints at the end (computed there, never here): tokens per character per file before and
after, the reference lines whose ids changed with the merge responsible, the rank-dead check.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.tasks.extend import ExtendRequest
from workbench.tasks.spec import CorpusFile

BASE_FILTER = "Tokenizers (*.tiktoken *.json *.model vocab.txt);;All files (*)"


class ExtendBox(QGroupBox):
    """The extension's settings (shown instead of the model, split and size boxes)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Extend an existing tokenizer", parent)
        self.setAccessibleName("Extend an existing tokenizer")
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.base_combo = QComboBox()
        self.base_combo.setEditable(True)
        self.base_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.base_combo.setMinimumContentsLength(10)
        self.base_combo.setToolTip("The tokenizer to extend: a run or reference of this project, or a .tiktoken, "
                                   "tokenizer.json, GPT-2 vocab.json, WordPiece vocab.txt or SentencePiece .model "
                                   "file. Every id of it (and every BPE merge) is kept.")
        self.browse_button = QPushButton("Browse…")
        self.browse_button.clicked.connect(lambda _c=False: self._browse())
        row = QHBoxLayout()
        row.addWidget(self.base_combo, 1)
        row.addWidget(self.browse_button)
        form.addRow("Base", row)
        self.add_spin = QSpinBox()
        self.add_spin.setRange(1, 1_000_000)
        self.add_spin.setValue(2000)
        self.add_spin.setGroupSeparatorShown(True)
        self.add_spin.setToolTip("New tokens, ids after the base's largest: BPE merges after its last one; "
                                 "WordPiece pieces appended; Unigram pieces from the Unigram trainer, scores "
                                 "re-estimated")
        form.addRow("Tokens to add", self.add_spin)
        self.min_freq = QSpinBox()
        self.min_freq.setRange(1, 1_000_000_000)
        self.min_freq.setValue(2)
        self.min_freq.setToolTip("Stop early when no pair occurs this often (BPE, WordPiece; Unigram prunes by EM)")
        form.addRow("Min frequency", self.min_freq)
        self.scripts_edit = QLineEdit()
        self.scripts_edit.setPlaceholderText("any (e.g. Cyrillic,Han)")
        self.scripts_edit.setToolTip("New tokens must hold a whole character of these Unicode scripts: text "
                                     "without them (e.g. English) keeps exactly the base's ids")
        form.addRow("Scripts", self.scripts_edit)
        self.chars_combo = QComboBox()
        for label, value in (("any", ""), ("digits only", "digits"), ("code (ASCII) only", "code")):
            self.chars_combo.addItem(label, value)
        form.addRow("Characters", self.chars_combo)
        self.pad_combo = QComboBox()
        for label, pad in (("no padding", 0), ("multiple of 64", 64), ("multiple of 128", 128)):
            self.pad_combo.addItem(label, pad)
        self.pad_combo.setToolTip("Pad the vocabulary with reserved special tokens <|reserved_N|>, as model code expects")
        form.addRow("Pad vocabulary", self.pad_combo)
        self.reference_edit = QLineEdit()
        self.reference_edit.setPlaceholderText("optional: a base-domain file (e.g. English)")
        self.reference_edit.setToolTip("The report gives the share of this file's lines whose ids change, "
                                       "and the new merge responsible for each")
        form.addRow("Reference", self.reference_edit)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("automatic (base name + N)")
        form.addRow("Run name", self.name_edit)

    def set_sources(self, sources: list[tuple[str, str]]) -> None:
        """The project's runs and references as (label, SRC); a typed or browsed path stays."""
        current = self.base_combo.currentText()
        self.base_combo.clear()
        for label, src in sources:
            self.base_combo.addItem(label, src)
        self.base_combo.setEditText(current)

    def base_source(self) -> str:
        index = self.base_combo.findText(self.base_combo.currentText())
        if index >= 0 and self.base_combo.itemData(index):
            return str(self.base_combo.itemData(index))
        return self.base_combo.currentText().strip()

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Tokenizer to extend", "", BASE_FILTER)
        if path:
            self.base_combo.setEditText(path)

    def request(self, files: tuple[CorpusFile, ...], project: str) -> ExtendRequest:
        """The form as a request (not yet validated)."""
        scripts = tuple(s.strip() for s in self.scripts_edit.text().split(",") if s.strip())
        return ExtendRequest(base=self.base_source(), files=files, add=self.add_spin.value(),
                             min_frequency=self.min_freq.value(), scripts=scripts,
                             chars=str(self.chars_combo.currentData() or ""), pad_to=int(self.pad_combo.currentData()),
                             name=self.name_edit.text().strip(), project=project)

    def reference(self) -> str:
        return self.reference_edit.text().strip()


class ExtensionReport(QDialog):
    """The report ``workbench extend --json`` printed for a finished extension (non-modal)."""

    def __init__(self, result: dict, parent: QWidget | None = None):
        super().__init__(parent)
        report = result.get("report") or {}
        self.setWindowTitle(f"Extension report — run {result.get('run_id')}")
        layout = QVBoxLayout(self)
        skipped = ", ".join(f"{v:,} {k}" for k, v in (report.get("skipped_candidates") or {}).items() if v) or "none"
        summary = (f"<b>{report.get('new_tokens', 0):,} new tokens</b> after the base's "
                   f"{report.get('base_vocab_size', 0):,} ids (vocabulary {result.get('vocab_size', 0):,}"
                   + (f", {result.get('reserved')} reserved" if result.get("reserved") else "") + ").<br>"
                   f"Rank-dead new tokens: <b>{report.get('rank_dead', 0)}</b> · made only as a step of a "
                   f"longer token: {report.get('intermediate_only', 0)} · candidates skipped: {skipped}")
        self.summary = QLabel(summary)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.summary)
        files = report.get("files") or []
        self.files_table = QTableWidget(len(files), 4)
        self.files_table.setHorizontalHeaderLabels(["Language", "Tokens/char before", "Tokens/char after", "File"])
        for row, f in enumerate(files):
            before, after = f.get("tokens_per_char_before", 0.0), f.get("tokens_per_char_after", 0.0)
            change = f" ({100 * (after - before) / before:+.1f} %)" if before else ""
            # a base that cannot spell the file emits few, unknown tokens: say so beside its number
            unknown = int(f.get("unknown_before") or 0)
            unknown_note = f" ({unknown:,} unknown)" if unknown else ""
            path = str(f.get("path", ""))
            for col, value in enumerate((f.get("language", ""), f"{before:.4f}{unknown_note}", f"{after:.4f}{change}",
                                         Path(path).name)):
                item = QTableWidgetItem(value)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                item.setToolTip(path)
                self.files_table.setItem(row, col, item)
        self.files_table.setMaximumHeight(40 + 32 * max(len(files), 1))
        header = self.files_table.horizontalHeader()
        for col in range(3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.files_table.verticalHeader().setVisible(False)
        layout.addWidget(self.files_table)
        reference = report.get("reference")
        if reference:
            share = 100 * float(reference.get("changed_share", 0.0))
            self.reference_label = QLabel(
                f"Reference <b>{html.escape(Path(str(reference.get('path'))).name)}</b>: "
                f"{reference.get('changed_lines', 0):,} of "
                f"{reference.get('lines', 0):,} lines change their ids (<b>{share:.2f} %</b>)")
        else:
            self.reference_label = QLabel("No reference file given: choose one to see which base-domain lines change.")
        self.reference_label.setWordWrap(True)
        layout.addWidget(self.reference_label)
        changes = (reference or {}).get("changes") or []
        self.changes_table = QTableWidget(len(changes), 3)
        self.changes_table.setHorizontalHeaderLabels(["Line", "New id responsible", "Token"])
        for row, change in enumerate(changes):
            for col, value in enumerate((change.get("line"), change.get("new_id"), change.get("token"))):
                item = QTableWidgetItem("" if value is None else str(value))
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                self.changes_table.setItem(row, col, item)
        self.changes_table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.changes_table.verticalHeader().setVisible(False)
        self.changes_table.setVisible(bool(changes))
        layout.addWidget(self.changes_table, 1)
        if not changes:
            layout.addStretch(1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
        self.resize(760, 460)
