"""A cache of per-file pre-token counts, so training again with another vocabulary size, model or
tie-break starts merging at once instead of re-reading the corpus.

One entry per (file content, reader options, normalizer, pre-tokenizer, sequences): the key hashes
the file's fingerprint (size + SHA-256 of its bytes, :mod:`workbench.corpus.fingerprint`) with every
setting that changes the counts, so an edited file or any other setting is a miss — never a stale
hit. Hashing reads the file once (~1 GB/s), far cheaper than pre-tokenizing it. An entry is a
one-line JSON header (key, rows, tokens) and the table as ``marshal`` data — loading 170k rows
takes milliseconds, where parsing a TSV table takes a Python loop (``workbench count`` writes the
portable TSV; this is a private cache, keyed by Python version). Written atomically; an entry that
fails to load, or whose header disagrees with its rows or key, is ignored, deleted and recounted.

Where: ``$XDG_CACHE_HOME/tokenizer-workbench/counts`` (``~/.cache/...`` when unset) on Linux,
``~/Library/Caches/tokenizer-workbench/counts`` on macOS, ``%LOCALAPPDATA%\\tokenizer-workbench\\
Cache\\counts`` on Windows — the platform's place for data that may be deleted at any time and
is not backed up. Bounded in size: after a write, least recently used entries go until the folder
fits ``max_bytes`` (a hit refreshes an entry's time). Left out: locking between processes (two
writers of one key write the same table; the last rename wins) and sharing between machines.
"""

from __future__ import annotations

import hashlib
import json
import logging
import marshal
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from workbench.core.atomic import write_atomic
from workbench.corpus.counts_table import counts_settings
from workbench.corpus.fingerprint import fingerprint

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 2 << 30  # 2 GiB: hundreds of multi-GB corpora's tables
KEY_VERSION = 1  # bump when counting itself changes, so old entries are never read as current
SUFFIX = ".counts"
MAGIC = b"workbench-count-cache 1\n"


def _decode_entry(data: bytes, key: str) -> dict[str, int] | None:
    """The table in an entry, or None when anything is off (truncated, foreign, another key)."""
    if not data.startswith(MAGIC):
        return None
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end])
        counts = marshal.loads(data[end + 1:])
    except (ValueError, EOFError, TypeError):
        return None
    if (not isinstance(header, dict) or header.get("key") != key or not isinstance(counts, dict)
            or len(counts) != header.get("distinct") or sum(counts.values()) != header.get("tokens")):
        return None
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

    def key(self, src, *, pretokenizer: str, normalizer: Sequence[str] = (), sequences: str = "lines") -> str:
        """A hex key naming the file's content and every setting the counts depend on."""
        parts = {
            "version": KEY_VERSION,
            "python": sys.version_info[:2],  # marshal's format may change between Python versions
            "fingerprint": fingerprint(src.path),
            "reader": src.reader_options(),
            "compressed": bool(getattr(src, "compressed", False)),
            "settings": counts_settings(pretokenizer, normalizer, sequences),
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{SUFFIX}"

    def get(self, key: str) -> dict[str, int] | None:
        """The cached table, or None (missing or unreadable — an unreadable entry is removed)."""
        entry = self.path(key)
        try:
            data = entry.read_bytes()
        except OSError:
            self.misses += 1
            return None
        counts = _decode_entry(data, key)
        if counts is None:
            log.warning("count cache: ignoring a corrupt entry %s", entry)
            self._remove(entry)
            self.misses += 1
            return None
        try:
            os.utime(entry)  # least recently *used* goes first
        except OSError:
            pass
        self.hits += 1
        return counts

    def put(self, key: str, counts: Mapping[str, int]) -> None:
        """Store a table; a cache that cannot be written (read-only home, full disk) is skipped."""
        header = json.dumps({"key": key, "distinct": len(counts), "tokens": sum(counts.values())})
        data = MAGIC + header.encode("ascii") + b"\n" + marshal.dumps(dict(counts))
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path(key), data)
        except OSError as exc:
            log.warning("count cache: cannot write %s (%s)", self.folder, exc)
            return
        self.trim()

    def trim(self) -> None:
        """Delete least recently used entries until the folder holds at most ``max_bytes``."""
        try:
            entries = [(p.stat().st_mtime, p.stat().st_size, p) for p in self.folder.glob(f"*{SUFFIX}")]
        except OSError:
            return
        size = sum(s for _t, s, _p in entries)
        for _mtime, entry_size, entry in sorted(entries, key=lambda e: e[0]):
            if size <= self.max_bytes:
                break
            self._remove(entry)
            size -= entry_size

    def clear(self) -> None:
        for entry in self.folder.glob(f"*{SUFFIX}"):
            self._remove(entry)

    @staticmethod
    def _remove(entry: Path) -> None:
        try:
            entry.unlink()
        except OSError:
            pass
