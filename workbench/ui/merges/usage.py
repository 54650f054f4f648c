"""The corpus-usage count the Vocabulary tab and the Unigram piece table share: one job, one cache, one view.

Frequencies are counted in a background job: the run's corpus files are read again, split into
pre-tokens exactly as training did, and each distinct pre-token is encoded once with the run's
tokenizer (:func:`workbench.tasks.usage.count_usage`). The job opens its own read-only
connection, can be cancelled, and its result is cached per (project, source, vocabulary size,
corpus fingerprints) (``tasks.usage.usage_cache_key``), so switching back to a run shows its
numbers at once. For a reference tokenizer the project's corpus files are used.

:class:`UsageView` is the widget half: the summary line, the "never used only" box, the count
button, its progress bar and Cancel, and the slots that run the job and install its result into
the view's source and table model. What it leaves out: the layout (each view places the controls
its own way), the summary's wording and how the count button shows while busy (``_update_summary``
and ``_show_count_button``, per view), and filtering and selection.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QCheckBox, QLabel, QProgressBar, QPushButton, QWidget

from workbench.core.metrics import VocabUsage
from workbench.errors import WorkbenchError
from workbench.store.browse import Source
from workbench.tasks.usage import cached_usage, count_usage, remember_usage
from workbench.ui.jobs import JobRunner
from workbench.ui.merges.merge_model import worker_opener
from workbench.ui.merges.vocab_model import UsageTableModel
from workbench.ui.merges.widgets import ErrorLabel, PlaceholderTableView, show_job_progress

log = logging.getLogger(__name__)

USAGE_KEY = "usage"  # the count's key on the view's runner (the table's own jobs have another)
SUMMARY_KEY = "usage-summary"  # the never-used share of a count that has none yet
#: The summary line while the never-used share of a count is being made off the GUI thread.
SUMMARY_PENDING = "Usage: counting…"


def usage_job(path: Path, source: Source):
    """The function the worker runs: :func:`workbench.tasks.usage.count_usage` (its own connection),
    with the never-used share made there too (``VocabUsage.summarise``: ~60 ms for 200,000 pieces)."""
    def job(should_stop, progress):
        result = count_usage(path, source, should_stop=should_stop, progress=progress)
        if result is not None:
            result[0].summarise()
        return result
    return job


class UsageView(QWidget):
    """A table view whose rows the corpus count annotates (see the module docstring).

    A subclass sets ``self.model`` (a :class:`~workbench.ui.merges.vocab_model.UsageTableModel`)
    and ``self.table`` (a ``PlaceholderTableView``) and implements :meth:`_make_source`,
    :meth:`_usage_key`, :meth:`_show_count_button` and :meth:`_update_summary`.
    """

    usage_ready = Signal()  # frequencies shown (counted or from the cache); tests wait on it
    model: UsageTableModel  # set by the subclass
    table: PlaceholderTableView  # set by the subclass

    def __init__(self, count_tip: str, progress_width: int, parent: QWidget | None = None):
        super().__init__(parent)
        self._conn = None
        self._path: Path | None = None
        self._source: Any = None
        self._status = ""
        self._usage: VocabUsage | None = None
        self._warnings: list[str] = []
        self._cache_key: tuple | None = None
        self._syncing = False
        self.job = JobRunner(self)

        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.never_only = QCheckBox("never used only")
        self.never_only.setEnabled(False)
        self.count_button = QPushButton("Count in corpus")
        self.count_button.setToolTip(count_tip)
        self.count_button.clicked.connect(self._on_count_clicked)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.cancel_button.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.progress.setMaximumWidth(progress_width)
        self.progress.setTextVisible(True)
        self.error = ErrorLabel()

    # ---- what a subclass says -------------------------------------------------------------------------
    def _make_source(self, conn, source: Source) -> Any:
        """The browse source of ``source`` on ``conn`` (a ``VocabSource`` or ``PieceSource``)."""
        raise NotImplementedError

    def _query(self) -> Any:
        raise NotImplementedError

    def _usage_key(self) -> tuple | None:
        """The cache key of the current source's count (``usage_cache_key``), None if unreadable."""
        raise NotImplementedError

    def _show_count_button(self, busy: bool) -> None:
        raise NotImplementedError

    def _update_summary(self) -> None:
        raise NotImplementedError

    # ---- source -------------------------------------------------------------------------------------
    def _use_worker(self) -> None:
        """Long tables are filtered, sorted and opened off the GUI thread, as the merge table is
        (``LazyKeyedModel.use_worker``, on this view's runner); the subclass calls it once its
        model exists. The table's busy state and failures show in ``count_label`` and ``error``."""
        self.model.use_worker(self.job, worker_opener(lambda: self._path))
        self.model.failed.connect(self.error.show_message)

    def _close_source(self, conn, path: Path | None, status: str) -> None:
        """First half of ``set_source``: stop a count and forget the old source and its numbers."""
        self.job.cancel(USAGE_KEY)
        self._set_busy(False)
        if self._source is not None:
            self._source.close()
        self._conn, self._path, self._status = conn, path, status
        self._usage = None
        self.error.show_message("")

    def _open_source(self, source: Source | None, placeholder: str) -> None:
        """Second half: show ``source``'s rows, with a count made before if the cache has one."""
        conn = self._conn
        src = self._make_source(conn, source) if (conn is not None and source is not None) else None
        self._source = src
        self._cache_key = self._usage_key() if src is not None else None
        cached = cached_usage(self._cache_key)
        if cached is not None:
            self._install_usage(*cached)
        self.never_only.setEnabled(self._usage is not None)
        try:
            self.model.set_source(src, self._query())
        except WorkbenchError as exc:
            self.model.set_source(src, None)
            self.error.show_message(str(exc))
        self.table.set_placeholder(placeholder if src is not None else "")
        self._update_summary()
        if cached is not None:
            self.usage_ready.emit()

    def set_status(self, status: str) -> None:
        if status != self._status:
            self._status = status
            self._update_summary()

    def auto_count(self) -> None:
        """Count when shown, for runs that have finished (a live run changes under the count)."""
        if (self._source is not None and self._usage is None and not self.job.is_running(USAGE_KEY)
                and self._status != "running" and not self.error.isVisible()):
            self.count_usage()

    # ---- counting -------------------------------------------------------------------------------------
    def count_usage(self) -> None:
        if self._source is None or self._path is None:
            return
        self._cache_key = self._usage_key()
        cached = cached_usage(self._cache_key)
        if cached is not None:
            self._install_usage(*cached)
            self.model.usage_changed()
            self._update_summary()
            self.usage_ready.emit()
            return
        self.error.show_message("")
        self._set_busy(True)
        self.job.submit(usage_job(self._path, self._source.source), self._on_usage, self._on_failed,
                        key=USAGE_KEY, on_progress=self._on_progress, hooks=True)

    def cancel_usage(self) -> None:
        self.job.cancel(USAGE_KEY)
        self._set_busy(False)
        self._update_summary()

    @Slot()
    def _on_count_clicked(self) -> None:
        self.count_usage()

    @Slot()
    def _on_cancel_clicked(self) -> None:
        self.cancel_usage()

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self._show_count_button(busy)
        if busy:
            self.progress.setRange(0, 0)
            self.progress.setFormat("reading the corpus…")

    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, what: str) -> None:
        show_job_progress(self.progress, done, total, what)

    @Slot(object)
    def _on_usage(self, result: Any) -> None:
        self._set_busy(False)
        if result is None or self._source is None:
            self._update_summary()
            return
        remember_usage(self._cache_key, result)
        self._install_usage(*result)
        self.model.usage_changed()
        self._update_summary()
        self.usage_ready.emit()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._set_busy(False)
        self.error.show_message(message)
        self._update_summary()

    def _install_usage(self, usage: VocabUsage, warnings: list[str]) -> None:
        self._usage = usage
        self._warnings = list(warnings)
        if self._source is not None:
            self._source.set_usage(usage.frequencies, usage.counted)
        self.never_only.setEnabled(True)

    def _summary_ready(self) -> bool:
        """Whether the count's never-used share can be shown without computing it here; if not, a
        worker makes it (the summary says :data:`SUMMARY_PENDING` meanwhile) and shows it when done."""
        usage = self._usage
        if usage is None or usage.summarised:
            return True
        if not self.job.is_running(SUMMARY_KEY):
            def done(_summarised: VocabUsage) -> None:
                if self._usage is usage:
                    self._update_summary()
            self.job.submit(usage.summarise, done, self._on_failed, key=SUMMARY_KEY)
        return False

    @property
    def usage(self) -> VocabUsage | None:
        return self._usage

    def shutdown(self) -> None:
        self.job.shutdown()
        if self._source is not None:
            self._source.close()
            self._source = None
