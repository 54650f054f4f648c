"""Issue 14, item 1: a run whose last batch is committed after the child has exited still shows in full.

The child here is a stand-in (``late_batch_child.py``) so the order is forced: 20 merges, the
'finished' line, exit — then its detached writer commits merges 21–30 and the status. The window
must end with all 30 steps plotted, the run finished in the Runs table and in the Merges tab.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import workbench.ui.train.panel as train_panel

CHILD = Path(__file__).with_name("late_batch_child.py")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stand-in child watches /proc")
def test_a_batch_committed_after_the_child_exits_reaches_the_runs_table_plots_and_merges(
        make_window, qtbot, project, small_corpus, monkeypatch):
    monkeypatch.setattr(train_panel, "spec_command", lambda _spec, **_kw: [sys.executable, str(CHILD), str(project), "child"])
    window = make_window(project, small_corpus)
    panel = window.training
    window.show_panel("train")
    with qtbot.waitSignal(panel.run_finished, timeout=30000) as finished:
        assert panel.start()
    run_id, status = finished.args
    assert status == "finished"

    # The late writer is a fresh process (imports, SQLite): on a loaded machine it can take many
    # seconds to commit. The window keeps reading for SETTLE_S; the test waits as long (and a bit).
    settle_ms = int(train_panel.SETTLE_S * 1000) + 5000
    qtbot.waitUntil(lambda: panel.plots.last_step(run_id) == 30, timeout=settle_ms)
    qtbot.waitUntil(lambda: panel.history.item_for(run_id).text(1) == "finished", timeout=settle_ms)
    assert "30 merges" in panel.state_label.text()
    assert window.session.run(run_id).merge_count == 30
    assert len(panel.plots.curve_data(run_id, "vocab")[0]) == 30
    # The data may arrive through the live poll first; the settle timer stops at its next tick.
    qtbot.waitUntil(lambda: not panel.settle_timer.isActive(), timeout=5000)
    # The Merges tab heard of it too (runs_changed after the last read), without a reopen.
    merges = window.merges
    qtbot.waitUntil(lambda: merges.current_source() == ("run", run_id) and merges.model.rowCount() == 30,
                    timeout=10000)
