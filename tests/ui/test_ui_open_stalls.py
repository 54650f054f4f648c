"""Opening a project decodes each run once, and the window's lists follow changes made elsewhere.

A project of many runs opens over several turns of the event loop (the run history in batches,
the Merges tab's listing and the newest run's curves on later turns) and ends complete.

Each tab, the actions and the run history asked the store for the runs while a project opened —
about ten listings, each decoding every run's settings (a Unigram run's hold a score per piece:
~0.25 s of the window's time per open). The project session now keeps the decoded runs until
another connection commits to the file, and reads them without the per-piece scores.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from ui_helpers import open_and_wait, train_cli

from workbench.store import validate
from workbench.ui.train.run_history import FILL_BATCH


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """A project with a BPE run and a Unigram run (its settings keep a score per piece)."""
    root = tmp_path_factory.mktemp("tworuns")
    corpus = root / "c.txt"
    corpus.write_text("hello world, low lower lowest newer wider\n" * 40, encoding="utf-8")
    project = root / "p.tokproj"
    train_cli([corpus], project, "--merges", "5")
    train_cli([corpus], project, "--model", "unigram", "--vocab-size", "20")
    return project


def _settled(window) -> bool:
    return (not window.corpus.is_scanning() and not window.merges.jobs.busy()
            and not window.inspect.jobs.busy() and bool(window.training.history.run_ids()))


def test_opening_a_project_decodes_each_run_once_and_off_the_gui_thread(make_window, two_runs, qtbot, monkeypatch):
    from workbench.ui import main_window

    decoded: Counter[int] = Counter()  # by the listings (the worker that opens the file, the GUI thread)
    on_gui: Counter[int] = Counter()
    real = validate.run_info  # how a listing decodes a run (the Merges tab's check of the run it
    # shows decodes that run once more on its worker, with its scores: it checks every stored value)
    opening = threading.local()

    def counting(row, owner_alive):
        if threading.current_thread() is threading.main_thread():
            on_gui[row[0]] += 1
        if threading.current_thread() is threading.main_thread() or getattr(opening, "now", False):
            decoded[row[0]] += 1
        return real(row, owner_alive)

    def prepare_open(*args, **kwargs):
        opening.now = True
        try:
            return real_prepare(*args, **kwargs)
        finally:
            opening.now = False

    real_prepare = main_window.prepare_open
    monkeypatch.setattr(validate, "run_info", counting)
    monkeypatch.setattr(main_window, "prepare_open", prepare_open)
    window = make_window()
    assert open_and_wait(window, qtbot, two_runs)
    qtbot.waitUntil(lambda: _settled(window), timeout=30000)
    assert decoded == Counter({1: 1, 2: 1})  # every tab's listing came from the one decode
    assert on_gui == Counter()  # ... made by the worker that opened the file
    runs = window.session.runs()
    assert [r.id for r in runs] == [1, 2] and runs[1].settings["model"] == "unigram"
    assert "scores" not in runs[1].settings  # a listing never parses a score per piece
    assert window.session.run(2) == runs[1] and window.session.run(3) is None


def test_the_kept_runs_follow_a_change_committed_by_another_connection(make_window, two_runs, qtbot, tmp_path):
    project = tmp_path / "copy.tokproj"
    project.write_bytes(two_runs.read_bytes())
    window = make_window(project)
    session = window.session
    assert [r.name for r in session.runs()] == [r.name for r in session.runs()]
    before = session.runs()[0].name
    raw = sqlite3.connect(project)  # another program renames a run: the window hears nothing of it
    with raw:
        raw.execute("UPDATE runs SET name = 'renamed elsewhere' WHERE id = 1")
    raw.close()
    assert session.run(1).name == "renamed elsewhere" != before
    session.rename_run(2, "renamed here")
    assert [r.name for r in session.runs()] == ["renamed elsewhere", "renamed here"]
    history = window.training.history
    qtbot.waitUntil(lambda: history.item_for(2) is not None and history.item_for(2).text(0) == "renamed here",
                    timeout=10000)


def test_a_long_unigram_runs_sources_are_set_up_off_the_gui_thread(make_window, two_runs, qtbot, monkeypatch):
    """The settings, scores and count of a long piece table are read by the worker that checks
    the run; the window only moves the sources it made onto its own connection."""
    from workbench.store import browse

    window = make_window(two_runs)
    window.show_panel("merges")
    panel = window.merges
    qtbot.waitUntil(lambda: not panel.jobs.busy() and not panel.pieces.model.busy, timeout=30000)
    panel._set_source(None)
    panel.model.ASYNC_KEYS = panel.pieces.model.ASYNC_KEYS = 5  # a run of 20 pieces is opened as a long one
    on_gui: list[str] = []
    for cls, name in ((browse.MergeSource, "__init__"), (browse.PieceSource, "__init__"),
                      (browse.VocabSource, "count"), (browse, "source_settings")):
        real = getattr(cls, name)
        what = f"{getattr(cls, '__name__', 'browse')}.{name}"

        def watched(*args, _real=real, _what=what, **kwargs):
            if threading.current_thread() is threading.main_thread():
                on_gui.append(_what)
            return _real(*args, **kwargs)

        monkeypatch.setattr(cls, name, watched)
    panel._set_source(("run", 2))
    pieces = panel.pieces
    qtbot.waitUntil(lambda: pieces.source is not None and not pieces.model.busy
                    and pieces.model.rowCount() == pieces.model.total > 0, timeout=30000)
    assert on_gui == []  # nothing of the run was read on the window's thread
    source = pieces.source
    assert source.conn is panel._conn and source.known_count == pieces.model.total
    assert source.scores is not None and len(source.scores) == source.known_count
    assert pieces.model.data(pieces.model.index(3, 2)) == f"{source.scores[3]:.4f}"


def _copy_runs(project: Path, runs: int) -> None:
    """Copy run 1 (its row, merges, vocabulary, steps and corpus links) until the project holds ``runs``."""
    conn = sqlite3.connect(project)
    with conn:
        for table in ("runs", "merges", "vocab", "run_steps", "run_corpora"):
            key = "id" if table == "runs" else "run_id"
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != key]
            for new in range(2, runs + 1):
                conn.execute(f"INSERT INTO {table} ({key}, {', '.join(cols)}) "
                             f"SELECT ?, {', '.join(cols)} FROM {table} WHERE {key} = 1", (new,))
        conn.execute("UPDATE runs SET name = 'run number ' || id")
    conn.close()


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("manyruns")
    corpus = root / "c.txt"
    corpus.write_text("hello world, low lower lowest newer wider\n" * 40, encoding="utf-8")
    project = root / "many.tokproj"
    train_cli([corpus], project, "--merges", "5")
    _copy_runs(project, 3 * FILL_BATCH)
    return project


def test_a_project_of_many_runs_opens_over_several_turns_and_ends_complete(make_window, many_runs, qtbot):
    """The turn that takes the project over builds one batch of the run history and neither lists
    the runs in the Merges tab nor draws a curve; later turns finish all of it, the newest run
    shown everywhere."""
    total = 3 * FILL_BATCH
    window = make_window()
    history, merges, plots = window.training.history, window.merges, window.training.plots
    seen: list[tuple] = []  # what the window held when it said the project was open
    window.project_opened.connect(lambda _p: seen.append((history.filling(), history.run_ids(),
                                                          merges.chooser.count(), dict(plots.runs))))
    with qtbot.waitSignal(window.project_opened, timeout=30000):
        assert window.open_project(many_runs, ask_first=False)
    filling, listed, chosen, drawn = seen[0]
    assert filling and listed == list(range(total, total - FILL_BATCH, -1))
    assert chosen == 0 and not drawn  # on later turns
    qtbot.waitUntil(lambda: not history.filling() and total in plots.runs and merges.chooser.count() == total,
                    timeout=30000)
    assert history.run_ids() == list(range(total, 0, -1))
    assert history.selected_ids() == [total]
    assert merges.current_source() == ("run", total)
    assert history.item_for(1).text(0) == "run number 1"
    assert "run 1: run number 1" in history.item_for(1).toolTip(0)  # every row has its tooltip


def test_a_selection_made_while_the_history_fills_is_kept(make_window, many_runs, two_runs, qtbot):
    total = 3 * FILL_BATCH
    window = make_window()
    history = window.training.history
    heard: list[list[int]] = []
    history.selection_changed.connect(heard.append)
    assert open_and_wait(window, qtbot, many_runs)
    qtbot.waitUntil(lambda: history.selected_ids() == [total], timeout=30000)
    history.select([total, 2])  # run 2's row is still to come: selected when it is added
    qtbot.waitUntil(lambda: not history.filling(), timeout=30000)
    assert sorted(history.selected_ids()) == [2, total] and sorted(heard[-1]) == [2, total]
    # another project opened while the first still fills: nothing of the first is left
    with qtbot.waitSignal(window.project_opened, timeout=30000):  # taken over, its history still filling
        assert window.open_project(many_runs, ask_first=False)
    assert history.filling()
    assert open_and_wait(window, qtbot, two_runs)
    qtbot.waitUntil(lambda: not history.filling() and window.merges.chooser.count() == 2
                    and 2 in window.training.plots.runs, timeout=30000)
    assert history.run_ids() == [2, 1] and history.selected_ids() == [2]
    qtbot.wait(50)
    assert window.merges.chooser.count() == 2 and list(window.training.plots.runs) == [2]


def test_a_project_is_opened_on_a_worker_and_a_file_that_cannot_open_leaves_the_last_one(
        make_window, two_runs, many_runs, qtbot, tmp_path, answer):
    """While the file is read the window says so and keeps the project it had; a newer open overtakes
    an older one; a file that is no project is refused in one line, the open project staying."""
    from PySide6.QtWidgets import QMessageBox

    window = make_window(two_runs)
    opened: list[str] = []
    loaded: list[str] = []
    failed: list[str] = []
    window.project_opened.connect(opened.append)
    window.project_loaded.connect(loaded.append)
    window.open_failed.connect(failed.append)
    assert window.open_project(many_runs, ask_first=False)
    assert window.is_opening() and window.opening_label.isVisibleTo(window)
    assert window.opening_label.text() == f"Opening {many_runs.name}…"
    assert window.session.path == two_runs and not window.act_train.isEnabled()  # the last project, still open
    # no run may start on the project in front meanwhile: it is about to be replaced
    assert not window.training.start_button.isEnabled() and window.training.start() is False
    assert "being opened" in window.training.start_button.toolTip()
    assert window.open_project(two_runs, ask_first=False)  # overtakes the first: only it is taken over
    qtbot.waitUntil(lambda: not window.is_opening(), timeout=30000)
    assert opened == loaded == [str(two_runs)] and not window.opening_label.isVisibleTo(window)
    assert window.session.path == two_runs and [r.id for r in window.session.runs()] == [1, 2]
    assert "being opened" not in window.training.start_button.toolTip()
    qtbot.waitUntil(lambda: window.compare.tokenizer_list.count() == 2, timeout=10000)  # listed in a later turn

    junk = tmp_path / "junk.tokproj"
    junk.write_bytes(b"not a project at all\n" * 100)
    box = answer(QMessageBox.StandardButton.Ok)
    with qtbot.waitSignal(window.open_failed, timeout=30000):
        assert window.open_project(junk, ask_first=False)
    assert len(failed) == 1 and "\n" not in failed[0] and box.texts and box.texts[0] == failed[0].splitlines()[0]
    assert not window.is_opening() and window.session.path == two_runs and window.act_train.isEnabled()
    assert junk.read_bytes() == b"not a project at all\n" * 100  # nothing written to it


def test_the_take_over_turn_asks_nothing_of_the_file_on_the_gui_thread(make_window, two_runs, qtbot, monkeypatch,
                                                                      tmp_path):
    """Every read the adopting turn needs (runs, references, the runs' corpus paths, the tabs'
    sessions) was made by the opening worker: no statement — not even the data version — runs on
    the window's thread while it takes the project over (issue 26)."""
    from workbench.store import project as store_project
    from workbench.ui import main_window

    project = tmp_path / "p.tokproj"
    project.write_bytes(two_runs.read_bytes())
    gui = threading.get_ident()
    adopting = [False]
    during: list[str] = []   # statements run on the GUI thread inside _adopt
    workers: list[str] = []  # statements the opening worker ran on the connection it handed over
    real_init = store_project.ProjectStore.__init__

    def traced(self, *args, **kwargs):
        real_init(self, *args, **kwargs)

        def trace(sql: str) -> None:
            if threading.get_ident() == gui:
                if adopting[0]:
                    during.append(sql)
            else:
                workers.append(sql)

        self.connection.set_trace_callback(trace)

    real_adopt = main_window.MainWindow._adopt

    def adopt(self, *args):
        adopting[0] = True
        try:
            return real_adopt(self, *args)
        finally:
            adopting[0] = False

    monkeypatch.setattr(store_project.ProjectStore, "__init__", traced)
    monkeypatch.setattr(main_window.MainWindow, "_adopt", adopt)
    window = make_window()
    errors: list[str] = []
    monkeypatch.setattr(window, "_error", lambda _title, message: errors.append(message))
    with qtbot.waitSignal(window.project_opened, timeout=30000):
        assert window.open_project(project, ask_first=False)
    assert during == [] and errors == []
    assert any("FROM refs" in s for s in workers) and any("FROM corpora" in s for s in workers)
    qtbot.waitUntil(lambda: _settled(window) and not window.is_opening(), timeout=30000)
    # What the take-over showed is what the file holds.
    assert window.training.history.run_ids() == [2, 1]
    assert set(window.training._corpus_paths.values()) == {str(two_runs.parent / "c.txt")}
    with store_project.ProjectStore.open(project, readonly=True) as store:  # the kept answers are the file's
        assert window.session.references() == store.references()
        assert window.session.corpus_count() == store.corpus_count() == 2  # (one row per run's read)


