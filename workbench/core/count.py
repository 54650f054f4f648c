"""Count pre-tokens into the ordered word-frequency table the trainer works on.

The table keeps words in order of first appearance (the ``first-seen`` tie-break depends on it).
Counting is ``Counter.update`` over ``regex.findall`` — both C loops — one chunk at a time, so
memory stays bounded by the number of distinct pre-tokens, not the corpus size. With
``workers > 1`` chunks are split in a process pool and the per-chunk tables merged in chunk order,
which preserves first-appearance order exactly.

Sequences: :func:`count_batches` takes *batches* of independent sequences (lines, JSONL records,
safe cuts of one text file) and pre-tokenizes each sequence on its own, so no pre-token crosses a
sequence boundary and nothing is put between two sequences. :func:`count_pretokens` is the same
with one sequence per chunk. Left out: deciding what a sequence is (the corpus readers do that).
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from itertools import chain
from typing import Any, Callable, Iterable, Iterator, Sequence

from workbench.core.lifeline import watch_parent
from workbench.core.normalize import make_normalizer
from workbench.core.pretokenize import make_pretokenizer
from workbench.errors import WorkbenchError

_WORKER_STATE: dict = {}


def _splitter(pretokenizer: str, normalizer: tuple[str, ...]) -> Callable[[str], list[str]]:
    pre = make_pretokenizer(pretokenizer)
    normalize = make_normalizer(normalizer) if normalizer else None
    compiled = pre.compiled() if pre.name != "custom" else None

    def split(text: str) -> list[str]:
        if normalize is not None:
            text = normalize(text)
        if compiled is not None:
            return compiled.findall(text, concurrent=True)
        return pre.split(text)

    return split


def _count_chunk(text: str) -> Counter:
    return Counter(_WORKER_STATE["split"](text))


def _count_batch(batch: Sequence[str]) -> Counter:
    return _WORKER_STATE["count"](batch)


def _batch_splitter(pretokenizer: str, normalizer: tuple[str, ...]) -> Callable[[Sequence[str]], Iterable[str]]:
    """The pre-tokens of a batch of sequences, each split on its own.

    Many sequences (lines, records) go straight to ``findall`` through ``map`` — no Python frame per
    line, and no GIL release per call, which costs more than it gives on a short line. A batch of
    one (a chunk of a whole document) keeps ``concurrent=True``, so a window thread stays live.
    """
    split = _splitter(pretokenizer, normalizer)
    pre = make_pretokenizer(pretokenizer)
    compiled = pre.compiled() if pre.name != "custom" else None
    normalize = make_normalizer(normalizer) if normalizer else None
    if compiled is None:
        return lambda batch: chain.from_iterable(map(split, batch))
    findall = compiled.findall

    def pieces(batch: Sequence[str]) -> Iterable[str]:
        if len(batch) == 1:
            return split(batch[0])
        texts = batch if normalize is None else map(normalize, batch)
        return chain.from_iterable(map(findall, texts))

    return pieces


# Characters Python's str.split() takes for whitespace and Unicode's White_Space does not (the
# information separators U+001C-U+001F): a text holding one is split by the regex alone.
_SPLIT_NOT_WHITE = ("\x1c", "\x1d", "\x1e", "\x1f")

# Normalizers whose result, split at whitespace, is the same for lines joined by "\n" as for each
# line on its own: character maps (str.translate, case, compatibility forms) and Unicode
# normalization forms, whose reordering and composition stop at "\n" (a starter that composes with
# nothing; str.lower's final-sigma context stops there too), and spm-whitespace, which only
# touches spaces. Each turns "\n" into whitespace or keeps it, so no two lines' words can meet.
# bert counting normalizes :data:`_GROUP` lines per call under these (the per-line calls were a
# third of WordPiece's counting time); any other normalizer is called line by line.
_LINE_LOCAL = frozenset({"nfc", "nfd", "nfkc", "nfkd", "lower", "strip-accents", "bert", "bert-lower",
                         "spm-whitespace", "nmt", "nmt-nfkc"})
_GROUP = 512


def _batch_counter(pretokenizer: str, normalizer: tuple[str, ...]) -> Callable[[Sequence[str]], Counter]:
    """``{pre-token: count}`` of a batch of sequences, in order of first appearance: what
    ``Counter(pieces(batch))`` of :func:`_batch_splitter` gives.

    ``bert`` gets there faster: its pieces never hold or cross whitespace, so the batch is split at
    whitespace in C (``str.split``), the words counted (``Counter``, in C), and the regex runs once
    per distinct word — a few hundred thousand calls instead of one per line, over text that is
    mostly repeats. A piece's first appearance is inside the first appearance of the first word
    holding it, so expanding the distinct words in their own order keeps the table's order.
    Left out: the other presets, whose pieces carry their whitespace."""
    pieces = _batch_splitter(pretokenizer, normalizer)
    if pretokenizer != "bert":
        return lambda batch: Counter(pieces(batch))
    compiled = make_pretokenizer("bert").compiled()
    assert compiled is not None
    findall = compiled.findall
    normalize = make_normalizer(normalizer) if normalizer else None
    grouped = normalize is not None and all(name in _LINE_LOCAL for name in normalizer)

    def count(batch: Sequence[str]) -> Counter:
        if normalize is None:
            texts = batch
        elif grouped:  # one call per group of lines: ~100k calls fewer per 4 MB, the same words
            texts = [normalize("\n".join(batch[i:i + _GROUP])) for i in range(0, len(batch), _GROUP)]
        else:
            texts = list(map(normalize, batch))
        text = " ".join(texts)  # one scan in C for the separators str.split() would cut at
        if any(ch in text for ch in _SPLIT_NOT_WHITE):
            return Counter(chain.from_iterable(map(findall, texts)))
        del text
        out: Counter = Counter()
        get = out.get
        # Line by line, not ``text.split()`` of the whole batch: the same words in the same order
        # (the sequences stay apart: whitespace ends every bert piece), but only one line's word
        # list at a time instead of every word of the batch (~10 MB at once on a 1 MB batch).
        for word, n in Counter(chain.from_iterable(map(str.split, texts))).items():
            parts = findall(word)
            if len(parts) == 1:
                piece = parts[0]
                out[piece] = get(piece, 0) + n
            else:
                for piece in parts:
                    out[piece] = get(piece, 0) + n
        return out

    return count


def _init_worker(pretokenizer: str, normalizer: tuple[str, ...]) -> None:
    # A forked worker inherits the parent's handlers: the CLI's "stop between merges" SIGTERM
    # handler would make Pool.terminate() wait forever. Workers die on SIGTERM, ignore Ctrl+C
    # (the parent decides), and never outlive it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent()
    _prepare_counting(pretokenizer, normalizer)


def _prepare_counting(pretokenizer: str, normalizer: tuple[str, ...]) -> None:
    """The splitter and batch counter :func:`_count_chunk` and :func:`_count_batch` use, in a
    worker or in the parent counting its own share (:func:`ordered_pool_map`)."""
    _WORKER_STATE["split"] = _splitter(pretokenizer, normalizer)
    _WORKER_STATE["count"] = _batch_counter(pretokenizer, normalizer)


#: How long the parent waits on a worker's result before it asks ``should_stop`` again (seconds).
POLL_S = 0.2
#: The message when a counting process ends before it answers (killed, out of memory).
WORKER_LOST = ("a counting process ended before it finished (killed, or out of memory?): nothing was trained "
               "or stored; run again, or bound counting's memory (--max-memory) or count in one process")


def ordered_pool_map(fn: Callable, items: Iterable, *, workers: int, initargs: tuple,
                     should_stop: Callable[[], bool] | None = None,
                     own: Callable | None = None) -> Iterator:
    """``fn`` over ``items`` by ``workers`` counting processes — the caller's own and
    ``workers - 1`` forked ones (:func:`_init_worker` with ``initargs``) — the results in the order
    of ``items``. Item *k* goes to process *k* mod ``workers``, the last of them being the caller,
    which computes its items itself (with ``own``, default ``fn``) while it would otherwise wait
    on a worker; at most two items a process ahead of the results taken, so a streamed corpus stays
    streamed.

    Why the caller counts a share: it used to wait while two forked workers counted, and each
    forked worker's resident set starts as a copy of the trainer's (the imports, the store): three
    processes' worth of memory where two do the same work (issue 24, WordPiece on 8.9 MB: the
    process tree's summed RSS 1.24× ``tokenizers``' one process). ``own`` lets a caller give its
    own share a ``should_stop`` of its own (a whole file is one item); ``fn`` must not assume a
    fresh process (the caller's signal handlers stay as they are).

    Why not ``multiprocessing.Pool``: a worker that dies (SIGKILL, the kernel's out-of-memory killer,
    a group SIGTERM) is replaced by the pool and its task lost, so the parent waited forever; and
    ``Pool.terminate()`` itself can hang when its task thread is blocked writing to a dead worker
    (``ProcessPoolExecutor``'s shutdown, likewise). Here each worker has its own task queue (whose
    feeder thread is never waited for) and result pipe: the parent waits :data:`POLL_S` seconds at a
    time, asks ``should_stop``, and a worker gone raises :class:`WorkbenchError` at once. The workers
    are killed when the caller is done, stops or fails (nothing they hold is needed then)."""
    import multiprocessing  # here: counting in one process (a small corpus) needs none of it (1.3 MB)

    ctx = multiprocessing.get_context("fork")
    procs, queues, pipes = [], [], []
    counts_too = workers > 1  # the caller takes the last slot (one worker is forked regardless)
    forked = workers - 1 if counts_too else 1
    slots = forked + counts_too
    mine: dict[int, Any] = {}  # index -> the caller's item, not yet computed
    done: dict[int, Any] = {}  # index -> the caller's result, computed while a worker counted
    compute = own or fn
    try:
        for _ in range(forked):
            tasks = ctx.Queue()
            tasks.cancel_join_thread()  # never wait, at exit, on writes to a worker that is gone
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_pool_worker, args=(fn, initargs, tasks, send), daemon=True)
            proc.start()
            send.close()
            procs.append(proc)
            queues.append(tasks)
            pipes.append(receive)
        if counts_too:
            _prepare_counting(*initargs)
        submitted = taken = 0
        source = iter(items)
        exhausted = False
        while True:
            while not exhausted and submitted - taken < 2 * slots:
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                slot = submitted % slots
                if slot < forked:
                    queues[slot].put(item)
                else:
                    mine[submitted] = item
                submitted += 1
            if taken == submitted:
                return
            slot = taken % slots
            if slot >= forked:  # the caller's own item, computed now unless it was while waiting
                value = done.pop(taken) if taken in done else compute(mine.pop(taken))
                taken += 1
                yield value
                continue
            if mine and not pipes[slot].poll():  # count an item of one's own rather than wait
                first = min(mine)
                done[first] = compute(mine.pop(first))
                if should_stop is not None and should_stop():
                    return
            while not pipes[slot].poll(POLL_S):
                if should_stop is not None and should_stop():
                    return
                if procs[slot].exitcode is not None:
                    raise WorkbenchError(WORKER_LOST)
            try:
                ok, value = pipes[slot].recv()
            except (EOFError, OSError):
                raise WorkbenchError(WORKER_LOST) from None
            taken += 1
            if not ok:
                raise value
            yield value
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        for proc in procs:
            proc.join(5)
        for tasks in queues:
            tasks.close()
        for receive in pipes:
            receive.close()


def _pool_worker(fn: Callable, initargs: tuple, tasks: Any, results: Any) -> None:
    """A worker of :func:`ordered_pool_map`: each item's ``(True, fn(item))``, or ``(False, error)``."""
    _init_worker(*initargs)
    while True:
        item = tasks.get()
        try:
            answer = (True, fn(item))
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            answer = (False, exc)
        results.send(answer)


def count_pretokens(chunks: Iterable[str], *, pretokenizer: str = "gpt2", normalizer: tuple[str, ...] = (),
                    workers: int = 1, on_chunk: Callable[[int], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """``{pre-token: count}`` in order of first appearance over all chunks.

    ``on_chunk(n_chars)`` is called after each chunk (progress); ``should_stop()`` ends early.
    """
    counts: Counter = Counter()
    if workers <= 1 or (os.name != "posix"):
        split = _splitter(pretokenizer, normalizer)
        for chunk in chunks:
            if should_stop is not None and should_stop():
                break
            counts.update(split(chunk))
            if on_chunk is not None:
                on_chunk(len(chunk))
        return dict(counts)
    return _pooled_counts(_count_chunk, chunks, len, pretokenizer, normalizer, workers, on_chunk, should_stop)


def pieces_of(pretokenizer: str, normalizer: tuple[str, ...] = ()) -> Callable[[Sequence[str]], Iterable[str]]:
    """The function counting applies to a batch of sequences: their pre-tokens, each sequence
    normalized and split on its own (for callers that count incrementally, e.g. the pre-flight
    estimate's growing prefixes)."""
    return _batch_splitter(pretokenizer, normalizer)


def count_batches(batches: Iterable[Sequence[str]], *, pretokenizer: str = "gpt2",
                  normalizer: tuple[str, ...] = (), workers: int = 1,
                  on_batch: Callable[[int], None] | None = None,
                  should_stop: Callable[[], bool] | None = None,
                  flush_at: int = 0, flush: Callable[[dict[str, int]], None] | None = None) -> dict[str, int]:
    """``{pre-token: count}`` over batches of sequences, each sequence pre-tokenized on its own.

    A batch is a list of sequences (e.g. the lines of a ~1 MB chunk); batching keeps the per-call
    overhead of a million short lines in C (``map`` + ``chain`` + ``Counter.update``) and gives a
    process pool work units of a useful size. ``on_batch(n_chars)`` reports progress.

    Bounded memory: with ``flush_at`` > 0, whenever the table holds that many distinct pre-tokens
    it is handed to ``flush`` (in corpus order) and counting starts a new one; the return value is
    then only what came after the last flush.
    """
    counts: Counter = Counter()
    if workers <= 1 or (os.name != "posix"):
        count = _batch_counter(pretokenizer, normalizer)
        for batch in batches:
            if should_stop is not None and should_stop():
                break
            counts.update(count(batch))
            if on_batch is not None:
                on_batch(sum(map(len, batch)))
            # Dropped before the next batch is read: else two batches' lines (a few MB each) are
            # alive at once, and the heap the count stage leaves behind is that much larger.
            del batch
            if flush is not None and 0 < flush_at <= len(counts):
                flush(dict(counts))
                counts = Counter()
        return dict(counts)
    return _pooled_counts(_count_batch, batches, lambda batch: sum(map(len, batch)), pretokenizer, normalizer,
                          workers, on_batch, should_stop, flush_at, flush)


def _pooled_counts(count: Callable[[Any], Counter], units: Iterable[Any], size: Callable[[Any], int],
                   pretokenizer: str, normalizer: tuple[str, ...], workers: int,
                   report: Callable[[int], None] | None, should_stop: Callable[[], bool] | None,
                   flush_at: int = 0, flush: Callable[[dict[str, int]], None] | None = None) -> dict[str, int]:
    """The worker-process half of :func:`count_pretokens` and :func:`count_batches`: ``units``
    (chunks or batches) counted by ``count`` in worker processes, the partial tables added in unit
    order (so first appearance is kept), ``report(size(unit))`` after each, ``flush`` as in
    :func:`count_batches`."""
    lengths: list[int] = []

    def feed() -> Iterator[Any]:
        for unit in units:
            if should_stop is not None and should_stop():
                return
            lengths.append(size(unit))
            yield unit

    counts: Counter = Counter()
    results = ordered_pool_map(count, feed(), workers=workers, initargs=(pretokenizer, normalizer),
                               should_stop=should_stop)
    for index, partial in enumerate(results):
        if not counts:
            counts = partial
        else:
            counts.update(partial)  # in unit order: first appearance is kept
        if report is not None:
            report(lengths[index] if index < len(lengths) else 0)
        if flush is not None and 0 < flush_at <= len(counts):
            flush(dict(counts))
            counts = Counter()
    return dict(counts)


def _safe_cut(text: str, start: int, end: int) -> int:
    """Last index in (start, end] just after a newline between two letters, or -1.

    No preset pattern (GPT-2, cl100k, o200k, whitespace, digits) lets a piece cross a newline that
    sits between two letters, so cutting there splits the text exactly as a single pass would.
    """
    cut = text.rfind("\n", start, end)
    while cut > start:
        if cut + 1 < len(text) and text[cut - 1].isalpha() and text[cut + 1].isalpha():
            return cut + 1
        cut = text.rfind("\n", start, cut)
    return -1


def _safe_space_cut(text: str, start: int, end: int) -> int:
    """For ``metaspace``: last index in (start, end] of a space that follows a non-space, or -1
    (a piece starts exactly there)."""
    cut = text.rfind(" ", start, end)
    while cut > start:
        if text[cut - 1] != " ":
            return cut
        cut = text.rfind(" ", start, cut)
    return -1


# Where each pre-tokenizer allows a cut that a single pass over the whole text would also make.
SAFE_CUTS = {"gpt2": _safe_cut, "cl100k": _safe_cut, "o200k": _safe_cut, "whitespace": _safe_cut,
             "digits": _safe_cut, "metaspace": _safe_space_cut}


def chunks_for(pretokenizer: str, chunks: Iterable[str], size: int = 1 << 20) -> Iterable[str]:
    """Chunks as the pre-tokenizer needs them: re-cut at its safe places when it has them.

    ``none`` and custom patterns have none: each reader chunk (about 1 MB, ending at a line end)
    is then pre-tokenized on its own — for ``none`` that makes each chunk one piece.
    """
    cut = SAFE_CUTS.get(pretokenizer)
    return chunks if cut is None else rechunk(chunks, size, cut)


def rechunk(chunks: Iterable[str], size: int = 1 << 20, safe_cut=_safe_cut) -> Iterator[str]:
    """Re-cut a stream of text chunks at safe boundaries (see :func:`_safe_cut`).

    Readers cut at line ends; a line end next to punctuation or whitespace can still sit inside one
    pre-token (cl100k joins ``".\n\n"``), so the tail after the last safe cut is carried over.
    """
    carry = ""
    for chunk in chunks:
        text = carry + chunk if carry else chunk
        start = 0
        while len(text) - start > size:
            cut = safe_cut(text, start, start + size)
            if cut < 0:
                cut = safe_cut(text, start + size, len(text))
                if cut < 0:
                    break
            yield text[start:cut]
            start = cut
        carry = text[start:]
        if len(carry) > size:
            cut = safe_cut(carry, 0, len(carry))
            if cut > 0:
                yield carry[:cut]
                carry = carry[cut:]
    if carry:
        yield carry


SEQUENCES = ("lines", "documents")


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, each WITH its ``"\\n"`` (the last one without, if the text has none).

    Only ``"\\n"`` ends a line — as in Hugging Face ``tokenizers``' ``train(files)`` — so a
    ``"\\r\\n"`` line keeps both characters and a lone ``"\\r"`` or U+2028 stays inside its line.
    """
    lines = text.split("\n")
    last = lines.pop()
    # In place: each line's copy with its "\n" replaces the bare one at once, so the batch's text
    # is not held twice (~2.5 MB per MB of short lines) while the list is made.
    for i, line in enumerate(lines):
        lines[i] = line + "\n"
    if last:
        lines.append(last)
    return lines


def check_sequences(sequences: str) -> str:
    """``sequences`` if it is ``lines`` or ``documents``; otherwise a one-line error."""
    if sequences not in SEQUENCES:
        raise WorkbenchError(f"sequences {sequences!r}: use lines (each line, as tokenizers and sentencepiece "
                             "read text files) or documents (a whole file, JSONL record or CSV cell)")
    return sequences
