"""Cancelling a Unigram run is prompt in every phase: seeding, EM and pruning.

Through the real entry point, the way the window does it (``workbench train --progress json`` as a
child process, SIGTERM from ``TrainingProcess.cancel``) and the way a terminal does (SIGINT): the
signal is sent at a moment of the phase read from the child's own progress lines, and the child
must exit within about a second, its run stored as cancelled with a usable model. The trainer's
stop checks are also held to a bounded gap over a whole run (every phase, no signal timing).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.core.encoder import Encoder
from workbench.core.unigram import UnigramConfig, UnigramTrainer, count_spm_words
from workbench.store import ProjectStore

ROOT = Path(__file__).resolve().parents[1]
# From the signal to the exit: the trainer looks at the flag every ~0.1 s of work; then the last
# batch, the model and the run's status are written and the interpreter exits. Held to the target
# in the child's CPU seconds (what it did after the signal, whatever else runs on the machine) and,
# loosely, in wall-clock seconds (a loaded 2-core machine stretches them several times).
CPU_WITHIN_S = 1.0
WALL_WITHIN_S = 6.0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """~0.75 MB of the five corpora (3,000 lines each): one E step takes seconds here."""
    require_corpora()
    lines: list[str] = []
    for path in CORPUS_FILES:
        lines += [line for line in path.read_text(encoding="utf-8").split("\n") if line][:3000]
    out = tmp_path_factory.mktemp("cancel") / "slice.txt"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _cpu(times) -> float:
    return times.user + times.system if hasattr(times, "user") else times.ru_utime + times.ru_stime


def _train_until(corpus: Path, project: Path, ready, sig: int) -> tuple[float, float, int, list[dict]]:
    """Start ``workbench train``, send ``sig`` once ``ready(event)`` holds for a progress line;
    return (CPU seconds and wall seconds from the signal to the exit, exit code, the events seen)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "workbench", "train", str(corpus), "--project", str(project), "--model", "unigram",
         "--vocab-size", "8000", "--progress", "json", "--no-count-cache"],
        cwd=project.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    events: list[dict] = []
    try:
        assert child.stderr is not None
        for line in child.stderr:
            events.append(json.loads(line))
            if ready(events[-1]):
                break
        else:
            pytest.fail(f"the run ended before the moment to cancel: {events[-3:]}")
        cpu_before = _cpu(psutil.Process(child.pid).cpu_times())
        waited_before = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN))
        sent = time.monotonic()
        child.send_signal(sig)
        rest = child.stderr.read()
        child.wait(timeout=60)
        wall = time.monotonic() - sent
        cpu = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN)) - waited_before - cpu_before
    finally:
        if child.poll() is None:
            child.kill()
    events += [json.loads(line) for line in rest.splitlines() if line.startswith("{")]
    return cpu, wall, child.returncode, events


def _prompt(cpu: float, wall: float, phase: str) -> None:
    assert cpu < CPU_WITHIN_S and wall < WALL_WITHIN_S, (
        f"after the signal {phase} the child worked {cpu:.2f} s of CPU and exited after {wall:.2f} s")


def _stored(project: Path) -> tuple[str, int]:
    with ProjectStore.open(project, readonly=True) as store:
        run = store.runs()[-1]
        tok = store.load_tokenizer(run.id)
    assert Encoder(tok).decode(Encoder(tok).encode("Der König sprach")) == "Der König sprach"
    return run.status, len(tok.vocab)


def _step(event: dict) -> int:
    return event.get("step", 0) if event["event"] not in ("started", "finished", "reading") else 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cancel_during_em_exits_within_a_second(corpus, tmp_path, sig):
    # The first EM round reported: the second one (seconds of work on this corpus) is running.
    cpu, wall, code, events = _train_until(corpus, tmp_path / "em.tokproj", lambda e: _step(e) >= 1, sig)
    _prompt(cpu, wall, "during EM")
    assert code == 3 and events[-1]["event"] == "finished" and events[-1]["status"] == "cancelled"
    status, size = _stored(tmp_path / "em.tokproj")
    assert status == "cancelled" and size == 8000  # the model of the first round, cut to the size


def test_cancel_during_seeding_exits_within_a_second(corpus, tmp_path):
    # "started" is reported before the trainer makes its seeds (seconds on this corpus).
    cpu, wall, code, events = _train_until(corpus, tmp_path / "seed.tokproj", lambda e: e["event"] == "started",
                                           signal.SIGTERM)
    _prompt(cpu, wall, "while seeding")
    assert not any(_step(e) for e in events), "the signal was meant to land before the first EM round"
    status, size = _stored(tmp_path / "seed.tokproj")
    assert status == "cancelled" and 3 < size < 8000  # the required characters, by frequency


def test_cancel_during_pruning_exits_within_a_second(corpus, tmp_path):
    # Two EM rounds reported: the first pruning step is running.
    cpu, wall, code, events = _train_until(corpus, tmp_path / "prune.tokproj", lambda e: _step(e) >= 2,
                                           signal.SIGTERM)
    _prompt(cpu, wall, "while pruning")
    assert code == 3
    status, _size = _stored(tmp_path / "prune.tokproj")
    assert status == "cancelled"


def test_stop_checks_are_never_far_apart_in_any_phase(corpus):
    """A whole run, recording when the trainer looks at the stop flag: no stretch of work between
    two looks (seeding, E step, M step, Viterbi, pruning, the cut) is long."""
    lines = corpus.read_text(encoding="utf-8").split("\n")[:9000]
    trainer = UnigramTrainer(count_spm_words(lines), UnigramConfig(vocab_size=4000))
    looks: list[float] = []

    def should_stop() -> bool:
        looks.append(time.process_time())  # CPU time: other jobs on the machine do not count
        return False

    phases = {event.phase for event in trainer.run(should_stop)}
    assert phases == {"em", "prune", "final"}
    gaps = sorted(b - a for a, b in zip(looks, looks[1:]))
    # ~0.1 s of work per block on an idle core; the longest stretches are C-level (a sort's merge).
    # Held to the 1 s target in CPU seconds: 0.58 s was seen once on a loaded machine (cache misses).
    assert len(looks) > 100 and gaps[-1] < CPU_WITHIN_S, f"{len(looks)} looks, longest gaps {gaps[-3:]}"


def test_preparing_the_trainer_looks_at_the_stop_flag_and_cancels(corpus):
    """Cutting the corpus's lines into words (the "preparing" phase: seconds on a large corpus, before
    the run is stored) looks at the flag throughout, and a stop there stores nothing."""
    from workbench.core.trainer import TrainingCancelled
    from workbench.tasks.models import UNIGRAM
    from workbench.tasks.spec import RunSpec

    lines = corpus.read_text(encoding="utf-8").split("\n")
    counts: dict[str, int] = {}
    for line in lines:
        counts[line + "\n"] = counts.get(line + "\n", 0) + 1
    spec = RunSpec(files=[str(corpus)], model="unigram", vocab_size=4000, normalizer=UNIGRAM.defaults["normalizer"])
    looks: list[float] = []

    def should_stop() -> bool:
        looks.append(time.process_time())
        return False

    UNIGRAM.trainer(counts, spec, should_stop)
    gaps = sorted(b - a for a, b in zip(looks, looks[1:]))
    assert len(looks) > 5 and gaps[-1] < 0.5, f"{len(looks)} looks, longest gaps {gaps[-3:]}"
    with pytest.raises(TrainingCancelled):
        UNIGRAM.trainer(counts, spec, lambda: True)
