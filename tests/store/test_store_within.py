"""Connection.within bounds a query's CPU on the calling thread even inside one slow call of a
Python function the query makes (a regex filter over a piece): SQLite's progress handler only runs
between VM steps, so the match itself is cut at what is left of the block."""

from __future__ import annotations

import time
from pathlib import Path

from workbench.store.browse import REGEX_TIMEOUT_S, register_functions
from workbench.store.opening import connect, cpu_left


def test_a_slow_match_inside_a_within_block_stops_at_the_block_budget(tmp_path: Path) -> None:
    conn = connect(tmp_path / "plain.sqlite", "rwc")
    register_functions(conn)
    # ~0.1 s of backtracking for the pattern below (a*27: 0.15 s, growing ×1.6 per letter), under the
    # per-piece timeout: only the block's budget can stop the first one early.
    conn.execute("CREATE TABLE t (piece BLOB)")
    conn.executemany("INSERT INTO t VALUES (?)", [(b"a" * 27 + b"!%d" % i,) for i in range(3)])
    assert cpu_left() is None  # outside a block: a worker's query has no such bound
    started = time.thread_time()
    with conn.within(0.016) as ran_out:
        try:
            conn.execute("SELECT count(*) FROM t WHERE wb_regexp(?, piece)", [r"(a|aa)+$"]).fetchone()
            stopped = False
        except Exception:  # noqa: BLE001 - sqlite3.OperationalError: the function raised
            stopped = True
        assert stopped and ran_out()
    spent = time.thread_time() - started
    assert spent < 0.06, spent  # one frame and the call's overhead, not a whole match (≥ 0.1 s)
    assert cpu_left() is None
    # Outside the block the same query runs to its end (each piece under REGEX_TIMEOUT_S).
    assert REGEX_TIMEOUT_S >= 0.5
    assert conn.execute("SELECT count(*) FROM t WHERE wb_regexp(?, piece)", [r"!\d$"]).fetchone() == (3,)
    conn.close()
