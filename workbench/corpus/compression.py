"""Decompress a corpus stream — gzip or Zstandard, chosen by the name's ending — in bounded memory.

Pretraining shards are ``.jsonl.zst`` (The Pile and its successors) or ``.json.gz`` (Dolma), so
every text kind may carry either ending. Two properties matter more than speed:

* **Bounded memory.** A 30 KB ``.zst`` can hold 1 GB of zeros. Output is produced by
  ``zstandard``'s stream reader, which never returns more than was asked for, so a reader that
  asks for 1 MB at a time holds 1 MB whatever the ratio.
* **Truncation is an error.** ``zstandard``'s stream reader ends quietly when the input ends in
  the middle of a frame (a half-downloaded shard would train on half its text). :class:`_Frames`
  follows the frame structure of the bytes as they pass (frame headers, block headers, the
  optional checksum — no decompression, no second pass) and the stream fails with one line when
  the input ends anywhere but between two frames, or when the next frame does not start with a
  frame's magic number.

Left out: a bit flip inside a frame without a content checksum (``zstd`` writes one by default;
``zstandard.ZstdCompressor`` only with ``write_checksum=True``) can decode to wrong bytes, which
only decoding them as text may notice; dictionaries (a frame that needs one fails with zstd's own
reason).
"""

from __future__ import annotations

import io
from pathlib import PurePath
from typing import Any, BinaryIO

from workbench.errors import WorkbenchError

GZIP, ZSTD = "gzip", "zstd"
ENDINGS = {".gz": GZIP, ".zst": ZSTD, ".zstd": ZSTD}

_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE = range(0x184D2A50, 0x184D2A60)


def compression_of(name: str | PurePath) -> str | None:
    """``"gzip"``/``"zstd"`` from a file name's last ending, else None."""
    lowered = str(name).lower()
    for ending, codec in ENDINGS.items():
        if lowered.endswith(ending):
            return codec
    return None


def strip_compression(name: str) -> str:
    """The name without its compression ending (``a.jsonl.zst`` → ``a.jsonl``)."""
    lowered = name.lower()
    for ending in ENDINGS:
        if lowered.endswith(ending):
            return name[: -len(ending)]
    return name


class _Frames:
    """Follows the frame structure of zstd bytes fed to it; says whether the input ended cleanly.

    A tiny state machine: it reads the fixed-size headers it needs (magic, frame header, each
    block's 3-byte header) and skips block contents by their stated sizes.
    """

    def __init__(self, label: str):
        self.label = label
        self.state = "magic"  # what the bytes in ``self.need`` bytes are: magic, skip-size, header…
        self.need = 4
        self.buf = b""
        self.skip = 0  # bytes of content to pass over before the next header
        self.offset = 0  # bytes seen, for the message
        self.checksum = False

    @property
    def between_frames(self) -> bool:
        return self.state == "magic" and not self.buf and self.skip == 0

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.skip:
                n = min(self.skip, len(view))
                self.skip -= n
                self.offset += n
                view = view[n:]
                continue
            take = min(self.need - len(self.buf), len(view))
            self.buf += bytes(view[:take])
            self.offset += take
            view = view[take:]
            if len(self.buf) == self.need:
                header, self.buf = self.buf, b""
                self._header(header)

    def _header(self, b: bytes) -> None:
        state = self.state
        if state == "magic":
            magic = int.from_bytes(b, "little")
            if magic in _SKIPPABLE:
                self.state, self.need = "skip-size", 4
            elif magic == _ZSTD_MAGIC:
                self.state, self.need = "descriptor", 1
            else:
                raise WorkbenchError(f"{self.label}: not valid Zstandard data (no frame starts at byte "
                                     f"{self.offset - 4:,}): re-download or re-compress it")
        elif state == "skip-size":
            self.state, self.need, self.skip = "magic", 4, int.from_bytes(b, "little")
        elif state == "descriptor":
            d = b[0]
            fcs_flag, single, self.checksum, dict_flag = d >> 6, (d >> 5) & 1, bool((d >> 2) & 1), d & 3
            fcs = (1 if single else 0, 2, 4, 8)[fcs_flag]
            rest = (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + fcs
            self.state, self.need = "block", 3
            self.skip = rest  # the rest of the frame header carries nothing this check needs
        elif state == "block":
            h = int.from_bytes(b, "little")
            last, kind, size = h & 1, (h >> 1) & 3, h >> 3
            if kind == 3:
                raise WorkbenchError(f"{self.label}: not valid Zstandard data (a reserved block type at byte "
                                     f"{self.offset - 3:,}): re-download or re-compress it")
            self.skip = 1 if kind == 1 else size
            if last:
                self.state, self.need = "magic", 4
                if self.checksum:
                    self.skip += 4
            else:
                self.need = 3


class _Watched:
    """The compressed side: zstandard pulls bytes from here, and the frames are followed on the way."""

    def __init__(self, raw: BinaryIO, frames: _Frames):
        self.raw, self.frames = raw, frames

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        if data:
            self.frames.feed(data)
        return data


class ZstdStream(io.RawIOBase):
    """The decompressed bytes of a zstd stream (all frames), failing on a truncated or damaged one."""

    def __init__(self, raw: BinaryIO, label: str):
        import zstandard  # noqa: PLC0415 - a runtime dependency, loaded when a .zst is read

        self._zstd_error = zstandard.ZstdError
        self._label = label
        self._frames = _Frames(label)
        self._ended = False
        source: Any = _Watched(raw, self._frames)
        self._reader = zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True, closefd=False)

    # the decompressed side, for io.BufferedReader
    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._ended:
            return 0
        try:
            data = self._reader.read(len(buffer))
        except self._zstd_error as exc:
            reason = str(exc).split(" error: ", 1)[-1]  # zstandard prefixes "zstd decompress(or) error: "
            raise WorkbenchError(f"{self._label}: not valid Zstandard data ({reason}): re-download or "
                                 "re-compress it") from None
        if not data:
            self._ended = True
            if not self._frames.between_frames:
                raise WorkbenchError(f"{self._label}: the Zstandard data ends early (truncated after "
                                     f"{self._frames.offset:,} bytes): re-download or re-compress it")
            return 0
        n = len(data)
        buffer[:n] = data
        return n


def decompressed(raw: BinaryIO, codec: str | None, label: str, buffer_size: int = 1 << 16) -> BinaryIO:
    """``raw``'s content: itself, or a buffered decompressing stream over it (gzip or zstd)."""
    if codec == GZIP:
        import gzip  # noqa: PLC0415

        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if codec == ZSTD:
        return io.BufferedReader(ZstdStream(raw, label), buffer_size)
    return raw
