"""A centred "nothing here yet" message with a title, an explanation and optional buttons.

Used wherever a pane would otherwise be blank: an empty corpus (with a drop hint), no project open,
a project with no runs. It says what the pane
is for and what to do next; it never pretends to be content.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from workbench.ui import style


class EmptyState(QWidget):
    """Title, body text and buttons, centred; the body colour follows the palette."""

    def __init__(self, title: str, body: str = "", *, symbol: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("emptyState")
        self.setAccessibleName(title)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        self.symbol = QLabel(symbol)
        self.symbol.setAlignment(Qt.AlignmentFlag.AlignCenter)
        big = QFont(self.font())
        big.setPointSizeF(big.pointSizeF() * 2.6)
        self.symbol.setFont(big)
        self.symbol.setVisible(bool(symbol))
        self.title = QLabel(title)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        bold = QFont(self.font())
        bold.setPointSizeF(bold.pointSizeF() * 1.3)
        bold.setBold(True)
        self.title.setFont(bold)
        self.title.setWordWrap(True)
        self.body = QLabel(body)
        self.body.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.buttons = QHBoxLayout()
        self.buttons.addStretch(1)
        self._button_end = QHBoxLayout()
        for w in (self.symbol, self.title):
            outer.addWidget(w)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.body)
        row.addStretch(1)
        outer.addLayout(row)
        outer.addSpacing(8)
        outer.addLayout(self.buttons)
        outer.addStretch(2)
        self._stretch_added = False
        self._recolour()

    def add_button(self, text: str, slot: Callable[[], object], *, primary: bool = False) -> QPushButton:
        button = QPushButton(text)
        button.setAutoDefault(False)
        if primary:
            button.setDefault(True)
            f = button.font()
            f.setBold(True)
            button.setFont(f)
        button.clicked.connect(lambda _checked=False: slot())  # clicked passes `checked` (trap 3)
        if self._stretch_added:
            self.buttons.takeAt(self.buttons.count() - 1)
        self.buttons.addWidget(button)
        self.buttons.addStretch(1)
        self._stretch_added = True
        return button

    def set_text(self, title: str, body: str = "") -> None:
        self.title.setText(title)
        self.setAccessibleName(title)
        self.body.setText(body)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        # A word-wrapped QLabel between stretches takes its narrowest width; give it the line
        # length a reader expects (up to 560 px), never wider than the pane.
        super().resizeEvent(event)
        self.body.setFixedWidth(max(120, min(560, self.width() - 48)))

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._recolour()

    def _recolour(self) -> None:
        pal = self.body.palette()
        pal.setColor(QPalette.ColorRole.WindowText, style.muted(self.palette()))
        self.body.setPalette(pal)
        self.symbol.setPalette(pal)
