"""Corpus metrics for any tokenizer: how many tokens a text costs, and what that buys.

One implementation for ``workbench stats`` and the Compare tab. Text arrives in chunks that end at
line boundaries (as :func:`workbench.corpus.iter_text` streams it); two accumulators run over them:

* :class:`TextTally` — what does not depend on the tokenizer: characters, UTF-8 bytes, lines,
  whitespace words and *word units* (the fertility denominator, see :func:`word_units`).
* :class:`TokenMeter` — one per tokenizer: tokens L, the attention cost Σ L_seq² over sequences
  (lines), unknown tokens and each vocabulary entry's frequency (for utilisation and the
  never-used entries, as :class:`workbench.core.metrics.VocabUsage`).

:class:`Metrics` derives the ratios (characters/token, bytes/token, fertility, unknown rate,
utilisation, V × d) from the two, and adds up over files (per language). :func:`fairness` gives
tokens per language relative to a baseline language.

Definitions (chosen so the numbers match what the real libraries count):

* **L** is the number of ids the tokenizer's own ``encode`` gives for the text, special tokens
  read as plain text (tiktoken's ``encode_ordinary``).
* **L²** is Σ over sequences of (tokens in the sequence)²: the self-attention cost when each line
  is one sequence (how ``tokenizers``' ``train(files)`` and ``sentencepiece`` read text files).
  Sequences are cut in the text as read, *before* normalization, so every tokenizer sees the same
  sequences on the same file — a BERT normalizer turns line breaks into spaces, and cutting after it
  made a whole file one sequence (:func:`sequence_pretokens`). A pre-token that spans a line break
  (``"\\n\\n"``) counts toward the line it starts on, so the per-line counts add up to L exactly.
  With pre-tokenizer ``none`` a pre-token is a whole chunk.
* **V × d** is the rows of the embedding table (ids 0 … |V|−1, gaps in an imported vocabulary
  included, since the table has those rows too) times the embedding width d.

Left out: reading files (``workbench.corpus``), caching and script detection (``workbench.tasks
.compare``), and anything about display.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import regex

from workbench.core.count import SAFE_CUTS
from workbench.core.encoder import Encoder
from workbench.core.expert_metrics import (
    DEFAULT_ALPHA,
    average_token_rank,
    basis_size,
    ordinary_ranks,
    renyi_efficiency,
    shannon_efficiency,
)
from workbench.core.expert_metrics import gini as expert_gini
from workbench.core.metrics import VocabUsage, counted_ids, encode_pretoken
from workbench.core.model import Tokenizer
from workbench.core.pretokenize import PreTokenizer

DEFAULT_D = 768
# Bump when a definition changes (2: sequences cut before normalization; 3: characters lost to the
# unknown token counted; 4: whitespace words kept as one token counted): old cached results are ignored.
METRICS_VERSION = 4

# Scripts written without spaces between words: each character is a word unit for fertility.
UNSEGMENTED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}"
_UNSEGMENTED_CHAR = regex.compile(f"[{UNSEGMENTED}]")
_WORD_WITH_UNSEGMENTED = regex.compile(f"[^\\s{UNSEGMENTED}]*[{UNSEGMENTED}]\\S*")


def word_units(text: str) -> tuple[int, int]:
    """``(whitespace words, word units)`` of ``text``.

    Word units are whitespace-separated words, except that a word holding characters of an
    unsegmented script (Han, Kana, Thai, …) counts each such character as one unit instead: so
    fertility is tokens per word for English or Russian and tokens per character for Chinese,
    and mixed text gets the sum. (A Latin prefix glued to Han, ``abc中文``, counts as 2 units.)
    """
    words = len(text.split())
    glued = len(_WORD_WITH_UNSEGMENTED.findall(text))
    if not glued:
        return words, words
    return words, words - glued + len(_UNSEGMENTED_CHAR.findall(text))


# ---- tokenizer-independent counts ------------------------------------------------------------------
@dataclass
class TextTally:
    """Characters, bytes, lines, words and word units of the text added so far."""

    chars: int = 0
    bytes: int = 0
    lines: int = 0
    words: int = 0
    units: int = 0
    _open_line: bool = False

    def add(self, text: str) -> None:
        if not text:
            return
        self.chars += len(text)
        self.bytes += len(text.encode("utf-8", "surrogatepass"))
        self.lines += text.count("\n")
        self._open_line = not text.endswith("\n")
        words, units = word_units(text)
        self.words += words
        self.units += units

    def finish(self) -> TextTally:
        """Count a last line without a line break; returns self."""
        if self._open_line:
            self.lines += 1
            self._open_line = False
        return self

    def as_dict(self) -> dict:
        return {"chars": self.chars, "bytes": self.bytes, "lines": self.lines, "words": self.words,
                "units": self.units}

    @classmethod
    def from_dict(cls, d: Mapping) -> TextTally:
        return cls(d["chars"], d["bytes"], d["lines"], d["words"], d["units"])

    def __iadd__(self, other: TextTally) -> TextTally:
        self.chars += other.chars
        self.bytes += other.bytes
        self.lines += other.lines
        self.words += other.words
        self.units += other.units
        return self


class Recut:
    """Re-cut pushed chunks where the pre-tokenizer cannot notice (:data:`workbench.core.count.SAFE_CUTS`).

    Readers cut at line ends, but cl100k joins ``".\n\n"`` into one pre-token, so a reader cut can
    split a pre-token and change the count. ``push`` returns the text that is safe to encode now and
    keeps the tail; ``flush`` returns the tail. Without safe cuts (``none``, custom patterns) each
    chunk passes through as it came, as :func:`workbench.core.count.chunks_for` does.
    """

    MAX_CARRY = 8 << 20  # a text without a single safe cut is encoded in pieces this big

    def __init__(self, pretokenizer: str):
        self.cut = SAFE_CUTS.get(pretokenizer)
        self.carry = ""

    def push(self, text: str) -> str:
        if self.cut is None:
            return text
        text = self.carry + text if self.carry else text
        cut = self.cut(text, 0, len(text))
        if cut < 0 and len(text) < self.MAX_CARRY:
            self.carry = text
            return ""
        if cut < 0:
            cut = len(text)
        self.carry = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        tail, self.carry = self.carry, ""
        return tail


def _keeps_line_breaks(normalize: Callable[[str], str]) -> bool:
    return normalize("a\nb") == "a\nb"


def sequence_pretokens(text: str, normalize: Callable[[str], str] | None,
                       pre: PreTokenizer) -> tuple[list[str], list[int]]:
    """The pre-tokens of a chunk (normalized text) and where sequences end: ``ends`` lists the
    indices into the pre-tokens before which a line ended (``len(pieces)`` when one ended after the
    last pre-token's start). The one place that decides what a sequence is, for stats and sweep.

    Lines are the text's own ``\\n`` breaks, found *before* normalization. When the normalizer keeps
    a line break a line break (none, NFC, NFKC, lower …) the breaks are still in the normalized
    text and are counted there. When it rewrites them (``bert`` and ``nmt-nfkc`` make a space), each
    line is normalized on its own and the break after it as ``normalize("\\n")``; these normalizers
    act character by character, so the text the pre-tokenizer sees — and L — is the same as
    normalizing the whole chunk, and only the sequence boundaries are new.
    """
    pieces: list[str] = []
    ends: list[int] = []
    append = pieces.append
    if normalize is None or _keeps_line_breaks(normalize):
        if normalize is not None:
            text = normalize(text)
        count = text.count
        last = 0
        for a, b in pre.spans(text):
            if count("\n", last, a):  # a line ended before this pre-token: close it
                ends.append(len(pieces))
            last = a
            append(text[a:b])
        if count("\n", last, len(text)):
            ends.append(len(pieces))
        return pieces, ends
    lines = text.split("\n")
    tail = lines.pop()
    brk = normalize("\n")
    parts: list[str] = []
    starts: list[int] = []  # offsets in the normalized text where a line begins after a break
    pos = 0
    for line in lines:
        norm = normalize(line)
        parts.append(norm)
        parts.append(brk)
        pos += len(norm) + len(brk)
        starts.append(pos)
    parts.append(normalize(tail))
    normalized = "".join(parts)
    k, n = 0, len(starts)
    for a, b in pre.spans(normalized):
        if k < n and starts[k] <= a:
            ends.append(len(pieces))
            while k < n and starts[k] <= a:
                k += 1
        append(normalized[a:b])
    if k < n:
        ends.append(len(pieces))
    return pieces, ends


# ---- one tokenizer over streamed text ---------------------------------------------------------------
@dataclass
class TokenCounts:
    """What one tokenizer made of a text: L, Σ L_seq², unknown tokens, id frequencies, the
    sequences that hold at least one token (the same for every tokenizer on text whose non-blank
    lines all give a token), the characters the unknown tokens stand for (``lost_chars``), and the
    whitespace words (``str.split``) that the tokenizer encodes, each on its own, as exactly one id
    (``single_words``: the numerator of single-token retention)."""

    tokens: int = 0
    attention: int = 0
    unknown: int = 0
    frequencies: dict[int, int] = field(default_factory=dict)  # id → occurrences (used ids only)
    sequences: int = 0
    lost_chars: int = 0
    single_words: int = 0

    def as_dict(self) -> dict:
        return {"tokens": self.tokens, "attention": self.attention, "unknown": self.unknown,
                "frequencies": [[i, n] for i, n in sorted(self.frequencies.items())], "sequences": self.sequences,
                "lost_chars": self.lost_chars, "single_words": self.single_words}

    @classmethod
    def from_dict(cls, d: Mapping) -> TokenCounts:
        return cls(d["tokens"], d["attention"], d["unknown"], {int(i): int(n) for i, n in d["frequencies"]},
                   d.get("sequences", 0), d["lost_chars"], d["single_words"])

    def __iadd__(self, other: TokenCounts) -> TokenCounts:
        self.tokens += other.tokens
        self.attention += other.attention
        self.unknown += other.unknown
        self.sequences += other.sequences
        self.lost_chars += other.lost_chars
        self.single_words += other.single_words
        for i, n in other.frequencies.items():
            self.frequencies[i] = self.frequencies.get(i, 0) + n
        return self


class TokenMeter:
    """Encode streamed text with one tokenizer, keeping only counts.

    Each distinct pre-token is encoded once (natural text repeats its words) and weighted by how
    often it occurs; the per-line token counts for L² come from the same pass. ``add`` the chunks of
    one file in order, then ``finish``; a meter can be reused for the next file after ``finish``.
    """

    def __init__(self, tokenizer: Tokenizer, *, encoder: Encoder | None = None):
        self.tok = tokenizer
        self.encoder = encoder or Encoder(tokenizer)
        self._pre = tokenizer.pre
        self._normalize = tokenizer.normalize if tokenizer.normalizer else None
        self._ids: dict[str, tuple[int, ...]] = {}
        self._lost: dict[str, int] = {}  # pre-token (or line) → characters its unknown tokens stand for
        self._single: dict[str, bool] = {}  # whitespace word → encodes on its own as one id
        self._unk = self.encoder.unknown_id
        self._recut = Recut(tokenizer.pretokenizer)
        # A Unigram (SentencePiece) lattice spans a whole line: the unit counted is the line.
        # so is an imported tokenizer.json's pipeline, which runs on whole texts as tokenizers runs it.
        self._by_line = self.encoder.spm_model is not None or (tokenizer.pipeline is not None and tokenizer.pipeline.whole_lines)
        self._reset()

    def _reset(self) -> None:
        self._pieces: Counter[str] = Counter()
        self._words: Counter[str] = Counter()
        self._line = 0
        self._attention = 0
        self._sequences = 0

    def ids(self, piece: str) -> tuple[int, ...]:
        """The ids of one pre-token (cached)."""
        found = self._ids.get(piece)
        if found is None:
            ids = self.encoder.encode(piece) if self._by_line else encode_pretoken(self.encoder, piece)
            found = self._ids[piece] = tuple(ids)
        return found

    def add(self, text: str) -> None:
        # Chunks end at line boundaries (the readers cut them so); a line-level model needs no
        # re-cutting at pre-token boundaries, which could split a line in two.
        self._words.update(text.split())  # the words TextTally counts, from the same chunk
        self._add(text if self._by_line else self._recut.push(text))

    def _add(self, text: str) -> None:
        if not text:
            return
        if self._by_line:  # the encoder normalizes; a line is one SentencePiece sentence
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            lengths = [len(self.ids(line)) for line in lines]
            self._attention += sum(n * n for n in lengths)
            self._sequences += sum(1 for n in lengths if n)
            self._pieces.update(lines)
            return
        pieces, ends = sequence_pretokens(text, self._normalize, self._pre)
        ids = self.ids
        lengths = [len(ids(piece)) for piece in pieces]
        line = self._line
        attention = 0
        start = 0
        for end in ends:  # a sequence ends before pieces[end]
            line += sum(lengths[start:end])
            attention += line * line
            self._sequences += line > 0
            line = 0
            start = end
        line += sum(lengths[start:])
        self._line = line
        self._attention += attention
        self._pieces.update(pieces)

    def finish(self) -> TokenCounts:
        """The counts of the text added since the last ``finish``."""
        self._add(self._recut.flush())
        attention = self._attention + self._line * self._line
        sequences = self._sequences + (self._line > 0)
        freq: dict[int, int] = {}
        tokens = lost = 0
        get = freq.get
        unk = self._unk
        for piece, n in self._pieces.items():
            piece_ids = self._ids[piece]
            tokens += n * len(piece_ids)
            for i in piece_ids:
                freq[i] = get(i, 0) + n
            if unk is not None and unk in piece_ids:
                lost += n * self.lost_chars(piece)
        unknown = freq.get(unk, 0) if unk is not None else 0
        single = sum(n for word, n in self._words.items() if self.single(word))
        self._reset()
        return TokenCounts(tokens, attention, unknown, freq, sequences, lost, single)

    def single(self, word: str) -> bool:
        """Whether ``encode(word)`` — the word as a text of its own — gives exactly one id (cached).

        In isolation, not in its line: a byte-level tokenizer's ``" word"`` (with the space before
        it) is another token than ``"word"``, and the word alone is what the retention literature
        (Nayeem et al. 2025) counts. Only the distinct words are encoded, not the text again.
        """
        found = self._single.get(word)
        if found is None:
            found = self._single[word] = len(self.encoder.encode(word)) == 1
        return found

    def lost_chars(self, piece: str) -> int:
        """Characters of one pre-token (or line) that its unknown tokens stand for (cached)."""
        found = self._lost.get(piece)
        if found is None:
            found = self._lost[piece] = self.encoder.chars_lost(piece, self.ids(piece), pretoken=not self._by_line)
        return found


def count_text(tokenizer: Tokenizer, chunks: Iterable[str]) -> tuple[TextTally, TokenCounts]:
    """Both tallies of a text given as chunks that end at line boundaries (or as one string)."""
    tally, meter = TextTally(), TokenMeter(tokenizer)
    for chunk in chunks:
        tally.add(chunk)
        meter.add(chunk)
    return tally.finish(), meter.finish()


# ---- derived metrics --------------------------------------------------------------------------------
def embedding_rows(tokenizer: Tokenizer) -> int:
    """|V| as the embedding table counts it: every id below the largest one."""
    return len(tokenizer.vocab)


def usage(tokenizer: Tokenizer, counts: TokenCounts) -> VocabUsage:
    """The shared :class:`VocabUsage` (utilisation, never-used entries) from sparse frequencies."""
    freq = [0] * len(tokenizer.vocab)
    for i, n in counts.frequencies.items():
        freq[i] = n
    return VocabUsage(tuple(freq), counted_ids(tokenizer), counts.tokens, len(counts.frequencies))


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


@dataclass(frozen=True)
class Metrics:
    """The row a table shows for one tokenizer on one file (or on all files of one language)."""

    tokenizer: str
    label: str  # a file path or a language
    language: str
    text: TextTally
    counts: TokenCounts
    vocab_size: int
    d: int = DEFAULT_D
    eligible: int = 0  # vocabulary entries that take part in utilisation (no specials, no gaps)
    used: int = 0      # of those, how many occur
    alpha: float = DEFAULT_ALPHA  # Rényi α (derived at display time: not part of any cache key)
    basis: str = "declared"       # |V| of the efficiencies: "declared" or "observed"
    average_rank: float | None = None  # see workbench.core.expert_metrics.average_token_rank
    gini: float | None = None     # Gini of per-language token cost (a tokenizer's total row in Compare)

    @classmethod
    def of(cls, tokenizer: Tokenizer, name: str, label: str, language: str, text: TextTally,
           counts: TokenCounts, d: int = DEFAULT_D, *, alpha: float = DEFAULT_ALPHA,
           basis: str = "declared") -> Metrics:
        counted = counted_ids(tokenizer)
        used = sum(1 for i in counts.frequencies if 0 <= i < len(counted) and counted[i])
        rank = average_token_rank(counts.frequencies, ordinary_ranks(counted))
        return cls(name, label, language, text, counts, embedding_rows(tokenizer), d, sum(counted), used,
                   alpha, basis, rank)

    @property
    def tokens(self) -> int:
        return self.counts.tokens

    @property
    def chars_per_token(self) -> float | None:
        return _ratio(self.text.chars, self.tokens)

    @property
    def bytes_per_token(self) -> float | None:
        return _ratio(self.text.bytes, self.tokens)

    @property
    def fertility(self) -> float | None:
        """Tokens per word unit (whitespace word; character of an unsegmented script)."""
        return _ratio(self.tokens, self.text.units)

    @property
    def tokens_per_word(self) -> float | None:
        """Tokens per whitespace word (what ``workbench stats`` printed as fertility before 0.3)."""
        return _ratio(self.tokens, self.text.words)

    @property
    def unknown_rate(self) -> float | None:
        """Unknown tokens per token: what the tokenizer *spent* on unknown text, not how much it lost."""
        return _ratio(self.counts.unknown, self.tokens)

    @property
    def lost_chars(self) -> int:
        """Characters the unknown tokens stand for (at most the text's characters)."""
        return min(self.counts.lost_chars, self.text.chars)

    @property
    def chars_lost_to_unknown(self) -> float | None:
        """Share of the text's characters that map to unknown tokens: what decoding cannot give back.

        Two ``[UNK]`` that swallow two long words cost two tokens (a tiny unknown rate) but lose
        every character of those words; this is the number that says so. Counted in characters of
        the normalized text over the characters of the text as read (normalizers here change a
        character's count only for characters they drop or split, so the share stays ≤ 1).
        """
        return _ratio(self.lost_chars, self.text.chars)

    @property
    def loses_text(self) -> bool:
        """Some characters map to unknown tokens: compression figures are not comparable with a
        tokenizer that keeps its text (see :func:`lossy_note`)."""
        return self.lost_chars > 0

    @property
    def utilisation(self) -> float | None:
        return _ratio(self.used, self.eligible)

    @property
    def never_used(self) -> int:
        return self.eligible - self.used

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.d

    @property
    def basis_size(self) -> int:
        """|V| the efficiencies divide by: the declared size or the distinct ids that occur."""
        return basis_size(self.counts.frequencies, self.vocab_size, self.basis)

    @property
    def renyi_efficiency(self) -> float | None:
        return renyi_efficiency(self.counts.frequencies.values(), self.basis_size, self.alpha)

    @property
    def shannon_efficiency(self) -> float | None:
        return shannon_efficiency(self.counts.frequencies.values(), self.basis_size)

    @property
    def single_token_retention(self) -> float | None:
        """Share of the whitespace words (``str.split``, with repeats) that encode on their own as one id."""
        return _ratio(self.counts.single_words, self.text.words)

    def as_dict(self) -> dict:
        """The JSON shape of one row (see the README section "stats --json")."""
        def r(x: float | None, n: int = 4) -> float | None:
            return None if x is None else round(x, n)

        return {
            "tokenizer": self.tokenizer, "label": self.label, "language": self.language,
            "tokens": self.tokens, "chars": self.text.chars, "bytes": self.text.bytes,
            "lines": self.text.lines, "words": self.text.words, "word_units": self.text.units,
            "chars_per_token": r(self.chars_per_token), "bytes_per_token": r(self.bytes_per_token),
            "fertility": r(self.fertility), "tokens_per_word": r(self.tokens_per_word),
            "attention": self.counts.attention, "unknown": self.counts.unknown,
            "unknown_rate": r(self.unknown_rate, 6), "unknown_chars": self.lost_chars,
            "chars_lost_to_unknown": r(self.chars_lost_to_unknown, 6), "vocab_size": self.vocab_size,
            "vocab_used": self.used, "vocab_eligible": self.eligible,
            "utilisation": r(self.utilisation), "never_used": self.never_used,
            "d": self.d, "embedding_params": self.embedding_params,
            "renyi_efficiency": r(self.renyi_efficiency, 6), "renyi_alpha": self.alpha,
            "shannon_efficiency": r(self.shannon_efficiency, 6), "efficiency_vocab_basis": self.basis,
            "efficiency_vocab_size": self.basis_size,
            "single_token_retention": r(self.single_token_retention, 6), "single_token_words": self.counts.single_words,
            "average_token_rank": r(self.average_rank, 2), "gini_language_cost": r(self.gini, 6),
        }


def percent(share: float) -> str:
    """A share as the tables print it (``12.34 %``); a loss too small for two decimals stays visible."""
    if 0 < share < 0.00005:
        return "< 0.01 %"
    return f"{100 * share:.2f} %"


def lossy_note(m: Metrics) -> str:
    """``"loses 87.12 % of its characters to unknown tokens"``, or ``""`` when it keeps every one.

    The ranking rule: a tokenizer that loses characters is never ranked on compression as if it
    kept them. Its ``[UNK]`` stands for whole words at the price of one token, so its characters per
    token (and tokens per language, and tokens against a baseline) look better than any tokenizer
    that can give its text back. Wherever compression is compared — the ``stats`` tables, the
    Compare tab's tables and its bar chart — a row or bar of such a tokenizer carries this note,
    whatever the share (a rare character lost is still a character lost).
    """
    share = m.chars_lost_to_unknown
    if not m.loses_text or share is None:
        return ""
    return f"loses {percent(share)} of its characters to unknown tokens"


def combine(rows: Sequence[Metrics], tokenizer: Tokenizer, label: str) -> Metrics:
    """Several rows of one tokenizer added up (files of one language, or everything); α and the
    |V| basis are the first row's."""
    text, counts = TextTally(), TokenCounts()
    for row in rows:
        text += row.text
        counts += row.counts
    language = rows[0].language if rows and all(r.language == rows[0].language for r in rows) else "all"
    first = rows[0] if rows else None
    return Metrics.of(tokenizer, first.tokenizer if first else "", label, language, text, counts,
                      first.d if first else DEFAULT_D, alpha=first.alpha if first else DEFAULT_ALPHA,
                      basis=first.basis if first else "declared")


# ---- fairness ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fairness:
    """Tokens for a language relative to the baseline language, for one tokenizer.

    ``basis`` is ``"parallel"`` when the files are translations of each other: ``ratio`` is then the
    tokenization premium of Petrov et al. 2023, tokens(lang) / tokens(baseline) for the same
    content. Otherwise ``basis`` is ``"per-char"``: (tokens/char of lang) / (tokens/char of the
    baseline) — different texts, so only the density per character can be compared.
    """

    tokenizer: str
    language: str
    baseline: str
    basis: str
    ratio: float | None

    def as_dict(self) -> dict:
        return {"tokenizer": self.tokenizer, "language": self.language, "baseline": self.baseline,
                "basis": self.basis, "ratio": None if self.ratio is None else round(self.ratio, 4)}


def fairness(per_language: Sequence[Metrics], baseline: str, *, parallel: bool) -> list[Fairness]:
    """One :class:`Fairness` per (tokenizer, language) row, against that tokenizer's baseline row."""
    base = {m.tokenizer: m for m in per_language if m.language == baseline}
    out = []
    for m in per_language:
        b = base.get(m.tokenizer)
        ratio = None
        if b is not None:
            if parallel:
                ratio = _ratio(m.tokens, b.tokens)
            else:
                mine, theirs = _ratio(m.tokens, m.text.chars), _ratio(b.tokens, b.text.chars)
                ratio = None if mine is None or theirs is None else _ratio(mine, theirs)
        out.append(Fairness(m.tokenizer, m.language, baseline, "parallel" if parallel else "per-char", ratio))
    return out


def language_cost_gini(per_language: Sequence[Metrics], *, parallel: bool) -> float | None:
    """Gini of one tokenizer's token cost over its language rows (None for fewer than two languages).

    The cost of a language is its tokens when the files are translations of each other
    (``parallel``: the same content, as in the tokenization premium), else tokens per character
    (different texts: only the density can be compared). Languages without text are left out.
    """
    costs = [float(m.tokens) if parallel else m.tokens / m.text.chars for m in per_language if m.text.chars]
    return expert_gini(costs)


# ---- identity (for caches) ---------------------------------------------------------------------------
def tokenizer_identity(tokenizer: Tokenizer) -> str:
    """A SHA-256 over everything that decides the ids: settings, pieces, merges.

    Two tokenizers with equal identity encode every text the same way, so a cached count keyed by
    it (plus the file's fingerprint) can be shown again without encoding.
    """
    h = hashlib.sha256()
    h.update(json.dumps(tokenizer.settings(), sort_keys=True).encode("utf-8"))
    for piece in tokenizer.vocab:
        h.update(len(piece).to_bytes(4, "little"))
        h.update(piece)
    h.update(b"merges")
    for a, b, new in tokenizer.merges:
        h.update(f"{a},{b},{new};".encode("ascii"))
    if tokenizer.scores:
        h.update(repr(tokenizer.scores).encode("ascii"))
    return h.hexdigest()
