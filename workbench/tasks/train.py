"""One training run from corpus files to a stored run: read → count → train → commit.

This is what ``workbench train`` runs, and what the window runs too (as a child process of the app's
own entry point, reading :class:`Progress` reports as JSON lines). It owns the order of operations
and the run's status in the project file; the algorithms live in :mod:`workbench.core`, the file
formats in :mod:`workbench.corpus` and :mod:`workbench.store`.
"""

from __future__ import annotations

import gc
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.corpus.counts import count_sources
from workbench.errors import WorkbenchError

PARALLEL_COUNT_BYTES = 8 << 20  # below this a second process costs more than it saves


@dataclass(frozen=True)
class Progress:
    """A report for whoever watches: the CLI's stderr line or the window's plots."""

    event: str  # reading | started | merges | finished
    bytes_read: int = 0
    bytes_total: int = 0
    run_id: int | None = None
    step: int = 0
    target: int = 0
    vocab_size: int = 0
    token_count: int = 0
    frequency: int = 0
    merges_per_s: float = 0.0
    eta_s: float | None = None
    status: str = ""
    message: str = ""

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in (None, "", 0, 0.0) or k == "event"}


def gather_word_counts(paths: Sequence[str], config: TrainConfig, *, encoding: str | None = None,
                       field: str | None = None, column: str | None = None,
                       report: Callable[[Progress], None] | None = None,
                       should_stop: Callable[[], bool] | None = None):
    """Word-frequency table over all files, plus the corpus sources (for the project file)."""
    from workbench.corpus import expand_paths, open_source
    from workbench.corpus.source import unique_sources

    if field or column or encoding:
        # Reader options name one format: apply them to exactly the files given.
        sources, rejected = unique_sources(open_source(p, field=field, column=column, encoding=encoding) for p in paths), []
        for src in sources:
            if field and src.kind != "jsonl" or column and src.kind not in ("csv", "tsv", "parquet"):
                option = "--field" if field and src.kind != "jsonl" else "--column"
                raise WorkbenchError(f"{src.path}: {option} does not apply to a {src.kind} file: "
                                     "train files that need different options separately")
    else:
        sources, rejected = expand_paths(list(paths))
    if rejected:
        raise WorkbenchError(rejected[0] + (f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""))
    if not sources:
        raise WorkbenchError("no corpus files given: name .txt/.jsonl/.csv/.tsv/.gz files or folders")
    total = sum(src.size for src in sources) or 1
    last = 0.0

    def on_bytes(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if report is not None and (now - last > 0.1 or done >= total):
            last = now
            report(Progress("reading", bytes_read=done, bytes_total=total))

    workers = 2 if total >= PARALLEL_COUNT_BYTES and (os.cpu_count() or 1) > 1 else 1
    counts = count_sources(sources, pretokenizer=config.pretokenizer, normalizer=config.normalizer,
                           workers=workers, progress=on_bytes, should_stop=should_stop)
    if not counts:
        raise WorkbenchError("the corpus is empty after pre-tokenization: nothing to train on")
    return counts, sources


def train_into_project(paths: Sequence[str], project: str | Path, config: TrainConfig, *, name: str = "",
                       report: Callable[[Progress], None] | None = None,
                       should_stop: Callable[[], bool] | None = None,
                       encoding: str | None = None, field: str | None = None,
                       column: str | None = None) -> tuple[int | None, str]:
    """Train and store one run; returns (run id, final status) — (None, "cancelled") when stopped
    while the corpus was still being read, in which case the project is left untouched."""
    from workbench.corpus import fingerprint
    from workbench.store import ProjectStore
    from workbench.store.project import check_project_for_training

    stop = should_stop or (lambda: False)
    started = time.monotonic()
    # Check the project before the slow part (so a bad path fails at once), but read-only: a corpus
    # error found while counting must leave an existing project byte for byte as it was.
    project = Path(project)
    check_project_for_training(project)  # opens, quick_check, writable — before the corpus is read
    try:
        counts, sources = gather_word_counts(paths, config, encoding=encoding, field=field, column=column,
                                             report=report, should_stop=stop)
    except WorkbenchError:
        if stop():  # stopped while reading: whatever the partial read says, nothing was asked for
            return None, "cancelled"
        raise
    if stop():
        return None, "cancelled"  # nothing is stored for a run cancelled before it started
    counted = time.monotonic()
    trainer = BpeTrainer(counts, config)
    with ProjectStore.open(project, create=True) as store:
        corpus_ids = []
        for src in sources:
            stat = os.stat(src.path)
            corpus_ids.append(store.add_corpus(str(Path(src.path).resolve()), size=stat.st_size, mtime=stat.st_mtime,
                                               fingerprint=fingerprint(src.path),
                                               reader_options=src.reader_options()))
        kinds = ["special" if i < len(trainer.special_tokens) else "base" for i in range(len(trainer.vocab))]
        settings = config.settings()
        settings["word_types"] = len(trainer.words)
        settings["initial_token_count"] = trainer.token_count
        run_name = name or _default_name(config)
        run_id = store.create_run(run_name, settings, corpus_ids, list(trainer.vocab), kinds)
        if config.vocab_size is not None:
            target = config.vocab_size - trainer.initial_size
            if config.merges is not None:
                target = min(target, config.merges)
        else:
            target = config.merges or 0
        status = "failed"
        error: str | None = None
        writer = None
        t0 = time.monotonic()
        event = None
        try:  # from here on the run must end finished, cancelled or failed — never left "running"
            if report:
                report(Progress("started", run_id=run_id, target=target, vocab_size=len(trainer.vocab),
                                token_count=trainer.token_count))
            writer = store.run_writer(run_id)
            log = (trainer.merges, trainer.frequencies, trainer.token_counts, trainer.vocab)
            last = 0.0
            # The merge loop makes no reference cycles, and with millions of live objects (word
            # lists, pair sets) every cyclic collection walks them all: measured here, switching the
            # collector off for the loop makes training ~10% faster and halves the store's overhead.
            gc.disable()
            for event in trainer.run(stop):
                now = time.monotonic()
                if now - last >= writer.interval:  # ~100 ms: one batch, one progress line
                    last = now
                    writer.add_log(*log)
                    if report is not None:
                        report(_merge_progress(event, run_id, target, t0, now))
            status = "cancelled" if stop() else "finished"
        except KeyboardInterrupt:
            status = "cancelled"
        except BaseException as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            gc.enable()
            if writer is not None:
                try:
                    try:
                        writer.add_log(*log)  # a run stopped by Ctrl+C keeps every merge it made
                    finally:
                        writer.close()
                except Exception as exc:  # noqa: BLE001 - the status below matters more
                    status, error = "failed", error or f"could not write the last merges: {exc}"
            store.finish_run(run_id, status, error=error, timings=_timings(started, counted, t0))
        if report is not None:
            if event is not None:
                report(_merge_progress(event, run_id, target, t0, time.monotonic()))
            report(Progress("finished", run_id=run_id, status=status,
                            step=event.step if event else 0, vocab_size=len(trainer.vocab),
                            token_count=trainer.token_count))
        return run_id, status


def _merge_progress(event, run_id: int, target: int, t0: float, now: float) -> Progress:
    elapsed = max(now - t0, 1e-9)
    rate = event.step / elapsed
    eta = (target - event.step) / rate if rate > 0 and target else None
    return Progress("merges", run_id=run_id, step=event.step, target=target, vocab_size=event.vocab_size,
                    token_count=event.token_count, frequency=event.frequency,
                    merges_per_s=round(rate, 1), eta_s=round(eta, 1) if eta is not None else None)


def _timings(started: float, counted: float, merging: float) -> dict:
    end = time.monotonic()
    return {"count_s": round(counted - started, 3), "merge_s": round(end - merging, 3),
            "total_s": round(end - started, 3)}


def _default_name(config: TrainConfig) -> str:
    size = f"V{config.vocab_size}" if config.vocab_size else f"{config.merges} merges"
    return f"{config.units} BPE {size} · {config.pretokenizer if len(config.pretokenizer) < 16 else 'custom'}"
