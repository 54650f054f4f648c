"""What a corpus file is and how to read it, decided (and checked) once when the file is added.

:func:`open_source` looks at the name and the first 64 KB: it refuses missing files, folders,
empty and binary files, bytes that are not in the expected encoding, and a JSONL field or CSV
column that is not there — at the moment the user adds the file, not ten minutes into training.
The resulting :class:`CorpusSource` records the resolved reader options, so a project file can
store them and read the same text again later.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import os
import stat
from contextlib import AbstractContextManager
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path, PurePath
from typing import Any, BinaryIO, Callable, Iterable

from workbench.corpus import arrow_tables, location, records, sniff
from workbench.corpus.bad_records import DEFAULT_POLICY, POLICIES, SkippedRecords
from workbench.corpus.compression import strip_compression
from workbench.corpus.location import CorpusPath, RemotePath
from workbench.corpus.streams import open_content, os_error, read_head
from workbench.errors import BadRecord, UnreadableText, WorkbenchError

KINDS = ("text", "jsonl", "csv", "tsv", "parquet", "arrow", "wordcounts")
# Source code and markup are running text for a code tokenizer: read as text, like .txt.
CODE_ENDINGS = (".py .pyi .js .mjs .jsx .ts .tsx .c .h .cc .cpp .hpp .cs .rs .go .java .kt .scala .rb .php .pl "
                ".sh .lua .swift .sql .r .jl .hs .ml .md .markdown .rst .tex .html .htm .xml .svg .css .yaml .yml "
                ".toml .ini .cfg").split()
_EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",  # only when its content is JSON lines (checked by open_source)
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".arrow": "arrow",
    ".counts": "wordcounts",
    **{ending: "text" for ending in CODE_ENDINGS},
}
SUPPORTED = (".txt .jsonl .json .csv .tsv .parquet .arrow .counts .wordcounts.tsv, source code and markup "
             "(optionally .gz or .zst)")
HEAD_BYTES = 64 * 1024
_NOTES = logging.getLogger("workbench.notes")  # one line each on stderr in the CLI


class EmptyFile(WorkbenchError):
    """A file with no text in it (empty, or only whitespace): ``--on-bad-record skip`` leaves it out."""


@dataclass(frozen=True)
class CorpusSource:
    """A validated corpus file plus everything needed to read it again the same way."""

    path: CorpusPath  # a local Path, or a RemotePath for an s3:// … location
    kind: str
    size: int
    compressed: bool = False
    field: str | None = None
    column: str | int | None = None
    encoding: str | None = None
    on_bad_record: str = DEFAULT_POLICY
    # Filled by the readers under ``on_bad_record="skip"`` (reset at the start of every read);
    # not part of what the source *is*, so equality and repr ignore it.
    skipped: SkippedRecords = dataclass_field(default_factory=SkippedRecords, compare=False, repr=False)

    def reader_options(self) -> dict[str, Any]:
        """JSON-able options; ``open_source(path, **options)`` reproduces this source."""
        options: dict[str, Any] = {"kind": self.kind, "field": self.field, "column": self.column,
                                   "encoding": self.encoding}
        if self.on_bad_record != DEFAULT_POLICY:  # stored only when chosen: older rows stay as they were
            options["on_bad_record"] = self.on_bad_record
        return options

    def with_policy(self, on_bad_record: str) -> CorpusSource:
        """The same source read under another bad-record policy (a fresh skip log)."""
        return CorpusSource(self.path, self.kind, self.size, self.compressed, self.field, self.column,
                            self.encoding, on_bad_record)

    @property
    def delimiter(self) -> str:
        return "\t" if self.kind == "tsv" else ","


def detect_kind(path: PurePath | RemotePath) -> tuple[str | None, bool]:
    """``(kind, compressed)`` from the file name alone (gzip or Zstandard, by the ending); kind is None
    when the name says nothing (the content is then sniffed)."""
    name = path.name.lower()
    base = strip_compression(name)
    compressed = base != name
    if base.endswith(".wordcounts.tsv"):
        return "wordcounts", compressed
    kind = _EXTENSIONS.get(os.path.splitext(base)[1])
    if kind in ("parquet", "arrow") and compressed:
        return None, compressed  # Parquet and Arrow compress internally; a gzip around them is not readable.
    return kind, compressed


def shown_path(path: str | os.PathLike[str] | location.RemotePath) -> str:
    """A path as a line of text can show it: bytes that are not UTF-8 (Linux allows any in a name)
    as ``\\xNN``, so the message itself never fails to print, log or store."""
    if isinstance(path, location.RemotePath):
        return str(path)
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def check_name(path: CorpusPath) -> None:
    """Refuse a file whose name is not valid UTF-8 before anything reads it or stores it: a project
    keeps corpus paths as text (and sends them to other machines), so such a name cannot be kept.
    Left out: storing the raw bytes — a name the project could not show or open elsewhere."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise WorkbenchError(f"{shown_path(path)}: the file name is not valid UTF-8, so a project cannot "
                             "record it: rename the file (for example with convmv -f latin1 -t utf-8)") from None


