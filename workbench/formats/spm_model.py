"""SentencePiece ``.model`` files (a serialized ``ModelProto``): write ours, read anyone's.

The file is written and read through the protobuf library with the official schema, the
``sentencepiece_model_pb2`` module that the ``sentencepiece`` pip package ships. We use that
module instead of vendoring a generated copy because a generated ``_pb2`` is tied to the protobuf
runtime version that generated it (a vendored copy breaks when protobuf moves on), while the
package's own copy always matches the ``sentencepiece`` that loads the file — the very library
our parity tests and users check against. Both are imported lazily, only when a ``.model`` is
written or read; when missing, a :class:`WorkbenchError` says what to install. Nothing else in
the workbench needs them.

Writing unigram tokenizers: ``<unk>`` UNKNOWN, ``<s>``/``</s>`` and user specials CONTROL (never
matched in text, as our encoder treats specials without ``allow_special``), byte pieces BYTE,
the rest NORMAL with their float32 scores; ``trainer_spec`` (UNIGRAM, vocab size, byte fallback,
reserved ids) and ``normalizer_spec``: dummy prefix on, whitespace escaped to ▁, and the
tokenizer's normalizer when the .model can say it exactly — ``nmt`` as a character map
(:data:`NMT_CHARSMAP`), ``spm-whitespace`` as ``remove_extra_whitespaces`` (Unigram's defaults);
any other normalizer is left out with a note (``identity``: normalize the text first). Character-level
BPE with the ``metaspace`` preset is written as a BPE model (see :func:`_render_bpe`); reading
such a file back (no dummy prefix) is not supported yet.

Reading: Unigram and BPE models. NORMAL and USER_DEFINED pieces become pieces (a user-defined
piece gets the score sentencepiece 0.2.3's Viterbi gives it, ``(bytes − 1) × 0.1`` in float32), UNKNOWN and
CONTROL become special tokens, BYTE pieces the byte-fallback block, UNUSED ids stay empty.
A ``precompiled_charsmap`` cannot be run here: ``nmt_nfkc``/``nfkc`` models are read with our NFKC
normalizer (a note says so; NMT's extra rules for control characters are left out).
"""

from __future__ import annotations

import base64
from pathlib import Path

from workbench.core.model import Tokenizer
from workbench.core.unigram import META_PIECES, byte_block, byte_piece, to_float32
from workbench.errors import WorkbenchError
from workbench.formats.common import read_bytes

