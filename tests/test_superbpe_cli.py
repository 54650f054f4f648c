"""SuperBPE through the CLI contract (``workbench train ... --model superbpe --transition T``): the run
records t, its tokenizer.json loads in stock ``tokenizers`` with the paper's pre-tokenizer layout
and gives our ids on held-out text in five languages, the pre-export check names the superwords,
GPT-2 files and tiktoken are refused with the reason, and bad settings fail in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.core.superbpe import STAGE2_PATTERN, is_superword
from workbench.tasks.sources import load_tokenizer

tokenizers = pytest.importorskip("tokenizers")


def _wb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=600)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    require_corpora()
    folder = tmp_path_factory.mktemp("superbpe")
    train, held = [], []
    for path in CORPUS_FILES:
        lines = path.read_text(encoding="utf-8").split("\n")[:800]
        train += [line for i, line in enumerate(lines) if i % 8]
        held += [line for i, line in enumerate(lines) if i % 8 == 0 and line.strip()][:12]
    (folder / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    (folder / "held.txt").write_text("\n".join(held) + "\n", encoding="utf-8")
    project = folder / "p.tokproj"
    done = _wb("train", "train.txt", "--project", str(project), "--model", "superbpe", "--transition", "0.6",
               "--vocab-size", "1200", "--progress", "none", "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    return {"folder": folder, "project": project, "run_id": run_id, "held": held}


def test_the_run_records_t_and_its_first_merges_are_subwords(run):
    done = _wb("runs", str(run["project"]), "--json", cwd=run["folder"])
    info = next(r for r in json.loads(done.stdout) if r["id"] == run["run_id"])
    s = info["settings"]
    assert s["model"] == "superbpe" and s["transition"] == 0.6 and s["stage1_pretokenizer"] == "gpt2"
    assert s["superbpe"]["transition_vocab"] == 720 and s["superbpe"]["transition_merge"] == 720 - 256
    assert s["pretokenizer"] == STAGE2_PATTERN and info["vocab_size"] == 1200
    tok = load_tokenizer(f"{run['project']}#{run['run_id']}")
    k = s["superbpe"]["transition_merge"]
    assert not any(is_superword(tok.vocab[n]) for _a, _b, n in tok.merges[:k])
    assert sum(is_superword(tok.vocab[n]) for _a, _b, n in tok.merges[k:]) > 50
    assert "SuperBPE" in _wb("runs", str(run["project"]), cwd=run["folder"]).stdout


@pytest.mark.parametrize("fmt", ["hf"])  # hf-folder too: tests/test_exports_per_family.py
def test_tokenizer_json_loads_in_stock_tokenizers_with_our_ids(run, fmt):
    folder = run["folder"]
    out = folder / ("tokenizer.json" if fmt == "hf" else "folder")
    done = _wb("export", str(run["project"]), "--format", fmt, "--out", str(out), "--force", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "superword token(s) cross spaces" in done.stderr  # the pre-export check
    path = out if fmt == "hf" else out / "tokenizer.json"
    config = json.loads(path.read_text("utf-8"))["pre_tokenizer"]
    assert config == {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": STAGE2_PATTERN}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    loaded = tokenizers.Tokenizer.from_file(str(path))
    done = _wb("encode", "--tokenizer", f"{run['project']}#{run['run_id']}", "--file", "held.txt", "--jsonl", cwd=folder)
    ours = [json.loads(line)["ids"] for line in done.stdout.splitlines()]
    assert len(ours) == len(run["held"]) >= 50
    assert [loaded.encode(text).ids for text in run["held"]] == ours
    tok = load_tokenizer(f"{run['project']}#{run['run_id']}")
    used = {i for ids in ours for i in ids}
    assert any(is_superword(tok.vocab[i]) for i in used)  # held-out text is encoded with superwords


@pytest.mark.parametrize("fmt, why", [("gpt2", "merges.txt cannot hold that split"),
                                      ("tiktoken", "tiktoken drops the text between its pattern's matches")])
def test_gpt2_files_and_tiktoken_are_refused_saying_why(run, fmt, why):
    out = run["folder"] / f"refused-{fmt}"
    done = _wb("export", str(run["project"]), "--format", fmt, "--out", str(out), cwd=run["folder"])
    assert done.returncode == 2 and why in done.stderr and "superwords" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


@pytest.mark.parametrize("flags, named", [
    (("--transition", "-1"), "--transition"),
    (("--transition", "0.5", "--units", "chars"), "--units"),
    (("--pretokenizer", "whitespace"), "--pretokenizer"),
    (("--max-words", "0"), "--max-words"),
])
def test_bad_settings_fail_in_one_line_naming_the_flag(run, flags, named):
    done = _wb("train", "held.txt", "--project", str(run["folder"] / "bad.tokproj"), "--model", "superbpe",
               "--vocab-size", "400", *flags, cwd=run["folder"])
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_no_count_cache_holds_for_the_stage_two_count_too(tmp_path, monkeypatch):
    """``--no-count-cache`` (``count_cache=False``): neither counting pass reads or writes the cache —
    stage 2's own count of the files with the paper's split included; with the cache, both are kept."""
    from workbench.corpus.count_cache import default_cache_dir
    from workbench.tasks.spec import CorpusFile, RunSpec
    from workbench.tasks.train import train_run

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    corpus = tmp_path / "c.txt"
    corpus.write_text("by the way, it is the way of the cat.\n" * 600, encoding="utf-8")  # cached from 16 KiB
    spec = RunSpec(files=(CorpusFile(str(corpus)),), model="superbpe", vocab_size=300)

    def cached() -> list[Path]:
        folder = default_cache_dir()
        return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []

    assert train_run(spec, tmp_path / "a.tokproj", count_cache=False)[1] == "finished"
    assert cached() == []
    assert train_run(spec, tmp_path / "b.tokproj", count_cache=True)[1] == "finished"
    assert len(cached()) >= 2  # the GPT-2 split's table and the stage-2 split's
