"""Numbers, sizes, durations and token pieces as the window writes them.

Plain functions (no Qt), so labels, tables, tooltips and tests agree on one spelling.
"""

from __future__ import annotations

import time

from workbench.core.display import piece_text


def human_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"


def count(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def when(timestamp: float | None) -> str:
    if not timestamp:
        return ""
    now = time.time()
    fmt = "%H:%M:%S" if now - timestamp < 20 * 3600 else "%Y-%m-%d %H:%M"
    return time.strftime(fmt, time.localtime(timestamp))


def piece(data: bytes, *, marks: bool = True) -> str:
    """A token piece as the rest of the window shows it: the one renderer,
    :func:`workbench.core.display.piece_text` (``marks``: a space reads ``␣``)."""
    return piece_text(data, visible_space=marks)


def script_mix(scripts: dict[str, int], limit: int = 3) -> str:
    """``Latin 71% · Cyrillic 20% · Han 9%`` (Common/Other folded in when they are all there is)."""
    total = sum(scripts.values())
    if not total:
        return "–"
    letters = {k: v for k, v in scripts.items() if k not in ("Common", "Other")} or scripts
    letters_total = sum(letters.values())
    parts = []
    for name, n in sorted(letters.items(), key=lambda kv: -kv[1])[:limit]:
        share = 100.0 * n / letters_total
        parts.append(f"{name} {share:.0f}%" if share >= 1 else f"{name} <1%")
    return " · ".join(parts)
