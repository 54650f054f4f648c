"""How a run trained on a sample of lines compares with a run on every line: the share of the full
run's vocabulary the sampled one also learned (``workbench runs``, the Train tab's run details).

A full run matches a sampled one when both finished on the same corpus files with the same model
settings (:data:`SAME_SETTINGS`), the full one without ``sample_lines``. The vocabularies are
compared by :func:`workbench.core.vocab_diff.diff_vocab`, the Merges tab's Compare.
Left out: comparing two samples with each other.
"""

from __future__ import annotations

from dataclasses import dataclass

SAME_SETTINGS = ("model", "units", "vocab_size", "merges", "min_frequency", "special_tokens", "end_of_word",
                 "tie_break", "sequences", "pretokenizer", "normalizer")


@dataclass(frozen=True)
class SampleOverlap:
    sampled_run: int
    full_run: int
    sample_lines: int
    sampled_from: int | None
    shared: int
    only_sampled: int
    only_full: int

    @property
    def share(self) -> float:
        """Of the full run's learned pieces, the share the sampled run learned too."""
        full = self.shared + self.only_full
        return self.shared / full if full else 1.0

    def text(self) -> str:
        of = f" of {self.sampled_from:,}" if self.sampled_from else ""
        return (f"sample of {self.sample_lines:,}{of} lines: {100 * self.share:.1f}% of run {self.full_run}'s "
                f"vocabulary (all lines) learned too; {self.only_sampled:,} pieces only in the sample's")

    def as_dict(self) -> dict:
        return {"full_run": self.full_run, "sample_lines": self.sample_lines, "sampled_from": self.sampled_from,
                "shared": self.shared, "only_sampled": self.only_sampled, "only_full": self.only_full,
                "share": round(self.share, 4)}


def full_run_for(run, runs, corpus=lambda ids: ids) -> int | None:
    """The newest finished run on every line that matches the sampled ``run`` (None if none);
    ``corpus(ids)`` tells what a run's corpus ids stand for (each run records its own rows)."""
    if run.status != "finished" or not run.settings.get("sample_lines") or run.damage:
        return None
    key = [run.settings.get(k) for k in SAME_SETTINGS]
    for other in sorted(runs, key=lambda r: -r.id):
        if (other.id != run.id and other.status == "finished" and not other.damage
                and not other.settings.get("sample_lines") and corpus(other.corpus_ids) == corpus(run.corpus_ids)
                and [other.settings.get(k) for k in SAME_SETTINGS] == key):
            return other.id
    return None


def has_sampled_runs(runs) -> bool:
    """Whether any run trained on a sample (only then is :func:`sample_overlaps` worth its reads)."""
    return any(isinstance(run.settings.get("sample_lines"), int) for run in runs)


def sample_overlaps_at(path) -> dict[int, SampleOverlap]:
    """:func:`sample_overlaps` of the project at ``path``, read on a connection of its own (the
    window calls it off its GUI thread: both vocabularies are loaded)."""
    from workbench.store import ProjectStore

    with ProjectStore.open(path, readonly=True) as store:
        return sample_overlaps(store)


def sample_overlaps(store) -> dict[int, SampleOverlap]:
    """Every sampled run of the project with a matching full run, by the sampled run's id."""
    from workbench.core.vocab_diff import diff_vocab

    runs = store.runs()
    files = {c.id: (c.path, c.fingerprint) for c in store.corpora()}
    out: dict[int, SampleOverlap] = {}
    for run in runs:
        full = full_run_for(run, runs, lambda ids: sorted(files.get(i, ("", "")) for i in ids))
        if full is None:
            continue
        sampled, whole = store.load_tokenizer(run.id), store.load_tokenizer(full)
        diff = diff_vocab(sampled, whole)
        if whole.merges:  # what was learned, not the 256 bytes both start from
            shared = sum(d.rank_b is not None for d in diff.shared)
            only_a = sum(d.rank_a is not None for d in diff.only_a)
            only_b = sum(d.rank_b is not None for d in diff.only_b)
        else:
            shared, only_a, only_b = len(diff.shared), len(diff.only_a), len(diff.only_b)
        sampled_from = run.settings.get("sampled_from_lines")
        out[run.id] = SampleOverlap(run.id, full, int(run.settings["sample_lines"]),
                                    sampled_from if isinstance(sampled_from, int) else None,
                                    shared, only_a, only_b)
    return out
