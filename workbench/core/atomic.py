"""The one atomic writer: every file the workbench writes appears whole or not at all.

Three shapes, one rule (build beside the destination on the same file system, fsync, rename):

* :func:`write_atomic` — one file from bytes (the merge browser's CSV tables, the count cache).
  ``durable=False`` skips the fsyncs (still a temporary file and a rename, so no reader sees half a
  file): for caches whose entries carry their own checksum, where a power loss may cost an entry
  (read as a miss) but must not cost three disk flushes per entry.

It lives in ``core`` (stdlib only) so that every layer — formats' exports, the store's Save As,
corpus's counts tables and cache — uses this one writer.
* :func:`replacing` — one file that something else fills, such as SQLite's backup API writing
  "Save Project As": the caller gets a temporary path, which becomes the destination on success.
* :class:`Staging` — an export of one or more files: a hidden folder beside the outputs receives
  them, the caller verifies them there, then :meth:`Staging.commit` renames each file into place,
  or :meth:`Staging.commit_folder` renames the whole folder into place (the GPT-2 pair: a failed
  export leaves no empty folder behind). Replacing an existing folder is an atomic exchange where
  Linux offers ``renameat2(RENAME_EXCHANGE)``; files in the old folder that the export does not
  write are hard-linked (or copied) into the new one first, so nothing of the user's is lost.

Every path removes its temporary files and folders, including folders it had to create for the
output, on any exception — :func:`terminate_raises` turns SIGTERM into one, so ``workbench export``
killed mid-write leaves nothing behind. Existing outputs are refused unless the caller forces.

Left out: SIGKILL and power loss can still strand a hidden ``.workbench-…`` temporary (never a
half-written file under the final name); without ``renameat2`` a forced folder replacement takes
two renames, and a crash between them leaves the old folder under a hidden name beside it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from workbench.errors import ConfigError, WorkbenchError

TEMP_PREFIX = ".workbench-"
# Test hook: when set, a staged export creates this file and waits (up to a minute) before it
# renames anything into place, so a test can deliver SIGTERM at a known point mid-export.
PAUSE_ENV = "WORKBENCH_TEST_EXPORT_PAUSE"


def refuse_existing(paths: Iterable[Path], force: bool) -> None:
    """Raise unless none of ``paths`` exists or ``force`` allows replacing them.

    An existing output is a :class:`ConfigError` about the ``force`` setting: the caller words how
    to allow replacing (the CLI names its flag, the window its check box).
    """
    if force:
        for path in paths:
            if path.is_dir():
                raise WorkbenchError(f"{path} is a folder, not a file: choose another output path")
        return
    for path in paths:
        if path.exists():
            raise ConfigError("force", f"{path} already exists: choose another output path")


def write_synced(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to a new file and fsync it, so a rename after this never exposes a short file."""
    with open(path, "xb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())


def write_atomic(path: str | Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` all at once (the folder must exist); ``durable=False``: see
    the module docstring."""
    with replacing(Path(path), durable=durable) as tmp:
        write_synced(tmp, data, durable=False)  # replacing() fsyncs the finished file once


@contextlib.contextmanager
def replacing(dest: Path, *, side_suffixes: Sequence[str] = (), durable: bool = True) -> Iterator[Path]:
    """A fresh temporary path beside ``dest`` for the caller to fill; on success it is fsynced and
    renamed onto ``dest``, on any exception it is removed (with ``tmp + suffix`` side files such as
    SQLite's ``-journal``). ``durable=False`` renames without the two fsyncs."""
    dest = Path(dest)
    tmp = dest.with_name(_temp_name(dest.name) + ".partial")
    try:
        yield tmp
        if durable:
            _fsync_file(tmp)
        os.replace(tmp, dest)
    except BaseException as exc:
        for suffix in ("", *side_suffixes):
            with contextlib.suppress(OSError):  # never there (ENOENT), or its folder is not one (ENOTDIR)
                Path(f"{tmp}{suffix}").unlink()
        if isinstance(exc, OSError) and str(exc.filename) == str(tmp):
            raise _naming(exc, dest) from None  # the user asked for dest; the temporary is ours
        raise
    if durable:
        _fsync_dir(dest.parent)


class Staging:
    """A hidden temporary folder beside the outputs; removed on exit whatever happens.

    ``stage(name, data)`` writes a file under its final *name* (some readers care about names,
    e.g. the tiktoken sidecar ``X.tiktoken.json``); ``commit`` renames staged files onto their
    destinations; ``commit_folder`` makes the staging folder itself the destination folder.
    Folders created to hold the outputs are removed again unless a commit happened.
    """

    def __init__(self, parent: Path, *, target: Path | None = None) -> None:
        """``target``: the output the user named, for error lines (else ``parent``)."""
        self.created = _make_folders(Path(parent))
        self.target = Path(target) if target is not None else Path(parent)
        try:
            self.folder = Path(parent) / _temp_name("export")
            os.mkdir(self.folder)  # not mkdtemp: its 0700 mode would stick to a committed folder
        except OSError as exc:  # a read-only folder, a file where a folder should be: name the output
            _remove_empty(self.created)
            raise _naming(exc, self.target) from None
        except BaseException:
            _remove_empty(self.created)
            raise
        self.committed = False

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if not self.committed:
            _remove_empty(self.created)

    def stage(self, name: str, data: bytes) -> Path:
        path = self.folder / name
        try:
            write_synced(path, data)
        except OSError as exc:  # full disk, quota, file-size limit: name the output, not the temporary
            raise WorkbenchError(f"cannot write {name} in {self.folder.parent} ({exc.strerror or exc}): "
                                 "free some space or choose another folder; nothing was written") from None
        return path

    def commit(self, moves: dict[Path, Path]) -> None:
        """``staged path → final path``, each an atomic ``os.replace``."""
        _pause_for_tests()
        folders = set()
        for staged, final in moves.items():
            try:
                os.replace(staged, final)
            except OSError as exc:
                raise _naming(exc, final) from None
            self.committed = True
            folders.add(final.parent)
        for folder in folders:
            _fsync_dir(folder)

    def commit_folder(self, final: Path) -> None:
        """Make the staged files the folder ``final``: a rename if it is new, an exchange if not."""
        _pause_for_tests()
        _fsync_dir(self.folder)
        if not final.exists():
            os.rename(self.folder, final)
        else:
            _keep_other_entries(final, self.folder)
            _swap_folders(self.folder, final)  # the old folder now sits at self.folder
        self.committed = True
        _fsync_dir(final.parent)


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """For its duration, SIGTERM raises KeyboardInterrupt in the main thread, so the ``finally``
    and ``__exit__`` of the writers above run and remove their temporaries. Elsewhere a no-op
    (Python only delivers signals to the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum, _frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second TERM must not cut the cleanup short
        raise KeyboardInterrupt("terminated")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ---- helpers -----------------------------------------------------------------------------------
def _naming(exc: OSError, path: Path) -> OSError:
    """The same failure, naming the path the user gave instead of one of our temporaries."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def _temp_name(label: str) -> str:
    # A fresh name opened with "x"/mkdir, so the umask decides the mode (mkstemp would give 0600).
    return f"{TEMP_PREFIX}{label}.{os.getpid()}.{os.urandom(4).hex()}"


def _make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and missing parents; returns those created, deepest first."""
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    created: list[Path] = []
    try:
        for path in reversed(missing):
            os.mkdir(path)
            created.insert(0, path)
    except BaseException:
        _remove_empty(created)
        raise
    return created


def _remove_empty(folders: Sequence[Path]) -> None:
    for path in folders:  # deepest first
        try:
            path.rmdir()
        except OSError:  # not empty (someone else wrote there) or already gone: leave it
            return


def _keep_other_entries(old: Path, new: Path) -> None:
    """Hard-link (or copy) what ``old`` holds and ``new`` does not, so a swap loses nothing."""
    for entry in old.iterdir():
        target = new / entry.name
        if target.exists() or target.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(entry), str(target))


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


def _swap_folders(new: Path, final: Path) -> None:
    """Put ``new`` at ``final`` and the old ``final`` at ``new``."""
    if _exchange(new, final):
        return
    aside = final.with_name(_temp_name("old"))
    os.rename(final, aside)
    try:
        os.rename(new, final)
    except BaseException:
        os.rename(aside, final)
        raise
    os.rename(aside, new)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with Linux's ``renameat2(RENAME_EXCHANGE)``; False if unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here: a training run never swaps folders (ctypes: 0.4 MB of its memory)

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # libc without renameat2 (glibc < 2.28, musl)
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # kernel or file system says no
        return False
    raise OSError(code, os.strerror(code), str(b))


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


def _pause_for_tests() -> None:
    marker = os.environ.get(PAUSE_ENV)
    if not marker:
        return
    Path(marker).touch()
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        time.sleep(0.05)
