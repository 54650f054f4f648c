"""Extend an existing tokenizer (``workbench extend``, the Train tab's "Extend an existing tokenizer").

An :class:`ExtendRequest` names the base (anything ``--tokenizer`` takes: a run, a ``.tiktoken``,
GPT-2 files, a ``tokenizer.json``, a ``vocab.txt``, a Unigram ``.model``), the corpus and how many
tokens to add; :func:`extend_run`
stores it as an ordinary run (the merges rows hold the base's merges, ranks kept, then the new
ones; the settings record the base under ``extend``), through the same
:func:`~workbench.tasks.train.train_run` as training — progress, cancel and the writer included.
The algorithm is :mod:`workbench.core.extend`.

:func:`extension_report` is what the window's report and ``--json`` show: tokens per character per
file before and after (language from the file name, as Compare labels files), the share of a
reference (base-domain) file's lines whose ids change with the new merge responsible for each, and
the rank-dead check. :func:`new_tokens_csv` writes ``new_id,token,bytes,parent_left,parent_right``
for initialising the new embeddings.

WordPiece and Unigram bases go through :mod:`workbench.core.extend_pieces` (no merges to continue).
Left out: SentencePiece BPE bases (refused with the reason), trimming.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from workbench.core.extend import ExtendConfig, ExtendTrainer, TokenFilter, fired_tokens
from workbench.core.model import Tokenizer
from workbench.errors import ConfigError, WorkbenchError
from workbench.tasks.spec import CorpusFile, RunSpec
from workbench.tasks.train import Progress, count_words, open_sources, train_run

SPEC_KIND = "extend"
#: Lines of a reference file read for the changed-lines share (enough for a stable share, cheap).
REFERENCE_LINES = 20_000


@dataclass(frozen=True)
class ExtendRequest:
    """One extension, as the CLI's flags or the window's form give it (and its JSON spec file)."""

    base: str
    files: tuple[CorpusFile, ...] = ()
    add: int = 1000
    min_frequency: int = 2
    scripts: tuple[str, ...] = ()
    chars: str = ""
    pad_to: int = 0
    name: str = ""
    project: str = ""

    def config(self) -> ExtendConfig:
        return ExtendConfig(self.add, self.min_frequency, tuple(self.scripts), self.chars, self.pad_to)

    def validate(self) -> ExtendRequest:
        """Check what can be checked without reading anything; raises ConfigError naming the field."""
        if not self.base:
            raise ConfigError("base", "name the tokenizer to extend (a run, .tiktoken, tokenizer.json or vocab.json)")
        if not isinstance(self.add, int) or self.add < 1:
            raise ConfigError("add", "say how many tokens to add: a whole number of at least 1")
        if not isinstance(self.min_frequency, int) or self.min_frequency < 1:
            raise ConfigError("min_frequency", "the minimum frequency is a whole number of at least 1")
        if self.pad_to not in (0, 64, 128):
            raise ConfigError("pad_to", f"pad the vocabulary to a multiple of 64 or 128, not {self.pad_to}")
        TokenFilter(self.scripts, self.chars)  # names an unknown script or class
        return self

    def to_json(self) -> str:
        data: dict[str, Any] = {"kind": SPEC_KIND}
        for f in fields(self):
            value = getattr(self, f.name)
            data[f.name] = [cf.to_dict() for cf in value] if f.name == "files" else (
                list(value) if isinstance(value, tuple) else value)
        return json.dumps(data, ensure_ascii=False, indent=2)

    @classmethod
    def from_json(cls, text: str, where: str = "the extension spec") -> ExtendRequest:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WorkbenchError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
        if not isinstance(data, dict) or data.get("kind") != SPEC_KIND:
            raise WorkbenchError(f"{where}: not an extension spec (\"kind\": \"extend\" is missing)")
        known = {f.name for f in fields(cls)}
        if unknown := sorted(set(data) - known - {"kind"}):
            raise WorkbenchError(f"{where}: unknown field {unknown[0]!r}")
        values = {k: v for k, v in data.items() if k in known}
        values["files"] = tuple(CorpusFile.from_dict(f, where) for f in values.get("files") or ())
        values["scripts"] = tuple(values.get("scripts") or ())
        return cls(**values)


def base_problem(base: Tokenizer) -> str | None:
    """Why ``base`` cannot be extended (None: it can)."""
    if base.model == "bpe" and base.merge_rule == "scores":
        return ("the base is a SentencePiece BPE model (pieces merge by score): extension continues merge lists "
                "(byte-level or character BPE), WordPiece vocabularies and Unigram models")
    return None


def extend_run(request: ExtendRequest, project: str | os.PathLike | None = None, *,
               report: Callable[[Progress], None] | None = None,
               should_stop: Callable[[], bool] | None = None, count_cache: bool = True,
               suspendable: bool = False) -> tuple[int | None, str]:
    """Extend the base on the corpus and store the result as a run; returns (run id, status).
    ``suspendable``: as :func:`~workbench.tasks.train.train_run`'s (the window may pause the process)."""
    from workbench.tasks.sources import load_tokenizer

    request = request.validate()
    base = load_tokenizer(request.base)
    if problem := base_problem(base):
        raise ConfigError("base", problem)
    config = request.config()
    if base.model != "bpe":
        return _extend_pieces(request, base, project, report=report, should_stop=should_stop,
                              count_cache=count_cache, suspendable=suspendable)
    spec = RunSpec(files=request.files, model="bpe", merges=request.add, units=base.units,
                   end_of_word=base.end_of_word, pretokenizer=base.pretokenizer,
                   normalizer=tuple(base.normalizer), min_frequency=request.min_frequency,
                   special_tokens=(), name=request.name or f"{base.name or 'base'} + {request.add}",
                   project=str(project or request.project))
    source = {"source": request.base, "name": base.name, "vocab_size": len(base.vocab),
              "merge_rule": base.merge_rule}

    def make(counts: Mapping[str, int], _spec: RunSpec, _stop: Callable[[], bool] | None = None) -> ExtendTrainer:
        return ExtendTrainer(base, counts, config, base_source=source)

    return train_run(spec, project, report=report, should_stop=should_stop, count_cache=count_cache,
                     make_trainer=make, suspendable=suspendable)


