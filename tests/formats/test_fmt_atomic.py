"""The one atomic writer through the real ``workbench export`` entry point: a failed or killed
export leaves neither a file, nor an empty folder, nor a temporary; ``--force`` replaces by rename.

The kill is made deterministic with the writer's test hook (``WORKBENCH_TEST_EXPORT_PAUSE``): the
child stages and verifies its files, creates the marker file and waits; only then is SIGTERM sent.
The failure is real: the child runs under a 1 KB file-size limit, so writing vocab.json fails.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_run import HOSTILE_PAIRS, write_hostile_project

from workbench.core.atomic import PAUSE_ENV, TEMP_PREFIX


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    # GPT-2's split: the GPT-2 pair is offered only for a run its loaders reproduce.
    return write_hostile_project(tmp_path_factory.mktemp("atomic") / "hostile.tokproj", pretokenizer="gpt2")


def export_args(project: Path, fmt: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "workbench", "export", str(project), "--format", fmt, "--out", str(out), *extra]


def temporaries(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.startswith(TEMP_PREFIX)]


def _small_files() -> None:  # runs in the child before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


def test_failed_gpt2_export_leaves_no_folder(project, tmp_path):
    out = tmp_path / "models" / "gpt2"  # neither folder exists yet
    done = subprocess.run(export_args(project, "gpt2", out), preexec_fn=_small_files, capture_output=True, check=False,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "vocab.json" in done.stderr and "nothing was written" in done.stderr
    assert os.listdir(tmp_path) == []  # no models/, no gpt2/, no temporary folder


def _paused_export(project: Path, fmt: str, out: Path, marker: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, **{PAUSE_ENV: str(marker)})
    child = subprocess.Popen(export_args(project, fmt, out, *extra), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    give_up = time.monotonic() + 120  # a safety net, not a measurement: the marker decides
    while not marker.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < give_up, "the export never reached its pause"
        time.sleep(0.02)
    return child


def test_sigterm_mid_gpt2_export_leaves_nothing(project, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "paused"
    child = _paused_export(project, "gpt2", work / "gpt2", marker)
    staged = temporaries(work)
    assert len(staged) == 1 and sorted(os.listdir(work / staged[0])) == ["merges.txt", "vocab.json"]
    child.send_signal(signal.SIGTERM)
    _out, err = child.communicate(timeout=60)
    assert child.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert os.listdir(work) == []


def test_sigterm_during_forced_replacement_keeps_the_old_file(project, tmp_path):
    out = tmp_path / "merges.csv"
    out.write_bytes(b"old contents\r\n")
    child = _paused_export(project, "merges-csv", out, tmp_path / "paused", "--force")
    assert len(temporaries(tmp_path)) == 1
    child.send_signal(signal.SIGTERM)
    child.communicate(timeout=60)
    assert child.returncode == 130
    assert out.read_bytes() == b"old contents\r\n"
    assert sorted(os.listdir(tmp_path)) == ["merges.csv", "paused"]


def test_force_replaces_by_rename_and_keeps_other_files_in_a_gpt2_folder(project, tmp_path):
    csv_out, folder = tmp_path / "merges.csv", tmp_path / "gpt2"
    for fmt, out in (("merges-csv", csv_out), ("gpt2", folder)):
        first = subprocess.run(export_args(project, fmt, out), capture_output=True, check=False, text=True, timeout=120)
        assert first.returncode == 0, first.stderr
    (folder / "README.md").write_text("the user's own notes\n", encoding="utf-8")
    old_csv = open(csv_out, "rb")  # noqa: SIM115 - held across the replacement on purpose
    old_vocab_inode = (folder / "vocab.json").stat().st_ino
    try:
        old_inode = os.fstat(old_csv.fileno()).st_ino
        refused = subprocess.run(export_args(project, "merges-csv", csv_out), capture_output=True, check=False, text=True,
                                 timeout=120)
        assert refused.returncode == 2 and "--force" in refused.stderr
        for fmt, out in (("merges-csv", csv_out), ("gpt2", folder)):
            forced = subprocess.run(export_args(project, fmt, out, "--force"), capture_output=True, check=False, text=True,
                                    timeout=120)
            assert forced.returncode == 0, forced.stderr
        # A new file took the name; the old one was never truncated under a reader.
        assert csv_out.stat().st_ino != old_inode
        assert old_csv.read() == csv_out.read_bytes()
        assert csv_out.read_bytes().count(b"\r\n") == 1 + len(HOSTILE_PAIRS)
    finally:
        old_csv.close()
    assert (folder / "vocab.json").stat().st_ino != old_vocab_inode
    assert sorted(os.listdir(folder)) == ["README.md", "merges.txt", "vocab.json"]
    assert (folder / "README.md").read_text(encoding="utf-8") == "the user's own notes\n"
    assert temporaries(tmp_path) == [] and temporaries(folder) == []
