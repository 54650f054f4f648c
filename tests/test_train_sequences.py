"""``workbench train --sequences`` end to end: the setting reaches the counting and the project file,
``lines`` + ``--tie-break hf`` gives the merges of the real ``tokenizers`` ``train(files)``, and a
second run on the same files reuses the cached counts (``--no-count-cache`` does not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hf_oracle import hf_merges_from_files
from shared_corpora import CORPUS_FILES, raw_line_slices, require_corpora

from workbench.core.byte_level import byte_encoder
from workbench.store import ProjectStore

tokenizers = pytest.importorskip("tokenizers")


def _train(*args: str, cache_home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_home))
    return subprocess.run([sys.executable, "-m", "workbench", "train", *args, "--progress", "none", "--json"],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def slices(tmp_path_factory) -> list[Path]:
    """800 lines of three files as their real bytes, ru_fortunes' CRLF lines and a lone-CR line included."""
    require_corpora()
    chosen = [p for p in CORPUS_FILES if p.name.startswith(("de_", "en_shakespeare", "ru_"))]
    return raw_line_slices(tmp_path_factory.mktemp("slices"), 800, chosen)


def _our_merges(project: Path, run_id: int) -> tuple[list[tuple[str, str]], dict]:
    to_unicode = byte_encoder()
    with ProjectStore.open(project, readonly=True) as store:
        tok = store.load_tokenizer(run_id)
        settings = store.run(run_id).settings
    text = lambda piece: "".join(to_unicode[b] for b in piece)  # noqa: E731
    return [(text(tok.vocab[a]), text(tok.vocab[b])) for a, b, _ in tok.merges], settings


def test_lines_and_hf_tie_break_give_tokenizers_merges_through_the_cli(slices, tmp_path):
    project = tmp_path / "p.tokproj"
    done = _train(*map(str, slices), "--project", str(project), "--vocab-size", "900", "--tie-break", "hf",
                  "--sequences", "lines", cache_home=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    ours, settings = _our_merges(project, json.loads(done.stdout)["run_id"])
    assert settings["sequences"] == "lines"
    expected = [tuple(m) for m in hf_merges_from_files(slices, 900, None)]
    assert len(ours) == len(expected) > 500
    assert ours == expected


def test_documents_is_stored_and_counts_differently(slices, tmp_path):
    project = tmp_path / "p.tokproj"
    runs = []
    for sequences in ("lines", "documents"):
        done = _train(*map(str, slices), "--project", str(project), "--merges", "50", "--sequences", sequences,
                      cache_home=tmp_path / "cache")
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout)["run_id"])
    with ProjectStore.open(project, readonly=True) as store:
        lines_run, documents_run = (store.run(r) for r in runs)
    assert lines_run.settings["sequences"] == "lines" and documents_run.settings["sequences"] == "documents"
    # gpt2's split keeps "\n\n" together only when it may cross a line: the counts cannot be equal
    assert lines_run.settings["word_types"] != documents_run.settings["word_types"]


def test_a_second_run_reuses_the_cached_counts_unless_told_not_to(slices, tmp_path):
    cache = tmp_path / "cache"
    project = tmp_path / "p.tokproj"
    first = _train(str(slices[0]), "--project", str(project), "--merges", "20", cache_home=cache)
    assert first.returncode == 0, first.stderr
    entries = sorted(p.name for p in cache.rglob("*") if p.is_file())
    assert entries, "the first run fills the count cache"
    second = _train(str(slices[0]), "--project", str(project), "--vocab-size", "300", "--tie-break", "hf",
                    cache_home=cache)
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in cache.rglob("*") if p.is_file()) == entries  # a hit: nothing new counted
    other = tmp_path / "other-cache"
    third = _train(str(slices[0]), "--project", str(project), "--merges", "20", "--no-count-cache", cache_home=other)
    assert third.returncode == 0, third.stderr
    assert not other.exists() or not any(p.is_file() for p in other.rglob("*"))