def _extend_pieces(request: ExtendRequest, base: Tokenizer, project, *, report, should_stop,
                   count_cache: bool, suspendable: bool = False) -> tuple[int | None, str]:
    """A WordPiece or Unigram base (:mod:`workbench.core.extend_pieces`): counted as its family
    counts (pre-tokens; Unigram: whole lines, cut into SentencePiece words here)."""
    from workbench.core.extend_pieces import UnigramExtendTrainer, WordPieceExtendTrainer
    from workbench.tasks.models import unigram_words

    config = request.config()
    unigram = base.model == "unigram"
    spec = RunSpec(files=request.files, model=base.model, vocab_size=len(base.vocab) + request.add,
                   pretokenizer=base.pretokenizer, normalizer=tuple(base.normalizer),
                   min_frequency=None if unigram else request.min_frequency, special_tokens=(),
                   name=request.name or f"{base.name or 'base'} + {request.add}",
                   project=str(project or request.project))
    source = {"source": request.base, "name": base.name, "vocab_size": len(base.vocab), "merge_rule": base.merge_rule}

    def make(counts: Mapping[str, int], _spec: RunSpec, stop: Callable[[], bool] | None = None):
        if not unigram:
            return WordPieceExtendTrainer(base, counts, config, base_source=source)
        from workbench.core.normalize import make_normalizer

        normalize = make_normalizer(tuple(base.normalizer)) if base.normalizer else None
        words: dict[str, int] = {}
        for line, count in counts.items():
            for word in unigram_words(line, normalize):
                words[word] = words.get(word, 0) + count
        return UnigramExtendTrainer(base, words, config, base_source=source)

    return train_run(spec, project, report=report, should_stop=should_stop, count_cache=count_cache,
                     make_trainer=make, suspendable=suspendable)


# ---- the report --------------------------------------------------------------------------------------
@dataclass
class FileChange:
    path: str
    language: str
    chars: int
    tokens_before: int
    tokens_after: int
    unknown_before: int = 0  # tokens that are the unknown token (a base that cannot spell the file)
    unknown_after: int = 0
    # characters those unknown tokens stand for: what the tokenizer cannot spell (an extension that
    # spells more of a script can emit *more* unknown tokens — one unknown run split by new pieces —
    # while it loses fewer characters, so the report leads with this)
    lost_before: int = 0
    lost_after: int = 0

    @property
    def before(self) -> float:
        return self.tokens_before / self.chars if self.chars else 0.0

    @property
    def after(self) -> float:
        return self.tokens_after / self.chars if self.chars else 0.0

    def as_dict(self) -> dict:
        return {"path": self.path, "language": self.language, "chars": self.chars,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "tokens_per_char_before": round(self.before, 5), "tokens_per_char_after": round(self.after, 5),
                "unknown_before": self.unknown_before, "unknown_after": self.unknown_after,
                "chars_lost_before": self.lost_before, "chars_lost_after": self.lost_after}


