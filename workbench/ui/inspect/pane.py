"""One column of the inspector: a tokenizer chooser, the "as of merge N" slider, counts, the text.

The first pane's editor is where the user types; the others show the same text read-only (the
panel copies edits into their documents), each under its own tokenizer. A pane never computes a
split itself: it sends its :class:`~workbench.ui.inspect.worker.PaneSpec` with the panel's job and
draws the :class:`~workbench.ui.inspect.worker.PaneOutcome` that comes back.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from PySide6.QtCore import QEvent, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSlider,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core import display, offsets
from workbench.core.superbpe import is_superword
from workbench.tasks import inspection
from workbench.tasks.sources import LoadedTokenizer
from workbench.ui.inspect.nbest_view import NBestView
from workbench.ui.inspect.token_editor import TokenEditor
from workbench.ui.inspect.worker import PaneOutcome, PaneSpec, Source
from workbench.ui.jobs import JobRunner


@dataclass(frozen=True)
class SourceInfo:
    """A run or reference as the chooser lists it."""

    source: Source
    label: str
    merge_count: int
    version: tuple  # (status, merge count, vocab size): a change means "load it again"


class TokenPane(QFrame):
    """Chooser + slider + counts + editor for one tokenizer."""

    spec_changed = Signal()  # the tokenizer or the merge slider changed: re-split
    close_requested = Signal(object)  # self
    activated = Signal(object)  # self: clicked or focused, its ids and decoder show below

    def __init__(self, parent: QWidget | None = None, *, primary: bool = False, jobs: JobRunner | None = None):
        super().__init__(parent)
        self.setAccessibleName("Text column" if primary else "Comparison column")
        self.primary = primary
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.sources: list[SourceInfo] = []
        self.loaded: LoadedTokenizer | None = None
        self.layout_: inspection.TextLayout | None = None
        self.error: str | None = None
        self.mirror_lines: list[str] = []  # a secondary pane's copy of the primary's lines (panel._mirror)

        self.chooser = QComboBox()
        self.chooser.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.chooser.setMinimumContentsLength(16)
        self.chooser.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.chooser.setToolTip("The tokenizer this column shows: a run of the project or an imported reference")
        self.chooser.currentIndexChanged.connect(self._on_source_changed)
        self.close_button = QToolButton()
        self.close_button.setText("×")
        self.close_button.setToolTip("Remove this column")
        self.close_button.setVisible(not primary)
        self.close_button.clicked.connect(self._on_close_clicked)

        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("Split the text as it was after the first N merges of this tokenizer "
                               "(0: single bytes or characters)")
        self.slider.valueChanged.connect(self._on_slider)
        self.slider_label = QLabel()
        self.slider_label.setMinimumWidth(130)
        self.slider_row = QWidget()
        row = QHBoxLayout(self.slider_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("As of merge"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.slider_label)

        self.counts_label = QLabel(" ")
        self.counts_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Wrapped, not one long line: its width was each column's minimum, so columns could not
        # share the window's width (issue 14).
        self.counts_label.setWordWrap(True)
        self.counts_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.slider_label.setMinimumWidth(0)
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        self.status_label.setVisible(False)

        self.editor = TokenEditor(read_only=not primary)
        self.editor.describe = self.describe
        self.editor.clicked.connect(self._on_editor_clicked)
        self.editor.installEventFilter(self)
        # Unigram only: the n best splits of the word at the cursor (hidden for other models).
        self.nbest = NBestView(jobs)
        self.editor.cursorPositionChanged.connect(self._on_cursor_moved)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.chooser, 1)
        top.addWidget(self.close_button)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(3)
        box.addLayout(top)
        # A model without merges (Unigram) hides the slider but keeps its row's height, so the
        # lines of side-by-side columns stay level with each other.
        policy = self.slider_row.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.slider_row.setSizePolicy(policy)
        box.addWidget(self.slider_row)
        box.addWidget(self.counts_label)
        box.addWidget(self.status_label)
        box.addWidget(self.editor, 1)
        box.addWidget(self.nbest)
        self._update_slider_range()

    # ---- sources --------------------------------------------------------------------------------
    def set_sources(self, sources: list[SourceInfo], preferred: Source | None = None) -> None:
        """Fill the chooser, keeping the current choice when it still exists."""
        current = self.source()
        keep_value = self.slider.value() if self.slider.value() < self.slider.maximum() else None
        self.sources = list(sources)
        self.chooser.blockSignals(True)
        self.chooser.clear()
        for info in self.sources:
            self.chooser.addItem(info.label, info.source)
        wanted = current if current is not None and any(i.source == current for i in sources) else preferred
        index = next((k for k, info in enumerate(self.sources) if info.source == wanted), 0 if sources else -1)
        self.chooser.setCurrentIndex(index)
        self.chooser.blockSignals(False)
        self._update_slider_range(keep_value if self.source() == current else None)

    def source(self) -> Source | None:
        data = self.chooser.currentData()
        return tuple(data) if data is not None else None

    def info(self) -> SourceInfo | None:
        k = self.chooser.currentIndex()
        return self.sources[k] if 0 <= k < len(self.sources) else None

    def set_source(self, source: Source) -> bool:
        for k, info in enumerate(self.sources):
            if info.source == source:
                self.chooser.setCurrentIndex(k)
                return True
        return False

    def spec(self) -> PaneSpec | None:
        info = self.info()
        if info is None:
            return None
        value = self.slider.value()
        max_merges = None if value >= info.merge_count else value
        return PaneSpec(info.source, info.version, max_merges)

    def name(self) -> str:
        info = self.info()
        if self.loaded is not None and info is not None and self.loaded.source == info.source:
            return self.loaded.name
        return info.label if info is not None else "(none)"

    def set_merges(self, n: int | None) -> None:
        """Move the slider (``None``: all merges)."""
        self.slider.setValue(self.slider.maximum() if n is None else n)

    @Slot(int)
    def _on_source_changed(self, _index: int) -> None:
        self._update_slider_range()
        self.spec_changed.emit()

    @Slot(int)
    def _on_slider(self, _value: int) -> None:
        self._update_slider_label()
        self.spec_changed.emit()

    @Slot()
    def _on_close_clicked(self) -> None:
        self.close_requested.emit(self)

    @Slot(object)
    def _on_editor_clicked(self, _group) -> None:
        self.activated.emit(self)

    @Slot()
    def _on_cursor_moved(self) -> None:
        """The word at the cursor, for the n-best view (in the text the shown split was made of)."""
        layout = self.layout_
        if layout is None or not self.nbest.isVisibleTo(self):
            return
        position = layout.blockmap.cp_at(self.editor.textCursor().position())
        self.nbest.set_word_at(layout.text, min(position, len(layout.text)))

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is self.editor and event.type() == QEvent.Type.FocusIn:
            self.activated.emit(self)
        return super().eventFilter(watched, event)

    def _update_slider_range(self, value: int | None = None) -> None:
        info = self.info()
        merges = info.merge_count if info is not None else 0
        self.slider.blockSignals(True)
        self.slider.setRange(0, merges)
        self.slider.setPageStep(max(1, merges // 20))
        self.slider.setValue(merges if value is None else min(value, merges))
        self.slider.blockSignals(False)
        self.slider_row.setVisible(merges > 0)
        self._update_slider_label()

    def _update_slider_label(self) -> None:
        value, top = self.slider.value(), self.slider.maximum()
        self.slider_label.setText(f"all {top:,} merges" if value >= top else f"{value:,} of {top:,}")

    # ---- results ---------------------------------------------------------------------------------
    def set_status(self, message: str, error: bool = False) -> None:
        self.status_label.setText(message)
        self.status_label.setStyleSheet("color: #dc2626;" if error else "")
        self.status_label.setVisible(bool(message))

    def apply(self, outcome: PaneOutcome) -> None:
        self.loaded = outcome.loaded or self.loaded
        self.nbest.set_tokenizer(self.loaded.tokenizer if self.loaded is not None else None)
        if outcome.error is not None:
            self.error = outcome.error
            self.layout_ = None
            self.editor.set_layout(None)
            self.counts_label.setText(" ")
            self.set_status(outcome.error, error=True)
            return
        layout = outcome.layout
        if layout is None:  # a pane the job skipped (nothing to show): keep what it shows
            return
        self.error = None
        self.layout_ = layout
        self.editor.set_layout(layout)
        counts = layout.counts
        self.counts_label.setText(
            f"<b>{counts.tokens:,}</b> tokens · {counts.characters:,} characters · {counts.bytes:,} bytes · "
            f"{counts.chars_per_token:.2f} chars/token · {counts.tokens_per_word:.2f} tokens/word")
        self._on_cursor_moved()
        unknown = layout.unknown
        if unknown:
            self.set_status(f"{unknown:,} piece(s) cannot be encoded: this character-level vocabulary has no entry "
                            "for some characters (marked red) and no unknown token", error=True)
        else:
            self.set_status("")

    # ---- the tooltip --------------------------------------------------------------------------------
    MAX_TOOLTIP_ROWS = 12

    def describe(self, group: inspection.GroupRef) -> str:
        loaded = self.loaded
        if loaded is None:
            return ""
        tok = loaded.tokenizer
        if len(group.ids) == 1:
            return "<qt>" + self._describe_id(tok, group.ids[0]) + "</qt>"
        shown = self.layout_.text[group.start:group.end] if self.layout_ is not None else ""
        head = (f"<p><b>{len(group.ids)} tokens share these characters</b> "
                f"<code>{_code(display.piece_text(shown.encode('utf-8', 'surrogatepass')))}</code><br>"
                "pieces of one character, or of one emoji / accent cluster, shown together so it is drawn "
                "whole</p>")
        rows = []
        for token_id in group.ids[: self.MAX_TOOLTIP_ROWS]:
            if not 0 <= token_id < len(tok.vocab):
                rows.append(f"<tr><td>{token_id}</td><td colspan=3>not in this vocabulary</td></tr>")
                continue
            info = display.token_info(tok, token_id, loaded.frequencies)
            made = "special" if info.kind == "special" else "base" if info.rank is None else f"merge rank {info.rank:,}"
            rows.append(f"<tr><td align=right><b>{info.id}</b></td><td><code>{_code(info.piece)}</code></td>"
                        f"<td><code>{html.escape(info.hex)}</code></td><td style='color:gray'>{made}</td></tr>")
        more = len(group.ids) - self.MAX_TOOLTIP_ROWS
        if more > 0:
            rows.append(f"<tr><td colspan=4 style='color:gray'>… and {more} more (see the ids panel)</td></tr>")
        header = ("<tr style='color:gray'><td align=right>id</td><td>piece</td><td>bytes</td><td>made by</td></tr>")
        return f"<qt>{head}<table cellspacing=3 cellpadding=0 style='white-space:nowrap'>{header}{''.join(rows)}</table></qt>"

    def _describe_id(self, tok, token_id: int) -> str:
        if token_id == offsets.UNKNOWN_ID:
            return ("<p><b>not encodable</b>: this character-level vocabulary has no entry for these "
                    "characters and no unknown token.</p>")
        if not 0 <= token_id < len(tok.vocab):
            return f"<p>id {token_id} (not in this vocabulary)</p>"
        info = display.token_info(tok, token_id, self.loaded.frequencies if self.loaded else None)
        rows = [("id", f"<b>{info.id}</b>"),
                ("piece", f"<code>{_code(info.piece)}</code>"),
                ("bytes", f"<code>{html.escape(info.hex)}</code> ({len(tok.vocab[token_id])})")]
        if info.kind == "special":
            rows.append(("kind", "special token"))
        elif info.score is not None and info.model == "unigram":  # its probability, not a merge
            rows.append((info.score_label, f"{info.score:.4f} (p = {math.exp(info.score):.3g})"))
        elif info.rank is None or info.left is None or info.right is None:
            rows.append(("kind", "base symbol (no merge made it)"))
        else:
            left_id, left_piece = info.left
            right_id, right_piece = info.right
            rows.append(("merge", f"merge rank {info.rank:,}: "
                                  f"<code>{_code(left_piece)}</code> ({left_id}) + "
                                  f"<code>{_code(right_piece)}</code> ({right_id})"))
            if info.frequency is not None:
                rows.append(("frequency", f"{info.frequency:,} in the training corpus when merged"))
            if is_superword(tok.vocab[token_id]):
                rows.append(("superword", "crosses a space: one token for several words (SuperBPE)"))
            if info.score is not None:  # WordPiece: the score the merge won with
                kind = self.loaded.score_kind if self.loaded is not None else None
                rows.append((info.score_label, f"{info.score:.6g}" + (f" ({kind})" if kind else "")))
        body = "".join(f"<tr><td style='color:gray;padding-right:8px'>{k}</td>"
                       f"<td style='white-space:nowrap'>{v}</td></tr>" for k, v in rows)
        return f"<table cellspacing=0>{body}</table>"


def _code(piece: str) -> str:
    """A piece inside quotes, HTML-escaped, spaces kept visible."""
    return "“" + html.escape(piece).replace(" ", "&nbsp;") + "”"
