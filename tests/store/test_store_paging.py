"""Merge-table paging, filtering and sorting in SQL, checked against the same done in Python."""

from __future__ import annotations

import pytest
from store_helpers import write_run

from workbench.store import MergeFilter, MergeRow, ProjectStore

N = 3000


@pytest.fixture(scope="module")
def paged(tmp_path_factory):
    path = tmp_path_factory.mktemp("paging") / "p.tokproj"
    with ProjectStore.open(path, create=True) as store:
        write_run(store, "other", 50, seed=9)  # another run's rows must never leak in
        run = write_run(store, "big", N, seed=5)
    store = ProjectStore.open(path, readonly=True)
    yield store, run
    store.close()


def expected_rows(store, run) -> list[MergeRow]:
    """All rows, built in Python from the vocabulary and the merges in rank order."""
    pieces = {i: p for i, p, _ in store.vocab(run)}
    merges = store._conn.execute("SELECT rank, left_id, right_id, new_id, frequency FROM merges "
                                 "WHERE run_id = ? ORDER BY rank", (run,)).fetchall()
    return [MergeRow(r, a, b, n, f, pieces[a], pieces[b], pieces[n]) for r, a, b, n, f in merges]


def keep(row: MergeRow, flt: MergeFilter | None) -> bool:
    if flt is None:
        return True
    needle = flt.needle
    if needle and not any(needle in p for p in (row.left_piece, row.right_piece, row.piece)):
        return False
    checks = ((row.frequency, flt.min_frequency, flt.max_frequency),
              (len(row.piece), flt.min_length, flt.max_length))
    return all((lo is None or v >= lo) and (hi is None or v <= hi) for v, lo, hi in checks)


KEYS = {"rank": lambda r: r.rank, "frequency": lambda r: r.frequency,
        "length": lambda r: len(r.piece), "new_id": lambda r: r.new_id,
        "piece": lambda r: r.piece, "left": lambda r: r.left, "right": lambda r: r.right}

FILTERS = [
    None,
    MergeFilter(text="a"),
    MergeFilter(text=b"\x00\x01"),
    MergeFilter(text="e", min_length=3, max_length=4),
    MergeFilter(min_frequency=N * 10 - 2000, max_frequency=N * 10 - 500),
    MergeFilter(min_length=6),
    MergeFilter(text="no such piece anywhere"),
]


def test_unfiltered_count_and_every_page_in_rank_order(paged):
    store, run = paged
    rows = expected_rows(store, run)
    assert len(rows) == store.merge_count(run) == N
    got = [r for off in range(0, N, 200) for r in store.merges(run, offset=off, limit=200)]
    assert got == rows
    assert store.merges(run, offset=N - 5, limit=200) == rows[-5:]
    assert store.merges(run, offset=N + 10) == []


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: repr(f)[:60])
@pytest.mark.parametrize("order_by", sorted(KEYS))
@pytest.mark.parametrize("descending", [False, True])
def test_filtered_sorted_pages_match_python(paged, flt, order_by, descending):
    store, run = paged
    matching = [r for r in expected_rows(store, run) if keep(r, flt)]
    key = KEYS[order_by]
    # Ties by rank ascending, whatever the direction.
    want = sorted(matching, key=lambda r: r.rank)
    want.sort(key=key, reverse=descending)
    assert store.merge_count(run, flt) == len(matching)
    for offset in (0, 137, max(0, len(want) - 150)):
        assert store.merges(run, offset, 150, flt, order_by, descending) == \
            want[offset:offset + 150]


def test_a_filter_actually_narrows(paged):
    store, run = paged
    assert 0 < store.merge_count(run, MergeFilter(text="a")) < N
    assert store.merge_count(run, FILTERS[-1]) == 0


def test_unknown_sort_column_is_rejected(paged):
    store, run = paged
    with pytest.raises(ValueError, match="order_by"):
        store.merges(run, order_by="frequency; DROP TABLE merges")
