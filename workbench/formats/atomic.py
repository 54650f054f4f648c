"""Never-clobber, all-or-nothing file output for exports.

An export is first written into a hidden staging folder *beside* its destination (same file
system, so the final ``os.replace`` is an atomic rename), fsynced, verified there, and only then
moved into place. Existing outputs are refused unless the caller forces a replacement; a forced
replacement keeps the old file until the verified new one takes its place, so a failed or killed
export never leaves a half-written or unverified file under the final name.

What this leaves out: a multi-file output (the GPT-2 folder) is replaced one file at a time; each
file is atomic, the pair is not (a crash between the two renames leaves the new vocab.json with
the old merges.txt — the staging folder is removed on every path we control).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

from workbench.errors import WorkbenchError


def refuse_existing(paths: Iterable[Path], force: bool) -> None:
    """Raise unless none of ``paths`` exists or ``force`` allows replacing them."""
    if force:
        for path in paths:
            if path.is_dir():
                raise WorkbenchError(f"{path} is a folder, not a file: choose another output path")
        return
    for path in paths:
        if path.exists():
            raise WorkbenchError(f"{path} already exists: choose another output path or pass --force to replace it")


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` and fsync it, so a rename after this never exposes a short file."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not supported on this platform (Windows): the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Staging:
    """A hidden temporary folder next to the outputs; removed on exit whatever happens.

    ``stage(name, data)`` writes a file under its final *name* (some readers care about names,
    e.g. the tiktoken sidecar ``X.tiktoken.json``); ``commit(mapping)`` renames staged files onto
    their destinations.
    """

    def __init__(self, parent: Path) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix=".workbench-export-", dir=parent))

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def stage(self, name: str, data: bytes) -> Path:
        path = self.folder / name
        write_synced(path, data)
        return path

    def commit(self, moves: dict[Path, Path]) -> None:
        """``staged path → final path``, each an atomic ``os.replace``."""
        folders = set()
        for staged, final in moves.items():
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, final)
            folders.add(final.parent)
        for folder in folders:
            _fsync_dir(folder)
