"""Trim a tokenizer: the use case behind ``workbench trim`` and the Merges tab's trim preview.

:func:`preview_trim` works out what goes (the ids asked for, by hand or by an audit filter, and
their cascade, :mod:`workbench.core.trim`), the token-count change on held-out text and the entries
that the paper's test (decode, encode again) no longer finds reachable. :func:`apply_trim` stores
the trimmed tokenizer as a new run of a project (its settings record the source, the ids asked
for, the cascade and, renumbered, the old id of every new id) and/or exports it, verified in the
real library by :func:`~workbench.formats.export_tokenizer`; the ``old_id,new_id`` map is written
as CSV beside the export. BPE, WordPiece and Unigram (see :mod:`workbench.core.trim`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from workbench.core.audit import CONTEXT, REACHABLE, reachability
from workbench.core.display import parse_ids
from workbench.core.encoder import Encoder
from workbench.core.metrics import encode_pretoken, usage_pretokenizer
from workbench.core.model import MergeEvent, Tokenizer
from workbench.core.trim import TrimPlan, pieces, plan_trim, removable
from workbench.errors import WorkbenchError
from workbench.formats.common import MAX_UNUSED_IDS

ROUND_TRIP_LINES = 20_000  # held-out lines checked one by one (the token counts use every pre-token)
#: A trim removing more than this share of the vocabulary (the cascade included) is only done when
#: confirmed (``--yes``; the window asks): a residue filter's cascade can take most of a small one.
LARGE_SHARE = 0.10


@dataclass
class TrimResult:
    """A trim worked out (and, after :func:`apply_trim`, stored/exported)."""

    source: str
    original: Tokenizer
    plan: TrimPlan
    tokens_before: int | None = None
    tokens_after: int | None = None
    lines_checked: int = 0
    lines_round_trip: int = 0
    lines_round_trip_before: int = 0  # the original's own (a lowercasing WordPiece's is not all)
    lines_same_decode: int = 0  # lines the trimmed tokenizer decodes as the original does
    newly_unreachable: list[int] = field(default_factory=list)
    filters: dict[str, int] = field(default_factory=dict)  # filter → ids it selected
    run_id: int | None = None
    project: str | None = None
    exported: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    measured_on: str = "held-out text"  # or "the corpus" when no held-out text was given
    dry_run: bool = False
    counts: dict[str, int] | None = field(default=None, repr=False)  # the measured text, as encoded

    @property
    def entries_before(self) -> int:
        return sum(1 for x in self.original.vocab if x)

    @property
    def removed_share(self) -> float:
        return len(self.plan.removed) / self.entries_before if self.entries_before else 0.0

    @property
    def needs_confirmation(self) -> bool:
        """A large trim (see :data:`LARGE_SHARE`): shown, and done only when confirmed."""
        return self.removed_share > LARGE_SHARE

    def scale(self) -> str:
        """What the trim removes, for the confirmation: count, share, cascade and token cost."""
        p = self.plan
        text = (f"this trim removes {len(p.removed):,} of {self.entries_before:,} entries "
                f"({100 * self.removed_share:.1f} % of the vocabulary)")
        if p.cascade:
            text += f", {len(p.cascade):,} of them by the cascade (tokens built on the {len(p.requested):,} asked for)"
        if self.token_change is not None:
            text += f"; tokens on {self.measured_on} {100 * self.token_change:+.1f} %"
        return text

    def as_dict(self) -> dict:
        p = self.plan
        return {"source": self.source, "requested": list(p.requested), "cascade": list(p.cascade),
                "removed": len(p.removed), "removed_share": round(self.removed_share, 6), "dry_run": self.dry_run,
                "dropped_merges": p.dropped_merges, "compact": p.compact,
                "vocab_before": sum(1 for x in self.original.vocab if x),
                "vocab_after": sum(1 for x in p.tokenizer.vocab if x),
                "filters": self.filters, "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "measured_on": self.measured_on, "lines_checked": self.lines_checked, "lines_round_trip": self.lines_round_trip,
                "lines_round_trip_before": self.lines_round_trip_before, "lines_same_decode": self.lines_same_decode,
                "newly_unreachable": self.newly_unreachable, "run_id": self.run_id, "project": self.project,
                "exported": self.exported, "checks": self.checks, "notes": self.notes}

    @property
    def token_change(self) -> float | None:
        if not self.tokens_before or self.tokens_after is None:
            return None
        return self.tokens_after / self.tokens_before - 1


def select_ids(tok: Tokenizer, remove: str | Sequence[int] | None, filters: Sequence[str], *,
               corpus: Sequence = (), threshold: float = 0.1) -> tuple[list[int], dict[str, int], list[str]]:
    """``(ids, {filter: count}, notes)``: explicit ids (checked by the trim) plus every merge-made
    entry of each audit filter (base symbols and specials in a filter are kept, and said)."""
    from workbench.tasks.audit import audit_tokenizer

    ids = parse_ids(remove) if isinstance(remove, str) else list(remove or ())
    picked: dict[str, int] = {}
    notes: list[str] = []
    if filters:
        needs_corpus = {"residue", "never-used"} & set(filters)
        if needs_corpus and not corpus:
            raise WorkbenchError(f"--filter {sorted(needs_corpus)[0]} needs a corpus: give --corpus FILE "
                                 "(a project's run uses its own training files)")
        report = audit_tokenizer("trim", tok, corpus if needs_corpus else [], threshold=threshold)
        assert report is not None
        for name in filters:
            chosen = report.audit.ids(name)
            kept = removable(tok, chosen)
            if len(kept) < len(chosen):
                what = "single characters, byte pieces or specials" if pieces(tok) else "base symbols or specials"
                notes.append(f"--filter {name}: {len(chosen) - len(kept)} {what} kept (every text may need them)")
            picked[name] = len(kept)
            ids.extend(kept)
    if not ids:
        raise WorkbenchError("nothing to remove: give --remove IDS or a --filter that selects entries")
    return sorted(set(ids)), picked, notes


def held_out_texts(sources: Sequence) -> list[str]:
    """The held-out files as text, line by line (line ends kept, so the lines join to the file)."""
    from workbench.corpus.readers import iter_documents, iter_text

    lines: list[str] = []
    for src in sources:
        if src.kind == "text":
            text = "".join(iter_text(src))
            lines.extend(text.splitlines(keepends=True))
        else:
            for docs in iter_documents(src):
                for doc in docs:
                    lines.extend(doc.splitlines(keepends=True))
    return lines


def measure(result: TrimResult, held_out: Sequence, *, progress: Callable[[int, int, str], None] | None = None) -> None:
    """Fill the token-count change (every pre-token of the held-out files), the round trip of the
    trimmed tokenizer on the held-out lines, and the ids newly unreachable by the paper's test."""
    from workbench.tasks.audit import corpus_counts

    before_tok, after_tok = result.original, result.plan.tokenizer
    if held_out:
        counts = corpus_counts(before_tok, held_out)
        assert counts is not None
        result.counts = counts
        enc_before, enc_after = Encoder(before_tok), Encoder(after_tok)
        # keys are lines for a Unigram model (its lattice spans one): encoded as texts, as vocab_usage does
        by_line = usage_pretokenizer(before_tok)[0] == "none"
        step_before = enc_before.encode if by_line else partial(encode_pretoken, enc_before)
        step_after = enc_after.encode if by_line else partial(encode_pretoken, enc_after)
        result.tokens_before = sum(n * len(step_before(w)) for w, n in counts.items())
        result.tokens_after = sum(n * len(step_after(w)) for w, n in counts.items())
        lines = held_out_texts(held_out)[:ROUND_TRIP_LINES]
        result.lines_checked = len(lines)
        for line in lines:
            old, new = enc_before.decode(enc_before.encode(line)), enc_after.decode(enc_after.encode(line))
            result.lines_round_trip += new == line
            result.lines_round_trip_before += old == line
            result.lines_same_decode += new == old
    reach_before = reachability(before_tok)
    reach_after = reachability(after_tok)
    assert reach_before is not None and reach_after is not None
    new_of = dict(result.plan.id_map)
    result.newly_unreachable = [old for old, new in result.plan.id_map
                                if reach_before[old] in (REACHABLE, CONTEXT)
                                and reach_after[new_of[old]] not in (REACHABLE, CONTEXT)]


