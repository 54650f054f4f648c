"""Vocabulary-only lists: WordPiece ``vocab.txt`` and SentencePiece-style ``.vocab``.

Both are "line number = id" files without merges, so what they can carry is the pieces:

* ``vocab.txt``: one piece per line (BERT's layout, what ``WordPiece.from_file`` reads). Byte-level
  pieces are written in GPT-2's byte-to-unicode form (the only one-line, lossless spelling of an
  arbitrary byte string); character pieces as plain text. Unused ids become ``[unusedN]`` as in
  BERT's vocabularies, so later lines keep their ids. A file with ``##`` continuation pieces reads
  back as a WordPiece tokenizer (``model="wordpiece"``, BERT's ``bert`` pre-tokenizer; normalizer
  ``bert-lower`` when no piece has an upper-case letter, else ``bert`` — the file does not say, so
  this is a guess the import notes name); any other as a vocabulary-only tokenizer (units
  ``chars``, no merges — encode it with greedy longest match). ``[X]`` and ``<x>`` lines are
  special tokens, ``[UNK]``/``<unk>`` the unknown token.
* ``.vocab``: ``piece<TAB>score``; spaces are written ``▁``; a piece that is not printable UTF-8
  (a lone byte, a partial character, control characters) is written as ``<0xNN>`` bytes, the
  SentencePiece byte-fallback spelling; score is ``0`` for base symbols and specials and ``-rank``
  for merged pieces (so the first merge reads ``-0``, as SentencePiece writes it). A byte-level
  ``.vocab`` is read back with merges recovered from the line order (as for ``.tiktoken``). A
  Unigram's ``.vocab`` is what ``spm_train`` writes beside its ``.model``: that model's pieces
  (``▁`` kept, ``<0xNN>`` byte pieces) and float32 log probabilities; scores that are not whole
  numbers read back as a Unigram. Exports offer ``.vocab`` for Unigram runs only and
  ``vocab.txt`` for WordPiece runs only (``formats.export.formats_for``).

Left out: a vocab.txt cannot say its normalizer or pre-tokenizer; WordPiece pieces are written as
they are (``##`` included).
"""

from __future__ import annotations

from pathlib import Path

import regex

from workbench.core.model import Tokenizer
from workbench.core.pretokenize import METASPACE
from workbench.core.unigram import byte_block
from workbench.errors import WorkbenchError
from workbench.formats.common import assemble_vocab, piece_to_text, read_text
from workbench.formats.recover import recover_merges

_SPECIAL_LINE = regex.compile(r"^(\[[^\[\]\s]+\]|<[^<>\s]+>)$")
_BYTE_TOKENS = regex.compile(r"^(?:<0x[0-9A-Fa-f]{2}>)+$")
_UNK_NAMES = ("[UNK]", "<unk>")


# ------------------------------------------------------------------------------------ vocab.txt
def render_wordpiece(tokenizer: Tokenizer) -> tuple[bytes, list[str]]:
    """``(vocab.txt bytes, notes)``: line ``i + 1`` is the piece of id ``i``."""
    lines: list[str] = []
    notes: list[str] = []
    for token_id, piece in enumerate(tokenizer.vocab):
        if not piece and token_id not in tokenizer.special_ids:
            lines.append(f"[unused{token_id}]")
            continue
        text = piece_to_text(tokenizer, token_id)
        if "\n" in text or "\r" in text or text != text.strip(" ") and token_id not in tokenizer.special_ids:
            raise WorkbenchError(
                f"id {token_id}: piece {text!r} has a line break or edge spaces, which vocab.txt cannot hold: "
                "export as spm-vocab or hf instead"
            )
        lines.append(text)
    if tokenizer.units == "bytes":
        notes.append("byte-level pieces are written in GPT-2 byte-to-unicode form (a space is Ġ)")
    if tokenizer.merges and tokenizer.model != "wordpiece":
        notes.append("vocab.txt holds no merges: loaders will encode by greedy longest match")
    return ("\n".join(lines) + "\n").encode("utf-8"), notes


