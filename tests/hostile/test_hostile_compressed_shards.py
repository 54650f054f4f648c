"""Hostile shards (issue 22): truncated and bit-flipped ``.zst`` and Arrow shards, a zip-bomb-like ``.zst`` (1 GB of
zeros in 30 KB), JSON that is one array or 100,000 levels deep — each through the real CLI: one
line on stderr, exit 2, no hang, bounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import zstandard
from hostile_helpers import limited_memory, one_line_error, run_inproc

TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog, 数字 {i * 7}\n" for i in range(20000)).encode()


def train(tmp_path: Path, corpus: Path) -> tuple[int, str]:
    code, _out, err = run_inproc(["train", str(corpus), "--project", str(tmp_path / "p.tokproj"), "--merges", "20",
                                  "--progress", "none"], timeout_s=30)
    return code, err


def shard(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def records(text: bytes) -> bytes:
    return b"".join(json.dumps({"text": line}).encode() + b"\n" for line in text.decode().splitlines())


@pytest.mark.parametrize("cut", [0.5, 0.999])
def test_a_truncated_zst_shard_fails_in_one_line_naming_it(tmp_path, cut):
    data = zstandard.ZstdCompressor(write_checksum=True).compress(records(TEXT))
    path = shard(tmp_path, "part-000.jsonl.zst", data[: int(len(data) * cut)])
    code, err = train(tmp_path, path)
    line = one_line_error(err)
    assert code == 2 and "part-000.jsonl.zst" in line and "truncated" in line, line
    assert not (tmp_path / "p.tokproj").exists()


def test_a_bit_flipped_zst_shard_fails_in_one_line(tmp_path):
    data = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(TEXT))
    data[len(data) // 2] ^= 0x10
    code, err = train(tmp_path, shard(tmp_path, "flip.txt.zst", bytes(data)))
    line = one_line_error(err)
    assert code == 2 and "flip.txt.zst" in line and "not valid Zstandard data" in line, line


def test_garbage_after_the_last_frame_is_named_with_its_offset(tmp_path):
    data = zstandard.ZstdCompressor().compress(TEXT) + b"not zstd at all"
    code, err = train(tmp_path, shard(tmp_path, "tail.txt.zst", data))
    line = one_line_error(err)
    assert code == 2 and "tail.txt.zst" in line and "not valid Zstandard data" in line, line


def bomb(tmp_path: Path) -> Path:
    """1 GiB of zeros as 1,024 frames of 1 MiB, about 30 KB on disk."""
    frame = zstandard.ZstdCompressor(level=19).compress(bytes(1 << 20))
    return shard(tmp_path, "zeros.txt.zst", frame * 1024)


def test_a_zip_bomb_like_zst_is_refused_from_its_head(tmp_path):
    path = bomb(tmp_path)
    assert path.stat().st_size < 100_000
    code, err = train(tmp_path, path)
    line = one_line_error(err)
    assert code == 2 and "zeros.txt.zst: looks binary" in line, line


def test_the_whole_bomb_streams_through_the_reader_in_bounded_memory(tmp_path):
    """Read to the end, 1 MB at a time, in a child capped at 1 GB of address space (less than the
    content): a reader that held the output would die of MemoryError instead of printing the size."""
    path = bomb(tmp_path)
    script = textwrap.dedent(f"""
        from pathlib import Path
        from workbench.corpus.streams import open_content, read_block
        total = biggest = 0
        with open_content(Path({str(path)!r}), True) as (stream, pos):
            while block := read_block(stream, 1 << 20, Path("z")):
                total += len(block); biggest = max(biggest, len(block))
            print(total, biggest, pos())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          preexec_fn=limited_memory(1 << 30), check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    total, biggest, consumed = map(int, done.stdout.split())
    assert total == 1 << 30 and biggest <= 1 << 20 and consumed == path.stat().st_size


@pytest.mark.parametrize(("name", "content", "says"), [
    ("array.json", b"[" * 100_000 + b"]" * 100_000, "one JSON array"),
    ("deep.json", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "one JSON object"),
    ("deep.jsonl", b'{"text": "ok"}\n' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n", "nested too deeply"),
])
def test_json_that_is_an_array_or_100k_levels_deep_is_one_line(tmp_path, name, content, says):
    code, err = train(tmp_path, shard(tmp_path, name, content))
    line = one_line_error(err)
    assert code == 2 and name in line and says in line, line


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_arrow_shard_is_one_line_and_exit_2(tmp_path, damage):
    lines = [f"record {i}: some text to read" for i in range(3000)]
    pa = pytest.importorskip("pyarrow")
    tbl = pa.table({"id": list(range(len(lines))), "text": lines})
    path = tmp_path / "bad.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, tbl.schema) as writer:
        writer.write_table(tbl, max_chunksize=500)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) * 2 // 3]
    else:  # a byte of a string in the last batch made invalid UTF-8: full validation catches it
        data[data.rindex(b"record 2999")] = 0xFF
    path.write_bytes(bytes(data))
    code, _out, err = run_inproc(["train", str(path), "--project", str(tmp_path / "p.tokproj"), "--merges", "5",
                                  "--progress", "none"], timeout_s=30)
    line = one_line_error(err)
    assert code == 2 and "bad.arrow" in line and "write the file again" in line, line
    assert not (tmp_path / "p.tokproj").exists()
