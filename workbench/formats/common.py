"""Small helpers the format readers and writers share: piece ↔ text, vocab assembly, file reading.

Leaves out anything format-specific; each format module owns its own layout and error lines.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Iterable, Mapping

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.formats.bytes_unicode import bytes_to_unicode_str

# The largest tokenizer file read (o200k's .tiktoken is 3.6 MB, big tokenizer.json files ~30 MB).
MAX_TOKENIZER_FILE_BYTES = 512 << 20


def check_regular(path: Path) -> int:
    """Size of ``path``; a FIFO, device or socket is refused *before* ``open()`` could block on it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise WorkbenchError(f"{path}: no such file: check the path") from None
    except OSError as exc:
        raise WorkbenchError(f"{path}: cannot read ({exc.strerror}): check permissions") from None
    if stat.S_ISDIR(st.st_mode):
        raise WorkbenchError(f"{path} is a folder: give the tokenizer file itself")
    if not stat.S_ISREG(st.st_mode):
        raise WorkbenchError(f"{path}: not a regular file (a pipe or device): give the tokenizer file itself")
    if st.st_size > MAX_TOKENIZER_FILE_BYTES:
        raise WorkbenchError(f"{path}: {st.st_size / 1e6:.0f} MB is far larger than any tokenizer file "
                             f"(limit {MAX_TOKENIZER_FILE_BYTES / 1e6:.0f} MB): check the path")
    return st.st_size


