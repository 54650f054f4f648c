"""A vocabulary audit: which entries can be produced at all, which are not text, which are residues.

Four per-id measures, all computed from a :class:`~workbench.core.model.Tokenizer` and (for the
last two) a ``{pre-token: count}`` table of a corpus:

* **reachability** — the tokenizer side of "Fishing for Magikarp" (Land & Bartolo, 2024): decode
  the id to text and encode that text again, alone and in a few contexts. ``reachable`` (alone it
  gives back exactly this id), ``context`` (only in context: after a space — the paper's second
  test —, before a comma, or inside a word after a rare letter, where SentencePiece pieces without
  ``▁`` live; for a WordPiece ``##`` piece, after a word start), ``unreachable`` (in none of those),
  ``undecodable`` (its bytes are not valid UTF-8, so there is no text to encode: a partial
  character of a byte-level vocabulary). The test is the paper's: a
  token found ``unreachable`` may still appear inside some other text; for BPE the sharper,
  context-free statement is :func:`model_reachable` (a merge whose result the earlier merges always
  pre-empt can never appear in any text).
* **ill-formed UTF-8** — byte-level pieces that are not valid UTF-8: ``partial`` (a fragment that
  occurs inside valid text, e.g. the first two bytes of a CJK character) or ``impossible`` (bytes
  that no valid UTF-8 text contains, e.g. 0xFF: such a token is never produced from text).
* **residues** — LiteToken (Sun, Yang, Lin & Zhang, 2026): ``F1`` is how often the token is
  emitted when the corpus is encoded, ``F2`` how often it is consumed as a part by a later merge
  while encoding, ``R = F1 / (F1 + F2)``. A residue is a merge-made token with ``F1 + F2 > 0`` and
  ``R`` below a threshold (default 0.1): a scaffold the merges go through but the output rarely
  keeps. (The paper also filters by neighbour entropy; left out here.)
* **never used** — ``F1 == 0`` on the corpus (see :class:`~workbench.core.metrics.VocabUsage`).

F2 without re-encoding: inside one pre-token, a token that ends up whole was built by the same
merges whatever surrounds it (a neighbour can only take bytes away, never change the order of the
merges inside the span), so its *derivation* — the two parts its last merge joined — is the one
found by encoding its own symbols alone. Every occurrence of a token at any moment of encoding is
either emitted or consumed exactly once, so with ``N = F1 + F2``, ``F2[p] = Σ N[t]`` over the tokens
``t`` whose derivation uses ``p`` (twice if both parts), computed longest token first. F1 comes from
encoding each distinct pre-token once, weighted by its count. :func:`traced_counts` is the direct
per-pre-token merge trace, kept as the reference the tests hold this to.

Which measures apply: BPE (merge list or tiktoken's rank rule) — all four. WordPiece — reachability
(``##`` pieces tested after word starts), F1 and never used; no F2/R (greedy longest match merges
nothing while encoding). Unigram and SentencePiece BPE — reachability, ill-formed (byte pieces), F1
and never used; no F2/R (a Viterbi lattice has no intermediate tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from workbench.core.encoder import _LONG_PIECE, Encoder, _bpe_heap, two_byte_ranks
from workbench.core.metrics import Pacer, Progress, ShouldStop, vocab_usage
from workbench.core.model import Tokenizer
from workbench.core.unigram import is_spm_model

REACHABLE, CONTEXT, UNREACHABLE, UNDECODABLE = "reachable", "context", "unreachable", "undecodable"
PARTIAL, IMPOSSIBLE = "partial", "impossible"
DEFAULT_RESIDUE_THRESHOLD = 0.1
NOT_AUDITED = ""  # special tokens and the empty ids of an imported vocabulary

# Bytes that can stand before / after a fragment to complete it into valid UTF-8: every lead byte
# class (with its constrained second byte: E0 A0–BF, ED 80–9F, F0 90–BF, F4 80–8F) and continuations.
_PREFIXES = (b"", b"\xc2", b"\xe1", b"\xe0", b"\xed", b"\xe1\x80", b"\xe0\xa0", b"\xed\x80", b"\xf1", b"\xf0",
             b"\xf4", b"\xf1\x80", b"\xf0\x90", b"\xf4\x80", b"\xf1\x80\x80", b"\xf0\x90\x80", b"\xf4\x80\x80")
_SUFFIXES = (b"", b"\x80", b"\x80\x80", b"\x80\x80\x80", b"\xa0", b"\xa0\x80", b"\x90", b"\x90\x80",
             b"\x90\x80\x80")


def utf8_status(piece: bytes) -> str:
    """``""`` for valid UTF-8, ``partial`` for a fragment that occurs inside valid text, else ``impossible``."""
    try:
        piece.decode("utf-8")
        return ""
    except UnicodeDecodeError:
        pass
    for before in _PREFIXES:
        for after in _SUFFIXES:
            try:
                (before + piece + after).decode("utf-8")
                return PARTIAL
            except UnicodeDecodeError:
                continue
    return IMPOSSIBLE


def audited_ids(tok: Tokenizer) -> list[int]:
    """The ids an audit describes: not special tokens, not the empty ids of an imported vocabulary."""
    specials = tok.special_ids
    return [i for i, p in enumerate(tok.vocab) if p and i not in specials]


def token_kind(tok: Tokenizer, token_id: int) -> str:
    """special / base / merge, without recovering a rank file's merge list (tiktoken's rule: every
    token longer than one byte is made by a merge)."""
    if tok.merge_rule == "bytes" and token_id not in tok.special_ids:
        return "merge" if len(tok.vocab[token_id]) > 1 else "base"
    return tok.kind(token_id)


# ---- reachability -----------------------------------------------------------------------------------
def reachability(tok: Tokenizer, *, encoder: Encoder | None = None, should_stop: ShouldStop | None = None,
                 progress: Progress | None = None) -> list[str] | None:
    """One category per id (``NOT_AUDITED`` for specials and empty ids); None when stopped."""
    enc = encoder or Encoder(tok)
    out = [NOT_AUDITED] * len(tok.vocab)
    ids = audited_ids(tok)
    pace = Pacer(len(ids), "reachability", should_stop, progress)
    wordpiece = tok.model == "wordpiece"
    prefix = tok.continuing_prefix or "##"
    starts = _word_starts(tok, enc) if wordpiece else []
    for index, token_id in enumerate(ids):
        if index % 256 == 0 and pace.stopped(index):
            return None
        if wordpiece:
            out[token_id] = _wordpiece_reach(enc, tok, token_id, prefix, starts)
            continue
        try:
            text = enc.decode_bytes([token_id]).decode("utf-8")
        except UnicodeDecodeError:
            out[token_id] = UNDECODABLE
            continue
        out[token_id] = _reach_of_text(enc, token_id, text)
    return out


def _encode_or_none(enc: Encoder, text: str) -> list[int] | None:
    try:
        return enc.encode(text)
    except Exception:  # noqa: BLE001 - text the tokenizer cannot spell (no unknown token): not reachable so
        return None


# Where a token that does not come back alone is looked for: after a space (the paper's second
# test), before punctuation (SentencePiece's bare ``▁``), and inside a word after a rare letter
# (a piece without ``▁`` or ``Ġ``, which a Viterbi or BPE split uses only mid-word).
CONTEXTS = (" {}", "{},", " {},", "q{}", "x{}", "z{}", " q{}", " k{}")


def _reach_of_text(enc: Encoder, token_id: int, text: str) -> str:
    if text and _encode_or_none(enc, text) == [token_id]:
        return REACHABLE
    for context in CONTEXTS:
        ids = _encode_or_none(enc, context.format(text))
        if ids is not None and token_id in ids:
            return CONTEXT
    return UNREACHABLE


def _word_starts(tok: Tokenizer, enc: Encoder) -> list[tuple[str, int]]:
    """A few one-letter word-initial pieces to put before a WordPiece ``##`` piece."""
    found = []
    for letter in "axqzkbt0":
        token_id = tok.id_of_piece.get(letter.encode("utf-8"))
        if token_id is not None:
            found.append((letter, token_id))
    return found[:4]


