"""One descriptor per model family (``workbench.tasks.models``), checked through the real CLI.

A JSON spec gets its own family's defaults (not BPE's); the progress lines, the ``runs`` table and
a cancelled run follow the family's progress semantics (merges, or the vocabulary falling while
Unigram prunes); only the settings that apply to a family are shown; the trainers name settings,
never CLI flags.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.core.model import MergeEvent
from workbench.core.unigram import UnigramEvent
from workbench.tasks.models import BPE, FAMILIES, UNIGRAM, WORDPIECE
from workbench.tasks.train import _Watch

ROOT = Path(__file__).resolve().parents[1]


def _wb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=600)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    require_corpora()
    path = tmp_path_factory.mktemp("descriptor") / "corpus.txt"
    path.write_text("".join("".join(p.read_text(encoding="utf-8").splitlines(keepends=True)[:250])
                            for p in CORPUS_FILES), encoding="utf-8")
    return path


@pytest.mark.parametrize("model", ["wordpiece", "unigram"])
def test_a_json_spec_gets_its_familys_defaults_not_bpes(model, corpus, tmp_path) -> None:
    spec = tmp_path / "run.json"
    spec.write_text(json.dumps({"version": 1, "model": model, "vocab_size": 1500, "files": [str(corpus)],
                                "project": str(tmp_path / "p.tokproj")}), encoding="utf-8")
    done = _wb("train", "--spec", str(spec), "--progress", "none", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # before: BPE's gpt2 pre-tokenizer, refused for Unigram
    listed = _wb("runs", str(tmp_path / "p.tokproj"), "--json", cwd=tmp_path)
    settings = json.loads(listed.stdout)[0]["settings"]
    fam = FAMILIES[model]
    for name in ("units", "pretokenizer", "tie_break"):
        assert settings[name] == fam.defaults[name], name
    assert settings["special_tokens"] == list(fam.defaults["special_tokens"])
    if model == "wordpiece":
        assert settings["normalizer"] == ["bert-lower"] and settings["wordpiece_score"] == "frequency"


def test_unigram_progress_counts_down_the_vocabulary_not_merges(corpus, tmp_path) -> None:
    done = _wb("train", str(corpus), "--project", str(tmp_path / "p.tokproj"), "--model", "unigram",
               "--vocab-size", "1500", "--progress", "text", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "merge " not in done.stderr and "/0" not in done.stderr, done.stderr
    assert "seeding pieces from frequent substrings…" in done.stderr
    assert "EM rounds and pruning from " in done.stderr and "seed pieces down to 1,500" in done.stderr
    bpe = _wb("train", str(corpus), "--project", str(tmp_path / "p.tokproj"), "--vocab-size", "400",
              "--progress", "text", cwd=tmp_path)
    assert "training 144 merges" in bpe.stderr, bpe.stderr  # 256 bytes + 144 merges


def test_the_eta_of_a_pruning_run_follows_the_vocabulary_share() -> None:
    """Unigram's steps are not known in advance: the ETA is on the log share from seed to target."""
    watch = _Watch(UNIGRAM.progress, 0, 64_000, 4_000, t0=0.0)
    sizes = [48_000, 48_000, 36_000, 36_000, 27_000, 27_000, 20_250]  # a quarter pruned every third step
    reports = [watch.progress(UnigramEvent(i + 1, "em", v, 1000, -1.0), 1, now=1.0 + 2.0 * i)
               for i, v in enumerate(sizes)]
    etas = [r.eta_s for r in reports]
    assert all(r.target == 0 and r.goal == 4_000 for r in reports)
    assert etas[-1] is not None and 0 < etas[-1] < 60, etas  # ~7 more pruning steps at ~4 s each, at most
    merges = _Watch(BPE.progress, 100, 256, 356, t0=0.0)
    last = [merges.progress(MergeEvent(s, 0, 0, 256 + s, 5, 256 + s, 1000), 1, now=0.05 * s) for s in range(1, 60)][-1]
    assert last.eta_s is not None and last.target == 100


