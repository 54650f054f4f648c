"""A Hugging Face ``tokenizers`` pipeline around a model: normalizers, added tokens, pre-tokenizers,
post-processor and decoder, run as the library runs them.

An imported ``tokenizer.json`` keeps these stages here (:attr:`Tokenizer.pipeline
<workbench.core.model.Tokenizer.pipeline>`); the model in between (BPE, WordPiece, Unigram) is the
workbench's own (:mod:`workbench.core.encoder`). The components are kept as the JSON objects the
file holds — so the project stores and exports them unchanged — and are checked once, when the
pipeline is built (:meth:`Pipeline.from_document`): a component this module cannot run exactly is
refused there, naming it, never half-run later.

The order is the library's (``AddedVocabulary::extract_and_normalize``): added tokens that are not
``normalized`` are found in the raw text first; each stretch between them is normalized on its own,
then searched for the ``normalized`` added tokens (their content normalized the same way); each
plain stretch is pre-tokenized on its own (so ``Metaspace(prepend_scheme="first")`` prepends only
at the very start of the input and ``ByteLevel(add_prefix_space)`` before every stretch); then the
model encodes each pre-token. Added tokens match leftmost-longest; ``single_word`` skips a match
that touches a word character (alphanumeric or ``_``), ``lstrip``/``rstrip`` take the whitespace
beside it into the token.

Pieces are tracked with the span of the input each character came from, so every stage can be
shown against the text the user typed. The library records alignments inside each normalizer;
here each normalizer's output is aligned to its input afterwards (:func:`_align`: longest common
runs, replaced stretches) — spans can be coarser than the library's, strings never differ.

Left out (refused when a file uses them): ``UnicodeScripts`` and ``Split`` with a regex the
``regex`` module cannot compile, the ``CTC`` decoder, ``ByteLevel`` as a normalizer, pair
templates (only single texts are encoded).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import regex

from workbench.core.byte_level import byte_encoder
from workbench.core.charsmap import CharsMap
from workbench.core.normalize import _BERT_SPACES, _is_cjk
from workbench.errors import WorkbenchError

# ByteLevel(use_regex=true)'s pattern: the original GPT-2 one.
BYTELEVEL_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# Oniguruma's \x{HHHH} escape (the regex module spells it \UHHHHHHHH)
_ONIG_HEX = regex.compile(r"(?<!\\)\\x\{([0-9A-Fa-f]{1,8})\}")
SPLIT_TIMEOUT_S = 10.0
_BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")

NORMALIZERS = ("BertNormalizer", "NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Strip", "Replace",
               "Prepend", "Precompiled", "Nmt", "Sequence")
PRE_TOKENIZERS = ("BertPreTokenizer", "ByteLevel", "Whitespace", "WhitespaceSplit", "Metaspace", "Split",
                  "Digits", "Punctuation", "CharDelimiterSplit", "Sequence")
POST_PROCESSORS = ("TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence")
DECODERS = ("ByteLevel", "WordPiece", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip", "BPEDecoder",
            "Sequence")


@dataclass(frozen=True)
class AddedToken:
    """One ``added_tokens`` entry with the flags that decide where it matches."""

    id: int
    content: str
    special: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False

    def spec(self) -> dict:
        return {"id": self.id, "content": self.content, "single_word": self.single_word, "lstrip": self.lstrip,
                "rstrip": self.rstrip, "normalized": self.normalized, "special": self.special}


@dataclass(frozen=True)
class Piece:
    """Text as one stage holds it, with the input span of each of its characters."""

    text: str
    spans: tuple[tuple[int, int], ...]

    @property
    def start(self) -> int:
        return self.spans[0][0] if self.spans else 0

    @property
    def end(self) -> int:
        return self.spans[-1][1] if self.spans else 0

    def cut(self, a: int, b: int) -> Piece:
        return Piece(self.text[a:b], self.spans[a:b])


@dataclass(frozen=True)
class Segment:
    """A stretch of the input after added-token matching: an added token (``token`` set, with the
    flag that let it match or took in the whitespace beside it) or plain text to pre-tokenize."""

    piece: Piece
    token: AddedToken | None = None
    flags: tuple[str, ...] = ()


def _identity_piece(text: str, offset: int = 0) -> Piece:
    return Piece(text, tuple((offset + i, offset + i + 1) for i in range(len(text))))


def _type(spec: object, where: str) -> str:
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise WorkbenchError(f"{where}: a component without a \"type\": fix the file")
    return spec["type"]


def _items(spec: dict, key: str, where: str) -> list[dict]:
    items = spec.get(key)
    if not isinstance(items, list):
        raise WorkbenchError(f"{where}: a Sequence without its \"{key}\" list: fix the file")
    return items


def _pattern(spec: dict, where: str) -> regex.Pattern[str]:
    raw = spec.get("pattern")
    if isinstance(raw, dict) and isinstance(raw.get("String"), str):
        return regex.compile(regex.escape(raw["String"]))
    if isinstance(raw, dict) and isinstance(raw.get("Regex"), str):
        try:
            return regex.compile(_ONIG_HEX.sub(lambda m: f"\\U{int(m.group(1), 16):08X}", raw["Regex"]))
        except regex.error as exc:
            raise WorkbenchError(f"{where}: pattern {raw['Regex']!r} does not compile here ({exc}): "
                                 "this tokenizer cannot be imported") from None
    raise WorkbenchError(f"{where}: no pattern (String or Regex): fix the file")


def _char(spec: dict, key: str, where: str, default: str) -> str:
    value = spec.get(key, default)
    if not isinstance(value, str) or len(value) != 1:
        raise WorkbenchError(f"{where}: {key} must be one character, not {value!r}")
    return value


_B, _S, _I, _N = bool, str, int, type(None)
_METASPACE: dict[str, tuple[type, ...]] = {"replacement": (_S,), "prepend_scheme": (_S, _N), "split": (_B,),
                                           "add_prefix_space": (_B,)}
_BYTELEVEL: dict[str, tuple[type, ...]] = {"add_prefix_space": (_B,), "use_regex": (_B,), "trim_offsets": (_B,)}
#: stage → component → setting → the JSON types it may have (what the library's serde accepts)
_SETTING_TYPES: dict[str, dict[str, dict[str, tuple[type, ...]]]] = {
    "normalizer": {
        "BertNormalizer": {"clean_text": (_B,), "handle_chinese_chars": (_B,), "strip_accents": (_B, _N),
                           "lowercase": (_B,)},
        "Strip": {"left": (_B,), "right": (_B,)}, "Replace": {"content": (_S,)}, "Prepend": {"prepend": (_S,)},
        "Precompiled": {"precompiled_charsmap": (_S,)},
    },
    "pre_tokenizer": {
        "ByteLevel": _BYTELEVEL, "Metaspace": _METASPACE, "Split": {"behavior": (_S,), "invert": (_B,)},
        "Digits": {"individual_digits": (_B,)}, "Punctuation": {"behavior": (_S,)},
        "CharDelimiterSplit": {"delimiter": (_S,)},
    },
    "decoder": {
        "ByteLevel": _BYTELEVEL, "Metaspace": _METASPACE, "WordPiece": {"prefix": (_S,), "cleanup": (_B,)},
        "Replace": {"content": (_S,)}, "Strip": {"content": (_S,), "start": (_I,), "stop": (_I,)},
        "BPEDecoder": {"suffix": (_S,)},
    },
}


def _check_settings(stage: str, kind: str, spec: dict, where: str) -> None:
    for key, types in _SETTING_TYPES.get(stage, {}).get(kind, {}).items():
        if key not in spec:
            continue
        value = spec[key]
        fits = isinstance(value, types) and not (isinstance(value, bool) and _B not in types)
        if not fits or (isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= 1 << 20):
            shown = " or ".join("null" if t is _N else t.__name__.replace("str", "text").replace("int", "a count")
                                .replace("bool", "true/false") for t in types)
            raise WorkbenchError(f"{where}: {kind} {key} is {str(value)[:40]!r}; it must be {shown}: fix the file")


def _surrogate_in(value: object, depth: int = 0) -> str | None:
    """A string anywhere in ``value`` that holds a lone surrogate (JSON lets ``\\ud800`` through)."""
    if depth > 50:
        return None
    if isinstance(value, str):
        return value if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value) else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((found for item in items if (found := _surrogate_in(item, depth + 1)) is not None), None)


def _refuse(kind: str, stage: str, where: str, known: Sequence[str]) -> WorkbenchError:
    del where  # the stage is named in the message itself
    return WorkbenchError(f"{stage} {kind!r} is not supported (supported: {', '.join(known)}): "
                          "this tokenizer cannot be imported")


# ---------------------------------------------------------------------------------------- normalizers
def _rust_lower(text: str) -> str:
    return text.lower() if text.isascii() else "".join(ch.lower() for ch in text)


def _strip_marks(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Mn")


def _bert_normalizer(spec: dict) -> Callable[[str], str]:
    clean = spec.get("clean_text", True)
    chinese = spec.get("handle_chinese_chars", True)
    lowercase = spec.get("lowercase", True)
    strip = spec.get("strip_accents")
    strip = lowercase if strip is None else strip

    def run(text: str) -> str:
        if clean:
            out = []
            for ch in text:
                code = ord(ch)
                if code == 0 or code == 0xFFFD or (
                        ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn")):
                    continue
                out.append(" " if ch in _BERT_SPACES else ch)
            text = "".join(out)
        if chinese:
            text = "".join(f" {ch} " if _is_cjk(ord(ch)) else ch for ch in text)
        if strip:
            text = _strip_marks(unicodedata.normalize("NFD", text))
        if lowercase:
            text = _rust_lower(text)
        return text

    return run


_NMT_DROP = frozenset([*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F])
_NMT_SPACE = frozenset([0x09, 0x0A, 0x0C, 0x0D, 0x1680, *range(0x200B, 0x2010), 0x2028, 0x2029, 0x2581, 0xFEFF,
                        0xFFFD])
_NMT_TABLE: dict[int, str | None] = {**{c: None for c in _NMT_DROP}, **{c: " " for c in _NMT_SPACE}}


def _strip_whitespace(spec: dict) -> Callable[[str], str]:
    left, right = bool(spec.get("left", True)), bool(spec.get("right", True))

    def run(text: str) -> str:
        if left:
            text = text.lstrip()
        if right:
            text = text.rstrip()
        return text

    return run


def _replace(spec: dict, where: str) -> Callable[[str], str]:
    pattern = _pattern(spec, where)
    content = spec.get("content", "")
    if not isinstance(content, str):
        raise WorkbenchError(f"{where}: Replace content must be text")
    return lambda text: pattern.sub(lambda _m: content, text)


def _prepend(spec: dict, where: str) -> Callable[[str], str]:
    prefix = spec.get("prepend")
    if not isinstance(prefix, str):
        raise WorkbenchError(f"{where}: Prepend needs a \"prepend\" string")
    return lambda text: prefix + text if text else text


def build_normalizer(spec: object, where: str) -> list[tuple[str, Callable[[str], str]]]:
    """``[(component name, function)]`` in order; a ``Sequence`` is flattened."""
    if spec is None:
        return []
    kind = _type(spec, where)
    assert isinstance(spec, dict)
    _check_settings("normalizer", kind, spec, where)
    if kind == "Sequence":
        out: list[tuple[str, Callable[[str], str]]] = []
        for item in _items(spec, "normalizers", where):
            out.extend(build_normalizer(item, where))
        return out
    if kind == "BertNormalizer":
        return [(kind, _bert_normalizer(spec))]
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        form = kind
        return [(kind, lambda text: unicodedata.normalize(form, text))]  # type: ignore[arg-type]
    if kind == "Lowercase":
        return [(kind, _rust_lower)]
    if kind == "StripAccents":
        return [(kind, _strip_marks)]
    if kind == "Strip":
        return [(kind, _strip_whitespace(spec))]
    if kind == "Replace":
        return [(kind, _replace(spec, where))]
    if kind == "Prepend":
        return [(kind, _prepend(spec, where))]
    if kind == "Nmt":
        return [(kind, lambda text: text.translate(_NMT_TABLE))]
    if kind == "Precompiled":
        charsmap = CharsMap.from_base64(spec.get("precompiled_charsmap"), f"{where}: Precompiled normalizer")
        charsmap.check()
        return [(kind, charsmap.normalize)]
    raise _refuse(kind, "normalizer", where, NORMALIZERS)


# ------------------------------------------------------------------------------------ pre-tokenizers
def _matches(text: str, is_match: Callable[[str], bool] | None, pattern: regex.Pattern[str] | None
             ) -> list[tuple[int, int, bool]]:
    """``(start, end, matched)`` covering ``text`` (the library's ``find_matches``)."""
    out: list[tuple[int, int, bool]] = []
    if pattern is not None:
        prev = 0
        try:
            found = list(pattern.finditer(text, timeout=SPLIT_TIMEOUT_S))
        except TimeoutError:
            raise WorkbenchError(f"a Split pattern of this tokenizer took over {SPLIT_TIMEOUT_S:.0f} s on one text "
                                 "(catastrophic backtracking): this tokenizer cannot encode it") from None
        for m in found:
            start, end = m.span()
            if prev != start:
                out.append((prev, start, False))
            out.append((start, end, True))
            prev = end
        if prev != len(text):
            out.append((prev, len(text), False))
        return out
    assert is_match is not None
    prev = 0
    for i, ch in enumerate(text):
        if is_match(ch):
            if prev != i:
                out.append((prev, i, False))
            out.append((i, i + 1, True))
            prev = i + 1
    if prev != len(text):
        out.append((prev, len(text), False))
    return out


def split_by(piece: Piece, behavior: str, *, pattern: regex.Pattern[str] | None = None,
             is_match: Callable[[str], bool] | None = None, invert: bool = False) -> list[Piece]:
    """``NormalizedString::split`` with a delimiter behaviour; empty pieces are dropped."""
    found = _matches(piece.text, is_match, pattern)
    if invert:
        found = [(a, b, not m) for a, b, m in found]
    kept: list[list] = []
    if behavior == "Removed":
        kept = [[a, b, m] for a, b, m in found]
    elif behavior == "Isolated":
        kept = [[a, b, False] for a, b, _m in found]
    elif behavior == "MergedWithPrevious":
        previous = False
        for a, b, m in found:
            if m and not previous and kept:
                kept[-1][1] = b
            else:
                kept.append([a, b, False])
            previous = m
    elif behavior == "MergedWithNext":
        previous = False
        for a, b, m in reversed(found):
            if m and not previous and kept:
                kept[-1][0] = a
            else:
                kept.append([a, b, False])
            previous = m
        kept.reverse()
    elif behavior == "Contiguous":
        previous = False
        for a, b, m in found:
            if m == previous and kept:
                kept[-1][1] = b
            else:
                kept.append([a, b, False])
            previous = m
    return [piece.cut(a, b) for a, b, remove in kept if not remove and b > a]


def _is_punct(ch: str) -> bool:
    return (ch.isascii() and not ch.isalnum() and ch.isprintable() and ch != " ") or unicodedata.category(ch).startswith("P")


def _byte_map(piece: Piece) -> Piece:
    enc = byte_encoder()
    text: list[str] = []
    spans: list[tuple[int, int]] = []
    for ch, span in zip(piece.text, piece.spans):
        for b in ch.encode("utf-8", "surrogatepass"):
            text.append(enc[b])
            spans.append(span)
    return Piece("".join(text), tuple(spans))


def _prepend_piece(piece: Piece, prefix: str) -> Piece:
    span = piece.spans[0] if piece.spans else (piece.start, piece.start)
    return Piece(prefix + piece.text, (span,) * len(prefix) + piece.spans)


PreStep = Callable[[Piece, int], list[Piece]]  # (piece, start of the input) → pieces


def _bytelevel_pre(spec: dict) -> PreStep:
    prefix = bool(spec.get("add_prefix_space", True))
    use_regex = bool(spec.get("use_regex", True))
    pattern = regex.compile(BYTELEVEL_REGEX)

    def run(piece: Piece, _origin: int) -> list[Piece]:
        if prefix and not piece.text.startswith(" "):
            piece = _prepend_piece(piece, " ")
        parts = split_by(piece, "Isolated", pattern=pattern) if use_regex else [piece]
        return [_byte_map(p) for p in parts]

    return run


def _metaspace_pre(spec: dict, where: str) -> PreStep:
    replacement = _char(spec, "replacement", where, "\u2581")
    scheme = spec.get("prepend_scheme")
    if scheme is None:
        scheme = "always" if spec.get("add_prefix_space", True) else "never"
    if scheme not in ("always", "first", "never"):
        raise WorkbenchError(f"{where}: Metaspace prepend_scheme {scheme!r} is not always, first or never")
    do_split = bool(spec.get("split", True))
    marker = regex.compile(regex.escape(replacement))

    def run(piece: Piece, origin: int) -> list[Piece]:
        piece = Piece(piece.text.replace(" ", replacement), piece.spans)
        if not piece.text.startswith(replacement) and (
                scheme == "always" or (scheme == "first" and piece.start == origin == 0)):
            piece = _prepend_piece(piece, replacement)
        return split_by(piece, "MergedWithNext", pattern=marker) if do_split else [piece]

    return run


def _behavior(spec: dict, where: str, default: str) -> str:
    behavior = spec.get("behavior", default)
    if behavior not in _BEHAVIORS:
        raise WorkbenchError(f"{where}: split behavior {behavior!r} is not one of {', '.join(_BEHAVIORS)}")
    return behavior


def build_pretokenizer(spec: object, where: str) -> list[tuple[str, PreStep]]:
    """``[(component name, step)]`` in order; a ``Sequence`` is flattened."""
    if spec is None:
        return []
    kind = _type(spec, where)
    assert isinstance(spec, dict)
    _check_settings("pre_tokenizer", kind, spec, where)
    if kind == "Sequence":
        out: list[tuple[str, PreStep]] = []
        for item in _items(spec, "pretokenizers", where):
            out.extend(build_pretokenizer(item, where))
        return out
    step: PreStep
    if kind == "ByteLevel":
        step = _bytelevel_pre(spec)
    elif kind == "Metaspace":
        step = _metaspace_pre(spec, where)
    elif kind == "Split":
        pattern = _pattern(spec, where)
        behavior = _behavior(spec, where, "Isolated")
        invert = bool(spec.get("invert", False))
        step = lambda p, _o: split_by(p, behavior, pattern=pattern, invert=invert)  # noqa: E731
    elif kind == "Whitespace":
        words = regex.compile(r"\w+|[^\w\s]+")
        step = lambda p, _o: split_by(p, "Removed", pattern=words, invert=True)  # noqa: E731
    elif kind == "WhitespaceSplit":
        step = lambda p, _o: split_by(p, "Removed", is_match=str.isspace)  # noqa: E731
    elif kind == "BertPreTokenizer":
        def step(p: Piece, _o: int) -> list[Piece]:
            return [q for w in split_by(p, "Removed", is_match=str.isspace)
                    for q in split_by(w, "Isolated", is_match=_is_punct)]
    elif kind == "Punctuation":
        behavior = _behavior(spec, where, "Isolated")
        step = lambda p, _o: split_by(p, behavior, is_match=_is_punct)  # noqa: E731
    elif kind == "Digits":
        individual = bool(spec.get("individual_digits", False))
        digit = regex.compile(r"\p{N}")
        step = lambda p, _o: split_by(  # noqa: E731
            p, "Isolated" if individual else "Contiguous", is_match=lambda c: bool(digit.match(c)))
    elif kind == "CharDelimiterSplit":
        delimiter = _char(spec, "delimiter", where, " ")
        step = lambda p, _o: split_by(p, "Removed", is_match=lambda c: c == delimiter)  # noqa: E731
    else:
        raise _refuse(kind, "pre-tokenizer", where, PRE_TOKENIZERS)
    return [(kind, step)]


# --------------------------------------------------------------------------------- post-processors
def _pair(value: object, where: str, what: str) -> tuple[str, int]:
    if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int)
            and not isinstance(value[1], bool) and value[1] >= 0):
        return value[0], value[1]
    raise WorkbenchError(f"{where}: {what} must be [token, id], not {value!r}")


