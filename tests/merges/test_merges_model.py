"""The lazy merge and vocabulary models: Qt's model tester, paging, SQL sorting and filtering."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QPersistentModelIndex, Qt

from workbench.store import ProjectStore
from workbench.store.browse import (
    MergeQuery,
    MergeSource,
    TextFilter,
    VocabQuery,
    VocabSource,
    store_connection,
)
from workbench.ui.merges.merge_model import (
    ENTRY_ROLE,
    MergeTableModel,
    browser_piece,
    insert_position,
)
from workbench.ui.merges.vocab_model import VocabTableModel

# Synthetic pieces are random bytes: a character of a script the test machine has no shaping
# support for makes Qt's font database log a warning while painting. It is not ours to fix.
pytestmark = pytest.mark.qt_log_ignore("OpenType support missing", extend=True)


def test_qtmodeltester_unfiltered_filtered_and_sorted(qtmodeltester, small_source):
    source, data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    qtmodeltester.check(model)
    assert model.rowCount() == 1500
    model.set_query(MergeQuery(text=TextFilter("a")))
    qtmodeltester.check(model)
    assert 0 < model.rowCount() < 1500
    model.sort(4, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(model)
    model.set_query(MergeQuery(text=TextFilter(r"^a.$", regex=True), field="result", min_length=2, max_length=2))
    qtmodeltester.check(model)
    # The pattern sees the decoded piece: a stray byte reads \xNN, which "." does not cover.
    expected = sum(1 for p in data.pieces if len(p) == 2 and re.match(r"^a.$", p.decode("utf-8", "backslashreplace")))
    assert model.rowCount() == expected
    model.set_source(None)
    qtmodeltester.check(model)
    assert model.rowCount() == 0


def test_qtmodeltester_vocabulary(qtmodeltester, small_source):
    source, data, store = small_source
    vocab = VocabSource(store_connection(store), ("run", 1))
    model = VocabTableModel()
    model.set_source(vocab)
    qtmodeltester.check(model)
    assert model.rowCount() == len(data.vocab)
    n = len(data.vocab)
    vocab.set_usage([i % 3 for i in range(n)], [i != 0 for i in range(n)])  # id 0: the special token
    model.usage_changed()
    model.set_query(VocabQuery(never_used_only=True))
    qtmodeltester.check(model)
    # The special token (id 0) is never flagged; every other id with frequency 0 is.
    assert model.rowCount() == sum(1 for i in range(1, len(data.vocab)) if i % 3 == 0)
    vocab.close()


def test_cells_show_readable_pieces_and_hex_tooltips(small_source):
    source, data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    for row in (0, 700, 1499):
        e = data.events[row]
        assert model.data(model.index(row, 0)) == str(row)
        assert model.data(model.index(row, 3)) == browser_piece(data.pieces[row])
        assert model.data(model.index(row, 4)) == f"{e.frequency:,}"
        assert model.data(model.index(row, 5)) == str(len(data.pieces[row]))
        assert model.data(model.index(row, 7)) == str(e.new_id)
        tip = model.data(model.index(row, 3), Qt.ItemDataRole.ToolTipRole)
        assert " ".join(f"{b:02x}" for b in data.pieces[row]) in tip
    texts = [model.data(model.index(r, c)) for r in range(200) for c in (1, 2, 3)]
    assert not any("Ġ" in t for t in texts)
    assert any("␣" in t for t in texts)  # spaces are visible


def test_pages_are_fetched_lazily(small_source):
    source, _data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    assert model.fetches == 0  # opening reads no rows
    model.data(model.index(1499, 3))
    model.data(model.index(1400, 3))
    assert model.fetches == 1  # one page of 200 covers both
    model.data(model.index(0, 3))
    assert model.fetches == 2


@pytest.mark.parametrize("column,key", [(1, "left_piece"), (3, "piece"), (4, "frequency"), (5, "length"),
                                        (7, "new_id")])
def test_sorting_happens_in_sql_with_rank_tie_break(small_source, column, key):
    source, _data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    model.sort(column, Qt.SortOrder.DescendingOrder)
    entries = [model.data(model.index(r, 0), ENTRY_ROLE) for r in range(model.rowCount())]
    values = [(getattr(e, key) if key != "length" else e.length) for e in entries]
    assert values == sorted(values, reverse=True)
    for (a, va), (b, vb) in zip(zip(entries, values), zip(entries[1:], values[1:])):
        if va == vb:
            assert a.rank < b.rank


def test_sort_keeps_the_selected_merge(small_source):
    source, _data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    keep = QPersistentModelIndex(model.index(321, 2))
    model.sort(3, Qt.SortOrder.AscendingOrder)
    assert keep.isValid() and keep.column() == 2
    assert model.key_at(keep.row()) == 321
    model.sort(0, Qt.SortOrder.AscendingOrder)
    assert keep.row() == 321


def test_bad_regex_raises_a_clear_error_and_keeps_the_rows(small_source):
    from workbench.errors import WorkbenchError

    source, _data, _store = small_source
    model = MergeTableModel()
    model.set_source(source)
    with pytest.raises(WorkbenchError, match="regular expression"):
        model.set_query(MergeQuery(text=TextFilter("(unclosed", regex=True)))
    assert model.rowCount() == 1500


def test_insert_position_matches_sqlite_order():
    assert insert_position([5, 3, 3, 1], 3, descending=True) == 3  # after equal values (higher rank)
    assert insert_position([1, 3, 3, 5], 3, descending=False) == 3
    assert insert_position([None, 1, 2], None, descending=False) == 1  # NULLs first ascending
    assert insert_position([2, 1, None], None, descending=True) == 3  # NULLs last descending
    assert insert_position([b"a", b"b"], b"ab", descending=False) == 1


def test_sql_ancestry_handles_recreated_pieces_and_low_ids(tmp_path):
    """Rank 3 re-makes "abc" (id 5, first made at rank 2); rank 1 makes an id below rank 0's."""
    from workbench.core.ancestry import ancestry
    from workbench.core.model import Tokenizer

    tok = Tokenizer(vocab=(b"x", b"a", b"b", b"c", b"ab", b"xa", b"bc", b"abc"),
                    merges=((0, 1, 5), (1, 2, 4), (2, 3, 6), (4, 3, 7), (1, 6, 7)), units="chars",
                    pretokenizer="whitespace")
    path = tmp_path / "reuse.tokproj"
    with ProjectStore.open(path, create=True) as store:
        ref = store.add_reference("reuse", tok, fmt="hf", source_path="r.json", sha256="0" * 64)
    with ProjectStore.open(path, readonly=True) as store:
        source = MergeSource(store_connection(store), ("ref", ref))
        for token in range(len(tok.vocab)):
            assert source.ancestry(token) == ancestry(tok, token)
        assert source.first_merge_of(7) == 3 and source.first_merge_of(4) == 1
        assert source.first_merge_of(2) is None
        assert [piece.piece for piece in source.ancestry(7).leaves()] == [b"a", b"b", b"c"]
        rows, total = source.children(4)
        assert total == 1 and rows[0].rank == 3


def test_the_comparison_greys_missing_values_not_tokens_that_read_like_them(qapp):
    """A base token's merge # ("base") and a missing shift ("—") are greyed; a token whose text
    happens to be "base" or "—" is not."""
    from workbench.core.vocab_diff import TokenDiff
    from workbench.ui.merges.run_diff import SHARED_COLUMNS, ListTableModel

    model = ListTableModel(SHARED_COLUMNS)
    model.set_rows([TokenDiff(b"base", 300, 301, 12, None), TokenDiff("—".encode(), 302, 303, 14, 20)])
    role = Qt.ItemDataRole.ForegroundRole

    def greyed(row: int, title: str) -> bool:
        column = [c.title for c in SHARED_COLUMNS].index(title)
        return model.data(model.index(row, column), role) is not None

    assert model.data(model.index(0, 0)) == "base" and not greyed(0, "piece")
    assert not greyed(1, "piece") and not greyed(1, "rank shift")
    assert greyed(0, "merge # B") and greyed(0, "rank shift") and not greyed(0, "merge # A")
