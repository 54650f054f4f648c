"""Corpus statistics for the corpus panel and ``workbench stats``: size, lines, vocabulary, scripts.

The script mix is what tells a user *why* a tokenizer does badly on part of a corpus (a mostly
Latin training set gives Cyrillic or Han text far more tokens per character), so it is counted per
file and in total. Everything is computed in one streaming pass over :func:`iter_chunks`.
"""

from __future__ import annotations

import logging
from collections import Counter
from concurrent.futures import BrokenExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import regex

from workbench.corpus.location import CorpusPath
from workbench.corpus.readers import Progress, ShouldStop, iter_chunks, iter_word_counts
from workbench.corpus.scan_pool import POOL_MIN_BYTES, ScanPool
from workbench.corpus.source import CorpusSource

Splitter = Callable[[str], Iterable[str]]

# Order used for display; "Kana" is Hiragana + Katakana, "Common" is digits, punctuation, symbols
# and combining marks (Unicode Common + Inherited); "Other" is every other script plus control
# characters (such as the ANSI escapes in real-world dumps). Whitespace is not counted at all.
SCRIPTS = ("Latin", "Cyrillic", "Greek", "Arabic", "Han", "Kana", "Hangul", "Devanagari", "Common", "Other")
_SCRIPT_RUNS = regex.compile(
    r"(?P<Latin>\p{Script=Latin}+)"
    r"|(?P<Cyrillic>\p{Script=Cyrillic}+)"
    r"|(?P<Other>[\p{Cc}--\s]+)"
    r"|(?P<Common>[[\p{Script=Common}\p{Script=Inherited}]--[\s\p{Cc}]]+)"
    r"|(?P<Han>\p{Script=Han}+)"
    r"|(?P<Kana>[\p{Script=Hiragana}\p{Script=Katakana}]+)"
    r"|(?P<Greek>\p{Script=Greek}+)"
    r"|(?P<Arabic>\p{Script=Arabic}+)"
    r"|(?P<Hangul>\p{Script=Hangul}+)"
    r"|(?P<Devanagari>\p{Script=Devanagari}+)"
    r"|(?P<Other>\S+?)",
    flags=regex.V1,
)
PREVIEW_LINE_CHARS = 500  # a preview line is for the eye; a 2 MB "line" would freeze a list view


@dataclass(frozen=True)
class CorpusStats:
    """Statistics of one file (``path``) or of several together (``path`` is None).

    ``bytes`` is the UTF-8 size of the text read (equal to the file size for plain UTF-8 text),
    ``lines`` counts lines of that text (for JSONL/CSV: of the documents, one or more lines each),
    ``records`` the documents of a JSONL/CSV/TSV/Parquet file or the rows of a word-count table
    (None for plain text), ``scripts`` non-whitespace characters per script, most frequent first.
    ``complete`` is False when ``should_stop`` ended the scan early. ``skipped`` counts the bad
    records left out under the ``skip`` policy, ``skipped_at`` holds the first few full messages.
    """

    path: CorpusPath | None
    bytes: int
    chars: int
    lines: int
    distinct_pretokens: int
    scripts: dict[str, int]
    preview: list[str] = field(default_factory=list)
    records: int | None = None
    complete: bool = True
    skipped: int = 0
    skipped_at: tuple[str, ...] = ()

    @property
    def dominant_script(self) -> str | None:
        """The writing system of the text: the commonest script other than Common/Other.

        Punctuation, digits and box drawing can outnumber the letters of one language (the
        Chinese fortune file has more of them than Han characters), but they say nothing about
        which language it is; they are the answer only when there are no letters at all.
        """
        for name in self.scripts:
            if name not in ("Common", "Other"):
                return name
        return next(iter(self.scripts), None)


_SCRIPT_OF: dict[str, str | None] = {}  # character → script name (None: whitespace), filled as met


def _script_of(ch: str) -> str | None:
    match = _SCRIPT_RUNS.match(ch)
    return match.lastgroup if match else None


