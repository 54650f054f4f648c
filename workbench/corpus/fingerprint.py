"""Recognise a corpus file again: size plus SHA-256 of its bytes.

The project file stores this next to each corpus path, so re-opening a project can tell the user
"this file changed since run 3 was trained" instead of silently training on different text. The
size comes first so a changed file is usually spotted by :func:`fingerprint_matches` without
hashing it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from workbench.corpus.streams import CHUNK_BYTES, os_error
from workbench.errors import WorkbenchError


def fingerprint(path: str | os.PathLike[str]) -> str:
    """``"<size>:sha256:<hex>"`` of the file's bytes on disk (compressed bytes for ``.gz``)."""
    p = Path(path)
    if p.is_dir():
        raise WorkbenchError(f"{p}: is a folder, not a file: fingerprint the files inside")
    digest = hashlib.sha256()
    size = 0
    try:
        with open(p, "rb") as f:
            while block := f.read(CHUNK_BYTES):
                digest.update(block)
                size += len(block)
    except OSError as exc:
        raise os_error(p, exc) from None
    return f"{size}:sha256:{digest.hexdigest()}"


def fingerprint_matches(path: str | os.PathLike[str], expected: str) -> bool:
    """True when the file still has the fingerprint ``expected``; False if changed or gone."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError:
        return False
    if expected.split(":", 1)[0] != str(size):
        return False
    try:
        return fingerprint(p) == expected
    except WorkbenchError:
        return False
