"""``workbench.logfile``: the Qt-free log folder per platform, the rotating handler, the CLI's log."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

import pytest

from workbench import logfile
from workbench.cli import run_cli


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {"XDG_STATE_HOME": "/xdg/state"}, "/xdg/state/tokenizer-workbench"),
    ("linux", {}, "/home/ann/.local/state/tokenizer-workbench"),
    ("linux", {"XDG_STATE_HOME": "relative/state"}, "/home/ann/.local/state/tokenizer-workbench"),
    ("freebsd13", {}, "/home/ann/.local/state/tokenizer-workbench"),
    ("darwin", {"XDG_STATE_HOME": "/ignored"}, "/home/ann/Library/Logs/tokenizer-workbench"),
    ("win32", {"LOCALAPPDATA": "/c/Users/ann/AppData/Local"},
     "/c/Users/ann/AppData/Local/tokenizer-workbench/Logs"),
    ("win32", {}, "/home/ann/AppData/Local/tokenizer-workbench/Logs"),
])
def test_the_state_folder_follows_the_platform(platform, env, expected):
    assert logfile.state_folder(env, platform, Path("/home/ann")) == Path(expected)


def test_install_rotates_at_one_megabyte_keeps_three_and_replaces_itself(tmp_path):
    first = logfile.install(tmp_path / "a" / "one.log")
    second = logfile.install(tmp_path / "b" / "two.log")
    try:
        assert isinstance(second, logging.handlers.RotatingFileHandler)
        assert (second.maxBytes, second.backupCount) == (1_000_000, 3)
        ours = [h for h in logging.getLogger("workbench").handlers if h in (first, second)]
        assert ours == [second]  # the first was removed and closed
        assert logfile.current_path() == tmp_path / "b" / "two.log"
        logging.getLogger("workbench.core.bpe").info("merge table written")
        logging.getLogger("somebody.else").warning("not ours")
        second.flush()
        text = (tmp_path / "b" / "two.log").read_text(encoding="utf-8")
        assert "INFO" in text and "workbench.core.bpe: merge table written" in text and "not ours" not in text
    finally:
        logfile.remove(second)
    assert logfile.current_path() is None


def test_an_unwritable_folder_leaves_logging_alone(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert logfile.install(blocker / "sub" / "x.log") is None
    assert logfile.current_path() is None


def test_a_cli_error_is_logged_in_the_state_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    missing = tmp_path / "nowhere.tokproj"
    try:
        assert run_cli(["runs", str(missing)]) == 2
    finally:
        path = logfile.current_path()
        for handler in list(logging.getLogger("workbench").handlers):
            if getattr(handler, "baseFilename", None) == str(path):
                logfile.remove(handler)
    assert path == tmp_path / "state" / "tokenizer-workbench" / "workbench.log"
    text = path.read_text(encoding="utf-8")
    assert f"workbench runs {missing}" in text and "runs: error:" in text
    assert capsys.readouterr().err.count("\n") == 1  # the user still sees exactly one line


def test_a_log_that_cannot_be_written_stays_off_stderr(tmp_path, capsys):
    """A full disk or a file-size limit must not print "--- Logging error ---" on the CLI's stderr."""
    import logging

    from workbench import logfile

    handler = logfile.install(tmp_path / "log" / "w.log")
    assert handler is not None
    handler.stream.close()  # every later write fails, as on a full disk
    logging.getLogger(logfile.LOGGER).error("this cannot be written")
    assert capsys.readouterr().err == ""
    assert handler not in logging.getLogger(logfile.LOGGER).handlers
