"""Rough edges of corpus folders, outputs and tokenizer files through the real CLI (issue 26): file
names that are not UTF-8, files with no text under ``--on-bad-record skip``, folders and entries
that cannot be read, outputs that cannot be written, tokenizer.json in UTF-16 or with a BOM, and
a megabyte pattern in ``workbench runs``.

Permission bits do not stop root: the permission cases run as an unprivileged user when the tests
run as root and such a user can run this Python, and are skipped (saying so) otherwise; the same
message paths are also reached as root through a link to nothing, a link loop, a pipe and a file
standing where a folder should be.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hostile_helpers import digest, one_line_error

from workbench.store import ProjectStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from shared_corpora import CORPORA, require_corpora  # noqa: E402
from unprivileged import unprivileged  # noqa: E402

WORKTREE = Path(__file__).resolve().parents[2]
SAMPLE = "Hello world, Ünïcödé text 数字 123 — the quick brown fox."


def cli(cwd: Path, *args: str, timeout: float = 120, as_user=None) -> subprocess.CompletedProcess:
    """The real entry point in a child (``as_user``: a preexec function that makes it unprivileged),
    with a cache and state folder of its own."""
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), XDG_CACHE_HOME=str(cwd / ".xdg-cache"),
               XDG_STATE_HOME=str(cwd / ".xdg-state"))
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False, preexec_fn=as_user)


@pytest.fixture
def text_file(tmp_path) -> Path:
    require_corpora()
    path = tmp_path / "real.txt"
    path.write_bytes((CORPORA / "en_wiki_taylorswift.txt").read_bytes()[:30_000].rsplit(b"\n", 1)[0] + b"\n")
    return path


def runs_and_corpora(project: Path) -> tuple[int, int]:
    with ProjectStore.open(project, readonly=True) as store:
        return len(store.runs()), len(store.corpora())


# ---- file names that are not UTF-8 ------------------------------------------------------------------
@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="only Linux-like file systems keep any bytes")
def test_a_file_name_that_is_not_utf8_is_refused_in_one_line_and_stores_nothing(tmp_path, text_file):
    """Before, ``train`` crashed while storing the path, leaving corpus rows without a run."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    shutil.copy(text_file, folder / "good.txt")
    bad = os.path.join(os.fsencode(folder), b"caf\xe9.txt")
    with open(bad, "wb") as handle:
        handle.write(text_file.read_bytes())
    project = tmp_path / "p.tokproj"
    first = cli(tmp_path, "train", str(text_file), "--project", str(project), "--merges", "10", "--progress", "none")
    assert first.returncode == 0, first.stderr
    before = digest(project)
    spec = tmp_path / "run.json"  # a spec names the file with its options given: no sniffing, no expand_paths
    spec.write_text(json.dumps({"files": [{"path": os.fsdecode(bad), "kind": "text"}], "merges": 10,
                                "project": str(project)}, ensure_ascii=True), "utf-8")
    for args in (["corpus"], [os.fsdecode(bad)], [os.fsdecode(bad), "--kind", "text"]):
        result = cli(tmp_path, "train", *args, "--project", str(project), "--merges", "10", "--progress", "none")
        assert result.returncode == 2, (args, result.stderr)
        line = one_line_error(result.stderr)
        assert "caf\\xe9.txt" in line and "not valid UTF-8" in line and "rename" in line, line
    result = cli(tmp_path, "train", "--spec", str(spec), "--progress", "none")
    assert result.returncode == 2 and "not valid UTF-8" in one_line_error(result.stderr)
    assert digest(project) == before
    assert runs_and_corpora(project) == (1, 1)  # no orphan corpus row


