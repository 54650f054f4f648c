"""The Corpus tab's "Add location…" (issue 22): an s3:// pattern of .jsonl.zst shards on a real S3
server (moto, on 127.0.0.1) added from the window, and the column picker for an Arrow shard. The
screenshots go to $WORKBENCH_SCREENSHOT_DIR when set (docs/), else to the test's folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
zstandard = pytest.importorskip("zstandard")
pa = pytest.importorskip("pyarrow")

from moto_s3 import SECRET, s3_server  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

BUCKET = "team-corpora"


def shard(lines: list[str]) -> bytes:
    body = "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(lines))
    return zstandard.ZstdCompressor(write_checksum=True).compress(body.encode())


def shot_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("WORKBENCH_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_add_location_reads_s3_shards_into_the_corpus_table(make_window, qtbot, tmp_path, corpora):
    texts = sorted(corpora)
    with s3_server(BUCKET) as fs:
        for i, path in enumerate(texts[:3]):
            lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()][:400]
            fs.pipe(f"{BUCKET}/pile/train/{i:02d}.jsonl.zst", shard(lines))
        window = make_window()
        window.show_panel("corpus")
        url = f"s3://{BUCKET}/pile/train/*.jsonl.zst"
        dialog = window.corpus.location_dialog()
        dialog.setTextValue(url)
        dialog.show()
        qtbot.waitExposed(dialog)
        folder = shot_dir(tmp_path)
        assert dialog.grab().save(str(folder / "corpus-add-location-dialog.png"))
        dialog.close()
        window.corpus.location_asker = lambda: url
        with qtbot.waitSignal(window.corpus.scan_finished, timeout=30000):
            window.corpus.add_location_button.click()
        entries = window.corpus.entries()
        assert [str(e.source.path) for e in entries] == [f"s3://{BUCKET}/pile/train/{i:02d}.jsonl.zst" for i in range(3)]
        assert all(e.source.kind == "jsonl" and e.source.field == "text" and e.stats.records == 400 for e in entries)
        assert window.corpus.rejected_messages() == []
        QApplication.processEvents()
        assert window.grab().save(str(folder / "corpus-s3-location-light.png"))
        assert window.corpus.settings.last_location == url
        files = window.corpus.files()
        assert [f.path for f in files][0].startswith("s3://") and SECRET not in json.dumps([f.path for f in files])


def test_a_refused_location_is_listed_and_a_secret_url_is_not_remembered(make_window, qtbot, monkeypatch):
    import logging
    import sys

    from workbench import logfile
    from workbench.ui.logs import install_window_log

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # install_window_log wraps it: put it back after
    log_path = install_window_log()  # as the app does: the window log (Help ▸ Show Log) records this session
    assert log_path is not None
    try:
        window = make_window()
        window.corpus.location_asker = lambda: "https://alice:hunter2@example.org/c.txt"
        with qtbot.waitSignal(window.corpus.scan_finished, timeout=20000):
            window.corpus.choose_location()
        (message,) = window.corpus.rejected_messages()
        logging.getLogger("workbench.ui").info("refused a location: %s", message)  # what a refusal may log
        for handler in logging.getLogger("workbench").handlers:
            handler.flush()
    finally:
        for handler in list(logging.getLogger("workbench").handlers):
            if getattr(handler, "baseFilename", None) == str(log_path):
                logfile.remove(handler)
    assert "carries credentials" in message and "hunter2" not in message
    assert window.corpus.settings.last_location == ""
    # Neither the window's log nor any settings file holds the secret (and the log was written to).
    written = [p for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME") for p in Path(os.environ[var]).rglob("*")
               if p.is_file()]
    assert "refused a location" in log_path.read_text(encoding="utf-8")
    assert not [p for p in written if b"hunter2" in p.read_bytes()]


def test_the_column_picker_offers_an_arrow_shards_columns(make_window, qtbot, tmp_path):
    path = tmp_path / "data-00000-of-00001.arrow"
    table = pa.table({"title": ["a b", "c d"], "abstract": ["hello world", "more words"]})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    window = make_window()
    asked = []

    def chooser(what, where, candidates, default):
        asked.append((what, candidates, default))
        return "abstract"

    window.corpus.option_chooser = chooser
    with qtbot.waitSignal(window.corpus.scan_finished, timeout=20000):
        window.corpus.add_paths([path])
    assert asked == [("column", ["title", "abstract"], None)]
    (entry,) = window.corpus.entries()
    assert (entry.source.kind, entry.source.column, entry.stats.chars) == ("arrow", "abstract", len("hello world\nmore words\n"))
