"""Extend a WordPiece or a Unigram tokenizer someone already ships: new pieces after the base's ids.

Neither family continues a merge list (see :mod:`workbench.core.extend` for BPE), so extension
means, per family:

**WordPiece** — *new pieces appended.* Every base id keeps its piece (and a base run's merges their
ranks); the pre-tokenizer, normalizer, continuation prefix and unknown token are the base's. The
extension corpus's characters the base cannot spell (``x`` at a word start, ``##x`` inside) are
appended first, as base symbols (``alphabet_added``; else those words stay ``[UNK]``). The
candidates are the pieces :class:`~workbench.core.wordpiece.WordPieceTrainer` (frequency score, as
``tokenizers``) makes on the extension corpus, in its merge order; a candidate that already is a
piece (``exists``), breaks ``--scripts``/``--chars``, or whose two parts are not pieces
(``parts``, only after a restriction refused a part) is skipped and counted. The first N are
appended; inference stays BERT's greedy longest match, so a new piece that a longer one always
shadows is never produced: the extension corpus is encoded with the extended vocabulary, such
pieces are dropped and the next candidates taken, until every new piece is produced at least once
(``rank_dead`` counts the dropped ones).

**Unigram** — *new pieces found by the Unigram trainer, base pieces kept, scores re-estimated.*
:class:`~workbench.core.unigram.UnigramTrainer` runs on the extension corpus (its EM and pruning
are the live plots); its pieces that the base lacks, best score first, are the candidates. The
scores of base ∪ new are re-estimated by EM on the extension corpus (starting from the base's and
the trainer's), giving each new piece its probability ``q`` there; with ``m`` the new pieces' mass,
every base piece keeps its probability scaled by ``1 − m`` (its score moves by the same
``log(1 − m)``, so base pieces keep their order) and the total stays the base's (``logsumexp`` of
the normal pieces' scores is unchanged: still a distribution). New pieces that Viterbi never uses
on the extension corpus are dropped and the next candidates taken, as for WordPiece. Base-domain
text can still segment differently where two base segmentations of different lengths were close:
the report's reference share measures it.

Left out: a WordPiece base with a likelihood-scored history is extended with frequency-ordered
candidates (inference ignores the order); Unigram's special/byte pieces are the base's only.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterator, Mapping, Sequence

from workbench.core.extend import PAD_CHOICES, RESERVED, ExtendConfig, TokenFilter, with_added
from workbench.core.model import MergeEvent, Tokenizer
from workbench.core.trainer import StepEvent, StepRecord, TrainLog
from workbench.core.unigram import _logaddexp as _lae  # the trainer's own log-space sum
from workbench.errors import ConfigError

#: Rounds of "drop the unused new pieces, take the next candidates" before the last drop.
DEAD_ROUNDS = 8
#: EM rounds re-estimating the scores of base ∪ new on the extension corpus.
EM_ROUNDS = 3


def _check(base: Tokenizer, family: str, config: ExtendConfig) -> None:
    if base.model != family:
        raise ConfigError("base", f"the base is a {base.model} tokenizer, not {family}")
    if config.add < 1:
        raise ConfigError("add", "say how many tokens to add: a whole number of at least 1")
    if config.pad_to not in PAD_CHOICES:
        raise ConfigError("pad_to", f"pad the vocabulary to a multiple of 64 or 128, not {config.pad_to}")


def _with_reserved(tok: Tokenizer, reserved: Sequence[str], scores: bool) -> Tokenizer:
    """``tok`` with the reserved special tokens after its last id (score 0, as specials have)."""
    if not reserved:
        return tok
    specials = dict(tok.special_tokens)
    vocab = list(tok.vocab)
    for token in reserved:
        specials[token] = len(vocab)
        vocab.append(token.encode("utf-8"))
    kept = tuple(tok.scores) + (0.0,) * len(reserved) if scores and tok.scores else tok.scores
    return dataclasses.replace(tok, vocab=tuple(vocab), special_tokens=specials, scores=kept,
                               pipeline=with_added(tok.pipeline, specials))


def _padding(size: int, pad_to: int) -> list[str]:
    if not pad_to:
        return []
    return [RESERVED.format(n) for n in range(-(-size // pad_to) * pad_to - size)]


# ---- WordPiece -------------------------------------------------------------------------------------
class WordPieceExtendTrainer:
    """New WordPiece pieces after ``base``'s ids (see the module docstring); a
    :class:`~workbench.core.trainer.Trainer` whose log starts with the base's merges, if any."""

    value_name = "frequency"

    def __init__(self, base: Tokenizer, word_counts: Mapping[str, int], config: ExtendConfig,
                 base_source: Mapping | None = None):
        from workbench.core.wordpiece import WordPieceModel

        _check(base, "wordpiece", config)
        self.extend_config = config
        self.base_source = dict(base_source or {})
        self.filter = TokenFilter(config.scripts, config.chars)
        self.prefix = base.continuing_prefix or "##"
        self.base_vocab_size = len(base.vocab)
        self.word_counts = {w: n for w, n in word_counts.items() if n > 0 and w}
        known = WordPieceModel(base).lookup
        missing: list[str] = []
        for word in self.word_counts:
            for text in (word[0], *(self.prefix + ch for ch in word[1:])):
                if text not in known:
                    known[text] = -1
                    missing.append(text)
        self.alphabet_added = len(missing)
        vocab = tuple(base.vocab) + tuple(t.encode("utf-8") for t in missing)
        self.base = dataclasses.replace(base, vocab=vocab, scores=tuple(base.scores) + (0.0,) * len(missing)
                                        if base.scores else ())
        self.base_merges = len(base.merges)
        made = {new for _a, _b, new in base.merges}
        self.initial_vocab = vocab
        self.initial_kinds = tuple("special" if i in base.special_ids else "merge" if i in made else "base"
                                   for i in range(len(vocab)))
        self.initial_size = len(vocab)
        self.special_tokens = dict(base.special_tokens)
        self.model = WordPieceModel(self.base)
        self.initial_token_count = self.token_count = sum(
            n * len(self.model.encode_word(w)) for w, n in self.word_counts.items())
        self.word_types = len(self.word_counts)
        self.target = config.add
        self.log = TrainLog(list(vocab), list(base.merges), [0] * self.base_merges,
                            [self.token_count] * self.base_merges)
        self.skipped: dict[str, int] = {"exists": 0, "scripts": 0, "chars": 0, "parts": 0}
        self.rank_dead = 0
        self.intermediate_only = 0
        self.reserved: list[str] = []
        self.new_pieces: list[str] = []

    def _candidates(self, should_stop: Callable[[], bool] | None) -> Iterator[tuple[str, str, str, int]]:
        """``(piece, left part, right part, pair count)`` in the trainer's merge order, restrictions applied."""
        from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer

        base = self.base
        inner = WordPieceTrainer(self.word_counts, WordPieceConfig(
            merges=10 * self.extend_config.add + 1000, min_frequency=self.extend_config.min_frequency,
            special_tokens=(base.unk_token or "[UNK]",), score="frequency", pretokenizer=base.pretokenizer,
            normalizer=tuple(base.normalizer), continuing_prefix=self.prefix, unk_token=base.unk_token or "[UNK]",
            max_input_chars_per_word=base.max_input_chars_per_word))
        lookup = self.model.lookup
        refused: set[str] = set()
        for event in inner.run(should_stop):
            piece = inner.pieces[event.new_id]
            left, right = inner.pieces[event.left], inner.pieces[event.right]
            if piece in lookup:
                self.skipped["exists"] += 1
                continue
            why = self.filter.reason(piece.removeprefix(self.prefix).encode("utf-8"))
            if why is None and (left in refused or right in refused):
                why = "parts"
            if why is not None:
                self.skipped[why] += 1
                refused.add(piece)
                continue
            yield piece, left, right, event.frequency

    def _usage(self, chosen: Sequence[str]) -> dict[str, int]:
        """Times each of ``chosen`` is emitted when the extension corpus is encoded with base + chosen."""
        from workbench.core.wordpiece import WordPieceModel

        tok = dataclasses.replace(self.base, vocab=self.base.vocab + tuple(p.encode("utf-8") for p in chosen),
                                  scores=())
        model = WordPieceModel(tok)
        first = len(self.base.vocab)
        used = [0] * len(chosen)
        for word, n in self.word_counts.items():
            for token_id in model.encode_word(word):
                if token_id >= first:
                    used[token_id - first] += n
        return dict(zip(chosen, used))

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[MergeEvent]:
        """Choose the new pieces (no dead ones), then append them one by one (the live plots)."""
        stop = should_stop or (lambda: False)
        stream = self._candidates(stop)
        parts: dict[str, tuple[str, str, int]] = {}
        chosen: list[str] = []
        exhausted = False

        def refill() -> bool:
            while len(chosen) < self.extend_config.add:
                found = next(stream, None)
                if found is None:
                    return True
                piece, left, right, count = found
                parts[piece] = (left, right, count)
                chosen.append(piece)
            return False

        exhausted = refill()
        for round_ in range(DEAD_ROUNDS + 1):
            if stop():
                break
            usage = self._usage(chosen)
            dead = {p for p in chosen if not usage[p]}
            # a piece no two earlier pieces spell has no merge to record: dropped and counted too
            orphans = self._orphans([p for p in chosen if p not in dead], parts)
            if not dead and not orphans:
                if exhausted or len(chosen) >= self.extend_config.add:
                    break
            self.rank_dead += len(dead)
            self.skipped["parts"] += len(orphans)
            chosen[:] = [p for p in chosen if p not in dead and p not in orphans]
            if round_ < DEAD_ROUNDS:
                exhausted = refill() or exhausted
        yield from self._append(chosen, parts, stop)
        if self.extend_config.pad_to:
            self.reserved = _padding(len(self.log.vocab), self.extend_config.pad_to)

    def _orphans(self, chosen: Sequence[str], parts: Mapping[str, tuple[str, str, int]]) -> set[str]:
        """The pieces of ``chosen`` that :meth:`_split` could not record, appended in this order."""
        lookup = self.model.lookup
        added = []
        out = set()
        try:
            for piece in chosen:
                if self._split(piece, *parts[piece][:2]) is None:
                    out.add(piece)
                else:
                    lookup[piece] = len(lookup) + 1 << 40  # a placeholder id: "exists"
                    added.append(piece)
        finally:
            for piece in added:
                del lookup[piece]
        return out

    def _append(self, chosen: Sequence[str], parts: Mapping[str, tuple[str, str, int]],
                stop: Callable[[], bool]) -> Iterator[MergeEvent]:
        """Append ``chosen`` in order: each a merge of two pieces that exist before it, the corpus
        token count after it (re-encoding only the words that hold it)."""
        log, model, prefix = self.log, self.model, self.prefix
        lookup = model.lookup
        words = list(self.word_counts)
        lengths = {w: len(model.encode_word(w)) for w in words}
        by_char: dict[str, list[str]] = {}
        for w in words:
            for ch in set(w):
                by_char.setdefault(ch, []).append(w)
        for piece in chosen:
            if stop():
                return
            left, right, count = parts[piece]
            pair = self._split(piece, left, right)
            if pair is None:  # not after _orphans; kept as a guard
                self.skipped["parts"] += 1
                continue
            new = len(log.vocab)
            log.vocab.append(piece.encode("utf-8"))
            lookup[piece] = new
            inner = piece.startswith(prefix)
            body = piece[len(prefix):] if inner else piece
            model.longest = max(model.longest, len(body))
            rare = min(set(body), key=lambda ch: len(by_char.get(ch, ())))
            for w in by_char.get(rare, ()):
                if (body in w[1:]) if inner else w.startswith(body):
                    length = len(model.encode_word(w))
                    self.token_count += self.word_counts[w] * (length - lengths[w])
                    lengths[w] = length
            log.merges.append((lookup[pair[0]], lookup[pair[1]], new))
            log.frequencies.append(count)
            log.token_counts.append(self.token_count)
            self.new_pieces.append(piece)
            yield MergeEvent(len(log.merges), lookup[pair[0]], lookup[pair[1]], new, count, len(log.vocab),
                             self.token_count)

    def _split(self, piece: str, left: str, right: str) -> tuple[str, str] | None:
        """The two existing pieces ``piece`` is recorded as joining: the trainer's, else the split
        with the longest left part whose both sides are pieces."""
        lookup = self.model.lookup
        if lookup.get(left, -1) >= 0 and lookup.get(right, -1) >= 0:
            return left, right
        head = self.prefix if piece.startswith(self.prefix) else ""
        body = piece[len(head):]
        for k in range(len(body) - 1, 0, -1):
            a, b = head + body[:k], self.prefix + body[k:]
            if lookup.get(a, -1) >= 0 and lookup.get(b, -1) >= 0:
                return a, b
        return None

    def tokenizer(self, name: str = "") -> Tokenizer:
        vocab = tuple(self.log.vocab)
        scores = tuple(self.base.scores) + (0.0,) * (len(vocab) - len(self.base.vocab)) if self.base.scores else ()
        tok = dataclasses.replace(self.base, vocab=vocab, merges=tuple(self.log.merges), scores=scores,
                                  name=name or self.base.name)
        return _with_reserved(tok, self.reserved, scores=True)

    def extra_settings(self) -> dict:
        return {"extend": {**self.extend_config.settings(), "family": "wordpiece", "base": self.base_source,
                           "base_merges": self.base_merges, "base_vocab_size": self.base_vocab_size,
                           "alphabet_added": self.alphabet_added, "skipped": dict(self.skipped),
                           "rank_dead": self.rank_dead, "intermediate_only": 0, "reserved": len(self.reserved)}}


