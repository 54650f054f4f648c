"""Sums over the Corpus tab's files, kept up to date one file at a time.

The tab redraws its totals line, its notice and its progress bar every 100 ms while files are read.
Summing 100,000 files for each redraw stalled the window ~0.9 s each time; the table model now
adds a file to these sums when it is listed or its statistics arrive, and takes it out when it is
removed, so a redraw reads them as they are.

What it leaves out: which file skipped which record (the messages are looked up in the files
themselves, only when there are some), and the reading progress of a scan (the panel keeps that).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from workbench.corpus import CorpusStats


@dataclass
class CorpusTotals:
    files: int = 0
    size: int = 0            # bytes of every listed file
    read: int = 0            # files with statistics
    incomplete: int = 0      # of those, read only in part (a cancelled scan)
    chars: int = 0
    lines: int = 0           # text lines of the files of lines
    records: int = 0         # records of the files of records
    line_files: int = 0      # read files counted in lines
    record_files: int = 0    # read files counted in records
    skipped: int = 0         # bad records skipped
    scripts: Counter[str] = field(default_factory=Counter)

    def count_file(self, size: int, sign: int = 1) -> None:
        self.files += sign
        self.size += sign * size

    def count_stats(self, st: CorpusStats, sign: int = 1) -> None:
        """Add (``sign`` 1) or take out (-1) one file's statistics."""
        self.read += sign
        self.incomplete += sign * (not st.complete)
        self.chars += sign * st.chars
        if st.records is None:
            self.lines += sign * st.lines
            self.line_files += sign
        else:
            self.records += sign * st.records
            self.record_files += sign
        self.skipped += sign * st.skipped
        if sign > 0:
            self.scripts.update(st.scripts)
        else:
            self.scripts.subtract(st.scripts)
            for script in [k for k, v in self.scripts.items() if v <= 0]:
                del self.scripts[script]

    def partial(self) -> bool:
        """Some file is unread or read only in part: the sums are lower bounds."""
        return self.read < self.files or self.incomplete > 0

    def complete_chars(self) -> int | None:
        """Characters of all the files, None while one is unread or read only in part."""
        return None if self.partial() else self.chars