def read_bytes(path: Path) -> bytes:
    """File contents, or a one-line error a user can act on."""
    check_regular(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise WorkbenchError(f"{path}: no such file: check the path") from None
    except IsADirectoryError:
        raise WorkbenchError(f"{path} is a folder: give the tokenizer file itself") from None
    except OSError as exc:
        raise WorkbenchError(f"{path}: cannot read ({exc.strerror}): check permissions") from None


def json_encoding(data: bytes) -> str:
    """The encoding of JSON bytes as RFC 8259 (and RFC 4627 before it) lets a reader tell: a byte
    order mark (UTF-8, UTF-16, UTF-32), else the pattern of zero bytes among the first four (JSON
    starts with ASCII) — ``json.detect_encoding``. Editors on Windows save UTF-16 or a UTF-8 BOM."""
    return json.detect_encoding(data)


def load_json(data: bytes, name: str, what: str = "JSON") -> object:
    """Parse JSON bytes in UTF-8 (with or without a BOM), UTF-16 or UTF-32 (:func:`json_encoding`);
    every way it can fail (syntax, encoding, 100,000-deep nesting, a 5,000-digit number) is one
    line naming the file."""
    encoding = json_encoding(data)
    try:
        return json.loads(data.decode(encoding))
    except UnicodeDecodeError as exc:
        shown = "UTF-8" if encoding.startswith("utf-8") else encoding.upper()
        line = data[: exc.start].decode(encoding, "replace").count("\n") + 1
        raise WorkbenchError(f"{name} line {line}: not valid {shown} text: re-save the file as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise WorkbenchError(f"{name} line {exc.lineno}: invalid {what} ({exc.msg}): fix the file") from None
    except RecursionError:
        raise WorkbenchError(f"{name}: {what} nested too deeply to be a tokenizer file: fix the file") from None
    except ValueError as exc:  # int() refusing thousands of digits
        raise WorkbenchError(f"{name}: invalid {what} ({str(exc)[:80]}): fix the file") from None


def read_text(path: Path) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise WorkbenchError(f"{path.name} line {line}: not valid UTF-8 text: re-save the file as UTF-8") from None


def piece_to_text(tokenizer: Tokenizer, token_id: int) -> str:
    """How a vocabulary file spells a piece: GPT-2 byte-level text for byte models, plain text for
    character models (whose pieces are whole characters, so always valid UTF-8)."""
    piece = tokenizer.vocab[token_id]
    if token_id in tokenizer.special_ids:
        return _special_name(tokenizer, token_id)
    if tokenizer.units == "bytes":
        return bytes_to_unicode_str(piece)
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkbenchError(
            f"id {token_id}: character-level piece {piece!r} is not valid UTF-8: re-train or export as bytes"
        ) from None


def _special_name(tokenizer: Tokenizer, token_id: int) -> str:
    for name, sid in tokenizer.special_tokens.items():
        if sid == token_id:
            return name
    raise KeyError(token_id)


# How many unused ids a vocabulary may leave beside its entries. Real files are dense or nearly so
# (cl100k leaves 19 ids free before its specials); a lone id of 10**9 in a 4 KB file would make
# the dense vocabulary below take gigabytes, so it is refused before anything is allocated.
MAX_UNUSED_IDS = 4096


def check_id_range(ids: Iterable[int], entries: int, source: str, what: str = "id") -> None:
    """Refuse ids a file of ``entries`` entries cannot densely hold (negative, or far beyond)."""
    limit = entries + max(MAX_UNUSED_IDS, entries)
    for token_id in ids:
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise WorkbenchError(f"{source}: {what} {token_id!r} is not a whole number: fix the file")
        if token_id < 0:
            raise WorkbenchError(f"{source}: {what} {token_id} is negative: {what}s must be 0 or more")
        if token_id >= limit:
            shown = str(token_id) if token_id < 10**30 else f"{str(token_id)[:12]}… ({len(str(token_id))} digits)"
            raise WorkbenchError(
                f"{source}: {what} {shown} is far beyond the {entries} entries the file holds "
                f"({what}s must be dense, below {limit}): fix the file")


def assemble_vocab(pieces: Mapping[int, bytes], specials: Mapping[str, int], source: str) -> tuple[bytes, ...]:
    """A dense id-indexed vocabulary; unused ids hold ``b""``. Specials take their own ids.

    Ids are checked against the number of entries first (:func:`check_id_range`), so a hostile
    id can cost a message, never memory.
    """
    check_id_range([*pieces.keys(), *specials.values()], len(pieces) + len(specials), source)
    size = max([*pieces.keys(), *specials.values(), -1]) + 1
    vocab = [b""] * size
    for token_id, piece in pieces.items():
        if token_id < 0:
            raise WorkbenchError(f"{source}: negative id {token_id} for {piece!r}: ids must be 0 or more")
        vocab[token_id] = piece
    for name, token_id in specials.items():
        if token_id < 0:
            raise WorkbenchError(f"{source}: special token {name!r} has negative id {token_id}")
        current = vocab[token_id]
        if current and current != name.encode("utf-8") and token_id in pieces:
            raise WorkbenchError(
                f"{source}: special token {name!r} and piece {current!r} share id {token_id}: give each its own id"
            )
        vocab[token_id] = name.encode("utf-8")
    return tuple(vocab)


def text_vocab(tokenizer: Tokenizer, *, with_specials: bool, label: str) -> tuple[dict[str, int], dict[int, str]]:
    """``({piece text: id}, {id: piece text})`` for a JSON vocabulary; unused ids are skipped and a
    piece that two ids share is refused (``label`` names the file that needs each piece once)."""
    vocab: dict[str, int] = {}
    text_of: dict[int, str] = {}
    specials = tokenizer.special_ids
    for token_id, piece in enumerate(tokenizer.vocab):
        special = token_id in specials
        if (special and not with_specials) or (not piece and not special):
            continue
        text = piece_to_text(tokenizer, token_id)
        if text in vocab:
            raise WorkbenchError(f"ids {vocab[text]} and {token_id} are both {text!r}: {label} needs each piece once")
        vocab[text] = token_id
        text_of[token_id] = text
    return vocab, text_of


def validate_tokenizer(tokenizer: Tokenizer, source: str) -> None:
    """Check an imported tokenizer as a whole before anything stores or encodes with it.

    The readers check their own layout; this checks what every later step relies on, whatever the
    format: merges name existing, distinct ids and make the concatenation of their parts, special
    ids are in range, the pre-tokenizer compiles and the normalizer names exist. A tokenizer
    that passes can be stored and encoded; one that does not is refused in one line.
    """
    from workbench.core.normalize import parse_normalizer
    from workbench.core.pretokenize import make_pretokenizer

    size = len(tokenizer.vocab)
    if size == 0:
        raise WorkbenchError(f"{source}: the vocabulary is empty")
    if tokenizer.units not in ("bytes", "chars") or tokenizer.merge_rule not in ("pairs", "bytes"):
        raise WorkbenchError(f"{source}: unknown units {tokenizer.units!r} or merge rule {tokenizer.merge_rule!r}")
    specials = tokenizer.special_ids
    for token, token_id in tokenizer.special_tokens.items():
        if not isinstance(token, str) or not token or not isinstance(token_id, int) or not 0 <= token_id < size:
            raise WorkbenchError(f"{source}: special token {token!r} has no valid id ({token_id!r})")
    made: set[int] = set()
    merges = tokenizer.merges
    for rank, merge in enumerate(() if getattr(merges, "valid_by_construction", False) else merges):
        left, right, new = merge
        if not all(isinstance(i, int) and 0 <= i < size for i in merge):
            raise WorkbenchError(f"{source}: merge {rank} names an id outside the vocabulary of {size}")
        if new in specials or left in specials or right in specials:
            raise WorkbenchError(f"{source}: merge {rank} uses the special token id {new if new in specials else left}")
        if tokenizer.vocab[new] != tokenizer.vocab[left] + tokenizer.vocab[right]:
            raise WorkbenchError(f"{source}: merge {rank} makes id {new}, whose piece is not its two parts joined")
        if new in made:
            raise WorkbenchError(f"{source}: id {new} is made by two merges (second: merge {rank})")
        made.add(new)
    if tokenizer.unk_token is not None and tokenizer.unk_token not in tokenizer.special_tokens:
        raise WorkbenchError(f"{source}: the unknown token {tokenizer.unk_token!r} is not one of its tokens")
    if not isinstance(tokenizer.end_of_word, str):
        raise WorkbenchError(f"{source}: the end-of-word marker must be text")
    make_pretokenizer(tokenizer.pretokenizer)
    parse_normalizer(tuple(tokenizer.normalizer))
