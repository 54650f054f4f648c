"""The first-run guide: a dismissible banner that walks through the tabs in the order of the work.

Shown when the demo opens (Corpus → Train → Inspect → Merges → Compare → Export), one step at a
time, each with a button that shows the tab it talks about. Non-modal: the window stays usable
while it is open. "Don't show again" is the caller's to store (``AppSettings.show_guide``); Help ▸
Show Guide brings it back.

What it leaves out: where it sits in the window and what "show me" does — it emits the tab's key
(or ``"export"``) and the main window acts on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QCheckBox, QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget


@dataclass(frozen=True)
class Step:
    key: str     # the tab it shows ("corpus", "train", …) or "export"
    title: str
    body: str


STEPS: tuple[Step, ...] = (
    Step("corpus", "Corpus", "The demo corpus (English, German, Russian, Chinese) is loaded. Add your own "
         "text files, JSONL or CSV here; each file is checked before training."),
    Step("train", "Train", "Press Train (F5). The curves fill in while the vocabulary grows; pause (F6) or "
         "cancel (Shift+F5) at any time — the merges made so far are kept."),
    Step("inspect", "Inspect", "Type or paste text and see how it splits: hover a token for its id and "
         "merges, add columns to compare tokenizers side by side."),
    Step("merges", "Merges", "Browse every merge in training order, filter the pieces (Ctrl+F) and follow a "
         "token back to the bytes it was built from."),
    Step("compare", "Compare", "Measure tokenizers on corpora: tokens per word, compression, and how "
         "fairly each language is treated."),
    Step("export", "Export", "File ▸ Export Tokenizer (Ctrl+E) writes tokenizer.json, GPT-2 files, "
         ".tiktoken or vocab.txt that the real libraries load as they are."),
)


class GuideBanner(QFrame):
    """One step of the guide with Back / Next, "Show me", "Don't show again" and a close button."""

    go_to = Signal(str)      # the step's key: show that tab (or the export dialog)
    dismissed = Signal(bool)  # closed; True when "Don't show again" was ticked

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("guideBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Getting started guide")
        self.index = 0
        self.step_label = QLabel()
        self.step_label.setAccessibleName("Guide step")
        self.body = QLabel()
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setMinimumWidth(240)
        self.show_button = QPushButton("Show me")
        self.show_button.clicked.connect(self._on_show)
        self.back_button = QPushButton("Back")
        self.back_button.clicked.connect(lambda _c=False: self.set_step(self.index - 1))
        self.next_button = QPushButton("Next")
        self.next_button.clicked.connect(self._on_next)
        self.dont_show = QCheckBox("Don't show again")
        self.close_button = QToolButton()
        self.close_button.setText("×")
        self.close_button.setToolTip("Close the guide (Help ▸ Show Guide brings it back)")
        self.close_button.setAccessibleName("Close the guide")
        self.close_button.clicked.connect(self.dismiss)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        row.addWidget(self.step_label)
        row.addWidget(self.body, 1)
        for widget in (self.show_button, self.back_button, self.next_button, self.dont_show, self.close_button):
            row.addWidget(widget)
        self.set_step(0)

    @property
    def step(self) -> Step:
        return STEPS[self.index]

    def set_step(self, index: int) -> None:
        self.index = max(0, min(index, len(STEPS) - 1))
        step = self.step
        self.step_label.setText(f"<b>{self.index + 1}/{len(STEPS)} · {step.title}</b>")
        self.body.setText(step.body)
        self.back_button.setEnabled(self.index > 0)
        self.next_button.setText("Done" if self.index == len(STEPS) - 1 else "Next")

    @Slot()
    def _on_show(self) -> None:
        self.go_to.emit(self.step.key)

    @Slot()
    def _on_next(self) -> None:
        if self.index == len(STEPS) - 1:
            self.dismiss()
            return
        self.set_step(self.index + 1)
        if self.step.key != "export":
            self.go_to.emit(self.step.key)

    @Slot()
    def dismiss(self) -> None:
        self.dismissed.emit(self.dont_show.isChecked())
