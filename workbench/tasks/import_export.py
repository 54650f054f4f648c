"""Import a tokenizer file into a project, and export a run: the one implementation behind
``workbench import`` / ``workbench export``, the window's File menu and the inspector's Import….

Plain Python (no Qt), so the CLI and the window cannot drift apart.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import WorkbenchError

_NOTES = logging.getLogger("workbench.notes")  # one line each on stderr in the CLI
_log = logging.getLogger(__name__)


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
    _trial_encode(result.tokenizer, path)
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


# Text every stored reference must encode and decode: letters, digits, spaces, punctuation, CJK.
_TRIAL_TEXT = "Hello, world! It's 2024.\n  Über 数字 123 — ok"


def _trial_encode(tokenizer, path: Path) -> None:
    """Encode and decode a sample with the imported tokenizer before it is stored.

    The readers validate their layout and :func:`~workbench.formats.common.validate_tokenizer`
    the whole; this is the last guard against a reference that stores fine and then fails every
    later encode (a "poisoned" project). Text it cannot encode (missing bytes, no [UNK]) is
    fine; only a crash is refused.
    """
    from workbench.core.encoder import Encoder

    try:
        encoder = Encoder(tokenizer)
        try:
            ids = encoder.encode(_TRIAL_TEXT)
        except WorkbenchError:
            return  # a vocabulary that cannot spell this sample: its own message at encode time
        encoder.decode_bytes(ids)
    except WorkbenchError as exc:
        raise WorkbenchError(f"{path.name}: imports but cannot decode what it encodes ({exc}): nothing was stored") from None
    except Exception as exc:  # noqa: BLE001 - any crash here would repeat on every later encode
        _log.debug("trial encode of %s failed", path, exc_info=True)
        raise WorkbenchError(f"{path.name}: imports but cannot encode text ({type(exc).__name__}: {exc}): "
                             "nothing was stored; fix the file") from None


def latest_usable_run(store) -> int | None:
    """The newest finished run, else the newest run with merges (cancelled/interrupted ones count).

    A run whose stored row is damaged is passed over, with a note naming it when it would have been
    chosen (``#RUN`` still reaches it, and then says what is damaged)."""
    runs = store.runs()
    chosen = _newest_usable([r for r in runs if not r.damage])
    skipped = _newest_usable(runs)
    if skipped is not None and skipped != chosen:
        damaged = next(r for r in runs if r.id == skipped)
        _NOTES.warning("used an older run, since %s", damaged.damage)
    return chosen


def _newest_usable(runs) -> int | None:
    finished = [r for r in runs if r.status == "finished"]
    if finished:
        return max(finished, key=lambda r: r.id).id
    with_merges = [r for r in runs if r.merge_count > 0]
    return max(with_merges, key=lambda r: r.id).id if with_merges else None


def export_run(project: str | Path, run_id: int | None, fmt: str, out: str | Path, *, force: bool = False,
               legacy_merges: bool = False, chat_template: str | None = None, model_max_length: int | None = None,
               before_write=None):
    """Export a run (default: the latest usable one); returns the formats' ExportResult."""
    from workbench.formats import export_tokenizer
    from workbench.formats.export import refuse_unfit
    from workbench.store import ProjectStore

    refuse_project_as_output(project, fmt, out)
    with ProjectStore.open(project, readonly=True) as store:
        rid = run_id if run_id is not None else latest_usable_run(store)
        if rid is None:
            raise WorkbenchError(f"{project}: the project has no trained run yet: train one first")
        tokenizer = store.load_tokenizer(rid)
        run = store.run(rid)
        refuse_unfit(tokenizer, fmt, str(run.settings.get("model") or tokenizer.model))  # its family's refusals
        frequencies = None
        if fmt == "merges-csv":
            # each merge of the tokenizer with its frequency when first made (a PickyBPE run's
            # tokenizer keeps fewer merges than it made: :func:`workbench.core.pickybpe.final_merges`)
            made: dict[tuple[int, int, int], int] = {}
            for row in store.merges(rid, 0, store.merge_count(rid)):
                made.setdefault((row.left, row.right, row.new_id), row.frequency)
            frequencies = [made.get(m, 0) for m in tokenizer.merges]
    result = export_tokenizer(tokenizer, fmt, out, force=force, frequencies=frequencies, legacy_merges=legacy_merges,
                              chat_template=chat_template, model_max_length=model_max_length,
                              before_write=before_write)
    if run.status != "finished":
        target = run.settings.get("vocab_size") or run.settings.get("merges")
        asked = f"; {target} asked for" if target else ""
        _NOTES.warning(f"run {rid} is {run.status}: the export is partial, {run.merge_count} merges, "
                       f"vocabulary {run.vocab_size}{asked}")
    return result


def refuse_project_as_output(project: str | Path, fmt: str, out: str | Path) -> None:
    """Refuse an export whose output would replace this project or any project open here.

    ``export --force --out P.tokproj`` once replaced the project with a tokenizer file and every
    run was gone. Compared by file identity (``samefile``: the same inode through any path or
    link), for every file the format writes, and for the project's ``-wal``/``-shm`` too.
    """
    from workbench.formats.export import output_paths
    from workbench.store.project import open_project_paths

    out = Path(out)
    protected = [Path(project), *(Path(f"{project}{s}") for s in ("-wal", "-shm", "-journal"))]
    protected += [Path(p) for p in open_project_paths()]
    for target in {out, *output_paths(fmt, out)}:
        if not target.exists():
            continue
        for kept in protected:
            try:
                same = kept.exists() and os.path.samefile(target, kept)
            except OSError:
                same = False
            if same:
                writes = "" if target == out else f" (it writes {target})"
                raise WorkbenchError(f"--out {out}{writes} is the project file {kept}: exporting there "
                                     "would destroy its runs: choose another output path")