def test_runs_shows_a_running_unigrams_size_and_a_cancelled_one_as_a_cut(corpus, tmp_path) -> None:
    project = tmp_path / "p.tokproj"
    proc = subprocess.Popen([sys.executable, "-m", "workbench", "train", str(corpus), "--project", str(project),
                             "--model", "unigram", "--vocab-size", "1000", "--progress", "json"],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # wait for a second step: the run is running and has stored steps
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") == "merges" and event.get("step", 0) >= 2:  # lines come ~100 ms apart
                break
        proc.send_signal(signal.SIGSTOP)  # hold the trainer there (a small run ends within a second)
        deadline = time.monotonic() + 60
        while True:
            rows = json.loads(_wb("runs", str(project), "--json", cwd=tmp_path).stdout)
            if rows and rows[0]["status"] == "running" and rows[0]["vocab_size"] > 1000:
                break
            assert time.monotonic() < deadline, rows  # |V| = 3 (the specials) before: the size was not shown
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)
        proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3  # cancelled
    table = _wb("runs", str(project), cwd=tmp_path).stdout
    row = json.loads(_wb("runs", str(project), "--json", cwd=tmp_path).stdout)[0]
    assert row["status"] == "cancelled" and row["settings"]["stopped_at"]["vocab_size"] > 1000
    assert f"cancelled at |V| {row['settings']['stopped_at']['vocab_size']}, cut to 1000" in table, table
    assert "tie-break" not in table  # not a Unigram setting
    assert {"count_s", "prepare_s", "merge_s", "total_s"} <= set(row["timings"])
    assert row["timings"]["total_s"] >= row["timings"]["count_s"] + row["timings"]["prepare_s"]


def test_runs_names_only_the_settings_that_apply(corpus, tmp_path) -> None:
    project = tmp_path / "p.tokproj"
    for model in ("bpe", "wordpiece"):
        done = _wb("train", str(corpus), "--project", str(project), "--model", model, "--vocab-size", "1500",
                   "--progress", "none", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    lines = _wb("runs", str(project), cwd=tmp_path).stdout.splitlines()
    bpe, wordpiece = lines[1], lines[2]
    assert "tie-break first-seen" in bpe and "bytes" in bpe
    assert "WordPiece" in wordpiece and "tie-break" not in wordpiece and "bytes" not in wordpiece


def test_the_cli_makes_a_flag_of_every_option_and_refuses_what_does_not_apply(corpus, tmp_path) -> None:
    help_text = _wb("train", "--help", cwd=tmp_path).stdout
    for fam in FAMILIES.values():
        for option in fam.options:
            assert "--" + option.name.replace("_", "-") in help_text
    done = _wb("train", str(corpus), "--project", str(tmp_path / "p.tokproj"), "--model", "wordpiece",
               "--vocab-size", "1500", "--tie-break", "first-seen", cwd=tmp_path)
    assert done.returncode == 2 and "--tie-break:" in done.stderr
    assert WORDPIECE.why_not["tie_break"] in done.stderr and not (tmp_path / "p.tokproj").exists()


def test_core_names_settings_never_cli_flags() -> None:
    """Every message core raises (the trainers', the exporter's refusal, the sweep's) speaks of the
    setting (ConfigError(field=…)); the CLI adds the flag, the window its control."""
    paths = sorted((ROOT / "workbench" / "core").glob("*.py"))
    assert {"bpe.py", "unigram.py", "atomic.py", "vocab_sweep.py"} <= {p.name for p in paths}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                for part in ast.walk(node.exc):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        assert " --" not in f" {part.value}", (path.name, part.value)


def test_each_family_exports_what_its_writers_offer():
    from workbench.formats.export import FORMATS, why_not
    from workbench.tasks.models import FAMILIES

    for family in FAMILIES.values():
        offered = family.export_formats()
        assert offered and set(offered) <= set(FORMATS)
        assert all(why_not(family.name, fmt) for fmt in FORMATS if fmt not in offered)
    assert "tiktoken" in FAMILIES["bpe"].export_formats() and "tiktoken" not in FAMILIES["unigram"].export_formats()
    assert "spm" in FAMILIES["unigram"].export_formats() and "wordpiece" in FAMILIES["wordpiece"].export_formats()