def _decoded_head(path: CorpusPath, head: bytes, complete: bool, encoding: str | None) -> str:
    """Decode the sniffed head; an incremental decoder keeps a character cut at the end for later."""
    codec = encoding or "utf-8-sig"
    try:
        return codecs.getincrementaldecoder(codec)("strict").decode(head, final=complete)
    except UnicodeDecodeError as exc:
        line = head.count(b"\n", 0, exc.start) + 1
        raise sniff.decode_error(path, line, exc.start, encoding, head) from None


def open_source(
    path: str | os.PathLike[str] | RemotePath,
    *,
    field: str | None = None,
    column: str | int | None = None,
    encoding: str | None = None,
    kind: str | None = None,
    on_bad_record: str = DEFAULT_POLICY,
) -> CorpusSource:
    """Check a corpus file and decide how to read it; raises :class:`WorkbenchError` if unusable.

    ``kind`` overrides the extension (``"wordcounts"`` for a ``word<TAB>count`` table with another
    name, ``"text"`` for a plain-text file with an unusual ending). ``field`` is the JSONL field
    (``meta.text`` walks nested objects), ``column`` the CSV/TSV/Parquet column (name or 0-based
    index). Only the head of the file is checked here; the rest is checked while reading.
    """
    p = location.corpus_path(path)
    check_name(p)
    size = _file_size(p)
    if on_bad_record not in POLICIES:
        raise WorkbenchError(f"{p}: unknown bad-record policy {on_bad_record!r}: use fail or skip")
    detected, compressed = detect_kind(p)
    if kind is not None:
        if kind not in KINDS:
            raise WorkbenchError(f"{p}: unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    elif detected is None and compressed and _base_ending(p) in (".parquet", ".arrow"):
        raise WorkbenchError(f"{p}: Parquet and Arrow files compress inside; a {p.suffix} around one cannot be "
                             "read: decompress it")
    else:
        kind = detected
    if encoding is not None:
        encoding = sniff.check_encoding_name(encoding, p)
    if size == 0:
        raise EmptyFile(f"{p}: the file is empty: add a file with text in it")
    if kind == "parquet":
        return _open_parquet(p, size, column).with_policy(on_bad_record)
    if kind == "arrow":
        return _open_arrow(p, size, column).with_policy(on_bad_record)

    head = read_head(p, compressed, HEAD_BYTES + 1)
    complete = len(head) <= HEAD_BYTES
    head = head[:HEAD_BYTES]
    if not head:
        raise EmptyFile(f"{p}: the file is empty (nothing inside the compressed data): add a file with text in it")
    magic = sniff.magic_reason(head) if encoding is None else None
    if magic:
        raise WorkbenchError(f"{p}: looks binary, not text ({magic[0]}): {magic[1] or 'pick a text file'}")
    reason = sniff.binary_reason(head, encoding)
    wide = sniff.utf16_without_bom(head) if reason else None
    if wide:
        raise UnreadableText(
            f"{p}:1: not valid utf-8 at byte 0 (looks like {wide} without a byte-order mark): "
            f"read it with encoding {wide}", path=str(p), encoding=wide)
    if reason:
        raise WorkbenchError(f"{p}: looks binary, not text ({reason}): pick a text file ({SUPPORTED})")
    text = _decoded_head(p, head, complete, encoding)
    if complete and not text.strip():
        raise EmptyFile(f"{p}: contains only whitespace: add a file with text in it")
    if kind is None:
        kind = sniff.sniff_kind(text, complete)
    elif kind == "jsonl" and detected == "jsonl" and _base_ending(p) == ".json":
        check_json_lines(p, text, complete)

    src = CorpusSource(p, kind, size, compressed, encoding=encoding, on_bad_record=on_bad_record)
    if kind == "jsonl":
        return _with_jsonl_field(src, text, field)
    if kind in ("csv", "tsv"):
        return _with_csv_column(src, text, column)
    if kind == "wordcounts":
        _check_first_count(src, text)
    return src


def _base_ending(p: PurePath | RemotePath) -> str:
    return os.path.splitext(strip_compression(p.name.lower()))[1]


def check_json_lines(p: CorpusPath, text: str, complete: bool) -> None:
    """Refuse a ``.json`` file that holds one JSON document rather than JSON lines, from its head.

    A ``.json`` shard (Dolma, Spark's ``write.json``) is usually JSON lines; a file that is one
    array, or one object spread over lines, would have to be read whole into memory to be
    parsed, so it is refused — from the first 64 KB, whatever the file's size — with the command
    that turns it into JSON lines.
    """
    stripped = text.lstrip()
    convert = f"convert it to JSON lines first, e.g. jq -c '.[]' {p.name} > {Path(p.name).stem}.jsonl"
    if stripped.startswith("["):
        raise WorkbenchError(f"{p}: is one JSON array, not JSON lines (one object per line): {convert}")
    if not stripped.startswith("{"):
        return  # not JSON at all: the JSON-lines reader names the line
    one_object = f"convert it to JSON lines first, e.g. jq -c . {p.name} > {Path(p.name).stem}.jsonl"
    first = stripped.split("\n", 1)
    if len(first) == 1 and not complete:
        raise WorkbenchError(f"{p}: the first line is longer than 64 KB: this looks like one JSON object, not JSON "
                             f"lines (one object per line): {one_object}")
    try:
        json.loads(first[0])
    except (ValueError, RecursionError):
        raise WorkbenchError(f"{p}: is one JSON object spread over lines, not JSON lines (one object per line): "
                             f"{one_object}") from None


def _file_size(p: CorpusPath) -> int:
    """The size of a corpus file (local or a location), refusing folders and what is not a file."""
    if isinstance(p, location.RemotePath):
        return location.size_of(p)
    try:
        st = p.stat()
    except OSError as exc:
        raise os_error(p, exc) from None
    if p.is_dir():
        raise WorkbenchError(f"{p}: is a folder, not a file: add the folder to read the files inside")
    if not p.is_file():
        raise WorkbenchError(f"{p}: not a regular file: pick a text file")
    return st.st_size


def _with_jsonl_field(src: CorpusSource, text: str, field: str | None) -> CorpusSource:
    """Resolve the field on the first record; under ``skip`` a bad first line does not decide it."""
    first_error: WorkbenchError | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{src.path}:{number}"
        try:
            record = records.parse_json_line(line, where)
            resolved = records.choose_field(record, field, where)
            records.field_text(record, resolved, where)
        except WorkbenchError as exc:
            if src.on_bad_record != "skip":
                raise
            first_error = first_error or exc
            continue
        return CorpusSource(src.path, src.kind, src.size, src.compressed, resolved, None, src.encoding,
                            src.on_bad_record)
    if first_error is not None:
        raise first_error  # not one usable record in the head: the file, not a record, is wrong
    raise WorkbenchError(f"{src.path}: no JSON lines in the first 64 KB: check that this is a JSONL file")


def _with_csv_column(src: CorpusSource, text: str, column: str | int | None) -> CorpusSource:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=src.delimiter)
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise WorkbenchError(f"{src.path}:1: cannot read the header row ({exc}): fix the first line") from None
    index = records.choose_column(header, column, f"{src.path}:1")
    resolved: str | int = header[index] if header.count(header[index]) == 1 and not isinstance(column, int) else index
    return CorpusSource(src.path, src.kind, src.size, src.compressed, None, resolved, src.encoding, src.on_bad_record)