# ---- Unigram ---------------------------------------------------------------------------------------
class UnigramExtendTrainer:
    """New Unigram pieces after ``base``'s ids, scores re-estimated (see the module docstring);
    ``word_counts`` are SentencePiece words (:func:`~workbench.tasks.models.unigram_words`)."""

    value_name = "log_likelihood"

    def __init__(self, base: Tokenizer, word_counts: Mapping[str, int], config: ExtendConfig,
                 base_source: Mapping | None = None):
        from workbench.core.unigram import UnigramModel

        _check(base, "unigram", config)
        self.base = base
        self.base_model = UnigramModel(base)
        self.extend_config = config
        self.base_source = dict(base_source or {})
        self.filter = TokenFilter(config.scripts, config.chars)
        self.words = {w: n for w, n in word_counts.items() if n > 0 and w}
        self.base_vocab_size = len(base.vocab)
        self.initial_vocab = tuple(base.vocab)
        self.initial_kinds = tuple("special" if i in base.special_ids else "base" for i in range(len(base.vocab)))
        self.initial_size = len(base.vocab)
        self.special_tokens = dict(base.special_tokens)
        self.initial_token_count = self.token_count = sum(
            n * len(self.base_model.encode_word(w)) for w, n in self.words.items())
        self.word_types = len(self.words)
        self.target = 0
        self.log = TrainLog(list(base.vocab))
        self.skipped: dict[str, int] = {"exists": 0, "scripts": 0, "chars": 0}
        self.rank_dead = 0
        self.reserved: list[str] = []
        self.new_pieces: list[str] = []
        self.new_mass = 0.0
        self._final: Tokenizer | None = None

    def _normal_ids(self, tok: Tokenizer) -> list[int]:
        from workbench.core.unigram import UnigramModel

        return sorted(UnigramModel(tok).score)

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[StepEvent]:
        from workbench.core.unigram import UnigramConfig, UnigramTrainer

        stop = should_stop or (lambda: False)
        nchars = len({ch for w in self.words for ch in w})
        inner = UnigramTrainer(self.words, UnigramConfig(
            vocab_size=3 + nchars + 2 * self.extend_config.add + 8, pretokenizer=self.base.pretokenizer,
            normalizer=tuple(self.base.normalizer)), should_stop=stop)
        step = 0
        try:
            for event in inner.run(stop):
                step += 1
                # the plots show the base plus the trainer's pool of candidates, then the extended model
                size = self.base_vocab_size + event.vocab_size
                phase = "prune" if event.phase == "final" else event.phase  # the one final cut is the extension's
                self.log.steps.append(StepRecord(step, phase, size, event.token_count, event.log_likelihood))
                yield StepEvent(step, size, event.token_count, event.log_likelihood)
        except ConfigError:
            pass  # a corpus too small for the trainer's size: its pieces alive are the candidates
        if stop():
            return
        try:
            trained = inner.tokenizer()
            pairs = [(trained.vocab[i].decode("utf-8"), trained.scores[i]) for i in range(len(trained.vocab))
                     if i not in trained.special_ids]
        except ConfigError:
            pairs = sorted(inner.piece_probabilities().items(), key=lambda kv: (-kv[1], kv[0]))
            pairs = [(p, math.log(v)) for p, v in pairs]
        del inner  # its lattices are the largest thing alive: gone before the scores are re-estimated
        known = self.base_model.piece_id
        candidates: list[tuple[str, float]] = []
        for piece, score in sorted(pairs, key=lambda kv: (-kv[1], kv[0])):
            if piece in known:
                self.skipped["exists"] += 1
                continue
            why = self.filter.reason(piece.encode("utf-8"))
            if why is not None:
                self.skipped[why] += 1
                continue
            candidates.append((piece, score))
        add = self.extend_config.add
        chosen, rest = candidates[:add], candidates[add:]
        tok = self.base
        for round_ in range(DEAD_ROUNDS + 1):
            if stop():
                return
            tok, used = self._estimate(chosen)
            dead = [c for c, n in zip(chosen, used) if not n]
            if not dead:
                break
            self.rank_dead += len(dead)
            chosen = [c for c, n in zip(chosen, used) if n]
            if round_ < DEAD_ROUNDS:  # the next candidates, best score first, take the dropped ones' places
                room = add - len(chosen)
                chosen.extend(rest[:room])
                rest = rest[room:]
        else:
            tok, used = self._estimate(chosen)
        self.new_pieces = [p for p, _s in chosen]
        self.reserved = _padding(len(tok.vocab), self.extend_config.pad_to)
        self._final = _with_reserved(tok, self.reserved, scores=True)
        model = self._model()
        self.token_count = sum(n * len(model.encode_word(w)) for w, n in self.words.items())
        step += 1
        self.log.steps.append(StepRecord(step, "final", len(self._final.vocab), self.token_count, math.nan))
        yield StepEvent(step, len(self._final.vocab), self.token_count, math.nan)

    def _model(self):
        from workbench.core.unigram import UnigramModel

        assert self._final is not None
        return UnigramModel(self._final)

    def _estimate(self, chosen: Sequence[tuple[str, float]]) -> tuple[Tokenizer, list[int]]:
        """Base + ``chosen`` with re-estimated scores, and how often Viterbi uses each of ``chosen``."""
        from workbench.core.unigram import UnigramModel, to_float32

        base = self.base
        first = len(base.vocab)
        base_ids = self._normal_ids(base)
        base_logz = _logsumexp([base.scores[i] for i in base_ids])
        vocab = base.vocab + tuple(p.encode("utf-8") for p, _s in chosen)
        # start: the base's probabilities (normalized) and the trainer's for the new pieces, half each
        start = list(base.scores) + [s for _p, s in chosen]
        for i in base_ids:
            start[i] = base.scores[i] - base_logz + math.log(0.5)
        for k in range(first, len(vocab)):
            start[k] += math.log(0.5)
        tok = dataclasses.replace(base, vocab=vocab, scores=tuple(start))
        ids = base_ids + list(range(first, len(vocab)))
        lattices = _lattices(UnigramModel(tok), self.words)  # the pieces stay: only their scores change
        for _ in range(EM_ROUNDS):
            expected = _expected_counts(lattices, tok.scores, len(vocab))
            total = sum(expected[i] for i in ids) or 1.0
            q = {i: expected[i] / total for i in range(first, len(vocab))}
            new_mass = min(sum(q.values()), 1 - 1e-6)
            scores = list(base.scores)
            shift = math.log(1 - new_mass)
            for i in base_ids:
                scores[i] = to_float32(base.scores[i] + shift)
            floor = min(scores[i] for i in base_ids) if base_ids else -20.0
            for i in range(first, len(vocab)):
                scores.append(to_float32(math.log(q[i]) + base_logz) if q[i] > 0 else floor)
            tok = dataclasses.replace(base, vocab=vocab, scores=tuple(scores))
        self.new_mass = new_mass if chosen else 0.0
        model = UnigramModel(tok)
        used = [0] * len(chosen)
        for w, n in self.words.items():
            for token_id in model.encode_word(w):
                if token_id >= first:
                    used[token_id - first] += n
        return tok, used

    def tokenizer(self, name: str = "") -> Tokenizer:
        tok = self._final if self._final is not None else self.base
        return dataclasses.replace(tok, name=name or self.base.name)

    def extra_settings(self) -> dict:
        return {"extend": {**self.extend_config.settings(), "family": "unigram", "base": self.base_source,
                           "base_merges": 0, "base_vocab_size": self.base_vocab_size, "alphabet_added": 0,
                           "skipped": dict(self.skipped), "rank_dead": self.rank_dead, "intermediate_only": 0,
                           "reserved": len(self.reserved), "new_mass": round(self.new_mass, 6),
                           "base_scores": list(self.base.scores)}}


