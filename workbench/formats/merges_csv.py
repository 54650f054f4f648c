"""The merge table as CSV: ``rank,left,right,merged,frequency`` — for spreadsheets and pandas.

Pieces are ``piece_bytes.decode("utf-8", "backslashreplace")`` (:func:`cell`) so a partial UTF-8
character reads ``\\xe4``; frequency is the pair count when it was merged, empty when unknown
(imported files). The file is written by the one CSV writer (:func:`workbench.formats.tables.csv_text`).
It is a report, not a tokenizer: it is read back only to verify an export.

Why this cell rule differs from the display renderer (:func:`workbench.core.display.piece_text`):
PRODUCT.md fixes it as a contract that scripts parse, and it is the plain Python one-liner a
reader can reproduce — whole characters as they are (a space, a NUL, a tab stay themselves; the
CSV quoting carries line breaks), only invalid bytes escaped. The display renderer instead makes
invisible characters visible for people, and may change with what people need to see.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Sequence

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.formats.common import read_text
from workbench.formats.tables import csv_text

HEADER = ["rank", "left", "right", "merged", "frequency"]


def cell(piece: bytes) -> str:
    """A piece as this format writes it (the contract in PRODUCT.md)."""
    return bytes(piece).decode("utf-8", "backslashreplace")


def render_merges_csv(tokenizer: Tokenizer, frequencies: Sequence[int] | None = None) -> bytes:
    """CSV bytes (UTF-8, RFC 4180 ``\\r\\n`` row ends); ``frequencies[rank]`` when given."""
    if frequencies is not None and len(frequencies) != len(tokenizer.merges):
        raise WorkbenchError(
            f"{len(frequencies)} frequencies for {len(tokenizer.merges)} merges: pass one per merge or none"
        )
    vocab = tokenizer.vocab
    rows = ((rank, cell(vocab[left]), cell(vocab[right]), cell(vocab[new]),
             "" if frequencies is None else str(int(frequencies[rank])))
            for rank, (left, right, new) in enumerate(tokenizer.merges))
    return csv_text(HEADER, rows).encode("utf-8")


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
