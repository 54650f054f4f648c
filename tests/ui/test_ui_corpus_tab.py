"""The Corpus tab as a data engineer meets it (issues 13 and 14): bad records skipped and reported with
their full reasons, carried into the run spec; Spark part files read by content with a "Read as"
override; records (not text lines) for JSONL; Undo for removals; what to do next; the keyboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QComboBox, QWidget
from shared_corpora import CORPORA, require_corpora

from workbench.store import ProjectStore
from workbench.tasks.spec import RunSpec
from workbench.tasks.train import train_run
from workbench.ui.corpus.panel import COLUMNS, CorpusPanel

BAD_AT = (1501, 2402)


@pytest.fixture
def panel(qtbot):
    p = CorpusPanel()
    qtbot.addWidget(p)
    p.resize(1100, 700)
    p.show()
    yield p
    p.shutdown()


def real_jsonl(folder: Path, name: str = "quotes.jsonl", *, broken: bool = True) -> Path:
    """3,000 German quotes as JSON lines (a real text, a real size); two broken lines in the middle."""
    require_corpora()
    lines = [ln for ln in (CORPORA / "de_zitate.txt").read_text(encoding="utf-8").splitlines() if ln.strip()][:3000]
    out = [json.dumps({"id": i, "text": t}, ensure_ascii=False) for i, t in enumerate(lines)]
    if broken:
        out[BAD_AT[0] - 1] = out[BAD_AT[0] - 1][:-9]
        out[BAD_AT[1] - 1] = json.dumps({"id": 7, "txt": "x"})
    path = folder / name
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def load(panel, qtbot, paths, **kw):
    with qtbot.waitSignal(panel.scan_finished, timeout=30000):
        panel.add_paths([str(p) for p in paths], prompt=False, **kw)


def test_skip_bad_records_in_the_tab_and_the_spec_it_hands_to_training(panel, qtbot, tmp_path):
    path = real_jsonl(tmp_path)
    load(panel, qtbot, [path])
    assert not panel.entries()
    (message,) = panel.rejected_messages()
    assert message.startswith(f"{path}:{BAD_AT[0]}: not valid JSON (") and message.endswith("remove it")

    # Choosing "skip" tries the refused file again and reports what it left out, reasons in full.
    seen: list[str] = []
    panel.message.connect(seen.append)
    with qtbot.waitSignal(panel.scan_finished, timeout=30000):
        panel.policy_combo.setCurrentIndex(panel.policy_combo.findData("skip"))
    (entry,) = panel.entries()
    assert entry.stats.records == 2998 and entry.stats.skipped == 2
    assert panel.rejected_list.count() == 0
    row = panel.model.entries.index(entry)
    status = panel.model.index(row, COLUMNS.index("Status"))
    assert status.data() == "read · 2 bad records skipped"
    tip = status.data(Qt.ItemDataRole.ToolTipRole)
    assert f"{path}:{BAD_AT[0]}: not valid JSON (" in tip and f"{path}:{BAD_AT[1]}: no field 'text'" in tip
    notice = panel.notice_label.text()
    assert "Skipped 2 bad records" in notice and "fix the line or remove it" in notice and panel.notice_box.isVisible()
    assert any(m.startswith("Skipped 2 bad records; first: ") and m.endswith("remove it") for m in seen)

    # The window's spec carries the choice; training skips the same two records and stores the count.
    (corpus_file,) = panel.files()
    assert (corpus_file.kind, corpus_file.field, corpus_file.on_bad_record) == ("jsonl", "text", "skip")
    spec = RunSpec.from_json(RunSpec(files=tuple(panel.files()), merges=15,
                                     project=str(tmp_path / "w.tokproj")).to_json())
    run_id, status_text = train_run(spec, count_cache=False)
    assert status_text == "finished"
    with ProjectStore.open(tmp_path / "w.tokproj", readonly=True) as store:
        assert store.run(run_id).settings["skipped_records"] == 2


def test_spark_part_files_load_by_content_and_read_as_overrides(panel, qtbot, tmp_path):
    out = tmp_path / "spark"
    out.mkdir()
    real_jsonl(out, "part-00000", broken=False)
    (out / "part-00001").write_text("Ein Satz ohne JSON.\nNoch einer.\n", encoding="utf-8")
    (out / "_SUCCESS").write_text("", encoding="utf-8")
    load(panel, qtbot, [out])
    kinds = {e.source.path.name: e.source.kind for e in panel.entries()}
    assert kinds == {"part-00000": "jsonl", "part-00001": "text"} and not panel.rejected_messages()
    first = next(e for e in panel.entries() if e.source.path.name == "part-00000")
    assert first.format_text().startswith("jsonl (by content)")
    # Records for JSON lines, text lines for text, and the column says which.
    by_name = {e.source.path.name: panel.model.entries.index(e) for e in panel.entries()}
    col = COLUMNS.index("Lines / records")
    assert panel.model.index(by_name["part-00000"], col).data() == "3,000 records"
    assert panel.model.index(by_name["part-00001"], col).data() == "2 lines"

    with qtbot.waitSignal(panel.scan_finished, timeout=30000):
        panel.set_kind(first.key, "text")
    files = {Path(f.path).name: f for f in panel.files()}
    assert files["part-00000"].kind == "text" and files["part-00000"].field is None
    again = next(e for e in panel.entries() if e.source.path.name == "part-00000")
    assert again.stats.records is None and again.stats.lines == 3000


def test_remove_can_be_undone_with_ctrl_z_and_the_button(panel, qtbot, tmp_path):
    files = []
    for name in ("a.txt", "b.txt", "c.txt"):
        files.append(tmp_path / name)
        files[-1].write_text(f"{name} text\n", encoding="utf-8")
    load(panel, qtbot, files)
    panel.table.selectRow(1)
    panel.table.setFocus()
    qtbot.keyClick(panel.table, Qt.Key.Key_Delete)
    assert [e.source.path.name for e in panel.entries()] == ["a.txt", "c.txt"]
    assert panel.undo_button.isVisible() and "Removed 1 file: b.txt" in panel.notice_label.text()
    qtbot.keyClick(panel.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    entries = panel.entries()
    assert [e.source.path.name for e in entries] == ["a.txt", "b.txt", "c.txt"]
    assert entries[1].stats is not None and entries[1].stats.chars == len("b.txt text\n")  # no rescan needed
    panel.clear()
    assert not panel.entries()
    qtbot.mouseClick(panel.undo_button, Qt.MouseButton.LeftButton)
    assert [e.source.path.name for e in panel.entries()] == ["a.txt", "b.txt", "c.txt"]
    assert not panel.undo_remove()  # nothing left to undo


def test_says_what_to_do_next_and_every_control_is_reachable_by_keyboard(panel, qtbot, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("hello world\n", encoding="utf-8")
    load(panel, qtbot, [path])
    assert panel.notice_label.text().startswith("<b>Corpus ready:</b> 1 file, 12 B — press F5 or go to Train")
    with qtbot.waitSignal(panel.train_requested, timeout=1000):
        qtbot.mouseClick(panel.train_button, Qt.MouseButton.LeftButton)

    controls = [w for w in panel.findChildren(QWidget)
                if w.isVisible() and isinstance(w, (QAbstractButton, QComboBox))]
    assert panel.policy_combo in controls and panel.train_button in controls
    for w in controls:
        assert w.focusPolicy() & Qt.FocusPolicy.TabFocus, w
        assert w.accessibleName() or getattr(w, "text", lambda: "")(), w
    # Tab walks through every control (and the table, and the preview) and comes back.
    panel.add_files_button.setFocus()
    reached = set()
    for _ in range(40):
        reached.add(panel.focusWidget())
        panel.focusNextChild()
    assert set(controls) <= reached and panel.table in reached and panel.preview in reached
    assert panel.table.accessibleName() == "Corpus files" and panel.empty.accessibleName()