def _check_first_count(src: CorpusSource, text: str) -> None:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if number == 1 and (records.is_count_header(line)
                            or records.parse_counts_header(line, f"{src.path}:1") is not None):
            continue
        if src.on_bad_record == "skip":
            return  # bad lines are counted while reading; one bad first line must not refuse the file
        records.parse_count_line(line, f"{src.path}:{number}")
        return


def _open_parquet(p: CorpusPath, size: int, column: str | int | None) -> CorpusSource:
    pq = records.import_parquet(p)
    try:
        schema = arrow_tables.parquet_file(pq, p).schema_arrow
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own ArrowInvalid/OSError family
        raise WorkbenchError(f"{p}: not a readable Parquet file ({exc}): check the file") from None
    chosen = arrow_tables.choose_table_column(schema.names, arrow_tables.string_columns(schema), column, str(p))
    return CorpusSource(p, "parquet", size, False, None, chosen, None)


def _open_arrow(p: CorpusPath, size: int, column: str | int | None) -> CorpusSource:
    shard = arrow_tables.open_arrow(p)
    try:
        schema = shard.schema
    finally:
        shard.close()
    chosen = arrow_tables.choose_table_column(schema.names, arrow_tables.string_columns(schema), column, str(p))
    return CorpusSource(p, "arrow", size, False, None, chosen, None)


