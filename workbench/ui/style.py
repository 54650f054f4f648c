"""Look and feel: Fusion with a light or dark palette that follows the system, status colours,
plot colours and the small icons the window draws itself.

The palette follows ``QStyleHints.colorScheme()`` unless the user picked Light or Dark in the View
menu; widgets that paint with their own colours (the plots) listen for ``PaletteChange``. Icons
are drawn with ``QPainter`` (status dots) or loaded from ``workbench/resources/icons`` (the app icon), so
nothing depends on an icon theme being installed. What it leaves out: per-widget style sheets
beyond a few accents — the palette does the work, so both schemes stay consistent.

Keyboard focus (issue 14) is drawn here once for the whole window, in two parts: the style draws a
strong two-tone focus rectangle wherever Qt asks for one (the current cell of a table or tree, the
current tab of a tab bar, check boxes, tool buttons), and :class:`FocusRing` draws a ring just inside
every other widget that holds the focus (buttons, combo and spin boxes, line edits, the views
themselves, the token editor, the plots), which Fusion marks faintly or not at all. The ring's
colours are chosen for a contrast of at least 3:1 against the colours around them
(:func:`contrast_ratio`, WCAG 2.x non-text contrast).
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QGuiApplication,
    QIcon,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QPixmap,
)
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QProxyStyle,
    QRadioButton,
    QStyle,
    QStyleFactory,
    QStyleOptionHeader,
    QTabBar,
    QToolButton,
    QWidget,
)

ICON_DIR = Path(str(files("workbench.resources") / "icons"))

# Run status → (colour, glyph). Colours read on light and dark backgrounds alike.
STATUS_STYLE = {
    "running": ("#2f80ed", "▶"),
    "finished": ("#27ae60", "✓"),
    "cancelled": ("#d68910", "■"),
    "paused": ("#d68910", "‖"),
    "interrupted": ("#e67e22", "!"),
    "failed": ("#e74c3c", "✕"),
    "damaged": ("#e74c3c", "!"),  # a value stored in the run is damaged (store.validate)
}
# Curve colours for overlaid runs (colour-blind-friendly Okabe–Ito order, then Tableau).
# The focus ring (ring, inner line) per scheme: see focus_colours and tests/ui/test_ui_a11y.py.
FOCUS_LIGHT, FOCUS_LIGHT_INNER = "#0b4fb3", "#ffffff"
FOCUS_DARK, FOCUS_DARK_INNER = "#8ab4f8", "#111214"
RUN_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#7f7f7f")
# ... and, so that colour is never the only cue (issue 14), a line style, a marker and a bar hatch
# paired with each colour: the n-th series always has the n-th of each.
RUN_LINE_STYLES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine,
                   Qt.PenStyle.DashDotDotLine)
RUN_SYMBOLS = ("o", "s", "t", "d", "star", "h", "t1", "p")  # pyqtgraph marker names
RUN_HATCHES = (Qt.BrushStyle.SolidPattern, Qt.BrushStyle.BDiagPattern, Qt.BrushStyle.CrossPattern,
               Qt.BrushStyle.FDiagPattern, Qt.BrushStyle.Dense4Pattern, Qt.BrushStyle.HorPattern,
               Qt.BrushStyle.DiagCrossPattern, Qt.BrushStyle.VerPattern)


def series_index(colour: str) -> int:
    """Where ``colour`` stands in :data:`RUN_COLOURS` (0 for a colour not from there)."""
    wanted = colour.lower()
    return next((i for i, c in enumerate(RUN_COLOURS) if c.lower() == wanted), 0)


def run_line_style(colour: str) -> Qt.PenStyle:
    """The line style that goes with a run colour: solid, dashed, dotted …"""
    return RUN_LINE_STYLES[series_index(colour) % len(RUN_LINE_STYLES)]


def run_symbol(index: int) -> str:
    return RUN_SYMBOLS[index % len(RUN_SYMBOLS)]


def run_hatch(index: int) -> Qt.BrushStyle:
    return RUN_HATCHES[index % len(RUN_HATCHES)]


def is_dark(palette: QPalette | None = None) -> bool:
    pal = palette or QGuiApplication.palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < 128


def system_prefers_dark() -> bool:
    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    return bool(scheme and scheme() == Qt.ColorScheme.Dark)


def dark_palette() -> QPalette:
    """A neutral dark palette for Fusion (the standard one is light)."""
    p = QPalette()
    window, base, alt, text = QColor("#2b2d30"), QColor("#1e1f22"), QColor("#26282b"), QColor("#dfe1e5")
    disabled = QColor("#7a7e85")
    accent = QColor("#3d7fd9")
    roles = {
        QPalette.ColorRole.Window: window, QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base, QPalette.ColorRole.AlternateBase: alt,
        QPalette.ColorRole.ToolTipBase: QColor("#3c3f41"), QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.PlaceholderText: disabled, QPalette.ColorRole.Text: text,
        QPalette.ColorRole.Button: QColor("#35373b"), QPalette.ColorRole.ButtonText: text,
        QPalette.ColorRole.BrightText: QColor("#ff6b6b"), QPalette.ColorRole.Link: QColor("#6aa9ff"),
        QPalette.ColorRole.LinkVisited: QColor("#b48ef0"), QPalette.ColorRole.Highlight: accent,
        QPalette.ColorRole.HighlightedText: QColor("#ffffff"), QPalette.ColorRole.Light: QColor("#4a4d52"),
        QPalette.ColorRole.Midlight: QColor("#3c3f43"), QPalette.ColorRole.Mid: QColor("#303236"),
        QPalette.ColorRole.Dark: QColor("#18191b"), QPalette.ColorRole.Shadow: QColor("#000000"),
    }
    for role, colour in roles.items():
        p.setColor(role, colour)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Highlight, QColor("#4a4d52"))
    return p


def light_palette() -> QPalette:
    style = QStyleFactory.create("Fusion")
    p = style.standardPalette()
    p.setColor(QPalette.ColorRole.Highlight, QColor("#2f6fce"))
    p.setColor(QPalette.ColorRole.PlaceholderText, QColor("#8a8d91"))
    return p


class WorkbenchStyle(QProxyStyle):
    """Fusion, with a table header's sort arrow pointing the way the order goes, and a focus
    rectangle that can be seen (see the module docstring).

    Qt hands the style ``SortDown`` for ascending order (the Windows convention) and Fusion draws
    it as ▼; users read ▼ as "largest first" (issue 14). Here ascending (smallest at the top) is
    ▲ and descending ▼, as on macOS and GTK.
    """

    def drawPrimitive(self, element, option, painter, widget=None) -> None:  # noqa: N802 - Qt override
        if element == QStyle.PrimitiveElement.PE_FrameFocusRect:
            # Fusion draws a faint 1-px outline, and only after a key press; the current cell of a
            # selected row was invisible (its outline matched the selection colour).
            outer, inner = focus_colours(option.palette)
            paint_ring(painter, QRectF(option.rect), outer, inner, width=2 if option.rect.height() >= 14 else 1)
            return
        if element == QStyle.PrimitiveElement.PE_IndicatorHeaderArrow and isinstance(option, QStyleOptionHeader):
            flipped = QStyleOptionHeader(option)
            if option.sortIndicator == QStyleOptionHeader.SortIndicator.SortDown:
                flipped.sortIndicator = QStyleOptionHeader.SortIndicator.SortUp
            elif option.sortIndicator == QStyleOptionHeader.SortIndicator.SortUp:
                flipped.sortIndicator = QStyleOptionHeader.SortIndicator.SortDown
            super().drawPrimitive(element, flipped, painter, widget)
            return
        super().drawPrimitive(element, option, painter, widget)


def focus_colours(palette: QPalette | None = None) -> tuple[QColor, QColor]:
    """The focus ring's two colours for ``palette``: the ring, and the thin line inside it.

    The ring alone stands out against the window, the fields and the buttons (≥ 3:1); the inner
    line, in the opposite lightness, stands out against the selection colour, where the ring does
    not (a focused cell in a selected row).
    """
    if is_dark(palette):
        return QColor(FOCUS_DARK), QColor(FOCUS_DARK_INNER)
    return QColor(FOCUS_LIGHT), QColor(FOCUS_LIGHT_INNER)


def relative_luminance(colour: QColor) -> float:
    """WCAG 2.x relative luminance of an opaque colour (0 black … 1 white)."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2.x contrast ratio, 1 (same) … 21 (black on white); 3 is the floor for a focus ring."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def paint_ring(painter: QPainter, rect: QRectF, outer: QColor, inner: QColor, width: int = 2) -> None:
    """A ``width``-px ring in ``outer`` along the inside of ``rect`` and a 1-px line of ``inner`` inside it.

    Filled rectangles, not stroked ones, so the ring stays crisp at any device pixel ratio.
    """
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
    for colour, inset, thickness in ((outer, 0, width), (inner, width, 1)):
        r = rect.adjusted(inset, inset, -inset, -inset)
        if r.width() <= 2 * thickness or r.height() <= 2 * thickness:
            break
        painter.fillRect(QRectF(r.left(), r.top(), r.width(), thickness), colour)
        painter.fillRect(QRectF(r.left(), r.bottom() - thickness, r.width(), thickness), colour)
        painter.fillRect(QRectF(r.left(), r.top(), thickness, r.height()), colour)
        painter.fillRect(QRectF(r.right() - thickness, r.top(), thickness, r.height()), colour)
    painter.restore()


