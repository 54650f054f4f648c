"""Training through the real child process: plots equal the stored steps; pause, resume, cancel."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from ui_helpers import proc_state

from workbench.store import ProjectStore
from workbench.store.writer import is_writer_command


def test_a_run_trains_to_completion_and_the_plots_hold_the_stored_steps(make_window, qtbot, project, small_corpus):
    window = make_window(project, small_corpus)
    panel = window.training
    panel.set_options(merges=50, pretokenizer="gpt2", units="bytes")
    window.show_panel("train")
    assert panel.start_button.isEnabled()
    with qtbot.waitSignal(panel.run_finished, timeout=60000) as finished:
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    run_id, status = finished.args
    assert status == "finished"

    with ProjectStore.open(project, readonly=True) as store:
        steps = store.steps(run_id)
        info = store.run(run_id)
        first = store.merges(run_id, 0, 1)[0]
    assert len(steps) == 50 == info.merge_count
    x, y = panel.plots.curve_data(run_id, "vocab")
    np.testing.assert_array_equal(x, [s.step for s in steps])
    np.testing.assert_array_equal(y, [s.vocab_size for s in steps])
    np.testing.assert_array_equal(panel.plots.curve_data(run_id, "frequency")[1], [s.frequency for s in steps])
    np.testing.assert_array_equal(panel.plots.curve_data(run_id, "tokens")[1], [s.token_count for s in steps])
    chars = sum(len(p.read_text(encoding="utf-8")) for p in small_corpus)
    np.testing.assert_allclose(panel.plots.curve_data(run_id, "compression")[1],
                               [chars / s.token_count for s in steps])
    # Hovering step 1 shows the first merge's pieces.
    hover = panel.plots.hover_at(1)
    assert "step 1" in hover and first.piece.decode("utf-8", "replace").replace(" ", "␣") in hover
    # The history lists it as finished; the progress bar says so.
    assert panel.history.run_ids() == [run_id]
    assert panel.history.item_for(run_id).text(1) == "finished"
    assert "finished" in panel.progress.format()

    # Close and reopen the project: the run is in the history and its curves come back.
    window.shutdown()
    again = make_window(project)
    assert again.training.history.run_ids() == [run_id]
    assert again.training.history.item_for(run_id).text(0) == info.name
    assert sorted(e.source.path.name for e in again.corpus.entries()) == sorted(p.name for p in small_corpus)
    # A stored run's points are read and built on a worker, then drawn a plot per turn.
    plots = again.training.plots
    qtbot.waitUntil(lambda: plots.point_count() > 0 and not plots.drawing(), timeout=10000)
    np.testing.assert_array_equal(plots.curve_data(run_id, "vocab")[0], [s.step for s in steps])


def child_pids(pid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == pid]


def _ppid(entry: Path) -> int:
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return -1
    return int(stat[stat.rfind(")") + 2:].split()[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process state from /proc")
def test_pause_resume_and_cancel_a_run(make_window, qtbot, project, long_corpus):
    window = make_window(project, [long_corpus])
    panel = window.training
    panel.set_options(merges=1_000_000, units="bytes", pretokenizer="gpt2")
    with qtbot.waitSignal(panel.run_started, timeout=30000) as started:
        assert panel.start()
    run_id = started.args[0]
    qtbot.waitUntil(lambda: panel.plots.point_count() > 0, timeout=20000)

    assert panel.pause()
    pid = panel.process.pid
    qtbot.waitUntil(lambda: proc_state(pid) == "T", timeout=5000)  # really stopped (SIGSTOP)
    assert panel.pause_button.text() == "Resume"
    assert "Paused" in panel.state_label.text()
    # Its writer process is left running: stopped mid-commit it would hold the write lock.
    writers = [c for c in child_pids(pid) if is_writer_command(
        Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0"))]
    assert len(writers) == 1 and proc_state(writers[0]) not in ("T", "t")

    assert panel.resume()
    qtbot.waitUntil(lambda: proc_state(pid) != "T", timeout=5000)
    seen = panel.plots.point_count()
    qtbot.waitUntil(lambda: panel.plots.point_count() > seen, timeout=20000)  # it goes on after resuming

    assert panel.pause()  # cancel must also work on a paused run (SIGCONT first)
    qtbot.waitUntil(lambda: proc_state(pid) == "T", timeout=5000)
    with qtbot.waitSignal(panel.run_finished, timeout=30000) as finished:
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert finished.args == [run_id, "cancelled"]
    with ProjectStore.open(project, readonly=True) as store:
        info = store.run(run_id)
        steps = store.steps(run_id)
    assert info.status == "cancelled"
    assert 0 < info.merge_count < 1_000_000
    # Nothing was lost between the last poll and the end: the plots hold every stored step.
    assert panel.plots.point_count() == len(steps) == info.merge_count
    assert panel.history.item_for(run_id).text(1) == "cancelled"
    assert not panel.is_training() and panel.start_button.isEnabled()


def test_a_bad_input_exit_shows_the_childs_error_line(make_window, qtbot, project, tmp_path):
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("some text to train on\n" * 5, encoding="utf-8")
    window = make_window(project, [doomed])
    doomed.unlink()  # the file vanishes after it was loaded: the child refuses it
    panel = window.training
    panel.set_options(merges=10)
    with qtbot.waitSignal(panel.run_finished, timeout=60000) as finished:
        assert panel.start()
    assert finished.args[1] == "error"
    assert "doomed.txt" in panel.error_text() and "Traceback" not in panel.error_text()
    assert panel.error_label.isVisible()


def test_custom_pattern_has_a_live_preview_and_an_inline_error(make_window, qtbot, project, small_corpus):
    window = make_window(project, small_corpus)
    panel = window.training
    panel.sample_edit.setText("ab cd")
    panel.set_options(pretokenizer=r"(\w+")
    qtbot.waitUntil(lambda: "not a valid regular expression" in panel.form_error_text(), timeout=5000)
    assert not panel.start_button.isEnabled()
    panel.set_options(pretokenizer=r"\w+|\s")
    qtbot.waitUntil(lambda: "3 pieces" in panel.preview_text(), timeout=5000)
    assert panel.form_error_text() == ""
    assert panel.start_button.isEnabled()
    assert ">ab<" in panel.preview_text() and ">␣<" in panel.preview_text()


def test_overlaying_two_runs_shows_both_curves(make_window, qtbot, project, small_corpus):
    from ui_helpers import train_cli, wait_for_curves

    train_cli(small_corpus, project, "--merges", "20", "--name", "twenty")
    train_cli(small_corpus, project, "--merges", "30", "--name", "thirty", "--units", "chars")
    window = make_window(project)
    history = window.training.history
    ids = history.run_ids()
    assert len(ids) == 2
    history.select(ids)
    plots = window.training.plots
    assert sorted(plots.runs) == sorted(ids)
    wait_for_curves(qtbot, plots, ids)
    lengths = sorted(len(plots.curve_data(rid, "vocab")[0]) for rid in ids)
    assert lengths == [20, 30]
    assert plots.legend.isVisible()


def test_a_second_run_in_the_same_window_is_seen_live(make_window, qtbot, project, small_corpus):
    """Regression: after a first child closed the file, a second run must still show up (and plot)."""
    window = make_window(project, small_corpus)
    panel = window.training
    window.show_panel("train")
    ids = []
    for merges in (10, 15):
        panel.set_options(merges=merges)
        with qtbot.waitSignal(panel.run_finished, timeout=60000) as finished:
            assert panel.start()
        assert finished.args[1] == "finished"
        ids.append(finished.args[0])
    assert sorted(panel.history.run_ids()) == sorted(ids)
    with ProjectStore.open(project, readonly=True) as store:
        steps = store.steps(ids[1])
    assert len(steps) == 15
    np.testing.assert_array_equal(panel.plots.curve_data(ids[1], "tokens")[1], [s.token_count for s in steps])
