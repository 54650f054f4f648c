"""Where the real multilingual corpora live (``../shared/corpora`` beside the checkout), and the one
rule for their absence: skip on a developer's machine, fail under ``CI=true`` — there the oracle
tests on real text must run, never skip silently. A uniquely named module, safe to import from tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
CORPUS_FILES = sorted(CORPORA.glob("*.txt"))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_corpora() -> None:
    """Skip (or, in CI, fail) when the shared corpora are missing."""
    if CORPUS_FILES:
        return
    message = f"{CORPORA} is not beside the checkout"
    if in_ci():
        pytest.fail(message + " (CI=true: the real-corpus oracle tests must run)", pytrace=False)
    pytest.skip(message)


def raw_line_slices(folder: Path, lines: int, files: list[Path] | None = None) -> list[Path]:
    """Slices of the corpus files as their real bytes, for oracles that read files themselves
    (``tokenizers``' ``train(files)``): the first ``lines`` lines of each, line ends as they are — and
    for a file with CRLF further in (ru_fortunes' start at line 10,189) those lines too, plus one line
    holding lone CRs, so a reader that takes ``\\r`` for a line break cannot agree with the oracle.
    Never decoded with universal newlines, which would turn every CRLF into LF on the way."""
    out = []
    for path in files if files is not None else CORPUS_FILES:
        raw = path.read_bytes().splitlines(keepends=True)
        chosen = raw[:lines]
        crlf = [i for i, line in enumerate(raw) if line.endswith(b"\r\n")]
        if crlf:
            chosen += raw[crlf[0]:crlf[0] + lines // 4]
            chosen.append(b"\r".join(line.rstrip(b"\r\n") for line in raw[crlf[0]:crlf[0] + 6]) + b"\r\n")
        target = folder / path.name
        target.write_bytes(b"".join(chosen))
        out.append(target)
    return out