def preview_trim(src_name: str, tok: Tokenizer, ids: Sequence[int], *, compact: bool = False,
                 held_out: Sequence = (), filters: dict[str, int] | None = None,
                 measured_on: str = "held-out text") -> TrimResult:
    """What removing ``ids`` does, measured on ``held_out`` (nothing written)."""
    plan = plan_trim(tok, ids, compact=compact)
    result = TrimResult(src_name, tok, plan, filters=dict(filters or {}), measured_on=measured_on)
    measure(result, held_out)
    return result


def default_format(tok: Tokenizer, out: str | Path | None = None) -> str:
    """The format an ``--out`` without ``--format`` gets: the one its name says (``.tiktoken``,
    ``.json``), else the tokenizer's family's first (so a ``.tiktoken`` name never holds JSON)."""
    name = str(out or "").lower()
    if name.endswith(".tiktoken"):
        return "tiktoken"
    if name.endswith(".json"):
        return "hf"
    if name.endswith(".model") and tok.model == "unigram":
        return "spm"
    if name.endswith(".txt") and tok.model == "wordpiece":
        return "wordpiece"
    return "tiktoken" if tok.merge_rule == "bytes" else "hf"


def apply_trim(result: TrimResult, *, project: str | Path | None = None, out: str | Path | None = None,
               fmt: str | None = None, name: str = "", held_out: Sequence = (), force: bool = False) -> None:
    """Store the trimmed tokenizer as a new run of ``project`` and/or export it to ``out``."""
    from workbench.formats import export_tokenizer
    from workbench.formats.tables import write_csv

    if project is None and out is None:
        raise WorkbenchError("say where the trimmed tokenizer goes: --project P (a new run) and/or --out FILE")
    tok = result.plan.tokenizer
    if out is not None:
        map_path = Path(f"{out}.idmap.csv")
        if map_path.exists():  # checked first: the export below must not happen without its map
            raise WorkbenchError(f"{map_path} exists: choose another --out (the old_id,new_id map is written "
                                 "beside it and nothing is overwritten)")
        fmt = fmt or default_format(tok, out)
        sample = held_out_texts(held_out)[:200] if held_out else None
        exported = export_tokenizer(tok, fmt, out, force=force, sample=sample,
                                    name=name or f"{Path(str(out)).stem}")
        result.exported = [str(p) for p in exported.paths]
        result.checks = list(exported.checks)
        result.notes.extend(exported.notes)
        write_csv(map_path, ("old_id", "new_id"), result.plan.id_map)
        result.exported.append(str(map_path))
    if project is not None:
        result.project = str(project)
        result.run_id = store_trimmed_run(project, result, name=name)


