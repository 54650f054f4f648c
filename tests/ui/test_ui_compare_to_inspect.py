"""A Compare "split differences" row opens in the Inspect tab: the word as the text, A and B in two
columns side by side (the tabs never import each other; the main window wires the compare panel's
``inspect_requested`` to the inspect panel's ``show_word``)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from shared_corpora import CORPORA, require_corpora
from ui_helpers import open_and_wait, train_cli

from workbench.core.encoder import Encoder
from workbench.tasks.sources import load_tokenizer, project_source


def _inspect_settled(qtbot, inspect) -> None:
    generation = inspect.flush()
    qtbot.waitUntil(lambda: inspect.applied_generation >= generation and inspect.colouring_done(), timeout=20000)


def _splits(qtbot, window, project, folder):
    """Run 1: byte-level BPE, 150 merges; run 2: Unigram, 400 pieces; both on 1,500 lines of Shakespeare."""
    require_corpora()
    corpus = folder / "shakespeare.txt"
    corpus.write_text("\n".join((CORPORA / "en_shakespeare.txt").read_text(encoding="utf-8").splitlines()[:1500]),
                      encoding="utf-8")
    train_cli([corpus], project, "--merges", "150")
    train_cli([corpus], project, "--model", "unigram", "--vocab-size", "400")
    assert open_and_wait(window, qtbot, project)
    compare = window.compare
    compare.refresh()
    compare.split_a.setCurrentIndex(compare.split_a.findData(f"{project}#1"))
    compare.split_b.setCurrentIndex(compare.split_b.findData(f"{project}#2"))
    with qtbot.waitSignal(compare.splits_ready, timeout=60_000) as blocker:
        assert compare.compare_splits()
    assert blocker.args[0].differences
    return compare


def test_enter_on_a_differing_word_opens_it_in_inspect_under_both(make_window, qtbot, project, tmp_path):
    window = make_window()
    compare = _splits(qtbot, window, project, tmp_path)
    window.show_panel("compare")
    compare.tabs.setCurrentIndex(4)
    view = compare.split_view
    row = next(k for k, d in enumerate(compare.split_model.rows) if len(d.word) >= 5)
    word = compare.split_model.rows[row].word
    view.setFocus()
    view.setCurrentIndex(compare.split_model.index(row, 0))
    with qtbot.waitSignal(compare.inspect_requested, timeout=5000) as blocker:
        QTest.keyClick(view, Qt.Key.Key_Return)
    assert blocker.args == [word, [f"{project}#1", f"{project}#2"]]
    inspect = window.inspect
    assert window.docks["inspect"].isVisible()
    assert word in window.statusBar().currentMessage()
    assert inspect.text() == word
    assert [p.source() for p in inspect.panes] == [("run", 1), ("run", 2)]
    _inspect_settled(qtbot, inspect)
    # Each column splits the word as its tokenizer does, and those splits differ (that is why it was listed).
    ids = [p.layout_.ids() for p in inspect.panes]
    toks = [load_tokenizer(f"{project}#1"), load_tokenizer(f"{project}#2")]
    assert ids[0] == Encoder(toks[0]).encode(word)
    assert ids[1] == Encoder(toks[1]).encode(word)
    pieces = [[tok.vocab[i] for i in one] for tok, one in zip(toks, ids)]
    assert pieces[0] != pieces[1], pieces
    assert inspect.panes[1].nbest.isVisibleTo(inspect.panes[1])  # the Unigram column lists its n best
    assert not inspect.panes[0].nbest.isVisibleTo(inspect.panes[0])
    # The Unigram column has no merge slider, yet its text starts level with the BPE column's.
    # (Hiding a pane's "Loading…" line re-lays the pane out on a later turn of the event loop: wait for it.)
    assert not inspect.panes[1].slider_row.isVisibleTo(inspect.panes[1])

    def tops() -> list[int]:
        return [p.editor.mapTo(inspect, p.editor.rect().topLeft()).y() for p in inspect.panes]

    try:
        qtbot.waitUntil(lambda: len(set(tops())) == 1, timeout=3000)
    except AssertionError:
        raise AssertionError(f"the columns' text starts at different heights: {tops()}") from None


def test_double_click_and_a_file_outside_the_project(make_window, qtbot, project, tmp_path):
    window = make_window()
    compare = _splits(qtbot, window, project, tmp_path)
    window.show_panel("compare")
    compare.tabs.setCurrentIndex(4)
    view = compare.split_view
    word = compare.split_model.rows[0].word
    rect = view.visualRect(compare.split_model.index(0, 0))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # a real double-click's first
    with qtbot.waitSignal(compare.inspect_requested, timeout=5000):
        QTest.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.inspect.text() == word and len(window.inspect.panes) == 2
    # A tokenizer ticked in Compare as a file (not in the project) gets no column, and the status says so.
    compare.split_sources = (f"{project}#2", str(tmp_path / "elsewhere.tiktoken"))
    assert compare.open_split_in_inspector(0)
    assert [p.source() for p in window.inspect.panes] == [("run", 2)]
    assert "not in this project" in window.inspect.status.text()
    assert "outside this project" in window.statusBar().currentMessage()


def test_project_source_names_runs_and_references_of_this_project_only(tmp_path):
    project = tmp_path / "p.tokproj"
    assert project_source(f"{project}#3", project) == ("run", 3)
    assert project_source(f"{project}#ref:2", project) == ("ref", 2)
    assert project_source(f"{tmp_path / 'other.tokproj'}#3", project) is None
    assert project_source(str(tmp_path / "tokenizer.json"), project) is None
    assert project_source(f"{project}#x", project) is None
    assert project_source(f"{project}#3", None) is None
