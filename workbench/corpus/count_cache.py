"""A cache of per-file pre-token counts, so training again with another vocabulary size, model or
tie-break starts merging at once instead of re-reading the corpus.

One entry per (file content, reader options, normalizer, pre-tokenizer, sequences): the key hashes
the file's fingerprint (size + SHA-256 of its bytes, :mod:`workbench.corpus.fingerprint`) with every
setting that changes the counts, so an edited file or any other setting is a miss — never a stale
hit. Hashing reads the file once (~1 GB/s), far cheaper than pre-tokenizing it. Entries are counts
tables (:mod:`workbench.corpus.counts_table`), written atomically; one that fails to read, or
whose header disagrees with its rows, is ignored, deleted and counted again.

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
import os
import sys
from pathlib import Path
from typing import Mapping, Sequence

from workbench.corpus.fingerprint import fingerprint
from workbench.errors import WorkbenchError

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 2 << 30  # 2 GiB: hundreds of multi-GB corpora's tables
KEY_VERSION = 1  # bump when counting itself changes, so old entries are never read as current
SUFFIX = ".wordcounts.tsv"


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
        from workbench.corpus.counts_table import counts_settings

        parts = {
            "version": KEY_VERSION,
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
        from workbench.corpus.counts_table import read_counts_table

        entry = self.path(key)
        if not entry.exists():
            self.misses += 1
            return None
        try:
            settings, counts = read_counts_table(entry)
            if settings is None or settings.get("key") != key:
                raise WorkbenchError(f"{entry}: not the entry for this key")
        except (WorkbenchError, OSError, ValueError, UnicodeError) as exc:
            log.warning("count cache: ignoring a corrupt entry (%s)", exc)
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
        from workbench.corpus.counts_table import atomic_write_lines, render_header, render_rows

        # The key in the header binds the entry to it: a renamed or swapped file is a miss.
        header = render_header(counts, {}, extra={"key": key})
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_lines(self.path(key), [header], render_rows(counts))
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
