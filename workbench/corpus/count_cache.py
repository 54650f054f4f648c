"""A cache of per-file pre-token counts, so training again with another vocabulary size, model or
tie-break starts merging at once instead of re-reading the corpus.

One entry per (file content, reader options, normalizer, pre-tokenizer, sequences): the key hashes
the file's fingerprint (size + SHA-256 of its bytes, :mod:`workbench.corpus.fingerprint`) with every
setting that changes the counts, so an edited file or any other setting is a miss — never a stale
hit. Hashing reads the file once (~1 GB/s), far cheaper than pre-tokenizing it. The counting side
(:func:`workbench.corpus.counts.count_sources`) only puts a table whose file was the same before
and after it was read, so a file changed mid-read never feeds an entry.

An entry is a one-line JSON header (key, rows, tokens and the SHA-256 of the payload) and the
table as ``marshal`` data — loading 170k rows takes milliseconds, where parsing a TSV table takes
a Python loop (``workbench count`` writes the portable TSV; this is a private cache, keyed by
Python version). An entry whose checksum, header, key or row types are off (a flipped bit, a
count turned into a string, a torn write) is a miss: a note says so, the entry is deleted, and
the recount rewrites it. The checksum is also why entries are written without fsync (a temporary
file and a rename, so a reader never sees half an entry): a power loss costs an entry, not the
three disk flushes per entry that made 100,000 small files take hours.

Where: ``$XDG_CACHE_HOME/tokenizer-workbench/counts`` (``~/.cache/...`` when unset) on Linux,
``~/Library/Caches/tokenizer-workbench/counts`` on macOS, ``%LOCALAPPDATA%\\tokenizer-workbench\\
Cache\\counts`` on Windows — the platform's place for data that may be deleted at any time and
is not backed up. Bounded in size: the folder's size is read once per :class:`CountCache` and then
kept up to date by each put; when it passes ``max_bytes``, least recently used entries go until it
is below :data:`TRIM_TO` of the bound (a hit refreshes an entry's time), so a folder scan happens
once per many puts, not on each. Left out: locking between processes (two writers of one key write
the same table; the last rename wins; another process's puts are seen at the next trim) and
sharing between machines.
"""

from __future__ import annotations

import json
import logging
import marshal
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from workbench.core.atomic import write_atomic
from workbench.corpus.counts_table import counts_settings
from workbench.corpus.fingerprint import fingerprint, sha256

log = logging.getLogger(__name__)
_NOTES = logging.getLogger("workbench.notes")  # one `note:` line each on the CLI's stderr

DEFAULT_MAX_BYTES = 2 << 30  # 2 GiB: hundreds of multi-GB corpora's tables
TRIM_TO = 0.9  # a trim goes below the bound by this much, so the next one is many puts away
KEY_VERSION = 1  # bump when counting itself changes, so old entries are never read as current
SUFFIX = ".counts"
MAGIC = b"workbench-count-cache 2\n"  # 2: the header carries the payload's SHA-256
OLD_MAGIC = b"workbench-count-cache 1\n"  # an entry of an older version: a miss, but no damage


class DamagedEntry(Exception):
    """An entry that must not be used; the message says what is wrong with it."""


def encode_entry(key: str, counts: Mapping[str, int]) -> bytes:
    """The bytes of an entry: magic line, JSON header with the payload's checksum, marshal payload."""
    table = dict(counts)
    payload = marshal.dumps(table)
    header = json.dumps({"key": key, "distinct": len(table), "tokens": sum(table.values()),
                         "sha256": sha256(payload).hexdigest()})
    return MAGIC + header.encode("ascii") + b"\n" + payload


def decode_entry(data: bytes, key: str) -> dict[str, int]:
    """The table in an entry; raises :class:`DamagedEntry` when anything is off."""
    if not data.startswith(MAGIC):
        raise DamagedEntry("not an entry of this version")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise DamagedEntry("no header line")
    try:
        header = json.loads(data[len(MAGIC):end])
    except (ValueError, RecursionError):
        raise DamagedEntry("unreadable header") from None
    if not isinstance(header, dict) or header.get("key") != key:
        raise DamagedEntry("the header names another key")
    payload = data[end + 1:]
    if sha256(payload).hexdigest() != header.get("sha256"):
        raise DamagedEntry("checksum mismatch")
    try:
        counts = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        raise DamagedEntry("unreadable table") from None
    # Past the checksum only a deliberately forged entry can be wrong; it must still not crash a run.
    if not isinstance(counts, dict) or len(counts) != header.get("distinct"):
        raise DamagedEntry("the table does not match its header")
    if not (all(type(word) is str for word in counts) and all(type(n) is int and n > 0 for n in counts.values())):
        raise DamagedEntry("a word or a count of the wrong type")
    if sum(counts.values()) != header.get("tokens"):
        raise DamagedEntry("the table does not match its header")
    return counts


