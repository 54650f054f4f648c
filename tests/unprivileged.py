"""Permission bits do not stop root, and CI runs as root: a test about a file that cannot be written
or read re-runs itself in a child pytest that permission bits do stop — root without its
file-permission override (capabilities dropped before exec), or the user ``nobody`` — instead of
skipping. A uniquely named module, safe to import from tests."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHILD_MARK = "WORKBENCH_TEST_UNPRIVILEGED"


def _without_file_permission_override() -> None:
    """Root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (dropped from the bounding set before
    exec): permission bits then stop it as they stop any user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "cannot drop a capability")


def _as_nobody() -> None:
    import pwd

    user = pwd.getpwnam("nobody")
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)


def unprivileged(folder: Path) -> Callable[[], None] | None:
    """How to run a child that permission bits stop: as we are when not root; as root without its
    file-permission override, or as ``nobody``, when one of them works here (tried on ``folder``);
    None when neither does (a container without the capability, an interpreter out of nobody's reach)."""
    if os.geteuid() != 0:
        return lambda: None
    locked = folder / "probe"
    locked.mkdir()
    locked.chmod(0)
    try:
        for way in (_without_file_permission_override, _as_nobody):
            try:
                probe = subprocess.run([sys.executable, "-c", f"import os; os.listdir({str(locked)!r})"],
                                       preexec_fn=way, capture_output=True, text=True, timeout=60, check=False)
            except (OSError, subprocess.SubprocessError):
                continue
            if probe.returncode == 1 and "PermissionError" in probe.stderr:
                return way
        return None
    finally:
        locked.rmdir()


def ran_unprivileged(request: pytest.FixtureRequest) -> bool:
    """As root: run this test again in an unprivileged child pytest, assert it passed there, and
    return True (the caller returns). Otherwise (not root, or already that child) return False and
    the caller goes on. Skips, saying why, only where no unprivileged way exists here."""
    if os.geteuid() != 0 or os.environ.get(CHILD_MARK):
        return False
    with tempfile.TemporaryDirectory(prefix="workbench-unprivileged-") as folder:
        Path(folder).chmod(0o777)
        way = unprivileged(Path(folder))
        if way is None:
            pytest.skip("running as root, and neither root without CAP_DAC_OVERRIDE nor the user nobody can "
                        "run this Python here: permission bits do not stop root")
        env = dict(os.environ, **{CHILD_MARK: "1"}, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-m", "pytest", "-n0", "-p", "no:cacheprovider", "-q",
                               f"--basetemp={folder}/tmp", request.node.nodeid],
                              cwd=ROOT, env=env, preexec_fn=way, capture_output=True, text=True,
                              timeout=240, check=False)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    return True