_BYTE_NAME = {byte_piece(b): b for b in range(256)}
# Our ``nmt`` normalizer (workbench.core.normalize.NMT_REMOVED / NMT_SPACES) as a SentencePiece
# ``precompiled_charsmap``: what sentencepiece's own rule compiler makes of those rules given as a
# normalization_rule_tsv (a test compiles them again and compares), so a .model carries them and
# sentencepiece runs exactly them.
NMT_CHARSMAP = base64.b64decode(
    "AAQAAACEAAAAAACAAQAAgI8JAACcGQAAmgwCAIARAACAMAMAgSkAALvwAgC/IQAAvSUAAA8AAAC/7AIADQAAAAwAAAATAAAAlmAC"
    "ABEAAACfSQAAFwAAABYAAAAVAAAAFAAAABsAAAAaAAAAGQAAABgAAAAfAAAAHgAAAB0AAAAcAAAAAYUAACIAAAADjQAAAokAAAWV"
    "AAAEkQAAB50AAAaZAAAJqQAACKEAAAutAAAKpQAADbkAAAy9AAAPvQAADrkAABHFAAAQwQAAE80AABLJAAAV1QAAFNEAABfdAAAW"
    "2QAAGeUAABjhAAAb7QAAGukAAB31AAAc8QAAH/0AAB75AACLCQEAQgAAAEEAAABAAAAAjxkBAI4dAQBFAAAAjBUBAEsAAABKAAAA"
    "SQAAAEgAAABPAAAATgAAAE0AAABMAAAAUwAAAFIAAABRAAAAUAAAAFcAAABWAAAAVQAAAFQAAABbAAAAWgAAAFkAAABYAAAAXwAA"
    "AF4AAAB/fQEAXAAAAGMAAABiAAAAqYEBAKiFAQBnAAAAZgAAAGUAAABkAAAAawAAAGoAAABpAAAAaAAAAG8AAABuAAAAbQAAAGwA"
    "AABzAAAAcgAAAHEAAABwAAAAdwAAAHYAAAB1AAAAdAAAAHsAAAB6AAAAeQAAAHgAAAB/AAAAfgAAAH0AAAB8AAAAgwAAAIIAAACB"
    "AAAAgAAAAIcAAACGAAAAhQAAAIQAAACLAAAAigAAAIkAAACIAAAAjwAAAI4AAACNAAAAjAAAAJMAAACSAAAAkQAAAJAAAACXAAAA"
    "lgAAAJUAAACUAAAAmwAAAJoAAACZAAAAmAAAAJ8AAACeAAAAnQAAAJwAAACjAAAAogAAAKEAAACgAAAApwAAAKYAAAClAAAApAAA"
    "AKsAAACqAAAAqQAAAKgAAACvAAAArgAAAK0AAACsAAAAswAAALIAAACxAAAAsAAAALcAAAC2AAAAtQAAALQAAAC7AAAAugAAALkA"
    "AAC4AAAAvwAAAL4AAAC9AAAAvAAAAOF8AQDCAAAAwQAAAOIQAQDHAAAAxgAAAMUAAADEAAAAywAAAMoAAADJAAAAyAAAAM8AAADO"
    "AAAA7/ABAMwAAADTAAAA0gAAANEAAADQAAAA1wAAANYAAADVAAAA1AAAANsAAADaAAAA2QAAANgAAADfAAAA3gAAAN0AAADcAAAA"
    "4wAAAOIAAADhAAAAwrwBAOcAAADmAAAA5QAAAOQAAADrAAAA6gAAAOkAAADoAAAA7wAAAO4AAADtAAAA7AAAAPMAAADyAAAA8QAA"
    "APAAAAD3AAAA9gAAAPUAAAD0AAAA+wAAANiEAQD5AAAA+AAAAP8AAAD+AAAA/QAAAPwAAAAAIAA="
)
# SentencePiece's piece types (sentencepiece_model.proto)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE = 1, 2


def _pb2():
    try:
        from sentencepiece import sentencepiece_model_pb2
    except ImportError as exc:
        raise WorkbenchError(
            f"SentencePiece .model files need the sentencepiece and protobuf packages ({exc}): "
            "pip install sentencepiece protobuf") from None
    return sentencepiece_model_pb2


def _fitting(tokenizer: Tokenizer) -> str:
    """The formats that fit ``tokenizer``, for a refusal's advice."""
    from workbench.formats.export import formats_for

    return ", ".join(formats_for(tokenizer.model, tokenizer.settings())) or "none"


