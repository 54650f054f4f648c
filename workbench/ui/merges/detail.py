"""The selected merge explained: its token, the tree of merges that built it, the merges that use it.

The ancestry tree goes down to base bytes or characters (each node: piece, id, merge rank); the
children list shows the later merges that take the token as their left or right part, so a user
can walk a token's history both ways. Double-clicking any token there emits
``token_activated(id)`` and the panel selects that token's merge. Data comes from
:class:`~workbench.store.browse.MergeSource` (a few indexed SQL reads per selection).
:class:`DetailPane` is the frame this pane shares with the Unigram piece detail (``piece_view``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QSplitter,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.ancestry import AncestryNode
from workbench.core.display import piece_chars, piece_hex
from workbench.store.browse import MergeEntry, MergeSource
from workbench.ui.merges.merge_model import browser_piece, mono_font, muted_brush

CHILDREN_SHOWN = 500
_ID_ROLE = Qt.ItemDataRole.UserRole + 10


def _node_label(node: AncestryNode) -> str:
    return browser_piece(node.piece) if node.piece else "(empty)"


class DetailPane(QWidget):
    """The frame of a detail pane beside a table: a muted placeholder until a row is selected, then a
    body headed by the row's token in a large monospaced title and a line of facts under it.

    A subclass adds its own widgets to ``body_layout`` (below the subtitle) and switches ``stack``
    between the placeholder (0) and the body (1). What it leaves out: everything under the subtitle.
    """

    def __init__(self, accessible_name: str, placeholder: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName(accessible_name)
        self.token_id: int | None = None
        mono = mono_font()
        big = QFont(mono)
        big.setPointSizeF(max(12.0, mono.pointSizeF() * 1.6))
        big.setBold(True)

        self.stack = QStackedWidget()
        self.placeholder = QLabel(placeholder)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        pal = self.placeholder.palette()
        pal.setBrush(self.placeholder.foregroundRole(), muted_brush())
        self.placeholder.setPalette(pal)

        body = QWidget()
        self.title = QLabel()
        self.title.setFont(big)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.subtitle = QLabel()
        self.subtitle.setWordWrap(True)
        self.subtitle.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body_layout = QVBoxLayout(body)
        self.body_layout.setContentsMargins(0, 0, 0, 0)
        self.body_layout.addWidget(self.title)
        self.body_layout.addWidget(self.subtitle)
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 0, 0, 0)
        outer.addWidget(self.stack)


_MERGE_PLACEHOLDER = "Select a merge to see how its token was built\nand which later merges use it."


class MergeDetail(DetailPane):
    token_activated = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Merge details", _MERGE_PLACEHOLDER, parent)
        self._source: MergeSource | None = None
        self.tree_root: AncestryNode | None = None
        mono = mono_font()
        self.title.setWordWrap(True)

        self.tree_label = QLabel("<b>How it was built</b>")
        self.tree = QTreeWidget()
        self.tree.setAccessibleName("How the token was built")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["token", "id", "rank"])
        self.tree.setFont(mono)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.itemDoubleClicked.connect(self._on_item_activated)

        self.children_label = QLabel()
        self.later_merges = QTreeWidget()
        self.later_merges.setRootIsDecorated(False)
        self.later_merges.setColumnCount(4)
        self.later_merges.setAccessibleName("Later merges that use this token")
        self.later_merges.setHeaderLabels(["rank", "pair", "result", "frequency"])
        self.later_merges.setUniformRowHeights(True)
        self.later_merges.setAlternatingRowColors(True)
        ch = self.later_merges.header()
        ch.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        ch.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        ch.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        ch.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        ch.setStretchLastSection(False)
        self.later_merges.itemDoubleClicked.connect(self._on_item_activated)

        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.tree_label)
        tl.addWidget(self.tree)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.children_label)
        bl.addWidget(self.later_merges)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)

        self.body_layout.addWidget(split, 1)

    # ---- content ------------------------------------------------------------------------------------
    def clear(self, message: str = "") -> None:
        self.token_id = None
        self.tree_root = None
        if message:
            self.placeholder.setText(message)
        else:
            self.placeholder.setText(_MERGE_PLACEHOLDER)
        self.tree.clear()
        self.later_merges.clear()
        self.stack.setCurrentIndex(0)

    def show_token(self, source: MergeSource, token_id: int, entry: MergeEntry | None = None) -> None:
        """Explain ``token_id`` of ``source``; ``entry`` is its merge when the caller has it."""
        self._source = source
        self.token_id = token_id
        if entry is None:
            rank = source.first_merge_of(token_id)
            entry = source.entry(rank) if rank is not None else None
        root = source.ancestry(token_id)
        self.tree_root = root
        piece = root.piece
        shown = browser_piece(piece) if piece else "(empty piece)"
        # A long token has no place to wrap: shown whole it widened this pane and squeezed the
        # merge table. It is cut short here; the tooltip has it whole.
        self.title.setText(_short(shown, 24))  # the title's large font: 24 characters is ~380 px
        self.title.setToolTip(f"{shown}\nbytes: {piece_hex(piece)}")
        parts = [f"token {token_id}"]
        if entry is not None:
            # "merge rank N" (0 = the first merge) is the one numbering of the window: the merge
            # table's rank column, Inspect's hover and this pane say the same.
            parts.append(f"merge rank {entry.rank:,}: {_short(browser_piece(entry.left_piece or b''))} + "
                         f"{_short(browser_piece(entry.right_piece or b''))}")
            if entry.frequency is not None:
                parts.append(f"pair frequency {entry.frequency:,} when merged")
            score = source.score(token_id, entry.rank)
            if score is not None:
                rule = {"likelihood": "likelihood score", "frequency": "score (frequency)"}.get(source.score_rule, "score")
                parts.append(f"{rule} {score:.6g} when merged")
            elif source.model == "wordpiece" and source.scores is None:
                parts.append("no score recorded (a run keeps them when it finishes; older runs have none)")
        else:
            parts.append("base token (no merge made it)")
        parts.append(f"{len(piece)} bytes, {piece_chars(piece)} characters")
        leaves = root.leaves()
        if len(leaves) > 1:
            n_merges = len(root.merges())
            levels = root.depth() - 1  # merges on the longest path down to a base token
            parts.append(f"built from {len(leaves)} base tokens in {n_merges} merge{'' if n_merges == 1 else 's'}, "
                         f"{levels} level{'' if levels == 1 else 's'} deep")
        self.subtitle.setText(" · ".join(parts))
        self._fill_tree(root)
        self._fill_children(source, token_id)
        self.stack.setCurrentIndex(1)

    def refresh_children(self) -> None:
        """New merges arrived while training: the token may have gained children."""
        if self._source is not None and self.token_id is not None:
            self._fill_children(self._source, self.token_id)

    def _fill_tree(self, root: AncestryNode) -> None:
        self.tree.clear()
        muted = muted_brush()

        def item_for(node: AncestryNode) -> QTreeWidgetItem:
            item = QTreeWidgetItem([_node_label(node), str(node.token_id),
                                    "base" if node.rank is None else str(node.rank)])
            item.setData(0, _ID_ROLE, node.token_id)
            item.setToolTip(0, f"{len(node.piece)} bytes: {piece_hex(node.piece)}")
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setTextAlignment(2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if node.rank is None:
                for col in range(3):
                    item.setForeground(col, muted)
            return item

        # Iterative, parent before parts: a trained chain can be thousands of merges deep.
        top = item_for(root)
        self.tree.addTopLevelItem(top)
        stack = [(root, top)]
        while stack:
            node, item = stack.pop()
            for part in node.parts:
                child = item_for(part)
                item.addChild(child)
                stack.append((part, child))
        self.tree.expandAll()

    def _fill_children(self, source: MergeSource, token_id: int) -> None:
        self.later_merges.clear()
        rows, total = source.children(token_id, CHILDREN_SHOWN)
        self.later_merges.setVisible(total > 0)
        if total == 0:
            self.children_label.setText("<b>Used by later merges</b>: none — no merge builds on this token")
        elif total > len(rows):
            self.children_label.setText(f"<b>Used by later merges</b>: {total:,} (the first {len(rows):,} shown)")
        else:
            self.children_label.setText(f"<b>Used by later merges</b>: {total:,}")
        mono = mono_font()
        items = []
        for e in rows:
            item = QTreeWidgetItem([str(e.rank), f"{browser_piece(e.left_piece or b'')} + {browser_piece(e.right_piece or b'')}",
                                    browser_piece(e.piece or b""), "—" if e.frequency is None else f"{e.frequency:,}"])
            item.setData(0, _ID_ROLE, e.new_id)
            item.setFont(1, mono)
            item.setFont(2, mono)
            item.setTextAlignment(0, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setTextAlignment(3, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setToolTip(2, f"token {e.new_id}: {piece_hex(e.piece or b'')}")
            items.append(item)
        self.later_merges.addTopLevelItems(items)

    @Slot(QTreeWidgetItem, int)
    def _on_item_activated(self, item: QTreeWidgetItem, _column: int) -> None:
        token_id = item.data(0, _ID_ROLE)
        if token_id is not None:
            self.token_activated.emit(int(token_id))


def _short(text: str, limit: int = 40) -> str:
    """At most ``limit`` characters, with an ellipsis where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
