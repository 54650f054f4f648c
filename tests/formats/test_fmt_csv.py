"""The one CSV writer: a lone ``\\r`` (a real byte-level token) is quoted, so a merge of ``"\\r"`` +
``"x"`` reads back as one row — through ``workbench export --format merges-csv`` here, through the
merge browser's export in tests/merges/test_merges_export.py."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

from hostile_run import HOSTILE_PAIRS, write_hostile_project

from workbench.formats.merges_csv import read_merges_csv
from workbench.formats.tables import csv_text


def test_fields_with_line_breaks_quotes_and_commas_are_quoted():
    rows = [["\r", "x", "\rx"], ["a\nb", 'say "hi"', "c,d"], ["\r\n", "", " lead"]]
    text = csv_text(["a", "b", "c"], rows)
    assert text.startswith("a,b,c\r\n\"\r\",x,\"\rx\"\r\n")
    assert list(csv.reader(io.StringIO(text, newline=""))) == [["a", "b", "c"], *rows]


def test_merges_csv_export_of_a_lone_carriage_return_is_one_row(tmp_path):
    project = write_hostile_project(tmp_path / "hostile.tokproj")
    out = tmp_path / "merges.csv"
    done = subprocess.run([sys.executable, "-m", "workbench", "export", str(project), "--format", "merges-csv",
                           "--out", str(out)], capture_output=True, check=False, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with open(out, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 1 + len(HOSTILE_PAIRS)
    assert rows[1] == ["0", "\r", "x", "\rx", "99"]
    # The format's own cell rule (PRODUCT.md): whole characters as they are, stray bytes \xNN.
    assert rows[6] == ["5", " the\x00", "\\xe4", " the\x00\\xe4", "94"]
    assert read_merges_csv(out)[0] == (0, "\r", "x", "\rx", 99)
