"""The counting pool: results in item order, the caller counting its own share (one process fewer
holding a copy of the trainer's memory), a worker that dies named at once, a stop honoured."""

from __future__ import annotations

import os
import signal
import time

import pytest

from workbench.core.count import WORKER_LOST, ordered_pool_map
from workbench.errors import WorkbenchError

INIT = ("gpt2", ())


def _square_where(item: int) -> tuple[int, int]:
    return item * item, os.getpid()


@pytest.mark.parametrize("workers", [2, 3])
def test_results_come_in_item_order_and_the_caller_counts_a_share(workers):
    answers = list(ordered_pool_map(_square_where, range(40), workers=workers, initargs=INIT))
    assert [value for value, _ in answers] == [k * k for k in range(40)]
    pids = [pid for _, pid in answers]
    # item k goes to process k mod workers, the last of which is the caller itself
    assert all(pid == os.getpid() for pid in pids[workers - 1::workers])
    forked = {pid for pid in pids if pid != os.getpid()}
    assert len(forked) == workers - 1


def test_the_callers_share_may_use_a_function_of_its_own():
    answers = list(ordered_pool_map(_square_where, range(6), workers=2, initargs=INIT,
                                    own=lambda item: (-item, os.getpid())))
    assert [value for value, _ in answers] == [0, -1, 4, -3, 16, -5]


def _slow_square_where(item: int) -> tuple[int, int]:
    time.sleep(0.05)
    return item * item, os.getpid()


def test_the_callers_items_counted_while_it_waits_keep_their_places():
    """Workers slower than the caller: while it waits for a worker the caller counts the first of
    its own items, which is not the next index (3 processes: the caller's are 2, 5, 8 …). Without
    the sleep the workers were sometimes ready before the caller asked, the path never ran, and a
    bug filing those results under the wrong index survived the planted-bug check once in a run."""
    answers = list(ordered_pool_map(_slow_square_where, range(12), workers=3, initargs=INIT,
                                    own=lambda item: (item * item, os.getpid())))
    assert [value for value, _ in answers] == [k * k for k in range(12)]
    assert {pid for _, pid in answers[2::3]} == {os.getpid()}


def _die_on_four(item: int) -> int:
    if item == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    return item


def test_a_worker_killed_mid_count_fails_with_one_line():
    with pytest.raises(WorkbenchError) as caught:
        list(ordered_pool_map(_die_on_four, range(10), workers=2, initargs=INIT))
    assert str(caught.value) == WORKER_LOST


def test_an_error_in_the_callers_share_is_raised_and_the_workers_go():
    def own(item: int) -> int:
        raise ValueError(f"bad item {item}")

    with pytest.raises(ValueError, match="bad item 1"):
        list(ordered_pool_map(_square_where, range(10), workers=2, initargs=INIT, own=own))


def test_a_stop_ends_the_map_early():
    taken: list[int] = []
    for value, _ in ordered_pool_map(_square_where, range(1000), workers=2, initargs=INIT,
                                     should_stop=lambda: len(taken) >= 3):
        taken.append(value)
    assert 3 <= len(taken) < 1000
