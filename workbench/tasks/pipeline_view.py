"""Explain a tokenizer stage by stage, and say which stage loses a text that does not come back.

:func:`stages` is the Inspect tab's **Pipeline** view and ``workbench pipeline``: the text after each
stage, each equal to the library's own stage function for an imported ``tokenizer.json`` —
``normalizer.normalize_str`` (with every normalizer's output and the input span of each normalized
character), the added tokens found and the flag that decided each match, ``pre_tokenizer.
pre_tokenize_str``, the model's tokens (``encode``), what the post-processor adds, and
``decode``. A workbench run (no tokenizer.json pipeline) shows its own normalizer, pre-tokenizer
and model the same way.

:func:`round_trip` answers "does ``decode(encode(x)) == x``?" (encoded without the post-processor's
additions, decoded keeping special tokens) and, where not, names the first stage that lost
information, found by running the later stages without the model (each pre-token one token):

* ``[UNK] (model)`` — the vocabulary cannot spell a character;
* ``normalizer: <Component>`` — the first normalizer after which the text no longer comes back;
* ``pre-tokenizer: <Component>`` — a pre-tokenizer that drops characters (whitespace);
* ``decoder: <Component>`` — the decoder joins or cleans up differently (WordPiece's cleanup
  turning " ," into ",", spaces it puts between words);
* ``model`` — anything else the model's pieces change (byte-fallback pieces that are not UTF-8).

:func:`round_trip_files` is ``workbench roundtrip SRC FILES``: the share of lines that survive and
the first offending line per cause. Left out: pair inputs, truncation and padding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.offsets import offset_map
from workbench.core.pipeline import Piece, Pipeline
from workbench.errors import WorkbenchError


@dataclass(frozen=True)
class AddedMatch:
    content: str
    id: int
    start: int  # code points in the input
    end: int
    flags: tuple[str, ...]  # "special"/"added", or the flag that changed the match: lstrip, rstrip, single_word


@dataclass(frozen=True)
class StageToken:
    id: int
    token: str  # the library's token string
    start: int  # code points in the input
    end: int


@dataclass(frozen=True)
class Stages:
    """Every stage of one text's encoding (see the module docstring)."""

    text: str
    components: dict[str, list[str]]
    normalized: str
    normalizer_steps: list[tuple[str, str]]
    alignment: list[tuple[int, int]]  # per normalized character, its span in the input
    added: list[AddedMatch]
    pre_tokens: list[tuple[str, tuple[int, int]]]  # pre_tokenize_str(normalized): spans in ``normalized``
    model: list[StageToken]
    post_before: list[tuple[str, int]]
    post_after: list[tuple[str, int]]
    ids: list[int]
    decoded: str
    decoder_steps: list[tuple[str, list[str]]] = field(default_factory=list)


def stages(encoder: Encoder, text: str, *, add_special_tokens: bool = True,
           skip_special_tokens: bool = True) -> Stages:
    """The stages of ``text`` (``add_special_tokens``/``skip_special_tokens`` as the library's
    ``encode``/``decode``, whose defaults they are)."""
    tok = encoder.tok
    pipe = tok.pipeline
    if pipe is None:
        return _own_stages(encoder, text)
    normalized = pipe.normalize(text)
    whole = pipe.normalize_piece(Piece(text, tuple((i, i + 1) for i in range(len(text)))))
    added: list[AddedMatch] = []
    model: list[StageToken] = []
    for segment, pieces in encoder.pipeline_stages(text):
        if segment.token is not None:
            added.append(AddedMatch(segment.token.content, segment.token.id, segment.piece.start, segment.piece.end,
                                    segment.flags))
            model.append(StageToken(segment.token.id, encoder.hf_token(segment.token.id), segment.piece.start,
                                    segment.piece.end))
            continue
        for piece, piece_ids in pieces:
            model.extend(StageToken(i, encoder.hf_token(i), piece.start, piece.end) for i in piece_ids)
    before, after = pipe.post_additions() if add_special_tokens else ([], [])
    ids = [i for _t, i in before] + [t.id for t in model] + [i for _t, i in after]
    kept = [t for t in ids if not (skip_special_tokens and t in pipe.special_ids)]
    tokens = [encoder.hf_token(i) for i in kept]
    return Stages(
        text=text, components=pipe.describe(), normalized=normalized, normalizer_steps=pipe.normalize_steps(text),
        alignment=list(whole.spans), added=added, pre_tokens=pipe.pre_tokenize(normalized), model=model,
        post_before=before, post_after=after, ids=ids, decoded=pipe.decode_tokens(tokens),
        decoder_steps=pipe.decode_steps(tokens))


