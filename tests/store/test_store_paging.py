"""Merge-table paging in rank order, checked against the same built in Python.

Filtering and sorting are the browsers' (``store.browse``), tested with the merge table's model.
"""

from __future__ import annotations

import pytest
from store_helpers import write_run

from workbench.store import MergeRow, ProjectStore

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


def test_count_and_every_page_in_rank_order(paged):
    store, run = paged
    rows = expected_rows(store, run)
    assert len(rows) == store.merge_count(run) == N
    got = [r for off in range(0, N, 200) for r in store.merges(run, offset=off, limit=200)]
    assert got == rows
    assert store.merges(run, offset=137, limit=150) == rows[137:287]
    assert store.merges(run, offset=N - 5, limit=200) == rows[-5:]
    assert store.merges(run, offset=N + 10) == []
