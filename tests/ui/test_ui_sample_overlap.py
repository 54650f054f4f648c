"""The Train tab's run history shows how a sampled run's vocabulary overlaps the run on all its lines
(issue 22: "a report of how the sampled vocabulary overlaps a full run when both exist"), the same
figure ``workbench runs`` prints, read off the GUI thread."""

from __future__ import annotations

from shared_corpora import CORPORA, require_corpora
from ui_helpers import open_and_wait, train_cli

from workbench.store import ProjectStore
from workbench.tasks.sample_report import sample_overlaps


def test_a_sampled_run_shows_its_overlap_with_the_run_on_all_lines(make_window, qtbot, project, tmp_path):
    require_corpora()
    corpus = tmp_path / "en.txt"
    corpus.write_text("\n".join((CORPORA / "en_shakespeare.txt").read_text(encoding="utf-8").splitlines()[:6000]),
                      encoding="utf-8")
    train_cli([corpus], project, "--vocab-size", "500", "--sample-lines", "1500", "--seed", "2")
    window = make_window()
    assert open_and_wait(window, qtbot, project)
    history = window.training.history
    sampled_item = history.item_for(1)
    assert sampled_item is not None and sampled_item.text(7) == ""  # no run on all lines yet: nothing to say

    train_cli([corpus], project, "--vocab-size", "500")
    window.training.reload_history()
    with ProjectStore.open(project, readonly=True) as store:
        expected = sample_overlaps(store)[1]
    qtbot.waitUntil(lambda: history.item_for(1).text(7) != "", timeout=20000)
    item = history.item_for(1)
    assert item.text(7) == f"{100 * expected.share:.1f}% of run 2"
    assert 0.3 < expected.share < 1.0  # a sample of a quarter of the lines learns much, not all
    assert expected.text() in item.toolTip(0)
    assert history.item_for(2).text(7) == ""  # the run on all lines is not itself a sample
