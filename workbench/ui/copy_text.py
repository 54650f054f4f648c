"""Copy and cut give the text itself, never what a view draws in its place.

The inspector's views draw whitespace glyphs (``⋅`` for a space) and may show ``\\r\\n`` line breaks as
one; what lands on the clipboard must be the text (issue 14). Views that mix this in define
``selected_text()``; Copy / Cut (the keys, the context menu and ``copy()`` called from Python) put
it on the clipboard through :meth:`QClipboard.setText`, so Qt makes the ``QMimeData`` itself.

Why not override ``createMimeDataFromSelection``: a ``QMimeData`` created in Python and handed to
Qt there crashes the process at exit once two such views have copied (seen here: SIGSEGV in the
test suite). Left out: drag and drop of a selection, which still carries the drawn text.
"""

from __future__ import annotations

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication


class TextCopyMixin:
    """For a ``QPlainTextEdit`` subclass that defines ``selected_text()`` (mix in first)."""

    def selected_text(self) -> str:  # pragma: no cover - every user defines it
        raise NotImplementedError

    def copy(self) -> None:
        text = self.selected_text()
        if text:
            QApplication.clipboard().setText(text)

    def cut(self) -> None:
        if self.isReadOnly():  # type: ignore[attr-defined]
            self.copy()
            return
        self.copy()
        self.textCursor().removeSelectedText()  # type: ignore[attr-defined]

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy()
            event.accept()
            return
        if event.matches(QKeySequence.StandardKey.Cut) and not self.isReadOnly():  # type: ignore[attr-defined]
            self.cut()
            event.accept()
            return
        super().keyPressEvent(event)  # type: ignore[misc]

    def contextMenuEvent(self, event) -> None:  # noqa: N802 - Qt override
        menu = self.createStandardContextMenu(event.pos())  # type: ignore[attr-defined]
        for action in menu.actions():
            name = action.objectName()
            if name in ("edit-copy", "edit-cut"):
                action.triggered.disconnect()
                action.triggered.connect(self.copy if name == "edit-copy" else self.cut)
        menu.exec(event.globalPos())
        menu.deleteLater()