def ring_target(widget: QWidget | None) -> QWidget | None:
    """The widget :class:`FocusRing` draws around when ``widget`` has the focus, or None.

    None for what the style marks itself through ``PE_FrameFocusRect`` (check boxes, radio and tool
    buttons) and for windows; the line edit inside a combo or spin box gives its box.
    """
    if widget is None or widget.isWindow() or widget.window().windowType() == Qt.WindowType.Popup:
        return None  # a pop-up (a combo box's list) shows its current row itself
    parent = widget.parentWidget()
    if isinstance(parent, (QComboBox, QAbstractSpinBox)):
        widget = parent
    if isinstance(widget, (QCheckBox, QRadioButton, QToolButton)):
        return None
    return widget


class _Ring(QWidget):
    """The painted ring: a transparent child laid over its widget, which mouse events go through."""

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setObjectName("focusRing")

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt override
        outer, inner = focus_colours(self.palette())
        painter = QPainter(self)
        paint_ring(painter, QRectF(self.rect()), outer, inner)
        painter.end()


class FocusRing(QObject):
    """Follows ``QApplication.focusChanged`` and lays a :class:`_Ring` over the focused widget.

    The ring is a child of that widget, inside its edges: drawn outside (as ``QFocusFrame`` does)
    it was clipped to nothing where a view fills its splitter or dock. A widget that is destroyed
    takes its ring along; the next focus change makes a new one. What it leaves out: a ring for a
    window or a pop-up menu (they show their own state) and rings drawn by the style (see
    :func:`ring_target`).
    """

    def __init__(self, app: QApplication):
        super().__init__(app)
        self.ring: _Ring | None = None
        self.target: QWidget | None = None
        app.focusChanged.connect(self._on_focus_changed)

    def _on_focus_changed(self, _old: QWidget | None, now: QWidget | None) -> None:
        self.follow(ring_target(now))

    def follow(self, target: QWidget | None) -> None:
        if self.target is not None and _alive(self.target):
            self.target.removeEventFilter(self)
        self.target = target
        ring = self.ring if self.ring is not None and _alive(self.ring) else None
        if target is None:
            if ring is not None:
                ring.hide()
            return
        if ring is None:
            ring = self.ring = _Ring(target)
        elif ring.parentWidget() is not target:
            ring.setParent(target)
        target.installEventFilter(self)
        ring.setGeometry(_ring_rect(target))
        ring.raise_()
        ring.show()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        moved = (QEvent.Type.Resize, QEvent.Type.ChildAdded, QEvent.Type.Paint)
        if watched is self.target and event.type() in moved and self.ring is not None and _alive(self.ring) \
                and isinstance(watched, QWidget):
            rect = _ring_rect(watched)
            if self.ring.geometry() != rect:
                self.ring.setGeometry(rect)
            if event.type() != QEvent.Type.Paint:
                self.ring.raise_()
        return False


