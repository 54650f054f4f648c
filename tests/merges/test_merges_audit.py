"""The Merges pane's Audit tab, offscreen with real widgets: the audit columns with their papers in
the header tooltips, a residue filter whose rows are the audit's residues, and a trim preview whose
"Trim → new run" adds a run to the chooser. Screenshots of both go to the test's tmp folder."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

import os  # noqa: E402
from pathlib import Path  # noqa: E402

from PySide6.QtWidgets import QMessageBox  # noqa: E402

from workbench.core.bpe import TrainConfig  # noqa: E402
from workbench.store import ProjectStore  # noqa: E402
from workbench.tasks.train import train_into_project  # noqa: E402


@pytest.fixture
def trained_project(tmp_path, corpora):
    text = next(p for p in corpora if p.name == "en_shakespeare.txt").read_bytes()[:60_000]
    corpus = tmp_path / "train.txt"
    corpus.write_bytes(text[: text.rfind(b"\n") + 1])
    project = tmp_path / "audit.tokproj"
    run_id, status = train_into_project([str(corpus)], project, TrainConfig(units="bytes", merges=300,
                                                                            pretokenizer="gpt2"), name="audit me")
    assert status == "finished"
    return project, run_id


def test_audit_columns_filter_and_trim_preview(qtbot, panel, trained_project, tmp_path):
    project, run_id = trained_project
    panel.set_project(project)
    view = panel.audit
    panel.tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.audit_button.isEnabled(), timeout=5000)
    tips = [view.model.headerData(c, _horizontal(), _tooltip()) for c in range(view.model.columnCount())]
    assert "Fishing for Magikarp" in tips[3] and "LiteToken" in tips[5] and "LiteToken" in tips[7]
    view.audit_button.click()
    qtbot.waitUntil(lambda: view.report is not None, timeout=30_000)
    report = view.report
    assert view.model.rowCount() == sum(report.audit.audited)
    assert "residues (LiteToken 2026" in view.summary.text()
    view.filter.setCurrentIndex(view.filter.findData("residue"))
    residues = report.audit.ids("residue")
    qtbot.waitUntil(lambda: view.model.rowCount() == len(residues), timeout=5000)
    assert residues and view.model.index(0, 8).data() == "residue"
    view.table.sortByColumn(7, _descending())  # R, largest first: sorted by the model itself
    qtbot.waitUntil(lambda: view.model.id_at(0) == max(residues, key=lambda i: (report.audit.ratio(i), -i)),
                    timeout=5000)
    view.table.sortByColumn(7, _ascending())
    picked = []
    panel.merge_selected.connect(lambda source, token_id: picked.append((source, token_id)))
    view.table.selectRow(0)  # the inspector follows the audit's current row
    qtbot.waitUntil(lambda: picked == [(("run", run_id), view.model.id_at(0))], timeout=5000)
    view.table.clearSelection()
    view.grab().save(str(tmp_path / "audit-columns.png"))

    view.preview_button.click()
    qtbot.waitUntil(lambda: view.preview is not None or view.error.text() != "", timeout=30_000)
    assert view.error.text() == ""
    plan = view.preview.plan
    assert plan.requested == tuple(residues)
    assert view.cascade_list.count() == min(len(plan.requested), 300) + min(len(plan.cascade), 300)
    assert "tokens on the corpus:" in view.preview_label.text() and "round trip:" in view.preview_label.text()
    assert view.preview.lines_round_trip == view.preview.lines_checked > 0
    view.grab().save(str(tmp_path / "trim-preview.png"))

    before = panel.chooser.count()
    view.trim_button.click()  # more than 10 % of the vocabulary goes (the cascade included): the window asks first
    qtbot.waitUntil(lambda: view.confirm is not None and view.confirm.isVisible(), timeout=5000)
    assert f"{len(plan.cascade):,} of them by the cascade" in view.confirm.text()
    assert "% of the vocabulary" in view.confirm.text() and panel.chooser.count() == before
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        view.confirm.grab().save(str(Path(os.environ["WORKBENCH_SCREENSHOTS"]) / "trim-confirm.png"))
    view.confirm.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: panel.chooser.count() == before + 1, timeout=30_000)
    with ProjectStore.open(project, readonly=True) as store:
        newest = max(r.id for r in store.runs())
        trimmed = store.load_tokenizer(newest)
        assert store.run(newest).settings["trim"]["requested"] == list(residues)
        steps = store.steps(newest, 0)
    assert all(trimmed.vocab[i] == b"" for i in plan.removed)
    # the new run's curves are not flat: corpus tokens fall merge by merge, each merge has its count
    tokens, counts = [s.token_count for s in steps], [s.frequency for s in steps]
    assert tokens == sorted(tokens, reverse=True) and tokens[0] > tokens[-1] > 0 and max(counts) > 0


def _horizontal():
    from PySide6.QtCore import Qt

    return Qt.Orientation.Horizontal


def _tooltip():
    from PySide6.QtCore import Qt

    return Qt.ItemDataRole.ToolTipRole


def _descending():
    from PySide6.QtCore import Qt

    return Qt.SortOrder.DescendingOrder


def _ascending():
    from PySide6.QtCore import Qt

    return Qt.SortOrder.AscendingOrder


def test_the_audit_marks_the_merge_and_vocabulary_tables(qtbot, panel, trained_project, tmp_path):
    """Once the Audit tab has audited the shown run, the Merges and Vocabulary tables get an audit
    column and an "audit:" filter (in SQL) whose rows are the audit's residues / never-used entries."""
    project, _run_id = trained_project
    panel.set_project(project)
    view = panel.audit
    qtbot.waitUntil(lambda: view.audit_button.isEnabled(), timeout=5000)
    assert not panel.audit_filter.isEnabled() and panel.model.index(0, 9).data() in ("—", "…")
    view.audit_button.click()
    qtbot.waitUntil(lambda: view.report is not None and panel.audit_filter.isEnabled(), timeout=30_000)
    audit = view.report.audit
    residues = audit.ids("residue")
    assert residues
    panel.tabs.setCurrentIndex(0)
    panel.audit_filter.setCurrentIndex(panel.audit_filter.findData("residue"))
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(residues), timeout=10_000)
    qtbot.waitUntil(lambda: "residue" in (panel.model.index(0, 9).data() or ""), timeout=5000)
    assert sorted(panel.model.index(r, 7).data() for r in range(len(residues))) == sorted(map(str, residues))
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        panel.resize(1300, 700)
        qtbot.wait(200)
        panel.grab().save(str(Path(os.environ["WORKBENCH_SCREENSHOTS"]) / "merges-audit-column.png"))
    vocab = panel.vocab
    panel.tabs.setCurrentWidget(vocab)
    never = [i for i in audit.ids("never-used")]
    assert vocab.audit_filter.isEnabled() and never
    vocab.audit_filter.setCurrentIndex(vocab.audit_filter.findData("never-used"))
    qtbot.waitUntil(lambda: vocab.model.rowCount() == len(never), timeout=10_000)
    qtbot.waitUntil(lambda: "never used" in (vocab.model.index(0, 6).data() or ""), timeout=5000)
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        qtbot.wait(200)
        panel.grab().save(str(Path(os.environ["WORKBENCH_SCREENSHOTS"]) / "vocabulary-audit-column.png"))