def _identity(path: CorpusPath) -> object:
    """Device and inode when the file exists (hard and symbolic links agree), else the resolved path
    (a location: its URL)."""
    if isinstance(path, location.RemotePath):
        return path
    try:
        st = path.stat()
        return (st.st_dev, st.st_ino)
    except OSError:
        return path.resolve()


def unique_sources(sources: Iterable[CorpusSource]) -> list[CorpusSource]:
    """``sources`` with each file once (by device and inode), with a note for every repeat.

    For callers that open files themselves (training with explicit reader options) instead of
    going through :func:`expand_paths`, which applies the same rule.
    """
    seen: dict[object, CorpusPath] = {}
    kept: list[CorpusSource] = []
    for src in sources:
        key = _identity(src.path)
        if key in seen:
            _NOTES.warning(f"{src.path}: given more than once (same file as {seen[key]}): read once")
            continue
        seen[key] = src.path
        kept.append(src)
    return kept


def walk_folder(root: Path) -> tuple[list[Path], list[Rejection]]:
    """The regular files under ``root`` in sorted order, and one line for each thing in the way.

    Hidden files and folders and Hadoop/Spark bookkeeping (``_SUCCESS``, ``_committed_…``,
    ``.crc``) are left out. Links to files are followed; links to folders are not (one to ``/``
    would walk the whole disk) but named, so the user can add that folder itself. A folder that
    cannot be listed, a link to nothing, a link loop, a pipe or a device each become a message with
    the system's reason — never a silent gap, nor "the folder has no files" for a folder that could
    not be read.
    """
    files: list[Path] = []
    problems: list[Rejection] = []

    def unreadable(exc: OSError) -> None:
        where = exc.filename if exc.filename is not None else root
        problems.append(Rejection(f"{shown_path(where)}: cannot read the folder ({exc.strerror or exc}): "
                                  "check its permissions, or leave it out", path=str(where)))

    for folder, subfolders, names in os.walk(root, onerror=unreadable):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        if arrow_tables.STATE_FILE in names:  # a Hugging Face save_to_disk folder: its shards, in its order
            try:
                shards = arrow_tables.saved_dataset_files(Path(folder))
            except WorkbenchError as exc:
                problems.append(Rejection(str(exc), path=folder))
                continue
            if shards is not None:
                files.extend(shards)
                continue
        names = [name for name in names if name != "dataset_dict.json"]  # a DatasetDict's list of its splits
        for name in subfolders:
            path = Path(folder) / name
            if path.is_symlink():
                problems.append(Rejection(f"{shown_path(path)}: skipped: a link to a folder, which is not followed: "
                                          "add the folder it points to itself", path=str(path)))
        for name in sorted(names):
            if name.startswith((".", "_")):
                continue
            path = Path(folder) / name
            try:
                mode = os.stat(path).st_mode
            except OSError as exc:
                reason = exc.strerror or str(exc)
                if os.path.islink(path) and isinstance(exc, FileNotFoundError):
                    reason = f"a link to {shown_path(os.readlink(path))}, which does not exist"
                problems.append(Rejection(f"{shown_path(path)}: skipped: cannot read it ({reason})", path=str(path)))
                continue
            if stat.S_ISREG(mode):
                files.append(path)
            else:
                problems.append(Rejection(f"{shown_path(path)}: skipped: not a regular file (a pipe, device or "
                                          "socket): leave it out of the folder", path=str(path)))
    return sorted(files), problems


def folder_files(folder: Path) -> list[Path]:
    """The files a folder contributes, in sorted order: walked recursively, hidden files and folders
    (``.ipynb_checkpoints/``, ``.git/``) and Hadoop/Spark bookkeeping left out. The one walk for
    reading a folder and for anything decided from its files (the JSONL field, the CSV column), so
    a file that is not read cannot decide how the others are read (:func:`walk_folder`, without
    its messages)."""
    return walk_folder(folder)[0]


