"""Training on a sample of lines, as sentencepiece's ``input_sentence_size`` does: N lines drawn
uniformly from every line of every file (a seeded reservoir, Vitter's Algorithm L, which asks the
random generator O(N·log(total/N)) times rather than once per line), then counted in corpus order.

The files are read whole (every line must have its chance), so the cost saved is memory and
training time, not reading time: the reservoir holds N lines, the count table their distinct
pre-tokens. Each file is fingerprinted before and checked after, as counting does.

Left out: sampling documents (``--sequences documents``: refused by the run spec) and word-count
tables (they hold no lines).
"""

from __future__ import annotations

import math
import random
from typing import Callable, Sequence

from workbench.corpus.fingerprint import FileState, check_unchanged, file_state
from workbench.errors import WorkbenchError


class SampledCounts(dict):
    """A ``{pre-token: count}`` table of a sample; ``sampled_from`` is the number of lines drawn from."""

    sampled_from: int = 0


def reservoir_lines(sources: Sequence, n: int, seed: int = 0, *,
                    should_stop: Callable[[], bool] | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    states: dict[str, FileState] | None = None) -> tuple[list[str], int]:
    """``(lines, total)``: ``n`` lines drawn uniformly from all lines of ``sources`` (each line with
    its ``"\\n"``, in corpus order), and how many lines there were. The same seed and files give the
    same lines."""
    from workbench.corpus.counts import source_batches

    rng = random.Random(seed)

    def uniform() -> float:
        return 1.0 - rng.random()  # in (0, 1]: its log is defined

    reservoir: list[tuple[int, str]] = []
    index = 0          # lines seen before the current batch
    weight = 0.0
    upcoming = -1      # the index of the next line that enters the reservoir, once it is full
    done = 0
    total_bytes = sum(getattr(s, "size", 0) for s in sources) or 1
    stop = should_stop or (lambda: False)
    for src in sources:
        if src.kind == "wordcounts":
            raise WorkbenchError(f"{src.path}: a word-count table has no lines to sample: train from it without "
                                 "--sample-lines, or sample the text it was counted from")
        before = file_state(src.path)
        for batch in source_batches(src, pretokenizer="none", sequences="lines", should_stop=should_stop):
            m = len(batch)
            start = 0
            if len(reservoir) < n:
                start = min(n - len(reservoir), m)
                reservoir.extend(zip(range(index, index + start), batch[:start]))
                if len(reservoir) == n:
                    weight = math.exp(math.log(uniform()) / n)
                    upcoming = index + start - 1 + math.floor(math.log(uniform()) / math.log1p(-weight)) + 1
            while 0 <= upcoming < index + m:
                reservoir[rng.randrange(n)] = (upcoming, batch[upcoming - index])
                weight *= math.exp(math.log(uniform()) / n)
                upcoming += math.floor(math.log(uniform()) / math.log1p(-weight)) + 1 if weight < 1 else 1
            index += m
            if progress is not None:
                done += sum(map(len, batch))
                progress(min(done, total_bytes), total_bytes)
        if stop():
            break
        check_unchanged(src.path, before)
        if states is not None:
            states[str(src.path)] = before
    reservoir.sort()
    return [line for _, line in reservoir], index


def count_sample(sources: Sequence, n: int, seed: int, *, pretokenizer: str, normalizer: Sequence[str] = (),
                 should_stop: Callable[[], bool] | None = None, progress: Callable[[int, int], None] | None = None,
                 states: dict[str, FileState] | None = None) -> SampledCounts:
    """The pre-token counts of a sample of ``n`` lines (see :func:`reservoir_lines`)."""
    from workbench.core.count import count_batches

    lines, total = reservoir_lines(sources, n, seed, should_stop=should_stop, progress=progress, states=states)
    batches = (lines[i:i + 8192] for i in range(0, len(lines), 8192))
    counts = SampledCounts(count_batches(batches, pretokenizer=pretokenizer, normalizer=tuple(normalizer),
                                         should_stop=should_stop))
    counts.sampled_from = total
    return counts
