"""Issue 22, places: corpora read where data engineers keep them — an S3 server on 127.0.0.1 (moto in
server mode, started here) holding ``.jsonl.zst`` shards made by zstandard, fsspec's ``memory://``,
and an HTTP server that drops the connection. Training and ``stats`` from a location equal
training from the same text as a local ``.txt``; every failure is one line; no secret is stored."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
zstandard = pytest.importorskip("zstandard")
pytest.importorskip("moto.server")

from hostile.hostile_helpers import one_line_error, run_inproc  # noqa: E402
from moto_s3 import KEY_ID, SECRET, dropping_proxy, s3_server  # noqa: E402
from shared_corpora import CORPORA, require_corpora  # noqa: E402

from workbench.corpus import open_source  # noqa: E402
from workbench.corpus.count_cache import CountCache  # noqa: E402
from workbench.corpus.counts import count_sources  # noqa: E402
from workbench.corpus.readers import iter_chunks  # noqa: E402
from workbench.store import ProjectStore  # noqa: E402

BUCKET = "corpora"


def sample_lines(corpora: Path, per_file: int = 150) -> list[str]:
    out: list[str] = []
    for path in sorted(corpora.glob("*.txt")):
        out.extend([ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()][:per_file])
    return out


def shard_bytes(lines: list[str]) -> bytes:
    body = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in lines).encode()
    return zstandard.ZstdCompressor(write_checksum=True).compress(body)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """Three .jsonl.zst shards on the S3 server, and the same text as one local .txt."""
    require_corpora()
    lines = sample_lines(CORPORA)
    thirds = [lines[i::3] for i in range(3)]
    ordered = thirds[0] + thirds[1] + thirds[2]
    local = tmp_path_factory.mktemp("s3local") / "same.txt"
    local.write_text("".join(t + "\n" for t in ordered), encoding="utf-8")
    with s3_server(BUCKET) as fs:
        for i, part in enumerate(thirds):
            fs.pipe(f"{BUCKET}/shards/part-{i:03d}.jsonl.zst", shard_bytes(part))
        yield {"fs": fs, "local": local, "lines": ordered, "endpoint": fsspec.config.conf["s3"]["endpoint_url"]}


def train(tmp_path: Path, *files: str, extra: tuple[str, ...] = ()) -> tuple[int, str, Path]:
    project = tmp_path / f"p{len(list(tmp_path.glob('*.tokproj')))}.tokproj"
    code, _out, err = run_inproc(["train", *files, "--project", str(project), "--merges", "50", "--progress", "none",
                                  *extra], timeout_s=90)
    return code, err, project


def stored(project: Path):
    with ProjectStore.open(project, readonly=True) as store:
        (run,) = store.runs()
        merges = [(m.left, m.right, m.piece) for m in store.merges(run.id, 0, run.merge_count)]
        return merges, [(c.path, c.fingerprint) for c in store.corpora()]


def test_training_and_stats_from_s3_shards_equal_the_local_txt_and_no_secret_is_kept(s3, tmp_path):
    url = f"s3://{BUCKET}/shards/*.jsonl.zst"
    code, err, remote_project = train(tmp_path, url)
    assert code == 0, err
    code, err, local_project = train(tmp_path, str(s3["local"]))
    assert code == 0, err
    remote_merges, corpora = stored(remote_project)
    assert remote_merges == stored(local_project)[0] and len(remote_merges) == 50
    assert [p for p, _fp in corpora] == [f"s3://{BUCKET}/shards/part-{i:03d}.jsonl.zst" for i in range(3)]
    assert all(":etag:" in fp for _p, fp in corpora)  # the store's ETag, not a second download
    code, out, err = run_inproc(["stats", url, "--json", "--no-cache"], timeout_s=60)
    assert code == 0, err
    remote_stats = json.loads(out)["files"]
    code, out, err = run_inproc(["stats", str(s3["local"]), "--json", "--no-cache"], timeout_s=60)
    (local_stats,) = json.loads(out)["files"]
    for key in ("chars", "lines"):
        assert sum(f[key] for f in remote_stats) == local_stats[key]
    # the URL is recorded, the secret nowhere: not in the project, not in the log
    assert SECRET.encode() not in remote_project.read_bytes() and KEY_ID.encode() not in remote_project.read_bytes()
    logs = [p for p in Path(os.environ["XDG_STATE_HOME"]).rglob("*") if p.is_file()]
    assert logs and not any(SECRET.encode() in p.read_bytes() for p in logs)


def test_progress_is_in_bytes_fetched_and_the_count_cache_follows_the_etag(s3, tmp_path):
    fs = s3["fs"]
    big = shard_bytes([f"{i} " + line for i in range(8) for line in s3["lines"]])
    assert len(big) > 16 << 10  # large enough to be cached (counts.MIN_CACHED_BYTES)
    fs.pipe(f"{BUCKET}/big/one.jsonl.zst", big)
    src = open_source(f"s3://{BUCKET}/big/one.jsonl.zst")
    seen: list[tuple[int, int]] = []
    for _chunk in iter_chunks(src, progress=lambda done, total: seen.append((done, total))):
        pass
    assert seen[-1] == (len(big), len(big)) and all(0 < d <= t == len(big) for d, t in seen)
    cache = CountCache(tmp_path / "cache")
    first = count_sources([src], pretokenizer="gpt2", cache=cache)
    again = count_sources([src], pretokenizer="gpt2", cache=cache)
    assert first == again and (cache.misses, cache.hits) == (1, 1)
    replaced = [f"{i} replaced " + line for i in range(8) for line in reversed(s3["lines"])]
    fs.pipe(f"{BUCKET}/big/one.jsonl.zst", shard_bytes(replaced))  # a new ETag
    changed = count_sources([open_source(f"s3://{BUCKET}/big/one.jsonl.zst")], pretokenizer="gpt2", cache=cache)
    assert cache.misses == 2 and changed != first


def test_a_missing_key_and_a_refusing_bucket_are_one_line_each(s3, tmp_path):
    code, err, _ = train(tmp_path, f"s3://{BUCKET}/shards/part-999.jsonl.zst")
    line = one_line_error(err)
    assert code == 2 and "part-999.jsonl.zst: no such file or object" in line, line
    code, err, _ = train(tmp_path, f"s3://{BUCKET}/nothing/*.jsonl.zst")
    assert code == 2 and "no file matches the pattern" in one_line_error(err)
    from moto import settings

    s3["fs"].invalidate_cache()
    before = settings.INITIAL_NO_AUTH_ACTION_COUNT
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0  # moto now checks credentials: ours are no IAM user's
    try:
        code, err, _ = train(tmp_path, f"s3://{BUCKET}/shards/part-000.jsonl.zst")
    finally:
        settings.INITIAL_NO_AUTH_ACTION_COUNT = before
    line = one_line_error(err)
    assert code == 2 and "part-000.jsonl.zst: access denied" in line and "AWS_PROFILE" in line, line
    assert SECRET not in err


def test_a_connection_to_the_bucket_dropped_mid_download_is_one_line(s3, tmp_path):
    noise = [os.urandom(600).hex() for _ in range(200)]  # incompressible: the shard is ~240 KB
    s3["fs"].pipe(f"{BUCKET}/drop/big.jsonl.zst", shard_bytes(noise))
    with dropping_proxy(s3["endpoint"]) as proxy:
        fsspec.config.conf["s3"] = {"endpoint_url": proxy}
        try:
            code, err, project = train(tmp_path, f"s3://{BUCKET}/drop/big.jsonl.zst")
        finally:
            fsspec.config.conf["s3"] = {"endpoint_url": s3["endpoint"]}
    line = one_line_error(err)
    assert code == 2 and "drop/big.jsonl.zst: cannot read it over the network" in line, line
    assert not project.exists()


def test_a_partly_readable_listing_fails_whole_or_names_every_skipped_shard(s3, tmp_path):
    fs = s3["fs"]
    good = shard_bytes(s3["lines"][:200])
    fs.pipe(f"{BUCKET}/mixed/a.jsonl.zst", good)
    fs.pipe(f"{BUCKET}/mixed/b.jsonl.zst", good[: len(good) // 2])  # cut short: unreadable
    client_put = fs.call_s3
    import asyncio  # noqa: F401 - s3fs's sync wrapper runs the coroutine

    client_put("put_object", Bucket=BUCKET, Key="mixed/c.jsonl.zst", Body=good, StorageClass="GLACIER")
    url = f"s3://{BUCKET}/mixed/*.jsonl.zst"
    code, err, project = train(tmp_path, url)
    assert code == 2 and not project.exists()
    assert "b.jsonl.zst" in one_line_error(err)
    code, err, project = train(tmp_path, url, extra=("--on-bad-record", "skip"))
    assert code == 0, err
    notes = [line for line in err.splitlines() if "left out" in line]
    assert len(notes) == 2 and "mixed/b.jsonl.zst" in notes[0] and "truncated" in notes[0], notes
    assert "mixed/c.jsonl.zst" in notes[1] and ("access denied" in notes[1] or "InvalidObjectState" in notes[1])
    assert [p for p, _ in stored(project)[1]] == [f"s3://{BUCKET}/mixed/a.jsonl.zst"]


def test_memory_locations_train_like_local_files(corpora, tmp_path):
    lines = sample_lines(corpora, 60)
    mem = fsspec.filesystem("memory")
    mem.pipe("/wbtest/docs/a.txt.zst", zstandard.ZstdCompressor().compress("".join(t + "\n" for t in lines).encode()))
    (tmp_path / "a.txt").write_text("".join(t + "\n" for t in lines), encoding="utf-8")
    code, err, remote = train(tmp_path, "memory://wbtest/docs/*.zst")
    assert code == 0, err
    code, err, local = train(tmp_path, str(tmp_path / "a.txt"))
    assert code == 0, err
    assert stored(remote)[0] == stored(local)[0]
    assert stored(remote)[1][0][0] == "memory://wbtest/docs/a.txt.zst"


class _Dropping(http.server.BaseHTTPRequestHandler):
    """Announces 1 MB, sends 64 KB of text, then closes the connection."""

    def do_HEAD(self):  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 20))
        self.end_headers()

    def do_GET(self):  # noqa: N802
        self.do_HEAD()
        self.wfile.write(b"some words on a line\n" * 3200)
        self.wfile.flush()
        self.connection.shutdown(2)

    def log_message(self, *args):
        pass


def test_a_dropped_connection_and_secrets_in_urls_are_one_line(tmp_path):
    pytest.importorskip("aiohttp")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Dropping)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/corpus.txt"
        code, err, project = train(tmp_path, url)
    finally:
        server.shutdown()
        server.server_close()
    line = one_line_error(err)
    assert code == 2 and url in line and ("network" in line or "ends early" in line), line
    assert not project.exists()
    code, err, _ = train(tmp_path, url)  # the server is gone now: nothing listens there
    line = one_line_error(err)
    assert code == 2 and "cannot reach it" in line, line
    code, err, _ = train(tmp_path, "https://alice:hunter2@example.org/c.txt")
    line = one_line_error(err)
    assert code == 2 and "carries credentials" in line and "hunter2" not in err
    code, err, _ = train(tmp_path, "https://example.org/c.txt?X-Amz-Signature=abc123&X-Amz-Credential=k")
    line = one_line_error(err)
    assert code == 2 and "signature or token" in line and "abc123" not in err


def test_nothing_remote_is_imported_unless_a_location_is_given(tmp_path):
    probe = ("import sys, workbench.cli, workbench.corpus, workbench.tasks.train, workbench.corpus.location; "
             "print(sorted(m for m in ('fsspec', 's3fs', 'gcsfs', 'aiohttp', 'botocore') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_a_location_whose_backend_is_not_installed_says_what_to_install(tmp_path):
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        code, err, _ = train(tmp_path, "gs://some-bucket/shards/a.jsonl.zst")
        line = one_line_error(err)
        assert code == 2 and "needs gcsfs" in line and "tokenizer-workbench[remote]" in line, line
    code, err, _ = train(tmp_path, "nosuchproto://x/y.txt")
    assert code == 2 and "is not a storage the workbench can read" in one_line_error(err)


def test_parquet_and_arrow_shards_are_read_from_a_location(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"id": [1, 2, 3], "text": ["alpha beta", "gamma", "delta epsilon"]})
    mem = fsspec.filesystem("memory")
    with mem.open("/wbcols/t.parquet", "wb") as f:
        pq.write_table(table, f)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    mem.pipe("/wbcols/data-00000-of-00001.arrow", sink.getvalue().to_pybytes())
    for name in ("t.parquet", "data-00000-of-00001.arrow"):
        src = open_source(f"memory://wbcols/{name}")
        assert src.column == "text"
        assert "".join(c.text for c in iter_chunks(src)) == "alpha beta\ngamma\ndelta epsilon\n"


def test_which_locations_are_patterns_and_how_the_hub_is_addressed():
    from workbench.corpus.location import RemotePath, filesystem, is_pattern

    assert is_pattern("s3://b/shards/*.jsonl.zst") and is_pattern("gs://b/part-0000[0-4].json.gz")
    assert not is_pattern("https://host/corpus.txt?download=1") and is_pattern("https://host/*.txt")
    pytest.importorskip("huggingface_hub")
    hub = RemotePath("hf://datasets/org/name/data/train-*.parquet")
    _fs, inside = filesystem(str(hub))  # nothing is contacted to name it
    assert (hub.protocol, hub.name, inside) == ("hf", "train-*.parquet", "datasets/org/name/data/train-*.parquet")