def _wordpiece_reach(enc: Encoder, tok: Tokenizer, token_id: int, prefix: str, starts: list[tuple[str, int]]) -> str:
    text = tok.vocab[token_id].decode("utf-8", "replace")
    if not text.startswith(prefix):
        return _reach_of_text(enc, token_id, text)
    rest = text[len(prefix):]
    for letter, start_id in starts:
        ids = _encode_or_none(enc, letter + rest)
        if ids is not None and len(ids) >= 2 and ids[0] == start_id and ids[1] == token_id:
            return CONTEXT
    return UNREACHABLE


# ---- BPE derivations: what each token is built from -----------------------------------------------
def supports_residues(tok: Tokenizer) -> bool:
    """F2 and R need merges applied while encoding: pre-tokenized BPE (a merge list or tiktoken's rule)."""
    return tok.model == "bpe" and not is_spm_model(tok)


def _symbols_of(tok: Tokenizer, token_id: int) -> list[int] | None:
    """The base symbols a token's piece is spelled with, as the encoder starts from them."""
    piece = tok.vocab[token_id]
    if tok.units == "bytes":
        ids = [tok.id_of_piece.get(piece[i : i + 1]) for i in range(len(piece))]
    else:
        eow = tok.end_of_word.encode("utf-8") if tok.end_of_word else b""
        body, tail = (piece[: -len(eow)], [tok.end_of_word_id]) if eow and piece.endswith(eow) else (piece, [])
        try:
            chars = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
        ids = [tok.id_of_piece.get(ch.encode("utf-8")) for ch in chars] + tail
    found = [i for i in ids if i is not None]
    return found if len(found) == len(ids) else None


