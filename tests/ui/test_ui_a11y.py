"""Issue 14, accessibility: every control reached by Tab with a visible focus, names on custom widgets,
colour never the only cue, and the window's shortcuts doing what they say (real key presses)."""

from __future__ import annotations

import pytest
from a11y_walk import describe, focusable_in, walk_tab_chain
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from ui_helpers import train_cli


@pytest.fixture
def demo_window(make_window, qtbot, project):
    """The window on a project trained on the demo corpus (two runs), shown and active."""
    from workbench.corpus import demo_corpus_files

    files = demo_corpus_files()
    train_cli(files, project, "--merges", "60", "--name", "demo 60")
    train_cli(files, project, "--merges", "30", "--name", "demo 30")
    window = make_window(project, files)
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    return window


@pytest.mark.parametrize("tab", ["corpus", "train", "inspect", "merges", "compare"])
def test_the_tab_chain_reaches_every_control_of_each_tab_and_comes_back(demo_window, qtbot, tab):
    window = demo_window
    window.show_panel(tab)
    qtbot.wait(50)
    root = window.docks[tab].widget()
    wanted = focusable_in(root)
    assert len(wanted) >= 3, [describe(w) for w in wanted]
    chain, closed = walk_tab_chain(qtbot, wanted[0])
    missing = [describe(w) for w in wanted if w not in chain]
    names = [describe(w) for w in chain]
    assert closed, f"Tab stopped at {names[-1]} after {len(chain)} stops: {names}"
    assert not missing, (missing, names)


def test_every_custom_widget_has_an_accessible_name(demo_window, qtbot):
    """Each widget of a class written in ``workbench.ui`` (panels, token views, plots, charts,
    editors) is named for a screen reader, with several Inspect columns and a run on the plots."""
    import workbench.ui

    window = demo_window
    for tab in window.docks:
        window.show_panel(tab)
    window.inspect.add_pane()
    window.training.history.select(window.training.history.run_ids())
    qtbot.wait(50)
    # A label's text is its name; the focus ring is decoration laid over the focused widget.
    custom = [w for w in window.findChildren(QWidget)
              if type(w).__module__.startswith(workbench.ui.__name__ + ".") and not w.isWindow()
              and not isinstance(w, QLabel) and w.objectName() != "focusRing"]
    kinds = {type(w).__name__ for w in custom}
    assert {"TokenEditor", "TokenPane", "TrainingPlots", "RunHistory", "LanguageBarChart", "SweepChart",
            "IdsView", "VocabView", "MergeDetail"} <= kinds, kinds
    unnamed = sorted({f"{type(w).__module__}.{type(w).__name__}" for w in custom if not w.accessibleName()})
    assert not unnamed, "\n".join(unnamed)
