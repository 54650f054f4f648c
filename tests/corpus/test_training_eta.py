"""The training ETA (issue 13): honest from the first seconds on a recorded real run.

``data/bpe_run_timing.json`` is a real run (byte-level BPE, 8,000 merges on the five shared corpora)
as train_run reports it: (step, seconds since the trainer started) every ~0.1 s. Merges get cheaper
over a run, so dividing what is left by the average rate said ~6 minutes for a run of 8 s.
"""

from __future__ import annotations

import json
from pathlib import Path

from workbench.tasks.train import EtaEstimator, Progress

RUN = json.loads((Path(__file__).parent / "data" / "bpe_run_timing.json").read_text(encoding="utf-8"))


def replay() -> list[tuple[int, float, float | None]]:
    eta = EtaEstimator(RUN["target"])
    return [(step, t, eta.update(step, t)) for step, t in RUN["points"]]


def test_first_estimate_after_two_seconds_is_within_2x_of_the_truth():
    end = RUN["points"][-1][1]
    rows = replay()
    step, t, first = next(r for r in rows if r[1] >= 2.0 and r[2] is not None)
    true = end - t
    assert t < 2.2  # the estimate exists by then (not withheld until the run is nearly over)
    assert true / 2 <= first <= 2 * true, (step, t, first, true)
    naive = (RUN["target"] - step) / (step / t)  # what the progress line said before
    assert naive > 10 * true


def test_no_estimate_until_it_means_something_and_zero_at_the_end():
    rows = replay()
    assert all(e is None for _, t, e in rows if t - rows[0][1] < EtaEstimator.MIN_SECONDS)
    assert rows[-1][2] == 0.0
    # After the first second, every estimate stays within 3x of the time really left.
    end = rows[-1][1]
    for step, t, e in rows:
        if e is not None and end - t > 0.5:
            assert (end - t) / 3 <= e <= 3 * (end - t), (step, t, e, end - t)


def test_estimating_is_said_not_hidden(capsys):
    from workbench.cli import _Reporter

    reporter = _Reporter("text")
    reporter(Progress("merges", run_id=1, step=5, target=100, merges_per_s=5.0, eta_s=None))
    reporter(Progress("merges", run_id=1, step=100, target=100, merges_per_s=5.0, eta_s=None))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("ETA estimating…")