def build_post(spec: object, where: str) -> list[tuple[list[tuple[str, int]], list[tuple[str, int]]]]:
    """What the post-processor adds to one text: ``[(before, after)]`` per component, each a list of
    ``(token, id)`` — only the ids change (``ByteLevel`` trims offsets, nothing else)."""
    if spec is None:
        return []
    kind = _type(spec, where)
    assert isinstance(spec, dict)
    if kind == "Sequence":
        out = []
        for item in _items(spec, "processors", where):
            out.extend(build_post(item, where))
        return out
    if kind == "ByteLevel":
        return []
    if kind in ("BertProcessing", "RobertaProcessing"):
        return [([_pair(spec.get("cls"), where, "cls")], [_pair(spec.get("sep"), where, "sep")])]
    if kind == "TemplateProcessing":
        single = spec.get("single")
        specials = spec.get("special_tokens") or {}
        if not isinstance(single, list) or not isinstance(specials, dict):
            raise WorkbenchError(f"{where}: TemplateProcessing needs a \"single\" list and \"special_tokens\"")
        before: list[tuple[str, int]] = []
        after: list[tuple[str, int]] = []
        seen_sequence = False
        for part in single:
            if isinstance(part, dict) and isinstance(part.get("Sequence"), dict):
                if part["Sequence"].get("id") != "A" or seen_sequence:
                    raise WorkbenchError(f"{where}: a single template must hold the sequence $A once")
                seen_sequence = True
            elif isinstance(part, dict) and isinstance(part.get("SpecialToken"), dict):
                name = part["SpecialToken"].get("id")
                entry = specials.get(name) if isinstance(name, str) else None
                if not isinstance(entry, dict) or not isinstance(entry.get("ids"), list) or \
                        not isinstance(entry.get("tokens"), list) or len(entry["ids"]) != len(entry["tokens"]):
                    raise WorkbenchError(f"{where}: template token {name!r} is not in special_tokens with ids and tokens")
                if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in entry["ids"]) or \
                        not all(isinstance(t, str) for t in entry["tokens"]):
                    raise WorkbenchError(f"{where}: template token {name!r} needs whole-number ids and text tokens")
                (after if seen_sequence else before).extend(zip(entry["tokens"], entry["ids"]))
            else:
                raise WorkbenchError(f"{where}: template part {part!r} is neither Sequence nor SpecialToken")
        if not seen_sequence:
            raise WorkbenchError(f"{where}: a single template without the sequence $A")
        return [(before, after)]
    raise _refuse(kind, "post-processor", where, POST_PROCESSORS)


