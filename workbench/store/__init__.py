"""The project file: one SQLite ``.tokproj`` per project, the single source of truth.

Standard library ``sqlite3`` plus :mod:`workbench.core` only — no Qt (whose bundled SQLite must
never open the same file), no numpy. Modules: ``schema`` (identity, version, migrations),
``opening`` (refusing bad files untouched, read-only detection), ``project`` (:class:`ProjectStore`),
``writer`` (batched :class:`RunWriter`, whose SQL runs in ``writer_process``), ``browse`` (the merge
and vocabulary browsers' filtered, sorted pages: the one merge-query layer), ``rows`` (dataclasses).

The names below load on first use (PEP 562): the run writer's process imports this package for
``writer_process``, which needs none of them (measured: 0.1 s and 12 MB less per training run).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.store.project import ProjectStore
    from workbench.store.rows import RUN_STATUSES, CorpusRef, MergeRow, ReferenceInfo, RunInfo, RunStepRow, StepRow
    from workbench.store.schema import APPLICATION_ID, current_version
    from workbench.store.writer import RunWriter

_SOURCES = {
    "ProjectStore": "project", "RunWriter": "writer", "APPLICATION_ID": "schema", "current_version": "schema",
    "RUN_STATUSES": "rows", "CorpusRef": "rows", "MergeRow": "rows", "ReferenceInfo": "rows", "RunInfo": "rows",
    "RunStepRow": "rows", "StepRow": "rows",
}

__all__ = [
    "APPLICATION_ID", "RUN_STATUSES", "CorpusRef", "MergeRow", "ProjectStore",
    "ReferenceInfo", "RunInfo", "RunStepRow", "RunWriter", "StepRow", "current_version",
]


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
