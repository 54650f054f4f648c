"""Crafted or damaged columns (issue 26): one line naming the run and the column, the other runs
still listed and usable — through the real CLI (in-process, and a child process for the real thing)
and a real offscreen window opening the project.

The project (``three_runs``) holds a finished BPE (1), WordPiece (2) and Unigram (3) run; each case
damages one value of one run the way an edited or crafted file would.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_helpers import one_line_error, run_inproc, without_warnings, workbench

DEEP = "[" * 100_000 + "]" * 100_000

# case → (damaged run, SQL, parameters, the column the line must name)
CASES = {
    "id is text": (1, "UPDATE merges SET left_id = 'abc' WHERE run_id = 1 AND rank = 3", (), "merges.left_id"),
    "id negative": (1, "UPDATE merges SET right_id = -5 WHERE run_id = 1 AND rank = 3", (), "merges.right_id"),
    "id beyond the vocabulary": (2, "UPDATE merges SET new_id = 100000 WHERE run_id = 2 AND rank = 3", (),
                                 "merges.new_id"),
    "id huge": (1, "UPDATE merges SET new_id = 9223372036854775807 WHERE run_id = 1 AND rank = 0", (),
                "merges.new_id"),
    "vocab id huge": (1, "UPDATE vocab SET id = 9000000000 WHERE run_id = 1 AND id = 399", (), "vocab.id"),
    "settings not JSON": (2, "UPDATE runs SET settings = '{oops' WHERE id = 2", (), "settings"),
    "settings a list": (2, "UPDATE runs SET settings = '[1, 2]' WHERE id = 2", (), "settings"),
    "settings 100,000 deep": (2, "UPDATE runs SET settings = ? WHERE id = 2", (DEEP,), "settings"),
    "timings not JSON": (1, "UPDATE runs SET timings = 'nope' WHERE id = 1", (), "timings"),
    "checkpoint not JSON": (3, "UPDATE pruning_checkpoints SET pieces = 'x' WHERE run_id = 3", (),
                            "pruning_checkpoints.pieces"),
    "piece an INTEGER": (2, "UPDATE vocab SET piece = 1000000000000 WHERE run_id = 2 AND id = 10", (), "vocab.piece"),
    "piece a REAL": (1, "UPDATE vocab SET piece = 1.5 WHERE run_id = 1 AND id = 300", (), "vocab.piece"),
    "unknown normalizer": (2, "UPDATE runs SET settings = json_set(settings, '$.normalizer', json('[\"zzz\"]')) "
                              "WHERE id = 2", (), "settings"),
    "unknown model": (1, "UPDATE runs SET settings = json_set(settings, '$.model', 'gpt5') WHERE id = 1", (),
                      "settings"),
    "pre-tokenizer not text": (3, "UPDATE runs SET settings = json_set(settings, '$.pretokenizer', 7) WHERE id = 3",
                               (), "settings"),
}


def craft(source: Path, folder: Path, sql: str, params: tuple = ()) -> Path:
    folder.mkdir(exist_ok=True)
    project = folder / "p.tokproj"
    shutil.copy(source, project)
    with contextlib.closing(sqlite3.connect(project)) as conn:
        conn.execute(sql, params)
        conn.commit()
    return project


def _runs(project: Path) -> list[dict]:
    code, out, err = run_inproc(["runs", str(project), "--json"])
    assert code == 0 and "Traceback" not in err, err
    return json.loads(out)


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_column_names_its_run_and_column_and_the_others_stay_usable(three_runs, tmp_path, case):
    damaged, sql, params, column = CASES[case]
    project = craft(three_runs, tmp_path / "case", sql, params)

    listed = {r["id"]: r for r in _runs(project)}
    assert sorted(listed) == [1, 2, 3]
    assert f"run {damaged} " in listed[damaged]["damage"] and f"column {column} " in listed[damaged]["damage"]
    assert all(listed[rid]["damage"] is None for rid in listed if rid != damaged)
    code, out, err = run_inproc(["runs", str(project)])
    assert code == 0 and "damaged" in out and f"column {column}" in out, out

    if column.startswith("pruning_checkpoints"):  # only the sweep reads them; encoding does not need them
        held_out = tmp_path / "held.txt"
        held_out.write_text("the quick brown fox\n" * 20, encoding="utf-8")
        needs = ["sweep", f"{project}#{damaged}", str(held_out), "--no-cache", "--points", "3"]
    else:
        needs = ["encode", "--tokenizer", f"{project}#{damaged}", "--text", "the quick fox"]
    code, _out, err = run_inproc(needs)
    assert code == 2, err
    line = one_line_error(err)
    assert f"run {damaged} (" in line and f"column {column} " in line and "other runs are usable" in line
    for rid in {1, 2, 3} - {damaged}:
        code, out, err = run_inproc(["encode", "--tokenizer", f"{project}#{rid}", "--text", "the quick fox"])
        assert code == 0 and out.strip(), (rid, err)


def test_the_real_entry_point_on_a_damaged_project(three_runs, tmp_path):
    """A child process, as a user runs it: runs, encode, export and sweep each say one line."""
    project = craft(three_runs, tmp_path / "p", "UPDATE runs SET settings = ? WHERE id = 3", (DEEP,))
    folder = project.parent
    held_out = folder / "held.txt"
    held_out.write_text("the quick brown fox jumps over the lazy dog\n" * 20, encoding="utf-8")

    done = workbench("runs", str(project), cwd=folder)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:] if line[:4].strip().isdigit()]
    assert [(row[0], row[1]) for row in rows] == [("1", "finished"), ("2", "finished"), ("3", "damaged")]

    for args in (["encode", "--tokenizer", f"{project}#3", "--text", "x"],
                 ["export", str(project), "--run", "3", "--format", "hf", "--out", str(folder / "o.json")],
                 ["sweep", f"{project}#3", str(held_out), "--no-cache", "--points", "3"]):
        done = workbench(*args, cwd=folder)
        assert done.returncode == 2, (args, done.stderr)
        assert "column settings is JSON nested far too deeply" in one_line_error(done.stderr)
    assert not (folder / "o.json").exists()

    # Without #RUN the newest usable run is taken, and the one passed over is named.
    done = workbench("export", str(project), "--format", "hf", "--out", str(folder / "latest.json"), cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "used an older run" in one_line_error(without_warnings(done.stderr)) and "run 3 (" in done.stderr
    assert json.loads((folder / "latest.json").read_text("utf-8"))["model"]["type"] == "WordPiece"

    # A new run can still be trained into the project, and is listed beside the others.
    done = workbench("train", str(held_out), "--project", str(project), "--merges", "5", "--progress", "none",
                     "--no-count-cache", cwd=folder)
    assert done.returncode == 0, done.stderr
    listed = {r["id"]: r for r in json.loads(workbench("runs", str(project), "--json", cwd=folder).stdout)}
    assert sorted(listed) == [1, 2, 3, 4] and listed[4]["status"] == "finished" and listed[3]["damage"]


@pytest.fixture(scope="module")
def window_settings(qapp, tmp_path_factory):
    """Settings and app data in a temporary folder (never the user's), as tests/ui does."""
    from PySide6.QtCore import QSettings

    base = tmp_path_factory.mktemp("appdata")
    os.environ["XDG_DATA_HOME"] = str(base / "data")
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(base / "config"))
    from workbench.ui.app import configure_app

    configure_app(qapp)
    QSettings().clear()


