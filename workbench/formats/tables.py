"""CSV tables of merges, vocabularies and diffs, as the merge browser exports them. Pieces are
written as text by :func:`workbench.core.display.csv_piece` with the ``hex`` column beside them.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from workbench.core.display import csv_piece, piece_chars, piece_hex
from workbench.errors import WorkbenchError

MERGE_CSV_HEADER = ("rank", "left", "right", "merged", "frequency", "bytes", "chars", "token_id",
                    "merged_hex")


VOCAB_CSV_HEADER = ("id", "piece", "hex", "kind", "frequency", "never_used")


def _write_csv(path: str | Path | None, header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """Write (or, with ``path=None``, return) CSV text; files are UTF-8 with ``\\n`` line ends."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    text = buffer.getvalue()
    if path is not None:
        target = Path(path)
        tmp = target.with_name(f".{target.name}.partial")
        try:
            tmp.write_text(text, encoding="utf-8", newline="")
            tmp.replace(target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise WorkbenchError(f"Cannot write {target} ({exc.strerror or exc}); choose a writable folder.") from None
    return text


def merge_csv_rows(rows: Iterable) -> Iterator[tuple]:
    """CSV rows for merge entries (anything with rank, left/right/merged pieces, frequency, new_id)."""
    for r in rows:
        yield (r.rank, csv_piece(r.left_piece), csv_piece(r.right_piece), csv_piece(r.piece),
               "" if r.frequency is None else r.frequency, len(r.piece or b""),
               piece_chars(r.piece or b""), r.new_id, piece_hex(r.piece or b""))


def write_merges_csv(path: str | Path | None, rows: Iterable) -> str:
    """``rank,left,right,merged,frequency`` (the merges-csv export's columns) plus lengths, id, hex."""
    return _write_csv(path, MERGE_CSV_HEADER, merge_csv_rows(rows))


def write_vocab_csv(path: str | Path | None, rows: Iterable) -> str:
    """Rows with id, piece, kind, frequency (None = not counted) and never_used (None = unknown)."""
    def gen():
        for r in rows:
            yield (r.id, csv_piece(r.piece), piece_hex(r.piece), r.kind,
                   "" if r.frequency is None else r.frequency,
                   "" if r.never_used is None else int(bool(r.never_used)))
    return _write_csv(path, VOCAB_CSV_HEADER, gen())


def write_table_csv(path: str | Path | None, header: Sequence[str], rows: Iterable[Sequence]) -> str:
    return _write_csv(path, header, rows)
