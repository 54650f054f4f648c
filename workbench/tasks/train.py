"""One training run from a :class:`~workbench.tasks.spec.RunSpec` to a stored run: read → count → train → commit.

This is what ``workbench train`` runs, and what the window runs too (as a child process of the app's
own entry point, given the spec as a JSON file and reporting :class:`Progress` as JSON lines). It
owns the order of operations and the run's status in the project file. It drives any
:class:`~workbench.core.trainer.Trainer` (each family's, :mod:`workbench.tasks.models`); the algorithms live in
:mod:`workbench.core`, the file formats in :mod:`workbench.corpus` and :mod:`workbench.store`.

Left out: parsing flags or forms (the CLI and the window build the RunSpec) and validation rules
(:meth:`RunSpec.validate`, plus what only the trainer can check once the corpus is counted).
"""

from __future__ import annotations

import gc
import logging
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from workbench.core.bpe import TrainConfig
from workbench.core.trainer import Trainer, TrainingCancelled
from workbench.corpus.counts import count_sources, counting_workers
from workbench.corpus.fingerprint import FileState
from workbench.corpus.location import corpus_path, expand_locations, is_url, stored_path
from workbench.errors import ConfigError, WorkbenchError
from workbench.tasks.models import COUNT_CACHE, FAMILIES, TrainerFactory, family, family_of, unigram_words
from workbench.tasks.spec import CorpusFile, RunSpec

__all__ = ["COUNTED_AS", "TRAINERS", "Progress", "train_run", "unigram_words", "step_value"]
_NOTES = logging.getLogger("workbench.notes")  # one `note:` line each on the CLI's stderr
_COLUMN_KINDS = ("csv", "tsv", "parquet", "arrow")


@dataclass(frozen=True)
class Progress:
    """A report for whoever watches: the CLI's stderr line or the window's plots."""

    event: str  # reading | preparing | note | started | merges (any training step) | finished
    bytes_read: int = 0
    bytes_total: int = 0
    run_id: int | None = None
    step: int = 0
    target: int = 0
    vocab_size: int = 0
    goal: int = 0                    # the target vocabulary size (what a pruning run counts down to)
    model: str = ""                  # "started", "preparing": the model family (how to tell its progress)
    token_count: int = 0
    frequency: float = 0
    merges_per_s: float = 0.0
    eta_s: float | None = None
    status: str = ""
    message: str = ""
    skipped: int = 0                 # "skipped": bad records left out under on_bad_record=skip
    positions: tuple[str, ...] = ()  # … and the first few, each ``file:line: full reason``

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()
                if v not in (None, "", 0, 0.0, ()) or k == "event" or (k == "eta_s" and v is not None)}


# ---- what differs per model family lives in workbench.tasks.models ------------------------------
#: CPU seconds the trainer's thread spends committing merge batches itself before the store's writer
#: process is started (``RunWriter``'s ``defer``): about what starting that process costs, so a short
#: run (a few thousand merges) never starts it and a long one pays at most this twice.
WRITER_DEFER_S = 0.04

#: The pre-tokenizer the counting pass uses when it is not the run's own (Unigram counts whole lines
#: and cuts them into SentencePiece's words itself): each family's ``counted_as``.
COUNTED_AS = {name: f.counted_as for name, f in FAMILIES.items() if f.counted_as}

#: How each model's trainer is made from the word counts and the spec: each family's ``trainer``.
TRAINERS: dict[str, TrainerFactory] = {name: f.trainer for name, f in FAMILIES.items()}


