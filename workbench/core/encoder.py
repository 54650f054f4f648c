"""Encode text to ids and decode ids to text with a :class:`~workbench.core.model.Tokenizer`.

Encoding runs the pipeline normalize → pre-tokenize → BPE inside each pre-token, with a cache of
pre-tokens already seen (natural text repeats its words, so most pieces are dictionary hits).
Two BPE rules, both exact against the library each tokenizer comes from:

* ``pairs``: repeatedly merge the adjacent pair with the lowest merge rank (GPT-2, ``tokenizers``).
* ``bytes``: repeatedly merge the adjacent pair whose concatenation has the lowest rank (tiktoken).

``greedy=True`` replaces BPE with greedy longest match (the WordPiece inference rule).
A ``model="wordpiece"`` tokenizer is encoded and decoded by
:class:`~workbench.core.wordpiece.WordPieceModel` (BERT's rule, ``##`` pieces, whole-word ``[UNK]``).
``max_merges=N`` applies only the first N merges: how the text split "as of merge N".

Byte-level BPE whose ids tiktoken's rule gives — ``.tiktoken`` files, and merge lists for which
:mod:`~workbench.core.rank_equivalence` proves it (our runs, GPT-2 files, a byte-level
tokenizer.json) — is encoded by tiktoken's own core (:mod:`~workbench.core.native_bpe`) once
20,000 characters have come: whole texts for a tiktoken preset, else each new pre-token.

Left out on purpose: batching and threads. Offsets are code points of the *normalized* text.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import regex

from workbench.core.model import Tokenizer
from workbench.core.native_bpe import NATIVE_AFTER_CHARS, NativeBPE, native_fits, plain_byte_level, whole_text_fits
from workbench.core.pipeline import Piece, Segment
from workbench.core.special_roles import with_template
from workbench.core.unigram import UnigramModel, is_spm_model, model_of
from workbench.core.wordpiece import WordPieceModel
from workbench.errors import WorkbenchError

_LONG_PIECE = 48  # above this many symbols the quadratic scan gives way to a heap
_SHORT_BYTES = 32  # below this the byte-rank rule scans (min over a short list, in C); above, a heap
_SPLIT_MIN = 12  # pieces longer than this (in bytes) are first cut where no token can cross


@dataclass(frozen=True)
class EncodedToken:
    """One token with where it came from: ``start``/``end`` are code points in the normalized text.

    A token that holds only part of a character (byte-level BPE on CJK or emoji) gets the span of the
    whole character(s) it touches; ``partial`` says its bytes alone are not valid UTF-8.
    """

    id: int
    start: int
    end: int
    partial: bool


class Encoder:
    """Stateless apart from its cache; build one per tokenizer and reuse it."""

    def __init__(self, tokenizer: Tokenizer, *, greedy: bool = False, max_merges: int | None = None,
                 native: bool = True):
        self.tok = tokenizer
        self.greedy = greedy
        # Unigram (and SentencePiece's score-ordered BPE) split words in workbench.core.unigram.
        self._spm: UnigramModel | None = model_of(tokenizer) if is_spm_model(tokenizer) else None
        self._pre = tokenizer.pre
        self._normalize = tokenizer.normalize if tokenizer.normalizer else None
        self._pattern = self._pre.compiled()
        self._bytes = tokenizer.units == "bytes"
        # tiktoken's rule with every merge needs the ranks (ids) only: leave a lazily recovered
        # merge list (an imported .tiktoken file) unread — every non-special id is usable then.
        ranks_only = tokenizer.merge_rule == "bytes" and max_merges is None
        merges: Sequence[tuple[int, int, int]]
        if ranks_only:
            merges = ()
        else:
            merges = tokenizer.merges if max_merges is None else tokenizer.merges[: max(0, max_merges)]
        self._pair_rank: dict[tuple[int, int], tuple[int, int]] = {
            (a, b): (rank, new) for rank, (a, b, new) in enumerate(merges)
        }
        specials = tokenizer.special_ids
        allowed = {new for _a, _b, new in merges}
        base = {i for i in range(len(tokenizer.vocab)) if i not in specials and tokenizer.vocab[i]}
        if not ranks_only:
            base -= set(tokenizer.merge_of_id)  # ids made by merges are only reachable through merges
        self._usable = base | allowed
        self._piece_to_id = {tokenizer.vocab[i]: i for i in sorted(self._usable, reverse=True)}
        self._max_piece = max((len(tokenizer.vocab[i]) for i in self._usable), default=1)
        self._eow = tokenizer.end_of_word_id
        self._eow_bytes = tokenizer.end_of_word.encode("utf-8") if tokenizer.end_of_word else b""
        self._unk = tokenizer.special_tokens.get(tokenizer.unk_token) if tokenizer.unk_token else None
        self._cache: dict[str, tuple[int, ...]] = {}
        self._segment_cache: dict[bytes, tuple[int, ...]] = {}
        self._cross_table: bytearray | None = None
        self._two_byte: list[int] | None = None
        self._missing_bytes = b""
        # Byte b is id b in our own byte-level runs without specials; otherwise look the ids up.
        self._byte_ids: list[int] | None = None
        if self._bytes:
            byte_ids = [self._piece_to_id.get(bytes([b]), -1) for b in range(256)]
            missing = [b for b in range(256) if byte_ids[b] < 0]
            if missing and self._unk is not None:
                byte_ids = [self._unk if i < 0 else i for i in byte_ids]
            elif missing:
                # An imported vocabulary without some byte: those bytes cannot be encoded at all.
                self._missing_bytes = bytes(missing)
            if byte_ids != list(range(256)):
                self._byte_ids = byte_ids
        self._wordpiece = WordPieceModel(tokenizer, max_merges) if tokenizer.model == "wordpiece" else None
        # A tokenizer.json's own stages (see workbench.core.pipeline): byte-fallback pieces are bytes
        # in the vocabulary, so they stay out of the piece lookup and are reached by byte.
        self._pipe = tokenizer.pipeline
        self._fallback: list[int] | None = None
        if tokenizer.byte_fallback and tokenizer.model == "bpe" and not self._bytes:
            from workbench.core.unigram import byte_block

            self._fallback = byte_block(tokenizer)
            if self._fallback:
                blocked = set(self._fallback)
                self._usable -= blocked
                self._piece_to_id = {tokenizer.vocab[i]: i for i in sorted(self._usable, reverse=True)}
        self._hf_tokens: dict[int, str] = {}
        self._special_re = _special_pattern(frozenset(tokenizer.special_tokens))
        # tiktoken's own core for what it computes exactly as we do (see :mod:`native_bpe`): built on
        # first use by a long text, so opening a file and encoding one line pays nothing for it.
        self._native: NativeBPE | bool = native and not greedy and native_fits(
            tokenizer, self._byte_ids, self._unk) and not self._missing_bytes
        self._native_whole = whole_text_fits(tokenizer)
        self._plain_prefix = plain_byte_level(self._pipe) if self._native else None
        self._max_merges = max_merges
        self._encoded_chars = 0

    # ---- encoding ------------------------------------------------------------------------------
    def encode(self, text: str, *, allow_special: bool | Collection[str] = False,
               add_special_tokens: bool = False) -> list[int]:
        """Ids of ``text``; special tokens are plain text unless ``allow_special`` (tiktoken's default):
        ``True`` matches all of them, a collection only those (tiktoken's ``allowed_special``).

        A tokenizer with a :attr:`~workbench.core.model.Tokenizer.pipeline` is encoded as ``tokenizers``
        encodes it: its added tokens match (the library's default; a collection ``allow_special``
        leaves the special ones outside it as text), and ``add_special_tokens`` adds what the
        post-processor wraps a text in (``[CLS] … [SEP]``)."""
        if self._pipe is not None:
            found = self._plain_pipeline(text, _allowed(allow_special))
            if found is None:
                found = [t.id for t in self.pipeline_tokens(text, _allowed(allow_special), exact=False)]
            return self._pipe.post_process(found) if add_special_tokens else found
        if self._normalize is not None:
            text = self._normalize(text)
        if allow_special and self._special_re is not None:
            ids: list[int] = []
            for start, end, special in self.special_segments(text, allow_special):
                if special is None:
                    ids.extend(self._encode_ordinary(text[start:end]))
                else:
                    ids.append(special)
        else:
            ids = self._encode_ordinary(text)
        if add_special_tokens and self.tok.template not in ("", "none"):
            # a run's template ([CLS] … [SEP], <s> …), as its exported post-processor adds it
            return with_template(ids, self.tok.special_roles, self.tok.template, self.tok.special_tokens)
        return ids

    @property
    def spm_model(self) -> UnigramModel | None:
        """The SentencePiece word model (Unigram, or SentencePiece's score-ordered BPE) this encoder
        encodes with, whose :meth:`~workbench.core.unigram.UnigramModel.word_spans` are the words its
        lattice never crosses; ``None`` for pre-tokenized BPE and WordPiece."""
        return self._spm

    def _encode_ordinary(self, text: str) -> list[int]:
        if not text:
            return []
        if self._spm is not None:
            return self._spm.encode(text)
        if self._native and self._native_whole:
            native = self._native_core(len(text))
            if native is not None:
                return native.encode(text)
        if self._pattern is not None and self._pre.name != "custom":
            pieces = self._pattern.findall(text, concurrent=True)
        else:
            pieces = self._pre.split(text)
        cache = self._cache
        out: list[int] = []
        extend = out.extend
        for piece in pieces:
            ids = cache.get(piece)
            if ids is None:
                ids = self._encode_piece(piece)
                if len(cache) < 500_000:
                    cache[piece] = ids
            extend(ids)
        return out

    def _plain_pipeline(self, text: str, allowed: frozenset[str] | None) -> list[int] | None:
        """A plain ``ByteLevel`` tokenizer.json's ids by tiktoken's core, stretch by stretch between
        its added tokens (None: not such a pipeline, or the core not built yet)."""
        prefix = self._plain_prefix
        pipe = self._pipe
        if prefix is None or pipe is None or not text:
            return None
        native = self._native_core(len(text))
        if native is None:
            return None
        if not pipe.added_tokens or not any(found is not None and found.search(text) for found in (
                pipe._raw_re, pipe._normalized_re)):  # noqa: SLF001 - no added token in this text
            return native.encode(" " + text if prefix and not text.startswith(" ") else text)
        out: list[int] = []
        for segment in pipe.segments(text, allowed, exact=False):
            if segment.token is not None:
                out.append(segment.token.id)
            elif segment.piece.text:
                part = segment.piece.text
                out.extend(native.encode(" " + part if prefix and not part.startswith(" ") else part))
        return out

    def native_prefix(self, merges: int) -> NativeBPE | None:
        """tiktoken's core for the first ``merges`` merges of this byte-level BPE (the sweep's points),
        or None when tiktoken's rule is not provably this tokenizer's (see :mod:`native_bpe`)."""
        if not self._native or self._pipe is not None:
            return None
        return NativeBPE.build(self.tok, self._usable, self._byte_ids, merges)

    def _native_core(self, length: int) -> NativeBPE | None:
        """The native encoder once texts (or new pre-tokens) worth its set-up have come."""
        if isinstance(self._native, NativeBPE):
            return self._native
        self._encoded_chars += length
        if self._encoded_chars < NATIVE_AFTER_CHARS:
            return None
        built = NativeBPE.build(self.tok, self._usable, self._byte_ids, self._max_merges)
        self._native = built or False
        return built

    def encode_with_offsets(self, text: str, *, allow_special: bool = False) -> list[EncodedToken]:
        """Tokens with code-point spans in the normalized text (for colouring and hover); with a
        pipeline, spans in ``text`` itself."""
        if self._pipe is not None:
            return self.pipeline_tokens(text, _allowed(allow_special))
        if self._normalize is not None:
            text = self._normalize(text)
        out: list[EncodedToken] = []
        for seg_start, seg_end, special in self.special_segments(text, allow_special):
            if special is not None:
                out.append(EncodedToken(special, seg_start, seg_end, False))
                continue
            segment = text[seg_start:seg_end]
            if self._spm is not None:
                for token_id, a, b in self._spm.encode_spans(segment):
                    raw = self.tok.vocab[token_id]
                    out.append(EncodedToken(token_id, seg_start + a, seg_start + b, len(raw) == 1 and raw[0] >= 0x80))
                continue
            for a, b in self._pre.spans(segment):
                piece = segment[a:b]
                ids = self._cache.get(piece) or self._encode_piece(piece)
                out.extend(self._offsets_in_piece(piece, ids, seg_start + a))
        return out

    def special_segments(self, text: str, allow_special: bool | Collection[str]) -> list[tuple[int, int, int | None]]:
        """``(start, end, special id or None)``: the runs of ordinary text between special tokens
        (empty runs included), in order and covering ``text``; one run when ``allow_special`` is off
        or the tokenizer has no special tokens. The one place special tokens are found in a text.
        A collection ``allow_special`` finds only those (tiktoken's ``allowed_special``)."""
        segments: list[tuple[int, int, int | None]] = []
        pos = 0
        found = self._special_re
        if allow_special is not True and allow_special and found is not None:
            found = _special_pattern(frozenset(allow_special) & set(self.tok.special_tokens))
        if allow_special and found is not None:
            for match in found.finditer(text):
                segments.append((pos, match.start(), None))
                segments.append((match.start(), match.end(), self.tok.special_tokens[match.group()]))
                pos = match.end()
        segments.append((pos, len(text), None))
        return segments

    def _offsets_in_piece(self, piece: str, ids: Sequence[int], start: int) -> list[EncodedToken]:
        if self._wordpiece is not None:
            return [EncodedToken(i, start + a, start + b, False) for i, (a, b) in zip(ids, self._wordpiece.spans(piece, ids))]
        vocab = self.tok.vocab
        if self._pre.name == "metaspace":
            piece = self._pre.prepare(piece)
        encoded = piece.encode("utf-8")
        # char index of every byte offset
        char_at = []
        for index, ch in enumerate(piece):
            char_at.extend([index] * len(ch.encode("utf-8")))
        char_at.append(len(piece))
        out = []
        offset = 0
        limit = len(encoded)
        for token_id in ids:
            raw = vocab[token_id]
            if token_id == self._unk and offset < limit:
                # [UNK] stands for one byte of byte-level text, one whole character otherwise
                raw = encoded[offset : offset + 1] if self._bytes else piece[char_at[offset]].encode("utf-8")
            elif self._eow_bytes and raw.endswith(self._eow_bytes):
                raw = raw[: -len(self._eow_bytes)]
            length = len(raw)
            first = char_at[min(offset, limit)]
            end_byte = min(offset + length, limit)
            last = char_at[end_byte - 1] + 1 if end_byte > offset else first
            partial = False
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                partial = True
            out.append(EncodedToken(token_id, start + first, start + max(last, first), partial))
            offset += length
        return out

    # ---- a tokenizer.json's pipeline ----------------------------------------------------------------
    def pipeline_stages(self, text: str, allowed: frozenset[str] | None = None, exact: bool = True
                        ) -> list[tuple[Segment, list[tuple[Piece, tuple[int, ...]]]]]:
        """Every stage of a pipeline tokenizer's encoding: each segment (an added token, or plain
        text normalized) with its pre-tokens and the model's ids for each (``allowed`` as in
        :meth:`Pipeline.segments <workbench.core.pipeline.Pipeline.segments>`)."""
        pipe = self._pipe
        if pipe is None:
            raise WorkbenchError(f"{self.tok.name or 'this tokenizer'} has no tokenizer.json pipeline")
        out: list[tuple[Segment, list[tuple[Piece, tuple[int, ...]]]]] = []
        for segment in pipe.segments(text, allowed, exact):
            if segment.token is not None:
                out.append((segment, []))
                continue
            out.append((segment, [(piece, self.model_piece(piece.text)) for piece in pipe.pre_tokenize_piece(segment.piece)]))
        return out

    def pipeline_tokens(self, text: str, allowed: frozenset[str] | None = None, exact: bool = True
                        ) -> list[EncodedToken]:
        """Ids with spans in ``text``: an added token its match, a model token its pre-token's span
        (narrowed to its own characters where they map one to one)."""
        out: list[EncodedToken] = []
        for segment, pieces in self.pipeline_stages(text, allowed, exact):
            if segment.token is not None:
                out.append(EncodedToken(segment.token.id, segment.piece.start, segment.piece.end, False))
                continue
            for piece, ids in pieces:
                out.extend(self._token_spans(piece, ids) if exact else
                           [EncodedToken(i, piece.start, piece.end, False) for i in ids])
        return out

    def _token_spans(self, piece: Piece, ids: Sequence[int]) -> list[EncodedToken]:
        """Each token of a pre-token with the input span of its own characters: tokens are laid end
        to end over the pre-token's bytes (a byte-level piece: one stand-in character per byte). A
        token whose length is not known (an unknown token inside a word) gives every token the
        pre-token's span."""
        if self._bytes:
            units = [(span, 1) for span in piece.spans]  # one stand-in character is one byte
        else:
            units = [(span, n) for ch, span in zip(piece.text, piece.spans)
                     for n in [len(ch.encode("utf-8", "surrogatepass"))]]
        owner = [k for k, (_span, n) in enumerate(units) for _ in range(n)]
        lengths: list[int] = []
        prefix = self.tok.continuing_prefix.encode("utf-8") if self._wordpiece is not None else b""
        fallback = set(self._fallback or ()) | set((self._spm.byte_ids or ()) if self._spm is not None else ())
        for position, token_id in enumerate(ids):
            raw = self.tok.vocab[token_id]
            if token_id in fallback:
                lengths.append(1)
            elif token_id == self.unknown_id or token_id in self.tok.special_ids:
                lengths.append(len(owner) if len(ids) == 1 else -1)
            elif prefix and position and raw.startswith(prefix):
                lengths.append(len(raw) - len(prefix))
            else:
                lengths.append(len(raw))
        if -1 in lengths or sum(lengths) != len(owner):
            return [EncodedToken(i, piece.start, piece.end, False) for i in ids]
        out: list[EncodedToken] = []
        offset = 0
        for token_id, length in zip(ids, lengths):
            first, last = owner[offset], owner[offset + length - 1] if length else owner[offset]
            whole = (offset == 0 or owner[offset - 1] != first) and (
                offset + length == len(owner) or owner[offset + length] != last)
            start, end = units[first][0][0], units[last][0][1]
            out.append(EncodedToken(token_id, start, end, not whole and not self._bytes or (
                self._bytes and not _whole_utf8(self.tok.vocab[token_id]))))
            offset += length
        return out

    def model_piece(self, piece: str) -> tuple[int, ...]:
        """The model's ids for one pre-token in the library's own form (byte-level stand-in characters
        for a byte-level model, ``▁`` for spaces after ``Metaspace``)."""
        ids = self._cache.get(piece)
        if ids is not None:
            return ids
        if self._spm is not None:
            ids = tuple(self._spm.encode_word(piece))
        elif self._wordpiece is not None:
            ids = self._wordpiece.encode_word(piece)
        elif self._bytes:
            data = bytes(_stand_in_bytes(piece))
            if self._missing_bytes:
                self._check_bytes(data, piece)
            ids = self._bpe_bytes(data) if len(data) <= _SPLIT_MIN else tuple(
                i for seg in self._segments(data) for i in self._bpe_bytes(seg))
        elif self.tok.end_of_word:  # a suffix file read as end-of-word merges: our own character BPE
            ids = self._encode_piece(piece)
        else:
            ids = self._hf_chars(piece)
        if len(self._cache) < 500_000:
            self._cache[piece] = ids
        return ids

    def _hf_chars(self, piece: str) -> tuple[int, ...]:
        """``tokenizers``' character BPE: ``ignore_merges`` takes a whole-vocabulary piece as it is;
        a character outside the vocabulary becomes its byte pieces (``byte_fallback``) or the unknown
        token (consecutive ones fused with ``fuse_unk``); then merges by rank."""
        options = self._pipe.model_options if self._pipe is not None else {}
        if options.get("ignore_merges"):
            whole = self.tok.id_of_piece.get(piece.encode("utf-8"))
            if whole is not None:
                return (whole,)
        lookup = self._piece_to_id
        symbols: list[int] = []
        previous_unk = False
        for ch in piece:
            sid = lookup.get(ch.encode("utf-8"))
            if sid is not None:
                symbols.append(sid)
                previous_unk = False
                continue
            if self._fallback is not None:
                symbols.extend(self._fallback[b] for b in ch.encode("utf-8", "surrogatepass"))
                previous_unk = False
                continue
            if self._unk is None:
                raise WorkbenchError(f"character {ch!r} (U+{ord(ch):04X}) is not in this vocabulary and the "
                                     "tokenizer has no unknown token: this text cannot be encoded")
            if not (previous_unk and options.get("fuse_unk")):
                symbols.append(self._unk)
            previous_unk = True
        if len(symbols) < 2:
            return tuple(symbols)
        return tuple(bpe_merge_rule(symbols, self._pair_rank))

    def hf_token(self, token_id: int) -> str:
        """The token string ``tokenizers`` has for ``token_id`` (``id_to_token``)."""
        found = self._hf_tokens.get(token_id)
        if found is not None:
            return found
        vocab = self.tok.vocab
        if not isinstance(token_id, int) or not 0 <= token_id < len(vocab) or (
                not vocab[token_id] and token_id not in self.tok.special_ids):
            raise WorkbenchError(f"id {token_id} is not in this tokenizer's vocabulary (valid ids: 0 to {len(vocab) - 1})")
        added = self._pipe.token_of_id.get(token_id) if self._pipe is not None else None
        raw = vocab[token_id]
        if added is not None:  # a normalized added token is known by its normalized content
            text = self._pipe.normalize(added.content) if added.normalized and self._pipe is not None else added.content
        elif self._fallback is not None and token_id in self._fallback:
            text = f"<0x{raw[0]:02X}>"
        elif self._bytes and token_id not in self.tok.special_ids:
            from workbench.core.byte_level import bytes_to_unicode_str

            text = bytes_to_unicode_str(raw)
        elif self._spm is not None and self.tok.byte_fallback and len(raw) == 1 and raw[0] >= 0x80 or (
                self._spm is not None and self._spm.byte_ids and token_id in self._spm.byte_ids):
            text = f"<0x{raw[0]:02X}>"
        else:
            text = raw.decode("utf-8", "surrogatepass")
        self._hf_tokens[token_id] = text
        return text

    def pipeline_decode(self, ids: Iterable[int], *, skip_special_tokens: bool = True) -> str:
        """``Tokenizer.decode(ids, skip_special_tokens)`` of ``tokenizers``."""
        pipe = self._pipe
        assert pipe is not None
        tokens = [self.hf_token(i) for i in ids if not (skip_special_tokens and i in pipe.special_ids)]
        return pipe.decode_tokens(tokens)

    # ---- what the unknown token stands for ---------------------------------------------------------
    @property
    def unknown_id(self) -> int | None:
        """The id that stands for text the vocabulary cannot spell (None when the tokenizer has none)."""
        if self._wordpiece is not None:
            return self._wordpiece.unk
        return self._unk

    def chars_lost(self, text: str, ids: Sequence[int], *, pretoken: bool = True) -> int:
        """How many characters of ``text`` the unknown token stands for in ``ids``, its encoding.

        ``pretoken=True``: ``text`` is one normalized pre-token and ``ids`` what
        :func:`~workbench.core.metrics.encode_pretoken` gave for it (a WordPiece ``[UNK]`` covers
        the whole word, a SentencePiece ``<unk>`` a run of unknown characters, a character-level
        BPE ``[UNK]`` one character). ``pretoken=False``: ``text`` is a whole text as
        :meth:`encode` takes it (a Unigram model's line). Counted in characters of the normalized
        text, each once even when several unknown ids touch it (bytes of one character).
        """
        unk = self.unknown_id
        if unk is None or unk not in ids:
            return 0
        if pretoken and self._spm is None:
            spans = [(t.start, t.end) for t in self._offsets_in_piece(text, ids, 0) if t.id == unk]
        else:
            spans = [(t.start, t.end) for t in self.encode_with_offsets(text) if t.id == unk]
        covered: set[int] = set()
        for a, b in spans:
            covered.update(range(a, b))
        return len(covered)

    # ---- one pre-token ---------------------------------------------------------------------------
    def _symbols(self, piece: str) -> list[int]:
        if self._bytes:
            data = self._pre.prepare(piece).encode("utf-8")
            if self._byte_ids is None:
                return list(data)
            byte_ids = self._byte_ids
            return [byte_ids[b] for b in data]
        lookup = self._piece_to_id
        symbols = []
        for ch in self._pre.prepare(piece):
            sid = lookup.get(ch.encode("utf-8"))
            if sid is None:
                if self._unk is None:
                    raise WorkbenchError(
                        f"character {ch!r} (U+{ord(ch):04X}) is not in this character-level vocabulary "
                        "and the tokenizer has no unknown token: retrain on text that contains it"
                    )
                sid = self._unk
            symbols.append(sid)
        if self._eow is not None:
            symbols.append(self._eow)
        return symbols

    def _encode_piece(self, piece: str) -> tuple[int, ...]:
        if self._spm is not None:  # one word (SentencePiece form) by Viterbi, as training saw it
            return tuple(self._spm.encode_word(piece))
        if self._wordpiece is not None:
            return self._wordpiece.encode_word(piece)
        if self.greedy:
            return tuple(self._greedy(piece))
        if self._bytes:
            data = self._pre.prepare(piece).encode("utf-8")
            if self._missing_bytes:
                self._check_bytes(data, piece)
            if self._native:
                native = self._native_core(len(data))
                if native is not None:
                    return native.piece(data)
            if len(data) > _SPLIT_MIN:
                out: list[int] = []
                cache = self._segment_cache
                for segment in self._segments(data):
                    ids = cache.get(segment)
                    if ids is None:
                        ids = cache[segment] = self._bpe_bytes(segment)
                    out.extend(ids)
                return tuple(out)
            return self._bpe_bytes(data)
        symbols = self._symbols(piece)
        if len(symbols) < 2:
            return tuple(symbols)
        return tuple(bpe_merge_rule(symbols, self._pair_rank))

    def _check_bytes(self, data: bytes, piece: str) -> None:
        bad = next((b for b in data if b in self._missing_bytes), None)
        if bad is not None:
            raise WorkbenchError(
                f"byte 0x{bad:02X} (in {piece!r}) has no token in this vocabulary and it has no unknown "
                "token: this tokenizer cannot encode that text"
            )

    def _bpe_bytes(self, data: bytes) -> tuple[int, ...]:
        """BPE over the bytes of one piece (or of a segment no token crosses), by the tokenizer's rule."""
        if self._native:
            native = self._native_core(len(data))
            if native is not None:
                return native.piece(data)
        if self.tok.merge_rule == "bytes":
            return tuple(self._bpe_by_bytes(data))
        byte_ids = self._byte_ids
        symbols = list(data) if byte_ids is None else [byte_ids[b] for b in data]
        if len(symbols) < 2:
            return tuple(symbols)
        return tuple(bpe_merge_rule(symbols, self._pair_rank))

    def _segments(self, data: bytes) -> list[bytes]:
        """Cut a long piece where no vocabulary entry can span the cut.

        A merge across byte position k would create a token holding ``data[k-1:k+1]`` with a
        character starting at its second byte; where no usable token has that, BPE on either side
        is independent. Long CJK runs fall apart into short segments that cache well, and the
        result is identical to encoding the whole piece.
        """
        table = self._cross_table
        if table is None:
            table = self._cross_table = self._build_cross_table()
        cuts = [0]
        previous = data[0]
        for k in range(1, len(data)):
            byte = data[k]
            if byte >= 0xC0 and not table[(previous << 8) | byte]:
                cuts.append(k)
            previous = byte
        if len(cuts) == 1:
            return [data]
        cuts.append(len(data))
        return [data[cuts[i] : cuts[i + 1]] for i in range(len(cuts) - 1)]

    def _build_cross_table(self) -> bytearray:
        table = bytearray(1 << 16)
        vocab = self.tok.vocab
        for token_id in self._usable:
            piece = vocab[token_id]
            for k in range(1, len(piece)):
                if piece[k] >= 0xC0:
                    table[(piece[k - 1] << 8) | piece[k]] = 1
        return table

    def _bpe_by_bytes(self, data: bytes) -> list[int]:
        """tiktoken's rule: merge the adjacent parts whose concatenation has the lowest rank."""
        ranks = self._piece_to_id
        whole = ranks.get(data)
        if whole is not None:
            return [whole]
        if len(data) > _SHORT_BYTES:
            parts = _bytes_rule_heap(data, ranks)
        else:
            two = self._two_byte
            if two is None:
                two = self._two_byte = two_byte_ranks(ranks)
            parts = _bytes_rule_scan(data, ranks, two)
        try:
            return [ranks[p] for p in parts]
        except KeyError as exc:
            raise WorkbenchError(f"byte {exc.args[0]!r} has no token in this vocabulary") from None

    def _greedy(self, piece: str) -> list[int]:
        """Greedy longest match, left to right, over the piece's bytes (marker included)."""
        data = self._pre.prepare(piece).encode("utf-8") + self._eow_bytes
        lookup = self._piece_to_id
        out = []
        i = 0
        while i < len(data):
            for length in range(min(self._max_piece, len(data) - i), 0, -1):
                token_id = lookup.get(data[i : i + length])
                if token_id is not None:
                    out.append(token_id)
                    i += length
                    break
            else:
                if self._unk is None:
                    raise WorkbenchError(
                        f"no vocabulary entry matches {data[i:i+4]!r}… in {piece!r}: "
                        "the tokenizer has no unknown token"
                    )
                out.append(self._unk)
                # skip one whole UTF-8 character
                i += 1
                while i < len(data) and (data[i] & 0xC0) == 0x80:
                    i += 1
        return out

    # ---- decoding --------------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Concatenated pieces; end-of-word markers become a space where the pre-tokenizer dropped it."""
        if self._pipe is not None:
            return self.pipeline_decode(ids, skip_special_tokens=False).encode("utf-8", "surrogatepass")
        if self._wordpiece is not None:
            return self._wordpiece.decode(ids).encode("utf-8")
        if self._spm is not None:
            return self._spm.decode_bytes(ids)
        vocab = self.tok.vocab
        size = len(vocab)
        specials = self.tok.special_ids
        parts = []
        eow = self._eow_bytes
        join_words = eow and not self._pre.keeps_whitespace
        for token_id in ids:
            if not isinstance(token_id, int) or token_id < 0 or token_id >= size or (
                not vocab[token_id] and token_id not in specials
            ):
                raise WorkbenchError(
                    f"id {token_id} is not in this tokenizer's vocabulary (valid ids: 0 to {size - 1})"
                )
            raw = vocab[token_id]
            if eow and raw.endswith(eow) and token_id not in specials:
                raw = raw[: -len(eow)] + (b" " if join_words else b"")
            parts.append(raw)
        data = b"".join(parts)
        if join_words and data.endswith(b" "):
            data = data[:-1]
        if self._pre.name == "metaspace":
            data = data.replace("\u2581".encode("utf-8"), b" ")
        return data

    def decode(self, ids: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False) -> str:
        if self._pipe is not None:
            return self.pipeline_decode(ids, skip_special_tokens=skip_special_tokens)
        return self.decode_bytes(ids).decode("utf-8", errors)

    def token_bytes(self, token_id: int) -> bytes:
        return self.tok.vocab[token_id]


def _allowed(allow_special: bool | Collection[str]) -> frozenset[str] | None:
    """A pipeline's allowed special tokens: ``None`` (all: the library's default) unless a collection."""
    return None if isinstance(allow_special, bool) else frozenset(allow_special)


_SPECIAL_PATTERNS: dict[frozenset[str], regex.Pattern[str] | None] = {}


def _special_pattern(tokens: frozenset[str]) -> regex.Pattern[str] | None:
    """Longest first, so a token that contains another wins (leftmost-longest, as tokenizers' added
    tokens match; tiktoken joins its specials in hash-map order, so which one wins there varies)."""
    found = _SPECIAL_PATTERNS.get(tokens)
    if found is None and tokens:
        ordered = sorted((t for t in tokens if t), key=len, reverse=True)
        found = _SPECIAL_PATTERNS[tokens] = regex.compile("|".join(regex.escape(t) for t in ordered)) if ordered else None
    return found


def _whole_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _stand_in_bytes(piece: str) -> list[int]:
    """GPT-2 stand-in characters back to bytes; a character outside the table as its UTF-8."""
    from workbench.core.byte_level import byte_decoder

    table = byte_decoder()
    out: list[int] = []
    for ch in piece:
        b = table.get(ch)
        out.extend([b] if b is not None else ch.encode("utf-8", "surrogatepass"))
    return out


def bpe_merge_rule(symbols: list[int], pair_rank: dict[tuple[int, int], tuple[int, int]]) -> list[int]:
    """The merge rule on one piece's symbols (lowest-rank pair first, each run left to right): the
    linear scan for short pieces, the heap above :data:`_LONG_PIECE` symbols. Every caller that
    applies the rule goes through here: a quadratic scan on a long piece (a 1,500-letter line
    trained with no pre-tokenizer) made proving an export's rank table take minutes."""
    return (_bpe_heap if len(symbols) > _LONG_PIECE else _bpe_scan)(symbols, pair_rank)


def _bpe_scan(symbols: list[int], pair_rank: dict[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Lowest-rank pair first; a linear scan per merge, fastest for the short pieces of real text."""
    get = pair_rank.get
    while True:
        best = None
        best_i = -1
        for i in range(len(symbols) - 1):
            found = get((symbols[i], symbols[i + 1]))
            if found is not None and (best is None or found[0] < best[0]):
                best, best_i = found, i
        if best is None:
            return symbols
        # Merge every occurrence of this pair, left to right (equal rank ⇒ same pair).
        pair = (symbols[best_i], symbols[best_i + 1])
        new_id = best[1]
        out = symbols[:best_i]
        i = best_i
        n = len(symbols)
        while i < n:
            if i < n - 1 and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
                out.append(new_id)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
        if len(symbols) < 2:
            return symbols


def _bpe_heap(symbols: list[int], pair_rank: dict[tuple[int, int], tuple[int, int]],
              steps: list[tuple[int, int, int]] | None = None) -> list[int]:
    """The same rule in O(n log n) for long pieces (no pre-tokenizer, long CJK runs).

    A doubly linked list of symbols and a heap of (rank, position); entries whose neighbours changed
    since they were pushed are skipped when popped. ``steps`` (the audit's tracer) receives every
    merge made as ``(left, right, new)``, lowest rank first and each rank left to right.
    """
    n = len(symbols)
    sym = list(symbols)
    prev = list(range(-1, n - 1))
    nxt = list(range(1, n + 1))
    nxt[-1] = -1
    alive = [True] * n
    heap: list[tuple[int, int, int, int]] = []
    get = pair_rank.get
    for i in range(n - 1):
        found = get((sym[i], sym[i + 1]))
        if found is not None:
            heap.append((found[0], i, sym[i], sym[i + 1]))
    heapq.heapify(heap)
    while heap:
        rank, i, left, right = heapq.heappop(heap)
        j = nxt[i]
        if not alive[i] or j == -1 or sym[i] != left or sym[j] != right:
            continue
        sym[i] = pair_rank[(left, right)][1]
        if steps is not None:
            steps.append((left, right, sym[i]))
        alive[j] = False
        k = nxt[j]
        nxt[i] = k
        if k != -1:
            prev[k] = i
            found = get((sym[i], sym[k]))
            if found is not None:
                heapq.heappush(heap, (found[0], i, sym[i], sym[k]))
        p = prev[i]
        if p != -1:
            found = get((sym[p], sym[i]))
            if found is not None:
                heapq.heappush(heap, (found[0], p, sym[p], sym[i]))
    out = []
    i = 0
    while i != -1:
        out.append(sym[i])
        i = nxt[i]
    return out


_NO_RANK = 1 << 62
def two_byte_ranks(ranks: dict[bytes, int]) -> list[int]:
    """Rank of every two-byte sequence (65,536 entries): the first round of pair ranks is then
    list indexing instead of slicing and hashing."""
    get = ranks.get
    return [get(bytes((a, b)), _NO_RANK) for a in range(256) for b in range(256)]


def _bytes_rule_scan(data: bytes, ranks: dict[bytes, int], two: list[int]) -> list[bytes]:
    """tiktoken's own loop: part boundaries with the rank of each adjacent pair, kept up to date.

    Only the two pairs next to a merge change, so each merge costs two lookups and a ``min`` in C
    over a short list; the leftmost of equal ranks wins, as in tiktoken.
    """
    get = ranks.get
    starts = list(range(len(data) + 1))  # part i is data[starts[i]:starts[i + 1]]
    pair = [two[(a << 8) | b] for a, b in zip(data, data[1:])]
    while pair:
        best = min(pair)
        if best == _NO_RANK:
            break
        i = pair.index(best)
        del starts[i + 1]
        del pair[i]
        if i < len(pair):
            pair[i] = get(data[starts[i] : starts[i + 2]], _NO_RANK)
        if i > 0:
            pair[i - 1] = get(data[starts[i - 1] : starts[i + 1]], _NO_RANK)
    return [data[starts[i] : starts[i + 1]] for i in range(len(starts) - 1)]


def _bytes_rule_heap(data: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """The same result in O(n log n): parts as byte ranges in a linked list, candidates in a heap.

    A part is identified by (start, end); an entry is stale when either part has grown since.
    Equal ranks pop leftmost first, as tiktoken's strict ``<`` scan picks them.
    """
    n = len(data)
    end = list(range(1, n + 1))  # end[start] of the part beginning at start (valid while alive)
    prev = list(range(-1, n - 1))
    alive = [True] * n
    get = ranks.get
    heap = []
    for i in range(n - 1):
        rank = get(data[i : i + 2])
        if rank is not None:
            heap.append((rank, i, i + 1, i + 2))
    heapq.heapify(heap)
    while heap:
        rank, i, j, k = heapq.heappop(heap)
        if not alive[i] or end[i] != j or not alive[j] or end[j] != k:
            continue
        end[i] = k
        alive[j] = False
        if k < n:
            prev[k] = i
            found = get(data[i : end[k]])
            if found is not None:
                heapq.heappush(heap, (found, i, k, end[k]))
        p = prev[i]
        if p >= 0:
            found = get(data[p:k])
            if found is not None:
                heapq.heappush(heap, (found, p, i, k))
    out = []
    i = 0
    while i < n:
        out.append(data[i : end[i]])
        i = end[i]
    return out
