"""The merge table as CSV: ``rank,left,right,merged,frequency`` — for spreadsheets and pandas.

Pieces are ``piece_bytes.decode("utf-8", "backslashreplace")`` so a partial UTF-8 character reads
``\\xe4``; frequency is the pair count when it was merged, empty when unknown (imported files).
It is a report, not a tokenizer: it is read back only to verify an export.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Sequence

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.formats.common import read_text

HEADER = ["rank", "left", "right", "merged", "frequency"]


def render_merges_csv(tokenizer: Tokenizer, frequencies: Sequence[int] | None = None) -> bytes:
    """CSV bytes (UTF-8, RFC 4180 ``\\r\\n`` row ends); ``frequencies[rank]`` when given."""
    if frequencies is not None and len(frequencies) != len(tokenizer.merges):
        raise WorkbenchError(
            f"{len(frequencies)} frequencies for {len(tokenizer.merges)} merges: pass one per merge or none"
        )
    text = tokenizer.piece_text
    buffer = io.StringIO()
    # "\r\n" rows, not "\n": the csv module quotes a field only for characters of the row
    # terminator, so with "\n" a piece holding a lone "\r" would be written bare and break the row.
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(HEADER)
    for rank, (left, right, new) in enumerate(tokenizer.merges):
        freq = "" if frequencies is None else str(int(frequencies[rank]))
        writer.writerow([rank, text(left), text(right), text(new), freq])
    return buffer.getvalue().encode("utf-8")


def read_merges_csv(path: Path) -> list[tuple[int, str, str, str, int | None]]:
    """Rows as written; malformed lines are refused by number."""
    path = Path(path)
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    header = next(reader, None)
    if header != HEADER:
        raise WorkbenchError(f"{path.name} line 1: expected the header {','.join(HEADER)}")
    out: list[tuple[int, str, str, str, int | None]] = []
    for row in reader:
        number = reader.line_num  # physical line (a quoted piece may hold a line break)
        if len(row) != 5:
            raise WorkbenchError(f"{path.name} line {number}: expected 5 fields, found {len(row)}")
        try:
            rank = int(row[0])
            freq = int(row[4]) if row[4] != "" else None
        except ValueError:
            raise WorkbenchError(f"{path.name} line {number}: rank and frequency must be whole numbers") from None
        if rank != len(out):
            raise WorkbenchError(f"{path.name} line {number}: rank {rank}, expected {len(out)} (rows in rank order)")
        out.append((rank, row[1], row[2], row[3], freq))
    return out