@dataclass
class ExtensionReport:
    """What an extension changed (see the module docstring)."""

    base_vocab_size: int
    new_tokens: int
    files: list[FileChange]
    reference: str | None = None
    reference_lines: int = 0
    changed_lines: int = 0
    changes: list[dict] = field(default_factory=list)  # per changed line: line, responsible new id/token
    responsible: dict[int, int] = field(default_factory=dict)  # new id → changed lines it is first in
    dead: list[int] = field(default_factory=list)  # new ids never made on the extension corpus
    intermediate_only: int = 0  # new ids made but always joined further (never in the output)
    skipped: dict = field(default_factory=dict)

    @property
    def changed_share(self) -> float:
        return self.changed_lines / self.reference_lines if self.reference_lines else 0.0

    def as_dict(self) -> dict:
        return {"base_vocab_size": self.base_vocab_size, "new_tokens": self.new_tokens,
                "files": [f.as_dict() for f in self.files],
                "reference": None if self.reference is None else {
                    "path": self.reference, "lines": self.reference_lines, "changed_lines": self.changed_lines,
                    "changed_share": round(self.changed_share, 6), "changes": self.changes[:100],
                    "responsible": {str(k): v for k, v in sorted(self.responsible.items(), key=lambda kv: -kv[1])}},
                "rank_dead": len(self.dead), "rank_dead_ids": self.dead[:100],
                "intermediate_only": self.intermediate_only, "skipped_candidates": self.skipped}


def load_extension(project: str | os.PathLike, run_id: int) -> tuple[Tokenizer, Tokenizer, dict]:
    """``(base, extended, extend settings)`` of an extension run (the base is rebuilt from the run's
    own rows: its ids and merges are the run's first ones; a character-level base with the
    characters the extension added to its alphabet)."""
    from workbench.store import ProjectStore

    with ProjectStore.open(Path(project), readonly=True) as store:
        extended = store.load_tokenizer(run_id)
        settings = store.run(run_id).settings
    meta = settings.get("extend")
    if not isinstance(meta, dict):
        raise WorkbenchError(f"run {run_id} is not an extension of another tokenizer")
    # A character-level base gets the extension corpus's new characters as base symbols first: the
    # "before" of the report is the base with them (else it could not spell that corpus at all).
    base_size = int(meta["base_vocab_size"]) + int(meta.get("alphabet_added") or 0)
    base_merges = int(meta["base_merges"])
    reserved = {t for t, i in extended.special_tokens.items() if i >= base_size}
    # A Unigram extension re-estimated the base's scores: the base's own are kept in the settings.
    scores = tuple(meta["base_scores"]) if "base_scores" in meta else \
        tuple(extended.scores[:base_size]) if extended.scores else ()
    base = replace(extended, vocab=extended.vocab[:base_size], merges=extended.merges[:base_merges],
                   special_tokens={t: i for t, i in extended.special_tokens.items() if t not in reserved},
                   scores=scores)
    return base, extended, meta


