"""Training switches Python's collector off for its loop and leaves it as it found it: in a window's
process it is off (the window collects on its own thread, ``ui/collector.py``), and a training
that turned it back on there let the next collector pass run on any worker thread."""

from __future__ import annotations

import gc

import pytest

from workbench.tasks.spec import RunSpec
from workbench.tasks.train import resolve_files, train_run


@pytest.mark.parametrize("on", [True, False])
def test_training_leaves_the_collector_as_it_found_it(tmp_path, on):
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower lowest newer wider\n" * 50, encoding="utf-8")
    spec = RunSpec(files=resolve_files([str(corpus)]), vocab_size=300, project=str(tmp_path / "p.tokproj"))
    was = gc.isenabled()
    try:
        (gc.enable if on else gc.disable)()
        run_id, _ = train_run(spec, count_cache=False)
        assert run_id > 0
        assert gc.isenabled() is on
    finally:
        (gc.enable if was else gc.disable)()
