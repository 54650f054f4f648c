"""Open a corpus file's bytes, compressed or not, and turn OS/gzip failures into one-line user errors.

Every reader needs the same three things: a binary stream of the *content* (decompressed when the
name ends in ``.gz`` or ``.zst``, see :mod:`workbench.corpus.compression`), the number of bytes
consumed *on disk* so far (what a progress bar compares with the file size), and errors that name
the file instead of ``OSError: [Errno 13]``.
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from workbench.corpus.compression import GZIP, compression_of, decompressed
from workbench.corpus.location import CorpusPath, RemotePath, fetched, open_remote
from workbench.errors import WorkbenchError

CHUNK_BYTES = 1 << 20  # ~1 MB: large enough to decode fast, small enough to stay responsive.


def os_error(path: CorpusPath, exc: OSError) -> WorkbenchError:
    """A one-line message for an OS failure on ``path``, saying what to do."""
    if isinstance(exc, FileNotFoundError):
        return WorkbenchError(f"{path}: no such file: check the path (was it moved or renamed?)")
    if isinstance(exc, IsADirectoryError):
        return WorkbenchError(f"{path}: is a folder, not a file: add the folder to read the files inside")
    if isinstance(exc, PermissionError):
        return WorkbenchError(f"{path}: cannot read it (permission denied): check the file's permissions")
    reason = exc.strerror or str(exc)
    return WorkbenchError(f"{path}: cannot read it ({reason}): check the file and the disk")


def gzip_error(path: CorpusPath, exc: Exception) -> WorkbenchError:
    """A one-line message for corrupt or truncated gzip data."""
    if isinstance(exc, EOFError):
        return WorkbenchError(f"{path}: the gzip data ends early (truncated): re-download or re-compress it")
    return WorkbenchError(f"{path}: not valid gzip data ({exc}): re-compress it or remove the .gz ending")


GZIP_ERRORS = (gzip.BadGzipFile, zlib.error, EOFError)


def regular_file_size(path: Path, what: str = "") -> int:
    """Size of ``path`` if it is a regular file; otherwise one line saying what it is instead.

    Checked with ``stat`` *before* any ``open()``: opening a FIFO waits for a writer forever,
    and ``/dev/zero`` or a terminal never ends, so no command may read either.
    """
    label = f"{what} {path}" if what else str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise os_error(path, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise WorkbenchError(f"{label}: is a folder, not a file: give one file")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise WorkbenchError(f"{label}: is {kind}, not a regular file: save the text to a file and give that")
    return st.st_size


def read_regular_file(path: Path, limit: int, what: str = "") -> bytes:
    """All bytes of a regular file of at most ``limit`` bytes, or one line saying why not."""
    label = f"{what} {path}" if what else str(path)
    size = regular_file_size(path, what)
    if size > limit:
        raise WorkbenchError(f"{label}: {size / 1e6:.0f} MB is more than the {limit / 1e6:.0f} MB one "
                             "command reads at once: split the file or use `workbench stats`")
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)  # +1: a file that grew after stat is still caught
    except OSError as exc:
        raise os_error(path, exc) from None
    if len(data) > limit:
        raise WorkbenchError(f"{label}: grew beyond {limit / 1e6:.0f} MB while being read: give a finished file")
    return data


@contextmanager
def open_content(path: CorpusPath, compressed: bool) -> Iterator[tuple[BinaryIO, Callable[[], int]]]:
    """Yield ``(stream, disk_position)``: the content as bytes and a function giving bytes read on disk.

    OS errors while opening become :class:`WorkbenchError`; errors while reading are the caller's
    to translate (with :func:`read_block`), since only it knows the line it was on.
    """
    raw: BinaryIO
    if isinstance(path, RemotePath):
        raw = open_remote(path)
        position: Callable[[], int] = fetched(raw)
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise os_error(path, exc) from None
        position = raw.tell
    try:
        codec = (compression_of(path.name) or GZIP) if compressed else None
        yield decompressed(raw, codec, str(path)), position
    finally:
        raw.close()


def read_block(stream: BinaryIO, size: int, path: CorpusPath) -> bytes:
    """``stream.read(size)`` with OS and gzip failures reported against ``path``."""
    try:
        return stream.read(size)
    except GZIP_ERRORS as exc:
        raise gzip_error(path, exc) from None
    except OSError as exc:
        raise os_error(path, exc) from None


def read_head(path: CorpusPath, compressed: bool, size: int) -> bytes:
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