def _ring_rect(widget: QWidget) -> QRect:
    """The whole widget; for a tab bar, its current tab (Fusion marks neither)."""
    if isinstance(widget, QTabBar) and widget.currentIndex() >= 0:
        return widget.tabRect(widget.currentIndex())
    return widget.rect()


def _alive(obj: QObject) -> bool:
    import shiboken6

    return shiboken6.isValid(obj)


def apply_theme(app: QApplication, theme: str = "system") -> str:
    """Fusion plus the palette for ``theme`` (system/light/dark); returns the scheme applied.

    The first call also starts the app's :class:`FocusRing` (one per application).
    """
    if not isinstance(app.style(), WorkbenchStyle):
        app.setStyle(WorkbenchStyle(QStyleFactory.create("Fusion")))
    if not isinstance(getattr(app, "_workbench_focus_ring", None), FocusRing):
        app._workbench_focus_ring = FocusRing(app)  # type: ignore[attr-defined]
    dark = theme == "dark" or (theme == "system" and system_prefers_dark())
    app.setPalette(dark_palette() if dark else light_palette())
    return "dark" if dark else "light"


def monospace_font(point_size: float | None = None) -> QFont:
    font = QFont("DejaVu Sans Mono")
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    if point_size:
        font.setPointSizeF(point_size)
    return font


