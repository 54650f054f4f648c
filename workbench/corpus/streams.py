"""Open a corpus file's bytes, gzip or not, and turn OS/gzip failures into one-line user errors.

Every reader needs the same three things: a binary stream of the *content* (decompressed when the
name ends in ``.gz``), the number of bytes consumed *on disk* so far (what a progress bar compares
with the file size), and errors that name the file instead of ``OSError: [Errno 13]``.
"""

from __future__ import annotations

import gzip
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from workbench.errors import WorkbenchError

CHUNK_BYTES = 1 << 20  # ~1 MB: large enough to decode fast, small enough to stay responsive.


def os_error(path: Path, exc: OSError) -> WorkbenchError:
    """A one-line message for an OS failure on ``path``, saying what to do."""
    if isinstance(exc, FileNotFoundError):
        return WorkbenchError(f"{path}: no such file: check the path (was it moved or renamed?)")
    if isinstance(exc, IsADirectoryError):
        return WorkbenchError(f"{path}: is a folder, not a file: add the folder to read the files inside")
    if isinstance(exc, PermissionError):
        return WorkbenchError(f"{path}: cannot read it (permission denied): check the file's permissions")
    reason = exc.strerror or str(exc)
    return WorkbenchError(f"{path}: cannot read it ({reason}): check the file and the disk")


def gzip_error(path: Path, exc: Exception) -> WorkbenchError:
    """A one-line message for corrupt or truncated gzip data."""
    if isinstance(exc, EOFError):
        return WorkbenchError(f"{path}: the gzip data ends early (truncated): re-download or re-compress it")
    return WorkbenchError(f"{path}: not valid gzip data ({exc}): re-compress it or remove the .gz ending")


GZIP_ERRORS = (gzip.BadGzipFile, zlib.error, EOFError)


@contextmanager
def open_content(path: Path, compressed: bool) -> Iterator[tuple[BinaryIO, Callable[[], int]]]:
    """Yield ``(stream, disk_position)``: the content as bytes and a function giving bytes read on disk.

    OS errors while opening become :class:`WorkbenchError`; errors while reading are the caller's
    to translate (with :func:`read_block`), since only it knows the line it was on.
    """
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise os_error(path, exc) from None
    try:
        if compressed:
            stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        else:
            stream = raw
        yield stream, raw.tell
    finally:
        raw.close()


def read_block(stream: BinaryIO, size: int, path: Path) -> bytes:
    """``stream.read(size)`` with OS and gzip failures reported against ``path``."""
    try:
        return stream.read(size)
    except GZIP_ERRORS as exc:
        raise gzip_error(path, exc) from None
    except OSError as exc:
        raise os_error(path, exc) from None


def read_head(path: Path, compressed: bool, size: int) -> bytes:
    """The first ``size`` bytes of the content (decompressed), for sniffing."""
    with open_content(path, compressed) as (stream, _pos):
        parts: list[bytes] = []
        got = 0
        while got < size:
            block = read_block(stream, size - got, path)
            if not block:
                break
            parts.append(block)
            got += len(block)
        return b"".join(parts)
