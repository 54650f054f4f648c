"""Fixtures for the format tests: hand-built tokenizers and the real cl100k file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from fmt_helpers import BYTE_PAIRS, build

from workbench.core.model import Tokenizer


@pytest.fixture
def byte_tokenizer() -> Tokenizer:
    return build("bytes", BYTE_PAIRS, specials=("<|endoftext|>",), pretokenizer="gpt2", name="hand")


@pytest.fixture
def eow_tokenizer() -> Tokenizer:
    """PRODUCT.md worked example 2: low:5 lower:2 newest:6 widest:3 with </w>, 5 merges."""
    return build("chars", [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w")],
                 alphabet="lowernstid", eow="</w>", pretokenizer="whitespace")


@pytest.fixture(scope="session")
def cl100k_path() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("tiktoken_ext is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "cl100k_base.tiktoken"
    if not path.exists():
        pytest.skip("cl100k_base.tiktoken is not available offline")
    return path


@pytest.fixture(scope="session")
def cl100k(cl100k_path: Path) -> Tokenizer:
    from workbench.formats import load_tokenizer_file

    return load_tokenizer_file(cl100k_path)
