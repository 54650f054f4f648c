"""Tell a tokenizer file's format from its name and first bytes, and load it.

Names decide first (``tokenizer.json``, ``vocab.json``, ``merges.txt``, ``*.tiktoken``, ``vocab.txt``,
``*.vocab``, ``*.csv``); otherwise the content is sniffed (a JSON object with ``"model"``, a
``base64 rank`` line, a ``piece<TAB>score`` line, ``#version``). Loading returns notes alongside
the tokenizer (assumed pattern, recognised public file …) for the CLI and window to show.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import regex

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.formats.common import check_regular, json_encoding, load_json, read_bytes, validate_tokenizer
from workbench.formats.gpt2_files import read_gpt2
from workbench.formats.hf_json import read_hf_json
from workbench.formats.spm_model import read_spm_model
from workbench.formats.tiktoken_file import SIDECAR_FORMAT, read_tiktoken
from workbench.formats.vocab_lists import read_spm_vocab, read_wordpiece

_log = logging.getLogger(__name__)
FORMATS = ("hf", "hf-folder", "gpt2", "tiktoken", "wordpiece", "spm", "spm-vocab", "merges-csv")
SPM_MODEL = "spm"  # a SentencePiece ModelProto (.model), read and written by formats.spm_model
_RANK_LINE = regex.compile(rb"^[A-Za-z0-9+/]+=*[ \t]+\d+\r?$")
_SPM_LINE = regex.compile(r"^[^\t]+\t-?\d+(\.\d+)?([eE][-+]?\d+)?\r?$")


@dataclass(frozen=True)
class ImportResult:
    """What was loaded, from which format, and what the user should know about it."""

    tokenizer: Tokenizer
    format: str
    notes: tuple[str, ...] = ()


def detect_format(path: str | Path) -> str:
    """One of :data:`FORMATS` or :data:`SPM_MODEL` for ``path`` (a file, or a folder holding a GPT-2
    pair or tokenizer.json)."""
    path = Path(path)
    if path.is_dir():
        if (path / "vocab.json").exists() and (path / "merges.txt").exists():
            return "gpt2"
        if (path / "tokenizer.json").exists():
            return "hf"
        raise WorkbenchError(f"{path}: folder holds neither vocab.json + merges.txt nor tokenizer.json")
    if not path.exists():
        raise WorkbenchError(f"{path}: no such file: check the path")
    check_regular(path)
    name = path.name.lower()
    if name.endswith(".tiktoken"):
        return "tiktoken"
    if name in ("vocab.json", "merges.txt"):
        return "gpt2"
    if name == "tokenizer.json":
        return "hf"
    if name.endswith(".csv"):
        return "merges-csv"
    if name.endswith(".vocab"):
        return "spm-vocab"
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if name.endswith(".model") or _looks_like_model_proto(head):
        return SPM_MODEL
    first = next((line for line in head.split(b"\n") if line.strip()), b"")
    if _starts_json_object(head):
        return _json_kind(path)
    if first.startswith(b"#version"):
        return "gpt2"
    if _RANK_LINE.match(first):
        return "tiktoken"
    text = first.decode("utf-8", "replace")
    if _SPM_LINE.match(text):
        return "spm-vocab"
    if first.startswith(b"rank,left,right"):
        return "merges-csv"
    if name.endswith(".txt") and ("vocab" in name or any(
            marker in head for marker in (b"[PAD]", b"[UNK]", b"[CLS]", b"<unk>"))):
        # Only what names or marks itself as a vocabulary: any other .txt is far more likely a corpus.
        return "wordpiece"
    raise WorkbenchError(
        f"{path.name}: cannot tell the format: expected tokenizer.json, vocab.json + merges.txt, *.tiktoken, "
        "vocab.txt, *.vocab, a SentencePiece *.model or a merges CSV"
    )


def _looks_like_model_proto(head: bytes) -> bool:
    """A SentencePiece ModelProto starts with its first piece: field 1 (``0x0a``), a length, then
    the piece message whose own field 1 (``0x0a``) is the piece text (``<unk>`` in practice)."""
    return len(head) > 4 and head[0] == 0x0A and head[2] == 0x0A and b"<unk>" in head[:64]


def _starts_json_object(head: bytes) -> bool:
    """True when the file's text starts with ``{`` in any encoding JSON may come in (a BOM, UTF-16)."""
    text = head.decode(json_encoding(head), "ignore")  # "ignore": the head may end mid-character
    return text.lstrip("\ufeff \t\r\n").startswith("{")


def _json_kind(path: Path) -> str:
    document = load_json(read_bytes(path), path.name)
    if isinstance(document, dict) and "model" in document:
        return "hf"
    if isinstance(document, dict) and document.get("format") == SIDECAR_FORMAT:
        return "tiktoken"
    if isinstance(document, dict) and all(isinstance(v, int) for v in document.values()):
        return "gpt2"
    raise WorkbenchError(f"{path.name}: a JSON file that is neither tokenizer.json nor a GPT-2 vocab.json")


# What a reader's own checks may still miss in a hostile file: a value of the wrong JSON type
# deep inside, a number Python refuses, nesting beyond the recursion limit. Each becomes one line
# naming the file (and is logged with its traceback for us), never a traceback for the user.
_MALFORMED = (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError, RecursionError)


def import_tokenizer(path: str | Path, *, pattern: str | None = None) -> ImportResult:
    """Detect, load and validate ``path``; ``pattern`` is the pre-tokenizer for files that carry
    none (an unknown ``.tiktoken`` without sidecar, a GPT-2 pair). Everything is checked here,
    before a caller stores or encodes anything (:func:`~workbench.formats.common.validate_tokenizer`)."""
    path = Path(path)
    try:
        result = _import(path, pattern)
        validate_tokenizer(result.tokenizer, path.name)
    except _MALFORMED as exc:
        _log.debug("malformed tokenizer file %s", path, exc_info=True)
        detail = " ".join(str(exc).split())[:120]
        raise WorkbenchError(f"{path.name} is malformed ({detail}): "
                             "fix the file or export it again") from None
    return result


def _import(path: Path, pattern: str | None) -> ImportResult:
    fmt = detect_format(path)
    if fmt == "hf":
        tokenizer, notes = read_hf_json(path / "tokenizer.json" if path.is_dir() else path)
    elif fmt == "gpt2":
        folder = path if path.is_dir() else path.parent
        tokenizer, notes = read_gpt2(folder / "vocab.json", folder / "merges.txt", pattern=pattern)
    elif fmt == "tiktoken":
        if path.name.lower().endswith(".json"):  # the sidecar was given: load the ranks beside it
            path = path.with_name(path.name[: -len(".json")])
        tokenizer, notes = read_tiktoken(path, pattern=pattern)
    elif fmt == "wordpiece":
        tokenizer, notes = read_wordpiece(path)
    elif fmt == "spm-vocab":
        tokenizer, notes = read_spm_vocab(path)
    elif fmt == SPM_MODEL:
        tokenizer, notes = read_spm_model(path)
    else:
        raise WorkbenchError(
            f"{path.name} is a merges CSV, a report without the vocabulary and settings: "
            "import the tokenizer.json, .tiktoken or vocab.json it came from"
        )
    return ImportResult(tokenizer, fmt, tuple(notes))


def load_tokenizer_file(path: str | Path, *, pattern: str | None = None) -> Tokenizer:
    """The tokenizer in ``path`` (see :func:`import_tokenizer` for the notes)."""
    return import_tokenizer(path, pattern=pattern).tokenizer