def _own_stages(encoder: Encoder, text: str) -> Stages:
    """A workbench run's stages: its named normalizers, its pre-tokenizer, its model, no post-processor."""
    tok = encoder.tok
    steps: list[tuple[str, str]] = []
    current = text
    from workbench.core.normalize import make_normalizer

    for name in tok.normalizer:
        current = make_normalizer([name])(current)
        steps.append((name, current))
    normalized = current
    mapping = offset_map(text, normalized, tok.normalize) if tok.normalizer else None
    alignment = ([(a, b) for a, b in zip(*mapping)] if mapping is not None
                 else [(i, i + 1) for i in range(len(normalized))])
    pre_tokens = [(normalized[a:b], (a, b)) for a, b in tok.pre.spans(normalized)]
    model: list[StageToken] = []
    from workbench.core.display import piece_text

    for t in encoder.encode_with_offsets(text):
        a = alignment[t.start][0] if t.start < len(alignment) else len(text)
        b = alignment[t.end - 1][1] if 0 < t.end <= len(alignment) else a
        model.append(StageToken(t.id, piece_text(tok.vocab[t.id]), a, b))
    ids = [t.id for t in model]
    return Stages(text=text, components={"normalizer": list(tok.normalizer), "pre_tokenizer": [tok.pretokenizer],
                                         "post_processor": [], "decoder": [], "added_tokens": []},
                  normalized=normalized, normalizer_steps=steps, alignment=alignment, added=[],
                  pre_tokens=pre_tokens, model=model, post_before=[], post_after=[], ids=ids,
                  decoded=encoder.decode(ids))


# ------------------------------------------------------------------------------------------ round trip
@dataclass(frozen=True)
class RoundTrip:
    ok: bool
    decoded: str
    cause: str | None = None  # see the module docstring
    detail: str = ""


def _flat(spec: dict | None, key: str) -> list[dict]:
    if spec is None:
        return []
    if spec.get("type") == "Sequence":
        return [leaf for item in spec.get(key, []) for leaf in _flat(item, key)]
    return [spec]


def _sequence(items: list[dict], key: str) -> dict | None:
    return {"type": "Sequence", key: items} if items else None


