"""What to do with a bad record (a JSONL line that is not JSON, a CSV row without the text column, a
count line without a number), and the log of the records skipped.

``fail`` (the default) stops at the first bad record with its ``file:line`` — a run must not train
on less than was asked for without saying so. ``skip`` keeps reading and *counts* every skipped
record, keeping the first few positions with their full reason, so the CLI and the window can say
exactly what was left out. Only records are ever skipped: a file that is binary, not decodable as a
whole, or missing still fails, whatever the policy.

Left out: reporting (the CLI prints notes, the window shows the log) and any repair of the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

POLICIES = ("fail", "skip")
DEFAULT_POLICY = "fail"
KEPT_POSITIONS = 5  # the first few are what a user fixes first; the count says how many in all


@dataclass
class SkippedRecords:
    """Records a reader skipped: how many, and the first :data:`KEPT_POSITIONS` messages in full.

    Each message is the reader's own one-line error (``path:line: reason: what to do``), never cut.
    Mutable on purpose: the reader appends while streaming, the caller reads it when done.
    """

    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.first) < KEPT_POSITIONS:
            self.first.append(message)

    def reset(self) -> None:
        self.count = 0
        self.first.clear()

    def extend(self, other: SkippedRecords) -> None:
        self.count += other.count
        self.first.extend(other.first[: KEPT_POSITIONS - len(self.first)])


def summary(count: int, files: int = 1) -> str:
    """One line for the count: ``skipped 3 bad records in 2 files (--on-bad-record skip)``."""
    where = f" in {files} files" if files > 1 else ""
    return f"skipped {count:,} bad record{'s' if count != 1 else ''}{where} (on-bad-record skip); first:"


def collect(logs: list[SkippedRecords]) -> SkippedRecords:
    """The logs of several sources as one (counts added, first positions in file order)."""
    total = SkippedRecords()
    for one in logs:
        total.extend(one)
    return total

