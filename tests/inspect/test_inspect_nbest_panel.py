"""The n-best view under a Unigram column (real project, real trained Unigram run, real widgets) and
the WordPiece score in the hover."""

from __future__ import annotations

import shutil

import pytest
from inspect_helpers import settle
from PySide6.QtGui import QTextCursor
from shared_corpora import CORPORA, require_corpora

from workbench.core.offsets import SpanEncoder
from workbench.tasks.spec import RunSpec
from workbench.tasks.train import resolve_files, train_run

UNIGRAM = ("run", 3)
TEXT = "Tokenizers split unbelievable words\nsecond line"


@pytest.fixture(scope="module")
def base_unigram_project(base_project, tmp_path_factory):
    """The base project (runs 1 and 2: BPE) plus run 3: Unigram, 700 pieces, on Shakespeare."""
    require_corpora()
    folder = tmp_path_factory.mktemp("nbest")
    corpus = folder / "shakespeare.txt"
    corpus.write_text("\n".join((CORPORA / "en_shakespeare.txt").read_text(encoding="utf-8").splitlines()[:4000]),
                      encoding="utf-8")
    path = folder / "uni.tokproj"
    shutil.copy(base_project, path)
    run_id, status = train_run(RunSpec(files=resolve_files([str(corpus)]), model="unigram", vocab_size=700,
                                       pretokenizer="metaspace", name="unigram700"), path)
    assert (run_id, status) == (3, "finished")
    return path


@pytest.fixture
def uni_project(base_unigram_project, tmp_path):
    dest = tmp_path / "uni.tokproj"
    shutil.copy(base_unigram_project, dest)
    return dest


def _put_cursor(editor, cp: int) -> None:
    cursor = QTextCursor(editor.document())
    cursor.setPosition(cp)
    editor.setTextCursor(cursor)


def test_a_unigram_column_lists_the_best_splits_of_the_word_at_the_cursor(qtbot, panel, uni_project):
    panel.set_project(uni_project)
    pane = panel.primary
    assert pane.set_source(UNIGRAM)
    panel.set_text(TEXT)
    settle(qtbot, panel)
    view = pane.nbest
    assert view.isVisibleTo(pane)
    assert view.accessibleName() and view.n_spin.accessibleName() and view.table.accessibleName()
    assert view.n_label.buddy() is view.n_spin  # Alt+N reaches the count from the keyboard
    at = TEXT.index("unbelievable") + 3
    with qtbot.waitSignal(view.shown, timeout=10000) as blocker:
        _put_cursor(pane.editor, at)
    result = blocker.args[0]
    assert result is not None and result.word == "▁unbelievable"
    rows = view.rows_text()
    assert len(rows) == 5 and rows[0][0] == "★ 1" and not any("★" in r[0] for r in rows[1:])
    # The starred row is exactly what the column shows for that word.
    layout = pane.layout_
    shown = [t[0] for t in layout.tokens() if result.start <= t[1] < result.end]
    assert list(result.rows[0].ids) == shown
    tok = pane.loaded.tokenizer
    assert rows[0][1] == " · ".join(tok.vocab[i].decode("utf-8") for i in shown)
    assert rows[0][3].endswith("%") and float(rows[0][3].rstrip(" %")) > float(rows[1][3].rstrip(" %"))
    # n: fewer rows, at once from the same word.
    with qtbot.waitSignal(view.shown, timeout=10000):
        view.n_spin.setValue(2)
    assert len(view.rows_text()) == 2
    # Another word: the cursor moves, the list follows.
    with qtbot.waitSignal(view.shown, timeout=10000) as blocker:
        _put_cursor(pane.editor, TEXT.index("line") + 1)
    assert blocker.args[0].word == "▁line"


def test_other_models_hide_the_view_and_a_second_unigram_column_has_its_own(qtbot, panel, uni_project):
    panel.set_project(uni_project)
    assert panel.primary.set_source(("run", 1))
    panel.set_text(TEXT)
    second = panel.add_pane(UNIGRAM)
    settle(qtbot, panel)
    assert not panel.primary.nbest.isVisibleTo(panel.primary)  # BPE: one split per word, no list
    assert second.nbest.isVisibleTo(second)
    with qtbot.waitSignal(second.nbest.shown, timeout=10000) as blocker:
        _put_cursor(second.editor, 2)
    assert blocker.args[0].word == "▁Tokenizers"
    # Switching that column to BPE hides its list too.
    second.set_source(("run", 2))
    settle(qtbot, panel)
    assert not second.nbest.isVisibleTo(second)


def test_wordpiece_hover_says_score_and_which_score(qtbot, panel):
    from workbench.core.model import Tokenizer
    from workbench.tasks.sources import LoadedTokenizer

    vocab = (b"[UNK]", b"h", b"e", b"l", b"##e", b"##l", b"he", b"hel")
    tok = Tokenizer(vocab=vocab, merges=((1, 4, 6), (6, 5, 7)), units="chars", pretokenizer="whitespace",
                    special_tokens={"[UNK]": 0}, unk_token="[UNK]", model="wordpiece", continuing_prefix="##",
                    scores=(0.0,) * 6 + (0.125, 0.75))
    pane = panel.primary
    pane.loaded = LoadedTokenizer(("run", 9), "wp", tok, [40, 30], SpanEncoder(tok), "likelihood")
    html = pane._describe_id(tok, 7)
    assert ">score<" in html and "0.75 (likelihood)" in html and "log p" not in html
    assert "merge rank 1" in html and "30 in the training corpus" in html
    assert "score" not in pane._describe_id(tok, 1)  # a base symbol won no score