def default_cache_dir() -> Path:
    """The platform's user cache folder for counts (see the module docstring)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "tokenizer-workbench" / "Cache" / "counts"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "tokenizer-workbench" / "counts"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "tokenizer-workbench" / "counts"


class CountCache:
    """Per-file count tables in a folder; ``get``/``put`` by a key from :meth:`key`."""

    def __init__(self, folder: str | os.PathLike[str] | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES):
        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.damaged = 0
        self._size: int | None = None  # bytes of entries in the folder; read at the first put

    def key(self, src, *, pretokenizer: str, normalizer: Sequence[str] = (), sequences: str = "lines",
            settings: Mapping | None = None, file_fingerprint: str | None = None) -> str:
        """A hex key naming the file's content and every setting the counts depend on.

        ``settings`` (:func:`counts_settings`'s result) and ``file_fingerprint`` may be given by a
        caller that already has them, so thousands of files are not resolved and hashed twice."""
        parts = {
            "version": KEY_VERSION,
            "python": sys.version_info[:2],  # marshal's format may change between Python versions
            "fingerprint": file_fingerprint or fingerprint(src.path),
            "reader": src.reader_options(),
            "compressed": bool(getattr(src, "compressed", False)),
            "settings": settings if settings is not None else counts_settings(pretokenizer, normalizer, sequences),
        }
        return sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{SUFFIX}"

    def get(self, key: str, *, label: str = "") -> dict[str, int] | None:
        """The cached table, or None (missing or damaged — a damaged entry is removed, with a note
        naming ``label``, the file it counted)."""
        entry = self.path(key)
        try:
            data = entry.read_bytes()
        except OSError:
            self.misses += 1
            return None
        try:
            counts = decode_entry(data, key)
        except DamagedEntry as exc:
            self.misses += 1
            if not data.startswith(OLD_MAGIC):  # an older version's entry is no damage: just counted again
                self.damaged += 1
                _NOTES.warning("count cache: the entry for %s was damaged (%s): counted again and rewritten",
                               label or key, exc)
            log.info("count cache: ignoring %s (%s)", entry, exc)
            self._remove(entry, len(data))
            return None
        try:
            os.utime(entry)  # least recently *used* goes first
        except OSError:
            pass
        self.hits += 1
        return counts

    def put(self, key: str, counts: Mapping[str, int]) -> None:
        """Store a table; a cache that cannot be written (read-only home, full disk) is skipped.

        One write and one rename, no fsync and no folder scan (see the module docstring)."""
        data = encode_entry(key, counts)
        entry = self.path(key)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                replaced = entry.stat().st_size
            except FileNotFoundError:
                replaced = 0
            write_atomic(entry, data, durable=False)
        except OSError as exc:
            log.warning("count cache: cannot write %s (%s)", self.folder, exc)
            return
        if self._size is None:
            self._size = self._scan()[0]  # once per cache object: includes the entry just written
        else:
            self._size += len(data) - replaced
        if self._size > self.max_bytes:
            self.trim()

    def trim(self) -> None:
        """Delete least recently used entries until the folder holds at most ``TRIM_TO × max_bytes``
        (nothing when it is within ``max_bytes``)."""
        size, entries = self._scan()
        if size > self.max_bytes:
            for _mtime, entry_size, entry in sorted(entries):
                if size <= self.max_bytes * TRIM_TO:
                    break
                if self._remove(entry):
                    size -= entry_size
        self._size = size

    def _scan(self) -> tuple[int, list[tuple[float, int, Path]]]:
        """``(total bytes, [(mtime, size, path)])`` of the entries: one pass over the folder."""
        entries: list[tuple[float, int, Path]] = []
        try:
            with os.scandir(self.folder) as found:
                for item in found:
                    if not item.name.endswith(SUFFIX):
                        continue
                    try:
                        st = item.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    entries.append((st.st_mtime, st.st_size, Path(item.path)))
        except OSError:
            pass
        return sum(size for _t, size, _p in entries), entries

    def clear(self) -> None:
        for _mtime, _size, entry in self._scan()[1]:
            self._remove(entry)
        self._size = 0

    def _remove(self, entry: Path, size: int = 0) -> bool:
        try:
            entry.unlink()
        except OSError:
            return False
        if self._size is not None and size:
            self._size = max(self._size - size, 0)
        return True