class RoundTripper:
    """Round trips of one tokenizer, line after line (the variant pipelines are built once)."""

    _DROPPING = {"Whitespace", "WhitespaceSplit", "BertPreTokenizer", "CharDelimiterSplit"}

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self.tok = encoder.tok
        pipe = self.tok.pipeline
        self._pipe = pipe
        self._norms = _flat(pipe.normalizer, "normalizers") if pipe else []
        self._pres = _flat(pipe.pre_tokenizer, "pretokenizers") if pipe else []
        self._variants: dict[int, Pipeline] = {}

    def _variant(self, keep: int) -> Pipeline:
        """The pipeline with only the first ``keep`` normalizers."""
        found = self._variants.get(keep)
        if found is None:
            assert self._pipe is not None
            found = self._variants[keep] = replace(self._pipe, normalizer=_sequence(self._norms[:keep], "normalizers"))
        return found

    def _without_model(self, pipe: Pipeline, text: str) -> str:
        """Decode with each pre-token as one token: what the stages around the model keep."""
        tokens: list[str] = []
        for segment in pipe.segments(text, exact=False):
            if segment.token is not None:
                tokens.append(self.encoder.hf_token(segment.token.id))
            else:
                tokens.extend(p.text for p in pipe.pre_tokenize_piece(segment.piece))
        return pipe.decode_tokens(tokens)

    def check(self, text: str) -> RoundTrip:
        encoder = self.encoder
        try:
            ids = encoder.encode(text)
        except WorkbenchError as exc:
            return RoundTrip(False, "", "[UNK] (model)", str(exc))
        decoded = encoder.decode(ids)
        if decoded == text:
            return RoundTrip(True, decoded)
        unk = encoder.unknown_id
        if unk is not None and unk in ids:
            lost = "".join(text[t.start:t.end] for t in encoder.encode_with_offsets(text) if t.id == unk)
            return RoundTrip(False, decoded, "[UNK] (model)", f"no piece for {lost[:40]!r}")
        if self._pipe is None:
            return self._own_cause(text, decoded)
        pipe = self._pipe
        if self._without_model(pipe, text) != decoded:
            return self._model_cause(ids, decoded, text)
        stripped = self._stripped(pipe, text)
        if stripped is not None:
            return replace(stripped, decoded=decoded)
        # the first normalizer after which the text does not come back (the model aside)
        kept = [self._without_model(self._variant(k), text) for k in range(len(self._norms) + 1)]
        for k in range(1, len(self._norms) + 1):
            if kept[k] != text and kept[k] != kept[k - 1]:
                step = self._norms[k - 1]
                return RoundTrip(False, decoded, f"normalizer: {step.get('type')}", _diff(kept[k - 1], kept[k]))
        bare = self._variant(0)
        prefix = next((p for p in self._pres if (p.get("type") == "ByteLevel" and p.get("add_prefix_space", True))), None)
        if prefix is not None and decoded.startswith(" ") and not text.startswith(" "):
            return RoundTrip(False, decoded, "pre-tokenizer: ByteLevel (adds a space in front)", _diff(text, decoded))
        dropping = next((p for p in self._pres if p.get("type") in self._DROPPING or p.get("behavior") == "Removed"), None)
        if dropping is not None:
            gap = self._dropped(bare, text)
            if gap is not None:
                return RoundTrip(False, decoded, f"pre-tokenizer: {dropping.get('type')} (drops whitespace)", gap)
        decoders = pipe.decoder_names
        if "Metaspace" in decoders and decoded.count(" ") < text.count(" "):
            return RoundTrip(False, decoded, "decoder: Metaspace (drops every ▁ of the first token)", _diff(text, decoded))
        if "WordPiece" in decoders and any(d.get("cleanup", True) for d in _flat(pipe.decoder, "decoders")
                                           if d.get("type") == "WordPiece"):
            plain = replace(bare, decoder=_sequence([dict(d, cleanup=False) if d.get("type") == "WordPiece" else d
                                                     for d in _flat(pipe.decoder, "decoders")], "decoders"))
            if _first_diff(text, self._without_model(plain, text)) > _first_diff(text, self._without_model(bare, text)):
                return RoundTrip(False, decoded, "decoder: WordPiece (cleanup)", _diff(text, decoded))
        if "WordPiece" in decoders:
            return RoundTrip(False, decoded, "decoder: WordPiece (a space between every two words)",
                             _diff(text, decoded))
        return RoundTrip(False, decoded, f"decoder: {'+'.join(decoders) or 'none (tokens joined with spaces)'}",
                         _diff(text, decoded))

    @staticmethod
    def _stripped(pipe: Pipeline, text: str) -> RoundTrip | None:
        """An added token with ``lstrip``/``rstrip`` that took in the whitespace beside it (the
        token decodes to its content alone), or None."""
        for segment in pipe.segments(text, exact=False):
            token = segment.token
            if token is None or not (token.lstrip or token.rstrip):
                continue
            took = text[segment.piece.start:segment.piece.end]
            if took != token.content:
                flag = "lstrip" if token.lstrip and took[:1].isspace() else "rstrip"
                return RoundTrip(False, "", f"added token {token.content!r} ({flag} takes the whitespace beside it)",
                                 f"{took!r} comes back as {token.content!r}")
        return None

    @staticmethod
    def _dropped(pipe: Pipeline, text: str) -> str | None:
        """Text the pre-tokenizers drop that a decoder cannot put back (it puts back one space
        between words at most): what and where, or None."""
        spans = [(p.start, p.end) for seg in pipe.segments(text) for p in
                 ([seg.piece] if seg.token is not None else pipe.pre_tokenize_piece(seg.piece))]
        pos = 0
        for index, (a, b) in enumerate([*spans, (len(text), len(text))]):
            gap = text[pos:a]
            inner = 0 < index < len(spans)
            if gap and not (inner and gap == " "):
                return f"at character {pos}: {gap!r} is dropped"
            pos = max(pos, b)
        return None

    def _model_cause(self, ids: list[int], decoded: str, text: str) -> RoundTrip:
        """The model's tokens decode to other text than its pre-tokens would: a decoder that treats the
        first token apart (Metaspace drops every ▁ of it), or byte pieces that are not UTF-8."""
        assert self._pipe is not None
        tokens = [self.encoder.hf_token(i) for i in ids]
        names = self._pipe.decoder_names
        if "Metaspace" in names and (tokens and "\u2581" in tokens[0][1:] or decoded.count(" ") < text.count(" ")):
            return RoundTrip(False, decoded, "decoder: Metaspace (drops every ▁ of the first token)", _diff(text, decoded))
        if "\ufffd" in decoded and "\ufffd" not in text:
            return RoundTrip(False, decoded, "model (byte pieces that are not UTF-8)", _diff(text, decoded))
        return RoundTrip(False, decoded, f"decoder: {'+'.join(names) or 'none'} (depends on where tokens start)",
                         _diff(text, decoded))

    def _own_cause(self, text: str, decoded: str) -> RoundTrip:
        tok = self.tok
        if tok.normalizer and tok.normalize(text) != text:
            return RoundTrip(False, decoded, f"normalizer: {','.join(tok.normalizer)}", _diff(text, decoded))
        if not tok.pre.keeps_whitespace:
            return RoundTrip(False, decoded, f"pre-tokenizer: {tok.pretokenizer} (drops whitespace)", _diff(text, decoded))
        return RoundTrip(False, decoded, "model", _diff(text, decoded))