def _lines(path: Path) -> list[str]:
    """The file's lines (one piece each); a final newline does not make an extra empty line."""
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_wordpiece(path: Path) -> tuple[Tokenizer, list[str]]:
    """A vocabulary-only tokenizer from ``vocab.txt`` (units ``chars``, no merges)."""
    path = Path(path)
    lines = _lines(path)
    pieces: dict[int, bytes] = {}
    specials: dict[str, int] = {}
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        text = line.rstrip("\r")
        if not text:
            raise WorkbenchError(f"{path.name} line {number}: empty line: each line must hold one piece (line number = id)")
        if text in seen:
            raise WorkbenchError(f"{path.name} line {number}: {text!r} already on line {seen[text]}")
        seen[text] = number
        if _SPECIAL_LINE.match(text):
            specials[text] = number - 1
        else:
            pieces[number - 1] = text.encode("utf-8")
    if not lines:
        raise WorkbenchError(f"{path.name}: empty vocabulary")
    unk = next((name for name in _UNK_NAMES if name in specials), None)
    if any(piece.startswith(b"##") for piece in pieces.values()):
        cased = any(piece.decode("utf-8") != piece.decode("utf-8").lower() for piece in pieces.values())
        normalizer = "bert" if cased else "bert-lower"
        tokenizer = Tokenizer(
            vocab=assemble_vocab(pieces, specials, path.name), merges=(), units="chars", pretokenizer="bert",
            normalizer=(normalizer,), special_tokens=specials, name=path.stem, unk_token=unk or "[UNK]",
            model="wordpiece", continuing_prefix="##",
        )
        why = "upper-case pieces seen" if cased else "no upper-case piece"
        return tokenizer, [f"vocab.txt with ## pieces: imported as WordPiece "
                           f"(BERT pre-tokenizer, normalizer {normalizer}: {why})"]
    tokenizer = Tokenizer(
        vocab=assemble_vocab(pieces, specials, path.name), merges=(), units="chars", pretokenizer="whitespace",
        special_tokens=specials, name=path.stem, unk_token=unk, merge_rule="pairs",
    )
    return tokenizer, ["vocab.txt has no merges: imported as a vocabulary (encode with greedy longest match)"]


# ---------------------------------------------------------------------------------------- .vocab
def spm_piece_text(piece: bytes, single_byte_base: bool) -> str:
    """SentencePiece spelling: ``▁`` for spaces, ``<0xNN>`` for what is not printable text."""
    if single_byte_base and len(piece) == 1 and not (0x21 <= piece[0] <= 0x7E):
        return f"<0x{piece[0]:02X}>"
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(f"<0x{b:02X}>" for b in piece)
    if not text or any(not (ch.isprintable() or ch == " ") for ch in text) or _BYTE_TOKENS.match(text):
        return "".join(f"<0x{b:02X}>" for b in piece)
    return text.replace(" ", METASPACE)


def spm_text_piece(text: str) -> bytes:
    """Inverse of :func:`spm_piece_text`."""
    if _BYTE_TOKENS.match(text):
        return bytes(int(text[i + 3 : i + 5], 16) for i in range(0, len(text), 6))
    return text.replace(METASPACE, " ").encode("utf-8")


def render_spm_vocab(tokenizer: Tokenizer) -> tuple[bytes, list[str]]:
    """``(.vocab bytes, notes)``: ``piece<TAB>score`` per id."""
    if tokenizer.model == "unigram":
        return render_unigram_vocab(tokenizer)
    rank_of = {new: rank for rank, (_l, _r, new) in enumerate(tokenizer.merges)}
    lines: list[str] = []
    for token_id, piece in enumerate(tokenizer.vocab):
        if token_id in tokenizer.special_ids:
            lines.append(f"{piece_to_text(tokenizer, token_id)}\t0")
        elif not piece:
            lines.append(f"<unused{token_id}>\t0")
        elif token_id in rank_of:
            lines.append(f"{spm_piece_text(piece, False)}\t-{rank_of[token_id]}")
        else:
            lines.append(f"{spm_piece_text(piece, tokenizer.units == 'bytes')}\t0")
    return ("\n".join(lines) + "\n").encode("utf-8"), []


def render_unigram_vocab(tokenizer: Tokenizer) -> tuple[bytes, list[str]]:
    """A Unigram's ``.vocab`` as ``spm_train`` writes it beside the ``.model``: the model's pieces
    (SentencePiece's spelling: ``<unk>``, ``<0xNN>`` byte pieces) and their float32 log
    probabilities, read from the very ``.model`` we export, so the two files always agree."""
    from workbench.formats.spm_model import model_pieces, render_spm_model

    data, notes = render_spm_model(tokenizer)
    pieces = model_pieces(data)
    broken = next((i for i, (piece, _score) in enumerate(pieces) if "\n" in piece or "\r" in piece), None)
    if broken is not None:
        raise WorkbenchError(f"id {broken}: piece {pieces[broken][0]!r} holds a line break, which a .vocab line "
                             "cannot: export spm (.model) or hf instead")
    # A piece may hold a tab, as in SentencePiece's own .vocab: the score follows the last tab.
    lines = [f"{piece}\t{float32_text(score)}" for piece, score in pieces]
    return ("\n".join(lines) + "\n").encode("utf-8"), notes


def float32_text(score: float) -> str:
    """The shortest decimal that reads back as the same float32 (SentencePiece keeps float32)."""
    import struct

    target = struct.pack("<f", score)
    for digits in range(6, 10):
        text = f"{score:.{digits}g}"
        if struct.pack("<f", float(text)) == target:
            return text
    return repr(score)


