"""SQL for the lazily paged merge table: filter, sort, count — all in SQLite, never in Python.

A page is chosen first on the ``merges`` table alone (its indexes serve rank, frequency and
length order; text filters join the three pieces), and only the ≤ ``limit`` chosen rows are then
joined to ``vocab`` for their pieces, so a page deep in a 100k-row run costs an index walk, not
100k joins. Ties are always broken by rank ascending, whatever the direction, so a page boundary
is stable and "most frequent first" lists equal-frequency merges in training order.
"""

from __future__ import annotations

from workbench.store.rows import MergeFilter

#: order_by name → the inner query's sort expression.
ORDER_KEYS = {
    "rank": "m.rank",
    "frequency": "m.frequency",
    "length": "m.length",
    "new_id": "m.new_id",
    "left": "m.left_id",
    "right": "m.right_id",
    "piece": "nv.piece",
}

_PIECE_JOINS = """
    JOIN vocab nv ON nv.run_id = m.run_id AND nv.id = m.new_id
    JOIN vocab lv ON lv.run_id = m.run_id AND lv.id = m.left_id
    JOIN vocab rv ON rv.run_id = m.run_id AND rv.id = m.right_id"""


def _where(run_id: int, flt: MergeFilter | None) -> tuple[str, list, bool]:
    """WHERE clause, its parameters, and whether it needs the piece joins."""
    clauses: list[str] = ["m.run_id = ?"]
    params: list[object] = [run_id]
    joins = False
    if flt is not None:
        needle = flt.needle
        if needle:
            # Bytes bind as BLOB, so instr() compares bytes; a piece with a NUL still matches.
            clauses.append("(instr(nv.piece, ?) > 0 OR instr(lv.piece, ?) > 0"
                           " OR instr(rv.piece, ?) > 0)")
            params += [needle, needle, needle]
            joins = True
        for column, low, high in (("m.frequency", flt.min_frequency, flt.max_frequency),
                                  ("m.length", flt.min_length, flt.max_length)):
            if low is not None:
                clauses.append(f"{column} >= ?")
                params.append(int(low))
            if high is not None:
                clauses.append(f"{column} <= ?")
                params.append(int(high))
    return " AND ".join(clauses), params, joins


def count_sql(run_id: int, flt: MergeFilter | None) -> tuple[str, list]:
    where, params, joins = _where(run_id, flt)
    return f"SELECT count(*) FROM merges m {_PIECE_JOINS if joins else ''} WHERE {where}", params


def page_sql(run_id: int, flt: MergeFilter | None, order_by: str, descending: bool,
             offset: int, limit: int) -> tuple[str, list]:
    if order_by not in ORDER_KEYS:
        raise ValueError(f"order_by must be one of {sorted(ORDER_KEYS)}, not {order_by!r}")
    where, params, joins = _where(run_id, flt)
    key = ORDER_KEYS[order_by]
    joins = joins or order_by == "piece"
    direction = "DESC" if descending else "ASC"
    tie = "" if order_by == "rank" else ", m.rank ASC"
    inner = (f"SELECT m.rank, m.left_id, m.right_id, m.new_id, m.frequency, {key} AS k "
             f"FROM merges m {_PIECE_JOINS if joins else ''} WHERE {where} "
             f"ORDER BY k {direction}{tie} LIMIT ? OFFSET ?")
    outer_tie = "" if order_by == "rank" else ", p.rank ASC"
    sql = (f"SELECT p.rank, p.left_id, p.right_id, p.new_id, p.frequency, "
           f"lv.piece, rv.piece, nv.piece FROM ({inner}) p "
           "LEFT JOIN vocab nv ON nv.run_id = ? AND nv.id = p.new_id "
           "LEFT JOIN vocab lv ON lv.run_id = ? AND lv.id = p.left_id "
           "LEFT JOIN vocab rv ON rv.run_id = ? AND rv.id = p.right_id "
           f"ORDER BY p.k {direction}{outer_tie}")
    return sql, [*params, max(0, int(limit)), max(0, int(offset)), run_id, run_id, run_id]