def test_the_take_over_shows_the_train_tab_and_lists_each_view_in_turns_of_their_own(make_window, many_runs, qtbot):
    """The Train tab is shown in a turn before the one that takes the project over (its show is a
    layout and paint of the whole tab), and the take-over does not list the Inspect tab's sources
    (a step of its own); once settled every view shows the project, the run history's columns
    measured over every row."""
    from workbench.ui.train.run_history import CONTENTS_PRECISION

    total = 3 * FILL_BATCH
    window = make_window()
    window.show_panel("corpus")
    history = window.training.history
    seen: list[tuple] = []
    window.session.project_changed.connect(lambda: seen.append(("taken over", window.current_panel)))
    window.project_opened.connect(lambda _p: seen.append((window.current_panel, len(window.inspect.sources),
                                                          window.session.settling())))
    with qtbot.waitSignal(window.project_opened, timeout=30000):
        assert window.open_project(many_runs, ask_first=False)
    assert seen == [("taken over", "train"), ("train", 0, True)]
    qtbot.waitUntil(lambda: not window.is_opening() and not history.filling(), timeout=30000)
    assert window.current_panel == "train"
    assert {s.source[1] for s in window.inspect.sources if s.source[0] == "run"} == set(range(1, total + 1))
    assert len(window.compare.tokenizer_list.findItems("run number", Qt.MatchFlag.MatchContains)) == total
    assert history.tree.header().resizeContentsPrecision() == CONTENTS_PRECISION
    assert history.tree.topLevelItemCount() == total


