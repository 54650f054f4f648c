"""The window trains one RunSpec: a corpus mixing readers and encodings goes into ONE run, whose
merges equal ``workbench train --spec`` on the same spec; a refused setting marks its control."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.errors import WorkbenchError
from workbench.store import ProjectStore
from workbench.tasks.spec import RunSpec


def _entries(path: Path) -> list[str]:
    """The sayings of a fortune file (separated by lines holding ``%``)."""
    return [e.strip() for e in path.read_text(encoding="utf-8").split("\n%\n") if e.strip()]


@pytest.fixture
def mixed_corpus(corpora, tmp_path) -> dict[str, Path]:
    """Real text in four files: UTF-8 text, JSONL (field "text"), CSV (column "body"), cp1252 text."""
    by_name = {p.name: p for p in corpora}
    a = tmp_path / "a.txt"
    a.write_text(by_name["en_shakespeare.txt"].read_text(encoding="utf-8")[:15_000], encoding="utf-8")
    german = _entries(by_name["de_zitate.txt"])
    b = tmp_path / "b.jsonl"
    with open(b, "w", encoding="utf-8") as f:
        for i, saying in enumerate(german[:60]):
            f.write(json.dumps({"id": i, "lang": "de", "text": saying}, ensure_ascii=False) + "\n")
    c = tmp_path / "c.csv"
    with open(c, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "body", "source"])
        for i, saying in enumerate(_entries(by_name["ru_fortunes.txt"])[:60]):
            writer.writerow([i, saying, "fortune"])
    d = tmp_path / "d.txt"
    latin = [s for s in german[60:] if s.encode("cp1252", "ignore").decode("cp1252") == s][:60]
    d.write_bytes("\n".join(latin).encode("cp1252"))
    return {"text": a, "jsonl": b, "csv": c, "cp1252": d}


def _merges(project: Path) -> list[tuple[int, int, int, bytes]]:
    with ProjectStore.open(project, readonly=True) as store:
        run = store.runs()[-1]
        assert run.status == "finished"
        return [(m.left, m.right, m.new_id, m.piece) for m in store.merges(run.id, 0, run.merge_count)]


def test_a_mixed_corpus_trains_in_one_run_with_the_merges_of_train_spec(make_window, qtbot, project,
                                                                         mixed_corpus, tmp_path):
    from workbench.corpus import open_source

    with pytest.raises(WorkbenchError, match="d.txt"):  # the cp1252 file is not UTF-8: it needs its option
        open_source(mixed_corpus["cp1252"])
    window = make_window(project)
    corpus = window.corpus
    for path, options in ((mixed_corpus["text"], {}), (mixed_corpus["jsonl"], {"field": "text"}),
                          (mixed_corpus["csv"], {"column": "body"}), (mixed_corpus["cp1252"], {"encoding": "cp1252"})):
        with qtbot.waitSignal(corpus.scan_finished, timeout=20000):
            corpus.add_paths([str(path)], prompt=False, **options)
    assert len(corpus.files()) == 4 and not corpus.rejected_messages()
    panel = window.training
    panel.set_options(merges=150, units="bytes", pretokenizer="gpt2")

    spec = panel.run_spec().validate()
    assert [(Path(f.path).name, f.kind, f.field, f.column, f.encoding) for f in spec.files] == [
        ("a.txt", "text", None, None, None), ("b.jsonl", "jsonl", "text", None, None),
        ("c.csv", "csv", None, "body", None), ("d.txt", "text", None, None, "cp1252")]
    with qtbot.waitSignal(panel.run_finished, timeout=60000) as finished:
        assert panel.start()
    assert finished.args[1] == "finished", panel.error_text()
    assert panel._spec_file is None  # the child's spec file is gone with the run
    with ProjectStore.open(project, readonly=True) as store:
        assert len(store.runs()) == 1
        stored = {Path(c.path).name: c.reader_options for c in store.corpora()}
    assert sorted(stored) == ["a.txt", "b.jsonl", "c.csv", "d.txt"]
    assert stored["d.txt"]["encoding"] == "cp1252" and stored["c.csv"]["column"] == "body"
    in_window = _merges(project)
    assert len(in_window) == 150

    # The same spec through the CLI, into another project: the same merges, id for id.
    spec_file = tmp_path / "run.json"
    spec_file.write_text(RunSpec(**{**spec.__dict__, "project": str(tmp_path / "cli.tokproj")}).to_json(),
                         encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "workbench", "train", "--spec", str(spec_file), "--progress", "none"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _merges(tmp_path / "cli.tokproj") == in_window
    # Every reader contributed: German umlauts read as cp1252/UTF-8 text and Cyrillic from the CSV column.
    pieces = b"".join(piece for *_, piece in in_window).decode("utf-8", "ignore")
    assert any("а" <= ch <= "я" for ch in pieces)


def test_a_refused_setting_marks_its_control(make_window, qtbot, project, small_corpus):
    window = make_window(project, small_corpus)
    panel = window.training
    window.show_panel("train")
    # Refused in the window before any child starts: the normalizer box is marked.
    panel.set_options(normalize="nfz", merges=10)
    assert not panel.start()
    assert panel.marked_field == "normalizer" and "border" in panel.normalizer_combo.styleSheet()
    assert "unknown normalizer 'nfz'" in panel.error_text() and "--" not in panel.error_text()
    # Found by the child's trainer once the corpus is counted: the field comes back over the pipe.
    panel.set_options(normalize="none", units="chars", vocab_size=5)
    with qtbot.waitSignal(panel.run_finished, timeout=60000) as finished:
        assert panel.start()
    assert finished.args[1] == "error"
    assert panel.marked_field == "vocab_size" and "border" in panel.size_spin.styleSheet()
    assert panel.normalizer_combo.styleSheet() == ""  # the old mark is gone
    assert "the vocabulary size 5 is below" in panel.error_text() and "--vocab-size" not in panel.error_text()


def test_settings_that_do_not_apply_to_the_model_are_hidden_and_not_sent(make_window, qtbot, project, small_corpus):
    window = make_window(project, small_corpus)
    panel = window.training
    window.show_panel("train")
    rows = {"units": panel.units_combo, "end_of_word": panel.eow_combo, "tie_break": panel.tie_combo,
            "min_frequency": panel.min_freq, "sequences": panel.sequences_combo}
    expected = {"bpe": set(rows), "wordpiece": {"min_frequency", "sequences"}, "unigram": set()}
    for model, shown in expected.items():
        panel.set_options(min_frequency=3) if model == "bpe" else None
        panel.model_combo.setCurrentIndex(panel.model_combo.findData(model))
        panel.model_combo.activated.emit(panel.model_combo.currentIndex())
        visible = {name for name, widget in rows.items() if widget.isVisibleTo(panel)}
        assert visible == shown, (model, visible)
        assert panel.by_merges.isVisibleTo(panel) == (model == "bpe")
        spec = panel.run_spec().validate()  # a BPE-only value left in a hidden field is not sent
        if model == "unigram":
            assert (spec.min_frequency, spec.tie_break, spec.sequences) == (1, "hf", "lines")
            # After the event loop has run the preview's refresh (150 ms later), which re-enabled it once.
            qtbot.waitUntil(lambda: not panel._preview_timer.isActive(), timeout=5000)
            qtbot.wait(300)
            assert not panel.pre_combo.isEnabled()
        if model == "wordpiece":
            assert spec.tie_break == "hf" and spec.min_frequency == 3
