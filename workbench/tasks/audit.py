"""Audit any tokenizer (a run, a reference, an imported file) on any corpus: the use case behind
``workbench audit`` and the Merges tab's audit columns.

The corpus is counted with the tokenizer's own normalizer and pre-tokenizer (whole lines for a
Unigram/SentencePiece model, :func:`~workbench.core.metrics.usage_pretokenizer`); without corpus
files, a project's run is audited on the files it was trained on, anything else on no corpus (then
only reachability and ill-formed UTF-8 are reported). The measures are
:mod:`workbench.core.audit`'s. Left out: caching (an audit of cl100k on ~9 MB takes seconds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from workbench.core.audit import DEFAULT_RESIDUE_THRESHOLD, IMPOSSIBLE, Audit, audit, supports_residues
from workbench.core.display import piece_hex, piece_text
from workbench.core.metrics import usage_pretokenizer
from workbench.core.model import Tokenizer
from workbench.corpus.counts import corpus_sources, corpus_word_counts
from workbench.errors import WorkbenchError

Progress = Callable[[int, int, str], None]

CSV_HEADER = ("id", "piece", "hex", "kind", "reachability", "utf8", "f1", "f2", "r", "residue", "never_used",
              "model_reachable")

# What each column means, with its paper: the CLI's --help, the window's tooltips and the docs say this.
DEFINITIONS = {
    "reachability": "Decode the id to text and encode it again (Land & Bartolo 2024, \"Fishing for Magikarp\"): "
                    "reachable = alone it gives back this id; context = only in context: after a space, before a comma "
                    "or inside a word (a WordPiece ## piece: after a word start); unreachable = in none of those; "
                    "undecodable = its bytes are not UTF-8 text (part of a character), so there is nothing to encode.",
    "utf8": "Ill-formed UTF-8 (byte-level vocabularies; Land & Bartolo 2024): partial = a fragment of valid "
            "text (e.g. 2 of a CJK character's 3 bytes); impossible = bytes no UTF-8 text contains: never produced.",
    "f1": "F1 (LiteToken, Sun et al. 2026): times the token is emitted when the corpus is encoded.",
    "f2": "F2 (LiteToken, Sun et al. 2026): times the token is consumed as a part by a later merge while the "
          "corpus is encoded. BPE only: WordPiece and Unigram merge nothing while encoding.",
    "r": "R = F1 / (F1 + F2) (LiteToken, Sun et al. 2026): near 0, the token is a scaffold the merges pass "
         "through but the output rarely keeps; a residue is a merge-made token with R below the threshold.",
    "never_used": "Never emitted when the corpus is encoded (F1 = 0): an under-trained token candidate "
                  "(Land & Bartolo 2024).",
    "model_reachable": "BPE only: the token's own bytes encode back to it, so some text can produce it; "
                       "no means the earlier merges always pre-empt its merge, in any text.",
}


@dataclass
class AuditReport:
    """An audit with what it was computed on, for the CLI and the window."""

    name: str
    tokenizer: Tokenizer
    audit: Audit
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        out = {"tokenizer": self.name, "corpus": self.files, "seconds": round(self.seconds, 3),
               **self.audit.summary()}
        if self.audit.f2 is None and self.audit.f1 is not None:
            out["residues"] = None
            out["residue_note"] = f"F2 and R do not apply to a {self.tokenizer.model} model: it merges nothing while encoding"
        if self.audit.f2 is not None:
            seen = sum(1 for i, k in enumerate(self.audit.kinds)
                       if k == "merge" and self.audit.audited[i] and self.audit.f1 and
                       self.audit.f1[i] + self.audit.f2[i] > 0)
            out["merge_tokens_seen"] = seen
            out["residue_share_of_seen"] = out["residues"] / seen if seen else 0.0
        return out

    def rows(self, ids: Sequence[int] | None = None) -> list[tuple]:
        """One CSV/JSON row per audited id (or per id of ``ids``), in ``CSV_HEADER`` order."""
        a, vocab = self.audit, self.tokenizer.vocab
        chosen = ids if ids is not None else [i for i in range(len(vocab)) if a.audited[i]]
        out = []
        for i in chosen:
            r = a.ratio(i)
            out.append((i, piece_text(vocab[i], visible_space=True), piece_hex(vocab[i]), a.kinds[i], a.reach[i],
                        a.utf8[i], "" if a.f1 is None else a.f1[i], "" if a.f2 is None else a.f2[i],
                        "" if r is None else round(r, 6), a.is_residue(i), a.never_used(i),
                        "" if a.model_reachable is None else a.model_reachable[i]))
        return out


#: The audit marks the Merges and Vocabulary tables show and filter by (``register_audit``), with
#: their label: the categories a trim would look at.
MARKS = (("unreachable", "unreachable"), ("undecodable", "undecodable"), ("residue", "residue"),
         ("never-used", "never used"))


def audit_marks(audit) -> list[str]:
    """Per id, the comma-joined :data:`MARKS` categories it is in ("" for none): what the Merges and
    Vocabulary tables show beside each entry once the Audit tab has audited their source."""
    marks: list[list[str]] = [[] for _ in range(len(audit.reach))]
    for category, _label in MARKS:
        for token_id in audit.ids(category):
            marks[token_id].append(category)
    return [",".join(m) for m in marks]


def corpus_counts(tok: Tokenizer, sources: Sequence, *, should_stop: Callable[[], bool] | None = None,
                  progress: Progress | None = None) -> dict[str, int] | None:
    """The corpus as the audit counts it (the tokenizer's own pre-tokenizer; lines for Unigram)."""
    pretokenizer, normalizer = usage_pretokenizer(tok)
    sequences = "lines" if pretokenizer == "none" else "documents"
    return corpus_word_counts(sources, pretokenizer=pretokenizer, normalizer=normalizer, sequences=sequences,
                              should_stop=should_stop, progress=progress)


def project_corpus(project: str | Path, source: tuple[str, int]) -> tuple[list, list[str]]:
    """The corpus the window audits a source on: a run's own training files, every corpus file of
    the project for a reference (as the Vocabulary tab counts it); ``(sources, warnings)``."""
    from workbench.store import ProjectStore

    with ProjectStore.open(Path(project), readonly=True) as store:
        if source[0] == "run":
            wanted = set(store.run(source[1]).corpus_ids)
            refs = [c for c in store.corpora() if c.id in wanted]
        else:
            refs = list({c.path: c for c in store.corpora()}.values())
    if not refs:
        return [], []
    return corpus_sources([(c.path, c.reader_options) for c in refs], [c.fingerprint for c in refs])


def project_run_corpus(src: str) -> tuple[list, list[str]]:
    """The corpus files a project's run was trained on (none for a reference or a file)."""
    from workbench.store import ProjectStore
    from workbench.tasks.import_export import latest_usable_run
    from workbench.tasks.sources import PROJECT_SUFFIX, split_project_ref

    path, ref = split_project_ref(src)
    if path.suffix != PROJECT_SUFFIX or (ref is not None and ref.startswith("ref:")):
        return [], []
    with ProjectStore.open(path, readonly=True) as store:
        run_id = int(ref) if ref is not None and ref.isdigit() else latest_usable_run(store)
        if run_id is None:
            return [], []
        wanted = set(store.run(run_id).corpus_ids)
        refs = [c for c in store.corpora() if c.id in wanted]
    if not refs:
        return [], []
    sources, warnings = corpus_sources([(c.path, c.reader_options) for c in refs], [c.fingerprint for c in refs])
    return sources, warnings


def audit_tokenizer(name: str, tok: Tokenizer, sources: Sequence, *, threshold: float = DEFAULT_RESIDUE_THRESHOLD,
                    should_stop: Callable[[], bool] | None = None,
                    progress: Progress | None = None) -> AuditReport | None:
    """Audit ``tok`` on ``sources`` (possibly none); None when stopped."""
    if not 0 < threshold <= 1:
        raise WorkbenchError(f"residue threshold {threshold}: give a number above 0 and at most 1 (default "
                             f"{DEFAULT_RESIDUE_THRESHOLD})")
    t0 = time.monotonic()
    counts = None
    if sources:
        counts = corpus_counts(tok, sources, should_stop=should_stop, progress=progress)
        if counts is None:
            return None
    result = audit(tok, counts, threshold=threshold, should_stop=should_stop, progress=progress)
    if result is None:
        return None
    files = [str(getattr(s, "path", s)) for s in sources]
    return AuditReport(name, tok, result, files, time.monotonic() - t0)


def audit_source(src: str, sources: Sequence = (), **kwargs) -> AuditReport | None:
    """``workbench audit SRC [CORPUS…]``: SRC as ``--tokenizer`` takes it."""
    from workbench.tasks.sources import load_tokenizer

    tok = load_tokenizer(src, pattern=kwargs.pop("pattern", None))
    warnings: list[str] = []
    if not sources:
        sources, warnings = project_run_corpus(src)
    report = audit_tokenizer(src, tok, sources, **kwargs)
    if report is not None:
        report.warnings = warnings
    return report


def describe(report: AuditReport) -> list[str]:
    """The summary as lines for a person."""
    s = report.summary()
    lines = [f"{report.name}: {s['audited']:,} entries audited ({s['merge_tokens']:,} made by merges)"
             + (f" on {len(report.files)} corpus file(s), {s['tokens']:,} tokens" if report.files else ", no corpus")
             + f" in {report.seconds:.1f} s"]
    lines.append(f"  reachability (Land & Bartolo 2024): reachable {s['reachable']:,}, only in context "
                 f"{s['context']:,}, unreachable {s['unreachable']:,}, undecodable (partial UTF-8) {s['undecodable']:,}")
    if report.tokenizer.units == "bytes":
        lines.append(f"  ill-formed UTF-8: {s['ill_formed']:,} ({s['ill_formed_impossible']:,} {IMPOSSIBLE}: "
                     "bytes no UTF-8 text contains)")
    if s.get("model_unreachable") is not None:
        lines.append(f"  merges whose result BPE can never produce: {s['model_unreachable']:,}")
    if report.audit.f1 is not None:
        lines.append(f"  never used on the corpus: {s['never_used']:,}")
    if report.audit.f2 is not None:
        lines.append(f"  residues (LiteToken 2026, R = F1/(F1+F2) < {s['residue_threshold']:g}): {s['residues']:,} = "
                     f"{100 * s['residue_share']:.2f}% of merge-made tokens, {100 * s['residue_share_of_seen']:.2f}% "
                     f"of the {s['merge_tokens_seen']:,} seen on the corpus")
    elif report.audit.f1 is not None and not supports_residues(report.tokenizer):
        lines.append(f"  residues: {s['residue_note']}")
    return lines
