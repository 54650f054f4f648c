"""Colours for tokens, computed without Qt: soft palettes for light and dark themes that pass WCAG AA
against their text colour, neighbours never equal, an optional stable colour per id, and the style
bits (partial / special / unknown / superword) a highlighter decodes.
"""

from __future__ import annotations

from typing import Sequence

from workbench.core.offsets import Group, Span

# Style bits of a coloured span: the low byte is the colour index, the flags sit above it.
COLOUR_MASK = 0xFF


PARTIAL = 0x100  # several tokens share these characters (byte-level BPE inside a character)


SPECIAL = 0x200  # a recognised special token


UNKNOWN = 0x800  # a piece this vocabulary cannot encode (shown, counted apart, never given an id)
SUPERWORD = 0x1000  # one token across a space (SuperBPE's superwords: "␣of␣the")




# Soft backgrounds, ordered so that consecutive entries differ in hue by far (blue, amber, green,
# pink, …). Light ones under dark text, dark ones under light text; both pass WCAG AA (4.5:1).
LIGHT_PALETTE = ("#c7dcfb", "#fbe5a1", "#c3f0d2", "#f9cfe4", "#b5ecf3", "#fbd5b3", "#ddd6fb", "#dcf0ac")


DARK_PALETTE = ("#24436b", "#5b4a14", "#1d5234", "#64284a", "#17535a", "#643818", "#42357a", "#3f5418")


TEXT_ON_LIGHT = "#1b1b1b"


TEXT_ON_DARK = "#ececec"


SPECIAL_COLOURS = {False: ("#6d28d9", "#ffffff"), True: ("#c4b5fd", "#1e1b4b")}  # (background, text)


MARK_COLOURS = {  # the other marks, per theme (dark = True)
    "partial": {False: "#57534e", True: "#d6d3d1"},
    "disagree": {False: "#dc2626", True: "#f87171"},
    "selected": {False: "#f59e0b", True: "#fbbf24"},
    "hover": {False: "#1d4ed8", True: "#93c5fd"},
    "glyph": {False: "#8a8a8a", True: "#9a9a9a"},
    "superword": {False: "#0f766e", True: "#5eead4"},
}


# ---- colours ----------------------------------------------------------------------------------------
def palette(dark: bool) -> tuple[str, ...]:
    """The token backgrounds for a light or dark theme (hex ``#rrggbb``)."""
    return DARK_PALETTE if dark else LIGHT_PALETTE


def stable_colour(token_id: int, n: int) -> int:
    """The same colour for the same id everywhere (Knuth's multiplicative hash)."""
    return ((token_id * 2654435761) & 0xFFFFFFFF) % n


def assign_colours(groups: Sequence[Group], tokens: Sequence[Span], text: str, n: int,
                   stable: bool = False, *, prev: int = -1, restart: bool = True) -> list[int]:
    """A colour index per group; two neighbouring groups never get the same one.

    By position (default): colours cycle within a line and restart at 0 after a group holding a
    line break (which itself never takes 0), so an edit changes the colours of its own line only.
    ``stable``: a colour per token id, moved to the next colour where it would equal its left
    neighbour's. ``prev`` is the colour of
    the group before the first (``-1``: none); ``restart``: the first group begins a line.
    """
    if n < 2:
        raise ValueError("need at least two colours to keep neighbours apart")
    out: list[int] = []
    append = out.append
    find = text.find
    for g in groups:
        start, end, first = g[0], g[1], g[2]  # plain tuples in the caches (the GC skips those)
        line_break = find("\n", start, end) != -1 or find("\r", start, end) != -1
        if stable:
            colour = stable_colour(tokens[first][0], n)
            if colour == prev:
                colour = (colour + 1) % n
        else:
            if restart:
                colour = 1 if prev == 0 else 0
            else:
                colour = prev + 1 if prev + 1 < n else 0
            if line_break and colour == 0 and n > 2:
                # A line's last group never takes colour 0, so every line starts with 0 and a
                # line's colours never depend on the line above.
                colour = 1 if prev != 1 else 2
        append(colour)
        prev = colour
        restart = line_break
    return out


def contrast_ratio(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 … 21)."""
    def luminance(colour: str) -> float:
        channels = [int(colour[k:k + 2], 16) / 255 for k in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)
