"""Resolve a ``--tokenizer SRC`` (or a choice in the window) to a :class:`Tokenizer`.

``SRC`` is a project (``P.tokproj`` for its latest finished run, ``P.tokproj#RUN`` for a run id,
``P.tokproj#ref:ID`` for an imported reference), a ``tokenizer.json``, a ``.tiktoken`` file, a GPT-2
``vocab.json`` (with ``merges.txt`` beside it) or a folder holding those. Shared by the CLI and the
window so both accept exactly the same things. :func:`load_source` reads a project's run or
reference with what the Inspect tab shows beside it (name, merge frequencies, its span encoder).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.core import offsets
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError

PROJECT_SUFFIX = ".tokproj"

Source = tuple  # ("run", run_id) | ("ref", ref_id)


def split_project_ref(src: str) -> tuple[Path, str | None]:
    """``"p.tokproj#3"`` → (Path("p.tokproj"), "3"); anything else → (Path(src), None)."""
    if "#" in src:
        path, _, ref = src.rpartition("#")
        if path.endswith(PROJECT_SUFFIX):
            return Path(path), ref
    return Path(src), None


def project_source(src: str, project: str | Path | None) -> tuple[str, int] | None:
    """``("run", id)`` or ``("ref", id)`` when ``src`` names a run or reference of ``project`` (how the
    window's tabs name them), else ``None``: a file outside the project, another project, or no id."""
    path, ref = split_project_ref(src)
    if project is None or ref is None:
        return None
    try:
        if path.resolve() != Path(project).resolve():
            return None
    except OSError:
        return None
    kind, number = ("ref", ref[4:]) if ref.startswith("ref:") else ("run", ref)
    return (kind, int(number)) if number.isdigit() else None


def load_tokenizer(src: str, *, pattern: str | None = None) -> Tokenizer:
    """The tokenizer ``src`` names; raises :class:`WorkbenchError` with the reason otherwise."""
    from workbench.corpus.location import is_url, redacted

    if is_url(src):  # read as a local path it would be echoed (credentials and all) as "no such file"
        raise WorkbenchError(f"{redacted(src)}: a tokenizer is read from a local file: download it first "
                             "(a .tokproj, tokenizer.json, .tiktoken or vocab.json)")
    path, ref = split_project_ref(src)
    if not path.exists():
        raise WorkbenchError(f"{path}: no such file or folder (give a .tokproj, tokenizer.json, .tiktoken or vocab.json)")
    if path.suffix == PROJECT_SUFFIX:
        from workbench.store import ProjectStore
        from workbench.tasks.import_export import latest_usable_run

        with ProjectStore.open(path, readonly=True) as store:
            if ref is not None and ref.startswith("ref:"):
                ref_id = _parse_id(ref[4:], path, "reference")
                return store.load_reference(ref_id)
            if ref is not None:
                return store.load_tokenizer(_parse_id(ref, path, "run"))
            run_id = latest_usable_run(store)
            if run_id is None:
                raise WorkbenchError(f"{path}: the project has no trained run yet: "
                                     f"run `workbench train … --project {path}` first")
            return store.load_tokenizer(run_id)
    from workbench.formats import load_tokenizer_file

    return load_tokenizer_file(path, pattern=pattern)


def _parse_id(text: str, path: Path, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise WorkbenchError(f"{path}#{text}: a {what} id is a number (see `workbench runs {path}`)") from None


# ---- a run or reference of a project, as the Inspect tab shows it ------------------------------------
@dataclass
class LoadedTokenizer:
    """A tokenizer as the panes use it (read-only after loading; shared with the GUI thread)."""

    source: Source
    name: str
    tokenizer: Tokenizer
    frequencies: list[int] | None  # per merge rank, runs only
    encoder: offsets.SpanEncoder
    score_kind: str | None = None  # a WordPiece run's ``wordpiece_score``: likelihood or frequency


def load_source(project: Path, source: Source) -> LoadedTokenizer:
    """Read one run or reference from the project (read-only, any thread) and build its encoder."""
    from workbench.store import ProjectStore

    kind, number = source
    with ProjectStore.open(Path(project), readonly=True) as store:
        if kind == "run":
            tokenizer = store.load_tokenizer(number)
            frequencies = [step.frequency for step in store.steps(number)]
            run = store.run(number)
            name = run.name
            score_kind = run.settings.get("wordpiece_score") if tokenizer.model == "wordpiece" else None
        elif kind == "ref":
            tokenizer = store.load_reference(number)
            frequencies = None
            name = tokenizer.name
            score_kind = None
        else:
            raise WorkbenchError(f"unknown tokenizer source {source!r}")
    return LoadedTokenizer(source, name or f"{kind} {number}", tokenizer, frequencies, offsets.SpanEncoder(tokenizer),
                           score_kind)
