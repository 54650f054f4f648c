"""Columnar corpora through ``pyarrow``: Parquet files, Arrow IPC shards and Hugging Face
``save_to_disk`` folders — which column holds the text, and its values one record batch at a time.

``pyarrow`` is optional (the ``parquet`` extra) and imported only when such a file is read. A
``datasets`` ``save_to_disk`` folder holds ``dataset_info.json``, ``state.json`` (whose
``_data_files`` lists the shards in order) and ``data-0000N-of-0000M.arrow`` files in the Arrow
*stream* format; ``pyarrow.ipc``'s writers make the *file* format (``ARROW1`` magic) too, and both
are read. Each batch is fully validated (offsets inside their buffers, strings valid UTF-8)
before a value is taken from it, so a damaged shard fails with one line instead of crashing the
process; a batch is dropped once its values are read, so memory stays at one batch whatever the
shard's size. Left out: memory-mapping (a batch is read into memory, as a record batch must be
validated anyway), nested columns (a struct's field is not offered as a column).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Iterator, Sequence

from workbench.corpus import records
from workbench.corpus.location import CorpusPath, RemotePath, open_seekable
from workbench.errors import WorkbenchError

ARROW_HINT = records.PARQUET_HINT
STATE_FILE = "state.json"
INFO_FILE = "dataset_info.json"
_STRING_TYPES = ("string", "large_string", "string_view")


def import_pyarrow(path: object, what: str = ".arrow") -> Any:
    """``pyarrow`` (with ``pyarrow.ipc``), imported only when a columnar file is read."""
    try:
        import pyarrow as pa  # noqa: PLC0415 - optional dependency, imported lazily
        import pyarrow.ipc  # noqa: F401, PLC0415
    except ImportError:
        raise WorkbenchError(f"{path}: reading {what} files needs pyarrow: {ARROW_HINT}") from None
    return pa


def choose_table_column(names: Sequence[str], string_names: Sequence[str], column: str | int | None,
                        label: str) -> str:
    """The column holding the text: the one asked for (name or index), else text/content/body,
    else the only string column, else the only column; otherwise one line listing the columns."""
    names = list(names)
    if column is None:
        lowered = [n.lower() for n in names]
        defaults = [names[lowered.index(d)] for d in records.DEFAULT_TEXT_NAMES if d in lowered]
        candidates = defaults or (list(string_names) if len(string_names) == 1 else names if len(names) == 1 else [])
        if not candidates:
            raise WorkbenchError(f"{label}: which column holds the text? (columns: {', '.join(names)}): "
                                 "choose the column")
        column = candidates[0]
    return names[records.choose_column(names, column, label)]


def string_columns(schema: Any) -> list[str]:
    return [n for n in schema.names if str(schema.field(n).type) in _STRING_TYPES]


def _is_file_format(handle: Any) -> bool:
    magic = handle.read(6)
    handle.seek(0)
    return bool(magic == b"ARROW1")


@dataclass
class ArrowShard:
    """An open Arrow IPC shard: its schema and its record batches in order; ``position()`` is the
    bytes read on disk so far (for progress)."""

    schema: Any
    file_format: bool
    reader: Any
    handle: Any

    def batches(self) -> Iterator[Any]:
        if self.file_format:  # the footer indexes the batches
            for i in range(self.reader.num_record_batches):
                yield self.reader.get_batch(i)
        else:
            yield from self.reader

    def position(self) -> int:
        return int(self.handle.tell())

    def close(self) -> None:
        self.handle.close()


def open_arrow(path: CorpusPath) -> ArrowShard:
    """Open an Arrow IPC file or stream (local, or a location); one line when it is not one."""
    pa = import_pyarrow(path)
    if isinstance(path, RemotePath):
        handle = pa.PythonFile(open_seekable(path), mode="r")
    else:
        try:
            handle = pa.OSFile(str(path), "rb")
        except OSError as exc:
            from workbench.corpus.streams import os_error  # noqa: PLC0415

            raise os_error(path, exc) from None
    try:
        if _is_file_format(handle):
            reader = pa.ipc.open_file(handle)
            return ArrowShard(reader.schema, True, reader, handle)
        reader = pa.ipc.open_stream(handle)
        return ArrowShard(reader.schema, False, reader, handle)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own ArrowInvalid/OSError family
        handle.close()
        raise WorkbenchError(f"{path}: not a readable Arrow file ({_short(exc)}): check the file, or "
                             "write it again") from None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 160 else text[:157] + "…"


def parquet_file(pq: Any, path: CorpusPath) -> Any:
    """``pyarrow.parquet.ParquetFile`` of a local file or a location (read through fsspec's seekable file)."""
    return pq.ParquetFile(open_seekable(path) if isinstance(path, RemotePath) else path)


def checked_values(batch: Any, column: str, label: str) -> list[Any]:
    """The values of ``column`` in a record batch, after a full validation of the batch's buffers."""
    try:
        array = batch.column(column)
        array.validate(full=True)
        return list(array.to_pylist())
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid / ArrowIndexError / KeyError, all "damaged"
        raise WorkbenchError(f"{label}: damaged data in column {column!r} ({_short(exc)}): write the file "
                             "again") from None


def batch_error(path: object, exc: BaseException) -> WorkbenchError:
    return WorkbenchError(f"{path}: the Arrow data is damaged or ends early ({_short(exc)}): write the file again")


# --- Hugging Face save_to_disk folders -----------------------------------------------------------------


def saved_dataset_files(folder: Path) -> list[Path] | None:
    """The ``.arrow`` shards of a ``datasets`` ``save_to_disk`` folder in its own order, or None when
    ``folder`` is not one (no ``state.json`` beside a ``dataset_info.json``).

    A listed name that is not a plain file name in the folder (``../x``, an absolute path) or a shard
    that is missing is one line naming it: the folder was damaged or edited.
    """
    state = folder / STATE_FILE
    if not (state.is_file() and (folder / INFO_FILE).is_file()):
        return None
    try:
        data = json.loads(state.read_text(encoding="utf-8"))
        names = [entry["filename"] for entry in data["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        raise WorkbenchError(f"{state}: not a readable save_to_disk state (no _data_files list): save the "
                             "dataset again") from None
    files = []
    for name in names:
        if not isinstance(name, str) or PurePath(name).name != name or name in ("", ".", ".."):
            raise WorkbenchError(f"{state}: lists {name!r}, which is not a file of this folder: save the dataset again")
        path = folder / name
        if not path.is_file():
            raise WorkbenchError(f"{path}: listed in {STATE_FILE} but missing: save the dataset again")
        files.append(path)
    if not files:
        raise WorkbenchError(f"{state}: lists no .arrow files: save the dataset again")
    return files
