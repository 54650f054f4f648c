"""Hugging Face ``tokenizer.json`` (BPE model), read and written.

Writing maps our pipeline onto ``tokenizers``' components so ``Tokenizer.from_file`` gives our ids:

* byte level: pre-tokenizer ``Sequence[Split(Regex(pattern), Isolated), ByteLevel(use_regex=false)]``
  (no ``Split`` for ``none``), decoder ``ByteLevel``, pieces in GPT-2 byte-to-unicode form;
* characters: pieces as plain text; ``whitespace`` → ``Whitespace``; other presets → ``Split``.
  An end-of-word run is not written: HF's ``end_of_word_suffix`` glues the marker to a word's last
  character before merging, so such a file only approximates the run (``export.why_not`` says so);
  a suffix file that ``tokenizers`` made is read;
* ``metaspace``: ``Replace(" ", "▁")`` normalizer + a ``Split`` that starts a piece at each ▁ run;
* normalizers: NFC/NFD/NFKC/NFKD/Lowercase; ``strip-accents`` = ``NFD, StripAccents, NFC``;
* specials: ``added_tokens`` with ``special: true`` (and in the model vocab when the name is free).

HF runs Oniguruma regexes, where ``X{1,3}+`` means "one or more groups of 1–3" rather than the
possessive ``X{1,3}`` tiktoken means; :func:`hf_pattern` rewrites those intervals (the cl100k
digits rule), as the published HF conversions of cl100k do.

WordPiece tokenizers (``model="wordpiece"``) are written as BERT's layout: a ``WordPiece`` model
(vocab with the specials at their ids, ``continuing_subword_prefix``, ``max_input_chars_per_word``,
``unk_token``), ``BertNormalizer`` for our ``bert``/``bert-lower`` normalizers, ``BertPreTokenizer``
for ``bert`` (plus a ``Split`` of CJK ideographs when no BERT normalizer pads them), a
``WordPiece`` decoder with ``cleanup: false`` (our decoding never rewrites " n't" and the like) and
no post-processor unless the run has a template: ``Tokenizer.from_file(...).encode(text)`` adds
special tokens by default, and a run without roles only *has* ``[CLS]``/``[SEP]`` in its vocabulary,
nothing saying they wrap each text (a ``BertProcessing`` here made every default encode differ by an
unasked ``[CLS]``/``[SEP]``). Every model writes the ``TemplateProcessing`` of its run's template
(:mod:`workbench.formats.hf_roles`), and none without one.
Such files read back as ``model="wordpiece"``.

Unigram tokenizers (``model="unigram"``) are written and read as a ``Unigram`` model with
SentencePiece's text form (see ``_render_unigram``).

Reading accepts BPE, WordPiece and Unigram models, both merge spellings
(``["a","b"]`` and ``"a b"``), and the pre-tokenizers above plus ``ByteLevel(use_regex=true)``
(the GPT-2 pattern). Left out: post-processors, truncation/padding, ``byte_fallback``,
``continuing_subword_prefix``, BPE dropout — none change which ids plain text gets, or they are
refused with a message.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import regex

from workbench.core.model import Tokenizer, Units
from workbench.core.normalize import NMT_REMOVED, NMT_SPACES
from workbench.core.pipeline import Pipeline
from workbench.core.pretokenize import METASPACE, PRESET_PATTERNS, make_pretokenizer
from workbench.core.unigram import byte_block, byte_piece
from workbench.errors import WorkbenchError
from workbench.formats.bytes_unicode import byte_decoder, is_byte_level_text
from workbench.formats.common import assemble_vocab, check_id_range, load_json, read_bytes, text_vocab
from workbench.formats.hf_roles import post_processor_json

# Our metaspace split (a piece starts at each run of ▁ that follows something else) as a regex.
METASPACE_SPLIT = f"{METASPACE}+[^{METASPACE}]*|[^{METASPACE}]+"
# The regex ByteLevel(use_regex=true) runs: the original GPT-2 pattern (same pieces as our gpt2 preset).
HF_BYTELEVEL_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

_NORMALIZER_TO_HF = {"nfc": "NFC", "nfd": "NFD", "nfkc": "NFKC", "nfkd": "NFKD", "lower": "Lowercase"}
# Our BERT normalizers as tokenizers' BertNormalizer (cased; uncased = its defaults).
_BERT_NORMALIZERS = {
    "bert": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": False,
             "lowercase": False},
    "bert-lower": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
                   "lowercase": True},
}
_HF_TO_NORMALIZER = {v: k for k, v in _NORMALIZER_TO_HF.items()}


def _char_class(codes: tuple[int, ...]) -> str:
    return "[" + "".join(chr(c) for c in codes) + "]"


# SentencePiece's steps as Replace normalizers, exactly (tokenizers' own converters write
# ``Replace(" {2,}", " ")`` alone, which keeps leading and trailing spaces, and its ``Nmt``
# normalizer spaces U+200D and not U+061C, unlike sentencepiece): ``nmt`` removes the control
# characters and spaces the others; ``spm-whitespace`` makes runs of spaces one, then drops the
# one at either end.
_SPM_STEPS: dict[str, list[dict]] = {
    "nmt": [{"type": "Replace", "pattern": {"Regex": _char_class(NMT_REMOVED)}, "content": ""},
            {"type": "Replace", "pattern": {"Regex": _char_class(NMT_SPACES)}, "content": " "}],
    "spm-whitespace": [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
                       {"type": "Replace", "pattern": {"Regex": r"\A | \z"}, "content": ""}],
}
_POSSESSIVE_INTERVAL = regex.compile(r"(?<!\\)(\{\d+(?:,\d*)?\})\+")


def hf_pattern(pattern: str) -> str:
    """``pattern`` as Oniguruma (HF) reads it the way ``regex``/fancy-regex read the original."""
    return _POSSESSIVE_INTERVAL.sub(r"\1", pattern)


def _preset_of_hf_pattern(pattern: str) -> str:
    for name, preset in PRESET_PATTERNS.items():
        if preset is not None and pattern in (preset, hf_pattern(preset)):
            return name
    if pattern == HF_BYTELEVEL_REGEX:
        return "gpt2"
    if pattern == METASPACE_SPLIT:
        return "metaspace"
    return pattern


# ---------------------------------------------------------------------------------------------- write
def render_hf_json(tokenizer: Tokenizer, *, legacy_merges: bool = False) -> tuple[bytes, list[str]]:
    """``(tokenizer.json bytes, notes)`` for ``tokenizer``."""
    if tokenizer.model == "wordpiece":
        return _render_wordpiece(tokenizer)
    if tokenizer.model == "unigram":
        return _render_unigram(tokenizer)
    if tokenizer.model != "bpe":
        raise WorkbenchError(f"a {tokenizer.model} tokenizer cannot be written as tokenizer.json yet")
    if tokenizer.end_of_word:
        raise WorkbenchError("an end-of-word BPE is not written as tokenizer.json: tokenizers' suffix model "
                             "would give other ids on some words")
    notes: list[str] = []
    byte_level = tokenizer.units == "bytes"
    pre = make_pretokenizer(tokenizer.pretokenizer)
    vocab, text_of = text_vocab(tokenizer, with_specials=False, label="a tokenizer.json vocab")
    merges: list[tuple[str, str]] = []
    for rank, (left, right, new) in enumerate(tokenizer.merges):
        if tokenizer.vocab[new] != tokenizer.vocab[left] + tokenizer.vocab[right]:
            raise WorkbenchError(f"merge rank {rank}: piece of id {new} is not the two merged pieces joined")
        merges.append((text_of[left], text_of[right]))

    model: dict = {
        "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
        "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
    }
    if tokenizer.unk_token:
        model["unk_token"] = tokenizer.unk_token
    decoder: dict | None
    if byte_level:
        decoder = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    else:
        decoder = {"type": "Fuse"}

    # special tokens: in added_tokens always, in the model vocab when the name is free
    added = []
    for name, token_id in sorted(tokenizer.special_tokens.items(), key=lambda item: item[1]):
        added.append({
            "id": token_id, "content": name, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True,
        })
        if name not in vocab:
            vocab[name] = token_id
    model["vocab"] = dict(sorted(vocab.items(), key=lambda item: item[1]))
    model["merges"] = [f"{a} {b}" for a, b in merges] if legacy_merges else [[a, b] for a, b in merges]
    if legacy_merges and any(" " in a or " " in b for a, b in merges):
        raise WorkbenchError("a merged piece contains a space, which the legacy \"a b\" merge form cannot hold: "
                             "export without legacy merges")

    normalizers = _hf_normalizers(tokenizer.normalizer)
    pretokenizers: list[dict] = []
    if pre.name == "metaspace":
        normalizers.append({"type": "Replace", "pattern": {"String": " "}, "content": METASPACE})
        pretokenizers.append(_split(METASPACE_SPLIT))
        unmark = {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "}
        decoder = {"type": "Sequence", "decoders": [decoder, unmark]}
    elif pre.name == "whitespace":
        pretokenizers.append({"type": "Whitespace"})
    elif pre.pattern is not None:
        pattern = hf_pattern(pre.pattern)
        if pattern != pre.pattern and pre.name == "custom":
            notes.append("rewrote possessive {n,m}+ intervals as {n,m}: Oniguruma (HF) reads them differently")
        pretokenizers.append(_split(pattern))
    if byte_level:
        pretokenizers.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False})

    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": _sequence("normalizers", normalizers),
        "pre_tokenizer": _sequence("pretokenizers", pretokenizers),
        "post_processor": post_processor_json(tokenizer),
        "decoder": decoder,
        "model": model,
    }
    if tokenizer.pipeline is not None:
        _keep_pipeline(document, tokenizer)
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), notes


def _keep_pipeline(document: dict, tokenizer: Tokenizer) -> None:
    """A tokenizer read from a ``tokenizer.json`` (an extension of one) keeps that file's stages as
    the file has them: normalizer, pre-tokenizer, post-processor, decoder, its BPE options, and its
    added tokens with their ids and flags (lstrip, rstrip, single_word, normalized, special) — what
    our encoder ran. Specials the pipeline does not know (an extension's reserved ones) are added
    as plain special tokens after them."""
    pipeline = tokenizer.pipeline
    assert pipeline is not None
    for stage in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        document[stage] = getattr(pipeline, stage)
    document["model"].update(pipeline.model_options)
    known = {t.content for t in pipeline.added_tokens}
    added = [t.spec() for t in pipeline.added_tokens]
    added += [entry for entry in document["added_tokens"] if entry["content"] not in known]
    document["added_tokens"] = sorted(added, key=lambda entry: entry["id"])
    vocab = document["model"]["vocab"]
    for t in pipeline.added_tokens:  # a non-special added token that is no vocab entry stays out of it
        if not t.special and vocab.get(t.content) == t.id and tokenizer.vocab[t.id] != t.content.encode("utf-8"):
            del vocab[t.content]


def _split(pattern: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def _sequence(key: str, items: list[dict]) -> dict | None:
    if not items:
        return None
    if len(items) == 1:
        return items[0]
    return {"type": "Sequence", key: items}


def _hf_normalizers(names: tuple[str, ...]) -> list[dict]:
    out: list[dict] = []
    for name in names:
        if name == "strip-accents":
            out.extend([{"type": "NFD"}, {"type": "StripAccents"}, {"type": "NFC"}])
        elif name in _BERT_NORMALIZERS:
            out.append(dict(_BERT_NORMALIZERS[name]))
        elif name in _SPM_STEPS:
            out.extend(dict(step) for step in _SPM_STEPS[name])
        elif name in _NORMALIZER_TO_HF:
            out.append({"type": _NORMALIZER_TO_HF[name]})
        elif name != "none":
            raise WorkbenchError(f"normalizer {name!r} has no tokenizer.json equivalent: export without it")
    return out


# ---------------------------------------------------------------------------------------------- read
def read_hf_json(path: Path) -> tuple[Tokenizer, list[str]]:
    """Load a ``tokenizer.json`` (BPE, WordPiece or Unigram model) as a :class:`Tokenizer` plus notes.

    The whole pipeline around the model is kept (:class:`~workbench.core.pipeline.Pipeline`): a
    component that cannot be run exactly is refused here, in one line naming it. The tokenizer's
    ``normalizer``/``pretokenizer`` names summarise the pipeline where our presets say the same
    (statistics and the inspector's colouring cut text with them); where they cannot, they are
    ``none`` and a note says so.
    """
    path = Path(path)
    name = path.name
    document = load_json(read_bytes(path), name)
    if not isinstance(document, dict) or not isinstance(document.get("model"), dict):
        raise WorkbenchError(f"{name}: no \"model\" object: this is not a Hugging Face tokenizer.json")
    pipeline = Pipeline.from_document(document, name)
    model = document["model"]
    kind = model.get("type") or ("BPE" if "merges" in model else None)
    if _mentions_bytelevel(document.get("decoder")) and not pipeline.byte_level:
        raise WorkbenchError(f"{name}: a ByteLevel decoder without a ByteLevel pre-tokenizer is not supported: "
                             "this tokenizer cannot be imported")
    if kind == "WordPiece":
        tokenizer, notes = _read_wordpiece(document, path)
    elif kind == "Unigram":
        tokenizer, notes = _read_unigram(document, path)
    elif kind == "BPE":
        tokenizer, notes = _read_bpe(document, path, pipeline)
    else:
        raise WorkbenchError(
            f"{name}: the model is {kind or 'of unknown type'}; only BPE, WordPiece and Unigram tokenizer.json "
            "files can be imported")
    if pipeline.byte_level and tokenizer.units != "bytes":
        raise WorkbenchError(f"{name}: a ByteLevel pre-tokenizer with a {kind} model is not supported: "
                             "this tokenizer cannot be imported")
    before, after = pipeline.post_additions()
    for token, token_id in before + after:
        if token_id >= len(tokenizer.vocab):
            raise WorkbenchError(f"{name}: the post-processor adds {token!r} as id {token_id}, beyond the "
                                 f"{len(tokenizer.vocab)} ids of the vocabulary: fix the file")
    whole_lines = any(note.startswith(_SUMMARY_NOTE) for note in notes)
    return replace(tokenizer, pipeline=replace(pipeline, whole_lines=whole_lines)), notes


_SUMMARY_NOTE = "pipeline kept as the file has it; "


def _summary(read, fallback, notes: list[str], what: str):
    """A pipeline stage as our preset names when they say the same; ``fallback`` (and a note) if not."""
    try:
        return read()
    except WorkbenchError as exc:
        notes.append(f"{_SUMMARY_NOTE}{what} has no preset of ours ({str(exc).split(': ', 1)[-1]}): statistics "
                     "run the file's whole pipeline on each line")
        return fallback


def _read_bpe(document: dict, path: Path, pipeline: Pipeline) -> tuple[Tokenizer, list[str]]:
    name = path.name
    model = document["model"]
    for option in ("continuing_subword_prefix", "dropout"):
        if model.get(option):
            raise WorkbenchError(f"{name}: BPE option {option}={model[option]!r} is not supported: it cannot be imported")
    notes: list[str] = []
    byte_fallback = bool(model.get("byte_fallback"))
    normalizer, metaspace_replace = _summary(lambda: _read_normalizer(document.get("normalizer"), name),
                                             ((), False), notes, "the normalizer")
    pretokenizer, _byte_level = _summary(lambda: _read_pretokenizer(document.get("pre_tokenizer"), name),
                                         ("none", False), notes, "the pre-tokenizer")
    byte_level = pipeline.byte_level
    if byte_fallback and byte_level:
        raise WorkbenchError(f"{name}: byte_fallback with a ByteLevel pre-tokenizer is not supported")
    if metaspace_replace:
        pretokenizer = "metaspace"
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise WorkbenchError(f"{name}: model.vocab must be an object of piece → id")
    added_tokens = document.get("added_tokens") or []
    if not isinstance(added_tokens, list):
        raise WorkbenchError(f"{name}: added_tokens must be a list")
    # Every id, checked against the number of entries before anything is sized by the largest.
    check_id_range(list(raw_vocab.values()) + [e.get("id") for e in added_tokens if isinstance(e, dict)],
                   len(raw_vocab) + len(added_tokens), f"{name} model.vocab/added_tokens")
    specials: dict[str, int] = {}
    for entry in added_tokens:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not entry["content"] \
                or not isinstance(entry.get("id"), int) or isinstance(entry.get("id"), bool):
            raise WorkbenchError(f"{name}: an added_tokens entry lacks a \"content\" string or a whole-number \"id\"")
        specials[entry["content"]] = entry["id"]
    eow = model.get("end_of_word_suffix") or ""
    if not isinstance(eow, str):
        raise WorkbenchError(f"{name}: model.end_of_word_suffix must be a string or null")
    units: Units = "bytes" if byte_level else "chars"

    byte_names = {byte_piece(b): b for b in range(256)} if byte_fallback else {}

    def to_bytes(text: str) -> bytes:
        if byte_level:
            return bytes(decoder[ch] for ch in text)
        if text in byte_names:
            return bytes([byte_names[text]])
        return text.encode("utf-8")

    decoder = byte_decoder()
    pieces: dict[int, bytes] = {}
    id_of_text: dict[str, int] = {}
    for text, token_id in raw_vocab.items():
        if not isinstance(token_id, int):
            raise WorkbenchError(f"{name}: model.vocab id of {text!r} is {token_id!r}, not a whole number")
        if text in specials and specials[text] == token_id:
            continue
        if isinstance(token_id, bool):
            raise WorkbenchError(f"{name}: model.vocab id of {text!r} is {token_id!r}, not a whole number")
        if byte_level and not is_byte_level_text(text):
            raise WorkbenchError(
                f"{name}: vocab piece {text!r} (id {token_id}) is not byte-level text although the tokenizer is byte-level"
            )
        pieces[token_id] = to_bytes(text)
        id_of_text[text] = token_id

    merges: list[tuple[int, int, int]] = []
    for index, entry in enumerate(model.get("merges") or []):
        if isinstance(entry, str):
            parts = entry.split(" ")
        elif isinstance(entry, list):
            parts = entry
        else:
            parts = []
        if len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            raise WorkbenchError(
                f"{name}: model.merges entry {index + 1} ({entry!r}): expected two pieces, "
                "[\"a\", \"b\"] or \"a b\""
            )
        left_text, right_text = parts
        try:
            left, right = id_of_text[left_text], id_of_text[right_text]
        except KeyError as exc:
            raise WorkbenchError(f"{name}: model.merges entry {index + 1}: piece {exc.args[0]!r} is not in the vocab") from None
        new = id_of_text.get(left_text + right_text)
        if new is None:
            raise WorkbenchError(
                f"{name}: model.merges entry {index + 1}: result {left_text + right_text!r} is not in the vocab"
            )
        merges.append((left, right, new))

    if eow:
        if byte_level:
            raise WorkbenchError(f"{name}: end_of_word_suffix with a byte-level vocabulary is not supported")
        merges = _from_end_of_word_model(pieces, merges, eow, notes)
    if model.get("unk_token"):
        if not isinstance(model["unk_token"], str):
            raise WorkbenchError(f"{name}: model.unk_token must be a string or null")
        unk = model["unk_token"]
        if unk not in specials and unk in id_of_text:
            specials[unk] = id_of_text[unk]
            del pieces[id_of_text[unk]]
    else:
        unk = None
    vocab = assemble_vocab(pieces, specials, name)
    tokenizer = Tokenizer(
        vocab=vocab, merges=tuple(merges), units=units, pretokenizer=make_pretokenizer(pretokenizer).spec(),
        normalizer=normalizer, special_tokens=specials, end_of_word=eow, name=path.stem,
        unk_token=unk, merge_rule="pairs", byte_fallback=byte_fallback,
    )
    if byte_fallback and byte_block(tokenizer) is None:
        raise WorkbenchError(f"{name}: byte_fallback is on but the 256 <0x00>…<0xFF> pieces are not in order")
    return tokenizer, notes


def _from_end_of_word_model(pieces: dict[int, bytes], merges: list[tuple[int, int, int]], eow: str,
                            notes: list[str]) -> list[tuple[int, int, int]]:
    """HF ``c</w>`` base pieces become merges ``(c, </w>)`` placed first (the suffix is glued before
    any merge in HF); the marker becomes its own symbol as in our model."""
    marker = eow.encode("utf-8")
    id_of = {piece: token_id for token_id, piece in pieces.items()}
    next_id = max([*pieces, -1]) + 1
    if marker not in id_of:
        pieces[next_id] = marker
        id_of[marker] = next_id
        next_id += 1
    made = {new for _l, _r, new in merges}
    front: list[tuple[int, int, int]] = []
    for token_id, piece in sorted(pieces.items()):
        if token_id in made or piece == marker or not piece.endswith(marker):
            continue
        base = piece[: -len(marker)]
        if not base:
            continue
        if base not in id_of:
            pieces[next_id] = base
            id_of[base] = next_id
            next_id += 1
        front.append((id_of[base], id_of[marker], token_id))
    notes.append(f"end_of_word_suffix {eow!r}: {len(front)} 'x{eow}' base pieces read as first merges (x, {eow})")
    return front + merges


def _components(spec: object, key: str, name: str, where: str) -> list[dict]:
    """The items of a component or a ``Sequence`` of them, each checked to be an object."""
    if not isinstance(spec, dict):
        raise WorkbenchError(f"{name}: {where} must be an object or null")
    items = spec.get(key, []) if spec.get("type") == "Sequence" else [spec]
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise WorkbenchError(f"{name}: {where}.{key} must be a list of objects")
    return items


def _read_normalizer(spec: dict | None, name: str) -> tuple[tuple[str, ...], bool]:
    if not spec:
        return (), False
    items = _components(spec, "normalizers", name, "normalizer")
    out: list[str] = []
    metaspace = False
    types = [item.get("type") for item in items]
    i = 0
    while i < len(items):
        kind = types[i]
        step = next((name for name, steps in _SPM_STEPS.items() if items[i:i + len(steps)] == steps), None)
        if step is not None:
            out.append(step)
            i += len(_SPM_STEPS[step])
            continue
        if kind == "NFD" and types[i + 1 : i + 2] == ["StripAccents"]:
            out.append("strip-accents")
            i += 3 if types[i + 2 : i + 3] == ["NFC"] else 2
            continue
        if kind == "StripAccents":
            out.append("strip-accents")
        elif kind == "BertNormalizer":
            out.append(_bert_normalizer_name(items[i], name))
        elif kind in _HF_TO_NORMALIZER:
            out.append(_HF_TO_NORMALIZER[kind])
        elif kind == "Replace" and items[i].get("pattern") == {"String": " "} and items[i].get("content") == METASPACE:
            metaspace = True
        else:
            raise WorkbenchError(f"{name}: normalizer {kind!r} is not supported: remove it or import another file")
        i += 1
    return tuple(out), metaspace


def _read_pretokenizer(spec: dict | None, name: str) -> tuple[str, bool]:
    """``(pre-tokenizer spec, byte_level)``."""
    if not spec:
        return "none", False
    items = _components(spec, "pretokenizers", name, "pre_tokenizer")
    pattern: str | None = None
    byte_level = False
    for item in items:
        kind = item.get("type")
        if kind == "Split":
            if item.get("invert") or item.get("behavior") not in ("Isolated", None):
                raise WorkbenchError(
                    f"{name}: Split with behavior {item.get('behavior')!r}/invert={item.get('invert')!r} is not supported "
                    "(only Isolated, not inverted)"
                )
            raw = item.get("pattern") or {}
            if isinstance(raw, dict) and isinstance(raw.get("Regex"), str):
                found = raw["Regex"]
            elif isinstance(raw, dict) and isinstance(raw.get("String"), str):
                found = regex.escape(raw["String"])
            else:
                raise WorkbenchError(f"{name}: Split pre-tokenizer has no pattern string")
            if pattern is not None:
                raise WorkbenchError(f"{name}: more than one splitting pre-tokenizer is not supported")
            pattern = _preset_of_hf_pattern(found)
        elif kind == "ByteLevel":
            byte_level = True
            if item.get("add_prefix_space"):
                raise WorkbenchError(f"{name}: ByteLevel(add_prefix_space=true) is not supported: it adds a space to the text")
            if item.get("use_regex", True):
                if pattern is not None:
                    raise WorkbenchError(f"{name}: a Split followed by ByteLevel(use_regex=true) is not supported")
                pattern = "gpt2"
        elif kind == "Whitespace":
            pattern = "whitespace"
        elif kind == "Metaspace":
            pattern = "metaspace"
        else:
            raise WorkbenchError(f"{name}: pre-tokenizer {kind!r} is not supported: only Split, ByteLevel, Whitespace, Metaspace")
    return pattern or "none", byte_level


def _mentions_bytelevel(spec: object, depth: int = 0) -> bool:
    if not isinstance(spec, dict) or depth > 20:
        return False
    if spec.get("type") == "ByteLevel":
        return True
    decoders = spec.get("decoders")
    return isinstance(decoders, list) and any(_mentions_bytelevel(item, depth + 1) for item in decoders)


# ------------------------------------------------------------------------------------- WordPiece
def _cjk_split() -> dict:
    """BERT's CJK blocks as an Oniguruma class (``\\x{…}``; it has no ``\\U`` escape)."""
    from workbench.core.normalize import CJK_RANGES

    return _split("[" + "".join(f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in CJK_RANGES) + "]")


def _render_wordpiece(tokenizer: Tokenizer) -> tuple[bytes, list[str]]:
    """BERT's tokenizer.json for a ``model="wordpiece"`` tokenizer (see the module docstring)."""
    notes: list[str] = []
    vocab, _text_of = text_vocab(tokenizer, with_specials=True, label="a WordPiece tokenizer.json vocab")
    unk = tokenizer.unk_token or "[UNK]"
    if unk not in vocab:
        raise WorkbenchError(f"the unknown token {unk!r} is not in the vocabulary: tokenizers needs it to load the file")
    prefix = tokenizer.continuing_prefix or "##"
    model = {
        "type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": prefix,
        "max_input_chars_per_word": tokenizer.max_input_chars_per_word,
        "vocab": dict(sorted(vocab.items(), key=lambda item: item[1])),
    }
    normalizers = _hf_normalizers(tokenizer.normalizer)
    pads_cjk = any(name in _BERT_NORMALIZERS for name in tokenizer.normalizer)
    pre = make_pretokenizer(tokenizer.pretokenizer)
    pretokenizers: list[dict] = []
    if pre.name == "bert":
        pretokenizers.append({"type": "BertPreTokenizer"})
        if not pads_cjk:
            pretokenizers.append(_cjk_split())
    elif pre.name == "whitespace":
        pretokenizers.append({"type": "Whitespace"})
    elif pre.name == "metaspace":
        raise WorkbenchError("a WordPiece tokenizer with the metaspace pre-tokenizer cannot be written as tokenizer.json")
    elif pre.pattern is not None:
        pretokenizers.append(_split(hf_pattern(pre.pattern)))
    added = [{"id": token_id, "content": text, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for text, token_id in sorted(tokenizer.special_tokens.items(), key=lambda item: item[1])]
    document = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": _sequence("normalizers", normalizers),
        "pre_tokenizer": _sequence("pretokenizers", pretokenizers),
        "post_processor": post_processor_json(tokenizer),  # only with a template: see the module docstring
        "decoder": {"type": "WordPiece", "prefix": prefix, "cleanup": False},
        "model": model,
    }
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), notes


def _added_tokens(document: dict, name: str) -> dict[str, int]:
    """``{content: id}`` of a tokenizer.json's ``added_tokens`` (WordPiece and Unigram readers)."""
    specials: dict[str, int] = {}
    for entry in document.get("added_tokens") or []:
        try:
            specials[str(entry["content"])] = int(entry["id"])
        except (KeyError, TypeError, ValueError):
            raise WorkbenchError(f"{name}: an added_tokens entry lacks \"content\" or \"id\"") from None
    return specials


def _bert_normalizer_name(spec: dict, name: str) -> str:
    lowercase = bool(spec.get("lowercase", True))
    strip = spec.get("strip_accents")
    strip = lowercase if strip is None else bool(strip)
    if not spec.get("clean_text", True) or not spec.get("handle_chinese_chars", True) or strip != lowercase:
        raise WorkbenchError(
            f"{name}: BertNormalizer with clean_text/handle_chinese_chars off or strip_accents != lowercase is not "
            "supported: only BERT's cased and uncased settings"
        )
    return "bert-lower" if lowercase else "bert"


def _read_wordpiece(document: dict, path: Path) -> tuple[Tokenizer, list[str]]:
    """A ``model="wordpiece"`` tokenizer from a tokenizer.json with a WordPiece model."""
    name = path.name
    model = document["model"]
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict) or not raw_vocab:
        raise WorkbenchError(f"{name}: model.vocab must be a non-empty object of piece → id")
    notes: list[str] = []
    normalizer, metaspace = _summary(lambda: _read_normalizer(document.get("normalizer"), name),
                                     ((), False), notes, "the normalizer")
    if metaspace:
        normalizer = ()
    pretokenizer = _summary(lambda: _read_wordpiece_pretokenizer(document.get("pre_tokenizer"), name),
                            "none", notes, "the pre-tokenizer")
    specials = _added_tokens(document, name)
    unk = str(model.get("unk_token") or "[UNK]")
    pieces: dict[int, bytes] = {}
    for text, token_id in raw_vocab.items():
        if not isinstance(token_id, int):
            raise WorkbenchError(f"{name}: model.vocab id of {text!r} is {token_id!r}, not a whole number")
        if text == unk and text not in specials:
            specials[text] = token_id
        if specials.get(text) == token_id:
            continue
        pieces[token_id] = text.encode("utf-8")
    if unk not in specials:
        notes.append(f"the unknown token {unk!r} is not in the vocabulary: words that match nothing cannot be encoded")
    tokenizer = Tokenizer(
        vocab=assemble_vocab(pieces, specials, name), merges=(), units="chars",
        pretokenizer=make_pretokenizer(pretokenizer).spec(), normalizer=normalizer, special_tokens=specials,
        name=path.stem, unk_token=unk, model="wordpiece",
        continuing_prefix=str(model.get("continuing_subword_prefix") or "##"),
        max_input_chars_per_word=int(model.get("max_input_chars_per_word") or 100),
    )
    return tokenizer, notes


