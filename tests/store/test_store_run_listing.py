"""A listing of runs reads each run's settings without a Unigram run's per-piece scores.

``ProjectStore.runs(scores=False)`` is what the window lists runs with: SQLite drops the scores
from the settings text before Python parses it (for 200,000 scores the parse took ~0.2 s of the
window's time). A settings text SQLite cannot parse is read in full, so its damage is still named.
"""

from __future__ import annotations

import json
import sqlite3

from workbench.store import ProjectStore


def test_a_listing_leaves_the_scores_out_and_still_names_damaged_settings(tmp_path):
    path = tmp_path / "p.tokproj"
    with ProjectStore.open(path, create=True) as store:
        for name in ("unigram", "bpe", "not json", "scores of text"):
            store.create_run(name, {}, [], [b"a"], ["base"])
    unigram = {"model": "unigram", "units": "chars", "scores": [-1.0 - k / 1000 for k in range(1000)]}
    raw = sqlite3.connect(path)
    with raw:
        for rid, text in ((1, json.dumps(unigram)), (2, json.dumps({"model": "bpe", "units": "bytes"})),
                          (3, '{"model": "bpe", '), (4, json.dumps({"model": "unigram", "scores": "x"}))):
            raw.execute("UPDATE runs SET settings = ?, status = 'finished' WHERE id = ?", (text, rid))
    raw.close()
    with ProjectStore.open(path, readonly=True) as store:
        full, light = store.runs(), store.runs(scores=False)
        assert [r.id for r in light] == [r.id for r in full] == [1, 2, 3, 4]
        assert full[0].settings["scores"] == unigram["scores"] and not full[0].damage
        assert light[0].settings == {"model": "unigram", "units": "chars"} and not light[0].damage
        assert light[1] == full[1] and light[1].settings == {"model": "bpe", "units": "bytes"}
        # the text SQLite cannot parse: the whole listing is read in full, naming the run's damage
        assert light[2].damage == full[2].damage and "settings" in light[2].damage and "not JSON" in light[2].damage
        # scores of the wrong type are named where the scores are read, not by the listing
        assert "scores" in full[3].damage and not light[3].damage
        assert "scores" in str(store.run_problem(4))