def render_spm_model(tokenizer: Tokenizer) -> tuple[bytes, list[str]]:
    """``(.model bytes, notes)`` for a unigram tokenizer or a character-level BPE with ▁."""
    if tokenizer.model == "bpe" and tokenizer.merge_rule == "pairs":
        return _render_bpe(tokenizer)
    if tokenizer.model != "unigram":
        raise WorkbenchError(
            f"a SentencePiece .model export needs a unigram tokenizer or character BPE with metaspace; "
            f"{tokenizer.name or 'this one'} is {tokenizer.model}: export it as {_fitting(tokenizer)} instead")
    if tokenizer.pretokenizer != "metaspace":
        raise WorkbenchError(
            f"a SentencePiece .model needs the metaspace pre-tokenizer (▁ for spaces); this tokenizer uses "
            f"{tokenizer.pretokenizer!r}: retrain with --pretokenizer metaspace")
    pb = _pb2()
    notes: list[str] = []
    in_model = tokenizer.normalizer in _IN_MODEL
    if tokenizer.normalizer and not in_model:
        notes.append(f"the normalizer {','.join(tokenizer.normalizer)} is not in the .model: "
                     "sentencepiece sees the text as given, normalize it first")
    unk = tokenizer.special_tokens.get(tokenizer.unk_token or "<unk>")
    if unk is None:
        raise WorkbenchError("a SentencePiece .model needs an unknown token (<unk>): this tokenizer has none")
    byte_ids = set(byte_block(tokenizer) or ()) if tokenizer.byte_fallback else set()
    proto = pb.ModelProto()
    seen: set[str] = set()
    for token_id, raw in enumerate(tokenizer.vocab):
        piece = proto.pieces.add()
        if token_id == unk:
            piece.piece, piece.type = tokenizer.unk_token or "<unk>", UNKNOWN
        elif token_id in tokenizer.special_ids:
            piece.piece, piece.type = raw.decode("utf-8"), CONTROL
        elif token_id in byte_ids:
            piece.piece, piece.type = byte_piece(raw[0]), BYTE
        elif not raw:
            piece.piece, piece.type = f"<unused{token_id}>", UNUSED
        else:
            piece.piece, piece.type = raw.decode("utf-8"), NORMAL
            piece.score = tokenizer.scores[token_id]
        if piece.piece in seen:
            raise WorkbenchError(f"id {token_id}: piece {piece.piece!r} occurs twice; a .model needs unique pieces")
        seen.add(piece.piece)
    spec = proto.trainer_spec
    spec.model_type = UNIGRAM
    spec.vocab_size = len(tokenizer.vocab)
    spec.byte_fallback = bool(byte_ids)
    spec.unk_id = unk
    _set_role_ids(spec, tokenizer, {"bos": "<s>", "eos": "</s>", "pad": "<pad>"})
    spec.max_sentencepiece_length = max(16, max((len(p.piece) for p in proto.pieces), default=1))
    spec.split_by_whitespace = True
    norm = proto.normalizer_spec
    norm.name = "identity"
    if in_model and "nmt" in tokenizer.normalizer:
        norm.name = "user_defined"  # what sentencepiece names a model built from its own rule table
        norm.precompiled_charsmap = NMT_CHARSMAP
    norm.add_dummy_prefix = True
    norm.remove_extra_whitespaces = in_model and "spm-whitespace" in tokenizer.normalizer
    norm.escape_whitespaces = True
    return proto.SerializeToString(), notes


def _set_role_ids(spec, tokenizer: Tokenizer, fallback: dict[str, str]) -> None:
    """``bos_id``/``eos_id``/``pad_id`` and their pieces: the run's roles when it has them, else the
    SentencePiece names in ``fallback`` when they are special tokens, else -1 (none). sentencepiece
    finds a role by its piece, so the piece is written with the id. (The unknown token is the
    model's own; ``mask``/``cls``/``sep`` have no place in a .model.)"""
    for role in ("bos", "eos", "pad"):
        name = tokenizer.special_roles.get(role) or fallback.get(role)
        token_id = tokenizer.special_tokens.get(name, -1) if name else -1
        setattr(spec, f"{role}_id", token_id)
        if token_id >= 0 and name:
            setattr(spec, f"{role}_piece", name)


#: Normalizers a unigram .model expresses exactly: SentencePiece applies its character map, then
#: removes extra whitespace — so ``nmt`` (as NMT_CHARSMAP) before ``spm-whitespace``.
_IN_MODEL = {(), ("nmt",), ("spm-whitespace",), ("nmt", "spm-whitespace")}


