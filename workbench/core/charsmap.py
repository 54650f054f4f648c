"""SentencePiece's ``precompiled_charsmap``: a darts-clone double-array trie plus a blob of
replacement strings, run as Hugging Face's ``Precompiled`` normalizer runs it.

Layout (little-endian): a ``u32`` byte size of the trie, the trie as ``u32`` units, then the
replacement strings, each ending in NUL. A unit holds a label (its low byte, plus bit 31 for a
leaf), a has-leaf bit (8) and an offset to its children (bits 10–31, shifted by 8 when bit 9 is
set); a leaf unit's value (its low 31 bits) is where the replacement starts in the blob.

Normalizing is ``spm_precompiled``'s rule: per extended grapheme cluster shorter than 6 bytes,
the first (shortest) key that prefixes it replaces the whole cluster; otherwise each character is
replaced on its own when a key prefixes it. Python's ``regex`` ``\\X`` cuts the clusters; a
Unicode version apart from Rust's ``unicode-segmentation`` may cut rare clusters otherwise.
"""

from __future__ import annotations

import base64
import binascii
import struct

import regex

from workbench.errors import WorkbenchError

_GRAPHEME = regex.compile(r"\X")


class CharsMap:
    """A parsed charsmap; :meth:`normalize` is the ``Precompiled`` normalizer."""

    def __init__(self, data: bytes, where: str = "precompiled_charsmap"):
        if len(data) < 4:
            raise WorkbenchError(f"{where}: {len(data)} bytes is too short to hold a character map: "
                                 "the Precompiled normalizer cannot be read")
        (size,) = struct.unpack_from("<I", data, 0)
        if size % 4 or size == 0 or 4 + size > len(data):
            raise WorkbenchError(f"{where}: says its trie is {size} bytes but holds {len(data) - 4}: "
                                 "the Precompiled normalizer's character map is damaged")
        self.units = struct.unpack_from(f"<{size // 4}I", data, 4)
        self.blob = data[4 + size:]
        self._cache: dict[str, str | None] = {}
        try:  # every value must point into the blob at a NUL-terminated UTF-8 string
            self.blob.decode("utf-8")
        except UnicodeDecodeError:
            raise WorkbenchError(f"{where}: its replacement strings are not UTF-8: the Precompiled "
                                 "normalizer's character map is damaged") from None

    @classmethod
    def from_base64(cls, text: object, where: str) -> CharsMap:
        if not isinstance(text, str):
            raise WorkbenchError(f"{where}: the Precompiled normalizer has no precompiled_charsmap string")
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise WorkbenchError(f"{where}: precompiled_charsmap is not base64: the Precompiled "
                                 "normalizer's character map is damaged") from None
        return cls(data, where)

    def _unit(self, pos: int) -> int:
        if not 0 <= pos < len(self.units):
            raise WorkbenchError("precompiled_charsmap: the trie points outside itself: the Precompiled "
                                 "normalizer's character map is damaged")
        return self.units[pos]

    def _prefix_values(self, key: bytes) -> list[int]:
        pos = 0
        unit = self._unit(0)
        pos ^= _offset(unit)
        out: list[int] = []
        for c in key:
            if c == 0:
                break
            pos ^= c
            unit = self._unit(pos)
            if (unit & ((1 << 31) | 0xFF)) != c:
                return out
            pos ^= _offset(unit)
            if (unit >> 8) & 1:
                out.append(self._unit(pos) & ((1 << 31) - 1))
        return out

    def transform(self, chunk: str) -> str | None:
        """The replacement of the shortest key that prefixes ``chunk``, or ``None``."""
        if chunk in self._cache:
            return self._cache[chunk]
        found = self._prefix_values(chunk.encode("utf-8"))
        out = None
        if found:
            start = found[0]
            end = self.blob.find(b"\0", start)
            out = self.blob[start: end if end >= 0 else len(self.blob)].decode("utf-8", "replace")
        if len(self._cache) < 100_000:
            self._cache[chunk] = out
        return out

    def normalize(self, text: str) -> str:
        parts: list[str] = []
        for grapheme in _GRAPHEME.findall(text):
            if len(grapheme.encode("utf-8")) < 6:
                whole = self.transform(grapheme)
                if whole is not None:
                    parts.append(whole)
                    continue
            for ch in grapheme:
                one = self.transform(ch)
                parts.append(ch if one is None else one)
        return "".join(parts)

    def check(self) -> None:
        """Walk a few keys so a trie pointing outside itself is refused when read, not mid-encode."""
        for sample in ("a", "\u00a0", "\uff21", "\t", "\u3000", "\u2126"):
            self.transform(sample)
        self._cache.clear()


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)