def count_scripts(text: str, into: dict[str, int] | None = None, weight: int = 1) -> dict[str, int]:
    """Add the number of non-whitespace characters of each script in ``text`` to ``into``.

    Counts characters with ``Counter`` (one C loop over the text) and classifies each *distinct*
    character once, cached: a text has a few thousand distinct characters, so the script regex runs
    that often instead of once per run of letters (which made it the slowest part of a scan).
    The result is the same as summing the lengths of ``_SCRIPT_RUNS`` matches.
    """
    counts = into if into is not None else {}
    cache = _SCRIPT_OF
    for ch, n in Counter(text).items():
        name = cache.get(ch, "")
        if name == "":
            name = cache[ch] = _script_of(ch)
        if name is not None:
            counts[name] = counts.get(name, 0) + n * weight
    return counts


def count_scripts_by_runs(text: str) -> dict[str, int]:
    """The textbook form of :func:`count_scripts` (one regex match per run), kept for the tests."""
    counts: dict[str, int] = {}
    for match in _SCRIPT_RUNS.finditer(text):
        name = match.lastgroup
        assert name is not None
        counts[name] = counts.get(name, 0) + match.end() - match.start()
    return counts


def _sorted_scripts(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], SCRIPTS.index(kv[0]))))


class _Accumulator:
    """Running totals for one file."""

    def __init__(self, split: Splitter | None, preview_lines: int) -> None:
        self.split: Splitter = split or str.split
        self.preview_lines = preview_lines
        self.bytes = self.chars = self.lines = 0
        self.records: int | None = None
        self.pretokens: set[str] = set()
        self.scripts: dict[str, int] = {}
        self.preview: list[str] = []
        self.ends_with_newline = True
        self.skipped = 0
        self.skipped_at: tuple[str, ...] = ()

    def add_text(self, text: str, utf8_bytes: int = -1) -> None:
        if not text:
            return
        self.add_plain(text, utf8_bytes)
        self.pretokens.update(self.split(text))
        count_scripts(text, self.scripts)

    def add_summary(self, pieces: Iterable[str], scripts: dict[str, int]) -> None:
        """What a :class:`~workbench.corpus.scan_pool.ScanPool` worker found in one chunk."""
        self.pretokens.update(pieces)
        for name, n in scripts.items():
            self.scripts[name] = self.scripts.get(name, 0) + n

    def add_plain(self, text: str, utf8_bytes: int = -1) -> None:
        """The cheap totals (bytes, characters, lines, preview), kept in the reading thread."""
        if not text:
            return
        self.bytes += utf8_bytes if utf8_bytes >= 0 else len(text.encode("utf-8", "surrogatepass"))
        self.chars += len(text)
        self.lines += text.count("\n")
        self.ends_with_newline = text.endswith("\n")
        if len(self.preview) < self.preview_lines:
            for line in text.splitlines()[: self.preview_lines - len(self.preview)]:
                self.preview.append(line[:PREVIEW_LINE_CHARS])

    def result(self, path: CorpusPath | None, complete: bool) -> CorpusStats:
        lines = self.lines + (0 if self.ends_with_newline else 1)
        return CorpusStats(
            path, self.bytes, self.chars, lines, len(self.pretokens), _sorted_scripts(self.scripts),
            self.preview, self.records, complete, self.skipped, self.skipped_at,
        )


def file_stats(
    src: CorpusSource,
    *,
    split: Splitter | None = None,
    preview_lines: int = 20,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    pool: ScanPool | None = None,
) -> CorpusStats:
    """Statistics of one source in a single streaming pass.

    ``split`` turns text into pre-tokens (pass a pre-tokenizer's ``split`` to count what the
    trainer will see); the default is a whitespace split. For a word-count table each word is
    weighted by its count (``chars``/``bytes`` are those of the words, without separators) and
    ``lines``/``records`` count its rows. With ``pool`` (running text of at least
    :data:`~workbench.corpus.scan_pool.POOL_MIN_BYTES`), pre-tokens and scripts are found in its
    worker processes, split by the pool's own pre-tokenizer (``split`` is then not used).
    """
    try:
        acc, complete = _scan(src, split, preview_lines, progress, should_stop, pool)
    except BrokenExecutor:
        # A worker died (killed, out of memory, a frozen app without freeze_support): scan here.
        logging.getLogger(__name__).warning("scan workers failed; scanning %s in-thread", src.path)
        if pool is not None:
            pool.disable()
        acc, complete = _scan(src, split, preview_lines, progress, should_stop, None)
    return acc.result(src.path, complete)


