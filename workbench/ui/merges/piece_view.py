"""What the Merges tab shows for a Unigram run: its piece table and the selected piece explained.

A Unigram model has no merges and so no ancestry; what a user wants to see instead is each piece's
log probability and whether the model ever uses it. :class:`PieceView` holds the lazy
:class:`PieceTableModel` (sorted by any column in SQL; the panel's filter box filters it) and a
:class:`PieceDetail`: the piece's score, probability and length, and the best segmentations of its
text by the *other* pieces (``tasks.inspection.piece_segmentations``, an n-best Viterbi).

"Never used" is the Vocabulary tab's count, reused (one implementation, one cache): the run's
corpus files are read again, split into pre-tokens as training did, and each distinct pre-token is
encoded once with the run's tokenizer (``usage.usage_job``, run and installed by
:class:`~workbench.ui.merges.usage.UsageView`, the base of both views); a piece the encoded corpus
never contains is flagged. It runs when the table is first shown for a
finished run, off the GUI thread. What it leaves out: widgets shared with the merge table (the
filter box lives in the panel) and CSV export (the Vocabulary tab exports the same rows).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.display import piece_hex
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.store.browse import UNREAD, PieceEntry, PieceSource, Source, TextFilter, VocabQuery, register_audit
from workbench.tasks.inspection import piece_segmentations
from workbench.tasks.usage import usage_cache_key
from workbench.ui.merges.detail import DetailPane, _short
from workbench.ui.merges.merge_model import browser_piece, mono_font
from workbench.ui.merges.piece_model import NEVER_USED_TIP, PieceTableModel, format_probability
from workbench.ui.merges.usage import SUMMARY_PENDING, USAGE_KEY, UsageView
from workbench.ui.merges.widgets import (
    PlaceholderTableView,
    beside_detail,
    configure_table,
    select_row,
    sync_sort_indicator,
)

log = logging.getLogger(__name__)

SEGMENTATIONS_SHOWN = 5


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


class PieceDetail(DetailPane):
    """One piece: its numbers, and how the other pieces would spell its text."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Piece details",
                         "Select a piece to see its probability\nand how the other pieces would spell it.", parent)
        self.split_label = QLabel()
        self.split_label.setWordWrap(True)
        self.splits = QTreeWidget()
        self.splits.setRootIsDecorated(False)
        self.splits.setColumnCount(2)
        self.splits.setHeaderLabels(["segmentation", "probability"])
        self.splits.setAccessibleName("Best segmentations by the other pieces")
        self.splits.setUniformRowHeights(True)
        self.splits.setAlternatingRowColors(True)
        header = self.splits.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.body_layout.addWidget(self.split_label)
        self.body_layout.addWidget(self.splits, 100)
        self.body_layout.addStretch(1)  # keeps the lines together at the top when there is no list

    def clear(self) -> None:
        self.token_id = None
        self.splits.clear()
        self.stack.setCurrentIndex(0)

    def show_piece(self, e: PieceEntry, tokenizer: Tokenizer | None) -> None:
        self.token_id = e.id
        shown = browser_piece(e.piece) if e.piece else "(empty piece)"
        self.title.setText(_short(shown, 24))  # the large font: a long piece would widen the pane
        self.title.setToolTip(f"{shown}\nbytes: {piece_hex(e.piece)}")
        parts = [f"token {e.id}", e.kind]
        if e.score is not None:
            parts.append(f"log prob {e.score:.4f}")
            parts.append(f"p = {format_probability(e.probability)}")
        parts.append(f"{_count(e.chars, 'character')}, {_count(e.length, 'byte')}")
        if e.frequency is not None:
            parts.append("never used in the corpus" if e.never_used else f"{e.frequency:,} times in the corpus")
        self.subtitle.setText(" · ".join(parts))
        self.splits.clear()
        found = piece_segmentations(tokenizer, e.id, SEGMENTATIONS_SHOWN) if tokenizer is not None else []
        if e.kind == "special":
            self.split_label.setText("A special token: added by the pipeline, never found in text.")
        elif e.kind == "byte":
            self.split_label.setText("A byte-fallback piece: spells a character no piece covers.")
        elif not found:
            self.split_label.setText("<b>Other spellings</b>: none — no other pieces spell this text.")
        else:
            self.split_label.setText("<b>Other spellings</b>: the best segmentations of this text by the "
                                     "other pieces, with their probability among all of its segmentations")
        self.splits.setVisible(bool(found))
        mono = mono_font()
        items = []
        for ids, p in found:
            pieces = [browser_piece(tokenizer.vocab[i]) if tokenizer is not None else str(i) for i in ids]
            item = QTreeWidgetItem([" · ".join(pieces), format_probability(p)])
            item.setFont(0, mono)
            item.setToolTip(0, "ids " + " ".join(str(i) for i in ids))
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            items.append(item)
        self.splits.addTopLevelItems(items)
        self.stack.setCurrentIndex(1)


