"""GPT-2 style ``vocab.json`` + ``merges.txt``, read and written (the pair ``tokenizers``'
``BPE.from_file`` and ``transformers``' GPT-2 loaders take).

``vocab.json`` maps each piece to its id; ``merges.txt`` starts with ``#version: 0.2`` and lists
one merge per line, ``left right`` separated by one space, in rank order, ending with a newline.
Byte-level pieces use GPT-2's byte-to-unicode form; character-level pieces are plain text.

The pair carries no pre-tokenizer or normalizer: loaders assume GPT-2's pattern, and so does our
reader unless the caller passes another. Entries that are neither a base symbol nor made by a
merge (``<|endoftext|>``) are read as special tokens; a multi-character entry used only as the
right side of merges (``</w>``) is read as the end-of-word marker.
"""

from __future__ import annotations

import json
from pathlib import Path

from workbench.core.model import Tokenizer
from workbench.core.pretokenize import make_pretokenizer
from workbench.errors import WorkbenchError
from workbench.formats.bytes_unicode import (
    byte_decoder,
    byte_encoder,
    is_byte_level_text,
)
from workbench.formats.common import (
    assemble_vocab,
    check_id_range,
    load_json,
    read_bytes,
    read_text,
    text_vocab,
)

MERGES_HEADER = "#version: 0.2"


def render_gpt2(tokenizer: Tokenizer) -> tuple[bytes, bytes, list[str]]:
    """``(vocab.json, merges.txt, notes)``."""
    notes: list[str] = []
    vocab, text_of = text_vocab(tokenizer, with_specials=True, label="vocab.json")
    lines = [MERGES_HEADER]
    for rank, (left, right, _new) in enumerate(tokenizer.merges):
        a, b = text_of[left], text_of[right]
        for side in (a, b):
            if any(ch.isspace() for ch in side):
                raise WorkbenchError(
                    f"merge rank {rank}: piece {side!r} contains whitespace, which merges.txt cannot hold: "
                    "export as hf instead"
                )
        lines.append(f"{a} {b}")
    pre = make_pretokenizer(tokenizer.pretokenizer)
    if pre.name != "gpt2":
        notes.append(
            f"vocab.json/merges.txt carry no pre-tokenizer: loaders assume GPT-2's; this tokenizer uses {pre.spec()!r}"
        )
    if tokenizer.normalizer:
        notes.append(f"vocab.json/merges.txt carry no normalizer ({','.join(tokenizer.normalizer)}): apply it yourself")
    if tokenizer.merge_rule != "pairs":
        notes.append("merges were recovered from ranks; loaders apply them by pair rank")
    vocab_bytes = (json.dumps(vocab, ensure_ascii=False) + "\n").encode("utf-8")
    merges_bytes = ("\n".join(lines) + "\n").encode("utf-8")
    return vocab_bytes, merges_bytes, notes


def read_gpt2(vocab_path: Path, merges_path: Path | None = None, pattern: str | None = None
              ) -> tuple[Tokenizer, list[str]]:
    """Load the pair; ``merges_path`` defaults to ``merges.txt`` beside ``vocab.json``."""
    vocab_path = Path(vocab_path)
    merges_path = Path(merges_path) if merges_path is not None else vocab_path.with_name("merges.txt")
    if not merges_path.exists():
        raise WorkbenchError(f"{merges_path}: not found: a GPT-2 vocab.json needs merges.txt beside it")
    notes: list[str] = []
    raw = _read_vocab_json(vocab_path)
    # Byte-level vocabularies hold all 256 byte stand-ins; a character vocabulary of plain ASCII
    # letters is also "byte-level text", so the characters alone cannot decide.
    byte_level = all(ch in raw for ch in byte_encoder().values()) and all(is_byte_level_text(t) for t in raw)
    decoder = byte_decoder()

    def to_bytes(text: str) -> bytes:
        return bytes(decoder[ch] for ch in text) if byte_level else text.encode("utf-8")

    id_of_text = raw
    merges: list[tuple[int, int, int]] = []
    pairs_seen: set[tuple[int, int]] = set()
    lines = read_text(merges_path).split("\n")
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if not line or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise WorkbenchError(f"{merges_path.name} line {number}: expected two pieces separated by one space")
        a, b = parts
        for side in (a, b):
            if side not in id_of_text:
                raise WorkbenchError(f"{merges_path.name} line {number}: piece {side!r} is not in {vocab_path.name}")
        if a + b not in id_of_text:
            raise WorkbenchError(f"{merges_path.name} line {number}: result {a + b!r} is not in {vocab_path.name}")
        pair = (id_of_text[a], id_of_text[b])
        if pair in pairs_seen:
            raise WorkbenchError(f"{merges_path.name} line {number}: merge {a} {b} is listed twice")
        pairs_seen.add(pair)
        merges.append((pair[0], pair[1], id_of_text[a + b]))

    made = {new for _a, _b, new in merges}
    used_left = {a for a, _b, _n in merges}
    used_right = {b for _a, b, _n in merges}
    specials: dict[str, int] = {}
    pieces: dict[int, bytes] = {}
    end_of_word = ""
    for text, token_id in raw.items():
        single = len(to_bytes(text)) == 1 if byte_level else len(text) == 1
        if single or token_id in made:
            pieces[token_id] = to_bytes(text)
        elif token_id in used_right and token_id not in used_left and not byte_level and not end_of_word:
            end_of_word = text
            pieces[token_id] = to_bytes(text)
        elif token_id in used_left or token_id in used_right:
            pieces[token_id] = to_bytes(text)
        else:
            specials[text] = token_id
    if pattern is None:
        pretokenizer = "gpt2" if byte_level else "whitespace"
        notes.append(f"vocab.json/merges.txt carry no pre-tokenizer: assumed {pretokenizer}")
    else:
        pretokenizer = pattern
    vocab = assemble_vocab(pieces, specials, vocab_path.name)
    tokenizer = Tokenizer(
        vocab=vocab, merges=tuple(merges), units="bytes" if byte_level else "chars",
        pretokenizer=make_pretokenizer(pretokenizer).spec(), special_tokens=specials,
        end_of_word=end_of_word, name=vocab_path.parent.name or vocab_path.stem, merge_rule="pairs",
    )
    return tokenizer, notes


def _read_vocab_json(path: Path) -> dict[str, int]:
    raw = load_json(read_bytes(path), path.name)
    if not isinstance(raw, dict):
        raise WorkbenchError(f"{path.name}: expected an object mapping each piece to its id")
    seen: dict[int, str] = {}
    for text, token_id in raw.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise WorkbenchError(f"{path.name}: id of {text!r} is {token_id!r}: ids must be whole numbers ≥ 0")
        if token_id in seen:
            raise WorkbenchError(f"{path.name}: id {token_id} is given to both {seen[token_id]!r} and {text!r}")
        seen[token_id] = text
    check_id_range(raw.values(), len(raw), path.name)  # before anything sized by the largest id
    if not raw:
        raise WorkbenchError(f"{path.name}: the vocabulary is empty")
    return raw
