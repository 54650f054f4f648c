"""The desktop integration files the wheel installs pass the freedesktop validators (when installed:
``.ci/run`` installs ``desktop-file-utils`` and ``appstream``), and the wheel config names them all."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
SHARE = ROOT / "packaging" / "share"
APP_ID = "io.github.tokenizer_workbench.Workbench"


def _validate(tool: str, *args: str) -> subprocess.CompletedProcess:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (Debian: desktop-file-utils / appstream)")
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)


def test_desktop_file_validates():
    result = _validate("desktop-file-validate", str(SHARE / "applications" / f"{APP_ID}.desktop"))
    assert result.returncode == 0 and "error" not in result.stdout, result.stdout


def test_appstream_metadata_validates():
    result = _validate("appstreamcli", "validate", "--no-net", str(SHARE / "metainfo" / f"{APP_ID}.metainfo.xml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_wheel_installs_every_desktop_file_and_the_icon():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = [ROOT / f for files in config["tool"]["setuptools"]["data-files"].values() for f in files]
    assert all(p.is_file() for p in listed), [str(p) for p in listed if not p.is_file()]
    names = {p.name for p in listed}
    assert {f"{APP_ID}.desktop", f"{APP_ID}.metainfo.xml", f"{APP_ID}.mime.xml", f"{APP_ID}.svg"} <= names


def test_the_c_merge_loop_is_optional_without_a_compiler(tmp_path):
    """No C compiler (here: a compiler that always fails): building the optional BPE merge loop
    warns and succeeds, so `pip install .` still works and the pure loop trains (issue 24)."""
    import os
    import sys

    env = {**os.environ, "CC": "/bin/false"}
    result = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(tmp_path / "lib"),
                             "--build-temp", str(tmp_path / "tmp")], capture_output=True, text=True, cwd=ROOT,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "_bpe_merge" in result.stdout + result.stderr and "failed" in result.stdout + result.stderr
    assert not list((tmp_path / "lib").rglob("_bpe_merge*"))