class Tracer:
    """BPE on one symbol sequence that also says which tokens every merge consumed.

    Same rules as :class:`~workbench.core.encoder.Encoder` (``pairs``: lowest merge rank first, all
    occurrences of that pair left to right; ``bytes``: tiktoken's lowest-ranked concatenation,
    leftmost first), written for clarity rather than speed: it runs once per vocabulary entry and,
    in :func:`traced_counts`, once per distinct pre-token.
    """

    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.by_bytes = tok.merge_rule == "bytes"
        if self.by_bytes:
            specials = tok.special_ids
            self.ranks = {p: i for i, p in enumerate(tok.vocab) if p and i not in specials}
            self.two = two_byte_ranks(self.ranks)
        else:
            self.pair_rank = {(a, b): (rank, new) for rank, (a, b, new) in enumerate(tok.merges)}

    def run(self, symbols: Sequence[int]) -> tuple[list[int], list[tuple[int, int, int]]]:
        """``(final ids, [(left, right, new) for every merge made, in order])``."""
        if self.by_bytes:
            return self._by_bytes(symbols)
        steps: list[tuple[int, int, int]] = []
        if len(symbols) > _LONG_PIECE:  # the quadratic scan below took minutes on a 6,000-symbol token
            return _bpe_heap(list(symbols), self.pair_rank, steps), steps
        syms = list(symbols)
        get = self.pair_rank.get
        while len(syms) > 1:
            best = None
            for i in range(len(syms) - 1):
                found = get((syms[i], syms[i + 1]))
                if found is not None and (best is None or found[0] < best[0]):
                    best = found
                    pair = (syms[i], syms[i + 1])
            if best is None:
                break
            out: list[int] = []
            i = 0
            while i < len(syms):
                if i < len(syms) - 1 and (syms[i], syms[i + 1]) == pair:
                    out.append(best[1])
                    steps.append((pair[0], pair[1], best[1]))
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            syms = out
        return syms, steps

    def _by_bytes(self, symbols: Sequence[int]) -> tuple[list[int], list[tuple[int, int, int]]]:
        vocab, ranks = self.tok.vocab, self.ranks
        parts = [vocab[s] for s in symbols]
        steps: list[tuple[int, int, int]] = []
        get = ranks.get
        while len(parts) > 1:
            best_i, best = -1, None
            for i in range(len(parts) - 1):
                rank = get(parts[i] + parts[i + 1])
                if rank is not None and (best is None or rank < best):
                    best_i, best = i, rank
            if best is None:
                break
            left, right = parts[best_i], parts[best_i + 1]
            steps.append((ranks[left], ranks[right], best))
            parts[best_i : best_i + 2] = [left + right]
        return [ranks[p] for p in parts], steps


