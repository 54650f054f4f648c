"""Child processes that end with their parent.

A training child, a scan worker or a counting worker whose parent was killed (``kill -9`` of the
window, a crashed trainer) is reparented and would live on: blocked on a pipe that its own copy of
the parent's end keeps open, holding memory and, for spawn pools, multiprocessing's resource
tracker. :func:`watch_parent` starts a daemon thread that polls the parent's pid twice a second
and calls a function (by default: exit at once) when the process has been reparented.

Left out: Windows, where a process is not reparented (``os.getppid()`` keeps the dead parent's pid);
there the pools' pipes break instead and the workers end on that. Linux's ``PR_SET_PDEATHSIG`` would
be immediate but fires when the parent *thread* ends, which a pool's feeder thread does routinely.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

POLL_S = 0.5


def _exit_now() -> None:
    os._exit(1)  # no cleanup: the parent that would read our results is gone


def parent_gone(parent: int) -> bool:
    """Whether this process no longer has ``parent`` as its parent (it was reparented)."""
    return os.getppid() != parent


def watch_parent(on_gone: Callable[[], None] = _exit_now, *, poll_s: float = POLL_S) -> threading.Thread | None:
    """Call ``on_gone()`` once, from a daemon thread, when this process's parent has died."""
    if os.name != "posix":
        return None
    parent = os.getppid()
    if parent <= 1:  # started by init or a subreaper already: nothing to watch
        return None

    def watch() -> None:
        while not parent_gone(parent):
            time.sleep(poll_s)
        on_gone()

    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread
