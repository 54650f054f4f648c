"""Pre-token counts tables: write, read, merge, check — and the per-partition counting function.

A counts table (``*.wordcounts.tsv``) is what ``workbench count`` writes and what a cluster job
(Dask, Spark) writes with :func:`count_partition`, so a corpus too big for one machine is counted
where it lives and trained from here. Layout::

    # workbench-counts v1 {"distinct": 2, "normalizer": [], "pretokenizer": "gpt2", ...}
    Hello<TAB>3
    \\tworld\\n<TAB>1

Line 1 records the settings that produced the counts (pre-tokenizer, normalizer, sequences) plus
the number of rows and tokens (which lets a reader notice a truncated table). Words are escaped
as :mod:`workbench.corpus.records` documents (``\\\\ \\t \\n \\r \\xNN \\uNNNN``), so every
pre-token round-trips through any line-based tool. Rows are in order of first appearance, the
order the ``first-seen`` tie-break reads. Plain ``word<TAB>count`` tables (no header) still read.

Left out: sorting, top-k pruning and compression (gzip the output if wanted; the reader takes
``.gz``). Tables are merged in memory: the distinct pre-tokens must fit, as they must for training.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from workbench.core.atomic import replacing
from workbench.core.count import check_sequences, count_batches, split_lines
from workbench.core.normalize import parse_normalizer
from workbench.core.pretokenize import make_pretokenizer
from workbench.corpus import records
from workbench.errors import WorkbenchError

FORMAT_VERSION = 1
SETTING_KEYS = ("pretokenizer", "normalizer", "sequences")


def counts_settings(pretokenizer: str = "gpt2", normalizer: str | Sequence[str] | None = (),
                    sequences: str = "lines") -> dict:
    """The canonical settings a table records (and that two tables must share to be added)."""
    return {
        "pretokenizer": make_pretokenizer(pretokenizer).spec(),
        "normalizer": list(parse_normalizer(normalizer)) if normalizer else [],
        "sequences": check_sequences(sequences),
    }


def check_counts_settings(table_settings: Mapping, pretokenizer: str, normalizer: str | Sequence[str] | None,
                          sequences: str, *, where: str = "the counts table") -> None:
    """Refuse, in one line, a table whose counts were made with other settings than this run's.

    Training calls this before adding a table: counts made with another pre-tokenizer, normalizer
    or sequence rule would train a different tokenizer than the same text would.
    """
    wanted = counts_settings(pretokenizer, normalizer, sequences)
    for key in SETTING_KEYS:
        have = table_settings.get(key)
        if have != wanted[key]:
            raise WorkbenchError(f"{where}: counted with {key} {_shown(have)}, but this run uses {_shown(wanted[key])}: "
                                 f"recount with workbench count --{_flag(key)} {_shown(wanted[key])} or change the run")


def _shown(value) -> str:
    if isinstance(value, list):
        return ",".join(value) or "none"
    return str(value)


def _flag(key: str) -> str:
    return {"normalizer": "normalize"}.get(key, key)


# ---- counting ------------------------------------------------------------------------------------
def count_partition(texts: Iterable[str], settings: Mapping) -> Counter:
    """Pre-token counts of one partition of a corpus: the function a Dask or Spark job maps.

    ``texts`` are lines (with or without their ``"\\n"``: any text is cut into lines again) when
    ``settings["sequences"] == "lines"``, or whole documents when ``"documents"``. ``settings`` is
    what :func:`counts_settings` returns. The result is a plain picklable ``Counter`` in order of
    first appearance; adding partitions in corpus order (``Counter.update`` or
    :func:`merge_counts`) gives exactly the table ``workbench count`` writes for the same text.
    """
    settings = counts_settings(settings["pretokenizer"], settings.get("normalizer") or (),
                               settings.get("sequences", "lines"))
    if settings["sequences"] == "lines":
        batch = [line for text in texts for line in split_lines(text)]
    else:
        batch = [text for text in texts if text]
    return Counter(count_batches([batch], pretokenizer=settings["pretokenizer"],
                                 normalizer=tuple(settings["normalizer"])))


def merge_counts(tables: Iterable[Mapping[str, int]]) -> Counter:
    """Add count tables in order (words new to the sum go after the old ones)."""
    total: Counter = Counter()
    for table in tables:
        total.update(table)
    return total


# ---- files ---------------------------------------------------------------------------------------
def render_header(counts: Mapping[str, int], settings: Mapping, extra: Mapping | None = None, *,
                  totals: tuple[int, int] | None = None) -> str:
    """Line 1: the settings, the row and token totals (and any ``extra`` fields, e.g. a cache key).
    ``totals``: ``(rows, tokens)`` of a table that is not held in memory (``counts`` is then ignored)."""
    meta = {key: settings.get(key) for key in SETTING_KEYS}
    meta.update(extra or {})
    distinct, tokens = totals if totals is not None else (len(counts), sum(counts.values()))
    meta.update(format="workbench-counts", version=FORMAT_VERSION, distinct=distinct, tokens=tokens)
    return records.COUNTS_HEADER + json.dumps(meta, sort_keys=True, ensure_ascii=True) + "\n"


def render_rows(counts: Mapping[str, int]) -> Iterable[str]:
    return render_row_pairs(counts.items())


def render_row_pairs(pairs: Iterable[tuple[str, int]]) -> Iterable[str]:
    """The table's rows from ``(word, count)`` pairs (a streamed table's too)."""
    escape = records.escape_count_word
    for word, n in pairs:
        yield f"{escape(word)}\t{n}\n"


def write_counts_table(path: str | os.PathLike[str], counts: Mapping[str, int], settings: Mapping) -> Path:
    """Write the table atomically (temp file beside it, fsync, rename): a reader or a killed job
    never sees half a table under the final name."""
    out = Path(path)
    if out.is_dir():
        raise WorkbenchError(f"{out}: is a folder: give a file name such as counts.wordcounts.tsv")
    if not out.parent.exists():
        raise WorkbenchError(f"{out}: the folder {out.parent} does not exist: create it or choose another path")
    atomic_write_lines(out, [render_header(counts, settings)], render_rows(counts))
    return out


def atomic_write_lines(out: Path, *parts: Iterable[str]) -> None:
    """Write text lines to ``out`` atomically (:func:`workbench.core.atomic.replacing`: a temp file
    beside it, fsynced and renamed; removed on any error), streaming, so a large table never has to
    be held whole in memory."""
    with replacing(out) as tmp, open(tmp, "x", encoding="utf-8", newline="") as handle:
        for part in parts:
            handle.writelines(part)


def read_counts_header(src) -> dict | None:
    """The settings line of a counts table (a path or a ``wordcounts`` source), or None if plain."""
    from workbench.corpus.source import content_stream, open_source

    if not hasattr(src, "kind"):
        src = open_source(src, kind="wordcounts")
    with content_stream(src) as (stream, _pos):
        first = stream.readline(1 << 16).decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r\n")
    return records.parse_counts_header(first, f"{src.path}:1")


def read_counts_table(path: str | os.PathLike[str]) -> tuple[dict | None, dict[str, int]]:
    """``(settings or None, {word: count})`` of a counts table, checked against its header's sizes."""
    from workbench.corpus.readers import iter_word_counts
    from workbench.corpus.source import open_source

    src = open_source(path, kind="wordcounts")
    settings = read_counts_header(src)
    fast = _read_rows_fast(src) if settings is not None else None
    if fast is not None:
        counts = fast
    else:  # plain tables, .gz, other encodings, or a problem whose file:line the reader names
        counts = {}
        for word, n in iter_word_counts(src):
            counts[word] = counts.get(word, 0) + n
    if settings is not None and (settings.get("distinct") not in (None, len(counts))
                                 or settings.get("tokens") not in (None, sum(counts.values()))):
        raise WorkbenchError(f"{src.path}: the table has {len(counts)} rows but its header says "
                             f"{settings.get('distinct')}: it is truncated or edited; regenerate it")
    return settings, counts


