"""A regular install works, not only an editable one: build the wheel, install it into a fresh venv,
and run the installed ``workbench`` from a folder outside the checkout on the shipped demo corpus —
train a small run, export ``tokenizer.json`` — then load that file in the real ``tokenizers``.

Slow (a venv and PySide6 from pip's cache, ~1 min): it is the only test that sees the package as a
user's machine sees it, so it runs in the suite; ``WORKBENCH_SKIP_WHEEL_TEST=1`` skips it locally."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    if os.environ.get("WORKBENCH_SKIP_WHEEL_TEST") == "1":
        pytest.skip("WORKBENCH_SKIP_WHEEL_TEST=1")
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "-w", str(dist), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheels = list(dist.glob("tokenizer_workbench-*.whl"))
    assert len(wheels) == 1
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheels[0])], check=True, capture_output=True,
                   env=_clean_env(), timeout=600)  # (with PYTHONPATH on the checkout pip saw it installed)
    return env_dir


def _clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH and the like: the developer's exported checkout must not
    shadow the installed package."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return env


def _workbench(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(env_dir / "bin" / "workbench"), *args], capture_output=True, text=True, cwd=cwd,
                          env=_clean_env(), timeout=300)


def test_the_wheel_ships_the_demo_and_trains_and_exports_outside_the_checkout(installed, tmp_path):
    python = installed / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import json, workbench.corpus.demo as d; "
                            "print(json.dumps([str(p) for p in d.demo_corpus_files()]))"],
                           capture_output=True, text=True, cwd=tmp_path, env=_clean_env(), timeout=60)
    assert found.returncode == 0, found.stderr
    demo = [Path(p) for p in json.loads(found.stdout)]
    assert demo and all(str(installed) in str(p) for p in demo), "the demo must come from the installed wheel"
    project = tmp_path / "demo.tokproj"
    trained = _workbench(installed, "train", *map(str, demo), "--project", str(project), "--vocab-size", "400",
                         "--progress", "none", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    out = tmp_path / "tokenizer.json"
    exported = _workbench(installed, "export", str(project), "--format", "hf", "--out", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(out))
    assert tok.get_vocab_size() == 400
    text = demo[0].read_text(encoding="utf-8")[:2000]
    encoded = _workbench(installed, "encode", "--tokenizer", str(project), "--text", text, "--json", cwd=tmp_path)
    assert encoded.returncode == 0, encoded.stderr
    assert json.loads(encoded.stdout)["ids"] == tok.encode(text).ids
    # A SentencePiece .model round trip with what the wheel itself depends on (protobuf and the
    # official schema module of the sentencepiece package), not the test extras.
    trained = _workbench(installed, "train", *map(str, demo), "--project", str(project), "--model", "unigram",
                         "--vocab-size", "1500", "--progress", "none", "--json", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    run = json.loads(trained.stdout)["run_id"]
    model = tmp_path / "m.model"
    exported = _workbench(installed, "export", str(project), "--run", str(run), "--format", "spm",
                          "--out", str(model), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    by_project = _workbench(installed, "encode", "--tokenizer", f"{project}#{run}", "--text", text, "--json",
                            cwd=tmp_path)
    by_model = _workbench(installed, "encode", "--tokenizer", str(model), "--text", text, "--json", cwd=tmp_path)
    assert by_model.returncode == 0, by_model.stderr
    assert json.loads(by_model.stdout)["ids"] == json.loads(by_project.stdout)["ids"]


def test_the_wheel_carries_the_c_merge_loop_when_a_compiler_built_it(installed, tmp_path):
    """With a C compiler at build time (CI installs gcc) the wheel holds BPE's C merge loop and the
    installed trainer uses it; without one the wheel is pure and trains the same merges."""
    import shutil

    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler here: the wheel is pure Python")
    code = "import workbench.core.bpe as b; print(b._native is not None, b._native and b._native.__file__)"
    out = subprocess.run([str(installed / "bin" / "python"), "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=_clean_env(), timeout=60)
    assert out.stdout.startswith("True ") and str(installed) in out.stdout, out.stdout + out.stderr
