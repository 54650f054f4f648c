"""A stand-in for the ``workbench train`` child whose last batch lands after it has exited.

``python late_batch_child.py PROJECT child``: writes a run's first 20 merges, prints the
'started' and 'finished' progress lines and the result JSON the real child prints, starts a
detached writer (``late`` mode) and exits. The writer then commits merges 21–30 and the final
status — as the real run's writer process does when the trainer is gone before its last commit.
It is the order of these events that matters, not how long anything takes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "merges"))

from merge_helpers import synthetic_run  # noqa: E402

from workbench.store import ProjectStore  # noqa: E402

TOTAL, EARLY = 30, 20


def _write(project: Path, run_id: int | None, start: int, stop: int) -> int:
    data = synthetic_run(TOTAL, seed=3)
    with ProjectStore.open(project) as store:
        if run_id is None:
            run_id = store.create_run("late batch", {"units": "bytes", "pretokenizer": "gpt2"}, [],
                                      data.initial, data.kinds)
        with store.run_writer(run_id, interval=float("inf"), background=False) as writer:
            for event, piece in zip(data.events[start:stop], data.pieces[start:stop]):
                writer.add(event, piece)
        if stop == TOTAL:
            store.finish_run(run_id, "finished")
    return run_id


def main() -> None:
    project, mode = Path(sys.argv[1]), sys.argv[2]
    if mode == "late":
        # Wait for the parent to be gone (its exit is what the window reacts to), then commit.
        parent = int(sys.argv[4])
        while Path(f"/proc/{parent}").exists() and "Z" not in _state(parent):
            time.sleep(0.05)
        time.sleep(0.3)
        _write(project, int(sys.argv[3]), EARLY, TOTAL)
        return
    run_id = _write(project, None, 0, EARLY)
    err = sys.stderr
    err.write(json.dumps({"event": "started", "run_id": run_id, "target": TOTAL}) + "\n")
    err.write(json.dumps({"event": "finished", "run_id": run_id, "status": "finished", "step": TOTAL}) + "\n")
    err.flush()
    subprocess.Popen([sys.executable, __file__, str(project), "late", str(run_id), str(_pid())],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)
    print(json.dumps({"run_id": run_id, "status": "finished", "merges": TOTAL, "project": str(project)}))


def _pid() -> int:
    import os

    return os.getpid()


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "Z"
    return stat[stat.rfind(")") + 2:].split()[0]


if __name__ == "__main__":
    main()
