"""Chunks end at line boundaries, add up to the file, report progress and stop when asked."""

from __future__ import annotations

import random

import pytest

from workbench.corpus import iter_text, open_source, readers
from workbench.corpus.streams import CHUNK_BYTES


def _lines_text(n_bytes: int) -> str:
    rng = random.Random(7)
    words = ["alpha", "beta", "Жук", "日本語", "ü", "x" * 40, "", "tail "]
    parts, size = [], 0
    while size < n_bytes:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30))) + "\n"
        parts.append(line)
        size += len(line.encode())
    return "".join(parts)


def test_chunks_end_at_line_boundaries_and_join_to_the_file(write, tmp_path):
    text = _lines_text(int(2.5 * CHUNK_BYTES)) + "no newline at the end"
    src = open_source(write(tmp_path / "big.txt", text))
    chunks = list(iter_text(src))
    assert len(chunks) == 3
    assert all(c.endswith("\n") for c in chunks[:-1])
    assert chunks[-1].endswith("no newline at the end")
    assert all(len(c.encode()) <= CHUNK_BYTES + 1024 for c in chunks)
    assert "".join(chunks) == text


def test_real_russian_corpus_streams_in_chunks(corpora):
    path = corpora / "ru_fortunes.txt"
    chunks = list(iter_text(open_source(path)))
    assert len(chunks) >= 3
    assert all(c.endswith("\n") for c in chunks)
    with open(path, encoding="utf-8", newline="") as f:
        assert "".join(chunks) == f.read()


def test_overlong_line_is_cut_at_a_space(write, tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "CHUNK_BYTES", 1000)
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 4000)
    text = "wörter " * 3000  # 24 KB, no newline at all
    chunks = list(iter_text(open_source(write(tmp_path / "one_line.txt", text))))
    assert len(chunks) > 3
    assert all(c.endswith(" ") for c in chunks)
    assert "".join(chunks) == text


@pytest.mark.parametrize("name", ["p.txt", "p.txt.gz", "p.jsonl"])
def test_progress_reports_disk_bytes_up_to_the_file_size(write, tmp_path, name):
    body = _lines_text(int(2.2 * CHUNK_BYTES))
    if name.endswith(".jsonl"):
        import json

        body = "".join(json.dumps({"text": line}) + "\n" for line in body.splitlines())
    src = open_source(write(tmp_path / name, body))
    calls: list[tuple[int, int]] = []
    list(iter_text(src, progress=lambda done, total: calls.append((done, total))))
    assert len(calls) >= 2
    assert all(total == src.size for _, total in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert calls[-1] == (src.size, src.size)


@pytest.mark.parametrize("name", ["s.txt", "s.jsonl", "s.csv"])
def test_should_stop_ends_the_stream_cleanly_between_chunks(write, tmp_path, name):
    lines = _lines_text(int(3.5 * CHUNK_BYTES)).splitlines()
    if name.endswith(".jsonl"):
        import json

        body = "".join(json.dumps({"text": line}) + "\n" for line in lines)
    elif name.endswith(".csv"):
        body = "text\n" + "".join(f'"{line}"\n' for line in lines)
    else:
        body = "\n".join(lines) + "\n"
    src = open_source(write(tmp_path / name, body))
    seen: list[str] = []

    def should_stop() -> bool:
        return len(seen) >= 1

    for chunk in iter_text(src, should_stop=should_stop):
        seen.append(chunk)
    assert len(seen) == 1
    assert len(list(iter_text(src))) >= 3
    assert len(list(iter_text(src, should_stop=lambda: True))) == 0
