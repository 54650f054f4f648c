"""Shared by the hostile-input tests: run the real CLI in-process or as a child, and check the
contract every bad input must meet — exit 0 or 2, on failure exactly one stderr line, never a
traceback."""

from __future__ import annotations

import contextlib
import hashlib
import io
import signal
import subprocess
import sys
from pathlib import Path

from workbench.cli import run_cli


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception``/``OSError`` can swallow it."""


def _alarm(_signum, _frame):
    raise Hang()


def run_inproc(args: list[str], timeout_s: int = 10) -> tuple[int, str, str]:
    """``run_cli(args)`` with stdout/stderr captured and a wall-clock guard (SIGALRM)."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = run_cli(args)
            except SystemExit as exc:  # argparse
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), err.getvalue()


def workbench(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real entry point in a child process, as a user or a script runs it."""
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False)


def without_warnings(stderr: str) -> str:
    """stderr without the pre-export check's ``warning:`` lines (advice on a successful export)."""
    return "".join(line for line in stderr.splitlines(keepends=True) if ": warning: " not in line)


def one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}:\n{stderr[-2000:]}"
    assert "Traceback" not in stderr
    return lines[0]


def digest(*paths: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.exists()}


def limited_memory(limit_bytes: int = 1 << 30):
    """A ``preexec_fn`` capping the child's address space: a regression that allocates by a hostile
    id fails fast with MemoryError instead of taking the machine down."""
    import resource

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def workbench_limited(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real entry point with a memory cap (see :func:`limited_memory`) and a timeout."""
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limited_memory(2 << 30), check=False)