def split_for_training(model: str, pretokenizer: str, normalizer: str, text: str) -> list[str]:
    """``text`` cut into the pieces the ``model``'s trainer counts: the Train tab's split preview.

    ``normalizer`` is the form's comma-separated list. BPE and WordPiece count the pre-tokenizer's
    pieces of the normalized text; Unigram counts whole lines (:data:`COUNTED_AS`) and cuts each
    into :func:`unigram_words` — with the dummy ▁ in front and a word at every ▁, which the
    ``metaspace`` preset alone would not show. Left out: what happens inside a piece (the model).
    """
    from workbench.core.normalize import make_normalizer, parse_normalizer
    from workbench.core.pretokenize import make_pretokenizer

    normalize = make_normalizer(parse_normalizer(normalizer))
    if COUNTED_AS.get(model) == "none":  # whole lines, each normalized without its break and cut by the trainer
        return [w for line in text.splitlines() for w in unigram_words(line, normalize)]
    normalized = normalize(text)
    pre = make_pretokenizer(pretokenizer)
    return pre.split(pre.prepare(normalized) if pre.name == "metaspace" else normalized)


def step_value(settings: Mapping) -> str:
    """What the number plotted for each step of a stored run is, from the run's settings.

    ``"frequency"``: the merged pair's count (BPE, WordPiece by frequency — the merges rows);
    ``"score"``: WordPiece's likelihood score of the merged pair (``run_steps`` rows);
    ``"log_likelihood"``: Unigram's corpus log-likelihood per EM round (``run_steps`` rows).
    """
    return family_of(settings).step_value(settings)


def spec_from_config(config: TrainConfig, files: Sequence[CorpusFile], *, name: str = "",
                     project: str | os.PathLike = "") -> RunSpec:
    """The RunSpec of a BPE TrainConfig (for callers that still build a TrainConfig)."""
    return RunSpec(files=tuple(files), model="bpe", vocab_size=config.vocab_size, merges=config.merges,
                   units=config.units, end_of_word=config.end_of_word, pretokenizer=config.pretokenizer,
                   normalizer=tuple(config.normalizer), min_frequency=config.min_frequency,
                   special_tokens=tuple(config.special_tokens), tie_break=config.tie_break, name=name,
                   project=str(project))


# ---- corpus files --------------------------------------------------------------------------------
def resolve_files(paths: Sequence[str], *, kind: str | None = None, encoding: str | None = None,
                  field: str | None = None, column: str | int | None = None,
                  on_bad_record: str = "fail") -> tuple[CorpusFile, ...]:
    """Files and folders named on a command line → corpus files with resolved reader options.

    Options given apply to every file (folders are then refused: they would hide which files get
    them); without options, folders are walked and each file is sniffed. Any unusable file fails
    the whole call, naming it (a run must not silently train on less than was asked for) — except,
    under ``on_bad_record="skip"``, files with no text in them (empty or only whitespace), which are
    left out with a note, and shards of a location (``s3://…/*.jsonl.zst``) that cannot be read,
    each named in a note.
    """
    from workbench.corpus import expand_paths, open_source
    from workbench.corpus.source import EmptyFile, Rejection, unique_sources

    if kind or field or column is not None or encoding:
        sources: list = []
        rejected: list = []
        for p in expand_locations(paths):
            try:
                src = open_source(p, kind=kind, field=field, column=column, encoding=encoding,
                                  on_bad_record=on_bad_record)
            except EmptyFile as exc:
                rejected.append(Rejection.of(exc, corpus_path(p)))
                continue
            except WorkbenchError as exc:
                if on_bad_record != "skip" or not is_url(p):
                    raise
                rejected.append(Rejection.of(exc, corpus_path(p)))  # an unreadable shard of a listing
                continue
            if field and src.kind != "jsonl":
                raise ConfigError("files.field", f"{src.path}: a JSONL field does not apply to a {src.kind} file: "
                                  "train files that need different options separately")
            if column is not None and src.kind not in _COLUMN_KINDS:
                raise ConfigError("files.column", f"{src.path}: a column does not apply to a {src.kind} file: "
                                  "train files that need different options separately")
            sources.append(src)
        sources = unique_sources(sources)  # a file named twice is read once (expand_paths does the same)
    else:
        sources, rejected = expand_paths(list(paths), on_bad_record=on_bad_record)
    if on_bad_record == "skip" and sources and all(r.empty or r.unsupported or is_url(r.path) for r in rejected):
        _note_left_out([r for r in rejected if r.empty])
        for rejection in rejected:  # every unsupported file and unreadable shard of a location, by name
            if not rejection.empty:
                _NOTES.warning("left out: %s", rejection)
        rejected = []
    if rejected:
        hint = ": --on-bad-record skip leaves such files out" if rejected[0].unsupported else ""
        raise WorkbenchError(rejected[0] + hint + (f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""))
    if not sources:
        raise ConfigError("files", "no corpus files given: name .txt/.jsonl/.csv/.tsv/.gz files or folders")
    return tuple(CorpusFile(str(s.path), s.kind, s.field, s.column, s.encoding, on_bad_record) for s in sources)