def _rows(path: Path) -> list[tuple[str, float]]:
    """``(piece text, score)`` per line of a ``.vocab``, refusing a malformed line by number."""
    rows = []
    for number, line in enumerate(_lines(path), start=1):
        line = line.rstrip("\r")
        fields = line.rsplit("\t", 1)  # a piece may hold a tab; the score follows the last one
        if len(fields) != 2 or not fields[0]:
            raise WorkbenchError(f"{path.name} line {number}: expected a piece and a score separated by one tab")
        try:
            rows.append((fields[0], float(fields[1])))
        except ValueError:
            raise WorkbenchError(f"{path.name} line {number}: score {fields[1]!r} is not a number") from None
    return rows


def read_spm_vocab(path: Path) -> tuple[Tokenizer, list[str]]:
    """Pieces from a ``.vocab``: log-probability scores (not all whole numbers) make it a Unigram
    model; byte-level files (all 256 ``<0xNN>``) get merges recovered."""
    path = Path(path)
    rows = _rows(path)
    if any(not score.is_integer() for _text, score in rows):
        return _read_unigram_vocab(path, rows)
    pieces: dict[int, bytes] = {}
    specials: dict[str, int] = {}
    seen: dict[bytes, int] = {}
    for number, (text, _score) in enumerate(rows, start=1):
        if _SPECIAL_LINE.match(text) and not _BYTE_TOKENS.match(text):
            specials[text] = number - 1
            continue
        piece = spm_text_piece(text)
        if piece in seen:
            raise WorkbenchError(f"{path.name} line {number}: {text!r} already on line {seen[piece]}")
        seen[piece] = number
        pieces[number - 1] = piece
    if not rows:
        raise WorkbenchError(f"{path.name}: empty vocabulary")
    byte_level = all(bytes([b]) in seen for b in range(256))
    notes: list[str] = []
    merges: tuple[tuple[int, int, int], ...] = ()
    if byte_level:
        ranks = {piece: token_id for token_id, piece in pieces.items()}
        found, unexplained = recover_merges(ranks)
        merges = tuple(found)
        if unexplained:
            notes.append(f"{len(unexplained)} pieces are not the merge of two earlier pieces")
    else:
        notes.append(".vocab without all 256 byte pieces: imported as a character vocabulary without merges")
    unk = next((name for name in _UNK_NAMES if name in specials), None)
    tokenizer = Tokenizer(
        vocab=assemble_vocab(pieces, specials, path.name), merges=merges,
        units="bytes" if byte_level else "chars", pretokenizer="metaspace", special_tokens=specials,
        name=path.stem, unk_token=unk, merge_rule="bytes" if byte_level else "pairs",
    )
    return tokenizer, notes


#: What a Unigram ``.vocab`` is read with: SentencePiece's control-character and extra-space clean-up
#: (without NFKC), the Unigram family's default; a run cleaned otherwise is not offered this format.
SPM_VOCAB_NORMALIZER = ("nmt", "spm-whitespace")


def _read_unigram_vocab(path: Path, rows: list[tuple[str, float]]) -> tuple[Tokenizer, list[str]]:
    """A Unigram ``.vocab`` (as ``spm_train`` writes it): ``<unk>``/``<s>``-style lines are special
    tokens, ``<0xNN>`` lines the byte-fallback block, every other line a piece as written (``▁``
    kept: it is part of the piece) with its log probability. The file does not say its normalizer:
    SentencePiece's clean-up (:data:`SPM_VOCAB_NORMALIZER`, a Unigram run's default) is assumed,
    and a note says so."""
    specials: dict[str, int] = {}
    vocab: list[bytes] = []
    scores: list[float] = []
    seen: dict[str, int] = {}
    for number, (text, score) in enumerate(rows, start=1):
        if text in seen:
            raise WorkbenchError(f"{path.name} line {number}: {text!r} already on line {seen[text]}")
        seen[text] = number
        if _BYTE_TOKENS.match(text) and len(text) == 6:
            vocab.append(bytes([int(text[3:5], 16)]))
        elif _SPECIAL_LINE.match(text):
            specials[text] = number - 1
            vocab.append(text.encode("utf-8"))
        else:
            vocab.append(text.encode("utf-8"))
        scores.append(0.0 if text in specials else score)
    unk = next((name for name in _UNK_NAMES if name in specials), None)
    byte_fallback = all(f"<0x{b:02X}>" in seen for b in range(256))
    tokenizer = Tokenizer(
        vocab=tuple(vocab), merges=(), units="chars", pretokenizer="metaspace", special_tokens=specials,
        name=path.stem, unk_token=unk, model="unigram", scores=tuple(scores), byte_fallback=byte_fallback,
        normalizer=SPM_VOCAB_NORMALIZER,
    )
    if byte_fallback and byte_block(tokenizer) is None:
        raise WorkbenchError(f"{path.name}: the 256 <0xNN> byte pieces are not in order: not a byte-fallback block")
    return tokenizer, [".vocab with log-probability scores: imported as a Unigram model; the file does not "
                       f"say its normalizer: SentencePiece's clean-up ({','.join(SPM_VOCAB_NORMALIZER)}) is assumed"]