def store_trimmed_run(project: str | Path, result: TrimResult, *, name: str = "") -> int:
    """A finished run holding the trimmed tokenizer: vocabulary (empty slots kept), merges in rank
    order, the tokenizer's settings and what the trim did (``trim`` in the run's settings)."""
    from workbench.store import ProjectStore

    plan, tok = result.plan, result.plan.tokenizer
    settings = {k: v for k, v in tok.settings().items() if k != "special_tokens"}
    settings["model"] = tok.model
    settings["vocab_size"] = len(tok.vocab)
    if tok.scores:  # a Unigram model's scores (WordPiece's describe its training): kept per id
        settings["scores"] = list(tok.scores)
    entries = sum(1 for piece in tok.vocab if piece)
    settings["trim"] = {"source": result.source, "requested": list(plan.requested), "cascade": list(plan.cascade),
                        "compact": plan.compact, "entries": entries,
                        # index = new id; only kept when renumbered (else every kept id is its own)
                        "old_ids": [old for old, _new in plan.id_map] if plan.compact else None}
    specials = tok.special_ids
    made = {n for _a, _b, n in tok.merges}
    kinds = ["special" if i in specials else "merge" if i in made else "base" for i in range(len(tok.vocab))]
    label = name or f"trim of {Path(result.source).name} (−{len(plan.removed)})"
    from workbench.tasks.sources import project_source

    same = project_source(result.source, project)
    if same is None and result.source.endswith(".tokproj") and Path(result.source).exists() and \
            Path(result.source).resolve() == Path(project).resolve():
        from workbench.tasks.import_export import latest_usable_run

        with ProjectStore.open(project, readonly=True) as store:
            latest = latest_usable_run(store)
        same = ("run", latest) if latest is not None else None
    corpus_ids: list[int] = []
    with ProjectStore.open(project, create=True) as store:
        if same is not None and same[0] == "run":  # a run of this project: its settings and corpus carry over
            base = store.run(same[1])
            settings = {**base.settings, **settings}
            corpus_ids = list(base.corpus_ids)
        run_id = store.create_run(label, settings, corpus_ids, list(tok.vocab), kinds)
        try:
            curve = trimmed_curve(tok, result.counts)
            with store.run_writer(run_id, background=False) as writer:
                for rank, ((a, b, n), (frequency, size, tokens)) in enumerate(zip(tok.merges, curve)):
                    writer.add(MergeEvent(rank + 1, a, b, n, frequency, size, tokens), tok.vocab[n])
            store.record_final_model(run_id, {})
        except BaseException:
            store.finish_run(run_id, "failed", error="the trimmed tokenizer could not be stored")
            raise
        store.finish_run(run_id, "finished")
    return run_id


