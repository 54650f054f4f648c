"""A PickyBPE run in the views: its removals are marked in the live plots (× along the foot of the
vocabulary plot, the vocabulary in use as the curve) and struck through in the Merges table with
the merge that removed them — the same run trained through the CLI's path (``train_run``)."""

from __future__ import annotations

import json

import pytest
from shared_corpora import CORPORA, require_corpora

from workbench.store import ProjectStore
from workbench.store.browse import MergeSource, store_connection
from workbench.tasks.spec import CorpusFile, RunSpec
from workbench.tasks.train import train_run
from workbench.ui.merges.merge_model import MergeTableModel
from workbench.ui.train.plots import PHASES, TrainingPlots


@pytest.fixture(scope="module")
def picky_run(tmp_path_factory):
    require_corpora()
    folder = tmp_path_factory.mktemp("picky")
    corpus = folder / "en.txt"
    corpus.write_text((CORPORA / "en_shakespeare.txt").read_text(encoding="utf-8")[:80_000], encoding="utf-8")
    spec = RunSpec(files=(CorpusFile(str(corpus)),), model="pickybpe", vocab_size=700,
                   options={"picky_threshold": 0.8}).validate()
    run_id, status = train_run(spec, folder / "p.tokproj", count_cache=False)
    assert status == "finished"
    return folder / "p.tokproj", run_id


def test_removed_results_are_struck_through_with_the_merge_that_removed_them(qtbot, picky_run):
    path, run_id = picky_run
    with ProjectStore.open(path, readonly=True) as store:
        extras = [(r[0], json.loads(r[1])) for r in store.connection.execute(
            "SELECT rank, extra FROM merges WHERE run_id = ? AND extra IS NOT NULL ORDER BY rank", (run_id,))]
        assert extras and all(e["removed"] for _r, e in extras)
        removing, extra = extras[0]
        removed_id = extra["removed"][0][0]
        made_at = store.connection.execute("SELECT min(rank) FROM merges WHERE run_id = ? AND new_id = ?",
                                           (run_id, removed_id)).fetchone()[0]
        model = MergeTableModel()
        model.set_source(MergeSource(store_connection(store), ("run", run_id)))
        from PySide6.QtCore import Qt

        struck = model.index(made_at, 3)
        assert model.data(struck, Qt.ItemDataRole.FontRole).strikeOut()
        assert model.data(struck, Qt.ItemDataRole.DisplayRole).endswith(f"✗ merge {removing}")
        assert f"removed by merge {removing}" in model.data(struck, Qt.ItemDataRole.ToolTipRole)
        kept = next(r for r in range(model.rowCount()) if model.data(model.index(r, 3)).find("✗") < 0)
        assert not model.data(model.index(kept, 3), Qt.ItemDataRole.FontRole).strikeOut()
        steps = store.steps(run_id)
        settings = store.run(run_id).settings
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.show_runs([(run_id, "picky")])
    plots.append(run_id, steps)
    plots.show()
    qtbot.waitUntil(lambda: plots.redraw() or plots.point_count() > 0)
    view = plots.runs[run_id].points.view
    assert (view[:, 4] == PHASES["remove"]).sum() == len(extras)
    assert view[-1, 1] == settings["vocab_in_use"] == 700  # the curve is the vocabulary in use
    assert "removed a token" in plots.titles()["vocab"]