class PieceView(UsageView):
    """The piece table with its never-used count and the piece detail (see the module docstring)."""

    piece_selected = Signal(int)
    rows_changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Encode the training corpus with this tokenizer to find the pieces it never uses", 240,
                         parent)
        self.setAccessibleName("Unigram pieces")
        self._source: PieceSource | None = None
        self._text = TextFilter()
        self._audit_only = ""  # the panel's "audit:" filter (a tasks.audit.MARKS category)
        self._load_tokenizer: Callable[[], Tokenizer] | None = None
        self._tokenizer: Tokenizer | None = None
        self._known_scores: Any = UNREAD
        self._prepared: PieceSource | None = None

        self.summary.setToolTip(NEVER_USED_TIP)
        self.never_only.setToolTip(NEVER_USED_TIP)
        self.never_only.toggled.connect(self._on_never_only)
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.never_only)
        bar.addWidget(self.progress)
        bar.addWidget(self.cancel_button)
        bar.addWidget(self.count_button)

        self.model = PieceTableModel(self)
        self.model.rows_changed.connect(self.rows_changed)
        self.model.busy_changed.connect(self.rows_changed)  # the panel's count line says "filtering…"
        self._use_worker()
        self.table = PlaceholderTableView()
        self.table.setAccessibleName("Pieces of the unigram model")
        self.table.setModel(self.model)
        configure_table(self.table, {0: 64, 1: 190, 2: 92, 3: 96, 4: 52, 5: 70, 6: 90, 7: 90, 8: 130}, stretch=1)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.table.horizontalHeader().sortIndicatorChanged.connect(self._sync_sort_indicator)
        self.detail = PieceDetail()
        split = beside_detail(self.table, self.detail)
        self.splitter = split

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.error)
        layout.addWidget(split, 1)
        self._update_summary()

    # ---- source -------------------------------------------------------------------------------------
    def set_source(self, conn, path: Path | None, source: Source | None, status: str = "",
                   load_tokenizer: Callable[[], Tokenizer] | None = None, *, scores: Any = UNREAD,
                   prepared: PieceSource | None = None) -> None:
        """Show ``source``'s pieces (None: nothing); ``load_tokenizer`` builds it for the detail;
        ``scores``: the per-id scores when a worker has read them (``browse.UNREAD``: read here);
        ``prepared``: the piece source a worker set up on its own connection (moved onto ``conn``)."""
        self._close_source(conn, path, status)
        self._audit_only = ""  # a new source has no audit yet (the panel's filter is reset too)
        self._known_scores = scores
        self._prepared = prepared
        self._load_tokenizer, self._tokenizer = load_tokenizer, None
        self.detail.clear()
        self._open_source(source, "No piece matches the filter.")

    def _make_source(self, conn, source: Source) -> PieceSource:
        scores, self._known_scores = self._known_scores, UNREAD
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared.source == source:
            return prepared.on_connection(conn)
        return PieceSource(conn, source, scores=scores)

    def _usage_key(self) -> tuple | None:
        ps = self._source
        return usage_cache_key(self._conn, self._path, ps.source, ps.pieces()) if ps is not None else None

    @property
    def source(self) -> PieceSource | None:
        return self._source

    # ---- filter ---------------------------------------------------------------------------------------
    def _query(self) -> VocabQuery:
        return VocabQuery(self._text, "", self.never_only.isChecked() and self._usage is not None, self._audit_only)

    def set_text_filter(self, text: TextFilter, audit: str = "") -> None:
        """The panel's filter box and its "audit:" filter; raises WorkbenchError (a bad regex) and
        then changes nothing."""
        query = VocabQuery(text, "", self.never_only.isChecked() and self._usage is not None, audit)
        if self._source is not None:
            self.model.set_query(query)
            self._drop_hidden_detail()
        self._text, self._audit_only = text, audit

    def set_audit(self, source: Source, marks: list[str]) -> None:
        """Show the Audit tab's marks of ``source`` (``tasks.audit.audit_marks``) as a column."""
        if self._source is None or self._source.source != source:
            return
        self._source.audit_key = register_audit(marks)
        self.model.reload()

    @Slot(bool)
    def _on_never_only(self, _checked: bool) -> None:
        if self._source is not None:
            self.model.set_query(self._query())
            self._drop_hidden_detail()

    def _drop_hidden_detail(self) -> None:
        """The detail follows the table: a piece the filter hides is no longer explained (once the
        filtered rows are there: a long table is filtered off the GUI thread)."""
        def drop() -> None:
            shown = self.detail.token_id
            if shown is not None and self.model.row_of_key(shown) is None:
                self.detail.clear()
        self.model.when_ready(drop)

    # ---- never used -------------------------------------------------------------------------------------
    def _show_count_button(self, busy: bool) -> None:
        self.count_button.setVisible(not busy and self._usage is None)

    def _update_summary(self) -> None:
        ps = self._source
        self.count_button.setVisible(ps is not None and self._usage is None and not self.job.is_running(USAGE_KEY))
        if ps is None:
            self.summary.setText("")
            return
        scored = "" if ps.scores is not None else " · <i>no log probabilities recorded for this run</i>"
        u = self._usage
        if u is None:
            if self.job.is_running(USAGE_KEY):
                text = "Finding the pieces the encoded corpus never uses…"
            elif self._status == "running":
                text = "Never-used pieces are counted once the run has finished."
            else:
                text = "Never-used pieces not counted yet."
        elif not self._summary_ready():
            text = SUMMARY_PENDING
        else:
            text = (f"<b>Never used: {len(u.never_used):,} of {u.eligible:,} pieces "
                    f"({100 * u.never_used_share:.2f} %)</b> in the encoded training corpus")
        self.summary.setText(text + scored)

    # ---- selection --------------------------------------------------------------------------------------
    def tokenizer(self) -> Tokenizer | None:
        """The run's tokenizer for the detail pane, loaded on first use (None if it cannot be)."""
        if self._tokenizer is None and self._load_tokenizer is not None:
            try:
                self._tokenizer = self._load_tokenizer()
            except WorkbenchError as exc:
                log.warning("cannot load the tokenizer for the piece detail: %s", exc)
                self._load_tokenizer = None
        return self._tokenizer

    @Slot(QModelIndex, QModelIndex)
    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not current.isValid():
            return
        entry = self.model.entry(current.row())
        if entry is None:
            return
        try:
            self.detail.show_piece(entry, self.tokenizer())
        except Exception:  # noqa: BLE001 - a damaged row must not break selection
            log.exception("explaining piece %s failed", entry.id)
            self.detail.clear()
        if not self._syncing:
            self.piece_selected.emit(entry.id)

    @Slot(int, Qt.SortOrder)
    def _sync_sort_indicator(self, *_args) -> None:
        """The header's arrow stays on the order the rows are in (as the merge table's)."""
        sync_sort_indicator(self.table)

    def select_token(self, token_id: int, *, emit: bool = False) -> bool:
        """Select and show piece ``token_id`` (False: the filter hides it); ``emit`` announces it.
        While a long table is being filtered the selection follows its rows (True: asked for)."""
        if self.model.busy:
            self.model.when_ready(lambda: self.select_token(token_id, emit=emit))
            return True
        row = self.model.row_of_key(token_id)
        if row is None:
            return False
        self._syncing = not emit
        try:
            select_row(self.table, row)
        finally:
            self._syncing = False
        return True