# ---- files with no text under --on-bad-record skip --------------------------------------------------
def test_files_with_no_text_are_left_out_with_a_note_under_skip(tmp_path, text_file):
    folder = tmp_path / "corpus"
    folder.mkdir()
    shutil.copy(text_file, folder / "a.txt")
    (folder / "blank.txt").write_text("   \n\t\n\n", "utf-8")
    (folder / "empty.txt").write_bytes(b"")
    strict = cli(tmp_path, "train", "corpus", "--project", "s.tokproj", "--merges", "10", "--progress", "none")
    assert strict.returncode == 2 and "blank.txt" in one_line_error(strict.stderr)
    assert not (tmp_path / "s.tokproj").exists()

    skip = cli(tmp_path, "train", "corpus", "--project", "p.tokproj", "--merges", "10", "--progress", "none",
               "--on-bad-record", "skip")
    assert skip.returncode == 0, skip.stderr
    notes = [line for line in skip.stderr.splitlines() if "note:" in line]
    assert len(notes) == 2 and "blank.txt" in notes[0] and "empty.txt" in notes[1], skip.stderr
    assert all("holds no text" in note for note in notes)
    with ProjectStore.open(tmp_path / "p.tokproj", readonly=True) as store:
        assert [Path(c.path).name for c in store.corpora()] == ["a.txt"]

    (folder / "a.txt").unlink()
    nothing = cli(tmp_path, "train", "corpus", "--project", "q.tokproj", "--merges", "10", "--progress", "none",
                  "--on-bad-record", "skip")
    assert nothing.returncode == 2 and "blank.txt" in one_line_error(nothing.stderr)


