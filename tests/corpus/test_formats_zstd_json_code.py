"""Issue 22, formats: Zstandard beside gzip for every text kind, ``.json`` shards that are JSON lines,
and source code and markup read as text — each made by the real tool (``zstandard``) from the shared
corpora, and training and ``stats`` from them equal to training from the same text as ``.txt``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import zstandard
from hostile.hostile_helpers import run_inproc

from workbench.corpus import expand_paths, iter_text, open_source
from workbench.corpus.readers import iter_word_counts
from workbench.errors import WorkbenchError
from workbench.store import ProjectStore


def sample_lines(corpora: Path, per_file: int = 300) -> list[str]:
    """Real lines of every shared corpus (several scripts), none empty."""
    out: list[str] = []
    for path in sorted(corpora.glob("*.txt")):
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        out.extend(lines[:per_file])
    return out


def zst(data: bytes, frames: int = 1) -> bytes:
    """``data`` compressed by zstandard with content checksums (as the ``zstd`` tool writes), in
    ``frames`` frames (``pzstd`` and streaming writers make several)."""
    cut = [len(data) * i // frames for i in range(frames + 1)]
    comp = zstandard.ZstdCompressor(level=3, write_checksum=True)
    return b"".join(comp.compress(data[a:b]) for a, b in zip(cut, cut[1:]))


def jsonl(lines: list[str]) -> bytes:
    return "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(lines)).encode()


def stored_merges(project: Path) -> list[tuple[str, str, str]]:
    with ProjectStore.open(project, readonly=True) as store:
        (run,) = store.runs()
        return [(m.left, m.right, m.piece) for m in store.merges(run.id, 0, run.merge_count)]


def test_zstd_reads_back_every_text_kind_like_the_plain_file(corpora, tmp_path):
    lines = sample_lines(corpora)
    text = "\n".join(lines) + "\n"
    (tmp_path / "a.txt.zst").write_bytes(zst(text.encode(), frames=3))
    assert "".join(iter_text(open_source(tmp_path / "a.txt.zst"))) == text
    (tmp_path / "a.jsonl.zst").write_bytes(zst(jsonl(lines)))
    src = open_source(tmp_path / "a.jsonl.zst")
    assert (src.kind, src.field, src.compressed) == ("jsonl", "text", True)
    assert "".join(iter_text(src)) == text
    rows = "text,n\n" + "".join(f'"{t.replace(chr(34), chr(34) * 2)}",{i}\n' for i, t in enumerate(lines))
    (tmp_path / "a.csv.zst").write_bytes(zst(rows.encode()))
    assert "".join(iter_text(open_source(tmp_path / "a.csv.zst"))) == text
    (tmp_path / "w.counts.zst").write_bytes(zst(b"der\t3\ndie\t2\n"))
    assert list(iter_word_counts(open_source(tmp_path / "w.counts.zst"))) == [("der", 3), ("die", 2)]


def test_train_and_stats_from_zst_and_json_shards_equal_the_txt(corpora, tmp_path):
    lines = sample_lines(corpora, 200)
    text = "\n".join(lines) + "\n"
    (tmp_path / "c.txt").write_text(text, encoding="utf-8")
    (tmp_path / "c.jsonl.zst").write_bytes(zst(jsonl(lines), frames=2))
    (tmp_path / "c.json.gz").write_bytes(gzip.compress(jsonl(lines)))  # Dolma's layout
    merges, stats = {}, {}
    for name in ("c.txt", "c.jsonl.zst", "c.json.gz"):
        project = tmp_path / f"{name}.tokproj"
        code, _out, err = run_inproc(["train", str(tmp_path / name), "--project", str(project), "--merges", "60",
                                      "--progress", "none"], timeout_s=60)
        assert code == 0, err
        merges[name] = stored_merges(project)
        code, out, err = run_inproc(["stats", str(tmp_path / name), "--json", "--no-cache"], timeout_s=60)
        assert code == 0, err
        (info,) = json.loads(out)["files"]
        stats[name] = (info["chars"], info["lines"], info["distinct_pretokens"])
    assert len(merges["c.txt"]) == 60
    assert all(m == merges["c.txt"] for m in merges.values())
    assert all(s == stats["c.txt"] for s in stats.values()), stats


@pytest.mark.parametrize(("content", "says"), [
    (b'[{"text": "a"},\n {"text": "b"}]\n', "is one JSON array, not JSON lines"),
    (b'{\n  "data": [{"text": "a"}]\n}\n', "is one JSON object spread over lines"),
])
def test_a_json_file_that_is_one_document_is_refused_saying_so(tmp_path, content, says):
    path = tmp_path / "dump.json"
    path.write_bytes(content)
    with pytest.raises(WorkbenchError, match=rf"dump\.json: {says}.*jq -c"):
        open_source(path)
    (tmp_path / "dump.json.zst").write_bytes(zst(content))
    with pytest.raises(WorkbenchError, match=says):
        open_source(tmp_path / "dump.json.zst")


def test_source_code_and_markup_are_read_as_text_files_and_in_folders(tmp_path):
    files = {
        "m.py": "def f(x):\n    return x + 1\n", "m.js": "const f = (x) => x + 1;\n", "m.ts": "let n: number = 1;\n",
        "m.c": "int main(void) { return 0; }\n", "m.h": "#pragma once\n", "m.rs": "fn main() {}\n",
        "m.go": "package main\n", "M.java": "class M {}\n", "README.md": "# Title\n\nSome *text*.\n",
        "i.rst": "Title\n=====\n", "p.html": "<p>hello</p>\n", "d.xml": "<a><b/></a>\n", "c.yaml": "a: 1\n",
        "p.toml": "[tool]\nx = 1\n",
    }
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for name, body in files.items():
        (root / "src" / name).write_text(body, encoding="utf-8")
    (root / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    for name, body in files.items():
        src = open_source(root / "src" / name)
        assert src.kind == "text" and "".join(iter_text(src)) == body
    sources, rejected = expand_paths([root])
    assert sorted(s.path.name for s in sources) == sorted(files)
    (message,) = rejected
    assert "logo.png: looks binary, not text (a PNG image)" in message
    with pytest.raises(WorkbenchError, match=r"logo\.png: looks binary, not text \(a PNG image\)"):
        open_source(root / "src" / "logo.png")


def test_a_folder_reads_files_whose_name_says_nothing_by_their_content(corpora, tmp_path):
    """WikiExtractor writes ``text/AA/wiki_00``, WMT ships ``train.de``: no telling ending, but text —
    read from a folder as the same text in a ``.txt`` is; a program among them is named for what its
    bytes show, and the skip policy leaves it out."""
    de = next(corpora.glob("de*.txt")).read_text(encoding="utf-8").splitlines(keepends=True)
    root = tmp_path / "text"
    (root / "AA").mkdir(parents=True)
    (root / "AA" / "wiki_00").write_text("".join(de[:300]), encoding="utf-8")
    (root / "AA" / "wiki_01").write_text("".join(de[300:600]), encoding="utf-8")
    (root / "train.de").write_text("".join(de[600:900]), encoding="utf-8")
    sources, rejected = expand_paths([root])
    assert [s.path.name for s in sources] == ["wiki_00", "wiki_01", "train.de"] and rejected == []
    assert all(s.kind == "text" for s in sources)
    assert "".join("".join(iter_text(s)) for s in sources) == "".join(de[:900])
    (root / "tool").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(120))
    sources, rejected = expand_paths([root])
    (message,) = rejected
    assert len(sources) == 3 and "tool: looks binary, not text (a program" in message and message.unsupported