def vocab_entries(settings: dict, vocab_size: int) -> int:
    """The entries of a stored run: a trim that kept its ids leaves empty slots below its largest
    id, so its size as the runs list shows it is ``trim.entries``, not ``largest id + 1``."""
    trim = settings.get("trim")
    entries = trim.get("entries") if isinstance(trim, dict) else None
    return entries if isinstance(entries, int) and 0 <= entries <= vocab_size else vocab_size


def trimmed_curve(tok: Tokenizer, counts: dict[str, int] | None) -> list[tuple[int, int, int]]:
    """Per merge of the trimmed tokenizer, what its run stores: ``(frequency, vocabulary size, corpus
    tokens)`` — the plots of the new run. The vocabulary size counts entries (not the empty slots of
    kept ids). On the measured text (``counts``), a BPE merge's frequency is how often it fires when
    the text is encoded (F1 + F2 of the token it makes, :mod:`workbench.core.audit`) and the tokens
    after it are the start minus every firing so far — exact for merges applied in rank order. A
    WordPiece history records the pieces' F1 and the final token count. Without a text: zeros."""
    from workbench.core.audit import consumed_counts, supports_residues
    from workbench.core.metrics import vocab_usage

    made_ids = {n for _a, _b, n in tok.merges}
    size = sum(1 for i, piece in enumerate(tok.vocab) if (piece or i in tok.special_ids) and i not in made_ids)
    sizes = []
    seen: set[int] = set()
    for _a, _b, n in tok.merges:
        if n not in seen:
            seen.add(n)
            size += 1
        sizes.append(size)
    if not counts:
        return [(0, s, 0) for s in sizes]
    usage = vocab_usage(tok, counts)
    assert usage is not None  # nothing asks it to stop
    f1 = list(usage.frequencies)
    if not supports_residues(tok):
        return [(f1[n], s, usage.total_tokens) for (_a, _b, n), s in zip(tok.merges, sizes)]
    derivation: dict[int, tuple[int, int]] = {}
    for a, b, n in tok.merges:
        derivation.setdefault(n, (a, b))
    f2 = consumed_counts(tok, f1, derivation)
    fired = {n: f1[n] + f2[n] for n in derivation}
    tokens = usage.total_tokens + sum(fired.values())
    out = []
    counted: set[int] = set()
    for (_a, _b, n), s in zip(tok.merges, sizes):
        frequency = fired[n] if n not in counted else 0  # a re-made piece fires under its first merge
        counted.add(n)
        tokens -= frequency
        out.append((frequency, s, tokens))
    return out


