"""The Merges tab for WordPiece and Unigram runs trained for real on the demo corpus (tasks.train).

* Unigram: the piece table replaces the merge table — one row per vocabulary entry, sorted by log
  probability in SQL, filtered by the panel's filter box, never-used flags equal to a direct
  encoding of the run's corpus, and the piece detail's other spellings from n-best Viterbi.
* WordPiece: the Score column shows the trainer's own scores (the same run trained again in
  memory), sorts by them, and the detail names score and frequency; a run stored before scores
  were kept opens with the column hidden.
* BPE: no Score column.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from merge_helpers import assert_cells_match_cell
from PySide6.QtCore import Qt

from workbench.core.encoder import Encoder
from workbench.corpus.demo import demo_corpus_files
from workbench.store import ProjectStore
from workbench.store.browse import PieceSource
from workbench.tasks.inspection import piece_segmentations
from workbench.tasks.spec import CorpusFile, RunSpec
from workbench.tasks.train import TRAINERS, count_words, open_sources, train_run
from workbench.ui.merges.merge_model import MergeTableModel

SIZES = {"bpe": 600, "wordpiece": 1500, "unigram": 1200}


def _spec(model: str) -> RunSpec:
    files = tuple(CorpusFile(str(p)) for p in demo_corpus_files())
    options = {"wordpiece_score": "likelihood"} if model == "wordpiece" else {}  # the score column's case
    # Unigram on the raw text (no clean-up): its line breaks, kept in the words encoded, leave some
    # pieces unused on the corpus, which the never-used test needs (with the defaults all are used).
    normalizer = {"normalizer": ()} if model == "unigram" else {}
    return RunSpec(files=files, model=model, vocab_size=SIZES[model], name=f"demo {model}",
                   options=options, **normalizer).validate()


@pytest.fixture(scope="module")
def demo_project(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("pieces") / "demo.tokproj"
    runs = {}
    for model in SIZES:
        run_id, status = train_run(_spec(model), path, count_cache=False)
        assert status == "finished"
        runs[model] = run_id
    return path, runs


def _choose(panel, run_id: int) -> None:
    from workbench.ui.merges.widgets import find_source

    panel.chooser.setCurrentIndex(find_source(panel.chooser, ("run", run_id)))
    assert panel.current_source() == ("run", run_id)


def _column(model, column: int) -> list[str]:
    return [model.data(model.index(r, column)) for r in range(model.rowCount())]


# ---- Unigram ------------------------------------------------------------------------------------------

def test_unigram_shows_one_piece_row_per_vocabulary_entry(panel, demo_project):
    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["unigram"])
    with ProjectStore.open(path) as store:
        tok = store.load_tokenizer(runs["unigram"])
    assert panel._pieces_mode and panel.merge_stack.currentWidget() is panel.pieces
    assert panel.pieces.model.rowCount() == len(tok.vocab) == SIZES["unigram"]
    assert panel.count_label.text() == f"{SIZES['unigram']:,} pieces"
    assert "unigram" in panel.status.text() and not panel.field.isVisible()
    # Row r is id r, its log probability the tokenizer's score (specials have none).
    for row in (0, 3, 500, len(tok.vocab) - 1):
        entry = panel.pieces.model.entry(row)
        assert entry.id == row and entry.piece == tok.vocab[row]
        assert entry.score == (None if row in tok.special_ids else tok.scores[row])
    kinds = PieceSource(panel._conn, ("run", runs["unigram"])).kind_counts()
    assert kinds == {"special": len(tok.special_ids), "normal": len(tok.vocab) - len(tok.special_ids)}


def test_unigram_sorted_by_log_probability_gives_descending_scores(panel, demo_project):
    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["unigram"])
    model = panel.pieces.model
    panel.pieces.table.sortByColumn(2, Qt.SortOrder.DescendingOrder)
    scores = [e.score for e in model.iter_all()]
    with ProjectStore.open(path) as store:
        tok = store.load_tokenizer(runs["unigram"])
    learned = sorted((s for i, s in enumerate(tok.scores) if i not in tok.special_ids), reverse=True)
    assert scores[:len(learned)] == learned and scores[len(learned):] == [None] * len(tok.special_ids)
    shown = [float(t) for t in _column(model, 2)[:50]]
    assert shown == sorted(shown, reverse=True)
    # The probability column is exp(log prob), so it sorts the same way; length sorts too.
    panel.pieces.table.sortByColumn(3, Qt.SortOrder.AscendingOrder)
    probs = [e.probability for e in model.iter_all() if e.probability is not None]
    assert probs == sorted(probs)
    panel.pieces.table.sortByColumn(4, Qt.SortOrder.DescendingOrder)
    assert model.entry(0).chars == max(len(p.decode("utf-8", "replace")) for p in tok.vocab)


def test_filter_box_narrows_the_piece_table(panel, demo_project, qtbot):
    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["unigram"])
    with ProjectStore.open(path) as store:
        tok = store.load_tokenizer(runs["unigram"])
    # A filter the window's thread cannot finish within its few-ms try goes on to a worker (a loaded
    # machine): wait for its result rather than read the rows in the same turn.
    panel.set_filter("th")
    model = panel.pieces.model
    expected = [i for i, p in enumerate(tok.vocab) if b"th" in p]
    qtbot.waitUntil(lambda: [e.id for e in model.iter_all()] == expected)
    assert 0 < model.rowCount() == len(expected) < len(tok.vocab)
    qtbot.waitUntil(lambda: panel.count_label.text() == f"{len(expected):,} of {len(tok.vocab):,} pieces match")
    panel.set_filter("^▁t", regex=True)
    starting = {i for i, p in enumerate(tok.vocab) if p.startswith("▁t".encode())}
    assert starting != set(expected)
    qtbot.waitUntil(lambda: {e.id for e in model.iter_all()} == starting)
    # A piece the filter hides is no longer explained; an empty result says why it is empty.
    panel.pieces.select_token(expected[0])
    assert panel.pieces.detail.token_id == expected[0]
    panel.set_filter("no piece has this")
    qtbot.waitUntil(lambda: model.rowCount() == 0)
    assert panel.pieces.detail.token_id is None
    assert panel.pieces.table._placeholder == "No piece matches the filter."
    # Ctrl+F's field is the same box: typing there filters the pieces (debounced).
    panel.set_filter()
    qtbot.keyClicks(panel.filter.edit, "ing")
    qtbot.waitUntil(lambda: model.rowCount() == sum(b"ing" in p for p in tok.vocab))


def test_never_used_flag_matches_encoding_the_corpus(panel, demo_project, qtbot):
    path, runs = demo_project
    with qtbot.waitSignal(panel.pieces.usage_ready, timeout=60_000):
        panel.set_project(path)
        _choose(panel, runs["unigram"])
        panel.pieces.count_usage()  # the cache may already hold it from another test
    with ProjectStore.open(path) as store:
        tok = store.load_tokenizer(runs["unigram"])
    encoder = Encoder(tok)
    used: set[int] = set()
    for file in demo_corpus_files():
        with open(file, encoding="utf-8", newline="") as fh:
            for line in fh:
                used.update(encoder.encode(line))
    direct = {i for i in range(len(tok.vocab)) if i not in used and i not in tok.special_ids}
    flagged = {e.id for e in panel.pieces.model.iter_all() if e.never_used}
    assert direct and flagged == direct
    panel.pieces.never_only.setChecked(True)
    assert {e.id for e in panel.pieces.model.iter_all()} == direct
    assert f"Never used: {len(direct):,} of" in panel.pieces.summary.text()


def test_the_audit_marks_the_unigram_piece_table(panel, demo_project, qtbot):
    """The Audit tab's findings on a Unigram run: an audit column in the piece table (which stands in
    for the merge table) and the panel's "audit:" filter narrowing it to one category."""
    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["unigram"])
    view = panel.audit
    qtbot.waitUntil(view.audit_button.isEnabled, timeout=5000)
    view.audit_button.click()
    qtbot.waitUntil(lambda: view.report is not None and panel.audit_filter.isEnabled(), timeout=60_000)
    never = view.report.audit.ids("never-used")
    assert never
    panel.audit_filter.setCurrentIndex(panel.audit_filter.findData("never-used"))
    model = panel.pieces.model
    qtbot.waitUntil(lambda: model.rowCount() == len(never), timeout=10_000)
    assert [e.id for e in model.iter_all()] == sorted(never)
    assert "never used" in model.data(model.index(0, 8))
    panel.audit_filter.setCurrentIndex(0)
    qtbot.waitUntil(lambda: model.rowCount() == SIZES["unigram"], timeout=10_000)
    # What a paint reads of the piece table (its cells, made once per row) is what cell() says:
    # log probabilities, never-used and audit colours, the monospaced piece.
    assert assert_cells_match_cell(model, range(0, model.rowCount(), 7)) > 0


