"""The inspector's worker thread: loads tokenizers from the project and splits the text.

The GUI thread posts an :class:`InspectJob` (the text, the tokenizers of each pane, the options)
with a generation number; the worker skips jobs that a newer one has overtaken before it got to
them, and the panel drops any result whose generation is no longer the latest (the git-cola
"drop stale results" rule). Results carry plain Python objects only.

The worker opens the project read-only for each load (:func:`workbench.tasks.sources.load_source`,
never holding a connection, so a trainer's writes and its final checkpoint are never blocked) and
keeps a few loaded tokenizers and their :class:`~workbench.inspection.Inspector` caches, so a
keystroke re-splits only the edited lines.

Signals are emitted from the worker thread; connect them to ``@Slot`` methods of GUI-thread objects
(queued connections), never to lambdas.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from workbench.core import offsets
from workbench.errors import WorkbenchError
from workbench.tasks import inspection
from workbench.tasks.sources import LoadedTokenizer, load_source
from workbench.ui.collector import collect_on_gui_thread

log = logging.getLogger(__name__)

Source = tuple  # ("run", run_id) | ("ref", ref_id)


@dataclass(frozen=True)
class PaneSpec:
    """One pane's tokenizer: ``version`` changes whenever the stored tokenizer may have changed."""

    source: Source
    version: tuple = ()
    max_merges: int | None = None


@dataclass(frozen=True)
class InspectJob:
    generation: int
    project: Path
    text: str
    separator: str
    panes: tuple[PaneSpec, ...]
    allow_special: bool = False
    stable_colours: bool = False
    whole_graphemes: bool = True


@dataclass
class PaneOutcome:
    spec: PaneSpec
    layout: inspection.TextLayout | None = None
    loaded: LoadedTokenizer | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass
