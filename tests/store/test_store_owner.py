"""Is a run's owner still alive? Decided through psutil: running, exited, zombie, reused pid."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import psutil

from workbench.store.opening import owner_alive


def test_owner_alive_tells_a_live_owner_from_a_dead_one_and_from_a_reused_pid():
    host = socket.gethostname()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        created = psutil.Process(child.pid).create_time()
        assert owner_alive(child.pid, host, started=created + 5)  # the run started after its owner
        assert not owner_alive(child.pid, host, started=created - 60)  # this process came later: pid reused
        assert owner_alive(child.pid, "another-host", started=created - 60)  # cannot tell: assumed alive
        child.kill()
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not owner_alive(child.pid, host)  # killed, not yet reaped: it will never write again
    finally:
        child.kill()
        child.wait()
    assert not owner_alive(child.pid, host) and not owner_alive(None, host)