def _read_wordpiece_pretokenizer(spec: dict | None, name: str) -> str:
    """``bert`` for BertPreTokenizer (with or without our CJK Split), else as for BPE files."""
    if not spec:
        return "none"
    items = spec.get("pretokenizers", []) if spec.get("type") == "Sequence" else [spec]
    if items and items[0].get("type") == "BertPreTokenizer":
        rest = items[1:]
        if not rest or rest == [_cjk_split()]:
            return "bert"
        raise WorkbenchError(f"{name}: BertPreTokenizer followed by other pre-tokenizers is not supported")
    pattern, byte_level = _read_pretokenizer(spec, name)
    if byte_level:
        raise WorkbenchError(f"{name}: a ByteLevel pre-tokenizer with a WordPiece model is not supported")
    return pattern

# ---------------------------------------------------------------------------------------- Unigram
# SentencePiece's text form in HF components, as Hugging Face's own Llama/T5 conversions write it:
# the dummy ▁ and the space escape are normalizers (``Prepend`` adds ▁ even before a leading space,
# where ``Metaspace(prepend_scheme="always")`` would not), and ``Metaspace(split=true)`` without
# prepending starts a word at every ▁, as SentencePiece does.
_UNIGRAM_PRE = {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "never", "split": True}


def _render_unigram(tokenizer: Tokenizer) -> tuple[bytes, list[str]]:
    """A ``Unigram`` model (``vocab`` as ``[piece, score]`` by id, ``unk_id``, ``byte_fallback``)."""
    notes: list[str] = []
    if tokenizer.pretokenizer != "metaspace":
        raise WorkbenchError(f"a unigram tokenizer.json needs the metaspace pre-tokenizer, not {tokenizer.pretokenizer!r}")
    unk_id = tokenizer.special_tokens.get(tokenizer.unk_token) if tokenizer.unk_token else None
    byte_ids = set(byte_block(tokenizer) or ()) if tokenizer.byte_fallback else set()
    vocab: list[list] = []
    seen: set[str] = set()
    for token_id, raw in enumerate(tokenizer.vocab):
        if token_id in byte_ids:
            text = byte_piece(raw[0])
        elif not raw and token_id not in tokenizer.special_ids:
            text = f"<unused{token_id}>"
        else:
            text = raw.decode("utf-8")
        if text in seen:
            raise WorkbenchError(f"id {token_id}: piece {text!r} occurs twice; a tokenizer.json needs each piece once")
        seen.add(text)
        vocab.append([text, tokenizer.scores[token_id] if token_id not in tokenizer.special_ids else 0.0])
    added = [
        {"id": token_id, "content": name, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for name, token_id in sorted(tokenizer.special_tokens.items(), key=lambda item: item[1])
    ]
    normalizers = _hf_normalizers(tokenizer.normalizer)
    normalizers.append({"type": "Prepend", "prepend": METASPACE})
    normalizers.append({"type": "Replace", "pattern": {"String": " "}, "content": METASPACE})
    decoders: list[dict] = [{"type": "Replace", "pattern": {"String": METASPACE}, "content": " "}]
    if byte_ids:
        decoders.append({"type": "ByteFallback"})
    decoders += [{"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]
    document = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": _sequence("normalizers", normalizers),
        "pre_tokenizer": dict(_UNIGRAM_PRE),
        "post_processor": post_processor_json(tokenizer),
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {"type": "Unigram", "unk_id": unk_id, "vocab": vocab, "byte_fallback": bool(byte_ids)},
    }
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), notes


def _read_unigram(document: dict, path: Path) -> tuple[Tokenizer, list[str]]:
    """A ``Unigram`` tokenizer.json: ``Prepend``/``Replace`` normalizers or a ``Metaspace``
    pre-tokenizer both read as our metaspace (SentencePiece's form)."""
    name = path.name
    model = document["model"]
    notes: list[str] = []
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, list) or not all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and isinstance(e[1], (int, float))
            for e in raw_vocab):
        raise WorkbenchError(f"{name}: a Unigram model.vocab must be a list of [piece, score] pairs")
    norm_spec = document.get("normalizer")
    items = (norm_spec.get("normalizers", []) if norm_spec and norm_spec.get("type") == "Sequence"
             else [norm_spec] if norm_spec else [])
    kept = [i for i in items if not (i.get("type") == "Prepend" and i.get("prepend") == METASPACE)]
    normalizer, _metaspace_replace = _summary(
        lambda: _read_normalizer({"type": "Sequence", "normalizers": kept}, name), ((), False), notes, "the normalizer")
    specials = _added_tokens(document, name)
    unk_id = model.get("unk_id")
    unk_token = None
    if isinstance(unk_id, int) and 0 <= unk_id < len(raw_vocab):
        unk_token = raw_vocab[unk_id][0]
        specials.setdefault(unk_token, unk_id)
    byte_fallback = bool(model.get("byte_fallback"))
    byte_names = {byte_piece(b): b for b in range(256)}
    vocab: list[bytes] = []
    scores: list[float] = []
    special_ids = set(specials.values())
    for token_id, (text, score) in enumerate(raw_vocab):
        if byte_fallback and text in byte_names and token_id not in special_ids:
            vocab.append(bytes([byte_names[text]]))
        else:
            vocab.append(text.encode("utf-8"))
        scores.append(0.0 if token_id in special_ids else float(score))
    tokenizer = Tokenizer(
        vocab=tuple(vocab), merges=(), units="chars", pretokenizer="metaspace", normalizer=normalizer,
        special_tokens=specials, name=path.stem, unk_token=unk_token, model="unigram",
        scores=tuple(scores), byte_fallback=byte_fallback,
    )
    if byte_fallback and byte_block(tokenizer) is None:
        raise WorkbenchError(f"{name}: byte_fallback is on but the 256 <0xNN> pieces are not in order")
    return tokenizer, notes