def _scan(
    src: CorpusSource,
    split: Splitter | None,
    preview_lines: int,
    progress: Progress | None,
    should_stop: ShouldStop | None,
    pool: ScanPool | None = None,
) -> tuple[_Accumulator, bool]:
    acc = _Accumulator(split, preview_lines)
    stopped = False

    def stop() -> bool:
        nonlocal stopped
        stopped = stopped or bool(should_stop and should_stop())
        return stopped

    if src.kind == "wordcounts":
        acc.records = 0
        for word, count in iter_word_counts(src, progress=progress, should_stop=stop):
            acc.records += 1
            acc.bytes += len(word.encode("utf-8", "surrogatepass")) * count
            acc.chars += len(word) * count
            acc.pretokens.update(acc.split(word))
            count_scripts(word, acc.scripts, count)
            if len(acc.preview) < preview_lines:
                acc.preview.append(f"{word}\t{count}"[:PREVIEW_LINE_CHARS])
        acc.lines = acc.records
        acc.skipped, acc.skipped_at = src.skipped.count, tuple(src.skipped.first)
        return acc, not stopped
    if src.kind != "text":
        acc.records = 0
    if pool is not None and pool.enabled and src.size >= POOL_MIN_BYTES:

        def texts() -> Iterator[str]:
            for chunk in iter_chunks(src, progress=progress, should_stop=stop):
                acc.add_plain(chunk.text, chunk.utf8_bytes)
                if acc.records is not None:
                    acc.records += chunk.records
                yield chunk.text

        for pieces, scripts in pool.summaries(texts()):
            acc.add_summary(pieces, scripts)
    else:
        for chunk in iter_chunks(src, progress=progress, should_stop=stop):
            acc.add_text(chunk.text, chunk.utf8_bytes)
            if acc.records is not None:
                acc.records += chunk.records
    acc.skipped, acc.skipped_at = src.skipped.count, tuple(src.skipped.first)
    return acc, not stopped


def corpus_stats(
    sources: Iterable[CorpusSource],
    *,
    split: Splitter | None = None,
    preview_lines: int = 20,
    progress: Callable[[CorpusSource, int, int], None] | None = None,
    should_stop: ShouldStop | None = None,
) -> tuple[list[CorpusStats], CorpusStats]:
    """Per-file statistics and the total (distinct pre-tokens are a true union, not a sum).

    ``progress(source, done, total)`` reports per file. Files not reached after a stop are absent.
    """
    per_file: list[CorpusStats] = []
    union: set[str] = set()
    scripts: dict[str, int] = {}
    complete = True
    for src in sources:
        if should_stop and should_stop():
            complete = False
            break
        report = (lambda done, total, s=src: progress(s, done, total)) if progress else None
        acc, done = _scan(src, split, preview_lines, report, should_stop)
        per_file.append(acc.result(src.path, done))
        union |= acc.pretokens
        for name, n in acc.scripts.items():
            scripts[name] = scripts.get(name, 0) + n
        complete = complete and done
    records = [s.records for s in per_file if s.records is not None]
    total = CorpusStats(
        None,
        sum(s.bytes for s in per_file),
        sum(s.chars for s in per_file),
        sum(s.lines for s in per_file),
        len(union),
        _sorted_scripts(scripts),
        [],
        sum(records) if records else None,
        complete,
        sum(s.skipped for s in per_file),
        tuple(m for s in per_file for m in s.skipped_at)[:5],
    )
    return per_file, total

