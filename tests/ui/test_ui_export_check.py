"""File ▸ Export shows the pre-export check before writing: a run that trips rules gets the warnings
in a dialog and nothing is written until "Export anyway"; Cancel writes nothing; a clean run
exports at once, without the dialog."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.cli import run_cli


@pytest.fixture
def checked_project(tmp_path, corpora) -> Path:
    lines = [line for path in corpora for line in path.read_text(encoding="utf-8").split("\n")[:30]]
    train = tmp_path / "train.txt"
    train.write_text("\n".join(lines) + "\nthe marker <|endoftext|> as text\n", encoding="utf-8")
    project = tmp_path / "p.tokproj"
    for flags in (("--vocab-size", "600", "--special", "<|endoftext|>", "--pretokenizer", "whitespace"),
                  ("--vocab-size", "576")):
        assert run_cli(["train", str(train), "--project", str(project), *flags, "--progress", "none",
                        "--no-count-cache"]) == 0
    return project


def test_the_check_is_shown_before_writing_and_only_export_anyway_writes(make_window, qtbot, checked_project):
    window = make_window(checked_project)
    out = checked_project.parent / "folder"
    window.check_then_export(1, "hf-folder", str(out))
    qtbot.waitUntil(lambda: window.export_check_dialog is not None and window.export_check_dialog.isVisible(),
                    timeout=30000)
    dialog = window.export_check_dialog
    # the whitespace pre-tokenizer drops spaces and line breaks: their byte tokens are unreachable
    assert [f.rule for f in dialog.findings] == ["unreachable", "special-in-corpus", "vocab-multiple", "llama-cpp"]
    shown = dialog.list_label.text()
    assert "Special tokens found in the corpus" in shown and "600 is not a multiple of 64" in shown
    assert "4 warnings" in dialog.header.text() and not out.exists()  # nothing written while it is shown
    dialog.reject()
    qtbot.wait(200)
    assert not out.exists()
    window.check_then_export(1, "hf-folder", str(out))
    qtbot.waitUntil(lambda: window.export_check_dialog is not dialog and window.export_check_dialog is not None
                    and window.export_check_dialog.isVisible(), timeout=30000)
    with qtbot.waitSignal(window.export_finished, timeout=60000) as done:
        window.export_check_dialog.accept()
    assert done.args[0] is True and (out / "tokenizer_config.json").exists()


def test_a_clean_run_exports_without_the_dialog(make_window, qtbot, checked_project):
    window = make_window(checked_project)
    out = checked_project.parent / "clean"
    with qtbot.waitSignal(window.export_finished, timeout=60000) as done:
        window.check_then_export(2, "hf-folder", str(out))
    assert done.args[0] is True and window.export_check_dialog is None and (out / "tokenizer.json").exists()