def _first_diff(a: str, b: str) -> int:
    """The first position where ``a`` and ``b`` differ (``len`` of the longer when one is the other)."""
    if a == b:
        return max(len(a), len(b)) + 1
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return i


def _diff(text: str, decoded: str) -> str:
    """Where the two first differ, with a little context."""
    i = min(_first_diff(text, decoded), len(text))
    return f"at character {i}: {text[max(0, i - 8):i + 12]!r} came back as {decoded[max(0, i - 8):i + 12]!r}"


def round_trip(encoder: Encoder, text: str) -> RoundTrip:
    return RoundTripper(encoder).check(text)


@dataclass
class RoundTripReport:
    lines: int = 0
    survived: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    first: dict[str, tuple[str, int, str, str]] = field(default_factory=dict)  # cause → (file, line, text, detail)

    @property
    def share(self) -> float:
        return self.survived / self.lines if self.lines else 1.0

    def as_json(self) -> dict:
        return {"lines": self.lines, "survived": self.survived, "share": round(self.share, 6),
                "causes": {cause: {"lines": n, "first": {"file": self.first[cause][0], "line": self.first[cause][1],
                                                         "text": self.first[cause][2], "detail": self.first[cause][3]}}
                           for cause, n in sorted(self.causes.items(), key=lambda item: -item[1])}}


def round_trip_lines(tokenizer: Tokenizer, sources: Iterable[tuple[str, Iterable[str]]],
                     should_stop: Callable[[], bool] | None = None) -> RoundTripReport:
    """Every line of every ``(name, lines)`` source (line breaks not part of the line)."""
    checker = RoundTripper(Encoder(tokenizer))
    report = RoundTripReport()
    for name, lines in sources:
        for number, line in enumerate(lines, 1):
            if should_stop is not None and number % 256 == 0 and should_stop():
                return report
            result = checker.check(line)
            report.lines += 1
            if result.ok:
                report.survived += 1
                continue
            cause = result.cause or "unknown"
            report.causes[cause] = report.causes.get(cause, 0) + 1
            report.first.setdefault(cause, (name, number, line, result.detail))
    return report


def file_lines(path: Path, limit: int | None = None) -> Iterable[str]:
    """The lines of a UTF-8 text file (without their line breaks), streamed; a bad byte names its line."""
    from workbench.corpus.streams import os_error

    try:
        handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise os_error(Path(path), exc) from None
    with handle:
        number = 0
        try:
            for number, line in enumerate(handle, 1):  # noqa: B007 - the error names it
                if limit is not None and number > limit:
                    return
                yield line.rstrip("\n").removesuffix("\r")
        except UnicodeDecodeError:
            raise WorkbenchError(f"{path} line {number + 1}: not valid UTF-8 text: re-save the file as UTF-8") from None


def round_trip_files(tokenizer: Tokenizer, files: Sequence[str | Path], *, limit: int | None = None) -> RoundTripReport:
    return round_trip_lines(tokenizer, ((str(f), file_lines(Path(f), limit)) for f in files))


# ------------------------------------------------------------------------------------- the window's view
MAX_MARKED_LINES = 500


@dataclass(frozen=True)
class Explanation:
    """The Inspect tab's Pipeline view: one line's stages, and a round-trip mark per line."""

    index: int  # the line the stages are of
    stages: Stages | None
    marks: list[RoundTrip]  # one per line, up to MAX_MARKED_LINES
    lines: int  # lines in the text (marks stop at MAX_MARKED_LINES)
    error: str | None = None


def explain(encoder: Encoder, text: str, index: int, separator: str = "\n",
            should_stop: Callable[[], bool] | None = None) -> Explanation:
    """Stages of line ``index`` of ``text`` and the round trip of every line (the first
    :data:`MAX_MARKED_LINES`); a line the tokenizer cannot encode is named, never raised."""
    lines = text.split("\n")
    lines = [line.removesuffix("\r") for line in lines] if separator == "\r\n" else lines
    index = min(max(index, 0), len(lines) - 1)
    checker = RoundTripper(encoder)
    marks: list[RoundTrip] = []
    for number, line in enumerate(lines[:MAX_MARKED_LINES]):
        if should_stop is not None and number % 64 == 0 and should_stop():
            break
        marks.append(checker.check(line))
    try:
        found: Stages | None = stages(encoder, lines[index])
        error = None
    except WorkbenchError as exc:
        found, error = None, str(exc)
    return Explanation(index, found, marks, len(lines), error)
