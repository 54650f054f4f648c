"""What one training run is made of, as plain data shared by the window and the CLI.

Left out: validation and training itself (:mod:`workbench.tasks.train`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CorpusFile:
    """A corpus file with the reader options it was validated with."""

    path: str
    kind: str = "text"
    field: str | None = None
    column: str | int | None = None
    encoding: str | None = None
