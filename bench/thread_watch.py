"""Which threads of a process ran, and when: a watcher process reading /proc/PID/task/*/schedstat.

A window thread that stands still with little CPU of its own is waiting — for a core, or for the
GIL another thread holds in one long C call. Python cannot see that from inside (a sampler thread
needs the GIL itself), so a separate process reads each thread's run time (nanoseconds, from
``schedstat``) every ~2 ms; :meth:`ThreadWatch.cpu_in` then says how much each thread ran in a
stall's interval. Clocks: ``time.perf_counter`` is CLOCK_MONOTONIC on Linux in both processes.
Linux only (no /proc elsewhere: the watch reports nothing).

    python bench/thread_watch.py PID OUT   # the watcher itself (started by ThreadWatch)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


class ThreadWatch:
    def __init__(self, pid: int | None = None):
        import tempfile

        self.pid = pid or os.getpid()
        self.out = Path(tempfile.mkstemp(suffix=".watch")[1])
        self.proc: subprocess.Popen | None = None
        self.samples: list[tuple[float, int, int]] | None = None

    def start(self) -> None:
        if not Path(f"/proc/{self.pid}/task").is_dir():
            return
        self.proc = subprocess.Popen([sys.executable, __file__, str(self.pid), str(self.out)])

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        self.proc = None
        rows = []
        for line in self.out.read_text().splitlines():
            t, tid, ns = line.split()
            rows.append((float(t), int(tid), int(ns)))
        self.samples = rows
        self.out.unlink(missing_ok=True)

    def cpu_in(self, t0: float, t1: float) -> dict[int, float]:
        """Seconds each thread ran between ``t0`` and ``t1`` (from the samples nearest them)."""
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for t, tid, ns in self.samples or []:
            if t <= t0:
                first[tid] = ns
            elif t <= t1:
                first.setdefault(tid, ns)
                last[tid] = ns
            elif tid not in last or t <= t1 + 0.004:
                last[tid] = ns
        return {tid: (last[tid] - first.get(tid, last[tid])) / 1e9 for tid in last}


def _watch(pid: int, out: Path) -> None:
    stop = False

    def on_term(*_):
        nonlocal stop
        stop = True
    signal.signal(signal.SIGTERM, on_term)
    fds: dict[int, int] = {}
    rows: list[str] = []
    listed = 0.0
    while not stop:
        now = time.perf_counter()
        if now - listed > 0.05:
            listed = now
            try:
                for name in os.listdir(f"/proc/{pid}/task"):
                    tid = int(name)
                    if tid not in fds:
                        try:
                            fds[tid] = os.open(f"/proc/{pid}/task/{tid}/schedstat", os.O_RDONLY)
                        except OSError:
                            pass
            except OSError:
                break
        for tid, fd in list(fds.items()):
            try:
                ns = int(os.pread(fd, 64, 0).split()[0])
            except (OSError, ValueError, IndexError):
                os.close(fd)
                del fds[tid]
                continue
            rows.append(f"{now:.6f} {tid} {ns}")
        time.sleep(0.002)
    out.write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    _watch(int(sys.argv[1]), Path(sys.argv[2]))
