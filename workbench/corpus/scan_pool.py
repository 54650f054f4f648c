"""The second core for corpus statistics: pre-tokens and scripts of each chunk in worker processes.

A scan's cost is the pre-token split and the character census of each ~1 MB chunk, both holding
the GIL; in the window they would also compete with the GUI thread. :class:`ScanPool` runs them in
``workers`` processes (started with ``spawn``: forking a process that runs Qt threads is unsafe,
and in a frozen app the children start through the app's entry point, which must call
``multiprocessing.freeze_support()`` first). The reading thread keeps the cheap parts (decode,
lines, preview) and at most ``2 × workers`` chunks are in flight, so memory stays bounded.

Left out: word-count tables (their rows are already counted) and small files, which
:func:`workbench.corpus.stats.file_stats` scans in-thread (a worker start costs more than they take).
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Iterable, Iterator

POOL_MIN_BYTES = 1 << 20  # a file smaller than this (one chunk) is scanned in-thread
_STATE: dict = {}


def _init(pretokenizer: str) -> None:
    import signal

    from workbench.core.lifeline import watch_parent
    from workbench.core.pretokenize import make_pretokenizer

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides about Ctrl+C
    watch_parent()  # a window killed with -9 must not leave its scan workers behind
    pre = make_pretokenizer(pretokenizer)
    compiled = pre.compiled()
    _STATE["findall"] = compiled.findall if compiled is not None else pre.split


def _summary(text: str) -> tuple[list[str], dict[str, int]]:
    """Distinct pre-tokens and script counts of one chunk (runs in a worker)."""
    from workbench.corpus.stats import count_scripts

    return list(set(_STATE["findall"](text))), count_scripts(text)


class ScanPool:
    """A lazily started pool of scan workers for one pre-tokenizer preset; :meth:`close` ends it."""

    def __init__(self, pretokenizer: str = "gpt2", workers: int = 2):
        self.pretokenizer = pretokenizer
        self.workers = workers
        self.enabled = workers > 1
        self._pool: ProcessPoolExecutor | None = None

    def disable(self) -> None:
        """Stop using worker processes (after they failed); scans run in-thread from now on."""
        self.enabled = False
        self.close()

    def summaries(self, texts: Iterable[str]) -> Iterator[tuple[list[str], dict[str, int]]]:
        """``(distinct pre-tokens, scripts)`` per text, in order; reads ahead at most 2 × workers."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_init, initargs=(self.pretokenizer,))
        pending: deque[Future] = deque()
        try:
            for text in texts:
                pending.append(self._pool.submit(_summary, text))
                if len(pending) >= 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True, cancel_futures=True)
