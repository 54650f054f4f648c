"""How a vocabulary is used on a corpus: each entry's frequency when the corpus is fully encoded,
and the entries that never occur (under-trained token candidates).

Long loops take ``should_stop`` / ``progress`` hooks (paced by :class:`Pacer`) and return ``None``
when stopped, so a worker can drive them off the GUI thread and cancel between two words.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Mapping, Sequence

from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.unigram import is_spm_model

ShouldStop = Callable[[], bool]


Progress = Callable[[int, int, str], None]  # done, total, what


class Pacer:
    """For long loops: stop when asked, and report progress at most every 50 ms."""

    def __init__(self, total: int, what: str, should_stop: ShouldStop | None,
                 progress: Progress | None) -> None:
        self.total, self.what = total, what
        self.should_stop, self.progress = should_stop, progress
        self.last = time.monotonic()

    def stopped(self, done: int) -> bool:
        if self.should_stop is not None and self.should_stop():
            return True
        now = time.monotonic()
        if self.progress is not None and now - self.last > 0.05:
            self.last = now
            self.progress(done, self.total, self.what)
        return False


@dataclass(frozen=True)
class VocabUsage:
    """Occurrences of every id when the corpus is encoded with the tokenizer.

    ``never_used`` lists entries that never occur: they were only stepping stones of later merges
    (or bytes the corpus does not contain) — the candidates for under-trained tokens. Special
    tokens are left out of the flag and of its share: corpus text never contains them as tokens.
    Ids an imported vocabulary leaves empty are left out too.
    """

    frequencies: tuple[int, ...]
    counted: tuple[bool, ...]  # which ids take part in the never-used share
    total_tokens: int
    word_types: int

    # Computed once and kept (a frozen dataclass without slots: cached_property writes the
    # instance's __dict__ directly): 200,000 pieces take ~60 ms, so the window's views have it
    # made on the worker that counted (``summarised`` says whether it was), never on their thread.
    @cached_property
    def never_used(self) -> list[int]:
        return [i for i, (f, c) in enumerate(zip(self.frequencies, self.counted)) if c and f == 0]

    @cached_property
    def eligible(self) -> int:
        return sum(self.counted)

    def summarise(self) -> VocabUsage:
        """Compute :attr:`never_used` and :attr:`eligible` now (on the thread that calls this)."""
        _ = self.never_used, self.eligible
        return self

    @property
    def summarised(self) -> bool:
        """Whether :attr:`never_used` and :attr:`eligible` are computed: reading them is then free."""
        return "never_used" in self.__dict__ and "eligible" in self.__dict__

    @property
    def never_used_share(self) -> float:
        """Never-used entries as a fraction of the (non-special) vocabulary."""
        return len(self.never_used) / self.eligible if self.eligible else 0.0



def encode_pretoken(encoder: Encoder, piece: str) -> Sequence[int]:
    """Ids of one pre-token, exactly as :meth:`Encoder.encode` produces them inside a text.

    Uses the encoder's per-pre-token step (what ``encode`` calls after splitting), because
    splitting a pre-token again is not guaranteed to give it back unchanged.
    """
    step = getattr(encoder, "_encode_piece", None)
    if step is not None:
        return step(piece)
    return encoder.encode(piece)


def vocab_usage(tokenizer: Tokenizer, word_counts: Mapping[str, int], *,
                should_stop: ShouldStop | None = None,
                progress: Progress | None = None) -> VocabUsage | None:
    """Frequencies of every id over a ``{pre-token: count}`` table (None if stopped).

    Each distinct pre-token is encoded once and weighted by its count — the same ids as encoding
    the whole corpus, in a fraction of the time. A Unigram (SentencePiece) lattice spans a whole
    line, so for those models the keys are lines (counted with the ``none`` pre-tokenizer, see
    :func:`usage_pretokenizer`) and each is encoded as a text.
    """
    encoder = Encoder(tokenizer)
    by_line = is_spm_model(tokenizer) or (tokenizer.pipeline is not None and tokenizer.pipeline.whole_lines)
    freq = [0] * len(tokenizer.vocab)
    total = len(word_counts)
    pace = Pacer(total, "encoding", should_stop, progress)
    tokens = 0
    for index, (word, n) in enumerate(word_counts.items()):
        if index % 512 == 0 and pace.stopped(index):
            return None
        ids = encoder.encode(word) if by_line else encode_pretoken(encoder, word)
        for token_id in ids:
            freq[token_id] += n
        tokens += n * len(ids)
    if progress is not None:
        progress(total, total, "encoding")
    return VocabUsage(tuple(freq), counted_ids(tokenizer), tokens, total)


def usage_pretokenizer(tokenizer: Tokenizer) -> tuple[str, tuple[str, ...]]:
    """(pre-tokenizer, normalizer) to count a corpus with for :func:`vocab_usage`: the tokenizer's
    own, or whole raw lines for a Unigram/SentencePiece model or an imported tokenizer.json pipeline
    that our presets cannot say (its encoder runs the whole pipeline on them)."""
    if is_spm_model(tokenizer) or (tokenizer.pipeline is not None and tokenizer.pipeline.whole_lines):
        return "none", ()
    return tokenizer.pretokenizer, tuple(tokenizer.normalizer)


def counted_ids(tokenizer: Tokenizer) -> tuple[bool, ...]:
    """Which ids take part in utilisation: not special tokens, not the gaps of an imported vocabulary."""
    specials = tokenizer.special_ids
    return tuple(i not in specials and bool(p) for i, p in enumerate(tokenizer.vocab))