# ---- folders and entries that cannot be read --------------------------------------------------------
@pytest.mark.parametrize("make, says", [
    (lambda f: os.symlink(f / "gone.txt", f / "link.txt"), "link.txt: skipped: cannot read it (a link to "),
    (lambda f: os.symlink("loop.txt", f / "loop.txt"), "loop.txt: skipped: cannot read it (Too many levels"),
    (lambda f: os.mkfifo(f / "pipe.txt"), "pipe.txt: skipped: not a regular file"),
    (lambda f: os.symlink(f.parent, f / "up"), "up: skipped: a link to a folder, which is not followed"),
])
def test_an_entry_that_cannot_be_read_is_named_with_its_reason(tmp_path, text_file, make, says):
    """Before, these were left out without a word (a run trained on less than its folder)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    shutil.copy(text_file, folder / "a.txt")
    make(folder)
    result = cli(tmp_path, "train", "corpus", "--project", "p.tokproj", "--merges", "10", "--progress", "none",
                 timeout=60)
    assert result.returncode == 2
    assert says in one_line_error(result.stderr)
    assert not (tmp_path / "p.tokproj").exists()


@pytest.fixture
def shared_tmp(text_file):
    """A folder every user can reach (pytest's own is private to root), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="workbench-hostile-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        for path in folder.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def _unprivileged_or_skip(folder: Path):
    way = unprivileged(folder)
    if way is None:
        pytest.skip("running as root, and neither root without CAP_DAC_OVERRIDE nor the user nobody can run "
                    "this Python here: permission bits do not stop root, so an unreadable folder cannot be made "
                    "(the message path is tested through links and pipes above)")
    return way


@pytest.mark.parametrize("where", ["top", "inside"])
def test_an_unreadable_folder_is_reported_with_the_real_reason(shared_tmp, text_file, where):
    """Before: "the folder has no files"."""
    user = _unprivileged_or_skip(shared_tmp)
    corpus = shared_tmp / "corpus"
    corpus.mkdir()
    shutil.copy(text_file, corpus / "a.txt")
    locked = corpus if where == "top" else corpus / "locked"
    if where == "inside":
        locked.mkdir()
        shutil.copy(text_file, locked / "b.txt")
    for path in shared_tmp.rglob("*"):
        path.chmod(0o777 if path.is_dir() else 0o666)
    locked.chmod(0)
    result = cli(shared_tmp, "train", "corpus", "--project", "p.tokproj", "--merges", "10", "--progress", "none",
                 as_user=user)
    assert result.returncode == 2, result.stderr
    line = one_line_error(result.stderr)
    assert f"{locked.name}: cannot read the folder (Permission denied)" in line and "has no files" not in line


# ---- outputs that cannot be written -----------------------------------------------------------------
@pytest.mark.parametrize("command", [
    ["export", "{project}", "--format", "hf", "--out", "{out}"],
    ["export", "{project}", "--format", "gpt2", "--out", "{out}"],
    ["export", "{project}", "--format", "tiktoken", "--out", "{out}"],
    ["count", "{corpus}", "--out", "{out}"],
])
def test_an_output_that_cannot_be_written_names_the_output_not_a_temporary(tmp_path, trained, text_file, command):
    """A file where the output's folder should be: the system's reason, and the path the user gave."""
    (tmp_path / "not-a-folder").write_text("a file\n", "utf-8")
    out = tmp_path / "not-a-folder" / "out.x"
    args = [a.format(project=trained, out=out, corpus=text_file) for a in command]
    result = cli(tmp_path, *args)
    assert result.returncode == 2
    line = one_line_error(result.stderr)
    assert f"{out}: Not a directory" in line and ".workbench-" not in line, line
    assert (tmp_path / "not-a-folder").read_text("utf-8") == "a file\n"


def test_an_export_into_a_read_only_folder_names_the_output(shared_tmp, trained):
    user = _unprivileged_or_skip(shared_tmp)
    project = shared_tmp / "p.tokproj"
    shutil.copy(trained, project)
    project.chmod(0o644)
    readonly = shared_tmp / "readonly"
    readonly.mkdir()
    readonly.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    out = readonly / "tokenizer.json"
    result = cli(shared_tmp, "export", str(project), "--format", "hf", "--out", str(out), as_user=user)
    assert result.returncode == 2
    line = one_line_error(result.stderr)
    assert f"{out}: Permission denied" in line and ".workbench-" not in line, line
    assert list(readonly.iterdir()) == []


# ---- tokenizer.json in UTF-16 or with a BOM ---------------------------------------------------------
ENCODINGS = {
    "utf-8 with a BOM": ("utf-8-sig", "tok.json"),
    "utf-16 with a BOM": ("utf-16", "tok.json"),
    "utf-16 with a BOM, named tokenizer.json": ("utf-16", "tokenizer.json"),
    "utf-16-le without a BOM": ("utf-16-le", "tok.json"),
    "utf-16-be without a BOM": ("utf-16-be", "tok.json"),
    "utf-32 with a BOM": ("utf-32", "tok.json"),
}


@pytest.mark.parametrize("variant", list(ENCODINGS))
def test_a_tokenizer_json_in_utf16_or_with_a_bom_imports_and_encodes_like_utf8(tmp_path, exports, variant):
    """Before: "cannot tell the format" (or "not valid UTF-8")."""
    encoding, name = ENCODINGS[variant]
    original = exports["hf"]
    path = tmp_path / name
    path.write_bytes(original.read_text("utf-8").encode(encoding))
    expected = cli(tmp_path, "encode", "--tokenizer", str(original), "--text", SAMPLE, "--json")
    assert expected.returncode == 0, expected.stderr
    got = cli(tmp_path, "encode", "--tokenizer", str(path), "--text", SAMPLE, "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == json.loads(expected.stdout)
    for source in (original, path):
        imported = cli(tmp_path, "import", str(source), "--project", "p.tokproj")
        assert imported.returncode == 0, imported.stderr
    with ProjectStore.open(tmp_path / "p.tokproj", readonly=True) as store:
        utf8, other = (store.load_reference(ref.id) for ref in store.references())
    assert other.vocab == utf8.vocab and other.merges == utf8.merges and len(other.merges) > 0


# ---- workbench runs with a megabyte pattern ---------------------------------------------------------
def test_runs_shortens_long_values_and_json_keeps_them(tmp_path, text_file):
    """Before, a 1.2 MB custom pattern (and a name with a line break) came out on one line."""
    pattern = "(?#" + "x" * 1_200_000 + r")\S+|\s+"  # a regex comment: a megabyte that compiles at once
    spec = tmp_path / "run.json"  # through a spec: one argument may not exceed 128 KB
    spec.write_text(json.dumps({"files": [{"path": str(text_file), "kind": "text"}], "merges": 5,
                                "pretokenizer": pattern, "name": "two\nlines " + "n" * 500,
                                "project": str(tmp_path / "p.tokproj")}), "utf-8")
    trained = cli(tmp_path, "train", "--spec", str(spec), "--progress", "none")
    assert trained.returncode == 0, trained.stderr[-500:]
    shown = cli(tmp_path, "runs", "p.tokproj")
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert len(lines) == 2 and max(map(len, lines)) < 250, [len(line) for line in lines]
    assert "two\\nlines" in lines[1] and "(?#xxx" in lines[1] and "…" in lines[1]
    whole = cli(tmp_path, "runs", "p.tokproj", "--json")
    (run,) = json.loads(whole.stdout)
    assert run["settings"]["pretokenizer"] == pattern and run["name"].startswith("two\nlines")
