"""A run's settings with one score per piece (200,000 for a long Unigram run) are checked by loops
in C when the project opens; they still refuse what is not a score, wherever it sits."""

from __future__ import annotations

import json
import math

import pytest

from workbench.errors import DamagedValue
from workbench.store import validate

N = 200_000


def test_long_score_lists_are_accepted_and_a_bad_score_anywhere_is_named():
    scores = [-5.0 - k / N for k in range(N)]
    good = validate.settings(json.dumps({"scores": scores + [-math.inf, 0]}).replace("-Infinity", "-1e999"), "run 1")
    assert len(good["scores"]) == N + 2 and good["scores"][N] == -math.inf
    for bad in ("NaN", "Infinity", "true", '"x"', "[1]"):
        text = json.dumps({"scores": scores})[:-2] + f", {bad}]}}"
        with pytest.raises(DamagedValue, match="scores"):
            validate.settings(text, "run 1")
    deep = {"nested": [[[[1]]]] * 3, "scores": scores}
    assert validate._depth(json.loads(json.dumps(deep))) == 5
