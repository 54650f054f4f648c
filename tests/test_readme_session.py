"""The README's headless first session, run exactly as written there (so the README cannot drift).

The block after "The same session headless:" is read from README.md and each line run by the shell
in an empty folder, with ``workbench`` and ``python`` being this interpreter's. What must hold: every
command exits 0, and the ids ``tokenizers`` prints for the exported ``tokenizer.json`` are the ids
``workbench encode`` printed for the same text.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_session() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"The same session headless:\s*```sh\n(.*?)```", text, re.S)
    assert block, "README.md lost its 'The same session headless:' block"
    lines = []
    for line in block.group(1).splitlines():
        command = line.split("  #", 1)[0].strip()  # a trailing comment is two spaces and '#'
        if command:
            lines.append(command)
    return lines


def test_readme_headless_session_runs_as_written(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "workbench").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m workbench "$@"\n')
    (bindir / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    for f in bindir.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    work = tmp_path / "session"
    work.mkdir()
    outputs = []
    commands = readme_session()
    assert any(c.startswith("workbench export") for c in commands)
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stderr}"
        outputs.append((command, done.stdout))
    encoded = next(json.loads(out) for cmd, out in outputs if cmd.startswith("workbench encode") and "--json" in cmd)
    printed = next(out for cmd, out in outputs if cmd.startswith("python -c"))
    assert json.loads(printed) == encoded["ids"]
    assert len(encoded["ids"]) >= 1
    runs = next(out for cmd, out in outputs if cmd.startswith("workbench runs"))
    for model in ("bpe", "wordpiece", "unigram"):
        assert model in runs.lower()
    # Each run is a meaningful one: BPE and WordPiece merged, Unigram pruned to its size (no "0 merges").
    rows = {line.split()[0]: line.split() for line in runs.splitlines()[1:]}
    assert int(rows["1"][3]) > 500 and int(rows["2"][3]) > 500, runs
    assert rows["3"][2] == "2000" and rows["3"][3] == "—", runs
