"""Small widgets the merge browser tabs share: a table view that says why it is empty, a debounced
filter box with an inline error line, and the CSV export button with its menu; and the table
plumbing the merge, vocabulary and piece tables do alike (a table beside its detail pane, selecting
a row, keeping the sort arrow honest, applying a filter that may be refused).
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QItemSelectionModel, QRect, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QSplitter,
    QTableView,
    QToolButton,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.ui.merges.merge_model import LazyKeyedModel, muted_brush
from workbench.ui.style import error_colour


def find_source(combo, source) -> int:
    """Index of the item whose data equals ``source`` (a tuple), or -1.

    ``QComboBox.findData`` compares Python objects stored in a QVariant by identity, so equal
    tuples built at different times would not be found.
    """
    if source is None:
        return -1
    wanted = tuple(source)
    for index in range(combo.count()):
        data = combo.itemData(index)
        if data is not None and tuple(data) == wanted:
            return index
    return -1


class PlaceholderTableView(QTableView):
    """A QTableView that paints a centred message instead of an empty white pane."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._placeholder = ""

    def set_placeholder(self, text: str) -> None:
        """The message an empty table shows. Repaints only when it changes and shows: a filter
        handed to a worker set it on every change of the model's state, and each time the whole
        table (30 rows of 8 columns) was painted again in the turn that had just tried the filter."""
        if text == self._placeholder:
            return
        self._placeholder = text
        model = self.model()
        if model is None or model.rowCount() == 0:
            self.viewport().update()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        model = self.model()
        if self._placeholder and (model is None or model.rowCount() == 0):
            painter = QPainter(self.viewport())
            painter.setPen(muted_brush().color())
            rect = self.viewport().rect().adjusted(24, 24, -24, -24)
            painter.drawText(QRect(rect), Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
                             | Qt.TextFlag.TextWordWrap, self._placeholder)
            painter.end()


def configure_table(view: QTableView, widths: dict[int, int], stretch: int | None = None) -> None:
    """Row selection, fixed row heights, no resize-to-contents (it would read every row).

    ``stretch`` is the column that takes the spare width (Stretch mode reads no data).
    """
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.setTextElideMode(Qt.TextElideMode.ElideRight)
    view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    view.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    vh = view.verticalHeader()
    vh.setVisible(False)
    vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    vh.setDefaultSectionSize(max(20, view.fontMetrics().height() + 6))
    hh = view.horizontalHeader()
    hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    hh.setHighlightSections(False)
    hh.setSortIndicator(0, Qt.SortOrder.AscendingOrder)  # before enabling sorting: Qt would sort descending
    view.setSortingEnabled(True)
    for column, width in widths.items():
        view.setColumnWidth(column, width)
    if stretch is not None:
        hh.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)


def beside_detail(table: QWidget, detail: QWidget) -> QSplitter:
    """A table with its detail pane to the right, 3 : 2, neither collapsible (merge and piece tables)."""
    split = QSplitter(Qt.Orientation.Horizontal)
    split.addWidget(table)
    split.addWidget(detail)
    split.setStretchFactor(0, 3)
    split.setStretchFactor(1, 2)
    split.setChildrenCollapsible(False)
    return split


def select_row(view: QTableView, row: int) -> None:
    """Make ``row`` the current, selected row of ``view`` and scroll it to the middle.

    Callers that must not announce the selection set their ``_syncing`` flag around it.
    """
    index = view.model().index(row, 0)
    view.selectionModel().setCurrentIndex(
        index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
    view.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)


def sync_sort_indicator(view: QTableView) -> None:
    """Keep the header's arrow on the order the rows of a ``LazyKeyedModel`` are really in.

    A column that cannot be sorted (the model ignores it) used to take the arrow anyway, so the
    arrow described an order the table was not in.
    """
    header = view.horizontalHeader()
    model = view.model()
    if not isinstance(model, LazyKeyedModel):
        return
    column = model.sort_column
    order = Qt.SortOrder.DescendingOrder if model.descending else Qt.SortOrder.AscendingOrder
    if (header.sortIndicatorSection(), header.sortIndicatorOrder()) != (column, order):
        header.blockSignals(True)
        header.setSortIndicator(column, order)
        header.blockSignals(False)