def _render_bpe(tokenizer: Tokenizer) -> tuple[bytes, list[str]]:
    """Character-level BPE with the ``metaspace`` preset as a SentencePiece BPE model.

    SentencePiece merges the adjacent pair whose joined piece scores highest, so merged pieces
    score ``−rank`` and base characters below every merge; our preset adds no dummy ▁, hence
    ``add_dummy_prefix=false``. Pieces never hold ▁ after a non-▁ character, so sentencepiece's
    whole-line merging cannot cross our pre-token boundaries. Ids are ours; a tokenizer without
    an unknown token gets ``<unk>`` as one more id at the end (sentencepiece needs one). Where the
    two differ: a run of unknown characters is one ``<unk>`` in sentencepiece, one per character
    here.
    """
    if tokenizer.units != "chars" or tokenizer.end_of_word or tokenizer.pretokenizer != "metaspace":
        raise WorkbenchError(
            "a SentencePiece BPE .model needs character-level BPE with --pretokenizer metaspace and no "
            f"end-of-word marker: export this tokenizer as {_fitting(tokenizer)} instead")
    pb = _pb2()
    notes: list[str] = []
    if tokenizer.normalizer:
        notes.append(f"the normalizer {','.join(tokenizer.normalizer)} is not in the .model: "
                     "sentencepiece sees the text as given, normalize it first")
    rank_of = {new: rank for rank, (_a, _b, new) in enumerate(tokenizer.merges)}
    base_score = -float(len(tokenizer.merges) + 1)
    unk = tokenizer.special_tokens.get(tokenizer.unk_token or "<unk>")
    proto = pb.ModelProto()
    seen: set[str] = set()
    for token_id, raw in enumerate(tokenizer.vocab):
        piece = proto.pieces.add()
        if token_id == unk:
            piece.piece, piece.type = raw.decode("utf-8"), UNKNOWN
        elif token_id in tokenizer.special_ids:
            piece.piece, piece.type = raw.decode("utf-8"), CONTROL
        elif not raw:
            piece.piece, piece.type = f"<unused{token_id}>", UNUSED
        else:
            piece.piece, piece.type = raw.decode("utf-8"), NORMAL
            piece.score = -float(rank_of[token_id]) if token_id in rank_of else base_score
        if piece.piece in seen:
            raise WorkbenchError(f"id {token_id}: piece {piece.piece!r} occurs twice; a .model needs unique pieces")
        seen.add(piece.piece)
    if unk is None:
        unk = len(tokenizer.vocab)
        name = "<unk>" if "<unk>" not in seen else "<unk_sp>"
        proto.pieces.add(piece=name, type=UNKNOWN)
        notes.append(f"sentencepiece needs an unknown token: added {name} as id {unk}")
    spec = proto.trainer_spec
    spec.model_type = BPE
    spec.vocab_size = len(proto.pieces)
    spec.unk_id = unk
    _set_role_ids(spec, tokenizer, {})
    spec.max_sentencepiece_length = max(16, max((len(p.piece) for p in proto.pieces), default=1))
    norm = proto.normalizer_spec
    norm.name = "identity"
    norm.add_dummy_prefix = False
    norm.remove_extra_whitespaces = False
    norm.escape_whitespaces = True
    notes.append("a run of unknown characters is one <unk> in sentencepiece, one per character here")
    return proto.SerializeToString(), notes


def model_pieces(data: bytes) -> list[tuple[str, float]]:
    """``(piece, score)`` of every id of a serialized ``.model``, as SentencePiece lists them."""
    proto = _pb2().ModelProto()
    proto.ParseFromString(data)
    return [(p.piece, p.score) for p in proto.pieces]


