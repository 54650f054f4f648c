"""Which field of a JSONL file, or column of a CSV/TSV/Parquet/Arrow file, holds the text: the candidates and the default.

The use case behind the Corpus tab's "Read as" field/column choice: the first 64 KB of a file are
read, its first record's string fields (nested up to four levels, as ``a.b``) or the header's
columns listed, and the reader's own default (:func:`workbench.corpus.records.choose_field` /
``choose_column``) proposed. Left out: asking the user (the view does).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Sequence

from workbench.corpus import detect_kind, records
from workbench.corpus.location import CorpusPath, is_url
from workbench.corpus.source import folder_files
from workbench.corpus.streams import read_head
from workbench.errors import WorkbenchError


def _flatten_string_fields(record: object, prefix: str = "", depth: int = 0) -> list[str]:
    out: list[str] = []
    if isinstance(record, dict) and depth < 4:
        for key, value in record.items():
            name = f"{prefix}{key}"
            if isinstance(value, str):
                out.append(name)
            elif isinstance(value, dict):
                out.extend(_flatten_string_fields(value, name + ".", depth + 1))
    return out


def option_candidates(path: CorpusPath, kind: str | None = None) -> tuple[str, list[str], str | None] | None:
    """For a JSONL/CSV/TSV/Parquet/Arrow file: ("field"|"column", candidates, default) from its first record
    (a columnar file: from its schema).

    ``kind`` is the reader when the name does not say it (a sniffed or chosen kind)."""
    detected, compressed = detect_kind(path)
    kind = kind or detected
    if kind in ("parquet", "arrow"):
        return _table_columns(path, kind)
    if kind not in ("jsonl", "csv", "tsv"):
        return None
    try:
        head = read_head(path, compressed, 64 * 1024).decode("utf-8-sig", "replace")
    except WorkbenchError:
        return None
    if kind == "jsonl":
        for line in head.splitlines():
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    return None
                names = _flatten_string_fields(record)
                try:
                    default = records.choose_field(record, None, str(path))
                except WorkbenchError:
                    default = None
                return "field", names, default
        return None
    try:
        header = next(csv.reader(io.StringIO(head, newline=""), delimiter="\t" if kind == "tsv" else ","))
    except (StopIteration, csv.Error):
        return None
    try:
        default = header[records.choose_column(header, None, str(path))]
    except WorkbenchError:
        default = None
    return "column", header, default


def _table_columns(path: CorpusPath, kind: str) -> tuple[str, list[str], str | None] | None:
    """A Parquet file's or Arrow shard's columns (from its schema: no rows are read) and the default."""
    from workbench.corpus import arrow_tables

    try:
        if kind == "parquet":
            schema = arrow_tables.parquet_file(records.import_parquet(path), path).schema_arrow
        else:
            shard = arrow_tables.open_arrow(path)
            schema = shard.schema
            shard.close()
    except Exception:  # noqa: BLE001 - no pyarrow, or not readable: adding the file says why
        return None
    names = list(schema.names)
    try:
        default = arrow_tables.choose_table_column(names, arrow_tables.string_columns(schema), None, str(path))
    except WorkbenchError:
        default = None
    return "column", names, default


def first_files(paths: Sequence[str | Path], kinds: set[str], limit: int = 2000) -> dict[str, Path]:
    """The first file of each kind among ``paths`` (folders walked in sorted order)."""
    found: dict[str, Path] = {}
    wanted = {"csv" if k == "tsv" else k for k in kinds}
    seen = 0
    for raw in paths:
        if is_url(str(raw)):
            continue  # a location is not listed on the GUI thread: its reader picks the default
        p = Path(raw)
        candidates = [p] if not p.is_dir() else folder_files(p)  # hidden files are not read: they decide nothing
        for f in candidates:
            seen += 1
            kind = detect_kind(f)[0]
            if kind in kinds:
                found.setdefault("csv" if kind == "tsv" else kind, f)
            if seen > limit or set(found) == wanted:
                return found
    return found
