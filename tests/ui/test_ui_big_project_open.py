"""Opening a project of many corpus files, or a Unigram run of many pieces, keeps the window running.

Opening a 100,000-file project read every corpus row and filled the Corpus list on the GUI thread
(~4.7 s without a frame). The rows are now read on a worker's connection and listed in batches,
the event loop running between them, as the Compare tab does; a newer project stops the listing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from workbench.store import ProjectStore
from workbench.ui.jobs import LIST_BATCH, LIST_OFF_THREAD

N = LIST_OFF_THREAD + LIST_BATCH  # listed in four batches


class _Ticks:
    """Counts the ticks of a 5 ms timer: the event loop ran (a blocking call shows as no ticks)."""

    def __init__(self):
        from PySide6.QtCore import QTimer

        self.count = 0
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        self.count += 1


def _project(root: Path, name: str, files: int) -> Path:
    """A project listing ``files`` small real corpus files, its rows written in one transaction."""
    folder = root / name
    folder.mkdir()
    for i in range(files):
        (folder / f"de_{i:05d}.txt").write_text("hallo welt\n", encoding="utf-8")
    project = folder / "p.tokproj"
    with ProjectStore.open(project, create=True):
        pass
    raw = sqlite3.connect(project)
    with raw:
        raw.executemany("INSERT INTO corpora (path, size, mtime, fingerprint, reader_options, added) "
                        "VALUES (?, 11, 0, 'x', '{\"kind\": \"text\"}', 0)",
                        [(str(folder / f"de_{i:05d}.txt"),) for i in range(files)])
    raw.close()
    return project


@pytest.fixture(scope="module")
def many_files(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("manyfiles")
    return _project(root, "big", N), _project(root, "other", 3)


def test_a_project_of_many_corpus_files_is_listed_in_batches_off_the_gui_thread(make_window, many_files, qtbot):
    big, other = many_files
    window = make_window()
    corpus = window.corpus
    inserted: list[int] = []
    corpus.model.rowsInserted.connect(lambda _parent, first, last: inserted.append(last - first + 1))
    ticks = _Ticks()
    assert window.open_project(big, ask_first=False)
    assert corpus.listing() and corpus.is_scanning() and corpus.model.rowCount() == 0  # returned at once
    qtbot.waitUntil(lambda: not corpus.listing(), timeout=30000)
    qtbot.waitUntil(lambda: corpus.model.rowCount() == N, timeout=30000)
    assert sum(inserted) == N and max(inserted) <= LIST_BATCH and len(inserted) >= N // LIST_BATCH
    assert ticks.count >= len(inserted) - 1  # the loop ran between batches
    assert corpus.entries()[-1].source.path.name == f"de_{N - 1:05d}.txt"
    corpus.cancel_scan()
    qtbot.waitUntil(lambda: not corpus.is_scanning(), timeout=30000)

    # A newer project while the listing runs: the old one's files never arrive.
    assert window.open_project(big, ask_first=False)
    assert corpus.listing()
    assert window.open_project(other, ask_first=False)  # three files: listed at once
    assert not corpus.listing()
    qtbot.waitUntil(lambda: not corpus.is_scanning() and corpus.model.rowCount() == 3, timeout=30000)
    assert not corpus.lister.busy()
    assert {e.source.path.parent for e in corpus.entries()} == {other.parent}
    ticks.timer.stop()
