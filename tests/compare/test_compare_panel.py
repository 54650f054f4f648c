"""The Compare tab offscreen: it lists a project's runs and references, computes the metrics
table off the GUI thread (the same numbers as the task), charts them, sweeps a run, compares
splits, and exports the table as CSV and the charts as PNG and SVG that read back."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import pytest
from compare_helpers import corpus_slice

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtGui import QImage

from workbench.cli import run_cli
from workbench.corpus import open_source
from workbench.tasks.compare import compare_corpus
from workbench.tasks.sources import load_tokenizer


@pytest.fixture(scope="module")
def setup(tmp_path_factory, corpora, cl100k_file):
    """A project with a run trained on English and the imported cl100k (shared: tests only read it)."""
    tmp_path = tmp_path_factory.mktemp("compare-panel")
    en = tmp_path / "en.txt"
    en.write_text(corpus_slice(corpora, "en_shakespeare.txt", 30_000), encoding="utf-8")
    ru = tmp_path / "ru.txt"
    ru.write_text(corpus_slice(corpora, "ru_fortunes.txt", 15_000), encoding="utf-8")
    project = tmp_path / "p.tokproj"
    assert run_cli(["train", str(en), "--project", str(project), "--merges", "300", "--progress", "none"]) == 0
    assert run_cli(["import", str(cl100k_file), "--project", str(project)]) == 0
    return project, en, ru


def test_panel_computes_the_table_and_exports(panel, qtbot, setup, tmp_path):
    project, en, ru = setup
    panel.set_project(project)
    assert panel.tokenizer_list.count() == 2  # the run and the imported cl100k, both ticked
    assert panel.checked_sources() == [f"{project}#1", f"{project}#ref:1"]
    assert [p for p, _o, _l in panel.checked_files()] == [str(en)]  # the run's corpus file
    panel.add_corpus_file(ru, language="ru")
    panel.set_language(en, "en")
    panel.baseline.setCurrentText("en")
    with qtbot.waitSignal(panel.computed, timeout=60_000) as blocker:
        assert panel.compute()
    result = blocker.args[0]
    assert panel.file_model.rowCount() == 4 and panel.language_model.rowCount() == 2 * 2 + 2
    expected = compare_corpus([(n, load_tokenizer(s)) for n, s in
                               [("a", f"{project}#1"), ("b", f"{project}#ref:1")]],
                              [open_source(en), open_source(ru)], labels={str(en): "en", str(ru): "ru"},
                              baseline="en")
    assert [m.tokens for m in result.per_file] == [m.tokens for m in expected.per_file]
    assert [round(f.ratio, 9) for f in result.fairness] == [round(f.ratio, 9) for f in expected.fairness]
    assert panel.bar_chart.values  # one bar per (tokenizer, language)
    # Russian costs more tokens per character than English under an English-trained run.
    run_name = result.per_file[0].tokenizer
    assert panel.bar_chart.values[(run_name, "ru")] > panel.bar_chart.values[(run_name, "en")] == 1.0

    csv_path = panel.export_table_csv(tmp_path / "t.csv", "file")
    rows = list(csv.reader(csv_path.open(encoding="utf-8")))
    assert rows[0][:4] == ["tokenizer", "file / language", "language", "tokens"]
    assert [int(r[3]) for r in rows[1:]] == [m.tokens for m in result.per_file]
    png = panel.export_chart(tmp_path / "bars.png", "bars")
    image = QImage(str(png))
    assert not image.isNull() and image.width() == 1200
    svg = panel.export_chart(tmp_path / "bars.svg", "bars")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and "ru" in svg.read_text(encoding="utf-8")

    panel.sweep_source.setCurrentIndex(panel.sweep_source.findData(f"{project}#1"))
    panel.sweep_points.setValue(4)
    with qtbot.waitSignal(panel.swept, timeout=60_000) as blocker:
        assert panel.run_sweep()
    sweep = blocker.args[0]
    assert [p.step for p in sweep.points] == [0, 100, 200, 300]
    assert sweep.points[-1].tokens == sum(m.tokens for m in result.per_file[:2])
    assert QImage(str(panel.export_chart(tmp_path / "sweep.png", "sweep"))).height() > 0

    panel.split_a.setCurrentIndex(0)
    panel.split_b.setCurrentIndex(1)
    with qtbot.waitSignal(panel.splits_ready, timeout=60_000) as blocker:
        assert panel.compare_splits()
    assert blocker.args[0].differences and panel.split_model.rowCount() > 0


def test_cancel_and_bad_input_are_reported(panel, qtbot, setup, tmp_path):
    project, _en, _ru = setup
    panel.set_project(project)
    panel._should_stop = lambda: True  # as if Cancel was pressed before the first block was read
    with qtbot.waitSignal(panel.failed, timeout=60_000) as blocker:
        assert panel.compute()
    assert blocker.args == ["cancelled"] and panel.result is None and panel.file_model.rowCount() == 0
    assert "Cancelled" in panel.status.text()
    del panel._should_stop
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe\x00binary\x00")
    panel.add_corpus_file(bad)
    with qtbot.waitSignal(panel.failed, timeout=60_000) as blocker:
        assert panel.compute()
    assert "bad.txt" in blocker.args[0] and "\n" not in blocker.args[0]
    assert panel.status.text() == blocker.args[0]
