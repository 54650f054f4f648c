"""The Corpus tab's redraws during a scan read running sums, and refused files arrive in batches.

Every 100 ms of a scan the tab redrew its totals, notice and progress by summing all its files
(100,000 files: ~0.9 s without a frame, each time), and each refused file was added to its list
with a redraw of its own. Now the table model adds a file to the sums when it is listed or read
and takes it out when it goes, and refused files are listed with ``feed_in_batches``.
"""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from workbench.ui.corpus.panel import CorpusPanel
from workbench.ui.jobs import LIST_BATCH

LINES = ("hello world, the quick brown fox\n", "Привет, мир! и снова\n", "世界 你好 hello\n")


class Walks(list):
    """The panel's list of entries, counting every walk over it (a loop or a sum over all files)."""

    count = 0

    def __iter__(self):
        Walks.count += 1
        return super().__iter__()


@pytest.fixture
def panel(qtbot):
    p = CorpusPanel()
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    yield p
    p.shutdown()


def _folder(root, good: int, bad: int):
    root.mkdir()
    for i in range(good):
        (root / f"part{i:04d}.txt").write_text(LINES[i % 3] * (1 + i % 4), encoding="utf-8")
    for i in range(bad):
        (root / f"bad{i:04d}.txt").write_bytes(b"caf\xe9 \xff\xfe not utf-8\n")
    return root


def _sums(panel) -> tuple[int, int, int]:
    entries = list.__iter__(panel.model.entries)  # the test's own walk, not counted
    read = [e.stats for e in entries if e.stats is not None]
    return len(panel.model.entries), sum(st.chars for st in read), sum(st.lines for st in read)


def test_a_scan_never_walks_all_files_to_redraw_and_its_totals_follow_removal_and_undo(panel, qtbot, tmp_path):
    folder = _folder(tmp_path / "corpus", 240, 6)
    panel.model.entries = Walks()
    Walks.count = 0
    with qtbot.waitSignal(panel.scan_finished, timeout=60000):
        panel.add_paths([folder], prompt=False)
    assert Walks.count == 0  # every redraw read the running sums
    files, chars, lines = _sums(panel)
    assert files == 240 and len(panel.rejected_messages()) == 6
    totals = panel.model.totals
    assert (totals.files, totals.read, totals.chars, totals.lines, totals.partial()) == (files, files, chars, lines,
                                                                                         False)
    assert panel.total_chars() == chars
    assert "<b>240 files</b>" in panel.totals.text() and f"{chars:,} characters" in panel.totals.text()

    panel._remove_rows(list(range(10, 30)))
    files, chars, lines = _sums(panel)
    assert (totals.files, totals.chars, totals.lines) == (files, chars, lines) == (220, chars, lines)
    assert f"{chars:,} characters" in panel.totals.text()
    assert panel.undo_remove()
    files, chars, lines = _sums(panel)
    assert (totals.files, totals.chars, totals.lines) == (240, chars, lines)
    # a run's files are looked up by key: a subset's characters, and None for a file not loaded
    some = [str(e.source.path) for e in list.__iter__(panel.model.entries)][:5]
    assert panel.total_chars(some) == sum(e.stats.chars for e in panel.model.entries[:5])
    assert panel.total_chars([*some, str(folder / "missing.txt")]) is None
    panel.clear()
    assert (panel.model.totals.files, panel.model.totals.chars) == (0, 0) and not panel.model.totals.scripts


def test_refused_files_are_listed_in_batches_not_one_redraw_each(panel, qtbot, tmp_path):
    bad = 60
    folder = _folder(tmp_path / "corpus", 2, bad)
    inserted: list[int] = []
    panel.rejected_list.model().rowsInserted.connect(lambda _p, first, last: inserted.append(last - first + 1))
    ended = threading.Event()  # set in the scan thread, so every report is queued before the window reads one
    panel._worker.job_finished.connect(lambda *_: ended.set(), Qt.ConnectionType.DirectConnection)
    with qtbot.waitSignal(panel.scan_finished, timeout=60000):
        panel.add_paths([folder], prompt=False)
        assert ended.wait(60)
    # a few insertions for all of them (it was one each), sized by time: at most LIST_BATCH each
    assert sum(inserted) == bad and len(inserted) <= 3 and max(inserted) <= LIST_BATCH
    assert panel.rejected_list.count() == bad == len(panel.rejected_messages())
    assert len(panel.entries()) == 2 and not panel.is_scanning()
    item = panel.rejected_list.item(bad - 1)
    assert item.text() == item.toolTip() and str(folder) in item.data(Qt.ItemDataRole.UserRole)
    assert "not loaded (60)" in panel.rejected_label.text().lower()
    panel.dismiss_rejected()
    assert panel.rejected_list.count() == 0 and panel.rejected_messages() == []


def test_a_folder_of_many_files_is_listed_a_batch_per_turn_of_the_event_loop(qtbot, tmp_path, monkeypatch):
    """The scan worker sends the files it found ``ADDED_BATCH`` at a time, the next once the window
    has listed the last (one signal of 100,000 files held the window ~0.4 s); all are listed and read."""
    from workbench.ui.corpus import scan

    monkeypatch.setattr(scan, "ADDED_BATCH", 10)
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(25):
        (folder / f"part{i:02d}.txt").write_text(f"hello world {i}\n", encoding="utf-8")
    panel = CorpusPanel()
    qtbot.addWidget(panel)
    batches: list[int] = []
    panel._worker.files_added.connect(lambda _job, added: batches.append(len(added)))
    with qtbot.waitSignal(panel.scan_finished, timeout=30000):
        panel.add_paths([str(folder)], prompt=False)
    assert batches == [10, 10, 5]
    assert len(panel.entries()) == 25 and all(e.stats is not None for e in panel.model.entries)
    panel.shutdown()


def test_refused_files_come_a_batch_per_turn_of_the_event_loop_and_all_are_listed(qtbot, tmp_path, monkeypatch):
    """A folder of many files that cannot be read as text: the worker sends the refusals
    ``REJECTED_BATCH`` at a time, paced as the files added are (a signal per refusal queued 5,000
    that the window handled in one stretch); every one is listed, named, and the good files read."""
    from workbench.ui.corpus import scan

    monkeypatch.setattr(scan, "REJECTED_BATCH", 10)
    folder = tmp_path / "mixed"
    folder.mkdir()
    for i in range(23):
        (folder / f"bad{i:02d}.txt").write_bytes(b"caf\xe9 \xff\xfe not utf-8\n")
    for i in range(3):
        (folder / f"good{i}.txt").write_text(f"hello world {i}\n", encoding="utf-8")
    panel = CorpusPanel()
    qtbot.addWidget(panel)
    batches: list[int] = []
    panel._worker.files_rejected.connect(lambda _job, items: batches.append(len(items)))
    with qtbot.waitSignal(panel.scan_finished, timeout=30000):
        panel.add_paths([str(folder)], prompt=False)
    assert batches == [10, 10, 3]
    assert panel.rejected_list.count() == 23
    listed = "\n".join(panel.rejected_list.item(i).text() for i in range(panel.rejected_list.count()))
    assert all(f"bad{i:02d}.txt" in listed for i in range(23))
    assert sorted(e.source.path.name for e in panel.entries()) == ["good0.txt", "good1.txt", "good2.txt"]
    panel.shutdown()
