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