def test_piece_detail_lists_other_spellings(panel, demo_project, qtbot):
    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["unigram"])
    with ProjectStore.open(path) as store:
        tok = store.load_tokenizer(runs["unigram"])
    target = next(i for i, p in enumerate(tok.vocab) if i not in tok.special_ids and len(p.decode()) >= 4)
    with qtbot.waitSignal(panel.merge_selected) as sig:
        panel.pieces.select_token(target, emit=True)
    assert sig.args == [("run", runs["unigram"]), target]
    splits = piece_segmentations(tok, target, 5)
    assert splits and all(ids != [target] for ids, _p in splits)
    tree = panel.pieces.detail.splits
    assert tree.topLevelItemCount() == len(splits)
    from workbench.ui.merges.merge_model import browser_piece
    assert tree.topLevelItem(0).text(0) == " · ".join(browser_piece(tok.vocab[i]) for i in splits[0][0])
    assert f"token {target}" in panel.pieces.detail.subtitle.text()


# ---- WordPiece -----------------------------------------------------------------------------------------

def _trained_again(model: str):
    """The run's trainer, run again in memory on the same counts (deterministic)."""
    spec = _spec(model)
    counts, _sources = count_words(open_sources(spec.files), spec.pretokenizer, spec.normalizer,
                                   sequences=spec.sequences)
    trainer = TRAINERS[model](counts, spec)
    for _event in trainer.run():
        pass
    return trainer


