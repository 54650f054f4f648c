"""Train on the shared corpora, export every format, load with the real libraries, compare ids.

Also: a training child process killed with SIGKILL leaves a valid project with the run marked
interrupted and the earlier run untouched.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.core.encoder import Encoder
from workbench.store import ProjectStore
from workbench.tasks.sources import load_tokenizer

HARD = "👩‍👩‍👧‍👦 🇩🇪 e\u0301 中文字符 한국어 1234567 \r\n\t  x  \n<|endoftext|> I'm"


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=300)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def samples(corpora, skip: str, chars: int = 20_000) -> list[str]:
    out = [HARD]
    for path in corpora:
        if path.name != skip:
            out.append(path.read_text(encoding="utf-8")[:chars])
    return out


@pytest.fixture(scope="module")
def trained(corpora, tmp_path_factory):
    """A byte-level run on a Shakespeare slice (cl100k pre-tokenizer, one special token)."""
    root = tmp_path_factory.mktemp("e2e")
    source = next(p for p in corpora if p.name == "en_shakespeare.txt")
    corpus = root / "shakespeare.txt"
    corpus.write_text(source.read_text(encoding="utf-8")[:300_000], encoding="utf-8")
    cli("train", str(corpus), "--project", "p.tokproj", "--vocab-size", "1200", "--pretokenizer", "cl100k",
        "--special", "<|endoftext|>", "--progress", "none", cwd=root)
    return root


@pytest.mark.parametrize("fmt, out", [("hf", "tokenizer.json"), ("tiktoken", "run.tiktoken")])
def test_exports_load_in_the_real_libraries_with_identical_ids(trained, corpora, fmt, out):
    root = trained
    cli("export", "p.tokproj", "--format", fmt, "--out", out, cwd=root)
    ours = Encoder(load_tokenizer(str(root / "p.tokproj")))
    texts = samples(corpora, skip="en_shakespeare.txt")
    if fmt == "hf":
        tokenizers = pytest.importorskip("tokenizers")
        theirs = tokenizers.Tokenizer.from_file(str(root / out))
        for text in texts:
            # tokenizers always splits out added special tokens: our allow_special mode.
            assert theirs.encode(text, add_special_tokens=False).ids == ours.encode(text, allow_special=True)
    elif fmt == "tiktoken":
        tiktoken = pytest.importorskip("tiktoken")
        from tiktoken.load import load_tiktoken_bpe

        sidecar = json.loads((root / (out + ".json")).read_text(encoding="utf-8"))
        encoding = tiktoken.Encoding(name="run", pat_str=sidecar["pat_str"],
                                     mergeable_ranks=load_tiktoken_bpe(str(root / out)),
                                     special_tokens=sidecar["special_tokens"])
        for text in texts:
            assert encoding.encode_ordinary(text) == ours.encode(text)
        assert encoding.encode("a<|endoftext|>", allowed_special="all") == ours.encode("a<|endoftext|>", allow_special=True)


def test_formats_that_do_not_fit_the_run_are_refused_with_the_reason(trained):
    """A cl100k-split BPE: a GPT-2 loader would split with GPT-2's pattern, a BERT loader or a
    .vocab would lose the merges; each is one line saying why and which formats fit."""
    for fmt, reason in (("gpt2", "a GPT-2 loader splits text with GPT-2's pattern; this run uses 'cl100k'"),
                        ("wordpiece", "vocab.txt is a WordPiece vocabulary"),
                        ("spm-vocab", "a .vocab lists pieces without their merges")):
        done = cli("export", "p.tokproj", "--format", fmt, "--out", f"refused-{fmt}", cwd=trained, check=False)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert reason in done.stderr and done.stderr.rstrip().endswith("formats that fit: hf, hf-folder, tiktoken, merges-csv")
        assert not (trained / f"refused-{fmt}").exists()


@pytest.mark.parametrize("fmt, out", [("hf", "t.json"), ("tiktoken", "t.tiktoken"), ("merges-csv", "m.csv")])
def test_every_export_reloads_and_encodes_through_the_cli(trained, fmt, out):
    root = trained
    cli("export", "p.tokproj", "--format", fmt, "--out", out, "--force", cwd=root)
    assert (root / out).exists()
    if fmt in ("hf", "gpt2", "tiktoken"):
        source = str(root / out / "vocab.json") if fmt == "gpt2" else out
        text = "To be, or not to be: 中文 👋"
        mine = json.loads(cli("encode", "--tokenizer", "p.tokproj", "--text", text, "--json", cwd=root).stdout)
        theirs = json.loads(cli("encode", "--tokenizer", source, "--text", text, "--json", cwd=root).stdout)
        assert theirs["ids"] == mine["ids"]
    if fmt == "merges-csv":
        import csv

        with open(root / out, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
        assert rows[0] == ["rank", "left", "right", "merged", "frequency"] and len(rows) == 1 + (1200 - 257)
        assert all(row[1] + row[2] == row[3] for row in rows[1:] if "\\x" not in "".join(row))


def test_import_recognises_cl100k_and_encodes_like_tiktoken(tmp_path, cl100k_file):
    tiktoken = pytest.importorskip("tiktoken")
    result = cli("import", str(cl100k_file), "--project", "p.tokproj", cwd=tmp_path)
    assert "cl100k" in result.stdout
    text = "Hello world! 你好 👋🏽 <|endoftext|>"
    out = json.loads(cli("encode", "--tokenizer", "p.tokproj#ref:1", "--text", text, "--json", cwd=tmp_path).stdout)
    from tiktoken.load import load_tiktoken_bpe

    from workbench.core.pretokenize import CL100K_PATTERN

    encoding = tiktoken.Encoding(name="c", pat_str=CL100K_PATTERN, mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)),
                                 special_tokens={})
    assert out["ids"] == encoding.encode_ordinary(text)


def test_sigkill_during_training_leaves_a_valid_project(corpora, tmp_path):
    project = tmp_path / "k.tokproj"
    small = tmp_path / "small.txt"
    small.write_text(corpora[0].read_text(encoding="utf-8")[:50_000], encoding="utf-8")
    cli("train", str(small), "--project", str(project), "--merges", "50", "--progress", "none", cwd=tmp_path)
    with ProjectStore.open(project, readonly=True) as store:
        first_rows = [(r.rank, r.left, r.right, r.new_id, r.frequency) for r in store.merges(1, 0, 100)]
    assert len(first_rows) == 50
    big = [str(p) for p in corpora]
    child = subprocess.Popen([sys.executable, "-m", "workbench", "train", *big, "--project", str(project),
                              "--vocab-size", "60000", "--progress", "json"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # Wait until merges of the second run are committed to the file.
        while time.monotonic() < deadline:
            line = child.stderr.readline()
            if not line:
                break
            event = json.loads(line)
            if event["event"] == "merges" and event.get("step", 0) > 300:
                break
        # Kill only once merges of the second run are committed to the file (polled, not slept).
        while time.monotonic() < deadline:
            probe = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
            try:
                landed = probe.execute("SELECT count(*) FROM merges WHERE run_id = 2").fetchone()[0]
            finally:
                probe.close()
            if landed > 0:
                break
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with ProjectStore.open(project) as store:
        runs = {r.id: r for r in store.runs()}
        assert runs[1].status == "finished"
        assert [(r.rank, r.left, r.right, r.new_id, r.frequency) for r in store.merges(1, 0, 100)] == first_rows
        assert runs[2].status == "interrupted"
        assert runs[2].merge_count > 0
        tok = store.load_tokenizer(2)  # what was committed is usable
        assert Encoder(tok).decode(Encoder(tok).encode("the king")) == "the king"


def test_cancel_while_counting_a_large_corpus_ends_promptly(corpora, tmp_path):
    """SIGTERM during the parallel counting phase (≥ 8 MB): the run ends, no worker is left behind."""
    child = subprocess.Popen([sys.executable, "-m", "workbench", "train", *map(str, corpora), "--project",
                              str(tmp_path / "c.tokproj"), "--vocab-size", "30000", "--progress", "json"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in child.stderr:
            if json.loads(line)["event"] == "reading":
                break
        child.terminate()
        child.wait(timeout=30)  # hung forever when the workers inherited the stop handler
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 3, child.stderr.read()  # "cancelled while reading the corpus"
    assert not (tmp_path / "c.tokproj").exists()  # nothing was stored for a run stopped before it began
    marker = str(tmp_path / "c.tokproj").encode()

    def stray() -> list[str]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker in (entry / "cmdline").read_bytes():
                        found.append(entry.name)
                except OSError:
                    pass
        return found

    deadline = time.monotonic() + 10  # workers that got SIGTERM exit within moments
    while stray() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stray() == [], "a counting worker outlived the training process"
