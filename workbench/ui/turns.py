"""How much of the window thread's current turn of the event loop is used: work that can wait a
turn (a plot's first drawing, the next batch of a long list, the next step of taking a project over)
asks :func:`room` first and, when the turn is already spent, starts its timer again instead.

Several views each doing "one step per turn" still stacked up in the same turn: every zero-interval
timer that is due fires in one pass of the event loop, so the run list's next 20 rows, a plot's
curves, the Compare tab's listing and the paint of the last change made one 30–60 ms stretch of the
window's thread (issue 26: never more than a frame). A turn begins when the event dispatcher is
about to wait (``aboutToBlock``) or wakes (``awake``); :func:`used` is the thread's CPU time since.

One step per turn: once a step has run in a turn, every other step waits for a later one, however
little the first took — several feeders (the run history's next rows, a plot, the next step of a
take-over) each passed the budget check at the start of the same turn, or ran there because they
had waited :data:`MAX_WAITS` turns, and together made one 30–45 ms stretch with the paint between.

What it leaves out: what cannot wait (input, a paint, a live run's redraw) runs as before; a step
that was put off :data:`MAX_WAITS` turns in a row runs anyway (if no other step ran in that turn),
so a busy loop never starves it.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QAbstractEventDispatcher, QTimer

#: CPU time of a turn (s) after which a step that can wait is put off to the next turn: what is
#: left of a 60 Hz frame must hold the step (a few ms) and the paint of what it changed.
BUDGET_S = 0.004
#: Turns in a row a step may be put off before it runs regardless.
MAX_WAITS = 4

_start = 0.0
_stepped = False  # a step that can wait has run in this turn
_hooked: object | None = None


def _mark() -> None:
    global _start, _stepped
    _start = time.thread_time()
    _stepped = False


def _hook() -> None:
    global _hooked
    dispatcher = QAbstractEventDispatcher.instance()
    if dispatcher is None or dispatcher is _hooked:
        return
    dispatcher.aboutToBlock.connect(_mark)
    dispatcher.awake.connect(_mark)
    _hooked = dispatcher
    _mark()


def used() -> float:
    """The window thread's CPU time (s) in the current turn of its event loop so far."""
    _hook()
    return time.thread_time() - _start


def room(timer: QTimer, budget: float = BUDGET_S) -> bool:
    """Whether a step driven by ``timer`` may run in this turn: no other step has run in it, and
    it has used less than ``budget`` (or the step was put off :data:`MAX_WAITS` turns already).
    When not, the timer is started again: the step comes in a later turn."""
    global _stepped
    spent = used()  # (marks the turn's start on the first call)
    if _stepped:  # another step's turn: not counted as a wait (the next turn has none yet)
        timer.start()
        return False
    waits = int(timer.property("turn_waits") or 0)
    if spent < budget or waits >= MAX_WAITS:
        timer.setProperty("turn_waits", 0)
        _stepped = True
        return True
    timer.setProperty("turn_waits", waits + 1)
    timer.start()
    return False
