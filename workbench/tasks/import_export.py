"""Import a tokenizer file into a project, and export a run: the one implementation behind
``workbench import`` / ``workbench export``, the window's File menu and the inspector's Import….

Plain Python (no Qt), so the CLI and the window cannot drift apart.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import WorkbenchError


@dataclass(frozen=True)
class ImportedReference:
    ref_id: int
    name: str
    vocab_size: int
    merge_count: int
    pretokenizer: str
    notes: tuple[str, ...]


def import_reference(path: str | Path, project: str | Path, *, name: str = "",
                     pattern: str | None = None) -> ImportedReference:
    """Load ``path`` (any supported format) and keep it in ``project`` as a reference tokenizer."""
    from workbench.formats import detect_format, import_tokenizer
    from workbench.store import ProjectStore

    path = Path(path)
    if not path.exists():
        raise WorkbenchError(f"{path}: no such file or folder")
    result = import_tokenizer(path, pattern=pattern)
    fmt = detect_format(path)
    digest_source = path if path.is_file() else next(
        (p for p in (path / "vocab.json", path / "tokenizer.json") if p.exists()), None)
    sha = hashlib.sha256(digest_source.read_bytes()).hexdigest() if digest_source else ""
    label = name or result.tokenizer.name or path.stem
    with ProjectStore.open(project, create=True) as store:
        if store.read_only:
            raise WorkbenchError(store.note or f"{project} is read-only: cannot keep the tokenizer in it")
        ref_id = store.add_reference(label, result.tokenizer, fmt=fmt, source_path=str(path.resolve()), sha256=sha)
    tok = result.tokenizer
    return ImportedReference(ref_id, label, len(tok.vocab), len(tok.merges), tok.pretokenizer, tuple(result.notes))


def latest_usable_run(store) -> int | None:
    """The newest finished run, else the newest run with merges (cancelled/interrupted ones count)."""
    runs = store.runs()
    finished = [r for r in runs if r.status == "finished"]
    if finished:
        return max(finished, key=lambda r: r.id).id
    with_merges = [r for r in runs if r.merge_count > 0]
    return max(with_merges, key=lambda r: r.id).id if with_merges else None


def export_run(project: str | Path, run_id: int | None, fmt: str, out: str | Path, *, force: bool = False,
               legacy_merges: bool = False):
    """Export a run (default: the latest usable one); returns the formats' ExportResult."""
    from workbench.formats import export_tokenizer
    from workbench.store import ProjectStore

    with ProjectStore.open(project, readonly=True) as store:
        rid = run_id if run_id is not None else latest_usable_run(store)
        if rid is None:
            raise WorkbenchError(f"{project}: the project has no trained run yet: train one first")
        tokenizer = store.load_tokenizer(rid)
        frequencies = None
        if fmt == "merges-csv":
            frequencies = [row.frequency for row in store.merges(rid, 0, store.merge_count(rid))]
    return export_tokenizer(tokenizer, fmt, out, force=force, frequencies=frequencies, legacy_merges=legacy_merges)