def muted(palette: QPalette | None = None) -> QColor:
    pal = palette or QGuiApplication.palette()
    return pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText) if is_dark(pal) \
        else QColor("#6b6f75")


def error_colour(palette: QPalette | None = None) -> QColor:
    return QColor("#ff7b72") if is_dark(palette) else QColor("#c0392b")


@lru_cache(maxsize=64)
def status_icon(status: str, size: int = 16) -> QIcon:
    """A filled circle in the status colour with a white glyph."""
    colour, glyph = STATUS_STYLE.get(status, ("#95a5a6", "?"))
    icon = QIcon()
    for scale in (1, 2):
        px = QPixmap(size * scale, size * scale)
        px.setDevicePixelRatio(scale)
        px.fill(Qt.GlobalColor.transparent)
        painter = QPainter(px)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(colour))
        painter.drawEllipse(QRectF(1, 1, size - 2, size - 2))
        painter.setPen(QPen(QColor("white")))
        font = QFont()
        font.setPixelSize(int(size * 0.62))
        font.setBold(True)
        painter.setFont(font)
        painter.drawText(QRectF(0, 0, size, size), Qt.AlignmentFlag.AlignCenter, glyph)
        painter.end()
        icon.addPixmap(px)
    return icon


def app_icon() -> QIcon:
    """The app icon from ``workbench/resources/icons`` (SVG, with PNG fallbacks), else a drawn one."""
    icon = QIcon()
    svg = ICON_DIR / "io.github.tokenizer_workbench.Workbench.svg"  # the freedesktop icon name too
    if svg.exists():
        icon.addFile(str(svg))
    for png in sorted(ICON_DIR.glob("tokenizer-workbench-*.png")):
        icon.addFile(str(png))
    return drawn_app_icon() if icon.isNull() else icon


def drawn_app_icon(size: int = 64) -> QIcon:
    px = QPixmap(size, size)
    px.fill(Qt.GlobalColor.transparent)
    painter = QPainter(px)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    path = QPainterPath()
    path.addRoundedRect(QRectF(2, 2, size - 4, size - 4), size * 0.18, size * 0.18)
    painter.fillPath(path, QColor("#1f4e8c"))
    colours = ("#56B4E9", "#E69F00", "#009E73")
    w = (size - 16) / 3
    for i, c in enumerate(colours):
        painter.fillRect(QRectF(8 + i * w + 1, size * 0.36, w - 2, size * 0.28), QColor(c))
    painter.setPen(QPen(QColor("white"), 2))
    painter.drawLine(QPointF(8, size * 0.76), QPointF(size - 8, size * 0.76))
    painter.end()
    return QIcon(px)


def recolour_legend(legend, fg: QColor) -> None:
    """Give a pyqtgraph ``LegendItem`` the theme's text colour, entries already drawn included.

    ``LegendItem.setLabelTextColor`` only applies to entries added later: after a theme switch the
    existing labels kept the old theme's colour (dark text on the dark theme's background).
    """
    legend.setLabelTextColor(fg)
    for _sample, label in legend.items:
        label.setText(label.text, color=fg.name())
