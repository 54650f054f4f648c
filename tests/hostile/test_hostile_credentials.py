"""Credentials never reach a project, a written table or the log (issue 25), through the real CLI.

A location given with credentials in the URL (``user:password@``) or a signed query
(``X-Amz-Signature=…``) to ``train``, ``stats``, ``count`` and ``extend`` — as a corpus, or where a
tokenizer or a project is expected — is refused in one line that shows the URL without them, and
neither stderr nor the log holds the secret (the log records the command line: it is redacted
too). With the credentials in the environment, as they belong, ``extend``, ``count`` and
``stats`` from an S3 server (moto on 127.0.0.1) work and nothing written holds the secret.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_helpers import one_line_error, run_inproc

SECRETS = ("hunter2", "AKIAWBTEST", "sigSECRET", "tokSECRET")
URLS = ["https://alice:hunter2@example.org/c.txt", "s3://AKIAWBTEST:hunter2@bucket/c.txt",
        "https://example.org/c.txt?X-Amz-Signature=sigSECRET&X-Amz-Credential=AKIAWBTEST",
        "hf://datasets/x/y/c.txt?token=tokSECRET"]


def _logs(state: Path) -> bytes:
    return b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file())


def _commands(url: str, corpus: Path, base: Path, tmp_path: Path) -> list[list[str]]:
    project = str(tmp_path / "p.tokproj")
    return [["train", url, "--project", project, "--vocab-size", "300", "--progress", "none"],
            ["stats", url, "--tokenizer", str(base)],
            ["count", url, "--out", str(tmp_path / "c.wordcounts.tsv")],
            ["extend", url, "--base", f"{base}#1", "--add", "5", "--project", project, "--progress", "none"],
            # a URL where a tokenizer or a project is expected is read as a path: echoed, it would leak
            ["extend", str(corpus), "--base", url.replace("c.txt", "t.json"), "--add", "5", "--project", project,
             "--progress", "none"],
            ["stats", str(corpus), "--tokenizer", url.replace("c.txt", "t.json")],
            ["train", str(corpus), "--project", url.replace("c.txt", "p.tokproj"), "--vocab-size", "300",
             "--progress", "none"],
            # an output given as a URL would be made as a local folder named "https:", the secret in its name
            ["export", str(base), "--format", "hf", "--out", url.replace("c.txt", "t.json")],
            ["trim", f"{base}#1", "--remove", "280", "--out", url.replace("c.txt", "t.json")],
            ["count", str(corpus), "--out", url.replace("c.txt", "c.wordcounts.tsv")]]


def test_a_url_carrying_credentials_is_refused_and_the_secret_is_never_shown_or_logged(trained, tmp_path,
                                                                                        monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.chdir(tmp_path)  # a URL read as a relative path would make its folder here, where it is seen
    corpus = tmp_path / "c.txt"
    corpus.write_text("some words to count\n" * 20, "utf-8")
    for url in URLS:
        for args in _commands(url, corpus, trained, tmp_path):
            code, out, err = run_inproc(args, timeout_s=30)
            assert code == 2, (args, err)
            line = one_line_error(err)
            assert "…" in line, line  # the URL is named, without what it carried
            assert not any(s in err or s in out for s in SECRETS), (args, err)
    assert _logs(state), "the commands were logged"
    assert not any(s.encode() in _logs(state) for s in SECRETS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "state"]  # nothing created, no "https:" folder


def test_extend_count_and_stats_from_s3_keep_no_secret(trained, tmp_path, monkeypatch):
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    from moto_s3 import KEY_ID, SECRET, s3_server

    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    project = tmp_path / "e.tokproj"
    table = tmp_path / "c.wordcounts.tsv"
    with s3_server("domain") as fs:
        fs.pipe("domain/texts/c.txt", ("Domain words: tokenizer tokenizers tokenization, merges.\n" * 40).encode())
        url = "s3://domain/texts/c.txt"
        for args in (["extend", url, "--base", f"{trained}#1", "--add", "5", "--project", str(project),
                      "--progress", "none", "--no-count-cache"],
                     ["count", url, "--out", str(table)],
                     ["stats", url, "--tokenizer", str(project), "--no-cache"]):
            code, _out, err = run_inproc(args, timeout_s=60)
            assert code == 0, (args, err)
            assert SECRET not in err and KEY_ID not in err
    written = project.read_bytes() + table.read_bytes() + _logs(state)
    assert url.encode() in project.read_bytes()  # the location is recorded …
    assert SECRET.encode() not in written and KEY_ID.encode() not in written  # … the credentials nowhere
