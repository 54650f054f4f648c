"""Hidden files and folders in a corpus folder (``.ipynb_checkpoints/``, ``.git/``) are never read,
by the CLI or the Corpus tab (its field prompt walks the same :func:`folder_files`)."""

from __future__ import annotations

import json
import subprocess
import sys

from workbench.corpus import folder_files


def test_the_cli_reads_a_folder_without_its_hidden_files(tmp_path):
    folder = tmp_path / "data"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / ".ipynb_checkpoints" / "docs-checkpoint.jsonl").write_text(
        json.dumps({"cell": "stale copy " * 50}) + "\n", encoding="utf-8")
    (folder / ".hidden.txt").write_text("not me\n", encoding="utf-8")
    (folder / "docs.jsonl").write_text(json.dumps({"text": "the real text"}) + "\n", encoding="utf-8")
    assert folder_files(folder) == [folder / "docs.jsonl"]
    done = subprocess.run([sys.executable, "-m", "workbench", "stats", str(folder), "--json"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)["files"]
    assert [f["path"] for f in files] == [str(folder / "docs.jsonl")]
    assert files[0]["chars"] == len("the real text\n")