# ------------------------------------------------------------------------------------------ decoders
def _wordpiece_cleanup(text: str) -> str:
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                 (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(a, b)
    return text


DecodeStep = Callable[[list[str]], list[str]]


def _bytelevel_decode(tokens: list[str]) -> list[str]:
    from workbench.core.byte_level import byte_decoder

    table = byte_decoder()
    data = bytearray()
    for token in tokens:
        if all(ch in table for ch in token):
            data.extend(table[ch] for ch in token)
        else:
            data.extend(token.encode("utf-8", "surrogatepass"))
    return [bytes(data).decode("utf-8", "replace")]


def _byte_fallback_decode(tokens: list[str]) -> list[str]:
    out: list[str] = []
    pending = bytearray()

    def flush() -> None:
        if pending:
            try:
                out.append(bytes(pending).decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" for _ in pending)
            pending.clear()

    for token in tokens:
        if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            try:
                pending.append(int(token[3:5], 16))
                continue
            except ValueError:
                pass
        flush()
        out.append(token)
    flush()
    return out


def build_decoder(spec: object, where: str) -> list[tuple[str, DecodeStep]]:
    if spec is None:
        return []
    kind = _type(spec, where)
    assert isinstance(spec, dict)
    _check_settings("decoder", kind, spec, where)
    step: DecodeStep
    if kind == "Sequence":
        out: list[tuple[str, DecodeStep]] = []
        for item in _items(spec, "decoders", where):
            out.extend(build_decoder(item, where))
        return out
    if kind == "ByteLevel":
        step = _bytelevel_decode
    elif kind == "WordPiece":
        prefix = spec.get("prefix", "##")
        cleanup = bool(spec.get("cleanup", True))

        def step(tokens: list[str]) -> list[str]:
            out = []
            for i, token in enumerate(tokens):
                if i:
                    token = token.replace(prefix, "", 1) if token.startswith(prefix) else " " + token
                out.append(_wordpiece_cleanup(token) if cleanup else token)
            return out
    elif kind == "Metaspace":
        replacement = _char(spec, "replacement", where, "\u2581")
        scheme = spec.get("prepend_scheme")
        if scheme is None:
            scheme = "always" if spec.get("add_prefix_space", True) else "never"
        drop_first = scheme != "never"
        step = lambda tokens: [  # noqa: E731
            "".join(("" if i == 0 and drop_first else " ") if c == replacement else c for c in t)
            for i, t in enumerate(tokens)]
    elif kind == "Replace":
        pattern = _pattern(spec, where)
        content = str(spec.get("content", ""))
        step = lambda tokens: [pattern.sub(lambda _m: content, t) for t in tokens]  # noqa: E731
    elif kind == "ByteFallback":
        step = _byte_fallback_decode
    elif kind == "Fuse":
        step = lambda tokens: ["".join(tokens)]  # noqa: E731
    elif kind == "Strip":
        content = _char(spec, "content", where, " ")
        start, stop = int(spec.get("start", 0)), int(spec.get("stop", 0))

        def step(tokens: list[str]) -> list[str]:
            out = []
            for token in tokens:
                a = 0
                while a < min(start, len(token)) and token[a] == content:
                    a += 1
                b = len(token)
                for _ in range(stop):
                    if b > a and token[b - 1] == content:
                        b -= 1
                    else:
                        break
                out.append(token[a:b])
            return out
    elif kind == "BPEDecoder":
        suffix = str(spec.get("suffix", "</w>"))
        step = lambda tokens: [t.replace(suffix, "" if i == len(tokens) - 1 else " ")  # noqa: E731
                               for i, t in enumerate(tokens)]
    else:
        raise _refuse(kind, "decoder", where, DECODERS)
    return [(kind, step)]


# -------------------------------------------------------------------------------------------- pipeline
def _added_tokens(raw: object, where: str) -> tuple[AddedToken, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise WorkbenchError(f"{where}: added_tokens must be a list")
    out: list[AddedToken] = []
    by_content: dict[str, int] = {}
    by_id: dict[int, str] = {}
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not entry["content"] \
                or not isinstance(entry.get("id"), int) or isinstance(entry.get("id"), bool):
            raise WorkbenchError(f"{where}: an added_tokens entry lacks a \"content\" string or a whole-number \"id\"")
        content, token_id = entry["content"], entry["id"]
        bad = next((ch for ch in content if 0xD800 <= ord(ch) <= 0xDFFF), None)
        if bad is not None:
            raise WorkbenchError(f"{where}: added token {content!r} holds a lone surrogate (U+{ord(bad):04X}), "
                                 "which is not text (tokenizers refuses the file too): fix the entry")
        if by_content.get(content, token_id) != token_id:
            raise WorkbenchError(f"{where}: added token {content!r} is listed twice, as ids {by_content[content]} "
                                 f"and {token_id}: which id the text gets is ambiguous; keep one entry")
        if by_id.get(token_id, content) != content:
            raise WorkbenchError(f"{where}: added tokens {by_id[token_id]!r} and {content!r} share id {token_id}: "
                                 "give each its own id")
        by_content[content] = token_id
        by_id[token_id] = content
        special = bool(entry.get("special", False))
        out.append(AddedToken(token_id, content, special, bool(entry.get("single_word", False)),
                              bool(entry.get("lstrip", False)), bool(entry.get("rstrip", False)),
                              bool(entry.get("normalized", not special))))
    return tuple(out)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


@dataclass(frozen=True)
class Pipeline:
    """The stages of a ``tokenizer.json`` around its model (see the module docstring)."""

    normalizer: dict | None = None
    pre_tokenizer: dict | None = None
    post_processor: dict | None = None
    decoder: dict | None = None
    added_tokens: tuple[AddedToken, ...] = ()
    # BPE model options that change ids (tokenizers' names)
    model_options: dict = field(default_factory=dict)
    # Whether statistics must run the pipeline on whole lines: our named normalizers and
    # pre-tokenizers (which cut a corpus into cached pre-tokens) cannot say what this one does.
    whole_lines: bool = False

    @classmethod
    def from_document(cls, document: dict, where: str) -> Pipeline:
        """Build and check every component of a parsed ``tokenizer.json`` (one refusal line each)."""
        raw_model = document.get("model")
        model: dict = raw_model if isinstance(raw_model, dict) else {}
        options = {k: bool(model.get(k)) for k in ("ignore_merges", "fuse_unk") if model.get(k)}
        pipeline = cls(
            normalizer=document.get("normalizer"), pre_tokenizer=document.get("pre_tokenizer"),
            post_processor=document.get("post_processor"), decoder=document.get("decoder"),
            added_tokens=_added_tokens(document.get("added_tokens"), where), model_options=options,
            whole_lines=document.get("whole_lines") is True)
        pipeline.check(where)
        return pipeline

    @classmethod
    def from_spec(cls, spec: dict, where: str) -> Pipeline:
        """From :meth:`spec` (a project's stored settings)."""
        if not isinstance(spec, dict):
            raise WorkbenchError(f"{where}: the stored pipeline is not an object")
        return cls.from_document(spec, where)

    def spec(self) -> dict:
        """JSON-able, in ``tokenizer.json``'s own keys."""
        return {"normalizer": self.normalizer, "pre_tokenizer": self.pre_tokenizer,
                "post_processor": self.post_processor, "decoder": self.decoder,
                "added_tokens": [t.spec() for t in self.added_tokens],
                "model": dict(self.model_options), "whole_lines": self.whole_lines}

    def check(self, where: str) -> None:
        for stage in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
            bad = _surrogate_in(getattr(self, stage))
            if bad is not None:
                raise WorkbenchError(f"{where}: the {stage} holds {bad[:20]!r}, a lone surrogate, which is not "
                                     "text (tokenizers refuses the file too): fix the file")
        for name in ("_normalizers", "_pre_steps", "_post", "_decoders"):
            _built(self, name, where)
        for token in self.added_tokens:
            if token.normalized and self.normalizer is not None and not self.normalize(token.content):
                raise WorkbenchError(f"{where}: added token {token.content!r} normalizes to nothing: it can never match")

    # ---- built components (checked once) ----------------------------------------------------------
    @cached_property
    def _normalizers(self) -> list[tuple[str, Callable[[str], str]]]:
        return build_normalizer(self.normalizer, "normalizer")

    @cached_property
    def _pre_steps(self) -> list[tuple[str, PreStep]]:
        return build_pretokenizer(self.pre_tokenizer, "pre_tokenizer")

    @cached_property
    def _post(self) -> list[tuple[list[tuple[str, int]], list[tuple[str, int]]]]:
        return build_post(self.post_processor, "post_processor")

    @cached_property
    def _decoders(self) -> list[tuple[str, DecodeStep]]:
        return build_decoder(self.decoder, "decoder")

    @cached_property
    def byte_level(self) -> bool:
        """Whether the pre-tokenizer maps bytes to GPT-2's stand-in characters (the model's vocabulary
        is in that form)."""
        return any(kind == "ByteLevel" for kind, _step in self._pre_steps)

    @cached_property
    def special_ids(self) -> frozenset[int]:
        return frozenset(t.id for t in self.added_tokens if t.special)

    @cached_property
    def token_of_id(self) -> dict[int, AddedToken]:
        return {t.id: t for t in self.added_tokens}

    @cached_property
    def _raw_re(self) -> regex.Pattern[str] | None:
        return self._added_re([t for t in self.added_tokens if not t.normalized], normalize=False)

    @cached_property
    def _normalized_re(self) -> regex.Pattern[str] | None:
        return self._added_re([t for t in self.added_tokens if t.normalized], normalize=True)

    def _added_re(self, tokens: list[AddedToken], *, normalize: bool) -> regex.Pattern[str] | None:
        contents: dict[str, AddedToken] = {}
        for token in tokens:
            key = self.normalize(token.content) if normalize else token.content
            if key:
                contents.setdefault(key, token)
        if not contents:
            return None
        self._added_by_text.update(contents) if normalize else self._raw_by_text.update(contents)
        ordered = sorted(contents, key=len, reverse=True)  # leftmost-longest, as Aho-Corasick finds them
        return regex.compile("|".join(regex.escape(c) for c in ordered))

    @cached_property
    def _added_by_text(self) -> dict[str, AddedToken]:
        return {}

    @cached_property
    def _raw_by_text(self) -> dict[str, AddedToken]:
        return {}

    # ---- stages --------------------------------------------------------------------------------
    @property
    def normalizer_names(self) -> list[str]:
        return [name for name, _f in self._normalizers]

    @property
    def pre_tokenizer_names(self) -> list[str]:
        return [name for name, _f in self._pre_steps]

    @property
    def decoder_names(self) -> list[str]:
        return [name for name, _f in self._decoders]

    def normalize(self, text: str) -> str:
        """``normalizer.normalize_str``."""
        for _name, func in self._normalizers:
            text = func(text)
        return text

    def normalize_steps(self, text: str) -> list[tuple[str, str]]:
        """The text after each normalizer, by name (for showing which one changed what)."""
        out = []
        for name, func in self._normalizers:
            text = func(text)
            out.append((name, text))
        return out

    def normalize_piece(self, piece: Piece, exact: bool = True) -> Piece:
        """Normalize ``piece`` keeping, per output character, the input span it came from.

        ``exact=False`` (plain encoding, where only the ids count) spreads the output evenly over
        the input instead of aligning it: every character but the first starts after the piece's
        start, which is all that ``Metaspace(prepend_scheme="first")`` asks of a span."""
        text = piece.text
        spans = piece.spans
        if not exact:
            out = self.normalize(text)
            if out == text:
                return piece
            a0, n, m = piece.start, len(text), len(out)
            spread = [a0 + (max(1, i * n // m) if i else 0) for i in range(m)]
            return Piece(out, tuple((a, a + 1) for a in spread))
        for _name, func in self._normalizers:
            out = func(text)
            if out == text:
                continue
            spans = _align(text, out, spans, piece.start)
            text = out
        return Piece(text, spans)

    def _find_added(self, piece: Piece, pattern: regex.Pattern[str] | None, by_text: dict[str, AddedToken],
                    allowed: frozenset[str] | None) -> list[Segment]:
        if pattern is None or not piece.text:
            return [Segment(piece)] if piece.text else []
        text = piece.text
        out: list[Segment] = []
        start_offset = 0
        for m in pattern.finditer(text):
            start, stop = m.span()
            token = by_text[m.group()]
            if token.special and allowed is not None and token.content not in allowed:
                continue  # the library's encode_special_tokens: this special token is text here
            flags: list[str] = []
            if token.single_word:
                if (start > 0 and _is_word_char(text[start - 1])) or (stop < len(text) and _is_word_char(text[stop])):
                    continue
                flags.append("single_word")
            if token.lstrip:
                left = start
                while left > 0 and text[left - 1].isspace():
                    left -= 1
                if max(left, start_offset) < start:
                    flags.append("lstrip")
                start = max(left, start_offset)
            if token.rstrip:
                right = stop
                while right < len(text) and text[right].isspace():
                    right += 1
                if right > stop:
                    flags.append("rstrip")
                stop = right
            if start > start_offset:
                out.append(Segment(piece.cut(start_offset, start)))
            out.append(Segment(piece.cut(start, stop), token, tuple(flags) or ("special" if token.special else "added",)))
            start_offset = stop
        if start_offset < len(text):
            out.append(Segment(piece.cut(start_offset, len(text))))
        return out

    def segments(self, text: str, allowed: frozenset[str] | None = None, exact: bool = True) -> list[Segment]:
        """Added tokens found and plain text normalized: the input as the pre-tokenizer gets it.
        ``allowed``: the special tokens that match (``None``: all, the library's default); the others
        are text, as with the library's ``encode_special_tokens``."""
        _ = self._raw_re, self._normalized_re  # fill the content tables
        out: list[Segment] = []
        for seg in self._find_added(_identity_piece(text), self._raw_re, self._raw_by_text, allowed):
            if seg.token is not None:
                out.append(seg)
                continue
            normalized = self.normalize_piece(seg.piece, exact)
            out.extend(self._find_added(normalized, self._normalized_re, self._added_by_text, allowed))
        return out

    def pre_tokenize_piece(self, piece: Piece) -> list[Piece]:
        pieces = [piece] if piece.text else []
        for _name, step in self._pre_steps:
            pieces = [q for p in pieces for q in step(p, 0) if q.text]
        return pieces

    def pre_tokenize(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """``pre_tokenizer.pre_tokenize_str``: pieces with code-point spans in ``text``."""
        return [(p.text, (p.start, p.end)) for p in self.pre_tokenize_piece(_identity_piece(text))]

    def post_process(self, ids: list[int]) -> list[int]:
        """The ids with what the post-processor adds to a single text."""
        for before, after in self._post:
            ids = [i for _t, i in before] + ids + [i for _t, i in after]
        return ids

    def post_additions(self) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """``(before, after)`` tokens the post-processor wraps a single text in."""
        before: list[tuple[str, int]] = []
        after: list[tuple[str, int]] = []
        for b, a in self._post:
            before = b + before
            after = after + a
        return before, after

    def decode_tokens(self, tokens: list[str]) -> str:
        """``decoder.decode``: token strings (the library's form) to text."""
        if not self._decoders:
            return " ".join(tokens)
        for _name, step in self._decoders:
            tokens = step(tokens)
        return "".join(tokens)

    def decode_steps(self, tokens: list[str]) -> list[tuple[str, list[str]]]:
        out = []
        for name, step in self._decoders:
            tokens = step(tokens)
            out.append((name, list(tokens)))
        return out

    def describe(self) -> dict[str, Any]:
        """Component names per stage (for the window and the CLI)."""
        return {"normalizer": self.normalizer_names, "pre_tokenizer": self.pre_tokenizer_names,
                "post_processor": _type(self.post_processor, "post_processor") if self.post_processor else None,
                "decoder": self.decoder_names, "added_tokens": len(self.added_tokens)}


def _align(before: str, after: str, spans: tuple[tuple[int, int], ...], origin: int) -> tuple[tuple[int, int], ...]:
    """The input spans of ``after``'s characters, given ``before``'s: the longest common runs map
    one to one (``difflib``); a replaced stretch of equal length maps character for character, a
    shorter one that is not the old one composed keeps the first characters' spans (what is left
    after marks are removed), otherwise every new character takes the whole old stretch; an
    inserted one its neighbour's."""
    from difflib import SequenceMatcher

    out: list[tuple[int, int]] = []
    n = len(before)

    def whole(i1: int, i2: int) -> tuple[int, int]:
        if i2 > i1:
            return spans[i1][0], spans[i2 - 1][1]
        if n == 0:
            return origin, origin
        near = spans[min(i1, n - 1)]
        return near

    for op, i1, i2, j1, j2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            out.extend(spans[i1:i2])
        elif op == "replace" and j2 - j1 < i2 - i1 and unicodedata.normalize("NFKC", before[i1:i2]) != after[j1:j2]:
            out.extend(spans[i1:i1 + j2 - j1])  # characters removed (accents stripped): the rest keep theirs
        elif op in ("replace", "insert"):
            out.extend([whole(i1, i2)] * (j2 - j1))
    return tuple(out)


def _built(pipeline: Pipeline, attr: str, where: str) -> None:
    try:
        getattr(pipeline, attr)
    except WorkbenchError as exc:
        raise WorkbenchError(f"{where}: {exc}") from None


def dumps(pipeline: Pipeline) -> str:
    return json.dumps(pipeline.spec(), ensure_ascii=False)
