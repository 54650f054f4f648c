"""A refused corpus file carries what the window needs to offer the fix — the path and the encoding
to read it with — as data, so no caller parses the message (which stays one line for the CLI)."""

from __future__ import annotations

import pickle

from workbench.corpus import expand_paths
from workbench.corpus.source import Rejection
from workbench.errors import UnreadableText


def test_a_cp1252_file_is_rejected_with_its_encoding_as_data(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("plain words\n", encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes("the caf\u00e9 served cr\u00e8me br\u00fbl\u00e9e \u2013 \u20ac5\n".encode("cp1252") * 20)
    sources, rejected = expand_paths([str(good), str(bad)])
    assert [s.path.name for s in sources] == ["good.txt"]
    (rejection,) = rejected
    assert isinstance(rejection, Rejection) and isinstance(rejection, str)
    assert rejection.path == str(bad) and rejection.encoding in ("cp1252", "windows-1252")
    assert rejection.encoding in str(rejection) and "\n" not in str(rejection)  # the CLI's one line


def test_the_error_keeps_its_data_across_a_worker_process():
    error = UnreadableText("x.txt:3: not valid utf-8", path="x.txt", encoding="cp1252")
    back = pickle.loads(pickle.dumps(error))
    assert (str(back), back.path, back.encoding) == (str(error), "x.txt", "cp1252")


def test_a_broken_jsonl_line_is_marked_as_a_bad_record(tmp_path):
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"text": "one"\n{"text": "two"}\n{"text": "three"}\n', encoding="utf-8")
    _sources, (rejection,) = expand_paths([str(bad)], field="text")
    assert rejection.bad_record and rejection.encoding is None and f"{bad}:1" in rejection
    empty = tmp_path / "e.txt"
    empty.write_text("", encoding="utf-8")
    _sources, (other,) = expand_paths([str(empty)])
    assert not other.bad_record  # an empty file is not a record problem: skipping would not help
