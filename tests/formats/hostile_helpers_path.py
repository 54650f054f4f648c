"""The hostile tests' in-process CLI runner, for format tests (a uniquely named module)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hostile"))

from hostile_helpers import run_inproc  # noqa: E402


def run_cli_capture(args: list[str]) -> tuple[int, str, str]:
    return run_inproc(args, timeout_s=60)
