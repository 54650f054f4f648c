"""Continue training a BPE tokenizer someone already ships: new merges after the base's last one.

Extension keeps the base exactly: every base id keeps its bytes, every base merge its rank, the
pre-tokenizer and normalizer are the base's. The extension corpus is counted with the base's
pre-tokenizer, each distinct pre-token is encoded **with the base** (its own rule: merge ranks for
``tokenizer.json``/GPT-2/our runs, byte ranks for ``.tiktoken``), and BPE continues on those id
sequences with the ordinary trainer (:class:`~workbench.core.bpe.BpeTrainer`, its ``refuse`` hook).
New ids follow the base's largest id; new merges follow the base's last merge.

**No rank-dead tokens.** A candidate is never merged (and is counted, by reason) when

* ``exists`` — its bytes already are a token (a base one, or an earlier new one): a second id for
  the same bytes could never be produced by rank-based encoding, or would shadow the first;
* ``scripts`` / ``chars`` — it falls outside the restriction the user chose (:class:`TokenFilter`).

After training, :func:`dead_tokens` encodes the extension corpus with the extended tokenizer and
lists new ids never produced — the tokens a later merge or the base's byte ranks always pre-empt.
:class:`ExtendTrainer` trains with a margin and drops them (ids renumbered, order kept) before the
run is stored, so a finished extension has none; the number dropped is reported.

The script restriction guarantees more than "mostly": a new token must hold at least one *whole*
character of a chosen script, so it can only occur in text containing that character — text
without those scripts encodes exactly as with the base. Partial UTF-8 at a token's edges (byte-level
BPE splits CJK characters) is allowed; whole characters other than the chosen scripts must be
Common or Inherited (spaces, punctuation, digits, marks).

WordPiece and Unigram bases have their own meaning of "extend": :mod:`workbench.core.extend_pieces`.
Left out: changing any base token — that is trimming's job.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import regex

from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.encoder import Encoder, _bytes_rule_heap, bpe_merge_rule
from workbench.core.metrics import encode_pretoken
from workbench.core.model import MergeEvent, Tokenizer
from workbench.core.trainer import TrainLog
from workbench.errors import ConfigError

CHAR_CLASSES = ("digits", "code")
PAD_CHOICES = (0, 64, 128)
RESERVED = "<|reserved_{}|>"


@dataclass(frozen=True)
class ExtendConfig:
    """How far to extend and what a new token may hold."""

    add: int
    min_frequency: int = 2
    scripts: tuple[str, ...] = ()  # Unicode script names (Cyrillic, Han …); empty: any
    chars: str = ""  # "" | "digits" | "code"
    pad_to: int = 0  # 0, 64 or 128: reserved special tokens up to a multiple of it

    def settings(self) -> dict:
        return {"add": self.add, "min_frequency": self.min_frequency, "scripts": list(self.scripts),
                "chars": self.chars, "pad_to": self.pad_to}


class TokenFilter:
    """Which byte strings may become new tokens (the script and character-class restrictions)."""

    def __init__(self, scripts: Sequence[str] = (), chars: str = ""):
        self.scripts = tuple(scripts)
        self.chars = chars
        if chars and chars not in CHAR_CLASSES:
            raise ConfigError("chars", f"unknown character class {chars!r}: use {' or '.join(CHAR_CLASSES)}")
        self._script = None
        if self.scripts:
            parts = []
            for name in self.scripts:
                try:
                    regex.compile(rf"\p{{Script={name}}}")
                except regex.error:
                    raise ConfigError("scripts", f"unknown Unicode script {name!r}: use names such as "
                                      "Latin, Cyrillic, Greek, Han, Arabic") from None
                parts.append(rf"\p{{Script={name}}}")
            self._script = regex.compile("|".join(parts))
        self._neutral = regex.compile(r"[\p{Script=Common}\p{Script=Inherited}]")
        self._digit = regex.compile(r"[\p{Nd}\s]")

    @property
    def active(self) -> bool:
        return bool(self.scripts or self.chars)

    def reason(self, piece: bytes) -> str | None:
        """``None`` when ``piece`` may be a new token, else the restriction it breaks."""
        if self._script is not None:
            whole = whole_characters(piece)
            if not any(self._script.match(ch) for ch in whole) or not all(
                    self._script.match(ch) or self._neutral.match(ch) for ch in whole):
                return "scripts"
        if self.chars:
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError:
                return "chars"
            if self.chars == "digits":
                ok = all(self._digit.match(ch) for ch in text) and any(ch.isdigit() for ch in text)
            else:  # code: printable ASCII and whitespace
                ok = all(32 <= ord(ch) < 127 or ch in "\t\n\r" for ch in text)
            if not ok:
                return "chars"
        return None


def with_added(pipeline, specials: Mapping[str, int]):
    """A ``tokenizer.json`` base's pipeline (kept whole: its added tokens keep their ids and flags)
    with the specials it does not know yet (an extension's reserved ones) added as plain special
    tokens, so the encoder and the exported file match them alike. None stays None."""
    if pipeline is None:
        return None
    from workbench.core.pipeline import AddedToken

    known = {t.content for t in pipeline.added_tokens}
    extra = tuple(AddedToken(i, t, special=True) for t, i in sorted(specials.items(), key=lambda kv: kv[1])
                  if t not in known)
    return dataclasses.replace(pipeline, added_tokens=pipeline.added_tokens + extra) if extra else pipeline


def whole_characters(piece: bytes) -> str:
    """The characters whose every byte is in ``piece`` (partial ones at either edge left out)."""
    start = 0
    while start < len(piece) and start < 3 and 0x80 <= piece[start] < 0xC0:
        start += 1
    end = len(piece)
    # Drop an incomplete sequence at the end: find the last lead byte and check its length.
    k = end - 1
    while k >= start and 0x80 <= piece[k] < 0xC0 and end - k < 4:
        k -= 1
    if k >= start and piece[k] >= 0xC0:
        need = 2 if piece[k] < 0xE0 else 3 if piece[k] < 0xF0 else 4
        if end - k < need:
            end = k
    return piece[start:end].decode("utf-8", "ignore")


class ExtendTrainer(BpeTrainer):
    """BPE continued from ``base`` on a ``{pre-token: count}`` table counted with the base's
    pre-tokenizer and normalizer. A :class:`~workbench.core.trainer.Trainer`: its log starts with
    the base's merges (ranks kept) and grows by the new ones."""

    def __init__(self, base: Tokenizer, word_counts: Mapping[str, int], config: ExtendConfig,
                 base_source: Mapping | None = None):
        if base.model != "bpe":
            raise ConfigError("base", f"the base is a {base.model} tokenizer: extension continues BPE merges "
                              "(byte-level or character BPE)")
        if config.add < 1:
            raise ConfigError("add", "say how many tokens to add: a whole number of at least 1")
        if config.pad_to not in PAD_CHOICES:
            raise ConfigError("pad_to", f"pad the vocabulary to a multiple of 64 or 128, not {config.pad_to}")
        self.base = base
        self.base_source = dict(base_source or {})
        self.extend_config = config
        self.filter = TokenFilter(config.scripts, config.chars)
        self.config = TrainConfig(units=base.units, merges=config.add, min_frequency=config.min_frequency,
                                  pretokenizer=base.pretokenizer, normalizer=tuple(base.normalizer))
        self.base_vocab_size = len(base.vocab)
        self.alphabet_added = 0
        if base.units == "chars":
            # Character BPE on a new script: its characters join the alphabet first (new base ids),
            # as a character-level trainer would have started from them.
            known = base.id_of_piece
            prepare = base.pre.prepare
            missing = sorted({ch for word in word_counts for ch in prepare(word)
                              if ch.encode("utf-8") not in known})
            if missing:
                base = dataclasses.replace(base, vocab=base.vocab + tuple(ch.encode("utf-8") for ch in missing))
                self.base = base
                self.alphabet_added = len(missing)
        encoder = Encoder(base)
        self.words = []
        self.freqs = []
        for word, count in word_counts.items():
            if count > 0 and word:
                self.words.append(list(encode_pretoken(encoder, word)))
                self.freqs.append(count)
        self.base_words = [tuple(w) for w in self.words]  # the base's split of each pre-token
        self.word_counts = word_counts
        base_merges = list(base.merges)
        self.base_merges = len(base_merges)
        self.token_count = sum(f * len(w) for w, f in zip(self.words, self.freqs))
        self.initial_token_count = self.token_count
        self.word_types = len(self.words)
        self.log = TrainLog(list(base.vocab), base_merges, [0] * len(base_merges),
                            [self.token_count] * len(base_merges))
        self.vocab = self.log.vocab
        self.merges = self.log.merges
        self.frequencies = self.log.frequencies
        self.token_counts = self.log.token_counts
        self.special_tokens = dict(base.special_tokens)
        self.initial_size = len(self.vocab)
        self.initial_vocab = tuple(self.vocab)
        made = {new for _a, _b, new in base_merges}
        self.initial_kinds = tuple("special" if i in base.special_ids else "merge" if i in made else "base"
                                   for i in range(self.initial_size))
        self.target = config.add
        self._piece_id = {p: i for i, p in enumerate(self.vocab) if p and i not in base.special_ids}
        self._unit_len = [max(1, len(p)) for p in self.vocab]
        self.skipped: dict[str, int] = {"exists": 0, "scripts": 0, "chars": 0}
        self.reserved: list[str] = []
        self.rank_dead = self.intermediate_only = 0
        self.refuse = self._refuse
        self.refit = self._tiktoken_refit if base.merge_rule == "bytes" else None

    def _refuse(self, left: int, right: int, piece: bytes) -> bool:
        if piece in self._piece_id:
            self.skipped["exists"] += 1
            return True
        why = self.filter.reason(piece)
        if why is not None:
            self.skipped[why] += 1
            return True
        return False

    def _tiktoken_refit(self, symbols: list[int]) -> list[int] | None:
        """tiktoken's rule on a word after a merge: when two neighbours' bytes are already a token
        (a base one, or an earlier new one), the rule joins them at once (lower rank)."""
        vocab, ranks = self.vocab, self._piece_id
        for i in range(len(symbols) - 1):
            if vocab[symbols[i]] + vocab[symbols[i + 1]] in ranks:
                break
        else:
            return None
        parts = _bytes_rule_heap(b"".join(vocab[i] for i in symbols), ranks)
        return [ranks[part] for part in parts]

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[MergeEvent]:
        """Merge up to N times, then pad with reserved specials if asked."""
        yield from super().run(should_stop)
        made, emitted = continued_usage(self.tokenizer(), self.base_words, self.freqs, self.initial_size)
        self.rank_dead = sum(1 for m in made if not m)
        self.intermediate_only = sum(1 for m, e in zip(made, emitted) if m and not e)
        if self.extend_config.pad_to:
            size = len(self.vocab)
            padded = -(-size // self.extend_config.pad_to) * self.extend_config.pad_to
            self.reserved = [RESERVED.format(n) for n in range(padded - size)]

    def tokenizer(self, name: str = "") -> Tokenizer:
        """The base with the new merges (and the reserved specials) after it."""
        base = self.base
        specials = dict(base.special_tokens)
        vocab = list(self.vocab)
        for token in self.reserved:
            specials[token] = len(vocab)
            vocab.append(token.encode("utf-8"))
        return dataclasses.replace(base, vocab=tuple(vocab), merges=tuple(self.merges), special_tokens=specials,
                                   name=name or base.name, pipeline=with_added(base.pipeline, specials))

    def extra_settings(self) -> dict:
        """What the run records beside the usual settings: the extension and what it skipped."""
        return {"extend": {**self.extend_config.settings(), "base": self.base_source, "base_merges": self.base_merges,
                           "base_vocab_size": self.base_vocab_size, "alphabet_added": self.alphabet_added,
                           "skipped": dict(self.skipped), "rank_dead": self.rank_dead,
                           "intermediate_only": self.intermediate_only,
                           "reserved": len(self.reserved)}}


def fired_tokens(tokenizer: Tokenizer, word_counts: Mapping[str, int], first_new: int, *,
                 encoder: Encoder | None = None) -> tuple[list[int], list[int]]:
    """``(made, emitted)`` for each id from ``first_new`` on when ``tokenizer`` encodes the
    ``{pre-token: count}`` table: times it is made at all (kept, or joined further by a later
    merge) and times it is in the output. An id made zero times is rank-dead on this corpus.

    ``emitted`` comes from the encoder itself. ``made`` adds, under the merge-pair rule, each
    token's ancestors (exact: a new id arises from its own merge only); under tiktoken's byte-rank
    rule, for the few ids never emitted, the joins made while encoding the words that hold their
    bytes (the encoder's loop, recorded). For ids emitted it is a lower bound.
    """
    size = len(tokenizer.vocab) - first_new
    emitted = [0] * size
    encoder = encoder if encoder is not None else Encoder(tokenizer)  # a caller's, with its caches
    for word, count in word_counts.items():
        if count > 0 and word:
            for token_id in encode_pretoken(encoder, word):
                if token_id >= first_new:
                    emitted[token_id - first_new] += count
    made = list(emitted)
    if tokenizer.merge_rule != "bytes":
        parents = {new: (a, b) for a, b, new in tokenizer.merges if new >= first_new}
        for new in range(len(tokenizer.vocab) - 1, first_new - 1, -1):  # children before parents
            for part in parents.get(new, ()):
                if part >= first_new:
                    made[part - first_new] += made[new - first_new]
        return made, emitted
    specials = tokenizer.special_ids
    pending = {tokenizer.vocab[i]: i for i in range(first_new, len(tokenizer.vocab))
               if not made[i - first_new] and i not in specials and tokenizer.vocab[i]}
    if pending:
        ranks = encoder._piece_to_id  # noqa: SLF001 - the ranks the encoder itself merges by
        prepare = tokenizer.pre.prepare
        for word, count in word_counts.items():
            data = prepare(word).encode("utf-8")
            if count > 0 and any(piece in data for piece in pending):
                for token_id in _join_by_rank([data[k:k + 1] for k in range(len(data))], ranks, first_new)[1]:
                    if not emitted[token_id - first_new]:
                        made[token_id - first_new] += count
    return made, emitted


def continued_usage(tokenizer: Tokenizer, base_words: Sequence[Sequence[int]], freqs: Sequence[int],
                    first_new: int) -> tuple[list[int], list[int]]:
    """:func:`fired_tokens` for words given as the base's split (the trainer's start), in a fraction
    of the time: every base rank is below every new one, so encoding with the extension first
    reaches the base's split and then goes on from there — by the same rule the encoder applies."""
    size = len(tokenizer.vocab) - first_new
    made, emitted = [0] * size, [0] * size
    vocab = tokenizer.vocab
    if tokenizer.merge_rule == "bytes":
        new_pieces = {vocab[i]: i for i in range(first_new, len(vocab)) if i not in tokenizer.special_ids}
        ranks = Encoder(tokenizer)._piece_to_id  # noqa: SLF001 - the ranks the encoder itself merges by
        for word, count in zip(base_words, freqs):
            if not any(vocab[a] + vocab[b] in new_pieces for a, b in zip(word, word[1:])):
                continue
            parts, joined = _join_by_rank([vocab[i] for i in word], ranks, first_new)
            for token_id in joined:
                made[token_id - first_new] += count
            for part in parts:
                token_id = ranks[part]
                if token_id >= first_new:
                    emitted[token_id - first_new] += count
        return made, emitted
    pair_rank = {(a, b): (rank, new) for rank, (a, b, new) in enumerate(tokenizer.merges) if new >= first_new}
    for word, count in zip(base_words, freqs):
        if not any(pair in pair_rank for pair in zip(word, word[1:])):
            continue
        for token_id in bpe_merge_rule(list(word), pair_rank):
            if token_id >= first_new:
                emitted[token_id - first_new] += count
    made = list(emitted)
    parents = {new: (a, b) for a, b, new in tokenizer.merges if new >= first_new}
    for new in range(len(vocab) - 1, first_new - 1, -1):
        for parent in parents.get(new, ()):
            if parent >= first_new:
                made[parent - first_new] += made[new - first_new]
    return made, emitted


def _join_by_rank(parts: list[bytes], ranks: Mapping[bytes, int], first_new: int) -> tuple[list[bytes], list[int]]:
    """tiktoken's loop from ``parts`` on: the final parts, and every id from ``first_new`` on made."""
    get = ranks.get
    parts = list(parts)
    pair = [get(a + b, _NONE) for a, b in zip(parts, parts[1:])]
    made = []
    while pair:
        best = min(pair)
        if best == _NONE:
            break
        if best >= first_new:
            made.append(best)
        i = pair.index(best)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
        del pair[i]
        if i < len(pair):
            pair[i] = get(parts[i] + parts[i + 1], _NONE)
        if i > 0:
            pair[i - 1] = get(parts[i - 1] + parts[i], _NONE)
    return parts, made



_NONE = 1 << 62