def extension_report(base: Tokenizer, extended: Tokenizer, files: Sequence[CorpusFile], *,
                     reference: str | None = None, reference_lines: int = REFERENCE_LINES,
                     skipped: Mapping | None = None, alphabet_added: int = 0) -> ExtensionReport:
    """Tokens per character per file of the extension corpus ``files`` and of ``reference`` before and
    after, the reference's changed lines, and the rank-dead check on ``files``.

    ``alphabet_added``: the characters a character-level base got first (the last ids of ``base``).
    Tokens "before" are counted with them (the base as shipped would turn whole words into one unknown
    token: fewer tokens, not better), but what "before" loses to the unknown token is the base as
    shipped: the characters it could not spell are what the extension is for."""
    from workbench.core.encoder import Encoder
    from workbench.core.metrics import encode_pretoken, usage_pretokenizer
    from workbench.corpus.language import language_from_name

    first_new = len(base.vocab)
    new_ids = [i for i in range(first_new, len(extended.vocab)) if i not in extended.special_ids]
    before, after = Encoder(base), Encoder(extended)
    shipped = before
    if alphabet_added > 0:
        shipped = Encoder(replace(base, vocab=base.vocab[:-alphabet_added],
                                  scores=base.scores[:-alphabet_added] if base.scores else ()))
    out = ExtensionReport(first_new, len(new_ids), [], skipped=dict(skipped or {}))
    combined: dict[str, int] = {}  # the extension corpus as one table: the rank-dead check's input
    tables = [(cf, True) for cf in files] + ([(CorpusFile(reference), False)] if reference is not None else [])
    # A Unigram lattice spans a line: such a model counts and encodes whole lines (as vocab_usage)
    pretokenizer, normalizer = usage_pretokenizer(extended)
    by_line = pretokenizer == "none"
    unk = after.unknown_id  # the encoder knows it for every family (WordPiece keeps its own)
    emitted = [0] * (len(extended.vocab) - first_new)
    for cf, extension in tables:
        counts, _ = count_words(open_sources([cf]), pretokenizer, normalizer)
        chars = tokens_before = tokens_after = unknown_before = unknown_after = lost_before = lost_after = 0
        for word, n in counts.items():
            chars += n * len(word)
            old = before.encode(word) if by_line else encode_pretoken(before, word)
            tokens_before += n * len(old)
            ids = after.encode(word) if by_line else encode_pretoken(after, word)
            tokens_after += n * len(ids)
            if unk is not None:
                if shipped is not before:
                    old = shipped.encode(word) if by_line else encode_pretoken(shipped, word)
                unknown_before += n * old.count(unk)
                unknown_after += n * ids.count(unk)
                lost_before += n * shipped.chars_lost(word, old, pretoken=not by_line)
                lost_after += n * after.chars_lost(word, ids, pretoken=not by_line)
            if extension:
                combined[word] = combined.get(word, 0) + n
                if extended.model != "bpe":
                    for token_id in ids:
                        if token_id >= first_new:
                            emitted[token_id - first_new] += n
        out.files.append(FileChange(cf.path, language_from_name(cf.path) or Path(cf.path).stem, chars,
                                    tokens_before, tokens_after, unknown_before, unknown_after,
                                    lost_before, lost_after))
    if combined and extended.model != "bpe":  # no merges: a new piece is made only when emitted
        out.dead = [i for i in new_ids if not emitted[i - first_new]]
    elif combined:
        made, emitted = fired_tokens(extended, combined, first_new, encoder=after)
        out.dead = [i for i in new_ids if not made[i - first_new]]
        out.intermediate_only = sum(1 for i in new_ids if made[i - first_new] and not emitted[i - first_new])
    if reference is not None:
        out.reference = reference
        _reference_changes(out, before, after, first_new, reference, reference_lines)
    return out


def _reference_changes(out: ExtensionReport, before, after, first_new: int, path: str, limit: int) -> None:
    """Lines of ``path`` whose ids differ; the responsible merge is the lowest new id in the new ids."""
    from workbench.core.display import piece_text

    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            for number, line in enumerate(handle, 1):
                if number > limit:
                    break
                out.reference_lines += 1
                old, new = before.encode(line), after.encode(line)
                if old == new:
                    continue
                out.changed_lines += 1
                fresh = [i for i in new if i >= first_new]
                culprit = min(fresh) if fresh else None
                if culprit is not None:
                    out.responsible[culprit] = out.responsible.get(culprit, 0) + 1
                if len(out.changes) < 1000:
                    out.changes.append({"line": number, "new_id": culprit,
                                        "token": None if culprit is None else
                                        piece_text(after.tok.vocab[culprit], visible_space=True)})
    except OSError as exc:
        raise WorkbenchError(f"{path}: cannot read the reference file ({exc.strerror or exc})") from None


NEW_TOKENS_HEADER = ("new_id", "token", "bytes", "parent_left", "parent_right")


def new_tokens_csv(extended: Tokenizer, first_new: int, path: str | Path | None) -> str:
    """``new_id,token,bytes,parent_left,parent_right`` for every new token (bytes in hex; no parents
    for a character a character-level base lacked); written atomically to ``path`` (None: only returned)."""
    from workbench.core.display import piece_hex, piece_text
    from workbench.formats.tables import write_csv

    parents = {new: (a, b) for a, b, new in extended.merges if new >= first_new}
    rows = []
    for new in range(first_new, len(extended.vocab)):
        if new in extended.special_ids:
            continue  # reserved specials have no bytes to initialise from
        piece = extended.vocab[new]
        a, b = parents.get(new, ("", ""))  # a character added to a character-level alphabet has none
        rows.append((new, piece_text(piece, visible_space=True), piece_hex(piece), a, b))
    return write_csv(path, NEW_TOKENS_HEADER, rows)