def _logsumexp(values: Sequence[float]) -> float:
    if not values:
        return 0.0
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def _lattices(model, words: Mapping[str, int]) -> list[tuple[int, int, list[tuple[int, int, int]]]]:
    """``(count, length, [(start, end, piece id)])`` of every word: its pieces, sorted by start
    (unknown characters left out: a word needing one adds nothing to the expected counts)."""
    return [(count, len(word), [(s, e, p) for s, e, p, _score in model.edges(word) if p >= 0])
            for word, count in words.items()]


def _expected_counts(lattices: Sequence[tuple[int, int, list[tuple[int, int, int]]]], scores: Sequence[float],
                     size: int) -> list[float]:
    """Expected piece counts over all segmentations of every word (forward-backward in log space)."""
    expected = [0.0] * size
    exp = math.exp
    for count, n, edges in lattices:
        alpha = [-math.inf] * (n + 1)
        alpha[0] = 0.0
        for s, e, p in edges:
            alpha[e] = _lae(alpha[e], alpha[s] + scores[p])
        z = alpha[n]
        if z == -math.inf:
            continue
        beta = [-math.inf] * (n + 1)
        beta[n] = 0.0
        for s, e, p in reversed(edges):
            beta[s] = _lae(beta[s], scores[p] + beta[e])
        for s, e, p in edges:
            expected[p] += count * exp(alpha[s] + scores[p] + beta[e] - z)
    return expected