def test_wordpiece_score_column_shows_the_trainers_scores(panel, demo_project):
    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["wordpiece"])
    trainer = _trained_again("wordpiece")
    model = panel.model
    assert not panel._pieces_mode and not panel.table.isColumnHidden(MergeTableModel.SCORE_COLUMN)
    assert model.rowCount() == len(trainer.scores)
    made: set[int] = set()
    for rank, ((_a, _b, new), score) in enumerate(zip(trainer.merges, trainer.scores)):
        shown = model.data(model.index(rank, MergeTableModel.SCORE_COLUMN))
        assert shown == ("—" if new in made else f"{score:.6g}"), rank
        made.add(new)
    assert "likelihood scores" in panel.status.text()
    # Sorting by score (in SQL) orders the merges by the trainer's scores.
    panel.table.sortByColumn(MergeTableModel.SCORE_COLUMN, Qt.SortOrder.DescendingOrder)
    ranks = [e.rank for e in model.iter_all()]
    firsts = {}
    for rank, (_a, _b, new) in enumerate(trainer.merges):
        firsts.setdefault(new, rank)
    scored = [r for r in ranks if firsts[trainer.merges[r][2]] == r]
    assert [trainer.scores[r] for r in scored] == sorted((trainer.scores[r] for r in firsts.values()), reverse=True)
    # The detail pane names the score and the frequency.
    panel.table.selectRow(0)
    entry = model.entry(0)
    text = panel.detail.subtitle.text()
    assert f"pair frequency {entry.frequency:,}" in text and f"likelihood score {trainer.scores[entry.rank]:.6g}" in text


def test_wordpiece_run_stored_before_scores_were_kept_opens(panel, demo_project, tmp_path):
    path, runs = demo_project
    old = tmp_path / "old.tokproj"
    shutil.copy(path, old)
    with sqlite3.connect(old) as conn:  # what a run trained before this change has: no "scores"
        settings = json.loads(conn.execute("SELECT settings FROM runs WHERE id = ?", (runs["wordpiece"],)).fetchone()[0])
        del settings["scores"]
        conn.execute("UPDATE runs SET settings = ? WHERE id = ?", (json.dumps(settings), runs["wordpiece"]))
    panel.set_project(old)
    _choose(panel, runs["wordpiece"])
    assert panel.model.rowCount() > 0 and panel.table.isColumnHidden(MergeTableModel.SCORE_COLUMN)
    assert "scores not recorded" in panel.status.text()
    assert panel.model.data(panel.model.index(0, MergeTableModel.SCORE_COLUMN)) == "—"
    panel.table.sortByColumn(MergeTableModel.SCORE_COLUMN, Qt.SortOrder.DescendingOrder)  # no crash
    panel.table.selectRow(3)
    assert "no score recorded" in panel.detail.subtitle.text()


