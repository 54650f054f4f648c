"""The project file: one SQLite ``.tokproj`` per project, the single source of truth.

Standard library ``sqlite3`` plus :mod:`workbench.core` only — no Qt (whose bundled SQLite must
never open the same file), no numpy. Modules: ``schema`` (identity, version, migrations),
``opening`` (refusing bad files untouched, read-only detection), ``project`` (:class:`ProjectStore`),
``writer`` (batched :class:`RunWriter`, whose SQL runs in ``writer_process``), ``browse`` (the merge
and vocabulary browsers' filtered, sorted pages: the one merge-query layer), ``rows`` (dataclasses).
"""

from workbench.store.project import ProjectStore
from workbench.store.rows import (
                                  RUN_STATUSES,
                                  CorpusRef,
                                  MergeRow,
                                  ReferenceInfo,
                                  RunInfo,
                                  RunStepRow,
                                  StepRow,
)
from workbench.store.schema import APPLICATION_ID, current_version
from workbench.store.writer import RunWriter

__all__ = [
    "APPLICATION_ID", "RUN_STATUSES", "CorpusRef", "MergeRow", "ProjectStore",
    "ReferenceInfo", "RunInfo", "RunStepRow", "RunWriter", "StepRow", "current_version",
]
