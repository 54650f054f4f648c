"""The one CSV writer, and the merge browser's tables (merges, vocabulary, diffs) written with it.

:func:`csv_text` is RFC 4180: rows end in ``\\r\\n`` and a field holding a comma, a quote, ``\\r`` or
``\\n`` is quoted. The ``\\r\\n`` terminator is what makes that true: Python's ``csv`` module quotes a
field for the characters of *its* line terminator only, so with ``lineterminator="\\n"`` a lone
``\\r`` (a real byte-level token) is written bare and a reader sees a row break in the middle of
a merge. ``workbench export --format merges-csv`` (:mod:`workbench.formats.merges_csv`) goes through
the same writer.

The browser's tables are for people: a piece cell holds exactly what the browser's cell shows
(:func:`workbench.core.display.piece_text` with ``visible_space``), and the exact bytes sit in a
``hex`` column beside it. Left out: the machine-read cell rule of the merges-csv export, which
that module owns.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from workbench.core.atomic import write_atomic
from workbench.core.display import piece_chars, piece_hex, piece_text
from workbench.errors import WorkbenchError

MERGE_CSV_HEADER = ("rank", "left", "right", "merged", "frequency", "bytes", "chars", "token_id",
                    "merged_hex")
VOCAB_CSV_HEADER = ("id", "piece", "hex", "kind", "frequency", "never_used")


def csv_text(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """The CSV text of a header and rows (see the module docstring for the quoting rule)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")  # \r\n: also quotes fields with a lone \r
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def write_csv(path: str | Path | None, header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """Write (atomically, UTF-8) or, with ``path=None``, only return the CSV text."""
    text = csv_text(header, rows)
    if path is not None:
        try:
            write_atomic(Path(path), text.encode("utf-8"))
        except OSError as exc:
            raise WorkbenchError(f"Cannot write {path} ({exc.strerror or exc}); choose a writable folder.") from None
    return text


def _shown(piece: bytes | None) -> str:
    return "" if piece is None else piece_text(piece, visible_space=True)


def merge_csv_rows(rows: Iterable) -> Iterator[tuple]:
    """CSV rows for merge entries (anything with rank, left/right/merged pieces, frequency, new_id)."""
    for r in rows:
        yield (r.rank, _shown(r.left_piece), _shown(r.right_piece), _shown(r.piece),
               "" if r.frequency is None else r.frequency, len(r.piece or b""),
               piece_chars(r.piece or b""), r.new_id, piece_hex(r.piece or b""))


def write_merges_csv(path: str | Path | None, rows: Iterable) -> str:
    """``rank,left,right,merged,frequency`` (the merges-csv export's columns) plus lengths, id, hex."""
    return write_csv(path, MERGE_CSV_HEADER, merge_csv_rows(rows))


def write_vocab_csv(path: str | Path | None, rows: Iterable) -> str:
    """Rows with id, piece, kind, frequency (None = not counted) and never_used (None = unknown)."""
    def gen():
        for r in rows:
            yield (r.id, _shown(r.piece), piece_hex(r.piece), r.kind,
                   "" if r.frequency is None else r.frequency,
                   "" if r.never_used is None else int(bool(r.never_used)))
    return write_csv(path, VOCAB_CSV_HEADER, gen())
