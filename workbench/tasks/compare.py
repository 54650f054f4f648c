"""Compare tokenizers on corpus files: the use case behind ``workbench stats``, ``workbench sweep``
and the Compare tab (the CLI and the window call exactly these functions).

* :func:`compare_corpus` — per tokenizer × file and × language: :class:`~workbench.core.corpus_metrics
  .Metrics` rows, plus fairness against a baseline language.
* :func:`sweep_files` — the vocabulary-size sweep of one BPE, WordPiece or Unigram tokenizer over
  held-out files (a Unigram run's pruning checkpoints read by :func:`stored_checkpoints`).
* :func:`split_report` — the words whose splits differ most between two tokenizers.

Long work streams the files chunk by chunk, takes ``should_stop`` / ``progress`` hooks, and keeps
its results in a :class:`ResultCache` keyed by the file's fingerprint (size + SHA-256), its reader
options and the tokenizer's identity — so asking again (or reopening the window) shows them at
once, and a changed file is counted afresh. Left out: formatting (the CLI and ``ui/compare`` do it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from workbench.core.corpus_metrics import (
    DEFAULT_D,
    METRICS_VERSION,
    Fairness,
    Metrics,
    TextTally,
    TokenCounts,
    TokenMeter,
    combine,
    fairness,
    language_cost_gini,
    tokenizer_identity,
    usage,
)
from workbench.core.display import piece_text
from workbench.core.expert_metrics import DEFAULT_ALPHA, check_alpha, check_basis
from workbench.core.metrics import Progress, ShouldStop
from workbench.core.model import Tokenizer
from workbench.core.unigram import PruningCheckpoint
from workbench.core.vocab_diff import SplitReport, split_differences
from workbench.core.vocab_sweep import (
    DEFAULT_POINTS,
    DEFAULT_THRESHOLD,
    HeldOut,
    Sweep,
    SweepPoint,
    check_points,
    sweep,
    unigram_checkpoints,
)
from workbench.corpus import CorpusSource, file_stats, fingerprint, iter_text
from workbench.corpus.language import language_from_name
from workbench.corpus.location import corpus_path, stored_path
from workbench.errors import WorkbenchError
from workbench.tasks.gini_pairs import GiniPair

log = logging.getLogger(__name__)

APP_FOLDER = "tokenizer-workbench"


# ---- the cache -----------------------------------------------------------------------------------------
def default_cache_dir() -> Path:
    """The platform's cache folder: ``$WORKBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME`` (Linux),
    ``~/Library/Caches`` (macOS) or ``%LOCALAPPDATA%`` (Windows), each + ``tokenizer-workbench/metrics``.

    A cache, not the project file: the numbers depend only on (file bytes, tokenizer), are shared
    across projects, can be deleted at any time, and must not make a project file grow or be
    written while another process trains into it.
    """
    override = os.environ.get("WORKBENCH_CACHE_DIR")
    if override:
        return Path(override)
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / APP_FOLDER / "metrics"


class ResultCache:
    """JSON results in a folder, one file per key; ``folder=None`` keeps nothing.

    A broken or unreadable entry counts as missing (and is logged): a cache must never stop the
    user. Entries are written to a temporary name and renamed, so a reader never sees half a file.
    """

    def __init__(self, folder: Path | None):
        self.folder = folder
        self.hits = self.misses = 0

    @classmethod
    def default(cls) -> ResultCache:
        return cls(default_cache_dir())

    @staticmethod
    def key(*parts: object) -> str:
        raw = json.dumps([METRICS_VERSION, *parts], sort_keys=True, default=str)
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    def get(self, key: str) -> dict | None:
        if self.folder is None:
            return None
        path = self.folder / key[:2] / f"{key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring cache entry %s: %s", path, exc)
            self.misses += 1
            return None
        self.hits += 1
        return data

    def put(self, key: str, value: dict) -> None:
        if self.folder is None:
            return
        path = self.folder / key[:2] / f"{key}.json"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(value, separators=(",", ":")), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:  # a full or read-only cache folder only costs the next run time
            log.warning("cannot write cache entry %s: %s", path, exc)
            tmp.unlink(missing_ok=True)


# ---- progress over several files -------------------------------------------------------------------------
class _FileProgress:
    """Turns per-file byte progress into one ``progress(done, total, what)`` over all files."""

    def __init__(self, total: int, progress: Progress | None):
        self.total, self.progress, self.base = max(total, 1), progress, 0

    def reporter(self, src: CorpusSource, what: str) -> Callable[[int, int], None] | None:
        if self.progress is None:
            return None
        base, progress, total = self.base, self.progress, self.total
        return lambda done, _size: progress(min(base + done, total), total, f"{what} {src.path.name}")

    def advance(self, src: CorpusSource) -> None:
        self.base += src.size


def _file_key(src: CorpusSource, fp: str) -> list:
    return [fp, src.reader_options()]


def _text_chunks(src: CorpusSource, **kw):
    if src.kind == "wordcounts":
        raise WorkbenchError(f"{src.path}: is a word-count table: token counts, L² and fertility need "
                             "running text — give the text files (.txt, .jsonl, .csv …)")
    return iter_text(src, **kw)


# ---- per file × tokenizer ------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileInfo:
    """A corpus file as the tables list it (the same numbers ``workbench stats`` always printed)."""

    path: str
    fingerprint: str
    language: str
    language_given: bool
    bytes: int
    chars: int
    lines: int
    distinct_pretokens: int
    scripts: dict[str, int]
    text: TextTally

    def as_dict(self) -> dict:
        return {"path": self.path, "language": self.language, "language_from": "label" if self.language_given else "script",
                "bytes": self.bytes, "chars": self.chars, "lines": self.lines,
                "distinct_pretokens": self.distinct_pretokens, "scripts": self.scripts,
                "words": self.text.words, "word_units": self.text.units}


@dataclass
class CompareResult:
    files: list[FileInfo]
    per_file: list[Metrics]        # tokenizer-major: for each tokenizer, its rows in file order
    per_language: list[Metrics]    # for each tokenizer, one row per language (first-seen order)
    totals: list[Metrics]          # one row per tokenizer, all files together
    fairness: list[Fairness] = field(default_factory=list)
    baseline: str | None = None
    parallel: bool = False
    never_used: dict[str, list[int]] = field(default_factory=dict)  # tokenizer → ids never used
    cache_hits: int = 0
    # Frontier runs against classic BPE of the same size (the Compare tab's "Gini vs classic BPE")
    gini_pairs: list[GiniPair] = field(default_factory=list)

    @property
    def languages(self) -> list[str]:
        return list(dict.fromkeys(f.language for f in self.files))

    def as_dict(self, tokenizers: Mapping[str, Tokenizer] | None = None, never_used_listed: int = 50) -> dict:
        """The ``workbench stats --json`` document (see the README)."""
        def pieces(name: str) -> list[str]:
            tok = tokenizers.get(name) if tokenizers else None
            ids = self.never_used.get(name, [])[:never_used_listed]
            return [piece_text(tok.vocab[i]) for i in ids] if tok else []

        return {
            "files": [f.as_dict() for f in self.files],
            "per_file": [m.as_dict() for m in self.per_file],
            "per_language": [m.as_dict() for m in self.per_language],
            "totals": [dict(m.as_dict(), never_used_sample=pieces(m.tokenizer)) for m in self.totals],
            "fairness": {"baseline": self.baseline, "basis": "parallel" if self.parallel else "per-char",
                         "rows": [f.as_dict() for f in self.fairness],
                         # each tokenizer's Gini of per-language token cost (also its totals row's gini_language_cost)
                         "gini": {m.tokenizer: m.gini for m in self.totals}} if self.baseline else None,
        }


def _match_language(wanted: str, languages: Sequence[str]) -> str:
    for lang in languages:
        if lang.casefold() == wanted.casefold():
            return lang
    raise WorkbenchError(f"--baseline-language {wanted}: no file has that language "
                         f"(found: {', '.join(languages) or 'none'}); label files with --language FILE=LANG")


def compare_corpus(tokenizers: Sequence[tuple[str, Tokenizer]], sources: Sequence[CorpusSource], *,
                   labels: Mapping[str, str] | None = None, baseline: str | None = None,
                   parallel: bool = False, d: int = DEFAULT_D, cache: ResultCache | None = None,
                   alpha: float = DEFAULT_ALPHA, basis: str = "declared",
                   should_stop: ShouldStop | None = None,
                   progress: Progress | None = None) -> CompareResult | None:
    """Metrics of every tokenizer on every file, per language and in total (None if stopped).

    ``labels`` maps a file path (as given, or resolved) to a language; files without a label get
    the language code their name carries (``en_wiki.txt``, ``news.de.txt``: :mod:`workbench.corpus.language`),
    else their dominant script (:attr:`workbench.corpus.CorpusStats.dominant_script`). Each file is read
    at most twice (statistics, then one pass feeding every tokenizer not yet cached).

    ``alpha`` (Rényi α) and ``basis`` (|V| of the efficiencies) are applied to the counted id
    frequencies when the rows are assembled: the cached counts do not depend on them, so changing
    them answers from the cache.
    """
    alpha, basis = check_alpha(alpha), check_basis(basis)
    if d <= 0:
        raise WorkbenchError(f"--d {d}: the embedding width must be a positive number (e.g. 768)")
    cache = cache or ResultCache(None)
    hits0 = cache.hits
    labels = {stored_path(corpus_path(k)): v for k, v in (labels or {}).items()}
    given = {stored_path(src.path) for src in sources}
    for path, lang in labels.items():
        if path not in given:
            raise WorkbenchError(f"--language {path}={lang}: that file is not among the files given; "
                                 "label one of the FILES")
    identities = [tokenizer_identity(tok) for _name, tok in tokenizers]
    steps = _FileProgress(sum(s.size for s in sources) * (1 + bool(tokenizers)), progress)
    stop = should_stop or (lambda: False)
    files: list[FileInfo] = []
    counts: list[list[TokenCounts]] = [[] for _ in tokenizers]
    for src in sources:
        fp = fingerprint(src.path)
        info = _file_info(src, fp, labels, cache, steps, stop)
        if info is None:
            return None
        files.append(info)
        per_tok = _token_counts(src, fp, tokenizers, identities, cache, steps, stop)
        if per_tok is None:
            return None
        for i, c in enumerate(per_tok):
            counts[i].append(c)
    result = _assemble(tokenizers, files, counts, d, alpha, basis, parallel)
    if baseline:
        result.baseline = _match_language(baseline, result.languages)
        result.parallel = parallel
        result.fairness = fairness(result.per_language, result.baseline, parallel=parallel)
    result.cache_hits = cache.hits - hits0
    return result


def _file_info(src: CorpusSource, fp: str, labels: Mapping[str, str], cache: ResultCache,
               steps: _FileProgress, stop: ShouldStop) -> FileInfo | None:
    key = cache.key("file", _file_key(src, fp))
    data = cache.get(key)
    if data is None:
        tally = TextTally()

        def split(text: str) -> list[str]:
            # file_stats hands each chunk of running text to ``split`` once, in order: the word
            # units ride along on its pass instead of reading the file a second time.
            if src.kind != "wordcounts":
                tally.add(text)
            return text.split()

        st = file_stats(src, split=split, preview_lines=0, progress=steps.reporter(src, "reading"),
                        should_stop=stop)
        if not st.complete:
            return None
        tally.finish()
        data = {"bytes": st.bytes, "chars": st.chars, "lines": st.lines, "distinct_pretokens": st.distinct_pretokens,
                "scripts": st.scripts, "dominant": st.dominant_script, "text": tally.as_dict()}
        cache.put(key, data)
    steps.advance(src)
    given = labels.get(stored_path(src.path))
    language = given or language_from_name(str(src.path)) or data["dominant"] or "unknown"
    return FileInfo(str(src.path), fp, language, given is not None, data["bytes"],
                    data["chars"], data["lines"], data["distinct_pretokens"], dict(data["scripts"]),
                    TextTally.from_dict(data["text"]))


def _token_counts(src: CorpusSource, fp: str, tokenizers: Sequence[tuple[str, Tokenizer]],
                  identities: Sequence[str], cache: ResultCache, steps: _FileProgress,
                  stop: ShouldStop) -> list[TokenCounts] | None:
    keys = [cache.key("tokens", _file_key(src, fp), ident) for ident in identities]
    found: list[TokenCounts | None] = []
    for key in keys:
        data = cache.get(key)
        found.append(TokenCounts.from_dict(data) if data is not None else None)
    missing = [i for i, c in enumerate(found) if c is None]
    if missing:
        meters = {i: TokenMeter(tokenizers[i][1]) for i in missing}
        for chunk in _text_chunks(src, progress=steps.reporter(src, "encoding"), should_stop=stop):
            for meter in meters.values():
                meter.add(chunk)
        if stop():
            return None
        for i, meter in meters.items():
            found[i] = meter.finish()
            cache.put(keys[i], found[i].as_dict())  # type: ignore[union-attr]
    if tokenizers:
        steps.advance(src)
    return [c for c in found if c is not None]


def _assemble(tokenizers: Sequence[tuple[str, Tokenizer]], files: list[FileInfo],
              counts: list[list[TokenCounts]], d: int, alpha: float = DEFAULT_ALPHA,
              basis: str = "declared", parallel: bool = False) -> CompareResult:
    per_file, per_language, totals = [], [], []
    never_used: dict[str, list[int]] = {}
    languages = list(dict.fromkeys(f.language for f in files))
    for (name, tok), tok_counts in zip(tokenizers, counts):
        rows = [Metrics.of(tok, name, f.path, f.language, f.text, c, d, alpha=alpha, basis=basis)
                for f, c in zip(files, tok_counts)]
        per_file.extend(rows)
        mine = [combine([r for r in rows if r.language == lang], tok, lang) for lang in languages]
        per_language.extend(mine)
        total = replace(combine(rows, tok, "all files"), gini=language_cost_gini(mine, parallel=parallel))
        totals.append(total)
        never_used[name] = usage(tok, total.counts).never_used
    return CompareResult(files, per_file, per_language, totals, never_used=never_used)


# ---- the sweep ----------------------------------------------------------------------------------------
NO_CHECKPOINTS = ("no pruning checkpoints are stored for this Unigram run (trained before they were kept, "
                  "or one that never pruned): the points are the final model cut to its most probable pieces")


def stored_checkpoints(src: str) -> tuple[PruningCheckpoint, ...]:
    """The pruning checkpoints of the Unigram run ``src`` names (``P.tokproj#RUN``, or a project's
    latest usable run); empty for anything else (other files, references, other models)."""
    from workbench.store import ProjectStore
    from workbench.tasks.import_export import latest_usable_run
    from workbench.tasks.sources import PROJECT_SUFFIX, split_project_ref

    path, ref = split_project_ref(src)
    if path.suffix != PROJECT_SUFFIX or not path.exists() or (ref is not None and ref.startswith("ref:")):
        return ()
    with ProjectStore.open(path, readonly=True) as store:
        try:
            run_id = int(ref) if ref is not None else latest_usable_run(store)
        except ValueError:
            return ()  # load_tokenizer already said what is wrong with the id
        return tuple(store.pruning_checkpoints(run_id)) if run_id is not None else ()


def sweep_source(src: str) -> tuple[Tokenizer, tuple[PruningCheckpoint, ...]]:
    """The tokenizer ``src`` names and, for a Unigram run, its stored pruning checkpoints — both from
    one run: a project without ``#RUN`` is pinned to its latest usable run first, so a run finishing
    between the two look-ups cannot pair one run's tokenizer with another's checkpoints."""
    from workbench.store import ProjectStore
    from workbench.tasks.import_export import latest_usable_run
    from workbench.tasks.sources import PROJECT_SUFFIX, load_tokenizer, split_project_ref

    path, ref = split_project_ref(src)
    if ref is None and path.suffix == PROJECT_SUFFIX and path.exists():
        with ProjectStore.open(path, readonly=True) as store:
            run_id = latest_usable_run(store)
        if run_id is not None:
            src = f"{path}#{run_id}"
    tokenizer = load_tokenizer(src)
    return tokenizer, (stored_checkpoints(src) if tokenizer.model == "unigram" else ())


def sweep_files(tokenizer: Tokenizer, sources: Sequence[CorpusSource], *, name: str = "",
                points: int = DEFAULT_POINTS, d: int = DEFAULT_D, threshold: float = DEFAULT_THRESHOLD,
                pruning: Sequence[PruningCheckpoint] = (), cache: ResultCache | None = None,
                should_stop: ShouldStop | None = None, progress: Progress | None = None) -> Sweep | None:
    """The vocabulary-size sweep of ``tokenizer`` over the files as one held-out text (None if stopped).

    ``pruning``: a Unigram run's stored checkpoints (:func:`stored_checkpoints`), the points above
    its final size; without them a Unigram sweep has the cut points only, and its ``note`` says so.
    """
    check_points(points)  # before the files are read
    if d <= 0:
        raise WorkbenchError(f"--d {d}: the embedding width must be a positive number (e.g. 768)")
    cache = cache or ResultCache(None)
    fps = [_file_key(src, fingerprint(src.path)) for src in sources]
    unigram = tokenizer.model == "unigram"
    note = NO_CHECKPOINTS if unigram and not pruning else ""
    marks = [[cp.step, len(cp.pieces), hashlib.sha256(json.dumps([cp.pieces, cp.scores]).encode()).hexdigest()]
             for cp in pruning] if unigram else []
    key = cache.key("sweep", fps, tokenizer_identity(tokenizer), points, marks)
    data = cache.get(key)
    if data is None:
        text = HeldOut(tokenizer)
        steps = _FileProgress(sum(s.size for s in sources), progress)
        stop = should_stop or (lambda: False)
        for src in sources:
            for chunk in _text_chunks(src, progress=steps.reporter(src, "reading"), should_stop=stop):
                text.add(chunk)
            if stop():
                return None
            steps.advance(src)
        result = sweep(tokenizer, text.finish(), points=points, d=d, threshold=threshold, name=name,
                       should_stop=should_stop, progress=progress,
                       checkpoints=unigram_checkpoints(pruning) if unigram else None)
        if result is None:
            return None
        data = {"points": [[p.step, p.vocab_size, p.tokens, p.attention, p.chars, p.bytes, p.kind]
                           for p in result.points]}
        cache.put(key, data)
    pts = [SweepPoint(s, v, t, a, c, b, d, k) for s, v, t, a, c, b, k in data["points"]]
    return Sweep(name or tokenizer.name, pts, threshold, d, note)


# ---- split differences ---------------------------------------------------------------------------------
def split_report(a: Tokenizer, b: Tokenizer, sources: Sequence[CorpusSource], *,
                 should_stop: ShouldStop | None = None, progress: Progress | None = None) -> SplitReport | None:
    """Words of the files (whitespace-separated) whose splits differ, most frequent first."""
    from workbench.corpus.counts import corpus_word_counts

    counts = corpus_word_counts(list(sources), pretokenizer="whitespace", should_stop=should_stop, progress=progress)
    if counts is None:
        return None
    return split_differences(a, b, counts, should_stop=should_stop, progress=progress)
