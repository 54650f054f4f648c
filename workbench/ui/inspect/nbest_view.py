"""Below a Unigram column: the n best ways to split the word at the cursor, with their probabilities.

Unigram is a probability model over segmentations: the pane shows the best (Viterbi) one, this view
lists it beside the runners-up — each with its probability (the product of its pieces'), its share of
the word's total probability (the sum over every segmentation), and a mark on the split the column
shows. It asks :func:`workbench.tasks.inspection.nbest_segmentations` through the window's
:class:`~workbench.ui.jobs.JobRunner` (a long word without spaces can take a moment), one key per
view, so a newer cursor position drops an older answer.

Left out: other models (the view hides itself: BPE and WordPiece have one split per word, no
distribution), sampling, and choosing a runner-up to encode with.
"""

from __future__ import annotations

import html
import math

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.display import piece_text
from workbench.core.model import Tokenizer
from workbench.tasks import inspection
from workbench.ui.inspect.token_editor import editor_font
from workbench.ui.jobs import JobRunner

PIECE_SEPARATOR = " · "


def probability_text(log_p: float) -> str:
    """``p`` for a person: ``0.0123`` or ``3.2e-12`` (a word's probability is often tiny)."""
    p = math.exp(log_p)
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.2e}"


class NBestView(QFrame):
    """A spin box for n and a table of the word's n best segmentations (rank, pieces, p, share)."""

    shown = Signal(object)  # the NBest drawn (or None): for tests and the status line

    COLUMNS = ("#", "segmentation", "p", "share")

    def __init__(self, jobs: JobRunner | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.jobs = jobs
        self.tokenizer: Tokenizer | None = None
        self.text = ""
        self.position = 0
        self.result: inspection.NBest | None = None
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Best segmentations of the word at the cursor")

        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.n_label = QLabel("Best &n")
        self.n_spin = QSpinBox()
        self.n_spin.setRange(1, inspection.NBEST_MAX)
        self.n_spin.setValue(inspection.NBEST_DEFAULT)
        self.n_spin.setAccessibleName("Number of segmentations listed")
        self.n_spin.setToolTip(f"How many segmentations to list (1–{inspection.NBEST_MAX}), best first")
        self.n_spin.valueChanged.connect(self._on_n_changed)
        self.n_label.setBuddy(self.n_spin)  # Alt+N reaches it from the keyboard

        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setAccessibleName("Segmentations of the word, best first")
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setToolTip("p: the product of the pieces' probabilities. share: p over the sum for every "
                              "way to split the word. ★ marks the split this column shows (Viterbi)")
        # Compact rows (the pieces' monospace font asked for tall ones): six fit without scrolling.
        row_height = max(self.table.fontMetrics().height(), QFontMetrics(editor_font()).height()) + 6
        self.table.verticalHeader().setDefaultSectionSize(row_height)
        self.table.verticalHeader().setMinimumSectionSize(row_height)
        self.table.setMinimumHeight(row_height * 3)
        self.table.setMaximumHeight(self.table.horizontalHeader().sizeHint().height() + row_height * 6 + 4)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setVisible(False)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title, 1)
        top.addWidget(self.n_label)
        top.addWidget(self.n_spin)
        box = QVBoxLayout(self)
        box.setContentsMargins(4, 3, 4, 3)
        box.setSpacing(2)
        box.addLayout(top)
        box.addWidget(self.table, 1)
        box.addWidget(self.message)
        self.setVisible(False)

    # ---- what to show --------------------------------------------------------------------------
    def set_tokenizer(self, tokenizer: Tokenizer | None) -> None:
        """Show for a Unigram tokenizer only; another model hides the view."""
        if tokenizer is self.tokenizer:
            return
        self.tokenizer = tokenizer
        applies = tokenizer is not None and inspection.nbest_applies(tokenizer)
        self.setVisible(applies)
        if not applies:
            self._clear("")

    def set_word_at(self, text: str, position: int) -> None:
        """Ask for the segmentations of the word around code point ``position`` of ``text``."""
        self.text, self.position = text, position
        self.request()

    def request(self) -> None:
        tok = self.tokenizer
        if tok is None or not inspection.nbest_applies(tok) or self.jobs is None:
            return
        text, position, n = self.text, self.position, self.n_spin.value()
        self.jobs.submit(lambda: inspection.nbest_segmentations(tok, text, position, n), self._on_done,
                         self._on_error, key=("nbest", id(self)))

    @Slot(int)
    def _on_n_changed(self, _n: int) -> None:
        self.request()

    # ---- results (GUI thread) --------------------------------------------------------------------
    def _on_done(self, result: inspection.NBest | None) -> None:
        self.result = result
        if result is None:
            self._clear("Put the cursor on a word to list its best segmentations.")
            self.shown.emit(None)
            return
        self.message.setVisible(False)
        self.title.setText(f"Best splits of <b>{html.escape(piece_text(result.word.encode('utf-8')))}</b> · "
                           f"{len(result.rows)} listed, "
                           f"{100 * result.covered:.1f} % of its probability")
        self.table.setRowCount(len(result.rows))
        bold = QFont(self.table.font())
        bold.setBold(True)
        pieces_font = editor_font()
        for r, row in enumerate(result.rows):
            rank = QTableWidgetItem(f"★ {r + 1}" if row.viterbi else str(r + 1))
            rank.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            pieces = QTableWidgetItem(PIECE_SEPARATOR.join(row.pieces))
            pieces.setFont(pieces_font)
            pieces.setToolTip("ids " + ", ".join(map(str, row.ids)) + (
                "\nthe split this column shows (Viterbi)" if row.viterbi else ""))
            p = QTableWidgetItem(probability_text(row.log_p))
            p.setToolTip(f"log p = {row.log_p:.4f}")
            share = QTableWidgetItem(f"{100 * row.share:.1f} %" if row.share >= 0.0005 else "< 0.1 %")
            for item in (p, share):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            items = (rank, pieces, p, share)
            for c, item in enumerate(items):
                if row.viterbi:
                    item.setFont(bold if c != 1 else _bold(pieces_font))
                self.table.setItem(r, c, item)
        self.shown.emit(result)

    def _on_error(self, message: str) -> None:
        self._clear(message)
        self.shown.emit(None)

    def _clear(self, message: str) -> None:
        self.result = None
        self.table.setRowCount(0)
        self.title.setText("Best splits")
        self.message.setText(message)
        self.message.setVisible(bool(message))

    # ---- reading back (tests) ---------------------------------------------------------------------
    def rows_text(self) -> list[tuple[str, ...]]:
        def text(r: int, c: int) -> str:
            item = self.table.item(r, c)
            return item.text() if item is not None else ""

        return [tuple(text(r, c) for c in range(self.table.columnCount())) for r in range(self.table.rowCount())]


def _bold(font: QFont) -> QFont:
    out = QFont(font)
    out.setBold(True)
    return out