def _note_left_out(empty: Sequence, shown: int = 3) -> None:
    """One note per file left out for holding no text (the first few), then how many more."""
    from workbench.corpus.source import shown_path

    for rejection in empty[:shown]:
        _NOTES.warning("%s: left out: the file holds no text (empty or only whitespace)", shown_path(rejection.path))
    if len(empty) > shown:
        _NOTES.warning("%d more files with no text left out", len(empty) - shown)


def open_sources(files: Sequence[CorpusFile]) -> list:
    """The corpus sources of a spec's files, read with the options each file carries.

    A file whose kind (and, for JSONL/CSV/TSV/Parquet, field/column) is given was checked when it
    was added — by the Corpus tab or by :func:`resolve_files` — and is not sniffed again: only its
    size is read here. A file with something left open (kind ``""``, no field) is sniffed for it.
    """
    from workbench.corpus import CorpusSource, detect_kind, open_source
    from workbench.corpus.source import check_name
    from workbench.corpus.streams import os_error

    sources = []
    for f in files:
        complete = f.kind and (f.kind != "jsonl" or f.field) and (f.kind not in _COLUMN_KINDS or f.column is not None)
        if not complete or is_url(f.path):  # a location is looked at again (its size is the store's to say)
            sources.append(open_source(f.path, kind=f.kind or None, field=f.field, column=f.column,
                                       encoding=f.encoding, on_bad_record=f.on_bad_record))
            continue
        path = Path(f.path).expanduser()
        check_name(path)
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise os_error(path, exc) from None
        if path.is_dir():
            raise WorkbenchError(f"{path}: is a folder, not a file: list the files inside it")
        sources.append(CorpusSource(path, f.kind, size, detect_kind(path)[1], f.field, f.column, f.encoding,
                                    f.on_bad_record))
    return sources