def read_spm_model(path: Path) -> tuple[Tokenizer, list[str]]:
    """A SentencePiece ``.model`` (Unigram or BPE) as a :class:`Tokenizer`, with notes."""
    path = Path(path)
    data = read_bytes(path)
    pb = _pb2()
    from google.protobuf.message import DecodeError  # with _pb2()

    proto = pb.ModelProto()
    try:
        proto.ParseFromString(data)
    except DecodeError as exc:
        raise WorkbenchError(f"{path.name}: not a SentencePiece model ({type(exc).__name__}): "
                             "choose the .model file sentencepiece wrote") from None
    if not proto.pieces:
        raise WorkbenchError(f"{path.name}: a SentencePiece model without pieces: choose a trained .model file")
    _check_loads_in_sentencepiece(path, data)
    notes: list[str] = []
    kind = proto.trainer_spec.model_type or UNIGRAM
    if kind not in (UNIGRAM, BPE):
        raise WorkbenchError(f"{path.name}: SentencePiece model type {kind} (WORD/CHAR) is not supported: "
                             "only unigram and bpe models can be imported")
    norm = proto.normalizer_spec
    if not norm.add_dummy_prefix:
        raise WorkbenchError(f"{path.name}: models without the dummy ▁ prefix (add_dummy_prefix=false) "
                             "are not supported yet")
    if not norm.escape_whitespaces:
        raise WorkbenchError(f"{path.name}: models that keep spaces unescaped are not supported yet")
    if proto.trainer_spec.treat_whitespace_as_suffix:
        raise WorkbenchError(f"{path.name}: models with whitespace as suffix are not supported yet")
    normalizer: list[str] = []
    name = norm.name or "nmt_nfkc"
    if norm.precompiled_charsmap == NMT_CHARSMAP:
        normalizer.append("nmt")  # ours (see render_spm_model)
    elif name in ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf") and norm.precompiled_charsmap:
        normalizer.append("nmt-nfkc" if name.startswith("nmt") else "nfkc")
        if name.endswith("_cf"):
            normalizer.append("lower")
        notes.append(f"normalizer {name} run as Python's NFKC{' + lowercase' if name.endswith('_cf') else ''}"
                     f"{' with the NMT space and control-character rules' if name.startswith('nmt') else ''}: "
                     "the model's own character map may differ on rare characters")
    elif norm.precompiled_charsmap and name != "identity":
        notes.append(f"normalizer {name!r} has a character map we cannot run: text is not normalized")
    if norm.remove_extra_whitespaces:
        normalizer.append("spm-whitespace")
    vocab: list[bytes] = []
    scores: list[float] = []
    specials: dict[str, int] = {}
    unk_token = None
    byte_pieces = 0
    for token_id, p in enumerate(proto.pieces):
        kind_of = p.type or NORMAL
        score = 0.0
        if kind_of == UNKNOWN:
            specials[p.piece] = token_id
            unk_token = p.piece
            raw = p.piece.encode("utf-8")
        elif kind_of == CONTROL:
            specials[p.piece] = token_id
            raw = p.piece.encode("utf-8")
        elif kind_of == BYTE:
            if p.piece not in _BYTE_NAME:
                raise WorkbenchError(f"{path.name}: id {token_id}: byte piece {p.piece!r} is not <0xNN>")
            raw = bytes([_BYTE_NAME[p.piece]])
            byte_pieces += 1
        elif kind_of == UNUSED:
            raw = b""
        else:
            raw = p.piece.encode("utf-8")
            score = p.score
            if kind_of == USER_DEFINED:  # sentencepiece 0.2.3's Viterbi: 0.1 per byte after the first
                score = to_float32((len(raw) - 1) * 0.1)
        vocab.append(raw)
        scores.append(score)
    if unk_token is None:
        raise WorkbenchError(f"{path.name}: the model has no UNKNOWN piece: not a valid SentencePiece model")
    byte_fallback = bool(proto.trainer_spec.byte_fallback)
    tokenizer = Tokenizer(
        vocab=tuple(vocab), merges=(), units="chars", pretokenizer="metaspace", normalizer=tuple(normalizer),
        special_tokens=specials, name=path.stem, unk_token=unk_token,
        model="unigram" if kind == UNIGRAM else "bpe", merge_rule="pairs" if kind == UNIGRAM else "scores",
        scores=tuple(scores), byte_fallback=byte_fallback,
    )
    if byte_fallback and byte_block(tokenizer) is None:
        raise WorkbenchError(f"{path.name}: byte fallback is on but the 256 <0xNN> pieces are not in order")
    if kind == BPE:
        notes.append("SentencePiece BPE: pieces merge by score (highest first), as sentencepiece does")
    return tokenizer, notes


def _check_loads_in_sentencepiece(path: Path, data: bytes) -> None:
    """Refuse what ``sentencepiece`` itself refuses, with its reason.

    A ``.model`` is a document people send each other. NaN or infinite scores, duplicate or empty
    pieces and over-long pieces parse as protobuf but make sentencepiece refuse the file; imported
    anyway they gave splits that no other tool reproduces. The library that defines the format is
    the judge: it is a runtime dependency already (this module reads its schema).
    """
    try:
        import sentencepiece
    except ImportError:  # the schema import above needs it too, so this is not expected
        return
    try:
        sentencepiece.SentencePieceProcessor(model_proto=data)
    except (RuntimeError, OSError) as exc:
        reason = str(exc).strip().removeprefix("INTERNAL:").strip() or type(exc).__name__
        raise WorkbenchError(f"{path.name}: sentencepiece refuses this model ({reason}): "
                             "use a .model file that sentencepiece loads") from None


def write_spm_model(tokenizer: Tokenizer, path: Path) -> list[str]:
    """Render and write ``path`` in one step (exports go through formats.export's staging instead)."""
    data, notes = render_spm_model(tokenizer)
    Path(path).write_bytes(data)
    return notes


__all__ = ["META_PIECES", "read_spm_model", "render_spm_model", "write_spm_model"]
