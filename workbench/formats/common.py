"""Small helpers the format readers and writers share: piece ↔ text, vocab assembly, file reading.

Leaves out anything format-specific; each format module owns its own layout and error lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.formats.bytes_unicode import bytes_to_unicode_str


def read_bytes(path: Path) -> bytes:
    """File contents, or a one-line error a user can act on."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise WorkbenchError(f"{path}: no such file: check the path") from None
    except IsADirectoryError:
        raise WorkbenchError(f"{path} is a folder: give the tokenizer file itself") from None
    except OSError as exc:
        raise WorkbenchError(f"{path}: cannot read ({exc.strerror}): check permissions") from None


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


def assemble_vocab(pieces: Mapping[int, bytes], specials: Mapping[str, int], source: str) -> tuple[bytes, ...]:
    """A dense id-indexed vocabulary; unused ids hold ``b""``. Specials take their own ids."""
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
