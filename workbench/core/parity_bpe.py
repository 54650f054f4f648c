"""Parity-aware BPE: each merge helps the language the vocabulary serves worst so far.

Foroutan, Meister, Paul, Niklaus, Ahmadi, Bosselut and Sennrich, "Parity-aware Byte Pair
Encoding: Improving Cross-lingual Fairness in Tokenization", 2025 (arXiv 2508.04796).

The training text comes in languages (``{language: {pre-token: count}}``), with a *parallel*
development set (the same content in every language, ``{language: {pre-token: count}}``). Each
step finds the language whose development text is compressed worst — the one that takes the most
tokens under the merges so far, as the paper's code does (``max(enumerate(lengths))``): the same
content costing more tokens is what parity removes — and makes the most frequent pair *of that
language's* training text; the merge applies to every language (one shared vocabulary).
Characters per token would not do: on parallel text Chinese has about half the characters of
English, so it would look worst while it takes the fewest tokens, and would take every merge. The hybrid of the paper: the
first ``global_merges`` merges are plain BPE's (the most frequent pair over all languages), the
rest parity-driven. With one language, or with ``global_merges`` at least the merges made, it is
plain BPE on the union of the texts (both tested against :class:`~workbench.core.bpe.BpeTrainer`).

Ties between equally frequent pairs follow tokenizers' rule (``tie_break="hf"``: the smallest ids;
the first-seen rule of one ordered text has no single meaning over several languages). Ties between
languages with as many tokens go to the one named first.

``chars_per_token`` after each merge (per language, on the development set) is
:attr:`ParityBpeTrainer.curves`, and the development set's tokens per language
:attr:`ParityBpeTrainer.token_curves`; the log's ``extras`` carry both to the store with every merge
(``{"parity_cpt": {language: characters per token}, "parity_tokens": {language: tokens}}`` in
``merges.extra``, as the run's ``parity_chars_per_token`` and ``parity_dev_tokens``), so the Train tab
draws one curve per language, live and reopened.
"""

from __future__ import annotations

import heapq
import json
from collections import defaultdict
from typing import Callable, Iterator, Mapping

from workbench.core.bpe import _SHIFT, BpeTrainer, TrainConfig, merged_word
from workbench.core.model import MergeEvent
from workbench.errors import ConfigError