def test_the_window_lists_every_run_and_shows_the_damaged_ones_line(three_runs, tmp_path, qtbot, window_settings):
    pytest.importorskip("pyqtgraph")
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    project = craft(three_runs, tmp_path / "w", "UPDATE vocab SET piece = 1000000000000 WHERE run_id = 2 AND id = 10")
    with contextlib.closing(sqlite3.connect(project)) as conn:
        conn.execute("UPDATE runs SET settings = '{oops' WHERE id = 1")
        conn.commit()
    window = MainWindow(AppSettings())
    qtbot.addWidget(window)
    try:
        assert window.open_project(project, ask_first=False)
        qtbot.waitUntil(lambda: not window.is_opening(), timeout=30000)
        window.resize(1200, 800)
        window.show()
        history = window.training.history
        qtbot.waitUntil(lambda: sorted(history.run_ids()) == [1, 2, 3], timeout=10000)
        status = {history.item_for(rid).text(1) for rid in (1, 3)}
        assert history.item_for(1).text(1) == "damaged" and history.item_for(3).text(1) == "finished", status
        assert "column settings is not JSON" in history.item_for(1).toolTip(0)

        window.show_panel("merges")
        merges = window.merges
        qtbot.waitUntil(lambda: merges.chooser.count() == 3, timeout=10000)
        for index, (rid, column) in ((0, (1, "settings")), (1, (2, "vocab.piece"))):
            merges.chooser.setCurrentIndex(index)
            qtbot.waitUntil(lambda rid=rid: merges.error.text().startswith(f"run {rid} ("), timeout=10000)
            assert f"column {column} " in merges.error.text() and merges.model.rowCount() == 0
        merges.chooser.setCurrentIndex(2)  # the Unigram run is untouched: its pieces are shown
        qtbot.waitUntil(lambda: not merges.error.isVisibleTo(merges) and merges.pieces.model.rowCount() > 0,
                        timeout=10000)
        merges.chooser.setCurrentIndex(0)
        qtbot.waitUntil(lambda: "column settings" in merges.error.text(), timeout=10000)
    finally:
        window.shutdown()


def test_a_run_that_failed_before_its_model_was_stored_says_it_failed_not_damaged(tmp_path):
    """A Unigram asked for more pieces than its corpus yields fails at the final cut, after the run
    was created: using it names the failure, not "edited outside the workbench"."""
    from hostile_helpers import one_line_error, run_inproc

    corpus = tmp_path / "small.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog\n" * 30, encoding="utf-8")
    project = tmp_path / "p.tokproj"
    code, _out, err = run_inproc(["train", str(corpus), "--project", str(project), "--model", "unigram",
                                  "--vocab-size", "3000", "--progress", "none"], timeout_s=60)
    assert code == 2 and "yields only" in one_line_error(err)
    code, _out, err = run_inproc(["encode", "--tokenizer", f"{project}#1", "--text", "the fox"])
    line = one_line_error(err)
    assert code == 2 and "failed (the corpus yields only" in line and "outside the workbench" not in line, line
