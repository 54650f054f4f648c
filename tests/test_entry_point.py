"""The ``workbench`` entry point as a first-time user meets it: a typo is not a window, a machine
without a display gets one line instead of a Qt abort, and the shipped resources are found."""

from __future__ import annotations

import os
import subprocess
import sys

from workbench.corpus.demo import demo_corpus_files
from workbench.resources import resource_dir


def _run(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True,
                          env={**base, **(env or {})}, cwd=cwd, timeout=300)


def test_an_unknown_word_is_an_error_not_a_window(tmp_path):
    result = _run("trian", "corpus.txt", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [lines[0]] and "unknown command or file: trian" in lines[0]
    assert "train" in lines[0]  # the commands are listed, so the typo is easy to see


def test_no_display_gets_one_line_not_a_qt_abort(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n", encoding="utf-8")
    result = _run(str(corpus), cwd=tmp_path)
    if not sys.platform.startswith("linux"):
        return
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "no display" in result.stderr and "QT_QPA_PLATFORM=offscreen" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_demo_corpus_and_icons_ship_inside_the_package():
    files = demo_corpus_files()
    assert len(files) >= 4 and all(f.suffix == ".txt" and f.stat().st_size > 1000 for f in files)
    assert (resource_dir("icons") / "io.github.tokenizer_workbench.Workbench.svg").is_file()


def test_qt_options_and_their_values_are_not_taken_for_files(tmp_path):
    from workbench.ui.arguments import split_args

    corpus = tmp_path / "c.txt"
    corpus.write_text("x\n", encoding="utf-8")
    paths, qt = split_args([str(corpus), "-platform", "offscreen", "--smoke-test", str(tmp_path / "out")])
    assert paths == [str(corpus)] and qt == ["-platform", "offscreen", "--smoke-test", str(tmp_path / "out")]


def test_the_window_smoke_test_trains_the_demo_and_exports(tmp_path):
    """What the frozen bundle's smoke test runs: the Train tab's child process, then an export."""
    out = tmp_path / "smoke"
    result = _run("--smoke-test", str(out), env={"QT_QPA_PLATFORM": "offscreen"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tokenizers = __import__("pytest").importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    assert tok.get_vocab_size() > 256
