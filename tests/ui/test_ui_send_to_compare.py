"""The Train tab's run history sends runs to the Compare tab: exactly those runs are ticked there and
the Compare tab is shown (the tabs never import each other; the main window wires them)."""

from __future__ import annotations

from ui_helpers import train_cli

from workbench.ui.train.run_history import ID_ROLE


def test_history_sends_the_selected_runs_to_compare(make_window, qtbot, project, small_corpus):
    train_cli(small_corpus, project, "--merges", "20")
    train_cli(small_corpus, project, "--merges", "30", "--model", "bpe", "--units", "chars")
    train_cli(small_corpus, project, "--merges", "40")
    window = make_window(project)
    history = window.training.history
    qtbot.waitUntil(lambda: history.tree.topLevelItemCount() == 3, timeout=10000)
    history.tree.clearSelection()
    for i in range(history.tree.topLevelItemCount()):
        item = history.tree.topLevelItem(i)
        if item.data(0, ID_ROLE) in (1, 3):
            item.setSelected(True)
    assert sorted(history.selected_ids()) == [1, 3]
    assert history.compare_button.isEnabled()
    history.compare_button.click()
    compare = window.compare
    assert sorted(compare.checked_sources()) == sorted([f"{project}#1", f"{project}#3"])
    assert window.docks["compare"].isVisible()