class FilterEdit(QWidget):
    """A line edit plus a "regex" check box; ``changed`` fires 250 ms after typing stops."""

    changed = Signal()

    def __init__(self, placeholder: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.edit = QLineEdit()
        self.edit.setPlaceholderText(placeholder)
        self.edit.setAccessibleName("Filter pieces")
        self.setAccessibleName("Piece filter")
        self.edit.setClearButtonEnabled(True)
        self.regex = QCheckBox("regex")
        self.regex.setToolTip("Match a regular expression (Python `regex` syntax) against the decoded piece; "
                              "otherwise the text is a case-sensitive substring")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self.changed)
        self.edit.textChanged.connect(self._restart)
        self.edit.returnPressed.connect(self._now)
        self.regex.toggled.connect(self._now)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.regex)

    @Slot()
    def _restart(self) -> None:
        self._timer.start()

    @Slot()
    def _now(self) -> None:
        self._timer.stop()
        self.changed.emit()

    def text(self) -> str:
        return self.edit.text()

    def is_regex(self) -> bool:
        return self.regex.isChecked()

    def set_error(self, message: str) -> None:
        if message:
            colour = error_colour(self.palette()).name()
            self.edit.setStyleSheet(f"QLineEdit {{ border: 1px solid {colour}; }}")
            self.edit.setToolTip(message)
        else:
            self.edit.setStyleSheet("")
            self.edit.setToolTip("")

    def clear(self) -> None:
        self._timer.stop()
        self.edit.blockSignals(True)
        self.edit.clear()
        self.edit.blockSignals(False)


class ErrorLabel(QLabel):
    """One line in the error colour; hidden when empty."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setVisible(False)

    def show_message(self, message: str) -> None:
        self.setText(message)
        pal = self.palette()
        pal.setColor(self.foregroundRole(), error_colour(self.palette()))
        self.setPalette(pal)
        self.setVisible(bool(message))


def export_button(on_selected: Callable[[], None], on_all: Callable[[], None]) -> tuple[QToolButton, QAction, QAction]:
    """"Export CSV" with a menu: the selected rows, or every row the filter shows."""
    button = QToolButton()
    button.setText("Export CSV")
    button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    menu = QMenu(button)
    selected = menu.addAction("Selected rows…")
    everything = menu.addAction("All rows shown…")
    selected.triggered.connect(lambda _checked=False: on_selected())
    everything.triggered.connect(lambda _checked=False: on_all())
    button.setMenu(menu)
    return button, selected, everything


def selected_rows(table) -> list[int]:
    """The rows selected in ``table`` (a QTableView), each once, in order."""
    return sorted({i.row() for i in table.selectionModel().selectedRows()})


def shown_entries(table, model, *, selection: bool) -> list:
    """What a CSV export writes: the selected rows' entries, or every row the filter shows."""
    return model.entries(selected_rows(table)) if selection else list(model.iter_all())


def ask_and_export_csv(parent: QWidget, title: str, default_name: str, export: Callable[[str], object],
                       error: ErrorLabel) -> None:
    """Ask where to save, then run ``export(path)``; a failure shows in ``error`` as one line."""
    from pathlib import Path

    from PySide6.QtWidgets import QFileDialog

    from workbench.errors import WorkbenchError
    from workbench.ui.settings import AppSettings

    settings = AppSettings()  # start in the last folder used or the documents, never the working folder
    start = str(Path(settings.last_folder) / default_name)
    path, _ = QFileDialog.getSaveFileName(parent, title, start, "CSV files (*.csv)")
    if path:
        settings.last_folder = str(Path(path).parent)
        try:
            export(path)
        except WorkbenchError as exc:
            error.show_message(str(exc))


def show_job_progress(bar, done: int, total: int, what: str) -> None:
    """A background job's progress on ``bar``: busy until the total is known, then a percentage."""
    if total > 0:
        bar.setRange(0, 1000)
        bar.setValue(int(1000 * done / total))
    bar.setFormat(f"{what} %p%")


def apply_filter_query(apply: Callable[[], object], edit: FilterEdit, error: ErrorLabel) -> bool:
    """Run ``apply`` (a query change that raises WorkbenchError for a bad filter, changing
    nothing) and say the outcome in the filter box and the error line; False if it was refused."""
    try:
        apply()
    except WorkbenchError as exc:
        edit.set_error(str(exc))
        error.show_message(str(exc))
        return False
    edit.set_error("")
    error.show_message("")
    return True


def audit_filter_combo() -> QComboBox:
    """The "audit:" filter of the merge and vocabulary tables: one of the Audit tab's marks
    (``tasks.audit.MARKS``); disabled until that tab has audited the shown tokenizer."""
    from workbench.tasks.audit import MARKS

    combo = QComboBox()
    combo.addItem("audit: any", "")
    for category, label in MARKS:
        combo.addItem(f"audit: {label}", category)
    combo.setToolTip("Show only the entries the Audit tab marked so (run the audit there first)")
    combo.setEnabled(False)
    return combo


def reset_audit_filter(combo: QComboBox) -> None:
    """A new source has no audit yet: the filter goes back to any, disabled (no signal sent)."""
    combo.blockSignals(True)
    combo.setCurrentIndex(0)
    combo.setEnabled(False)
    combo.blockSignals(False)