def is_sniffable_name(path: PurePath | RemotePath) -> bool:
    """A name whose ending says nothing about the content (``part-00000``, ``data.out``, ``LICENSE``).

    Such a file is sniffed — JSON lines, text, or refused for what its bytes show it is (a PDF, a
    zip archive, NUL bytes): the content decides, never the name alone.
    """
    return detect_kind(path)[0] is None


class Rejection(str):
    """A file :func:`expand_paths` could not use: the one-line message (it *is* the string, so
    callers that print it need nothing else), plus ``path`` and the ``encoding`` to read it with
    when one is suggested — so the window never parses a message to offer the fix."""

    path: str
    encoding: str | None
    bad_record: bool  # a record of the file is bad: the skip policy would read the rest
    empty: bool  # the file holds no text: the skip policy leaves it out
    unsupported: bool  # a folder's file of no corpus format (an image, a PDF): the skip policy leaves it out

    def __new__(cls, message: str, *, path: str, encoding: str | None = None, bad_record: bool = False,
                empty: bool = False, unsupported: bool = False) -> Rejection:
        self = super().__new__(cls, message)
        self.path = path
        self.encoding = encoding
        self.bad_record = bad_record
        self.empty = empty
        self.unsupported = unsupported
        return self

    @classmethod
    def of(cls, error: WorkbenchError, path: CorpusPath) -> Rejection:
        return cls(str(error), path=getattr(error, "path", str(path)), encoding=getattr(error, "encoding", None),
                   bad_record=isinstance(error, BadRecord), empty=isinstance(error, EmptyFile))


def expand_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    field: str | None = None,
    column: str | int | None = None,
    encoding: str | None = None,
    kind: str | None = None,
    on_bad_record: str = DEFAULT_POLICY,
) -> tuple[list[CorpusSource], list[Rejection]]:
    """Turn files and folders into sources; bad or unsupported files become messages, not failures.

    Folders are walked recursively in sorted order, skipping hidden files and folders. One bad
    file must not cost the user the other hundred, so every problem is reported as a one-line
    message (naming the file, and the line where known) and the remaining files are kept.
    """
    sources: list[CorpusSource] = []
    messages: list[Rejection] = []
    seen: dict[object, CorpusPath] = {}
    options: dict[str, Any] = {"field": field, "column": column, "encoding": encoding, "kind": kind,
                               "on_bad_record": on_bad_record}

    def add(candidate: CorpusPath, by_content: bool = False) -> None:
        key = _identity(candidate)
        if key in seen:
            # The same file twice (repeated, through a link, or inside a folder also given) would
            # count its text twice; read it once and say so.
            _NOTES.warning(f"{candidate}: given more than once (same file as {seen[key]}): read once")
            return
        seen[key] = candidate
        try:
            sources.append(open_source(candidate, **options))
        except WorkbenchError as exc:
            rejection = Rejection.of(exc, candidate)
            # A folder's file read for its content alone: what is not text the skip policy leaves out.
            rejection.unsupported = by_content and not rejection.empty
            messages.append(rejection)

    for raw in paths:
        if location.is_url(raw):  # s3://…, a glob of shards, or a remote folder: each file it names
            try:
                found_remote = location.expand(str(raw))
            except WorkbenchError as exc:
                messages.append(Rejection(str(exc), path=str(raw)))
                continue
            for remote in found_remote:
                add(remote)
            continue
        p = Path(raw).expanduser()
        if not p.is_dir():
            add(p)
            continue
        found, problems = walk_folder(p)
        messages.extend(problems)
        if not found and not problems:
            messages.append(Rejection(f"{p}: the folder has no files: add a folder with {SUPPORTED} files", path=str(p)))
        for f in found:
            # A name whose ending says nothing — WikiExtractor's wiki_00, WMT's train.de, Spark's
            # part-00000, a README — is read for its content, as a file given alone: text (or JSON
            # lines) is read, what is clearly not text is named with what its bytes show (an image,
            # a program) and left out by --on-bad-record skip.
            add(f, by_content=kind is None and detect_kind(f)[0] is None)
    return sources, messages


def content_stream(src: CorpusSource) -> AbstractContextManager[tuple[BinaryIO, Callable[[], int]]]:
    """Context manager over the decompressed bytes of ``src`` (see :func:`open_content`)."""
    return open_content(src.path, src.compressed)
