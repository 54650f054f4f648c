"""Unigram language-model tokenization (SentencePiece): training, Viterbi, n-best.

Text form: a unigram tokenizer's ``pretokenizer="metaspace"`` means SentencePiece's form — spaces
become ``▁``, each sequence gets one dummy ``▁`` in front, a word starts at every ``▁``
(:func:`spm_words`). That is more than ``core.pretokenize``'s ``metaspace`` preset (no dummy
prefix, runs of ▁ kept together), so count training text with :func:`count_spm_words`; other
tables are re-split at every ▁ but get no dummy prefix.

Training follows ``sentencepiece``'s ``unigram_model_trainer.cc`` step for step, over the
word-count table (SentencePiece too splits its sentences into ▁-words and counts them before EM):

1. Required characters: the most frequent characters covering ``character_coverage`` of all
   characters; rarer ones become an unknown character that no piece may contain.
2. Seeds: the required characters (scored by frequency), then substrings of 2..``max_piece_length``
   characters that occur at least twice and are *right-branching* (SentencePiece takes the internal
   nodes of a suffix array's tree; we count substrings and keep those not always followed by the
   same character, a word's end counting as one follower), valid as pieces (``▁`` only first, one
   Unicode script, combining marks with their base), scored by frequency × length, best first, at
   most ``seed_size``; scores become log probabilities. On the shared corpora this gives 298k
   seeds where sentencepiece reports 279k, and EM sizes within 3 % of its own. Counted for all
   distinct words at once in numpy (:mod:`workbench.core.unigram_seed`), the same result as
   counting strings.
3. Rounds of two EM steps (forward-backward over each word's lattice; the M step drops pieces with
   expected count < 0.5 and uses the digamma "Bayesian" update), then pruning: the pieces whose
   removal loses least likelihood go, keeping ``max(1.1 × vocab_size, 0.75 × size)`` — until the
   size is below 1.1 × vocab_size.
4. Finalize: every required character, then the best-scored pieces up to the exact size; ids are
   ``<unk> <s> </s>``, user specials, the 256 byte pieces (byte fallback), pieces by score.

Inference is Viterbi with SentencePiece's tie rule (of equal scores the path found first — the
one whose last piece starts earliest — wins), its unknown score (``min score − 10``) and its
merging of a run of unknown characters into one ``<unk>``; with byte fallback that run becomes its
UTF-8 byte pieces. Words are cached; SentencePiece adds float32 scores over the whole line (and
restarts that running score each time it passes ±100,000), so in a line holding a word with a near
tie the running score is followed and such words are redone that way, which makes ids equal to
sentencepiece's on a line of any length (``float32=False`` gives the per-word double sums of
Hugging Face ``tokenizers`` instead).
:func:`nbest` lists the n best segmentations of a word with their probabilities.
:class:`ScoreBpeModel` is SentencePiece's BPE inference, for imported BPE ``.model`` files.

Left out: SentencePiece's normalization rules (the workbench's normalizers run before), the
``split_by_whitespace=false`` / ``treat_whitespace_as_suffix`` / no-dummy-prefix variants,
sampling-based encoding, and training a BPE ``.model``.
"""

from __future__ import annotations

import gc
import heapq
import math
import struct
import threading
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, wraps
from itertools import accumulate, pairwise
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import regex

from workbench.core.model import Tokenizer
from workbench.core.trainer import StepRecord, TrainLog, stop_checker
from workbench.errors import ConfigError, WorkbenchError

if TYPE_CHECKING:
    from workbench.core.unigram_lattice import FlatLattice

METASPACE = "\u2581"  # ▁
UNK_CHAR = "\u2585"  # what SentencePiece puts in place of characters outside the coverage
UNK_PENALTY = 10.0  # unknown score = min piece score − 10 (SentencePiece's kUnkPenalty)
# SentencePiece's Viterbi restarts its float32 running score at a position whose best score is
# beyond ±100,000 (see UnigramModel._float32_lattice): stored scores stay under ~1e5 in magnitude.
SPM_REBASE = 1e5
META_PIECES = ("<unk>", "<s>", "</s>")  # SentencePiece's defaults: unk=0, bos=1, eos=2
_EXPECTED_THRESHOLD = 0.5  # the M step drops pieces expected fewer times than this
_LISTED_COUNT = 4  # seeding lists a word's substrings this many times or fewer (else adds its count)


def float32_step(magnitude: float) -> float:
    """The spacing of float32 numbers at ``magnitude`` (its ulp; at least the one at 1.0)."""
    return math.ldexp(1.0, max(math.frexp(magnitude)[1], 1) - 24)


def byte_piece(b: int) -> str:
    """SentencePiece's name of a byte-fallback piece: ``<0x41>``."""
    return f"<0x{b:02X}>"