def derivations(tok: Tokenizer, *, only: Iterable[int] | None = None, should_stop: ShouldStop | None = None,
                progress: Progress | None = None) -> dict[int, tuple[int, int]] | None:
    """``{token id: (left, right)}`` for every token BPE can produce from its own symbols: the two
    parts of its last merge. A merge-made id missing here is **model-unreachable**: the earlier
    merges always turn its symbols into something else, in any text. Base symbols are absent too.
    ``only``: look at these ids alone (a trim re-deriving what it touched)."""
    tracer = Tracer(tok)
    out: dict[int, tuple[int, int]] = {}
    ids = [i for i in audited_ids(tok) if token_kind(tok, i) == "merge"]
    if only is not None:
        wanted = set(only)
        ids = [i for i in ids if i in wanted]
    pace = Pacer(len(ids), "derivations", should_stop, progress)
    for index, token_id in enumerate(ids):
        if index % 512 == 0 and pace.stopped(index):
            return None
        symbols = _symbols_of(tok, token_id)
        if symbols is None or len(symbols) < 2:
            continue
        final, steps = tracer.run(symbols)
        if final == [token_id] and steps:
            out[token_id] = steps[-1][:2]
    return out


def model_reachable(tok: Tokenizer, derivation: Mapping[int, tuple[int, int]]) -> list[bool]:
    """Per id: can BPE produce it from some text (its own symbols give it back)? Base symbols yes."""
    out = [False] * len(tok.vocab)
    for i in audited_ids(tok):
        symbols = _symbols_of(tok, i)
        out[i] = i in derivation or (symbols is not None and len(symbols) == 1 and symbols[0] == i)
    return out


def consumed_counts(tok: Tokenizer, f1: Sequence[int], derivation: Mapping[int, tuple[int, int]]) -> list[int]:
    """F2 per id from F1 and the derivations (see the module docstring): longest piece first."""
    total = list(f1)  # becomes N = F1 + F2
    order = sorted(derivation, key=lambda i: len(tok.vocab[i]), reverse=True)
    for token_id in order:
        n = total[token_id]
        if n:
            left, right = derivation[token_id]
            total[left] += n
            total[right] += n
    return [t - f for t, f in zip(total, f1)]