def _read_rows_fast(src) -> dict[str, int] | None:
    """The rows of a well-formed uncompressed UTF-8 table in a few C-level passes (what makes a
    count-cache hit cheap), or None when anything is unusual — the line reader then says what."""
    if src.compressed or src.encoding not in (None, "utf-8"):
        return None
    try:
        rows = src.path.read_bytes().decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    rows = rows[1:]  # the header
    if rows and rows[-1] == "":
        rows.pop()
    parts = [row.rpartition("\t") for row in rows]
    words = [part[0] for part in parts]
    if not all(words):  # a row without a tab or with an empty word
        return None
    try:
        numbers = [int(part[2]) for part in parts]
    except ValueError:
        return None
    if any(n < 0 for n in numbers) or any(not part[2].isdigit() for part in parts):
        return None
    where = str(src.path)
    unescape = records.unescape_count_word
    words = [unescape(w, where) if "\\" in w else w for w in words]
    counts = dict(zip(words, numbers))
    return counts if len(counts) == len(words) else None


def merge_counts_tables(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> tuple[dict, dict[str, int]]:
    """Add tables exactly into ``out``; tables counted with different settings are refused.

    Every input must carry a workbench header (a plain table does not say how it was counted, so
    adding it could mix pre-tokenizers silently).
    """
    if not paths:
        raise WorkbenchError("count --merge: name the tables to add (A.wordcounts.tsv B.wordcounts.tsv ...)")
    first_settings: dict | None = None
    first_path = ""
    total: dict[str, int] = {}
    for path in paths:
        settings, counts = read_counts_table(path)
        if settings is None:
            raise WorkbenchError(f"{path}: a plain word<TAB>count table does not say how it was counted: "
                                 "merge only tables written by workbench count")
        mine = {key: settings.get(key) for key in SETTING_KEYS}
        if first_settings is None:
            first_settings, first_path = mine, str(path)
        elif mine != first_settings:
            key = next(k for k in SETTING_KEYS if mine[k] != first_settings[k])
            raise WorkbenchError(f"{path}: counted with {key} {_shown(mine[key])}, but {first_path} with "
                                 f"{_shown(first_settings[key])}: merge only tables made with the same settings")
        for word, n in counts.items():
            total[word] = total.get(word, 0) + n
    assert first_settings is not None
    write_counts_table(out, total, first_settings)
    return first_settings, total
