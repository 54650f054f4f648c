"""Look at raw bytes before trusting them: binary or text, which encoding, where decoding breaks.

Users drop whatever is on their disk into the corpus panel. A PDF, a UTF-16 export from Excel or a
cp1252 file from an old Windows tool must each be refused with one line that says what it is and
what to do, instead of a ``UnicodeDecodeError`` traceback or a silently garbled vocabulary.
Everything here is a guess from a sample, so it only ever *suggests* an encoding; reading with it
is the user's explicit choice (``encoding=...``).
"""

from __future__ import annotations

import codecs
from collections import Counter

from workbench.corpus.location import CorpusPath
from workbench.errors import UnreadableText, WorkbenchError

BINARY_SAMPLE = 8192
# Control bytes that real text carries: tab, LF, VT, FF, CR and ESC (ANSI colour codes, as in the
# Debian fortune files). Backspace too: old man-page style overstrikes.
_TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r\x1b\x08")
_CONTROL_SHARE_LIMIT = 0.10

# Longest BOMs first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def bom_encoding(head: bytes) -> str | None:
    """The encoding a byte-order mark at the start announces, or None."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return None


def is_wide_encoding(encoding: str | None) -> bool:
    """True for encodings whose newline is not the single byte ``\\n`` (UTF-16/32, EBCDIC, ISO-2022).

    Those cannot be split into chunks at ``b"\\n"`` bytes and go through an incremental decoder.
    """
    if encoding is None:
        return False
    name = codecs.lookup(encoding).name
    if name.startswith(("iso2022", "hz", "utf-7")):
        return True
    return "\n".encode(encoding) != b"\n" or "a".encode(encoding) != b"a"


def check_encoding_name(encoding: str, path: CorpusPath) -> str:
    """Normalise an encoding the user typed, refusing unknown names with a clear message."""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise WorkbenchError(
            f"{path}: unknown encoding {encoding!r}: use a Python codec name such as utf-8, "
            "cp1252, latin-1, utf-16"
        ) from None


def binary_reason(head: bytes, encoding: str | None) -> str | None:
    """Why ``head`` (the first bytes of the content) looks binary, or None when it looks like text.

    NUL bytes are normal in UTF-16/32, so a BOM or an explicit wide encoding disables that test.
    """
    sample = head[:BINARY_SAMPLE]
    if not sample or encoding is not None:
        # An encoding the user named is honoured: decoding decides (a valid UTF-8 file may hold
        # NUL characters), and a file that does not decode is refused with its line.
        return None
    wide = is_wide_encoding(encoding) or (
        encoding is None and bom_encoding(sample) in ("utf-16", "utf-32")
    )
    if wide:
        return None
    if b"\x00" in sample:
        return "NUL bytes in the first 8 KB; name its encoding, e.g. utf-8, to read it anyway"
    controls = sum(n for byte, n in Counter(sample).items() if byte < 32 and byte not in _TEXT_CONTROLS)
    if controls / len(sample) > _CONTROL_SHARE_LIMIT:
        return f"{controls * 100 // len(sample)}% control characters in the first 8 KB"
    return None


# File signatures of what people drop into a corpus list by mistake: each is refused for what it
# is, with what to do, instead of a count of control characters.
_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"%PDF-", "a PDF document", "extract its text first (e.g. pdftotext)"),
    (b"PK\x03\x04", "a zip archive, or a .docx/.xlsx/.odt document", "unpack it and add the text files"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", ""),
    (b"\xff\xd8\xff", "a JPEG image", ""),
    (b"GIF8", "a GIF image", ""),
    (b"SQLite format 3\x00", "an SQLite database", "a project file is opened with File ▸ Open"),
    (b"\x1f\x8b", "gzip data", "rename it to end in .gz"),
    (b"\x28\xb5\x2f\xfd", "Zstandard data", "rename it to end in .zst"),
    (b"BZh", "bzip2 data", "decompress it (bunzip2) or re-compress it as .gz or .zst"),
    (b"\xfd7zXZ\x00", "xz data", "decompress it (unxz) or re-compress it as .gz or .zst"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "unpack it and add the text files"),
    (b"PAR1", "a Parquet file", "rename it to end in .parquet"),
    (b"ARROW1", "an Arrow file", "rename it to end in .arrow"),
    (b"\x7fELF", "a program (ELF executable)", ""),
)


def magic_reason(head: bytes) -> tuple[str, str] | None:
    """``(what, what to do)`` when a file's first bytes say it is clearly not text (a PDF, an
    archive), else None. ``what to do`` may be empty.

    Only signatures text cannot start with by accident are used (BZh and GIF8 also need a binary
    byte soon after), so a text file that happens to begin with ``BZh`` is still read.
    """
    for signature, what, advice in _MAGIC:
        if head.startswith(signature):
            if signature in (b"BZh", b"GIF8") and binary_reason(head, None) is None:
                continue
            return what, advice
    return None


def utf16_without_bom(head: bytes) -> str | None:
    """``utf-16-le``/``-be`` when NUL bytes sit at every other position (ASCII-heavy UTF-16)."""
    sample = head[:BINARY_SAMPLE] if len(head) % 2 == 0 else head[: min(len(head) - 1, BINARY_SAMPLE)]
    if len(sample) < 4:
        return None
    even_nul = sample[0::2].count(0) / (len(sample) / 2)
    odd_nul = sample[1::2].count(0) / (len(sample) / 2)
    if odd_nul > 0.4 and even_nul < 0.05:
        return "utf-16-le"
    if even_nul > 0.4 and odd_nul < 0.05:
        return "utf-16-be"
    return None


def guess_encoding(sample: bytes) -> str | None:
    """Best guess for bytes that are not valid UTF-8: a BOM, else cp1251 / cp1252 / latin-1.

    The heuristic is deliberately simple: text where bytes 0xC0-0xFF outnumber ASCII letters is
    almost certainly a Cyrillic single-byte code page (Latin-script languages use a few accented
    letters among many plain ones); otherwise cp1252, the usual Windows "ANSI" code page, when it
    decodes, and latin-1 (which decodes anything) when it does not.
    """
    bom = bom_encoding(sample)
    if bom and bom != "utf-8-sig":
        return bom
    counts = Counter(sample)
    high_letters = sum(counts[b] for b in range(0xC0, 0x100))
    ascii_letters = sum(counts[b] for b in range(0x41, 0x5B)) + sum(counts[b] for b in range(0x61, 0x7B))
    candidates = ("cp1251", "cp1252") if high_letters > ascii_letters else ("cp1252",)
    for name in candidates:
        try:
            sample.decode(name)
        except UnicodeDecodeError:
            continue
        return name
    return "latin-1"


def mostly_utf8(sample: bytes) -> bool:
    """True when a sample decodes as UTF-8 apart from a few stray bytes (a damaged UTF-8 file)."""
    text = sample.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    good = sum(1 for ch in text if ord(ch) > 127) - bad
    return good > 4 * bad


def decode_error(
    path: CorpusPath, line: int, offset: int, encoding: str | None, window: bytes
) -> WorkbenchError:
    """The user-facing error for bytes that do not decode: file:line, byte offset, what to do.

    ``window`` holds bytes around the failure; the suggestion is guessed from it.
    """
    used = encoding or "utf-8"
    where = f"{path}:{line}: not valid {used} at byte {offset}"
    if encoding not in (None, "utf-8", "utf_8", "utf-8-sig", "utf_8_sig"):
        return UnreadableText(f"{where}: the file is not in {used}; read it with its real encoding", path=str(path))
    guess = bom_encoding(window) if offset < 4 else None
    if guess in ("utf-16", "utf-32"):
        return UnreadableText(
            f"{where} (starts with a {str(guess).upper()} byte-order mark): read it with encoding {guess}",
            path=str(path), encoding=guess)
    if mostly_utf8(window):
        return UnreadableText(
            f"{where} (the rest looks like UTF-8; the file is damaged here): fix or remove the bad "
            "bytes, or read it with encoding latin-1 anyway", path=str(path), encoding="latin-1")
    guess = guess_encoding(window)
    return UnreadableText(f"{where} (looks like {guess}): read it with encoding {guess}", path=str(path),
                          encoding=guess)


SNIFF_LINES = 50  # enough lines to tell JSONL from prose that happens to start with "{"


def sniff_kind(head: str, complete: bool) -> str:
    """``"jsonl"`` when every sampled line of ``head`` is a JSON object, else ``"text"``.

    For names that say nothing (Spark's ``part-00000``): JSON lines are what Spark's
    ``write.json`` produces, text what ``saveAsTextFile`` does. The last line of an incomplete head
    may be cut, so it is not sampled; blank lines are ignored. Only a guess: the Corpus tab's
    "Read as" and ``--kind`` override it.
    """
    import json

    lines = head.splitlines()
    if not complete and lines:
        lines = lines[:-1]
    sampled = [line for line in lines if line.strip()][:SNIFF_LINES]
    if not sampled:
        return "text"
    for line in sampled:
        if not line.lstrip().startswith("{"):
            return "text"
        try:
            if not isinstance(json.loads(line), dict):
                return "text"
        except (ValueError, RecursionError):
            return "text"
    return "jsonl"