def trim_source(src: str, *, remove: str | None = None, filters: Sequence[str] = (), corpus: Sequence = (),
                held_out: Sequence = (), threshold: float = 0.1, compact: bool = False,
                project: str | None = None, out: str | None = None, fmt: str | None = None, name: str = "",
                pattern: str | None = None, dry_run: bool = False, yes: bool = True) -> TrimResult:
    """``workbench trim``: select, plan, measure, store and/or export. ``dry_run``: only the plan
    and its measures (nothing stored or written); ``yes=False``: a large trim
    (:attr:`TrimResult.needs_confirmation`) is refused with its scale instead of done."""
    from workbench.tasks.audit import project_run_corpus
    from workbench.tasks.sources import load_tokenizer

    if project is None and out is None and not dry_run:
        raise WorkbenchError("say where the trimmed tokenizer goes: --project P (a new run) and/or --out FILE")
    tok = load_tokenizer(src, pattern=pattern)
    notes: list[str] = []
    if not corpus:
        corpus, notes = project_run_corpus(src)
    ids, picked, more = select_ids(tok, remove, filters, corpus=corpus, threshold=threshold)
    result = preview_trim(src, tok, ids, compact=compact, held_out=held_out or corpus, filters=picked,
                          measured_on="held-out text" if held_out else "the corpus (no --held-out given)")
    result.notes = notes + more
    if dry_run:
        result.dry_run = True
        return result
    if not yes and result.needs_confirmation:
        raise WorkbenchError(f"{result.scale()}: look at it with --dry-run, then pass --yes to trim")
    apply_trim(result, project=project, out=out, fmt=fmt, name=name, held_out=held_out or corpus)
    return result


def gaps_too_wide(plan: TrimPlan) -> bool:
    """Whether the kept ids leave more unused ids than a tokenizer file may hold
    (:func:`~workbench.formats.common.check_id_range`): such a trim exports only renumbered."""
    if plan.compact or not plan.id_map:
        return False
    kept = len(plan.id_map)
    return max(new for _old, new in plan.id_map) >= kept + max(MAX_UNUSED_IDS, kept)


def describe_trim(result: TrimResult) -> list[str]:
    """The trim's report as lines for a person."""
    p = result.plan
    d = result.as_dict()
    verb = "would remove" if result.dry_run or (result.run_id is None and not result.exported) else "removed"
    lines = [f"{result.source}: {verb} {len(p.requested):,} requested + {len(p.cascade):,} by the cascade "
             f"(tokens that depended on them) = {100 * result.removed_share:.1f} % of the vocabulary; "
             f"{p.dropped_merges:,} merges dropped; vocabulary "
             f"{d['vocab_before']:,} → {d['vocab_after']:,}, ids {'renumbered' if p.compact else 'kept'}"]
    if result.dry_run:
        lines.append("  dry run: nothing stored or written")
    for name, count in result.filters.items():
        lines.append(f"  --filter {name}: {count:,} entries")
    if p.cascade:
        shown = ", ".join(str(i) for i in p.cascade[:12]) + (" …" if len(p.cascade) > 12 else "")
        lines.append(f"  cascade (removed because a removed token was their part): {shown}")
    if result.tokens_before is not None and result.tokens_after is not None:
        change = result.token_change or 0.0
        lines.append(f"  tokens on {result.measured_on}: {result.tokens_before:,} → {result.tokens_after:,} "
                     f"({100 * change:+.3f}%)")
        lines.append(f"  round trip: {result.lines_round_trip:,} of {result.lines_checked:,} lines decode back to "
                     "themselves" + ("" if result.lines_round_trip_before == result.lines_checked else
                                     f" (the original: {result.lines_round_trip_before:,}; it normalizes the text)"))
        if result.lines_round_trip_before < result.lines_checked:
            lines.append(f"  decoded as the original decodes: {result.lines_same_decode:,} of {result.lines_checked:,} lines")
    lines.append(f"  newly unreachable (decode, encode again): {len(result.newly_unreachable):,}")
    if gaps_too_wide(p):
        lines.append("  note: with its ids kept, the gaps are wider than tokenizer files may hold "
                     f"(more than {MAX_UNUSED_IDS:,} unused ids): only --compact can be exported")
    if result.run_id is not None:
        lines.append(f"  stored as run {result.run_id} of {result.project}")
    for path in result.exported:
        lines.append(f"  wrote {path}")
    lines.extend(f"  check: {c}" for c in result.checks)
    lines.extend(f"  note: {n}" for n in result.notes)
    return lines
