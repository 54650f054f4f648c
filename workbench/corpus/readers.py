"""Stream a corpus as ~1 MB chunks of text that end at line boundaries.

A corpus can be gigabytes, so nothing here holds a whole file. Chunks end at a newline so a
pre-tokenizer never sees a word cut in half (only a single line longer than 8 MB is ever cut, and
then at a space). Plain UTF-8 text takes the fast path: binary reads, a cut at the last ``\\n``
byte (which never occurs inside a UTF-8 sequence) and one ``bytes.decode`` per chunk.

Progress is reported as ``progress(bytes_read_on_disk, file_size)`` after every chunk, and
``should_stop()`` is asked before every chunk: returning True ends the stream cleanly (the
generator just returns), which is how the window's Cancel button stops a scan.
"""

from __future__ import annotations

import codecs
import csv
import io
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from workbench.corpus import arrow_tables, records, sniff
from workbench.corpus.source import CorpusSource, content_stream
from workbench.corpus.streams import (
    CHUNK_BYTES,
    GZIP_ERRORS,
    gzip_error,
    os_error,
    read_block,
)
from workbench.errors import BadRecord, WorkbenchError

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]

MAX_LINE_BYTES = 8 * CHUNK_BYTES  # a "line" longer than this is cut at a space instead
_WINDOW = 32 * 1024


@dataclass(frozen=True)
class Chunk:
    """One piece of the stream. ``utf8_bytes`` is its UTF-8 length when known for free, else -1.

    ``documents`` holds the records (JSONL fields, CSV/TSV/Parquet cells) that ``text`` joins with
    ``"\n"``, so sequence-aware counting can take each one alone; empty for plain text.
    """

    text: str
    utf8_bytes: int = -1
    records: int = 0
    documents: tuple[str, ...] = ()


