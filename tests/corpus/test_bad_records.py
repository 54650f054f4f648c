"""Bad records (issue 13): ``--on-bad-record skip`` keeps reading a real JSONL file with broken lines,
then says how many it skipped and where, with the full reason; ``fail`` (the default) stops at the
first, naming file:line. Also: files whose name says nothing (Spark's ``part-00000``) are sniffed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.corpus import iter_text, open_source
from workbench.corpus.readers import iter_word_counts
from workbench.corpus.stats import file_stats
from workbench.errors import ConfigError, WorkbenchError
from workbench.store import ProjectStore
from workbench.tasks.spec import CorpusFile, RunSpec
from workbench.tasks.train import train_run

BAD_AT = (1501, 2402)  # 1-based line numbers of the broken lines


def workbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def real_jsonl(corpora: Path, folder: Path, name: str = "quotes.jsonl", *,
               broken: bool = True) -> tuple[Path, list[str]]:
    """3,000 records from the German quotes, one per line; two broken lines in the middle."""
    lines = [ln for ln in (corpora / "de_zitate.txt").read_text(encoding="utf-8").splitlines() if ln.strip()][:3000]
    out = [json.dumps({"id": i, "text": t}, ensure_ascii=False) for i, t in enumerate(lines)]
    if broken:
        out[BAD_AT[0] - 1] = out[BAD_AT[0] - 1][:-9]          # cut: not valid JSON any more
        out[BAD_AT[1] - 1] = json.dumps({"id": 7, "txt": "x"})  # valid JSON without the field
    path = folder / name
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    kept = [t for i, t in enumerate(lines, 1) if not broken or i not in BAD_AT]
    return path, kept


def stored_run(project: Path):
    with ProjectStore.open(project, readonly=True) as store:
        (run,) = store.runs()
        merges = [(m.left, m.right, m.piece) for m in store.merges(run.id, 0, run.merge_count)]
        return run, merges, [c.reader_options for c in store.corpora()]


def test_fail_is_the_default_and_names_the_line(corpora, tmp_path):
    path, _ = real_jsonl(corpora, tmp_path)
    src = open_source(path)
    with pytest.raises(WorkbenchError, match=rf"quotes\.jsonl:{BAD_AT[0]}: not valid JSON"):
        list(iter_text(src))


def test_skip_leaves_out_exactly_the_bad_records_and_keeps_full_reasons(corpora, tmp_path):
    path, kept = real_jsonl(corpora, tmp_path)
    src = open_source(path, on_bad_record="skip")
    assert "".join(iter_text(src)) == "\n".join(kept) + "\n"
    assert src.skipped.count == 2
    first, second = src.skipped.first
    assert first.startswith(f"{path}:{BAD_AT[0]}: not valid JSON (") and first.endswith("fix the line or remove it")
    # The reason is a whole sentence: json's "Invalid control character at" gets its column.
    assert re.search(r"not valid JSON \(Invalid control character at column \d+\)", first), first
    assert second.startswith(f"{path}:{BAD_AT[1]}: no field 'text' (fields: id, txt)")
    # A rescan logs afresh instead of adding to the old log; the statistics carry it.
    stats = file_stats(src)
    assert (stats.records, stats.skipped, stats.skipped_at) == (len(kept), 2, (first, second))


def test_skip_in_word_counts_and_csv(tmp_path):
    table = tmp_path / "spark.wordcounts.tsv"
    table.write_text("der\t10\ndie\tzehn\nund\t3\n", encoding="utf-8")
    src = open_source(table, on_bad_record="skip")
    assert list(iter_word_counts(src)) == [("der", 10), ("und", 3)]
    assert src.skipped.count == 1 and "spark.wordcounts.tsv:2: count 'zehn'" in src.skipped.first[0]
    rows = tmp_path / "rows.csv"
    rows.write_text("id,text\n1,eins\n2\n3,drei\n", encoding="utf-8")
    src = open_source(rows, on_bad_record="skip")
    assert "".join(iter_text(src)) == "eins\ndrei\n"
    assert src.skipped.first == [
        f"{rows}:3: the row has 1 column(s), but the text column 'text' is column 2: fix the row"]


def test_cli_skip_trains_like_the_clean_file_and_reports_on_stderr(corpora, tmp_path):
    broken, _ = real_jsonl(corpora, tmp_path)
    clean, _ = real_jsonl(corpora, tmp_path, "clean.jsonl", broken=False)
    # The clean twin without the two broken records: same text as what skip keeps.
    lines = clean.read_text(encoding="utf-8").splitlines()
    clean.write_text("\n".join(ln for i, ln in enumerate(lines, 1) if i not in BAD_AT) + "\n", encoding="utf-8")

    failed = workbench("train", str(broken), "--project", "f.tokproj", "--merges", "40", "--progress", "none",
                       cwd=tmp_path)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert f"quotes.jsonl:{BAD_AT[0]}: not valid JSON" in failed.stderr

    done = workbench("train", str(broken), "--project", "s.tokproj", "--merges", "40", "--on-bad-record", "skip",
                     "--progress", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    notes = [ln for ln in done.stderr.splitlines() if ln.startswith("workbench train: note:")]
    assert notes[0] == "workbench train: note: skipped 2 bad records (on-bad-record skip); first:"
    assert notes[1].startswith(f"workbench train: note: {broken}:{BAD_AT[0]}: not valid JSON (")
    assert notes[1].endswith("fix the line or remove it")  # the whole reason, not cut off
    assert notes[2].startswith(f"workbench train: note: {broken}:{BAD_AT[1]}: no field 'text'")
    ok = workbench("train", str(clean), "--project", "c.tokproj", "--merges", "40", "--progress", "none",
                   cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    run, merges, options = stored_run(tmp_path / "s.tokproj")
    _, clean_merges, _ = stored_run(tmp_path / "c.tokproj")
    assert merges == clean_merges and len(merges) == 40
    assert run.settings["skipped_records"] == 2
    assert options[0]["on_bad_record"] == "skip"


def test_the_windows_spec_carries_skip_per_file(corpora, tmp_path):
    broken, _ = real_jsonl(corpora, tmp_path)
    spec = RunSpec(files=(CorpusFile(str(broken), "jsonl", "text", on_bad_record="skip"),), merges=20,
                   project=str(tmp_path / "w.tokproj"))
    again = RunSpec.from_json(spec.to_json())
    assert again.files[0].on_bad_record == "skip"
    events = []
    run_id, status = train_run(again, report=events.append, count_cache=False)
    assert status == "finished"
    (skipped,) = [e for e in events if e.event == "skipped"]
    assert skipped.skipped == 2 and skipped.positions[0].startswith(f"{broken}:{BAD_AT[0]}:")
    assert skipped.as_dict()["positions"][1].startswith(f"{broken}:{BAD_AT[1]}:")
    with pytest.raises(ConfigError) as err:
        RunSpec(files=(CorpusFile(str(broken), "jsonl", on_bad_record="ignore"),), merges=5).validate()
    assert err.value.field == "files.on_bad_record"


def test_spark_part_files_are_sniffed_and_kind_overrides(corpora, tmp_path):
    out = tmp_path / "spark-out"
    out.mkdir()
    path, kept = real_jsonl(corpora, out, "part-00000", broken=False)
    (out / "part-00001").write_text("Ein Satz.\n{nicht json}\n", encoding="utf-8")
    (out / "_SUCCESS").write_text("", encoding="utf-8")
    (out / ".part-00000.crc").write_bytes(b"\x00\x01crc")
    (out / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))  # sniffed: an image, refused
    spark_json = tmp_path / "part-00002-6f1c-c000.json"
    spark_json.write_text('{"text": "eins"}\n{"text": "zwei"}\n', encoding="utf-8")
    assert open_source(spark_json).kind == "jsonl"
    assert (open_source(path).kind, open_source(path).field) == ("jsonl", "text")
    assert open_source(out / "part-00001").kind == "text"
    assert open_source(path, kind="text").kind == "text"
    with pytest.raises(WorkbenchError, match=r"report\.pdf: looks binary, not text \(a PDF document\)"):
        (tmp_path / "report.pdf").write_text("%PDF-1.4\n", encoding="utf-8")
        open_source(tmp_path / "report.pdf")
    done = workbench("train", str(out), "--project", "p.tokproj", "--merges", "10", "--progress", "none",
                     cwd=tmp_path)
    assert done.returncode == 2 and "logo.png: looks binary, not text (a PNG image)" in done.stderr
    assert "--on-bad-record skip leaves such files out" in done.stderr
    skipped = workbench("train", str(out), "--project", "skip.tokproj", "--merges", "10", "--progress", "none",
                        "--on-bad-record", "skip", cwd=tmp_path)  # the image is left out, named
    assert skipped.returncode == 0 and "left out:" in skipped.stderr and "logo.png" in skipped.stderr, skipped.stderr
    (out / "logo.png").unlink()
    done = workbench("train", str(out), "--project", "p.tokproj", "--merges", "10", "--progress", "none",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _, _, options = stored_run(tmp_path / "p.tokproj")
    assert [(o["kind"], o["field"]) for o in options] == [("jsonl", "text"), ("text", None)]
    forced = workbench("train", str(path), "--kind", "text", "--project", "t.tokproj", "--merges", "10",
                       "--progress", "none", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert stored_run(tmp_path / "t.tokproj")[2][0]["kind"] == "text"
