"""Gini before → after: each frontier run beside a classic BPE tokenizer of the same vocabulary size.

Parity-aware BPE (Foroutan et al. 2025) is judged by how far it lowers the Gini coefficient of
per-language token cost *against classic BPE at the same size*; SuperBPE and PickyBPE change that
cost too (SuperBPE's superwords go to languages with spaces). The Compare tab shows one number per
tokenizer; this module pairs them and says what changed:

* :func:`plan_pairs` — which tokenizer each frontier run (a project run of family ``parity-bpe``,
  ``superbpe`` or ``pickybpe``) is held against: a classic BPE run (family ``bpe``) of the same
  vocabulary size among the tokenizers compared, else the latest such run of the same project (which
  is then measured too), else none — with the sentence that says how to make one. A baseline the user
  chose (any SRC) is held against every other tokenizer instead.
* :func:`gini_pairs` — from a :class:`~workbench.tasks.compare.CompareResult`: per language the
  token cost of both (tokens on parallel text, else tokens per character: the cost
  :func:`~workbench.core.corpus_metrics.language_cost_gini` uses), its change, and the two Ginis.

Left out: formatting and widgets (``ui/compare``); tokenizers that are not project runs have no
family, so only a chosen baseline pairs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.core.corpus_metrics import Metrics
from workbench.tasks.sources import split_project_ref

#: Families held against classic BPE automatically (the BPE variants of issue 23).
FRONTIER = ("parity-bpe", "superbpe", "pickybpe")
CLASSIC = "bpe"
#: ``classic`` values of :func:`plan_pairs` besides a SRC.
AUTO, NONE = "auto", ""


@dataclass(frozen=True)
class RunFacts:
    """What pairing needs to know of a tokenizer SRC: its family and vocabulary size (None: not a run)."""

    family: str | None
    vocab_size: int | None
    label: str = ""


@dataclass(frozen=True)
class Pair:
    """One frontier tokenizer (``after``, a display name) and its classic baseline (``before``), or
    none and why (``missing``)."""

    after: str
    before: str | None
    vocab_size: int | None
    family: str | None
    missing: str = ""


@dataclass(frozen=True)
class LanguageCost:
    language: str
    before: float | None
    after: float | None

    @property
    def change(self) -> float | None:
        """after / before − 1 (−0.14: 14 % cheaper than under classic BPE)."""
        if self.before is None or self.after is None or self.before <= 0:
            return None
        return self.after / self.before - 1


@dataclass(frozen=True)
class GiniPair:
    """A pair measured: per-language token cost of both and the Gini of each."""

    pair: Pair
    cost: str  # "tokens" (parallel text) or "tokens per character"
    languages: tuple[LanguageCost, ...]
    gini_before: float | None
    gini_after: float | None

    @property
    def gini_change(self) -> float | None:
        if self.gini_before is None or self.gini_after is None:
            return None
        return self.gini_after - self.gini_before

    def summary(self) -> str:
        """One line: ``parity (V 8,000) against BPE: Gini 0.1232 → 0.0011 (−0.1221)``."""
        p = self.pair
        size = f" (V {p.vocab_size:,})" if p.vocab_size else ""
        if p.before is None:
            return f"{p.after}{size}: {p.missing}."

        def g(v: float | None) -> str:
            return "—" if v is None else f"{v:.4f}"

        change = self.gini_change
        delta = "" if change is None else f" ({change:+.4f})".replace("-", "−")
        return f"{p.after}{size} against {p.before}: Gini {g(self.gini_before)} → {g(self.gini_after)}{delta}"


def missing_text(vocab_size: int | None) -> str:
    """The empty state: no classic BPE of that size, and how to make one."""
    size = f"{vocab_size:,}" if vocab_size else "the same size"
    plain = str(vocab_size) if vocab_size else "the same size"
    return (f"no classic BPE run of vocabulary size {size} in this project to hold it against — train one "
            f"(Train tab: model BPE, vocabulary size {plain}, the same corpus files; or `workbench train FILES "
            f"--model bpe --vocab-size {plain} --project P.tokproj`), or choose a baseline under "
            "“Gini against”")


def run_facts(srcs: Sequence[str]) -> dict[str, RunFacts]:
    """Family and final vocabulary size of every SRC that names a project run (``P.tokproj#ID``);
    each project is opened once, read-only. Other SRCs (files, references, damaged runs) get
    ``RunFacts(None, None)``."""
    from workbench.store import ProjectStore

    out = {src: RunFacts(None, None) for src in srcs}
    by_project: dict[Path, list[tuple[str, int]]] = {}
    for src in srcs:
        path, ref = split_project_ref(src)
        if ref is not None and ref.isdigit():
            by_project.setdefault(path, []).append((src, int(ref)))
    for path, wanted in by_project.items():
        try:
            with ProjectStore.open(path, readonly=True) as store:
                runs = {r.id: r for r in store.runs(scores=False)}
        except Exception:  # noqa: BLE001 — an unreadable project pairs nothing; loading it reports why
            continue
        for src, run_id in wanted:
            run = runs.get(run_id)
            if run is not None and not run.damage:
                out[src] = RunFacts(str(run.settings.get("model") or CLASSIC), run.vocab_size,
                                    f"Run {run.id} · {run.name}")
    return out


def project_classic_runs(project: Path) -> list[tuple[str, int, str]]:
    """(SRC, vocabulary size, label) of the project's finished classic BPE runs, newest first."""
    from workbench.store import ProjectStore

    try:
        with ProjectStore.open(project, readonly=True) as store:
            runs = store.runs(scores=False)
    except Exception:  # noqa: BLE001 — see run_facts
        return []
    return [(f"{project}#{r.id}", r.vocab_size, f"Run {r.id} · {r.name}") for r in sorted(runs, key=lambda r: -r.id)
            if r.status == "finished" and not r.damage and (r.settings.get("model") or CLASSIC) == CLASSIC]


def plan_pairs(chosen: Sequence[tuple[str, str]], classic: str = AUTO,
               facts: Mapping[str, RunFacts] | None = None) -> tuple[list[Pair], list[tuple[str, str]]]:
    """The pairs to show, and the tokenizers to measure besides ``chosen`` (``(name, SRC)``): a
    project's classic BPE run that no tokenizer compared matches.

    ``classic``: :data:`AUTO` (each frontier run against a classic BPE run of its size), :data:`NONE`
    (no pairs), or a SRC — that tokenizer against every other one compared.
    """
    if classic == NONE or not chosen:
        return [], []
    facts = dict(facts) if facts is not None else run_facts([src for _n, src in chosen])
    names = {src: name for name, src in chosen}
    pairs: list[Pair] = []
    extra: list[tuple[str, str]] = []
    if classic != AUTO:
        if classic not in names:
            extra.append((_label(classic, facts), classic))
        before = names.get(classic) or extra[0][0]
        pairs = [Pair(name, before, _size(facts, src), _family(facts, src)) for name, src in chosen if src != classic]
        return pairs, extra
    project_runs: dict[Path, list[tuple[str, int, str]]] = {}
    for name, src in chosen:
        fact = facts.get(src)
        if fact is None or fact.family not in FRONTIER:
            continue
        size = fact.vocab_size
        partner = next((n for n, s in chosen if _family(facts, s) == CLASSIC and _size(facts, s) == size), None)
        if partner is None:
            project, _ref = split_project_ref(src)
            if project not in project_runs:
                project_runs[project] = project_classic_runs(project)
            found = next(((s, label) for s, v, label in project_runs[project] if v == size), None)
            if found is not None:
                partner = next((n for n, s in extra if s == found[0]), None)
                if partner is None:
                    partner = f"{found[1]} (classic BPE, added)"
                    extra.append((partner, found[0]))
        pairs.append(Pair(name, partner, size, fact.family, "" if partner else missing_text(size)))
    return pairs, extra


def _family(facts: Mapping[str, RunFacts], src: str) -> str | None:
    fact = facts.get(src)
    return fact.family if fact is not None else None


def _size(facts: Mapping[str, RunFacts], src: str) -> int | None:
    fact = facts.get(src)
    return fact.vocab_size if fact is not None else None


def _label(src: str, facts: Mapping[str, RunFacts]) -> str:
    fact = facts.get(src)
    return fact.label if fact is not None and fact.label else Path(split_project_ref(src)[0]).name


def gini_pairs(pairs: Sequence[Pair], per_language: Sequence[Metrics], totals: Sequence[Metrics], *,
               parallel: bool) -> list[GiniPair]:
    """Each pair measured from a comparison's per-language and total rows (tokenizers by name)."""
    rows: dict[tuple[str, str], Metrics] = {(m.tokenizer, m.language): m for m in per_language}
    gini = {m.tokenizer: m.gini for m in totals}
    languages = list(dict.fromkeys(m.language for m in per_language))

    def cost(name: str | None, lang: str) -> float | None:
        m = rows.get((name, lang)) if name is not None else None
        if m is None or not m.text.chars:
            return None
        return float(m.tokens) if parallel else m.tokens / m.text.chars

    out = []
    for p in pairs:
        langs = tuple(LanguageCost(lang, cost(p.before, lang), cost(p.after, lang)) for lang in languages) \
            if p.before is not None else ()
        out.append(GiniPair(p, "tokens" if parallel else "tokens per character", langs,
                            gini.get(p.before) if p.before is not None else None, gini.get(p.after)))
    return out
