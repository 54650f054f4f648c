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


def test_plain_sql_is_checked_rarely_and_a_query_calling_our_functions_often(tmp_path: Path) -> None:
    """The progress handler takes the GIL at every call: every 100 steps of a worker's long scan
    starved the window's thread of it (CPython's GIL convoy). Plain SQL is checked every 5,000 steps;
    a statement calling a ``wb_`` function per row (a regex filter: ~50 ms a row at worst) every 100,
    so its time limit still holds — and a statement's interval never leaks into the next one's."""
    conn = connect(tmp_path / "plain.sqlite", "rwc")
    register_functions(conn)
    calls = [0]

    def counting() -> int:
        calls[0] += 1
        return 0

    conn._progress = counting  # type: ignore[method-assign]  # the connection installs self._progress
    conn.limit_queries(60.0)
    conn.execute("CREATE TABLE t (piece BLOB)")
    with conn:  # one transaction: autocommit would sync 20,000 times
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?)", [(b"p%d" % i,) for i in range(20_000)])

    def handler_calls(sql: str, *args: object) -> int:
        calls[0] = 0
        conn.execute(sql, args).fetchall()
        return calls[0]

    plain = handler_calls("SELECT count(*) FROM t WHERE piece LIKE '%9%'")
    calling = handler_calls("SELECT count(*) FROM t WHERE wb_regexp(?, piece)", r"9")
    plain_again = handler_calls("SELECT count(*) FROM t WHERE piece LIKE '%9%'")
    assert 0 < plain < 100, plain  # ~100,000 steps / 5,000; every 100 steps would be ~1,000 calls
    assert calling > 20 * plain, (calling, plain)
    assert plain_again == plain
    conn.close()
