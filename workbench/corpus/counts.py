"""Pre-token counts of corpus sources, as training counts them: the one counting path shared by
``workbench train``, the merge browser's corpus statistics and scripts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from workbench.core.count import chunks_for, count_pretokens
from workbench.core.metrics import Progress, ShouldStop
from workbench.core.normalize import make_normalizer
from workbench.errors import WorkbenchError


def corpus_sources(paths_and_options: Sequence[tuple[str, Mapping]], fingerprints: Sequence[str] = ()):
    """Open the project's corpus files again; returns ``(sources, warnings)``.

    A missing file raises :class:`WorkbenchError` naming it; a file whose fingerprint changed since
    training is read anyway, with a warning (its counts no longer describe the training corpus).
    """
    from workbench.corpus import fingerprint_matches, open_source

    sources, warnings = [], []
    for index, (path, options) in enumerate(paths_and_options):
        if not Path(path).exists():
            raise WorkbenchError(f"{path}: the corpus file is missing (moved or deleted since training): "
                                 "put it back to count token frequencies")
        opts = {k: v for k, v in dict(options).items() if k in ("field", "column", "encoding", "kind")}
        sources.append(open_source(path, **opts))
        if index < len(fingerprints) and fingerprints[index] and \
                not fingerprint_matches(path, fingerprints[index]):
            warnings.append(f"{Path(path).name} changed since training")
    return sources, warnings


def corpus_word_counts(sources: Sequence, *, pretokenizer: str, normalizer: Sequence[str] = (),
                       should_stop: ShouldStop | None = None,
                       progress: Progress | None = None) -> dict[str, int] | None:
    """``{pre-token: count}`` over the files, exactly as training counted them (None if stopped).

    Running text goes through the normalizer and pre-tokenizer; word-count tables are normalized
    and added as they are (their words are already pre-tokens), as :mod:`workbench.tasks.train` does.
    """

    stop = should_stop or (lambda: False)
    report = None if progress is None else (lambda done, total: progress(done, total, "reading the corpus"))
    counts = count_sources(sources, pretokenizer=pretokenizer, normalizer=normalizer, progress=report,
                           should_stop=stop)
    return None if stop() else counts


def word_counts_of_text(text: str, *, pretokenizer: str = "whitespace",
                        normalizer: Sequence[str] = ()) -> dict[str, int]:
    """``{pre-token: count}`` of one string (tests, small samples)."""
    return count_pretokens([text], pretokenizer=pretokenizer, normalizer=tuple(normalizer))


def count_sources(sources: Sequence, *, pretokenizer: str, normalizer: Sequence[str] = (), workers: int = 1,
                  progress: Callable[[int, int], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """``{pre-token: count}`` over corpus sources, as training counts them.

    Running text is normalized, cut where the pre-tokenizer allows (so chunking changes nothing)
    and pre-tokenized; word-count tables are normalized and added as they are (their words are
    already pre-tokens). ``progress(bytes_done, bytes_total)`` follows the reading. Used by
    training and by the merge browser's corpus statistics, so both see the same table.
    """
    from workbench.corpus import iter_text, iter_word_counts

    total = sum(getattr(src, "size", 0) for src in sources) or 1
    done = 0

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(min(done, total), total)

    text_sources = [s for s in sources if s.kind != "wordcounts"]
    counts: dict[str, int] = {}
    if text_sources:
        def chunks() -> Iterator[str]:
            for src in text_sources:
                yield from iter_text(src, should_stop=should_stop)

        # Characters ≈ bytes for progress purposes; exact bytes are reported per file at the end.
        counts = count_pretokens(chunks_for(pretokenizer, chunks()), pretokenizer=pretokenizer,
                                 normalizer=tuple(normalizer), workers=workers, on_chunk=on_bytes,
                                 should_stop=should_stop)
    normalize = make_normalizer(tuple(normalizer))
    for src in sources:
        if src.kind == "wordcounts":
            for word, count in iter_word_counts(src, should_stop=should_stop):
                word = normalize(word)
                counts[word] = counts.get(word, 0) + count
            on_bytes(src.size)
    return counts
