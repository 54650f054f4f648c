"""A long settings text (a Unigram run's 200,000 scores) is parsed a slice at a time: the same values
and the same refusals as ``json.loads``, with no C call handed more than a slice of it — the window's
thread waits for every GIL hold of a worker reading the run (issue 26)."""

from __future__ import annotations

import json
import math
import random

import pytest

from workbench.errors import DamagedValue
from workbench.store import sliced_json, validate

N = 200_000


def long_settings(rng: random.Random) -> dict:
    scores: list = [-5.0 - k / N for k in range(N)]
    for at in rng.sample(range(N), 50):
        scores[at] = rng.choice([None, 0, -math.inf, 1e-300, -12345678901234567890, 3])
    return {"model": "unigram", "special_tokens": ["<unk>", "a,b]", "[c"], "note": "[1, 2, 3]" * 10,
            "scores": scores, "checkpoints": [[1, 2], [3, [4]]], "pieces": [f"p,{k}]" for k in range(20_000)],
            "empty": [], "tail": [1.5] * 5}


@pytest.mark.parametrize("seed", range(3))
def test_long_texts_parse_to_what_json_loads_gives(seed, monkeypatch):
    rng = random.Random(seed)
    text = json.dumps(long_settings(rng), indent=rng.choice([None, 1]))
    assert len(text) > sliced_json.SHORT
    expected = json.loads(text)

    handed: list[int] = []
    c_loads = json.loads

    def recording(s, *args, **kwargs):
        handed.append(len(s))
        return c_loads(s, *args, **kwargs)

    monkeypatch.setattr(sliced_json.json, "loads", recording)
    got = sliced_json.loads(text)
    monkeypatch.undo()
    assert json.dumps(got) == json.dumps(expected)  # NaN-free here, so equal texts mean equal values
    assert got["scores"][:3] == expected["scores"][:3] and len(got["scores"]) == N
    assert len(handed) >= len(text) // sliced_json.SLICE // 2  # the scores went in slices…
    assert max(handed) < 2 * sliced_json.SLICE  # …and never the whole text at once


def test_long_texts_are_refused_where_json_loads_refuses_them():
    numbers = ",".join(str(-k / 7) for k in range(N))
    for bad in (f"[{numbers},]", f"[{numbers},,1]", f"[{numbers} 1]", f"[{numbers}", f'{{"a": [{numbers}]',
                f'{{"a": [{numbers}], }}', f"[{numbers}, nul]", f"[1, {numbers}, NaNa]"):
        with pytest.raises(ValueError):
            json.loads(bad)
        with pytest.raises(ValueError):
            sliced_json.loads(bad)
    weird = f'[{numbers}, NaN, -Infinity, Infinity, null]'
    assert json.dumps(sliced_json.loads(weird)) == json.dumps(json.loads(weird))


def test_the_validating_layer_still_names_deep_nesting_in_a_long_text():
    scores = ", ".join(str(-k / 3) for k in range(N))
    too_deep = f'{{"scores": [{scores}], "x": ' + "[" * 9 + "]" * 9 + "}"
    with pytest.raises(DamagedValue, match="nested more than 8 levels"):
        validate.json_object(too_deep, "run 2", "settings")
    far_too_deep = f'{{"scores": [{scores}], "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    with pytest.raises(DamagedValue, match="nested far too deeply"):
        validate.json_object(far_too_deep, "run 2", "settings")
    # a nested list after the first slice of a long list's items is found (types gathered in slices)
    late = {"scores": [0.5] * 50_000 + [[[[[[[[[1]]]]]]]]]}
    with pytest.raises(DamagedValue, match="nested more than 8 levels"):
        validate.json_object(json.dumps(late), "run 2", "settings")
