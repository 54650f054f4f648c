"""The Corpus tab's scan as a use case without a window (``tasks.corpus_scan``): a folder is listed,
a file that is not text is refused with its reason, the others are read for their statistics, and a
stop between files leaves the rest unread."""

from __future__ import annotations

from pathlib import Path

from workbench.tasks.corpus_scan import CorpusScanner, ScanOptions, ScanReports, gpt2_findall


def _reports(log: dict[str, list]) -> ScanReports:
    return ScanReports(added=lambda files: log["added"].extend(files),
                       rejected=lambda path, why, _enc, _bad: log["rejected"].append((path, why)),
                       progress=lambda key, done, total: log["progress"].append((key, done, total)),
                       scanned=lambda key, stats: log["scanned"].append((key, stats)),
                       failed=lambda key, why, _enc, _bad: log["failed"].append((key, why)))


def test_a_folder_is_listed_checked_and_read(tmp_path: Path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("hello world\nhello again\n", encoding="utf-8")
    (folder / "b.txt").write_text("one two three\n", encoding="utf-8")
    (folder / "c.bin").write_bytes(bytes(range(256)) * 8)
    log: dict[str, list] = {k: [] for k in ("added", "rejected", "progress", "scanned", "failed")}
    scanner = CorpusScanner(gpt2_findall(), pool_workers=1)
    try:
        scanner.scan([str(folder)], ScanOptions(), _reports(log), stopped=lambda: False)
    finally:
        scanner.close()
    listed = sorted(Path(key).name for key, _src in log["added"])
    assert listed == ["a.txt", "b.txt"]
    assert sorted(Path(key).name for key, _s in log["scanned"]) == listed and log["failed"] == []
    [(path, why)] = log["rejected"]
    assert Path(path).name == "c.bin" and "looks binary, not text" in why
    words = {Path(key).name: stats for key, stats in log["scanned"]}
    assert words["a.txt"].lines == 2 and words["b.txt"].lines == 1


def test_a_stop_leaves_the_other_files_unread(tmp_path: Path):
    files = []
    for i in range(3):
        f = tmp_path / f"f{i}.txt"
        f.write_text("some text\n" * 10, encoding="utf-8")
        files.append(str(f))
    log: dict[str, list] = {k: [] for k in ("added", "rejected", "progress", "scanned", "failed")}
    scanner = CorpusScanner(None, pool_workers=1)
    try:
        scanner.scan(files, ScanOptions(), _reports(log), stopped=lambda: len(log["scanned"]) >= 1)
    finally:
        scanner.close()
    assert len(log["added"]) == 3 and len(log["scanned"]) == 1
