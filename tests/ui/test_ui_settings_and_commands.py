"""Typed settings read back in a new process, and the child's command line."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from PySide6.QtCore import QSettings

from workbench.errors import WorkbenchError
from workbench.tasks.spec import CorpusFile
from workbench.ui.settings import AppSettings
from workbench.ui.train.process import TrainOptions, train_command


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


def test_train_command_uses_the_apps_own_entry_point(monkeypatch, tmp_path):
    files = [CorpusFile(str(tmp_path / "a.jsonl"), "jsonl", field="meta.body"), CorpusFile(str(tmp_path / "b.txt"))]
    argv = train_command(files, tmp_path / "p.tokproj", TrainOptions(vocab_size=None, merges=50, units="chars",
                                                                    end_of_word="</w>", special=("<s>", "</s>")))
    assert argv[:4] == [sys.executable, "-m", "workbench", "train"]
    assert argv[argv.index("--merges") + 1] == "50" and "--vocab-size" not in argv
    assert argv[argv.index("--end-of-word") + 1] == "</w>"
    assert argv[argv.index("--field") + 1] == "meta.body"
    assert argv.count("--special") == 2 and argv[-3:] == ["--progress", "json", "--json"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    frozen = train_command(files, tmp_path / "p.tokproj", TrainOptions())
    assert frozen[:2] == [sys.executable, "train"]


def test_train_command_refuses_files_that_need_different_options(tmp_path):
    files = [CorpusFile("a.jsonl", "jsonl", field="text"), CorpusFile("b.jsonl", "jsonl", field="body")]
    with pytest.raises(WorkbenchError, match="different fields"):
        train_command(files, tmp_path / "p.tokproj", TrainOptions())
    with pytest.raises(WorkbenchError, match="add corpus files first"):
        train_command([], tmp_path / "p.tokproj", TrainOptions())