def iter_text(
    src: CorpusSource, *, progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> Iterator[str]:
    """The corpus text in ~1 MB chunks ending at line boundaries.

    For plain text, ``"".join(iter_text(src))`` is exactly the file's text (a UTF-8 BOM removed).
    For JSONL/CSV/TSV/Parquet each document is followed by ``"\\n"``. Bad content found mid-stream
    raises :class:`WorkbenchError` naming file and line.
    """
    # map, not a loop: no frame here holds the last chunk while the consumer works on it (it can
    # then drop the text once it has cut it into lines: ~1 MB less alive while a batch is counted).
    yield from map(_text_of, iter_chunks(src, progress=progress, should_stop=should_stop))


def _text_of(chunk: Chunk) -> str:
    return chunk.text


def iter_chunks(
    src: CorpusSource, *, progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> Iterator[Chunk]:
    """Like :func:`iter_text`, with the byte and record counts that statistics want."""
    if src.kind == "wordcounts":
        raise WorkbenchError(
            f"{src.path}: is a word-count table, not running text: train from its counts (iter_word_counts)"
        )
    readers = {
        "text": _text_chunks,
        "jsonl": _jsonl_chunks,
        "csv": _csv_chunks,
        "tsv": _csv_chunks,
        "parquet": _parquet_chunks,
        "arrow": _arrow_chunks,
    }
    stop = should_stop or (lambda: False)
    report = progress or (lambda done, total: None)
    src.skipped.reset()  # each read logs its own skips (a rescan must not count them twice)
    try:
        yield from readers[src.kind](src, report, stop)
    except GZIP_ERRORS as exc:
        raise gzip_error(src.path, exc) from None
    except OSError as exc:
        raise os_error(src.path, exc) from None


def iter_documents(
    src: CorpusSource, *, progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> Iterator[tuple[str, ...]]:
    """Batches (~1 MB) of the documents of a JSONL/CSV/TSV/Parquet file, each record's text alone —
    nothing joins them, so counting never sees a separator that is in no record.

    A plain text file has no records: use :func:`iter_text` (the whole file is one document).
    """
    if src.kind in ("text", "wordcounts"):
        raise WorkbenchError(f"{src.path}: is {src.kind}, not a file of records: read its text instead")
    for chunk in iter_chunks(src, progress=progress, should_stop=should_stop):
        yield chunk.documents


def iter_word_counts(
    src: CorpusSource, *, progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> Iterator[tuple[str, int]]:
    """``(word, count)`` pairs of a ``word<TAB>count`` table, in file order.

    A header line such as ``word<TAB>count`` on line 1 is skipped; any other line whose count is
    not a whole number raises :class:`WorkbenchError` naming file and line. A ``workbench count``
    table (line 1 ``# workbench-counts v1 {...}``) has escaped words, which come back exactly.
    """
    if src.kind != "wordcounts":
        raise WorkbenchError(f"{src.path}: is {src.kind}, not a word-count table: read its text instead")
    stop = should_stop or (lambda: False)
    escaped = False
    src.skipped.reset()
    skip = src.skipped.add if src.on_bad_record == "skip" else None
    try:
        with content_stream(src) as (stream, pos):
            for number, line in _decoded_lines(src, stream, skip):
                if number % 65536 == 0:
                    if progress:
                        progress(pos(), src.size)
                    if stop():
                        return
                line = line.rstrip("\r\n")
                if number == 1 and records.parse_counts_header(line, f"{src.path}:1") is not None:
                    escaped = True  # a `workbench count` table: words are escaped (records.py)
                    continue
                if not line.strip() or (number == 1 and records.is_count_header(line)):
                    continue
                try:
                    word, count = records.parse_count_line(line, f"{src.path}:{number}")
                    if escaped:
                        word = records.unescape_count_word(word, f"{src.path}:{number}")
                except WorkbenchError as exc:
                    if skip is None:
                        raise BadRecord(str(exc)) from None
                    skip(str(exc))
                    continue
                yield word, count
            if progress:
                progress(src.size, src.size)
    except GZIP_ERRORS as exc:
        raise gzip_error(src.path, exc) from None
    except OSError as exc:
        raise os_error(src.path, exc) from None


# --- plain text ---------------------------------------------------------------------------------


def _soft_cut(buf: bytes) -> int:
    """Index of the last byte to keep when a line is too long: a space, else a character boundary."""
    cut = max(buf.rfind(b" "), buf.rfind(b"\t"))
    if cut > 0:
        return cut
    i = len(buf) - 1
    while i > 0 and (buf[i] & 0xC0) == 0x80:
        i -= 1
    return i - 1


def _text_chunks(src: CorpusSource, progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    if sniff.is_wide_encoding(src.encoding):
        yield from _wide_text_chunks(src, progress, stop)
        return
    codec = src.encoding or "utf-8"
    is_utf8 = codecs.lookup(codec).name in ("utf-8", "utf-8-sig")
    with content_stream(src) as (stream, pos):
        carry = b""
        first = True
        while True:
            if stop():
                return
            block = read_block(stream, CHUNK_BYTES, src.path)
            eof = not block
            if 0 < len(block) < CHUNK_BYTES:
                # A short read is usually the end: confirm, so the tail after the last newline
                # goes out with this chunk instead of as a tiny chunk of its own.
                more = read_block(stream, CHUNK_BYTES, src.path)
                block, eof = block + more, not more
            buf = carry + block if carry else block
            if eof:
                part, carry = buf, b""
            else:
                cut = buf.rfind(b"\n")
                if cut < 0:
                    if len(buf) < MAX_LINE_BYTES:
                        carry = buf
                        continue
                    cut = _soft_cut(buf)
                part, carry = buf[: cut + 1], buf[cut + 1 :]
            if first and part:
                first = False
                if is_utf8 and part.startswith(codecs.BOM_UTF8):
                    part = part[3:]
            if part:
                try:
                    decoded = [part.decode(codec)]
                except UnicodeDecodeError:
                    raise find_decode_error(src) from None
                size = len(part) if is_utf8 else -1
                # Nothing here holds the bytes or the text while the consumer works on the chunk
                # (counting drops the text once it is cut into lines): 2-3 MB less alive meanwhile.
                block = buf = part = b""
                yield Chunk(decoded.pop(), size)
            # Not kept while the next block is read (the consumer holds the chunk's text if it needs it).
            block = buf = part = b""
            progress(pos(), src.size)
            if eof:
                return


def _wide_text_chunks(src: CorpusSource, progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    """UTF-16/32 and other encodings where a newline is not the byte ``\\n``."""
    assert src.encoding is not None
    decoder = codecs.getincrementaldecoder(src.encoding)("strict")
    with content_stream(src) as (stream, pos):
        carry = ""
        first = True
        lines_before = 0
        consumed = 0
        while True:
            if stop():
                return
            block = read_block(stream, CHUNK_BYTES, src.path)
            eof = not block
            try:
                text = carry + decoder.decode(block, final=eof)
            except UnicodeDecodeError as exc:
                line = lines_before + carry.count("\n") + 1
                raise sniff.decode_error(src.path, line, consumed + exc.start, src.encoding, block) from None
            consumed += len(block)
            if eof:
                part, carry = text, ""
            else:
                cut = text.rfind("\n")
                if cut < 0 and len(text) < MAX_LINE_BYTES:
                    carry = text
                    continue
                cut = cut if cut >= 0 else len(text) - 1
                part, carry = text[: cut + 1], text[cut + 1 :]
            if first and part:
                first = False
                part = part.removeprefix("\ufeff")
            if part:
                lines_before += part.count("\n")
                yield Chunk(part)
            progress(pos(), src.size)
            if eof:
                return


def find_decode_error(src: CorpusSource) -> WorkbenchError:
    """Re-scan the file to report where its bytes stop decoding: file:line and byte offset.

    Only runs after a decode already failed, so the fast path never pays for line counting.
    """
    codec = src.encoding or "utf-8"
    if sniff.is_wide_encoding(codec):
        return _find_wide_decode_error(src, codec)
    with content_stream(src) as (stream, _pos):
        offset = 0
        lines = 0
        carry = b""
        while True:
            block = read_block(stream, CHUNK_BYTES, src.path)
            buf = carry + block
            cut = len(buf) - 1 if not block else buf.rfind(b"\n")
            part, carry = buf[: cut + 1], buf[cut + 1 :]
            try:
                part.decode(codec)
            except UnicodeDecodeError as exc:
                line = lines + part.count(b"\n", 0, exc.start) + 1
                window = part[max(0, exc.start - _WINDOW) : exc.start + _WINDOW]
                return sniff.decode_error(src.path, line, offset + exc.start, src.encoding, window)
            lines += part.count(b"\n")
            offset += len(part)
            if not block:
                return WorkbenchError(f"{src.path}: cannot decode the text as {codec}: read it with its real encoding")


def _find_wide_decode_error(src: CorpusSource, codec: str) -> WorkbenchError:
    decoder = codecs.getincrementaldecoder(codec)("strict")
    with content_stream(src) as (stream, _pos):
        offset = 0
        lines = 0
        while True:
            block = read_block(stream, CHUNK_BYTES, src.path)
            try:
                lines += decoder.decode(block, final=not block).count("\n")
            except UnicodeDecodeError as exc:
                return sniff.decode_error(src.path, lines + 1, offset + exc.start, codec, block)
            offset += len(block)
            if not block:
                return WorkbenchError(f"{src.path}: cannot decode the text as {codec}: read it with its real encoding")


# --- line-structured files ------------------------------------------------------------------------


def _decoded_lines(src: CorpusSource, stream: BinaryIO,
                   skip: Callable[[str], None] | None = None) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` with decode failures reported at their line and byte offset.

    With ``skip`` (the ``skip`` bad-record policy), a line that does not decode is handed to it
    and left out instead of failing the file (UTF-8 and single-byte encodings only: in UTF-16 a
    bad line cannot be told from a misread file).
    """
    if sniff.is_wide_encoding(src.encoding):
        wrapper = io.TextIOWrapper(stream, encoding=src.encoding, newline="")
        try:
            yield from enumerate(wrapper, 1)
        except UnicodeDecodeError:
            raise find_decode_error(src) from None
        finally:
            wrapper.detach()
        return
    codec = src.encoding or "utf-8"
    offset = 0
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode(codec)
        except UnicodeDecodeError as exc:
            window = raw[max(0, exc.start - _WINDOW) : exc.start + _WINDOW]
            error = sniff.decode_error(src.path, number, offset + exc.start, src.encoding, window)
            if skip is None:
                raise error from None
            skip(str(error))
            offset += len(raw)
            continue
        if number == 1:
            line = line.removeprefix("\ufeff")
        offset += len(raw)
        yield number, line


def _jsonl_chunks(src: CorpusSource, progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    with content_stream(src) as (stream, pos):
        if stop():
            return

        skip = src.skipped.add if src.on_bad_record == "skip" else None

        def documents() -> Iterator[str]:
            for number, line in _decoded_lines(src, stream, skip):
                if line.strip():
                    where = f"{src.path}:{number}"
                    try:
                        text = records.field_text(records.parse_json_line(line, where), src.field, where)
                    except WorkbenchError as exc:
                        if skip is None:
                            raise BadRecord(str(exc)) from None
                        skip(str(exc))  # the full reason, with file:line, for the report
                        continue
                    yield text

        yield from _document_chunks(documents(), src, pos, progress, stop)


def _document_chunks(documents: Iterable[str], src: CorpusSource, pos: Callable[[], int],
                     progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    """Documents (JSONL records, CSV cells) joined into chunks of about CHUNK_BYTES, one per line."""
    docs: list[str] = []
    size = 0
    for doc in documents:
        docs.append(doc)
        size += len(doc) + 1
        if size >= CHUNK_BYTES:
            yield _join(docs)
            docs, size = [], 0
            progress(pos(), src.size)
            if stop():
                return
    if docs:
        yield _join(docs)
    progress(src.size, src.size)


def _join(docs: list[str]) -> Chunk:
    return Chunk("\n".join(docs) + "\n", records=len(docs), documents=tuple(docs))


def _csv_chunks(src: CorpusSource, progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # documents may be far longer than 128 KB
    with content_stream(src) as (stream, pos):
        if stop():
            return
        encoding = src.encoding or "utf-8-sig"
        wrapper = io.TextIOWrapper(stream, encoding=encoding, newline="")
        reader = csv.reader(wrapper, delimiter=src.delimiter)
        try:
            header = next(reader)
            index = records.choose_column(header, src.column, f"{src.path}:1")
            name = header[index]

            def documents() -> Iterator[str]:
                for row in reader:
                    if not row:
                        continue
                    if len(row) <= index:
                        error = WorkbenchError(
                            f"{src.path}:{reader.line_num}: the row has {len(row)} column(s), but the text "
                            f"column {name!r} is column {index + 1}: fix the row"
                        )
                        if src.on_bad_record != "skip":
                            raise error
                        src.skipped.add(str(error))
                        continue
                    yield row[index]

            yield from _document_chunks(documents(), src, pos, progress, stop)
        except UnicodeDecodeError:
            raise find_decode_error(src) from None
        except csv.Error as exc:
            raise WorkbenchError(f"{src.path}:{reader.line_num}: bad {src.kind.upper()} row ({exc}): fix the row") from None
        finally:
            wrapper.detach()


def _parquet_chunks(src: CorpusSource, progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    pq = records.import_parquet(src.path)
    try:
        pfile: Any = arrow_tables.parquet_file(pq, src.path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own error types, not a public base
        raise WorkbenchError(f"{src.path}: not a readable Parquet file ({exc}): check the file") from None
    total_rows = max(1, pfile.metadata.num_rows)
    if stop():
        return
    batches = (batch.column(0).to_pylist() for batch in pfile.iter_batches(columns=[src.column], batch_size=8192))
    rows = 0

    def position() -> int:
        return src.size * rows // total_rows

    def counted() -> Iterator[list[Any]]:
        nonlocal rows
        for values in batches:
            rows += len(values)
            yield values

    yield from _column_chunks(src, counted(), position, progress, stop)


def _arrow_chunks(src: CorpusSource, progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    """An Arrow IPC shard (file or stream format, as ``save_to_disk`` writes it), batch by batch."""
    shard = arrow_tables.open_arrow(src.path)
    label = str(src.path)
    try:
        if stop():
            return
        column = str(src.column)

        def values() -> Iterator[list[Any]]:
            batches = shard.batches()
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                except Exception as exc:  # noqa: BLE001 - ArrowInvalid/OSError: a cut or damaged shard
                    raise arrow_tables.batch_error(src.path, exc) from None
                if column not in batch.schema.names:
                    raise WorkbenchError(f"{label}: no column {column!r} in a later batch: write the file again")
                yield arrow_tables.checked_values(batch, column, label)

        yield from _column_chunks(src, values(), shard.position, progress, stop)
    finally:
        shard.close()


def _column_chunks(src: CorpusSource, batches: Iterable[list[Any]], position: Callable[[], int],
                   progress: Progress, stop: ShouldStop) -> Iterator[Chunk]:
    """The text cells of a Parquet or Arrow column, batch by batch, joined into ~1 MB chunks."""
    rows = 0
    docs: list[str] = []
    size = 0
    for values in batches:
        first_row = rows + 1
        rows += len(values)
        for offset, value in enumerate(values):
            if value is None:
                continue  # nulls are routine in columnar data; they carry no text
            if not isinstance(value, str):
                error = WorkbenchError(f"{src.path}: column {src.column!r} holds {type(value).__name__}, "
                                       "not text: choose another column")
                if src.on_bad_record != "skip":
                    raise error
                src.skipped.add(f"{src.path}: row {first_row + offset}: "
                                f"{type(value).__name__}, not text")
                continue
            docs.append(value)
            size += len(value) + 1
        if size >= CHUNK_BYTES:
            yield _join(docs)
            docs, size = [], 0
            progress(position(), src.size)
            if stop():
                return
    if docs:
        yield _join(docs)
    progress(src.size, src.size)