class ParityBpeTrainer(BpeTrainer):
    """Parity-aware BPE (see the module docstring). ``merges``/``vocab``/``log`` as BpeTrainer's."""

    value_name = "frequency"

    def __init__(self, train: Mapping[str, Mapping[str, int]], dev: Mapping[str, Mapping[str, int]],
                 config: TrainConfig, global_merges: int = 0):
        if not train:
            raise ConfigError("files", "parity-aware BPE needs training text in at least one language")
        missing = [lang for lang in train if not dev.get(lang)]
        if missing:
            raise ConfigError("dev", f"no development text for {', '.join(missing)}: give each language "
                                     "its part of the parallel development set")
        if config.tie_break != "hf":
            raise ConfigError("tie_break", "parity-aware BPE breaks ties by the Hugging Face rule only")
        union: dict[str, int] = {}
        for counts in train.values():
            for word, count in counts.items():
                union[word] = union.get(word, 0) + count
        for counts in dev.values():  # the alphabet (character units) covers the development text too
            for word in counts:
                union.setdefault(word, 0)
        super().__init__(union, config)
        self.languages = list(train)
        self.global_merges = max(0, int(global_merges))
        encode = self._symbols
        # Every word of every language (training, then development), with its language and weight.
        self.words, self.freqs = [], []
        self.lang: list[int] = []
        self.is_dev: list[bool] = []
        for dev_part, source in ((False, train), (True, dev)):
            for li, name in enumerate(self.languages):
                for word, count in source.get(name, {}).items():
                    if count > 0 and word:
                        self.words.append(encode(word))
                        self.freqs.append(count)
                        self.lang.append(li)
                        self.is_dev.append(dev_part)
        self.dev_chars = [sum(len(w) * c for w, c in dev[name].items()) for name in self.languages]
        self.dev_tokens = [0] * len(self.languages)
        self.token_count = 0
        for sym, f, li, d in zip(self.words, self.freqs, self.lang, self.is_dev):
            if d:
                self.dev_tokens[li] += f * len(sym)
            else:
                self.token_count += f * len(sym)
        self.initial_token_count = self.token_count
        self.word_types = sum(1 for d in self.is_dev if not d)
        self.curves: list[tuple[float, ...]] = []  # characters per token of each language, per merge
        self.token_curves: list[tuple[int, ...]] = []  # tokens of each language's development text, per merge
        self.chosen: list[int] = []  # the language each merge served (-1: a global merge)
        self.extras: list[tuple[int, str]] = []  # (rank, JSON text): each merge's parity_cpt, for the store
        self.log.extras = self.extras

    def _symbols(self, word: str) -> list[int]:
        offset = len(self.special_tokens)
        if self.config.units == "bytes":
            return [b + offset for b in word.encode("utf-8")]
        table = {piece.decode("utf-8"): i for i, piece in enumerate(self.initial_vocab) if i >= offset}
        marker = [len(self.initial_vocab) - 1] if self.config.end_of_word else []
        return [table[ch] for ch in word] + marker

    def chars_per_token(self) -> tuple[float, ...]:
        return tuple(c / max(t, 1) for c, t in zip(self.dev_chars, self.dev_tokens))

    def run(self, should_stop: Callable[[], bool] | None = None) -> Iterator[MergeEvent]:
        cfg = self.config
        words, freqs, vocab, lang, is_dev = self.words, self.freqs, self.vocab, self.lang, self.is_dev
        S = _SHIFT  # noqa: N806 - the pair packing of bpe.py
        n_lang = len(self.languages)
        rank = self._hf_rank()
        # Counts per language (training text only) and over all of them; where: pair → words (both parts).
        counts: list[dict[int, int]] = [{} for _ in range(n_lang)]
        total: dict[int, int] = {}
        where: defaultdict[int, set[int]] = defaultdict(set)
        for w, sym in enumerate(words):
            for i in range(len(sym) - 1):
                p = sym[i] * S + sym[i + 1]
                where[p].add(w)
                if not is_dev[w]:
                    table = counts[lang[w]]
                    table[p] = table.get(p, 0) + freqs[w]
                    total[p] = total.get(p, 0) + freqs[w]

        def key(p: int) -> int:
            return rank[p // S] * S + rank[p % S]

        heaps = [[(-c, key(p), p) for p, c in counts[li].items()] for li in range(n_lang)]
        glob = [(-c, key(p), p) for p, c in total.items()]
        for h in (*heaps, glob):
            heapq.heapify(h)

        def best_of(heap: list, table: dict[int, int]) -> int | None:
            while heap:
                negc, _k, p = heap[0]
                c = table.get(p)
                if c is None or c <= 0:
                    heapq.heappop(heap)
                elif c != -negc:
                    heapq.heapreplace(heap, (-c, key(p), p))
                else:
                    return p
            return None

        max_merges = cfg.merges if cfg.merges is not None else float("inf")
        target_vocab = cfg.vocab_size if cfg.vocab_size is not None else float("inf")
        min_freq = max(1, cfg.min_frequency)
        step = 0
        while step < max_merges and len(vocab) < target_vocab:
            if should_stop is not None and should_stop():
                return
            worst = max(range(n_lang), key=lambda li: self.dev_tokens[li])  # the first of equals
            serve = -1 if step < self.global_merges else worst
            best = best_of(glob, total) if serve < 0 else best_of(heaps[serve], counts[serve])
            if best is None:
                if serve < 0:
                    return
                # the worst language has nothing left to merge: the others are served by frequency
                serve = -1
                best = best_of(glob, total)
                if best is None:
                    return
            frequency = total.get(best, 0) if serve < 0 else counts[serve][best]
            if frequency < min_freq:
                return
            a, b = divmod(best, S)
            piece = vocab[a] + vocab[b]
            new = self._piece_id.get(piece)
            if new is None:
                new = len(vocab)
                vocab.append(piece)
                rank.append(len(rank))
                self._piece_id[piece] = new
            total.pop(best, None)  # the merged pair is gone from every language (bpe.py pops it too)
            for table in counts:
                table.pop(best, None)
            delta: defaultdict[tuple[int, int], int] = defaultdict(int)  # (language or -1 for dev, pair)
            for w in where.pop(best, ()):
                sym = words[w]
                occurrences = sym.count(a)
                if not occurrences:
                    continue
                f = freqs[w]
                li = -1 if is_dev[w] else lang[w]
                n = len(sym)
                positions: list[int] = []
                last_end = -1
                i = -1
                for _ in range(occurrences):  # only the occurrences are touched (bpe.py's scheme)
                    i = sym.index(a, i + 1)
                    if i < last_end or i + 1 >= n or sym[i + 1] != b:
                        continue
                    if i > 0:
                        x = (new if i == last_end else sym[i - 1]) * S
                        delta[li, x + a] -= f
                        delta[li, x + new] += f
                        where[x + new].add(w)
                    if i + 2 < n:
                        y = sym[i + 2]
                        delta[li, b * S + y] -= f
                        delta[li, new * S + y] += f
                        where[new * S + y].add(w)
                    positions.append(i)
                    last_end = i + 2
                if not positions:
                    continue
                words[w] = merged_word(sym, positions, new)
                if is_dev[w]:
                    self.dev_tokens[lang[w]] -= len(positions) * f
                else:
                    self.token_count -= len(positions) * f
            for (li, q), d in delta.items():
                if li < 0 or not d or q == best:
                    continue
                c = counts[li].get(q, 0) + d
                t = total.get(q, 0) + d
                if c > 0:
                    counts[li][q] = c
                else:
                    counts[li].pop(q, None)
                if t > 0:
                    total[q] = t
                else:
                    total.pop(q, None)
                if d > 0:
                    heapq.heappush(heaps[li], (-c, key(q), q))
                    heapq.heappush(glob, (-t, key(q), q))
            step += 1
            self.chosen.append(serve)
            cpt = self.chars_per_token()
            self.curves.append(cpt)
            self.token_curves.append(tuple(self.dev_tokens))
            self.extras.append((step - 1, json.dumps({"parity_cpt": self._rounded(cpt),
                                                      "parity_tokens": dict(zip(self.languages, self.dev_tokens))},
                                                     separators=(",", ":"))))
            self.merges.append((a, b, new))
            self.frequencies.append(frequency)
            self.token_counts.append(self.token_count)
            yield MergeEvent(step, a, b, new, frequency, len(vocab), self.token_count)

    def _rounded(self, cpt: tuple[float, ...]) -> dict[str, float]:
        """Each language's characters per token as the store keeps it (6 decimals)."""
        return dict(zip(self.languages, (round(x, 6) for x in cpt)))

    def extra_settings(self) -> dict:
        """The run's family, its languages and how each is compressed on the development set."""
        return {"model": "parity-bpe", "parity_languages": list(self.languages),
                "parity_chars_per_token": self._rounded(self.chars_per_token()),
                "parity_dev_tokens": dict(zip(self.languages, self.dev_tokens)),
                "parity_served": {name: self.chosen.count(i) for i, name in enumerate(self.languages)}}