def traced_counts(tok: Tokenizer, word_counts: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """``(F1, F2)`` by tracing every merge of every distinct pre-token (weighted by its count): the
    direct definition, slower than :func:`audit`'s derivation rule and kept to check it."""
    enc = Encoder(tok)
    tracer = Tracer(tok)
    f1 = [0] * len(tok.vocab)
    f2 = [0] * len(tok.vocab)
    for word, count in word_counts.items():
        symbols = enc._symbols(word)  # noqa: SLF001 - the encoder's own start, so both begin alike
        final, steps = tracer.run(symbols)
        for i in final:
            f1[i] += count
        for left, right, _new in steps:
            f2[left] += count
            f2[right] += count
    return f1, f2


# ---- the whole audit ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Audit:
    """Per-id audit columns (index = id) and what they were computed on."""

    reach: tuple[str, ...]
    utf8: tuple[str, ...]  # "", "partial" or "impossible"
    f1: tuple[int, ...] | None  # None: no corpus given
    f2: tuple[int, ...] | None  # None: no corpus, or a model without merges while encoding
    model_reachable: tuple[bool, ...] | None  # BPE only
    audited: tuple[bool, ...]
    kinds: tuple[str, ...]  # special / base / merge
    threshold: float = DEFAULT_RESIDUE_THRESHOLD
    total_tokens: int = 0

    def ratio(self, token_id: int) -> float | None:
        """LiteToken's R = F1 / (F1 + F2); None when it does not apply or the token never occurs."""
        if self.f1 is None or self.f2 is None:
            return None
        n = self.f1[token_id] + self.f2[token_id]
        return self.f1[token_id] / n if n else None

    def is_residue(self, token_id: int) -> bool:
        r = self.ratio(token_id)
        return r is not None and r < self.threshold and self.kinds[token_id] == "merge" and self.audited[token_id]

    def never_used(self, token_id: int) -> bool:
        return self.f1 is not None and self.audited[token_id] and self.f1[token_id] == 0

    def ids(self, category: str) -> list[int]:
        """Ids in one filter: a reachability category, ``ill-formed``, ``residue``, ``never-used``
        or ``model-unreachable``."""
        n = len(self.reach)
        if category in (REACHABLE, CONTEXT, UNREACHABLE, UNDECODABLE):
            return [i for i in range(n) if self.reach[i] == category]
        if category == "ill-formed":
            return [i for i in range(n) if self.utf8[i]]
        if category == "residue":
            return [i for i in range(n) if self.is_residue(i)]
        if category == "never-used":
            return [i for i in range(n) if self.never_used(i)]
        if category == "model-unreachable":
            mr = self.model_reachable
            return [] if mr is None else [i for i in range(n) if self.audited[i] and not mr[i]]
        raise ValueError(f"unknown audit category {category!r}")

    def summary(self) -> dict:
        """Counts per category and the residue share (of the merge-made tokens audited)."""
        audited = sum(self.audited)
        merged = sum(1 for i, k in enumerate(self.kinds) if k == "merge" and self.audited[i])
        out: dict = {"audited": audited, "merge_tokens": merged, "residue_threshold": self.threshold}
        for cat in (REACHABLE, CONTEXT, UNREACHABLE, UNDECODABLE):
            out[cat] = sum(1 for r in self.reach if r == cat)
        out["ill_formed"] = sum(1 for u in self.utf8 if u)
        out["ill_formed_impossible"] = sum(1 for u in self.utf8 if u == IMPOSSIBLE)
        out["model_unreachable"] = None if self.model_reachable is None else len(self.ids("model-unreachable"))
        if self.f1 is not None:
            out["never_used"] = len(self.ids("never-used"))
            out["tokens"] = self.total_tokens
        if self.f2 is not None:
            residues = len(self.ids("residue"))
            out["residues"] = residues
            out["residue_share"] = residues / merged if merged else 0.0
        return out


def audit(tok: Tokenizer, word_counts: Mapping[str, int] | None = None, *,
          threshold: float = DEFAULT_RESIDUE_THRESHOLD, should_stop: ShouldStop | None = None,
          progress: Progress | None = None) -> Audit | None:
    """Every measure that applies to ``tok`` (None when stopped). ``word_counts`` is the corpus as
    :func:`~workbench.core.metrics.usage_pretokenizer` counts it (lines for Unigram)."""
    enc = Encoder(tok)
    reach = reachability(tok, encoder=enc, should_stop=should_stop, progress=progress)
    if reach is None:
        return None
    audited = [False] * len(tok.vocab)
    for i in audited_ids(tok):
        audited[i] = True
    utf8 = [utf8_status(p) if ok and tok.units == "bytes" else "" for p, ok in zip(tok.vocab, audited)]
    derivation = None
    mreach = None
    if supports_residues(tok):
        derivation = derivations(tok, should_stop=should_stop, progress=progress)
        if derivation is None:
            return None
        mreach = tuple(model_reachable(tok, derivation))
    f1 = f2 = None
    total = 0
    if word_counts is not None:
        usage = vocab_usage(tok, word_counts, should_stop=should_stop, progress=progress)
        if usage is None:
            return None
        f1 = usage.frequencies
        total = usage.total_tokens
        if derivation is not None:
            f2 = tuple(consumed_counts(tok, f1, derivation))
    kinds = tuple(token_kind(tok, i) for i in range(len(tok.vocab)))
    return Audit(tuple(reach), tuple(utf8), f1, f2, mreach, tuple(audited), kinds, threshold, total)
