"""Helpers for the accessibility tests: walk the Tab chain with real key presses, list what should take
the focus, and read pixels of a grabbed widget (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication, QComboBox, QFrame, QRadioButton, QWidget
from pytestqt.exceptions import TimeoutError  # noqa: A004 - what waitUntil raises


def describe(widget: QWidget | None) -> str:
    if widget is None:
        return "None"
    return f"{type(widget).__name__}({widget.accessibleName() or widget.objectName() or ''})"


def in_combo_popup(widget: QWidget) -> bool:
    """The drop-down list of a combo box (a window of its own, never in the Tab chain)."""
    w: QWidget | None = widget
    while w is not None:
        if isinstance(w, QFrame) and isinstance(w.parentWidget(), QComboBox):
            return True
        w = w.parentWidget()
    return False


def should_take_focus(widget: QWidget) -> bool:
    """Visible, enabled, Tab-focusable and not standing in for another widget."""
    return (widget.isVisible() and widget.isEnabled() and not widget.isWindow()
            and bool(widget.focusPolicy() & Qt.FocusPolicy.TabFocus) and widget.focusProxy() is None
            and not in_combo_popup(widget) and widget.width() > 0 and widget.height() > 0)


def focusable_in(root: QWidget) -> list[QWidget]:
    """What Tab should reach under ``root``; of a group of exclusive radio buttons, the checked one
    (arrow keys move within the group, as everywhere)."""
    found = []
    for w in root.findChildren(QWidget):
        if not should_take_focus(w):
            continue
        if isinstance(w, QRadioButton) and w.autoExclusive() and not w.isChecked():
            continue
        found.append(w)
    return found


def walk_tab_chain(qtbot, start: QWidget, limit: int = 400, *, key=Qt.Key.Key_Tab,
                   check=None) -> tuple[list[QWidget], bool]:
    """Press ``key`` from ``start`` until the focus comes back to it; (widgets in order, came back).

    ``check(widget)`` runs at every stop, while the widget holds the focus."""
    start.setFocus(Qt.FocusReason.TabFocusReason)
    try:
        qtbot.waitUntil(lambda: QApplication.focusWidget() is start, timeout=3000)
    except TimeoutError:
        raise AssertionError(f"{describe(start)} takes no focus; it is at {describe(QApplication.focusWidget())}, "
                             f"active window {describe(QApplication.activeWindow())}") from None
    seen: list[QWidget] = [start]
    for _ in range(limit):
        widget = QApplication.focusWidget()
        if widget is None:
            return seen, False
        if getattr(widget, "tab_moves_on_after_escape", False):
            qtbot.keyClick(widget, Qt.Key.Key_Escape)  # the editor's documented way out
        qtbot.keyClick(widget, key)
        now = QApplication.focusWidget()
        if now is start:
            return seen, True
        if now is widget:  # Tab was eaten: a trap
            return seen, False
        if check is not None and now is not None:
            check(now)
        seen.append(now)
    return seen, False


def colours_in(image: QImage, x0: int, y0: int, x1: int, y1: int) -> set[str]:
    """The distinct colours (#rrggbb) in a rectangle of ``image``."""
    found = set()
    for y in range(max(y0, 0), min(y1, image.height())):
        for x in range(max(x0, 0), min(x1, image.width())):
            found.add(QColor(image.pixel(x, y)).name())
    return found
