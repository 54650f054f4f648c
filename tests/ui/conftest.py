"""Fixtures for the window tests: an isolated app identity, small corpora, a window, modal answers.

Settings and app data go to a temporary folder (never the user's), every window is shut down
(threads joined, child process stopped) at teardown, and modal message boxes are answered by
clicking their buttons from a timer — the real dialog code runs.
"""

from __future__ import annotations

import os
import random
import string
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QSettings  # noqa: E402
from ui_helpers import BoxAnswerer, open_and_wait  # noqa: E402

SMALL_TEXT = (
    "the quick brown fox jumps over the lazy dog\n"
    "the lazy dog sleeps; the quick fox runs\n"
    "Привет, мир! 世界 hello world 12345\n"
) * 40


@pytest.fixture(scope="session", autouse=True)
def app_identity(qapp, tmp_path_factory):
    """Name the app for QSettings and keep settings and app data in a temporary folder."""
    base = tmp_path_factory.mktemp("appdata")
    os.environ["XDG_DATA_HOME"] = str(base / "data")
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(base / "config"))
    from workbench.ui.app import configure_app

    configure_app(qapp)
    yield base


@pytest.fixture(autouse=True)
def fresh_settings(app_identity):
    QSettings().clear()
    yield


@pytest.fixture
def small_corpus(tmp_path) -> list[Path]:
    a = tmp_path / "a.txt"
    a.write_text(SMALL_TEXT, encoding="utf-8")
    b = tmp_path / "b.txt"
    b.write_text("lower lowest newer wider\n" * 30, encoding="utf-8")
    return [a, b]


@pytest.fixture(scope="session")
def long_corpus(tmp_path_factory) -> Path:
    """A word-count table big enough that training lasts many seconds (pause/cancel need time)."""
    path = tmp_path_factory.mktemp("long") / "words.wordcounts.tsv"
    rng = random.Random(7)
    seen: set[str] = set()
    with open(path, "w", encoding="utf-8") as f:
        while len(seen) < 60000:
            word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 14)))
            if word not in seen:
                seen.add(word)
                f.write(f"{word}\t{rng.randint(1, 40)}\n")
    return path


@pytest.fixture
def project(tmp_path) -> Path:
    return tmp_path / "test.tokproj"


@pytest.fixture
def make_window(qtbot):
    """Build main windows; each is shut down at teardown (run stopped, threads joined)."""
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    windows = []

    def make(project: Path | None = None, files: list[Path] | None = None, **load):
        window = MainWindow(AppSettings())
        qtbot.addWidget(window)
        windows.append(window)
        if project is not None:
            if project.exists():
                assert open_and_wait(window, qtbot, project)
                qtbot.waitUntil(lambda: not window.corpus.is_scanning(), timeout=20000)
            else:
                window.session.open(project, create=True)
        if files:
            with qtbot.waitSignal(window.corpus.scan_finished, timeout=20000):
                window.corpus.add_paths([str(f) for f in files], prompt=False, **load)
        window.resize(1200, 800)
        window.show()
        return window

    yield make
    for window in windows:
        if window.training.is_training():
            window.training.stop_and_wait()
        window.shutdown()


@pytest.fixture
def answer():
    return BoxAnswerer