def test_bpe_run_has_no_score_column(panel, demo_project):
    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["bpe"])
    assert not panel._pieces_mode and panel.table.isColumnHidden(MergeTableModel.SCORE_COLUMN)
    assert panel.field.isVisible() and panel.export.isVisible()
    assert panel.count_label.text().endswith("merges")



def test_a_frequency_scored_wordpiece_shows_its_frequency_once(panel, demo_project, tmp_path):
    """The default WordPiece score is the pair frequency: a Score column would repeat the frequency."""
    path, runs = demo_project
    copy = tmp_path / "frequency.tokproj"
    shutil.copy(path, copy)
    with sqlite3.connect(copy) as conn:  # the same run as if trained with the default score
        settings = json.loads(conn.execute("SELECT settings FROM runs WHERE id = ?", (runs["wordpiece"],)).fetchone()[0])
        settings["wordpiece_score"] = "frequency"
        conn.execute("UPDATE runs SET settings = ? WHERE id = ?", (json.dumps(settings), runs["wordpiece"]))
    panel.set_project(copy)
    _choose(panel, runs["wordpiece"])
    assert panel.model.rowCount() > 0 and panel.table.isColumnHidden(MergeTableModel.SCORE_COLUMN)
    assert panel.model.has_scores()  # recorded all the same: the detail pane still names the score


@pytest.fixture
def summary_threads(monkeypatch) -> list[int]:
    """The threads that computed a count's never-used list (``VocabUsage.never_used``), recorded by
    a cached_property that calls the real computation."""
    import threading
    from functools import cached_property

    from workbench.core.metrics import VocabUsage

    threads: list[int] = []
    real = VocabUsage.never_used.func

    def recording(self):
        threads.append(threading.get_ident())
        return real(self)
    spy = cached_property(recording)
    spy.__set_name__(VocabUsage, "never_used")
    monkeypatch.setattr(VocabUsage, "never_used", spy)
    return threads


def test_the_never_used_share_is_counted_off_the_window_thread(panel, demo_project, qtbot, summary_threads):
    """Counting, and a count taken from the cache that has no share yet: the summary says
    "Usage: counting…" until a worker has made the share, then the share itself."""
    import threading

    from workbench.core.metrics import VocabUsage
    from workbench.tasks.usage import remember_usage
    from workbench.ui.merges.usage import SUMMARY_PENDING

    path, runs = demo_project
    panel.set_project(path)
    _choose(panel, runs["unigram"])
    pieces = panel.pieces
    pieces.cancel_usage()
    with qtbot.waitSignal(pieces.usage_ready, timeout=60_000):
        pieces.count_usage()
    usage = pieces.usage
    assert usage is not None and usage.summarised
    expected = ([i for i, (f, c) in enumerate(zip(usage.frequencies, usage.counted)) if c and f == 0],
                sum(usage.counted))
    shown = f"Never used: {len(expected[0]):,} of {expected[1]:,} pieces"
    assert shown in pieces.summary.text()
    # The same count as a cache entry without its share (a count made before shares were kept).
    bare = VocabUsage(usage.frequencies, usage.counted, usage.total_tokens, usage.word_types)
    assert not bare.summarised
    remember_usage(pieces._usage_key(), (bare, []))
    pieces._usage = None
    pieces.count_usage()  # from the cache: no job counts; the share is made off the thread
    assert pieces.usage is bare and pieces.summary.text() == SUMMARY_PENDING
    qtbot.waitUntil(lambda: shown in pieces.summary.text(), timeout=10_000)
    assert bare.never_used == expected[0] and bare.eligible == expected[1]
    assert summary_threads and threading.get_ident() not in summary_threads