def test_a_project_replaced_mid_take_over_leaves_nothing_of_it(make_window, many_runs, two_runs, qtbot):
    """Another project opened while the steps of the first still wait: none of them runs on the
    second (the Inspect tab lists the second's sources, the Train tab its runs)."""
    window = make_window()
    with qtbot.waitSignal(window.project_opened, timeout=30000):
        assert window.open_project(many_runs, ask_first=False)
    assert window.session.settling()
    assert open_and_wait(window, qtbot, two_runs)
    qtbot.waitUntil(lambda: not window.training.history.filling() and not window.session.settling(), timeout=30000)
    qtbot.wait(50)
    assert window.training.history.run_ids() == [2, 1]
    assert window.inspect.project == two_runs.absolute()
    assert {s.source[1] for s in window.inspect.sources if s.source[0] == "run"} == {1, 2}
    assert window.compare.tokenizer_list.count() == 2


def test_the_take_over_steps_run_in_order_and_none_after_a_close(qtbot, tmp_path):
    from workbench.ui.project_session import ProjectSession

    session = ProjectSession()
    session.new_untitled()
    order: list[str] = []
    for name in ("a", "b", "c"):
        session.after_open(lambda name=name: order.append(name))
    with qtbot.waitSignal(session.settled, timeout=5000):
        pass
    assert order == ["a", "b", "c"]
    session.after_open(lambda: order.append("dropped"))
    session.discard()  # closed before its turn: never runs on the next project
    qtbot.wait(30)
    assert order == ["a", "b", "c"] and not session.settling()
