"""Look and feel: Fusion with a light or dark palette that follows the system, status colours,
plot colours and the small icons the window draws itself.

The palette follows ``QStyleHints.colorScheme()`` unless the user picked Light or Dark in the View
menu; widgets that paint with their own colours (the plots) listen for ``PaletteChange``. Icons
are drawn with ``QPainter`` (status dots) or loaded from ``workbench/resources/icons`` (the app icon), so
nothing depends on an icon theme being installed. What it leaves out: per-widget style sheets
beyond a few accents — the palette does the work, so both schemes stay consistent.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from PySide6.QtCore import QPointF, QRectF, Qt
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
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QStyleFactory, QStyleOptionHeader

ICON_DIR = Path(str(files("workbench.resources") / "icons"))

# Run status → (colour, glyph). Colours read on light and dark backgrounds alike.
STATUS_STYLE = {
    "running": ("#2f80ed", "▶"),
    "finished": ("#27ae60", "✓"),
    "cancelled": ("#d68910", "■"),
    "paused": ("#d68910", "‖"),
    "interrupted": ("#e67e22", "!"),
    "failed": ("#e74c3c", "✕"),
}
# Curve colours for overlaid runs (colour-blind-friendly Okabe–Ito order, then Tableau).
RUN_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#7f7f7f")


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
    """Fusion, with a table header's sort arrow pointing the way the order goes.

    Qt hands the style ``SortDown`` for ascending order (the Windows convention) and Fusion draws
    it as ▼; users read ▼ as "largest first" (issue 14). Here ascending (smallest at the top) is
    ▲ and descending ▼, as on macOS and GTK.
    """

    def drawPrimitive(self, element, option, painter, widget=None) -> None:  # noqa: N802 - Qt override
        if element == QStyle.PrimitiveElement.PE_IndicatorHeaderArrow and isinstance(option, QStyleOptionHeader):
            flipped = QStyleOptionHeader(option)
            if option.sortIndicator == QStyleOptionHeader.SortIndicator.SortDown:
                flipped.sortIndicator = QStyleOptionHeader.SortIndicator.SortUp
            elif option.sortIndicator == QStyleOptionHeader.SortIndicator.SortUp:
                flipped.sortIndicator = QStyleOptionHeader.SortIndicator.SortDown
            super().drawPrimitive(element, flipped, painter, widget)
            return
        super().drawPrimitive(element, option, painter, widget)


def apply_theme(app: QApplication, theme: str = "system") -> str:
    """Fusion plus the palette for ``theme`` (system/light/dark); returns the scheme applied."""
    if not isinstance(app.style(), WorkbenchStyle):
        app.setStyle(WorkbenchStyle(QStyleFactory.create("Fusion")))
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
