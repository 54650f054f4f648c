"""``workbench train --spec RUN.json`` runs exactly what the flags would: same merges, same settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from workbench.store import ProjectStore
from workbench.tasks.spec import CorpusFile, RunSpec


def workbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def stored(project: Path):
    with ProjectStore.open(project, readonly=True) as store:
        (run,) = store.runs()
        merges = [(m.left, m.right, m.new_id, m.frequency, m.piece) for m in store.merges(run.id, 0, run.merge_count)]
        alphabet = {piece for _, piece, kind in store.vocab(run.id) if kind == "base"}
        return run, merges, [c.reader_options for c in store.corpora()], alphabet


def test_a_spec_file_gives_the_merges_of_the_equivalent_flags(corpora, tmp_path):
    by_name = {p.name: p for p in corpora}
    text = tmp_path / "de.txt"
    text.write_bytes(by_name["de_zitate.txt"].read_text(encoding="utf-8")[:30_000].encode("cp1252", "replace"))
    latin = tmp_path / "en.text"  # an unusual ending: the kind is given, not guessed; both are cp1252
    latin.write_bytes(by_name["en_shakespeare.txt"].read_text(encoding="utf-8")[:30_000].encode("cp1252", "replace"))
    flags = ["--merges", "120", "--units", "chars", "--end-of-word", "</w>", "--pretokenizer", "whitespace",
             "--normalize", "nfkc,lower", "--special", "<s>", "--tie-break", "hf", "--min-frequency", "2",
             "--name", "same"]
    done = workbench("train", str(text), str(latin), "--kind", "text", "--encoding", "cp1252",
                     "--project", "flags.tokproj", *flags, "--progress", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    spec = RunSpec(files=(CorpusFile(str(text), "text", encoding="cp1252"), CorpusFile(str(latin), "text", encoding="cp1252")),
                   merges=120, units="chars", end_of_word="</w>", pretokenizer="whitespace", normalizer=("nfkc", "lower"),
                   special_tokens=("<s>",), tie_break="hf", min_frequency=2, name="same", project="ignored.tokproj")
    (tmp_path / "run.json").write_text(spec.to_json(), encoding="utf-8")
    done = workbench("train", "--spec", "run.json", "--project", "spec.tokproj", "--progress", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "ignored.tokproj").exists()  # --project overrides the spec's project

    run_a, merges_a, options_a, alphabet = stored(tmp_path / "flags.tokproj")
    run_b, merges_b, options_b, _ = stored(tmp_path / "spec.tokproj")
    assert len(merges_a) == 120 and merges_a == merges_b
    assert run_a.settings == run_b.settings and run_a.name == run_b.name == "same"
    assert run_a.settings["normalizer"] == ["nfkc", "lower"] and run_a.settings["model"] == "bpe"
    assert options_a == options_b and options_a[1]["encoding"] == "cp1252"
    assert {"ß".encode(), "ä".encode()} <= alphabet  # the bytes were decoded as cp1252