def count_words(sources: Sequence, pretokenizer: str, normalizer: Sequence[str], *, sequences: str = "lines",
                cache: bool = False, report: Callable[[Progress], None] | None = None,
                should_stop: Callable[[], bool] | None = None, states: dict[str, FileState] | None = None,
                sample: tuple[int, int] | None = None, memory_limit: int | None = None):
    """``({pre-token: count}, sources)``; raises WorkbenchError when nothing is left to train on.

    ``sample=(N, seed)`` counts N lines drawn evenly from all files instead of every line
    (:func:`~workbench.corpus.sampling.count_sample`; the table's ``sampled_from`` says of how many).
    ``memory_limit``: the counting bound in bytes (default :func:`~workbench.corpus.spill.default_limit`,
    a share of the RAM); partial tables beyond it are spilled to disk and merged.

    With ``cache``, counts are reused from (and stored in) the count cache
    (:class:`~workbench.corpus.count_cache.CountCache`), keyed by each file's fingerprint and every
    setting that changes the counts, so training again with another size or algorithm starts merging
    at once. ``states`` receives the fingerprint of what was counted of each file (a file changed
    while it was read fails the call: see :func:`~workbench.corpus.counts.count_sources`)."""
    if not sources:
        raise ConfigError("files", "no corpus files given: add .txt/.jsonl/.csv/.tsv/.gz files")
    total = sum(src.size for src in sources) or 1
    last = 0.0

    def on_bytes(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if report is not None and (now - last > 0.1 or done >= total):
            last = now
            report(Progress("reading", bytes_read=done, bytes_total=total))

    workers = counting_workers(total)
    from workbench.corpus.count_cache import CountCache
    from workbench.corpus.spill import default_limit

    if sample is not None:
        from workbench.corpus.sampling import count_sample

        sampled = count_sample(sources, sample[0], sample[1], pretokenizer=pretokenizer, normalizer=normalizer,
                               should_stop=should_stop, progress=on_bytes, states=states)
        if not sampled:
            raise WorkbenchError("the sample is empty after pre-tokenization: nothing to train on")
        return sampled, sources
    counts = count_sources(sources, pretokenizer=pretokenizer, normalizer=normalizer, sequences=sequences,
                           cache=CountCache() if cache else None, workers=workers, progress=on_bytes,
                           should_stop=should_stop, states=states,
                           memory_limit=memory_limit if memory_limit is not None else default_limit())
    if not counts:
        raise WorkbenchError("the corpus is empty after pre-tokenization: nothing to train on")
    return counts, sources


# ---- the run -------------------------------------------------------------------------------------
def check_project(project: str | os.PathLike) -> Path:
    """Refuse a project that cannot take a run (does not open, fails SQLite's quick_check, read-only,
    no such folder) before the corpus is read — read-only, so a refused file is left as it was."""
    from workbench.store.project import check_project_for_training

    path = Path(project)
    check_project_for_training(path)
    return path


def train_into_project(paths: Sequence[str], project: str | Path, config: TrainConfig, *, name: str = "",
                       report: Callable[[Progress], None] | None = None,
                       should_stop: Callable[[], bool] | None = None,
                       encoding: str | None = None, field: str | None = None,
                       column: str | None = None) -> tuple[int | None, str]:
    """:func:`train_run` for callers that give paths and a BPE TrainConfig (scripts, tests)."""
    check_project(project)
    files = resolve_files(paths, encoding=encoding, field=field, column=column)
    return train_run(spec_from_config(config, files, name=name), project, report=report, should_stop=should_stop)


class StopFlag:
    """A ``should_stop`` for :func:`train_run` that also knows why: a user's cancel, or an
    interruption (the window that started a child run died) that the run's status must say."""

    def __init__(self) -> None:
        self.requested = False
        self.why: str | None = None

    def __call__(self) -> bool:
        return self.requested

    def cancel(self) -> None:
        self.requested = True

    def interrupt(self, why: str) -> None:
        self.why = self.why or why
        self.requested = True


def stopped_status(stop: Callable[[], bool]) -> str:
    """The status of a run that ``stop`` ended: interrupted when a :class:`StopFlag` says why."""
    return "interrupted" if getattr(stop, "why", None) else "cancelled"


def train_run(spec: RunSpec, project: str | os.PathLike | None = None, *,
              report: Callable[[Progress], None] | None = None,
              should_stop: Callable[[], bool] | None = None, count_cache: bool = True,
              estimate=None, count_memory: int | None = None,
              make_trainer: TrainerFactory | None = None, suspendable: bool = False) -> tuple[int | None, str]:
    """Train and store one run; returns (run id, final status) — (None, "cancelled") when stopped
    while the corpus was still being read, in which case the project is left untouched.

    ``project`` overrides ``spec.project``. Raises ConfigError for a setting that cannot be used.
    ``count_cache`` reuses pre-token counts of files counted before with the same settings.
    ``estimate``: the pre-flight :class:`~workbench.tasks.preflight.Estimate` the caller showed, or
    True to make one whatever the size (else one is made for a corpus of
    :data:`~workbench.tasks.preflight.PREFLIGHT_BYTES` or more); the run records it beside its
    measured peak memory (``timings["peak_rss_mb"]``) and time.
    ``count_memory``: the counting bound in bytes (see :func:`count_words`).
    ``make_trainer`` replaces the family's trainer (an extension continues a base:
    :mod:`workbench.tasks.extend`); a trainer with ``extra_settings()`` adds them to the run's.
    ``suspendable``: the window may pause this process (``--progress json``: it suspends the
    process tree, all but the store's writer process), so every batch is committed by the writer
    process, from the first one on — a commit stopped half-way here would hold the project's write
    lock for the whole pause. Otherwise the first batches are committed here (:data:`WRITER_DEFER_S`).
    """
    from workbench.store import ProjectStore

    spec = spec.validate()
    fam = family(spec.model)
    rule = fam.progress
    target_project = project or spec.project
    if not target_project:
        raise ConfigError("project", "say where to store the run: give a project file (*.tokproj)")
    stop = should_stop or (lambda: False)
    started = time.monotonic()
    # Check the project before the slow part (so a bad path fails at once), but read-only: a corpus
    # error found while counting must leave an existing project byte for byte as it was.
    project_path = check_project(target_project)
    states: dict[str, FileState] = {}  # what was counted of each file: the fingerprint the run records
    try:
        opened = open_sources(spec.files)
        preflight = estimate if estimate is not None and estimate is not True else \
            _preflight(spec, opened, report, force=estimate is True)
        counts, sources = count_words(opened, fam.counted_as or spec.pretokenizer,
                                      () if fam.counted_as else (spec.normalizer or ()), sequences=spec.sequences,
                                      cache=count_cache, report=report, should_stop=stop, states=states,
                                      sample=(spec.sample_lines, spec.sample_seed) if spec.sample_lines else None,
                                      memory_limit=count_memory)
    except WorkbenchError:
        if stop():  # stopped while reading: whatever the partial read says, nothing was asked for
            return None, "cancelled"
        raise
    if stop():
        return None, "cancelled"  # nothing is stored for a run cancelled before it started
    skipped = report_skipped(sources, report)
    counted = time.monotonic()
    if report is not None:  # building the trainer can take a while (Unigram seeds its pieces here)
        report(Progress("preparing", model=spec.model, message=rule.preparing))
    cache_setting = COUNT_CACHE.set(count_cache)  # the trainer's own counting pass as the run's
    try:
        trainer = (make_trainer or fam.trainer)(counts, spec, stop)
    except TrainingCancelled:
        return None, "cancelled"  # stopped while the trainer prepared: nothing is stored
    finally:
        COUNT_CACHE.reset(cache_setting)
    # The trainer holds the words in its own form: the table of strings goes now, not after the
    # run (a third of the peak memory on a corpus with many distinct pre-tokens).
    distinct, sampled = len(counts), getattr(counts, "sampled_from", None)
    del counts
    if stop():
        return None, "cancelled"
    # Only a merging model's size is asked for here: a pruning one (Unigram) seeds when asked, and
    # seeding inside run() can be cancelled.
    initial = trainer.initial_size if rule.measure == "merges" else 0
    extends = hasattr(trainer, "extend_config")  # an extension's size is its base's plus N: no such note
    if rule.measure == "merges" and spec.vocab_size is not None and initial >= spec.vocab_size and not extends:
        # As tokenizers' trainers do, every symbol of the corpus is kept: say why nothing will merge.
        note = (f"the corpus has {initial:,} initial symbols and specials, not fewer than the vocabulary size "
                f"{spec.vocab_size:,}: no merge will be made; raise the vocabulary size above {initial:,}")
        _NOTES.info(note)
        if report is not None:
            report(Progress("note", message=note))
    with ProjectStore.open(project_path, create=True) as store:
        corpus_ids = []
        for src in sources:
            state = states[str(src.path)]
            corpus_ids.append(store.add_corpus(stored_path(src.path), size=state.size, mtime=state.mtime,
                                               fingerprint=state.fingerprint,
                                               reader_options=src.reader_options()))
        settings = spec.settings()
        settings["word_types"] = trainer.word_types
        settings["initial_token_count"] = trainer.initial_token_count
        settings["distinct_pretokens"] = distinct
        if preflight:
            settings["estimate"] = preflight.recorded()
        if sampled is not None:
            settings["sampled_from_lines"] = sampled
        settings.update(_extra_settings(trainer))
        if any(getattr(src, "on_bad_record", "fail") == "skip" for src in sources):
            settings["skipped_records"] = skipped  # 0 too: "skip was on and nothing was bad" is worth knowing
        run_id = store.create_run(spec.name or _default_name(spec), settings, corpus_ids,
                                  list(trainer.initial_vocab), list(trainer.initial_kinds))
        target = trainer.target
        goal = spec.vocab_size or 0
        prepared = time.monotonic()
        status = "failed"
        error: str | None = None
        writer = None
        collector_was_on = gc.isenabled()  # back as it was after the loop (off in a window's process)
        t0 = time.monotonic()
        event = None
        log = trainer.log
        watch = _Watch(rule, target, initial, goal, t0)
        try:  # from here on the run must end finished, cancelled or failed — never left "running"
            if report:
                report(Progress("started", run_id=run_id, target=target, vocab_size=initial, goal=goal,
                                model=spec.model, token_count=trainer.initial_token_count))
            writer = store.run_writer(run_id, defer=0.0 if suspendable else WRITER_DEFER_S)
            last = 0.0
            # The merge loop makes no reference cycles, and with millions of live objects (word
            # lists, pair sets) every cyclic collection walks them all: measured here, switching the
            # collector off for the loop makes training ~10% faster and halves the store's overhead.
            gc.disable()
            for event in trainer.run(stop):
                now = time.monotonic()
                if now - last >= writer.interval:  # ~100 ms: one batch, one progress line
                    last = now
                    writer.add_log(log)
                    if report is not None:
                        report(watch.progress(event, run_id, now))
            status = stopped_status(stop) if stop() else "finished"
            if status == "interrupted":
                error = getattr(stop, "why", None)
        except KeyboardInterrupt:
            status = "cancelled"
        except BaseException as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            if writer is not None:
                try:
                    try:
                        writer.add_log(log)  # a run stopped by Ctrl+C keeps every merge it made
                    finally:
                        writer.close()
                except Exception as exc:  # noqa: BLE001 - the status below matters more
                    status, error = "failed", error or f"could not write the last merges: {exc}"
            if writer is not None and status in ("finished", "cancelled", "interrupted"):
                try:
                    stopped = {}
                    if status in ("cancelled", "interrupted") and rule.measure == "vocabulary" and event is not None:
                        # The kept model is cut to the target without the pruning left: say where it stood.
                        stopped = {"stopped_at": {"step": event.step, "vocab_size": event.vocab_size}}
                    record_final_model(store, run_id, trainer, stopped)
                except Exception as exc:  # noqa: BLE001 - said in the run's status and error
                    error = error or f"could not store the trained model: {exc}"
                    status = "failed" if status == "finished" else status
            try:
                store.finish_run(run_id, status, error=error, timings=_timings(started, counted, prepared, t0))
            finally:
                # Only now: the first collection after the loop walks every object the trainer
                # made (~0.3 s with Unigram's lattices), which would delay the last batch and a cancel.
                if collector_was_on:
                    gc.enable()
        if report is not None:
            if event is not None:
                report(watch.progress(event, run_id, time.monotonic()))
            report(Progress("finished", run_id=run_id, status=status,
                            step=event.step if event else 0, vocab_size=event.vocab_size if event else
                            len(trainer.initial_vocab),
                            token_count=event.token_count if event else trainer.initial_token_count))
        return run_id, status


def record_final_model(store, run_id: int, trainer: Trainer, extra: Mapping | None = None) -> None:
    """Keep what rebuilds the trained tokenizer: its settings (model family, unknown token, Unigram
    scores …) and, for a model that merges nothing (Unigram), its final vocabulary and its pruning
    checkpoints (a trainer's ``checkpoints``, if it has any: the vocabulary-size sweep reads them) —
    BPE and WordPiece vocabularies were stored merge by merge by the run writer."""
    tok = trainer.tokenizer()
    update = {k: v for k, v in tok.settings().items() if k != "special_tokens"}
    update.update(_extra_settings(trainer))
    update.update(extra or {})
    if tok.scores:
        update["scores"] = list(tok.scores)
    vocab = kinds = None
    if not tok.merges or len(tok.vocab) > len(trainer.log.vocab):
        # Pieces no merge made (Unigram's vocabulary; an extension's reserved specials at the end).
        vocab = list(tok.vocab)
        made = set(tok.merge_of_id)
        kinds = ["special" if i in tok.special_ids else "merge" if i in made else "base" for i in range(len(vocab))]
    store.record_final_model(run_id, update, vocab=vocab, kinds=kinds,
                             checkpoints=getattr(trainer, "checkpoints", None) or ())


def _extra_settings(trainer: Trainer) -> dict:
    """What a trainer adds to its run's settings (an extension: its base and what it skipped)."""
    extra = getattr(trainer, "extra_settings", None)
    return dict(extra()) if callable(extra) else {}


def report_skipped(sources: Sequence, report: Callable[[Progress], None] | None) -> int:
    """Say what the ``skip`` policy left out: a note per line on stderr (the CLI shows each as
    ``note:``) and a ``skipped`` event for the window. Returns the number of records skipped."""
    from workbench.corpus.bad_records import collect, summary

    logs = [src.skipped for src in sources if getattr(src, "skipped", None) is not None and src.skipped.count]
    total = collect(logs)
    if not total.count:
        return 0
    _NOTES.warning(summary(total.count, len(logs)))
    for message in total.first:
        _NOTES.warning("  " + message)
    if report is not None:
        report(Progress("skipped", skipped=total.count, positions=tuple(total.first),
                        message=summary(total.count, len(logs))))
    return total.count


class EtaEstimator:
    """Remaining training time from the (step, time) points seen so far — the one estimate the
    CLI's progress line and the window's progress bar both show.

    Merges get cheaper over a run: the first ones touch most words of the corpus, late ones a few
    (measured on the shared corpora, byte BPE: 40 ms per merge at step 10, 0.35 ms at step 6,000).
    Dividing the merges left by the average rate so far therefore overestimates tenfold or more
    early on. The per-merge cost is modelled as a power law ``c(s) = K·s^-β``: β from the cost in
    the two halves (in log steps) of the recent run, clamped to [0.3, 0.75] — steeper early
    stretches are not representative of the long tail — and K from the latest half; the remaining
    time is the integral of ``c`` from the current step to the target. The estimate is smoothed
    against the previous one (counted down by the time since) and capped by the plain
    linear extrapolation at the recent rate, an upper bound while merges keep getting cheaper.
    No estimate is given until at least :attr:`MIN_SECONDS` of merging and :attr:`MIN_STEPS`
    merges have been seen ("estimating…").

    Left out: pauses (the window's child stops reporting; the estimate resumes from the new points).
    """

    MIN_SECONDS = 1.0
    MIN_STEPS = 16
    BETA = (0.3, 0.75)

    def __init__(self, target: int):
        self.target = target
        self.points: list[tuple[int, float]] = []
        self._last: tuple[float, float] | None = None  # (time, estimate)

    def update(self, step: int, now: float) -> float | None:
        """Add a point; the estimated seconds left, or None while it would not mean anything."""
        if self.points and step <= self.points[-1][0]:
            return self._counted_down(now)
        self.points.append((step, now))
        if step >= self.target:
            return 0.0
        s0, t0 = self.points[0]
        if now - t0 < self.MIN_SECONDS or step - s0 < self.MIN_STEPS or len(self.points) < 3:
            return None
        raw = self._model(step, now)
        if raw is None:
            return self._counted_down(now)
        if self._last is not None:
            raw = 0.5 * raw + 0.5 * max(self._last[1] - (now - self._last[0]), 0.0)
        self._last = (now, raw)
        return raw

    def _counted_down(self, now: float) -> float | None:
        return None if self._last is None else max(self._last[1] - (now - self._last[0]), 0.0)

    def _time_at(self, step: float) -> float:
        """Time at ``step``, interpolated between the recorded points."""
        points = self.points
        lo, hi = 0, len(points) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if points[mid][0] <= step:
                lo = mid
            else:
                hi = mid
        (s1, t1), (s2, t2) = points[lo], points[hi]
        if s2 == s1:
            return t2
        return t1 + (t2 - t1) * (min(max(step, s1), s2) - s1) / (s2 - s1)

    def _model(self, step: int, now: float) -> float | None:
        first = self.points[0][0]
        lo = max(first, step // 8, 1)
        mid = math.sqrt(lo * step)
        if not lo < mid < step:
            return None
        c1 = (self._time_at(mid) - self._time_at(lo)) / (mid - lo)
        c2 = (now - self._time_at(mid)) / (step - mid)
        m1, m2 = math.sqrt(lo * mid), math.sqrt(mid * step)
        beta = -math.log(c2 / c1) / math.log(m2 / m1) if c1 > 0 and c2 > 0 else self.BETA[1]
        beta = min(max(beta, self.BETA[0]), self.BETA[1])
        if c2 <= 0:
            return None
        k = c2 * m2 ** beta
        remaining = k * (self.target ** (1 - beta) - step ** (1 - beta)) / (1 - beta)
        return min(remaining, c2 * (self.target - step))  # never above the linear extrapolation


class _Watch:
    """A run's progress reports, told as its family's :class:`~workbench.tasks.models.ProgressRule`
    says: rate and ETA over merges (BPE, WordPiece), or over the share of the way from the seed
    vocabulary to the target (Unigram, whose step count is not known in advance)."""

    def __init__(self, rule, target: int, first_vocab: int, goal: int, t0: float):
        self.rule, self.target, self.first_vocab, self.goal, self.t0 = rule, target, first_vocab, goal, t0
        self.eta = EtaEstimator(rule.eta_position(0, target, first_vocab, first_vocab, goal)[1])

    def progress(self, event, run_id: int, now: float) -> Progress:
        elapsed = max(now - self.t0, 1e-9)
        self.first_vocab = max(self.first_vocab, event.vocab_size)
        position, _end = self.rule.eta_position(event.step, self.target, event.vocab_size, self.first_vocab,
                                                self.goal)
        seconds = self.eta.update(position, now) if self.eta.target > 0 else None
        return Progress("merges", run_id=run_id, step=event.step, target=self.target, vocab_size=event.vocab_size,
                        goal=self.goal, token_count=event.token_count,
                        frequency=event.value if math.isfinite(event.value) else 0,
                        merges_per_s=round(event.step / elapsed, 1),
                        eta_s=round(seconds, 1) if seconds is not None else None)


def _timings(started: float, counted: float, prepared: float, training: float) -> dict:
    """Seconds spent reading and counting, preparing the trainer (Unigram: seeding its pieces),
    training (``merge_s``, the name kept for projects written before) and in all ("Took"), and the
    process's peak resident memory in MB (``peak_rss_mb``; counting workers' included)."""
    from workbench.tasks.calibration import children_peak_rss, peak_rss

    end = time.monotonic()
    return {"count_s": round(counted - started, 3), "prepare_s": round(prepared - counted, 3),
            "merge_s": round(end - training, 3), "total_s": round(end - started, 3),
            "peak_rss_mb": round(max(peak_rss(), children_peak_rss()) / 2**20, 1)}


def _preflight(spec: RunSpec, sources: Sequence, report: Callable[[Progress], None] | None, *, force: bool = False):
    """The estimate of a long run (None for a short one unless ``force``), its warning said as a note."""
    from workbench.tasks.preflight import estimate, should_estimate

    if not force and not should_estimate(sources):
        return None
    est = estimate(spec, sources=sources)
    warning = est.warning()
    if warning:
        _NOTES.warning(warning)
        if report is not None:
            report(Progress("note", message=warning))
    return est


def _default_name(spec: RunSpec) -> str:
    size = f"V{spec.vocab_size}" if spec.vocab_size else f"{spec.merges} merges"
    fam = family(spec.model)
    units = f"{spec.units} " if fam.uses("units") else ""
    name = f"{units}{fam.label} {size} · {spec.pretokenizer if len(spec.pretokenizer) < 16 else 'custom'}"
    # A sampled run must not pass for a run on the whole corpus in the run history or `runs`.
    return f"{name} · sample of {spec.sample_lines:,} lines" if spec.sample_lines else name