def to_float32(x: float) -> float:
    """``x`` as the float32 a ``.model`` file stores: our scores are exactly what the file holds."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


# ---- SentencePiece's text form ---------------------------------------------------------------------
def spm_text(text: str, dummy_prefix: bool = True) -> str:
    """Spaces become ▁; a non-empty text gets one leading ▁ (SentencePiece's ``add_dummy_prefix``)."""
    text = text.replace(" ", METASPACE)
    return METASPACE + text if (text and dummy_prefix) else text


def split_words(marked: str) -> list[str]:
    """SentencePiece's ``SplitIntoWords``: a word starts at the beginning and at every ▁."""
    if not marked:
        return []
    words = marked.split(METASPACE)
    out = [words[0]] if words[0] else []
    out.extend(METASPACE + w for w in words[1:])
    return out


def spm_words(text: str, dummy_prefix: bool = True) -> list[str]:
    """The words SentencePiece trains on for one sequence (a line): ``"a b"`` → ``["▁a", "▁b"]``."""
    return split_words(spm_text(text, dummy_prefix))


def count_spm_words(sequences: Iterable[str], dummy_prefix: bool = True) -> dict[str, int]:
    """``{word: count}`` in first-seen order, each sequence marked as SentencePiece marks it."""
    counts: Counter = Counter()
    for seq in sequences:
        if seq:
            counts.update(spm_words(seq, dummy_prefix))
    return dict(counts)


# ---- which substrings may be pieces ------------------------------------------------------------------
_SCRIPTS = ("Latin", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Arabic", "Hebrew",
            "Armenian", "Georgian", "Devanagari", "Bengali", "Thai", "Tamil", "Telugu", "Ethiopic",
            "Inherited", "Common")
_SCRIPT_RES = [(name, regex.compile(rf"\p{{Script={name}}}")) for name in _SCRIPTS]


@cache
def script_class(ch: str) -> str:
    """The class that may not be mixed inside one piece (SentencePiece's ``split_by_unicode_script``,
    Hiragana and Katakana counted as Han; digits are Common, so ``2014).`` may be one piece, as
    SentencePiece's own models show)."""
    if ch == "\u30fc":
        return "Han"
    for name, pattern in _SCRIPT_RES:
        if pattern.match(ch):
            return "Han" if name in ("Hiragana", "Katakana") else name
    return f"U+{ord(ch) >> 7:X}"  # scripts not listed: the 128-code-point block stands in


def valid_limits(word: str, max_len: int) -> list[int]:
    """For each start ``i``, the largest ``j`` such that ``word[i:j]`` may be a piece.

    Valid pieces are prefix-closed, so one limit per start describes them all: ``▁`` only first,
    no unknown character, one script class (combining marks take the class before them).
    """
    n = len(word)
    classes: list[str | None] = []
    prev: str | None = None
    for ch in word:
        if ch == METASPACE or ch == UNK_CHAR:
            classes.append(None)
            prev = None
            continue
        cls = script_class(ch)
        if cls == "Inherited":
            cls = prev if prev is not None else "Inherited"
        classes.append(cls)
        prev = cls
    limits = [0] * n
    # ends[i]: end of the run of equal classes that starts at i (None breaks every run)
    ends = [0] * (n + 1)
    ends[n] = n
    for i in range(n - 1, -1, -1):
        if classes[i] is None:
            ends[i] = i
        elif i + 1 < n and classes[i + 1] == classes[i]:
            ends[i] = ends[i + 1]
        else:
            ends[i] = i + 1
    for i in range(n):
        ch = word[i]
        if ch == UNK_CHAR:
            limits[i] = i
        elif ch == METASPACE:
            limits[i] = ends[i + 1] if i + 1 < n and classes[i + 1] is not None else i + 1
        else:
            limits[i] = ends[i]
        limits[i] = min(limits[i], i + max_len)
    return limits


# ---- inference -----------------------------------------------------------------------------------------
class UnigramModel:
    """The pieces of a unigram :class:`Tokenizer` ready for Viterbi (build once per tokenizer)."""

    def __init__(self, tokenizer: Tokenizer):
        if not is_spm_model(tokenizer):
            raise WorkbenchError(f"tokenizer {tokenizer.name!r} is a {tokenizer.model} model, not unigram")
        if len(tokenizer.scores) != len(tokenizer.vocab):
            raise WorkbenchError(
                f"unigram tokenizer {tokenizer.name!r} has {len(tokenizer.scores)} scores for "
                f"{len(tokenizer.vocab)} pieces: every id needs a score")
        self.tok = tokenizer
        specials = tokenizer.special_ids
        self.byte_ids = byte_block(tokenizer) if tokenizer.byte_fallback else None
        byte_set = set(self.byte_ids) if self.byte_ids else set()
        self.piece_id: dict[str, int] = {}
        self.score: dict[int, float] = {}
        for i, raw in enumerate(tokenizer.vocab):
            if i in specials or i in byte_set or not raw:
                continue
            piece = raw.decode("utf-8", "replace")
            if piece not in self.piece_id:
                self.piece_id[piece] = i
                self.score[i] = tokenizer.scores[i]
        self.max_len = max((len(p) for p in self.piece_id), default=1)
        self.min_score = min(self.score.values(), default=0.0)
        self.unk_score = self.min_score - UNK_PENALTY
        # the most one character moves a path's score (any piece's, or the unknown score)
        self._score_span = max((abs(v) for v in self.score.values()), default=0.0) + UNK_PENALTY
        # the largest magnitude a stored float32 score reaches between two rebases
        self._rebase_bound = SPM_REBASE + self._score_span
        unk = tokenizer.unk_token
        self.unk_id = tokenizer.special_tokens.get(unk) if unk else None
        # Pieces with ▁ inside could cross word boundaries: then the whole text is one lattice.
        self.crosses_words = any(METASPACE in p[1:] for p in self.piece_id)
        self.dummy_prefix = tokenizer.pretokenizer == "metaspace"
        self.escape = tokenizer.pretokenizer in ("metaspace", "metaspace-noprefix")
        # word → (ids, closest call between two Viterbi candidates, the best path's score)
        self._cache: dict[str, tuple[tuple[int, ...], float, float]] = {}
        # word → the scores its best path adds, one per piece or unknown character (float32 lines)
        self._chains: dict[str, tuple[float, ...]] = {}

    # -- the lattice of one word
    def edges(self, word: str) -> list[tuple[int, int, int, float]]:
        """``(start, end, id, score)`` of every piece in ``word``, sorted by start; id −1 = unknown."""
        out = []
        get = self.piece_id.get
        n = len(word)
        for i in range(n):
            has_char = False
            for j in range(i + 1, min(n, i + self.max_len) + 1):
                pid = get(word[i:j])
                if pid is not None:
                    out.append((i, j, pid, self.score[pid]))
                    if j == i + 1:
                        has_char = True
            if not has_char:
                out.append((i, i + 1, -1, self.unk_score))
        return out

    def viterbi(self, word: str) -> list[tuple[int, int, int]]:
        """The best segmentation as ``(start, end, id)``; SentencePiece's ties: first found wins."""
        return self._viterbi(word)[0]

    def _viterbi(self, word: str) -> tuple[list[tuple[int, int, int]], float, float]:
        """Segments, the closest call (the smallest gap between two candidates for one position:
        a near tie) and the best path's score, all in double (what Hugging Face ``tokenizers``
        computes; SentencePiece's float32 is :meth:`_float32_viterbi`)."""
        n = len(word)
        best = [0.0] + [-math.inf] * n
        back: list[tuple[int, int] | None] = [None] * (n + 1)
        gap = math.inf
        for s, e, pid, sc in self.edges(word):
            cand = best[s] + sc
            if back[e] is not None:
                d = cand - best[e]
                if d <= 0:  # ties: the candidate found first stays
                    if -d < gap:
                        gap = -d
                    continue
                if d < gap:
                    gap = d
            best[e] = cand
            back[e] = (s, pid)
        return _backtrack(back), gap, best[n]

    def _float32_viterbi(self, word: str, start: float) -> tuple[list[tuple[int, int, int]], float]:
        """Segments of ``word`` and the float32 score at its end, computed as SentencePiece 0.2.3's
        ``EncodeOptimized`` does (read from its compiled code) from the float32 score ``start`` at
        the word's first position.

        Every candidate is a float32 sum (a float32 score plus the float32 best score before it),
        compared with the stored float32 (strictly: of equal candidates the one found first stays).
        Before the pieces starting at a position whose best score is beyond ±:data:`SPM_REBASE`,
        that score is subtracted (in float32) from it and from every position already reached
        after it, so the running score restarts near 0: this rebase keeps a long line's float32
        steps small, and without it ids differ from sentencepiece's once a line's score passes
        −100,000 (lines of ~40,000 characters)."""
        f32 = array("f", [start])
        n = len(word)
        best = [f32[0]] + [-math.inf] * n
        back: list[tuple[int, int] | None] = [None] * (n + 1)
        f32[0] = self.unk_score
        unk_score = f32[0]
        max_len = self.max_len
        at = -1
        for s, e, pid, sc in self.edges(word):
            if s != at:  # the first piece from a new start: rebase there if the score is far out
                at = s
                base = best[s]
                if base < -SPM_REBASE or base > SPM_REBASE:
                    for j in range(s, min(n, s + max_len) + 1):
                        if j == s or back[j] is not None:
                            f32[0] = best[j] - base
                            best[j] = f32[0]
            f32[0] = best[s] + (unk_score if pid < 0 else sc)
            cand = f32[0]
            if back[e] is not None and cand <= best[e]:  # ties: the candidate found first stays
                continue
            best[e] = cand
            back[e] = (s, pid)
        return _backtrack(back), best[n]

    def _float32_segments(self, words: Sequence[str]) -> list[list[tuple[int, int, int]] | None]:
        """For each of a line's words, its segments in SentencePiece's float32 lattice over the
        whole line where they may differ from the per-word double ones (None where they cannot).

        No piece crosses a word start, so every path passes through it and the lattice of a word
        depends on the rest of the line only through the float32 score at its start. A word is
        redone in float32 (:meth:`_float32_viterbi`) when its closest call is within
        ``(n + 2)`` float32 steps at the magnitudes it reaches (see :meth:`line_is_fragile`) or when
        a rebase may fall inside it; otherwise its double path stands and the running score follows
        that path's pieces, one float32 sum each, as the lattice stores them.
        """
        f32 = array("f", [self.unk_score])
        unk_score = f32[0]
        span = self._score_span
        score = self.score
        chains = self._chains
        start = 0.0
        out: list[list[tuple[int, int, int]] | None] = []
        for word in words:
            gap = self._word(word)[1]
            n = len(word)
            reach = abs(start) + (n + 1) * span  # no score stored in this word is farther out
            if reach >= SPM_REBASE or gap <= (n + 2) * float32_step(reach):
                segments, start = self._float32_viterbi(word, start)
                out.append(segments)
                continue
            path = chains.get(word)
            if path is None:
                path = tuple(sc for s, e, pid in self._viterbi(word)[0]
                             for sc in ((score[pid],) if pid >= 0 else (unk_score,) * (e - s)))  # one per unknown
                if len(chains) < 100_000:
                    chains[word] = path
            for sc in path:
                f32[0] = start + sc
                start = f32[0]
            out.append(None)
        return out

    def segment(self, word: str) -> list[tuple[int, int, int]]:
        """How a word splits (SentencePiece's BPE overrides this)."""
        return self._viterbi(word)[0]

    def ids_of(self, word: str, segments: Sequence[tuple[int, int, int]]) -> tuple[int, ...]:
        """Ids of ``word`` split as ``segments`` (:meth:`viterbi`'s ``(start, end, piece id)``; an
        id below 0 is an unknown stretch, given :meth:`unknown_ids`)."""
        out: list[int] = []
        for s, e, pid in segments:
            if pid >= 0:
                out.append(pid)
            else:
                out.extend(self.unknown_ids(word[s:e]))
        return tuple(out)

    def _word(self, word: str) -> tuple[tuple[int, ...], float, float]:
        """(ids, closest call, best score) of one word, cached."""
        found = self._cache.get(word)
        if found is not None:
            return found
        if type(self) is UnigramModel:
            segments, gap, score = self._viterbi(word)
        else:
            segments, gap, score = self.segment(word), math.inf, 0.0
        found = (self.ids_of(word, segments), gap, score)
        if len(self._cache) < 500_000:
            self._cache[word] = found
        return found

    def encode_word(self, word: str) -> tuple[int, ...]:
        """Ids of one word on its own (in a line, see :meth:`line_is_fragile`)."""
        return self._word(word)[0]

    def line_is_fragile(self, words: Sequence[str]) -> bool:
        """Whether SentencePiece's float32 sums over the line ``words`` may decide a near tie
        differently from our per-word double sums, so the line's words must be followed in float32
        (:meth:`_float32_segments`).

        In the float32 lattice every stored best score is rounded to the float32 step at the line's
        magnitude (at most the sum of the words' best scores, and never much beyond
        :data:`SPM_REBASE`, where SentencePiece restarts it exactly); two candidates for one position
        in a word of ``n`` characters start from the same stored score at the word's start and add at
        most ``n`` pieces each, so float32 can only order them differently from double when they are
        within ``(n + 2)`` steps. Words whose closest call is farther than that decide alike.
        """
        if type(self) is not UnigramModel:
            return False
        found = [self._word(w) for w in words]
        magnitude = min(sum(-score for _ids, _gap, score in found if score < 0), self._rebase_bound)
        step = float32_step(magnitude)
        return any(gap <= (len(w) + 2) * step for w, (_ids, gap, _score) in zip(words, found))

    def unknown_ids(self, text: str) -> list[int]:
        """Ids for ``text`` that no piece covers: its byte pieces (byte fallback) or one unknown id."""
        if self.byte_ids is not None:
            return [self.byte_ids[b] for b in text.encode("utf-8")]
        if self.unk_id is None:
            raise WorkbenchError(f"{text!r} has no piece and the tokenizer has no unknown token")
        return [self.unk_id]

    # -- whole texts
    def words(self, text: str, *, dummy_prefix: bool | None = None) -> list[str]:
        """The words the lattice is cut into. ``dummy_prefix=False`` leaves out the dummy ▁ even when
        the model adds one: for the rest of a text cut at a space (the inspector's chunks)."""
        dummy = self.dummy_prefix if dummy_prefix is None else (dummy_prefix and self.dummy_prefix)
        if self.escape and not self.crosses_words:
            return spm_words(text, dummy)
        marked = spm_text(text, dummy) if self.escape else text
        return [marked] if marked else []

    def encode(self, text: str, *, float32: bool = True) -> list[int]:
        """Word by word from the cache; in a text with a near tie the words that may decide it
        otherwise in float32 are redone as SentencePiece computes them (:meth:`_float32_segments`),
        so ids match it exactly. ``float32=False`` keeps the
        per-word double sums that Hugging Face ``tokenizers`` computes (its ids on near ties)."""
        words = self.words(text)
        out: list[int] = []
        if float32 and self.line_is_fragile(words):
            for word, segments in zip(words, self._float32_segments(words)):
                out.extend(self._word(word)[0] if segments is None else self.ids_of(word, segments))
            return out
        for word in words:
            out.extend(self._word(word)[0])
        return out

    def word_spans(self, text: str, *, dummy_prefix: bool | None = None) -> list[tuple[str, int, int]]:
        """The words of :meth:`words`, each with its code-point span ``start:end`` in ``text``: the one
        place where SentencePiece's cut meets the text (its ``SplitIntoWords``). The dummy ▁ has no
        width, so the first word's span is one shorter than the word (a text starting with a space
        gives a zero-width first word: the dummy ▁ alone). ``dummy_prefix`` as in :meth:`words`.
        """
        dummy = self.dummy_prefix if dummy_prefix is None else (dummy_prefix and self.dummy_prefix)
        shift = 1 if (self.escape and dummy and text) else 0
        out: list[tuple[str, int, int]] = []
        pos = 0
        for word in self.words(text, dummy_prefix=dummy):
            out.append((word, max(pos - shift, 0), max(pos + len(word) - shift, 0)))
            pos += len(word)
        return out

    def encode_spans(self, text: str, *, dummy_prefix: bool | None = None) -> list[tuple[int, int, int]]:
        """``(id, start, end)`` with code-point spans in ``text`` (the dummy ▁ has no width).

        ``dummy_prefix=False``: ``text`` continues a text at one of its spaces (see :meth:`words`).
        """
        out: list[tuple[int, int, int]] = []
        spans = self.word_spans(text, dummy_prefix=dummy_prefix)
        words = [word for word, _start, _end in spans]
        exact = self._float32_segments(words) if self.line_is_fragile(words) else [None] * len(words)
        for (word, _start, end), float32_segments in zip(spans, exact):
            offset = end - len(word)  # −1 for a first word behind the dummy ▁
            segments = float32_segments if float32_segments is not None else self.segment(word)
            for s, e, pid in segments:
                a, b = max(offset + s, 0), max(offset + e, 0)
                ids = [pid] if pid >= 0 else self.unknown_ids(word[s:e])
                out.extend((i, a, b) for i in ids)
        return out

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        vocab = self.tok.vocab
        size = len(vocab)
        parts = []
        for token_id in ids:
            if not isinstance(token_id, int) or token_id < 0 or token_id >= size:
                raise WorkbenchError(
                    f"id {token_id} is not in this tokenizer's vocabulary (valid ids: 0 to {size - 1})")
            parts.append(vocab[token_id])
        data = b"".join(parts)
        if self.escape:
            data = data.replace(METASPACE.encode("utf-8"), b" ")
            if self.dummy_prefix and data.startswith(b" "):
                data = data[1:]
        return data


class ScoreBpeModel(UnigramModel):
    """SentencePiece's BPE inference (``bpe_model.cc``): start from characters, repeatedly merge the
    adjacent pair whose concatenation is a piece with the highest score (ties: leftmost)."""

    def segment(self, word: str) -> list[tuple[int, int, int]]:
        get = self.piece_id.get
        score = self.score
        bounds = list(range(len(word) + 1))  # symbol k is word[bounds[k]:bounds[k + 1]]
        while len(bounds) > 2:
            best_k, best = -1, -math.inf
            for k in range(len(bounds) - 2):
                pid = get(word[bounds[k]:bounds[k + 2]])
                if pid is not None and score[pid] > best:
                    best_k, best = k, score[pid]
            if best_k < 0:
                break
            del bounds[best_k + 1]
        out: list[tuple[int, int, int]] = []
        for a, b in pairwise(bounds):
            pid = get(word[a:b])
            if pid is None and out and out[-1][2] < 0:  # a run of unknowns is one <unk>, as in spm
                out[-1] = (out[-1][0], b, -1)
            else:
                out.append((a, b, pid if pid is not None else -1))
        return out


def _backtrack(back: Sequence[tuple[int, int] | None]) -> list[tuple[int, int, int]]:
    """The best path's ``(start, end, id)`` from a lattice's back links; a run of unknown
    characters becomes one unknown stretch, as SentencePiece merges them."""
    out: list[tuple[int, int, int]] = []
    e = len(back) - 1
    while e > 0:
        s, pid = back[e]  # type: ignore[misc]
        if pid < 0 and out and out[-1][2] < 0:
            out[-1] = (s, out[-1][1], -1)
        else:
            out.append((s, e, pid))
        e = s
    out.reverse()
    return out


def is_spm_model(tokenizer: Tokenizer) -> bool:
    """Unigram, or SentencePiece's BPE (imported: ``merge_rule="scores"``): this module encodes it."""
    return tokenizer.model == "unigram" or (tokenizer.model == "bpe" and tokenizer.merge_rule == "scores")


def byte_block(tokenizer: Tokenizer) -> list[int] | None:
    """Ids of the 256 byte-fallback pieces (``<0x00>``…``<0xFF>``): a run of ids whose pieces are
    the bytes 0..255 in order, as trained and imported unigram tokenizers lay them out."""
    vocab = tokenizer.vocab
    for start in range(max(len(vocab) - 255, 0)):
        if vocab[start] == b"\x00" and all(vocab[start + b] == bytes([b]) for b in range(256)):
            return list(range(start, start + 256))
    return None


_MODELS: dict[int, UnigramModel] = {}


def model_of(tokenizer: Tokenizer) -> UnigramModel:
    """One :class:`UnigramModel` per tokenizer object (tokenizers are frozen)."""
    found = _MODELS.get(id(tokenizer))
    if found is None or found.tok is not tokenizer:
        if len(_MODELS) > 32:
            _MODELS.clear()
        kind = UnigramModel if tokenizer.model == "unigram" else ScoreBpeModel
        found = _MODELS[id(tokenizer)] = kind(tokenizer)
    return found


def viterbi(tokenizer: Tokenizer, word: str) -> list[int]:
    """Ids of the best segmentation of one word in SentencePiece form (e.g. ``"▁hello"``)."""
    return list(model_of(tokenizer).encode_word(word))


def nbest(tokenizer: Tokenizer, word: str, n: int) -> list[tuple[list[int], float]]:
    """The ``n`` best segmentations of ``word`` (SentencePiece form) with their probabilities.

    The probability of a segmentation is its product of piece probabilities over the sum for all
    segmentations of the word (the forward pass), so the whole list sums to at most 1. Search: A*
    from the end, the Viterbi score from the start as the (exact) heuristic, as SentencePiece does.
    """
    model = model_of(tokenizer)
    if not word or n <= 0:
        return []
    edges = model.edges(word)
    length = len(word)
    best = [0.0] + [-math.inf] * length
    log_alpha = [0.0] + [-math.inf] * length
    ending: list[list[tuple[int, int, float]]] = [[] for _ in range(length + 1)]
    for s, e, pid, sc in edges:
        best[e] = max(best[e], best[s] + sc)
        log_alpha[e] = _logaddexp(log_alpha[e], log_alpha[s] + sc)
        ending[e].append((s, pid, sc))
    log_z = log_alpha[length]
    # heap of (−(g + h), tie, position, path-from-the-end, g)
    heap: list[tuple[float, int, int, tuple[int, ...], float]] = [(-best[length], 0, length, (), 0.0)]
    tie = 1
    out: list[tuple[list[int], float]] = []
    while heap and len(out) < n:
        _neg, _t, pos, path, g = heapq.heappop(heap)
        if pos == 0:
            ids = list(reversed(path))
            out.append((ids, math.exp(g - log_z)))
            continue
        for s, pid, sc in ending[pos]:
            heapq.heappush(heap, (-(g + sc + best[s]), tie, s, path + (pid,), g + sc))
            tie += 1
    return out


def _logaddexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    if a < b:
        a, b = b, a
    return a + math.log1p(math.exp(b - a))


def digamma(x: float) -> float:
    """SentencePiece's digamma (recurrence up to 7, then the asymptotic series)."""
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 0.5
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    result += (math.log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2
               - (127.0 / 30720.0) * xx4 * xx4)
    return result


_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")
_GC_LOCK = threading.Lock()
_gc_pauses = 0  # paused calls running now (nested, or in other threads)
_gc_was_enabled = False


def _pausing_gc(method: Callable[_Args, _Result]) -> Callable[_Args, _Result]:
    """Run ``method`` with Python's cyclic garbage collector paused.

    Training keeps millions of lists alive (the lattices) and makes millions of short-lived ones
    (each word's forward and backward arrays, its edges while seeding); the collector wakes every
    few hundred allocations and now and then walks every live list — about a tenth of a run.
    Nothing here makes reference cycles, so pausing frees nothing later than it would be. The
    previous state comes back when the outermost paused call ends (a count under a lock, so
    nesting and other threads leave it as they found it); cycles made meanwhile elsewhere in the
    process wait until then.
    """

    @wraps(method)
    def paused(*args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        global _gc_pauses, _gc_was_enabled
        with _GC_LOCK:
            if _gc_pauses == 0:
                _gc_was_enabled = gc.isenabled()
                gc.disable()
            _gc_pauses += 1
        try:
            return method(*args, **kwargs)
        finally:
            with _GC_LOCK:
                _gc_pauses -= 1
                if _gc_pauses == 0 and _gc_was_enabled:
                    gc.enable()

    return paused


# ---- stopping inside long loops ---------------------------------------------------------------------------
#: Work (characters × piece length while seeding) between two looks at the stop flag: about 0.1 s
#: of pure-Python work, so a cancel lands within a fraction of a second in every phase (the lattice
#: passes of unigram_lattice look at it every 32 layers).
_BLOCK_WORK = 50_000


class _Stopped(Exception):
    """Raised inside a long loop when the stop flag is up; :meth:`UnigramTrainer.run` ends there."""


def _never() -> bool:
    return False


def blocks(costs: Sequence[int], budget: int = _BLOCK_WORK) -> list[tuple[int, int]]:
    """``[(start, end)]`` cutting ``range(len(costs))`` into runs of about ``budget`` total cost
    (one item more costly than the budget is a run of its own). Found by bisection over the running
    sum, so cutting a million words costs a few C-level passes, not a Python loop."""
    total = list(accumulate(costs))
    out: list[tuple[int, int]] = []
    start, n, base = 0, len(total), 0
    while start < n:
        end = max(bisect_left(total, base + budget, start), start) + 1
        end = min(end, n)
        out.append((start, end))
        base = total[end - 1]
        start = end
    return out


def _sorted_stoppable(items: list, check: Callable[[], None], run: int = 1 << 17) -> list:
    """``sorted(items)`` with ``check()`` between slices: slices of ``run`` items are sorted one by one,
    then one sort of their concatenation merges the sorted runs (timsort finds them: a few
    comparisons per item), so the stretch without a check is that merge, not the whole sort.
    The same list as one sort (the items here are totally ordered)."""
    if len(items) <= run:
        items.sort()
        return items
    out: list = []
    for a in range(0, len(items), run):
        check()
        out.extend(sorted(items[a:a + run]))
    check()
    out.sort()
    return out


# ---- training ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UnigramConfig:
    """What to train; the defaults are SentencePiece's."""

    vocab_size: int = 8000
    character_coverage: float = 1.0  # SentencePiece suggests 0.9995 for CJK corpora
    byte_fallback: bool = False
    max_piece_length: int = 16
    special_tokens: tuple[str, ...] = ()  # after <unk>, <s>, </s>
    shrinking_factor: float = 0.75
    sub_iterations: int = 2
    seed_size: int = 1_000_000
    bayesian: bool = True  # SentencePiece's digamma M step; False = plain EM (probabilities sum to 1)
    pretokenizer: str = "metaspace"
    normalizer: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    def settings(self) -> dict:
        return {
            "model": "unigram",
            "vocab_size": self.vocab_size,
            "character_coverage": self.character_coverage,
            "byte_fallback": self.byte_fallback,
            "max_piece_length": self.max_piece_length,
            "special_tokens": list(self.special_tokens),
            "pretokenizer": self.pretokenizer,
            "normalizer": list(self.normalizer),
            **self.extra,
        }


@dataclass(frozen=True, slots=True)
class UnigramEvent:
    """One training step: an EM round (``phase="em"``), a pruning step (``"prune"``) or the final
    cut to the exact size (``"final"``). ``token_count`` is the corpus token count — expected under
    the model for EM steps, of the Viterbi segmentation otherwise; ``log_likelihood`` is the corpus
    log-likelihood (natural log, all segmentations summed) before the step's M update."""

    step: int
    phase: str
    vocab_size: int
    token_count: int
    log_likelihood: float

    @property
    def value(self) -> float:
        """The Trainer interface's number for this step (:class:`workbench.core.trainer.TrainEvent`)."""
        return self.log_likelihood


@dataclass(frozen=True)
class PruningCheckpoint:
    """The vocabulary after one pruning round and the EM rounds that re-estimate it: pieces and
    their log probabilities (``step`` is the trainer step of those EM rounds). What the
    vocabulary-size sweep encodes with for sizes above the final one; specials and byte pieces
    are left out (every model of the run has the same)."""

    step: int
    pieces: tuple[str, ...]
    scores: tuple[float, ...]


CHECKPOINT_FACTOR = 4  # pruning checkpoints are kept while the vocabulary is at most 4 × the target


def cut_pieces(required: Iterable[str], alive: Mapping[str, float], target: int) -> dict[str, float]:
    """SentencePiece's last cut to ``target`` pieces: every required character first (in the order
    given, most frequent first; one missing from ``alive`` scores just below the lowest piece, rarer
    ones lower), then the best-scored pieces (ties by piece) until ``target`` are there. More than
    ``target`` come back when the required characters alone are more."""
    min_score = min(alive.values())
    final: dict[str, float] = {}
    penalty = 0.0
    for ch in required:
        if ch in alive:
            final[ch] = alive[ch]
        else:
            final[ch] = min_score - penalty
            penalty += 0.0001
    for piece, score in sorted(alive.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(final) >= target:
            break
        final.setdefault(piece, score)
    return final


class UnigramTrainer:
    """Train a unigram model on an ordered ``{pre-token: count}`` table (see the module docstring).

    Pre-tokens are put in SentencePiece's form (spaces → ▁, a new word at each ▁); count sequences
    with :func:`count_spm_words` to get SentencePiece's dummy ▁ before each sequence.
    """

    value_name = "log_likelihood"

    def __init__(self, word_counts: Mapping[str, int], config: UnigramConfig,
                 should_stop: Callable[[], bool] | None = None):
        """``should_stop`` is looked at while the words are cut and counted (seconds on a large
        corpus) and raises :class:`~workbench.core.trainer.TrainingCancelled`; :meth:`run` takes its own."""
        self.config = config
        user = list(dict.fromkeys(config.special_tokens))
        if any(not token for token in user):
            raise ConfigError("special_tokens", "a special token cannot be empty: remove the empty one")
        user = [t for t in user if t not in META_PIECES]
        self.special_tokens = {t: i for i, t in enumerate([*META_PIECES, *user])}
        self.vocab: list[bytes] = [t.encode("utf-8") for t in self.special_tokens]
        self._n_meta = len(self.special_tokens) + (256 if config.byte_fallback else 0)
        if not 0.0 < config.character_coverage <= 1.0:
            raise ConfigError("options.character_coverage",
                              f"the character coverage {config.character_coverage} must be in (0, 1]")
        if config.max_piece_length < 1:
            raise ConfigError("options.max_piece_length", "the maximum piece length must be at least 1")
        if config.vocab_size <= self._n_meta:
            reserved = f"<unk> <s> </s>{', specials' if user else ''}{', 256 bytes' if config.byte_fallback else ''}"
            raise ConfigError("vocab_size", f"the vocabulary size {config.vocab_size} leaves no room for pieces after "
                              f"the {self._n_meta} reserved ids ({reserved}): choose more than {self._n_meta}")
        check = stop_checker(should_stop)
        words: Counter = Counter()
        if all(count > 0 for count in word_counts.values()) and not any(
                not w or " " in w or w.find(METASPACE, 1) >= 0 for w in word_counts):
            words.update(word_counts)  # already one word each (count_spm_words, unigram_words): copied in C
        else:
            for i, (word, count) in enumerate(word_counts.items()):
                check(i)
                if count > 0:
                    for w in split_words(word.replace(" ", METASPACE)):
                        words[w] += count
        chars: Counter = Counter("".join(w for w, c in words.items() if c == 1))  # counted in C
        for i, (word, count) in enumerate(words.items()):
            check(i)
            if count > 1:
                for ch, k in Counter(word).items():
                    chars[ch] += k * count
        chars.pop(UNK_CHAR, None)
        # NUL is never a piece: sentencepiece cannot load a model with one (and its trainer skips
        # NUL when it counts characters); it stays in the text as an unknown character.
        has_nul = bool(chars.pop("\x00", 0))
        total = sum(chars.values())
        self.required: dict[str, int] = {}
        covered = 0
        for ch, count in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0])):
            if total and covered / total >= config.character_coverage:
                break
            covered += count
            self.required[ch] = count
        if len(self.required) + self._n_meta > config.vocab_size:
            # Pruning never drops a required character, so it could never reach the size (a run
            # that pruned forever); sentencepiece refuses the same settings the same way.
            raise ConfigError(
                "vocab_size",
                f"{config.vocab_size} is below what the corpus needs: {len(self.required):,} characters "
                f"(character coverage {config.character_coverage:g}) + {self._n_meta} reserved ids = "
                f"{len(self.required) + self._n_meta:,}; raise the vocabulary size or lower the character coverage")
        if len(self.required) < len(chars) or has_nul:
            table = {ord(ch): UNK_CHAR for ch in chars if ch not in self.required}
            table[0] = UNK_CHAR
            merged: Counter = Counter()
            for word, count in words.items():
                merged[word.translate(table)] += count
            words = merged
        self._words = list(words)
        self._counts = [words[w] for w in self._words]
        self._word_lens = [len(w) for w in self._words]
        self.token_count = sum(len(w) * c for w, c in zip(self._words, self._counts))
        self._total_chars = self.token_count  # characters of the corpus (the E step's scale)
        self._seeded = False  # seeds and lattices are made by run() (stoppable) or on first need
        self._stopped = False  # run() was stopped: tokenizer() gives the model of the last step
        self._stop: Callable[[], bool] = _never
        self._final: list[tuple[str, float]] | None = None
        self._log_k = 0.0  # scale per character that keeps forward sums near 1 (see _e_step)
        # The Trainer interface (workbench.core.trainer). A unigram model merges nothing: its log
        # holds no merges, only a StepRecord per step (log.steps, the store's run_steps rows), and
        # the run's vocabulary is the final one (tokenizer()), stored at the end.
        self.log = TrainLog(list(self.vocab))
        self.initial_vocab = tuple(self.vocab)
        self.initial_kinds = tuple("special" for _ in self.vocab)
        self.initial_token_count = self.token_count
        self.word_types = len(self._words)
        self.target = 0  # EM rounds and pruning steps are not known in advance
        self.checkpoints: list[PruningCheckpoint] = []  # see run(); stored at the end of the run

    @property
    def initial_size(self) -> int:
        """Reserved ids + seed pieces (seeds the trainer if :meth:`run` has not yet)."""
        self._ensure_seeded()
        return self._n_meta + self._initial_pieces

    def _ensure_seeded(self) -> None:
        if not self._seeded:
            self._seed()

    def _check_stop(self) -> None:
        if self._stop():
            raise _Stopped

    # -- seeds and lattices
    @_pausing_gc
    def _seed(self) -> None:
        """Seed pieces and every word's lattice (:mod:`workbench.core.unigram_seed`: all substrings
        counted at once in numpy, the same seeds and lattices as the string-by-string count)."""
        from workbench.core.unigram_lattice import lattice_of
        from workbench.core.unigram_seed import seed

        check = self._check_stop
        required = list(self.required)
        room = max(self.config.seed_size - len(required), 0)
        char_pid = {ch: i for i, ch in enumerate(required)}
        unk_pid = len(required) + room  # placeholder until the number of seeds is known
        found = seed(self._words, self._counts, self.config.max_piece_length, room,
                     lambda ch: char_pid.get(ch, unk_pid if ch == UNK_CHAR else -1),
                     len(required), script_class, check)
        seeds: list[tuple[str, float]] = [(ch, float(n)) for ch, n in self.required.items()]
        seeds.extend(zip(found.pieces, map(float, found.scores)))
        check()
        log_total = math.log(sum(v for _s, v in seeds))
        self._pieces = [s for s, _v in seeds]
        self._lens = [len(s) for s in self._pieces]
        self._scores = [math.log(v) - log_total for _s, v in seeds]
        check()
        self._unk_pid = len(self._pieces)  # stands for characters outside the coverage
        self._lens.append(1)
        self._scores.append(0.0)
        self._alive = [True] * len(self._pieces) + [False]
        self._order = list(range(len(self._pieces)))
        self._is_char = [n == 1 for n in self._lens]
        self._lattice: FlatLattice = lattice_of(found, unk_pid, self._unk_pid, self._word_lens, self._counts, check)
        del found
        # Where each piece last occurs, for pruning: found when first needed (see _piece_paths).
        self._where: tuple[Sequence[int], Sequence[int]] | None = None  # numpy arrays
        self._dirty = False
        self._initial_pieces = len(self._order)
        self._seeded = True

    @_pausing_gc
    def _filter_edges(self) -> None:
        """Drop the edges of removed multi-character pieces (characters stay: they turn unknown)."""
        self._check_stop()
        self._lattice.keep([a or c for a, c in zip(self._alive, self._is_char)], self._check_stop)
        self._dirty = False

    def _log_scores(self) -> list[float]:
        """Score per pid as the lattice uses it: removed characters and the unknown character
        score ``min − 10``; removed longer pieces −inf (their edges are filtered)."""
        from workbench.core.unigram_lattice import lattice_scores

        return lattice_scores(self._scores, self._order, self._alive, self._is_char, UNK_PENALTY)

    # -- EM
    @_pausing_gc
    def _e_step(self) -> tuple[list[float], float, float]:
        from workbench.core.unigram_lattice import e_step, scaled_weights

        if self._dirty:
            self._filter_edges()
        logs = self._log_scores()
        total_chars = self._total_chars
        # Forward-backward in probabilities, not logs (no exp/log per edge): each piece's weight is
        # scaled by K**length, K the corpus' mean probability per character, so a word's sum stays
        # near 1; words where it still over- or underflows are redone in log space. All words at
        # once, layer by layer (unigram_lattice), with the floats of an edge-by-edge loop.
        log_k = self._log_k
        W = scaled_weights(logs, self._lens, log_k)
        expected, log_lik = e_step(self._lattice, W, log_k, lambda S, E, P, n, c: self._e_word_log(S, E, P, n, c, logs),
                                   self._check_stop)
        self._log_k = -log_lik / total_chars if total_chars else 0.0
        return expected, log_lik, sum(expected)

    @staticmethod
    def _e_word_log(S, E, P, n, c, logs) -> tuple[float, list[float]]:
        """The same forward-backward in log space, for words whose scaled sum over- or underflows:
        the log of the word's sum and each edge's expected count, in edge order."""
        alpha = [-math.inf] * (n + 1)
        alpha[0] = 0.0
        for s, e, p in zip(S, E, P):
            alpha[e] = _logaddexp(alpha[e], alpha[s] + logs[p])
        beta = [-math.inf] * (n + 1)
        beta[n] = 0.0
        for s, e, p in zip(reversed(S), reversed(E), reversed(P)):
            beta[s] = _logaddexp(beta[s], logs[p] + beta[e])
        z = alpha[n]
        return z, [c * math.exp(alpha[s] + logs[p] + beta[e] - z) for s, e, p in zip(S, E, P)]

    def _m_step(self, expected: list[float]) -> None:
        kept = [p for p in self._order if expected[p] >= _EXPECTED_THRESHOLD]
        total = sum(expected[p] for p in kept)
        # New scores are made in slices (a stop check between two) and applied only when all are
        # there, so a stop leaves the model of the previous step whole.
        f = digamma if self.config.bayesian else math.log
        log_total = f(total)
        new: list[float] = []
        for a in range(0, len(kept), 16384):
            self._check_stop()
            new.extend([f(expected[p]) - log_total for p in kept[a:a + 16384]])
        scores = self._scores
        for p, score in zip(kept, new):
            scores[p] = score
        self._set_order(kept)

    def _set_order(self, kept: list[int]) -> None:
        alive = [False] * len(self._alive)
        for p in kept:
            alive[p] = True
        # Removed pieces weigh 0 (score −inf) until their edges are filtered: filtering costs a
        # pass over every lattice, worth it only when many pieces went (pruning, the first M step).
        if len(kept) < 0.9 * len(self._order):
            self._dirty = True
        self._alive = alive
        self._order = kept

    # -- pruning
    @_pausing_gc
    def _viterbi_all(self) -> tuple[list[float], int]:
        """Weighted piece frequencies and token count of the Viterbi segmentation of every word."""
        if self._dirty:
            self._filter_edges()
        logs = self._log_scores()
        from workbench.core.unigram_lattice import viterbi_counts

        return viterbi_counts(self._lattice, logs, self._alive, self._check_stop)

    def _piece_paths(self, pieces: list[int], logs: list[float]) -> list[tuple[int, list[int]]]:
        """SentencePiece's two-best for each of ``pieces`` over its own lattice, a slice of the lattice
        of a word it occurs in: (length of the best path — 2 standing for "two or more" —, the
        second-best path's pieces, last first, when the best is the piece alone).

        The slice is the piece's last occurrence at the first pruning step (found once; a live
        piece's edges stay, and removed pieces' edges are gone from the lattice or weigh −inf, which
        never wins a strict comparison). One Viterbi pass gives both paths: the best scores before
        the piece's end are the same with or without the piece's own edge, so the best path is the
        piece alone unless a path of two or more beats it (strictly: the first found wins), and the
        second best is that path. All pieces at once (:func:`unigram_lattice.piece_paths`).
        """
        from workbench.core.unigram_lattice import piece_paths

        if self._where is None:
            if self._dirty:
                self._filter_edges()
            self._check_stop()
            self._where = self._lattice.last_occurrence(len(self._lens))  # type: ignore[assignment]
        assert self._where is not None
        other, paths = piece_paths(self._lattice, pieces, self._where, self._lens, logs, self._check_stop)
        return [(2, []) if o > logs[p] else (1, path) for p, o, path in zip(pieces, other, paths)]

    @_pausing_gc
    def _prune(self, desired: int) -> tuple[int, float]:
        freq, tokens = self._viterbi_all()
        logs = self._log_scores()
        total = sum(freq)
        log_total = math.log(total)
        n_pieces = len(self._order)
        kept: list[int] = []
        candidates: list[tuple[float, int, int]] = []
        check = self._check_stop
        lens = self._lens
        paths = iter(self._piece_paths([p for p in self._order if freq[p] != 0 and lens[p] != 1], logs))
        for rank, p in enumerate(self._order):
            if not rank & 127:
                check()
            if freq[p] == 0:
                continue
            if lens[p] == 1:
                kept.append(p)  # no second segmentation: always kept
                continue
            best_len, alternatives = next(paths)
            if best_len >= 2:
                continue  # the piece's own best split avoids it: safe to remove
            f = freq[p] / total  # SentencePiece: occurrences / all word frequency (same ratio)
            logprob_sp = math.log(freq[p]) - log_total
            # SentencePiece multiplies by the size of the whole alternatives table here
            # (``alternatives.size()``, not ``alternatives[i].size()``); kept for identical pruning.
            logsum_alt = math.log(total + freq[p] * (n_pieces - 1))
            logprob_alt = 0.0
            for q in alternatives:
                fq = freq[q] if self._alive[q] else 0.0
                logprob_alt += math.log(fq + freq[p]) - logsum_alt
            candidates.append((-(f * (logprob_sp - logprob_alt)), rank, p))
        candidates.sort()
        size = max(desired, int(self.config.shrinking_factor * n_pieces))
        for _loss, _rank, p in candidates:
            if len(kept) >= size:
                break
            kept.append(p)
        self._set_order(kept)
        return tokens, 0.0

    def piece_probabilities(self) -> dict[str, float]:
        """``{piece: exp(score)}`` of the current model (what the next E step uses)."""
        return {self._pieces[p]: math.exp(self._scores[p]) for p in self._order}

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[UnigramEvent]:
        """Seeds, then EM rounds and pruning steps until the size is within 1.1 × the target, then
        the cut. ``should_stop`` is looked at between steps and inside every long loop (seeding, the
        E step, Viterbi, pruning: at most ~50 ms of work apart); a stopped step is left out whole, so
        :meth:`tokenizer` gives the model of the last completed step."""
        self._stop = should_stop or _never
        try:
            yield from self._run()
        except _Stopped:
            self._stopped = True
        finally:
            self._stop = _never

    def _run(self) -> Iterator[UnigramEvent]:
        cfg = self.config
        self._ensure_seeded()
        desired = int(cfg.vocab_size * 1.1) - self._n_meta
        step = 0
        while True:
            for _ in range(cfg.sub_iterations):
                self._check_stop()
                expected, log_lik, n_tokens = self._e_step()
                self._m_step(expected)
                step += 1
                self.token_count = round(n_tokens)
                yield self._step(UnigramEvent(step, "em", self._n_meta + len(self._order), self.token_count, log_lik))
            if step > cfg.sub_iterations and self._n_meta + len(self._order) <= CHECKPOINT_FACTOR * cfg.vocab_size:
                self.checkpoints.append(PruningCheckpoint(  # the model after a pruning round (and its EM)
                    step, tuple(self._pieces[p] for p in self._order), tuple(self._scores[p] for p in self._order)))
            if len(self._order) <= desired:
                break
            self._check_stop()
            before = len(self._order)
            tokens, _ = self._prune(desired)
            if len(self._order) >= before:  # cannot happen by design; a loop with no progress never ends
                raise WorkbenchError(f"Unigram pruning made no progress at {self._n_meta + before:,} pieces "
                                     f"(target {cfg.vocab_size:,}): training stopped instead of looping")
            step += 1
            self.token_count = tokens
            yield self._step(UnigramEvent(step, "prune", self._n_meta + len(self._order), tokens, math.nan))
        self._finalize()
        step += 1
        yield self._step(UnigramEvent(step, "final", len(self.vocab), self.token_count, math.nan))

    def _step(self, event: UnigramEvent) -> UnigramEvent:
        """Record ``event`` in the log (what the store's writer reads) and pass it on."""
        self.log.steps.append(StepRecord(event.step, event.phase, event.vocab_size, event.token_count,
                                         event.log_likelihood))
        return event

    @_pausing_gc
    def _finalize(self) -> None:
        """Cut to the exact size. After a stop (``self._stopped``) the model may be smaller (stopped
        while seeding: the required characters alone, scored by frequency) and the corpus token count
        is not redone (a full Viterbi pass would delay the stop)."""
        if not self._stopped:
            self._ensure_seeded()
        target = self.config.vocab_size - self._n_meta
        if self._seeded:
            alive = {self._pieces[p]: self._scores[p] for p in self._order}
        else:
            total = sum(self.required.values()) or 1
            alive = {ch: math.log(n / total) for ch, n in self.required.items()}
        final = cut_pieces(self.required, alive, target) if alive else {}  # most frequent first: rarer characters score lower
        if len(final) < target and not self._stopped:
            raise ConfigError(
                "vocab_size", f"the corpus yields only {len(final) + self._n_meta} unigram pieces: choose a vocabulary "
                f"size of {len(final) + self._n_meta} or less, or train on more text")
        self._final = sorted(((p, to_float32(s)) for p, s in final.items()), key=lambda kv: (-kv[1], kv[0]))
        self.vocab = [t.encode("utf-8") for t in self.special_tokens]
        if self.config.byte_fallback:
            self.vocab.extend(bytes([b]) for b in range(256))
        self.vocab.extend(p.encode("utf-8") for p, _s in self._final)
        if self._stopped:
            return
        # The corpus token count under the final pieces, on the training lattices (every final
        # piece is a seed, so its edges are there; the required characters re-added score as kept).
        pid_of = {piece: pid for pid, piece in enumerate(self._pieces)}
        kept, self._scores = [], list(self._scores)
        for piece, score in self._final:
            kept.append(pid_of[piece])
            self._scores[pid_of[piece]] = score
        self._set_order(kept)
        self.token_count = self._viterbi_all()[1]

    def tokenizer(self, name: str = "") -> Tokenizer:
        """The trained model (finalizing to the exact size first if ``run`` was stopped early)."""
        if self._final is None:
            self._finalize()
        assert self._final is not None
        scores = [0.0] * (len(self.vocab) - len(self._final)) + [s for _p, s in self._final]
        return Tokenizer(
            vocab=tuple(self.vocab), merges=(), units="chars", pretokenizer=self.config.pretokenizer,
            normalizer=self.config.normalizer, special_tokens=dict(self.special_tokens), name=name,
            unk_token="<unk>", model="unigram", scores=tuple(scores), byte_fallback=self.config.byte_fallback,
        )


def train(word_counts: Mapping[str, int], config: UnigramConfig,
          should_stop: Callable[[], bool] | None = None) -> Tokenizer:
    """Run :class:`UnigramTrainer` to the end and return its tokenizer."""
    trainer = UnigramTrainer(word_counts, config)
    for _event in trainer.run(should_stop):
        pass
    return trainer.tokenizer()