class JobResult:
    generation: int
    panes: list[PaneOutcome] = field(default_factory=list)
    disagreements: list[tuple[int, int]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class ImportRequest:
    project: Path
    path: Path
    name: str = ""


@dataclass(frozen=True)
class ImportOutcome:
    ref_id: int | None
    name: str
    notes: tuple[str, ...] = ()
    error: str | None = None


def import_reference(project: Path, path: Path, name: str = "") -> ImportOutcome:
    """Load a tokenizer file and keep it in the project as a reference (what `workbench import` does)."""
    from workbench.tasks.import_export import import_reference as import_into_project

    ref = import_into_project(path, project, name=name)
    return ImportOutcome(ref.ref_id, ref.name, ref.notes)


class InspectWorker(QObject):
    """Lives in its own QThread; one job at a time, stale ones skipped."""

    finished = Signal(object)  # JobResult
    loading = Signal(object)  # (generation, source, name): a slow load has started
    imported = Signal(object)  # ImportOutcome

    TOKENIZERS_KEPT = 6
    INSPECTORS_KEPT = 10
    WORK_SLICE_S = 0.004
    REST_S = 0.0005

    def __init__(self):
        super().__init__()
        self.latest = 0  # written by the GUI thread before it posts a job
        self._tokenizers: OrderedDict[tuple, LoadedTokenizer] = OrderedDict()
        self._inspectors: OrderedDict[tuple, inspection.Inspector] = OrderedDict()

    @Slot(object)
    def run_job(self, job: InspectJob) -> None:
        if job.generation < self.latest:
            return  # overtaken before it started
        t0 = time.perf_counter()
        result = JobResult(job.generation)

        last_rest = [time.perf_counter()]

        def should_stop() -> bool:
            # Give the GIL back: a moment every few ms of pure-Python splitting, so the GUI thread
            # runs its event loop between slices instead of queueing behind this thread.
            now = time.perf_counter()
            if now - last_rest[0] > self.WORK_SLICE_S:
                time.sleep(self.REST_S)
                last_rest[0] = time.perf_counter()
            else:
                time.sleep(0)
            return job.generation < self.latest

        try:
            done: dict = {}
            for spec in job.panes:
                if job.generation < self.latest:
                    return
                if spec not in done:
                    done[spec] = self._pane(job, spec, should_stop)
                result.panes.append(done[spec])
        except inspection.Stopped:
            return  # a newer text is waiting: this one would be dropped anyway
        layouts = [p.layout for p in result.panes if p.layout is not None]
        if len(layouts) >= 2:
            result.disagreements = inspection.disagreement_spans([layout.boundaries() for layout in layouts])
        result.seconds = time.perf_counter() - t0
        self.finished.emit(result)

    def _pane(self, job: InspectJob, spec: PaneSpec, should_stop) -> PaneOutcome:
        t0 = time.perf_counter()
        outcome = PaneOutcome(spec)
        try:
            loaded = self._tokenizer(job, spec)
            outcome.loaded = loaded
            inspector = self._inspector(job, spec, loaded)
            outcome.layout = inspector.inspect(job.text, job.separator, should_stop)
            outcome.layout.blockmap  # noqa: B018 (built here, off the GUI thread)
        except WorkbenchError as exc:
            outcome.error = str(exc)
        except inspection.Stopped:
            raise
        except Exception as exc:  # a bug must not kill the worker thread; show it in the pane
            log.exception("inspecting with %s failed", spec.source)
            outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.seconds = time.perf_counter() - t0
        return outcome

    def _tokenizer(self, job: InspectJob, spec: PaneSpec) -> LoadedTokenizer:
        key = (str(job.project), spec.source, spec.version)
        loaded = self._tokenizers.get(key)
        if loaded is None:
            self.loading.emit((job.generation, spec.source))
            loaded = load_source(job.project, spec.source)
            self._tokenizers[key] = loaded
            while len(self._tokenizers) > self.TOKENIZERS_KEPT:
                self._tokenizers.popitem(last=False)
        self._tokenizers.move_to_end(key)
        return loaded

    def _inspector(self, job: InspectJob, spec: PaneSpec, loaded: LoadedTokenizer) -> inspection.Inspector:
        max_merges = spec.max_merges  # None: every merge (also when the limit is past the last one)
        if max_merges is not None and max_merges >= len(loaded.tokenizer.merges):
            max_merges = None
        key = (str(job.project), spec.source, spec.version, max_merges,
               job.allow_special, job.stable_colours, job.whole_graphemes)
        inspector = self._inspectors.get(key)
        if inspector is None:
            encoder = loaded.encoder if max_merges is None else self._partial_encoder(loaded, max_merges)
            inspector = inspection.Inspector(encoder, allow_special=job.allow_special, stable_colours=job.stable_colours,
                                      whole_graphemes=job.whole_graphemes)
            self._inspectors[key] = inspector
            while len(self._inspectors) > self.INSPECTORS_KEPT:
                self._inspectors.popitem(last=False)
        self._inspectors.move_to_end(key)
        return inspector

    def _partial_encoder(self, loaded: LoadedTokenizer, max_merges: int) -> offsets.SpanEncoder:
        for inspector in self._inspectors.values():  # same encoder, other options: share its caches
            encoder = inspector.encoder
            if encoder.tok is loaded.tokenizer and encoder.max_merges == max_merges:
                return encoder
        return offsets.SpanEncoder(loaded.tokenizer, max_merges=max_merges)

    @Slot(object)
    def run_import(self, request: ImportRequest) -> None:
        try:
            outcome = import_reference(request.project, request.path, request.name)
        except WorkbenchError as exc:
            outcome = ImportOutcome(None, request.name, error=str(exc))
        except OSError as exc:
            outcome = ImportOutcome(None, request.name, error=f"{request.path}: {exc.strerror or exc}")
        self.imported.emit(outcome)


class WorkerThread:
    """Owns the QThread and the worker; ``stop()`` must run before the app exits (trap 4)."""

    def __init__(self):
        collect_on_gui_thread()  # before the thread can run a collector pass (ui/collector.py)
        self.qthread = QThread()
        self.qthread.setObjectName("inspect-worker")
        self.worker = InspectWorker()
        self.worker.moveToThread(self.qthread)
        self.stopped = False
        self.qthread.start()

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            if self.qthread.isRunning():
                self.qthread.quit()
                self.qthread.wait()
        except RuntimeError:  # the C++ thread object is already gone (interpreter shutdown)
            pass
