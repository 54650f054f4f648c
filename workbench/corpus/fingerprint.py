"""Recognise a corpus file again: size plus SHA-256 of its bytes.

The project file stores this next to each corpus path, so re-opening a project can tell the user
"this file changed since run 3 was trained" instead of silently training on different text. The
size comes first so a changed file is usually spotted by :func:`fingerprint_matches` without
hashing it.

A fingerprint taken *before* a file is read says nothing about what the reader then saw: a file
truncated mid-read and restored afterwards has its old fingerprint again, but the counts hold a
tenth of it. :func:`file_state` before and :func:`check_unchanged` after a read close that gap:
the file's status (size, inode, modification and change times in nanoseconds) must be the same
at both ends and its bytes must hash the same. The change time cannot be set back by anyone
(``utime`` moves it forward), so a change undone before the second hash is still seen. What is
left: a change within one tick of the file system's clock *and* undone within it, on a file
system whose change times are that coarse.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.corpus.location import RemotePath, is_url, remote_fingerprint
from workbench.corpus.streams import CHUNK_BYTES, os_error
from workbench.errors import WorkbenchError

#: Up to this many bytes, SHA-256 is computed by CPython's own ``_sha256`` module instead of
#: :mod:`hashlib`: hashlib loads OpenSSL (libcrypto), 3.6 MB of resident memory for the process's
#: life, while the builtin is ~5× slower (3.2 ms per MB against 0.6 on a CPU with SHA
#: instructions). For a small corpus (hashed twice: before and after it is read) that is at most
#: ~40 ms against a tenth of a ~40 MB training process; past it, OpenSSL's speed wins. The
#: digests are the same (count cache keys and stored fingerprints depend on them).
BUILTIN_SHA256_BYTES = 8 << 20


def sha256(data: bytes = b"", *, size: int | None = None) -> Any:
    """A SHA-256 hash object (``update``, ``hexdigest``) for ``size`` bytes to come (default: ``data``'s
    length): the builtin ``_sha256`` for small inputs unless :mod:`hashlib` is loaded already (see
    :data:`BUILTIN_SHA256_BYTES`), else hashlib's."""
    if (len(data) if size is None else size) <= BUILTIN_SHA256_BYTES and "hashlib" not in sys.modules:
        from importlib import import_module

        for name in ("_sha256", "_sha2"):  # CPython's builtin (3.11: _sha256; 3.12+: _sha2); absent elsewhere
            try:
                return import_module(name).sha256(data)
            except ImportError:
                pass
    import hashlib

    return hashlib.sha256(data)


def fingerprint(path: str | os.PathLike[str] | RemotePath) -> str:
    """``"<size>:sha256:<hex>"`` of the file's bytes on disk (compressed bytes for ``.gz``); for a
    location (``s3://…``), ``"<size>:etag:<etag>"`` or the modification time from the store."""
    remote = _remote(path)
    if remote is not None:
        return remote_fingerprint(remote)
    assert not isinstance(path, RemotePath)
    p = Path(path)
    if p.is_dir():
        raise WorkbenchError(f"{p}: is a folder, not a file: fingerprint the files inside")
    return _hashed(p)[0]


def fingerprint_matches(path: str | os.PathLike[str] | RemotePath, expected: str) -> bool:
    """True when the file still has the fingerprint ``expected``; False if changed or gone."""
    remote = _remote(path)
    if remote is not None:
        try:
            return remote_fingerprint(remote, fresh=True) == expected
        except WorkbenchError:
            return False
    assert not isinstance(path, RemotePath)
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


@dataclass(frozen=True)
class FileState:
    """A file's fingerprint and the status it had while it was hashed (see the module docstring)."""

    fingerprint: str
    size: int
    mtime: float
    status: tuple[object, ...]  # size, device, inode, mtime_ns, ctime_ns (a location: its fingerprint)


def _hashed(path: str | os.PathLike[str]) -> tuple[str, os.stat_result]:
    """The fingerprint of a file and its status, the same before and after hashing (read through one
    descriptor: no second path lookup); a file that changes while it is hashed is refused."""
    try:  # O_NONBLOCK: a FIFO put in a file's place must not block the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise os_error(Path(path), exc) from None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise WorkbenchError(f"{path}: not a regular file: give a file")
        digest = sha256(size=before.st_size)
        size = 0
        while block := os.read(fd, CHUNK_BYTES):
            digest.update(block)
            size += len(block)
        after = os.fstat(fd)
    except OSError as exc:
        raise os_error(Path(path), exc) from None
    finally:
        os.close(fd)
    if _key(before) != _key(after) or size != after.st_size:
        raise changed_error(Path(path), before.st_size, after.st_size)
    return f"{size}:sha256:{digest.hexdigest()}", after


def _remote(path: object) -> RemotePath | None:
    """``path`` as a location when it is one (a RemotePath, or a URL string), else None."""
    if isinstance(path, RemotePath):
        return path
    return RemotePath(path) if isinstance(path, str) and is_url(path) else None


def _key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def file_state(path: str | os.PathLike[str] | RemotePath) -> FileState:
    """The fingerprint of ``path`` with its status, taken before a read; a file that changes while
    it is hashed is refused (see :func:`changed_error`). A location's state is the store's metadata,
    fetched afresh (not from a listing cached earlier)."""
    remote = _remote(path)
    if remote is not None:
        digest = remote_fingerprint(remote, fresh=True)
        size = int(digest.split(":", 1)[0]) if digest.split(":", 1)[0].isdigit() else 0
        return FileState(digest, size, 0.0, (digest,))
    assert not isinstance(path, RemotePath)
    digest, st = _hashed(path)
    return FileState(digest, st.st_size, st.st_mtime, _key(st))


def check_unchanged(path: str | os.PathLike[str] | RemotePath, before: FileState) -> None:
    """Raise :func:`changed_error` unless ``path`` is as :func:`file_state` found it before the read."""
    remote = _remote(path)
    if remote is not None:
        now = file_state(remote)
        if now.fingerprint != before.fingerprint:
            raise changed_error(remote, before.size, now.size)
        return
    assert not isinstance(path, RemotePath)
    try:
        digest, st = _hashed(path)
    except WorkbenchError:  # gone, unreadable, or changing right now: all mean "changed"
        raise changed_error(Path(path), before.size, _size_now(path)) from None
    if _key(st) != before.status or digest != before.fingerprint:
        raise changed_error(Path(path), before.size, st.st_size)


def _size_now(path: str | os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def changed_error(path: object, size_before: int, size_after: int) -> WorkbenchError:
    """One line for a file written to while it was read: nothing read from it may be used."""
    sizes = f"{size_before:,} → {size_after:,} bytes" if size_before != size_after else f"{size_after:,} bytes"
    return WorkbenchError(f"{path}: the file changed while it was read ({sizes}): nothing read from it was "
                          "used or cached; run again once nothing is writing to it")
