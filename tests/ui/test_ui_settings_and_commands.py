"""Typed settings read back in a new process, and the child's command line (a RunSpec file)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from PySide6.QtCore import QSettings

from workbench.tasks.spec import CorpusFile, RunSpec
from workbench.ui.settings import AppSettings
from workbench.ui.train.process import spec_command, write_spec


def test_settings_are_typed_when_read_back_in_a_new_process(tmp_path):
    ini = tmp_path / "s.ini"
    s = AppSettings(QSettings(str(ini), QSettings.Format.IniFormat))
    s.add_recent_project(tmp_path / "a.tokproj")
    s.add_recent_project(tmp_path / "b.tokproj")
    s.add_recent_project(tmp_path / "a.tokproj")
    s.theme = "dark"
    s.show_whitespace_preview = False
    s.train_settings = {"vocab_size": 512, "units": "chars"}
    s.sync()
    code = textwrap.dedent(f"""
        from PySide6.QtCore import QSettings
        from workbench.ui.settings import AppSettings
        s = AppSettings(QSettings({str(ini)!r}, QSettings.Format.IniFormat))
        print(repr((s.recent_projects, s.theme, s.show_whitespace_preview, s.train_settings)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    recent, theme, marks, train = eval(out)  # noqa: S307 - our own repr
    assert recent == [str(tmp_path / "a.tokproj"), str(tmp_path / "b.tokproj")]
    assert theme == "dark" and marks is False
    assert train == {"vocab_size": 512, "units": "chars"} and isinstance(train["vocab_size"], int)


def test_the_child_runs_the_spec_file_through_the_apps_own_entry_point(monkeypatch, tmp_path):
    spec = RunSpec(files=(CorpusFile(str(tmp_path / "a.jsonl"), "jsonl", field="meta.body"),
                          CorpusFile(str(tmp_path / "b.txt"), encoding="cp1252")),
                   merges=50, units="chars", end_of_word="</w>", special_tokens=("<s>", "</s>"),
                   project=str(tmp_path / "p.tokproj"))
    path = write_spec(spec)
    try:
        assert RunSpec.from_json(path.read_text(encoding="utf-8")) == spec  # each file keeps its options
        argv = spec_command(path)
    finally:
        path.unlink()
    assert argv == [sys.executable, "-m", "workbench", "train", "--spec", str(path), "--progress", "json", "--json"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert spec_command(path)[:3] == [sys.executable, "train", "--spec"]
