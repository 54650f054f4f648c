"""Write ``v1_project.tokproj``: a small project file of schema version 1, kept as a fixture.

The committed file is what a user of the first release has on disk; tests open a copy of it with
the current code (which must upgrade it) and compare its schema with ``MIGRATIONS[0]`` (a released
migration must never change). Rows are written with plain SQL, as that release wrote them, not
through today's ``ProjectStore``. Regenerate only if the fixture is lost:

    python tests/store/data/make_v1_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from workbench.store import schema

OUT = Path(__file__).with_name("v1_project.tokproj")
T0 = 1_700_000_000.0

# A tiny character-level run over "lower newest": the letters as base, three merges.
ALPHABET = sorted(set("lowernst"))
MERGES = [("l", "o", 90), ("lo", "w", 70), ("e", "s", 40)]


def main(out: Path = OUT) -> Path:
    out.unlink(missing_ok=True)
    conn = sqlite3.connect(out, isolation_level=None)
    conn.execute("PRAGMA page_size = 1024")  # keeps the fixture small
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    for step in schema.MIGRATIONS[0]:
        conn.execute(step)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO corpora VALUES (1, 'corpus.txt', 16, ?, 'sha256:abc', "
                 "'{\"encoding\": \"utf-8\"}', ?)", (T0, T0))
    settings = ('{"model": "bpe", "units": "chars", "pretokenizer": "whitespace", '
                '"normalizer": ["nfc"], "special_tokens": {"<unk>": 0}, "end_of_word": "", '
                '"unk_token": "<unk>", "merges": 3}')
    conn.execute("INSERT INTO runs VALUES (1, 'first run', ?, 'finished', NULL, ?, ?, ?, "
                 "'{\"total\": 0.5}', 4242, 'builder')", (settings, T0, T0 + 1, T0 + 1))
    conn.execute("INSERT INTO run_corpora VALUES (1, 1)")
    pieces = ["<unk>"] + ALPHABET
    kinds = ["special"] + ["base"] * len(ALPHABET)
    for left, right, freq in MERGES:
        a, b = pieces.index(left), pieces.index(right)
        pieces.append(left + right)
        kinds.append("merge")
        rank = len(pieces) - len(ALPHABET) - 2
        conn.execute("INSERT INTO merges VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                     (rank, a, b, len(pieces) - 1, freq, len((left + right).encode()),
                      len(pieces), 100 - rank))
    conn.executemany("INSERT INTO vocab VALUES (1, ?, ?, ?)",
                     [(i, p.encode(), k) for i, (p, k) in enumerate(zip(pieces, kinds))])
    conn.execute("INSERT INTO texts VALUES (1, 'greeting', 'lower newest', ?)", (T0,))
    conn.execute("COMMIT")
    conn.execute("VACUUM")
    conn.close()
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
