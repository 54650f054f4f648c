"""Hostile corpora and a hostile count cache through the real CLI (issue 26): a file changed while it
is read, damaged cache entries, 100,000-file folders.

A file is changed at a known point of its read with the read-pause hook
(:data:`workbench.corpus.counts.READ_PAUSE_ENV`): the child stops before the chosen ~1 MB chunk,
the test edits the real file on disk, then lets the child go on.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_helpers import one_line_error

from workbench.corpus import counts as counts_module
from workbench.corpus import open_source
from workbench.corpus.count_cache import MAGIC, CountCache, decode_entry
from workbench.corpus.counts import READ_PAUSE_ENV, count_sources
from workbench.store import ProjectStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from shared_corpora import CORPORA, require_corpora  # noqa: E402

WORKTREE = Path(__file__).resolve().parents[2]


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The child's environment: this checkout first, a cache folder of the test's own."""
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), XDG_CACHE_HOME=str(tmp_path / "xdg"), **extra)
    env.pop(READ_PAUSE_ENV, None)
    env.update(extra)
    return env


def cli(tmp_path: Path, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=tmp_path, env=child_env(tmp_path, **extra),
                          capture_output=True, text=True, timeout=timeout, check=False)


def cache_entries(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "xdg" / "tokenizer-workbench" / "counts"
    return sorted(folder.glob("*.counts")) if folder.exists() else []


@pytest.fixture
def big_corpus(tmp_path) -> Path:
    """About 3 MB of real text: three ~1 MB chunks for the reader."""
    require_corpora()
    path = tmp_path / "corpus.txt"
    path.write_bytes((CORPORA / "en_shakespeare.txt").read_bytes() + (CORPORA / "de_zitate.txt").read_bytes())
    return path


def paused_train(tmp_path: Path, corpus: Path, at_chunk: int, edit, *extra: str) -> subprocess.CompletedProcess:
    """``workbench train`` paused before chunk ``at_chunk`` of the corpus; ``edit()`` runs there."""
    marker = tmp_path / "paused"
    env = child_env(tmp_path, **{READ_PAUSE_ENV: f"{marker}:{at_chunk}"})
    child = subprocess.Popen([sys.executable, "-m", "workbench", "train", str(corpus), "--project",
                              str(tmp_path / "p.tokproj"), "--merges", "20", "--progress", "none", *extra],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the read never reached the pause"
            time.sleep(0.02)
        edit()
        marker.unlink()
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def stored_runs(project: Path) -> int:
    if not project.exists():
        return 0
    with ProjectStore.open(project, readonly=True) as store:
        return len(store.runs())


# ---- a file changed while it is read ----------------------------------------------------------------
def test_a_file_truncated_and_restored_mid_read_fails_and_never_poisons_the_cache(tmp_path, big_corpus):
    """The issue's case: truncated to 10 % while counted, restored afterwards. Before, the partial
    counts were cached under the old fingerprint and every later run trained on a tenth of the file."""
    original = big_corpus.read_bytes()

    def truncate_then_restore() -> None:
        big_corpus.write_bytes(original[: len(original) // 10])
        time.sleep(0.05)  # the reader may see the short file; the restore comes after
        big_corpus.write_bytes(original)

    result = paused_train(tmp_path, big_corpus, 1, truncate_then_restore)
    assert result.returncode == 2, result.stderr
    line = one_line_error(result.stderr)
    assert "corpus.txt" in line and "changed while it was read" in line, line
    assert big_corpus.read_bytes() == original
    assert cache_entries(tmp_path) == [], "a count of a changed file was cached"
    assert stored_runs(tmp_path / "p.tokproj") == 0

    # The next runs count the whole file: the cached table equals a count without the cache.
    assert cli(tmp_path, "count", str(big_corpus), "--cache", "--out", "cached.tsv").returncode == 0
    assert len(cache_entries(tmp_path)) == 1
    assert cli(tmp_path, "count", str(big_corpus), "--cache", "--out", "hit.tsv").returncode == 0
    assert cli(tmp_path, "count", str(big_corpus), "--out", "plain.tsv").returncode == 0
    plain = (tmp_path / "plain.tsv").read_bytes()
    assert (tmp_path / "cached.tsv").read_bytes() == plain == (tmp_path / "hit.tsv").read_bytes()


@pytest.mark.parametrize("cache_flag", [[], ["--no-count-cache"]])
def test_a_file_truncated_mid_read_fails_and_records_nothing(tmp_path, big_corpus, cache_flag):
    """Without the cache the run used to say "finished" and record the truncated file's fingerprint."""
    original = big_corpus.read_bytes()
    result = paused_train(tmp_path, big_corpus, 1, lambda: big_corpus.write_bytes(original[: len(original) // 10]),
                          *cache_flag)
    assert result.returncode == 2, result.stderr
    line = one_line_error(result.stderr)
    assert "changed while it was read" in line and f"{len(original):,} → {len(original) // 10:,} bytes" in line
    assert stored_runs(tmp_path / "p.tokproj") == 0
    assert cache_entries(tmp_path) == []


def test_a_file_changed_between_its_fingerprint_and_its_read_fails(tmp_path, big_corpus):
    """Same size, one word changed, after the fingerprint and before the first byte is read."""
    original = big_corpus.read_bytes()
    edited = original.replace(b"the", b"THE", 1)
    assert len(edited) == len(original)
    result = paused_train(tmp_path, big_corpus, 0, lambda: big_corpus.write_bytes(edited))
    assert result.returncode == 2
    assert "changed while it was read" in one_line_error(result.stderr)
    assert cache_entries(tmp_path) == [] and stored_runs(tmp_path / "p.tokproj") == 0


def test_a_run_records_the_fingerprint_of_what_it_counted(tmp_path, big_corpus):
    result = cli(tmp_path, "train", str(big_corpus), "--project", "p.tokproj", "--merges", "20", "--progress", "none")
    assert result.returncode == 0, result.stderr
    with ProjectStore.open(tmp_path / "p.tokproj", readonly=True) as store:
        (corpus,) = store.corpora()
    data = big_corpus.read_bytes()
    assert corpus.fingerprint == f"{len(data)}:sha256:{hashlib.sha256(data).hexdigest()}"
    assert corpus.size == len(data)


# ---- damaged cache entries --------------------------------------------------------------------------
@pytest.fixture
def cached(tmp_path):
    """A 40 KB corpus (cached: above MIN_CACHED_BYTES), its entry, and its table counted without the cache."""
    require_corpora()
    corpus = tmp_path / "c.txt"
    corpus.write_bytes((CORPORA / "ru_fortunes.txt").read_bytes()[:40_000].rsplit(b"\n", 1)[0] + b"\n")
    assert corpus.stat().st_size >= counts_module.MIN_CACHED_BYTES
    assert cli(tmp_path, "count", str(corpus), "--out", "plain.tsv").returncode == 0
    first = cli(tmp_path, "count", str(corpus), "--cache", "--out", "first.tsv")
    assert first.returncode == 0 and first.stderr == ""
    (entry,) = cache_entries(tmp_path)
    return corpus, entry, (tmp_path / "plain.tsv").read_bytes()


def _split(entry: bytes) -> tuple[dict, bytes]:
    end = entry.index(b"\n", len(MAGIC))
    return json.loads(entry[len(MAGIC):end]), entry[end + 1:]


def _forged(entry: bytes, table: dict) -> bytes:
    """An entry with another table and a checksum that matches it (only a forger makes these)."""
    header, _payload = _split(entry)
    payload = marshal.dumps(table)
    header["sha256"] = hashlib.sha256(payload).hexdigest()
    return MAGIC + json.dumps(header).encode() + b"\n" + payload


def _one_count_as_string(entry: bytes, forge: bool) -> bytes:
    header, payload = _split(entry)
    table = marshal.loads(payload)
    word = next(iter(table))
    table[word] = str(table[word])
    if forge:
        return _forged(entry, table)
    return MAGIC + json.dumps(header).encode() + b"\n" + marshal.dumps(table)


DAMAGES = {
    "payload bit flip": lambda e: e[:-50] + bytes([e[-50] ^ 0x04]) + e[-49:],
    "header bit flip": lambda e: e[:len(MAGIC) + 20] + bytes([e[len(MAGIC) + 20] ^ 0x01]) + e[len(MAGIC) + 21:],
    "a count turned into a string": lambda e: _one_count_as_string(e, forge=False),
    "a string count with a matching checksum": lambda e: _one_count_as_string(e, forge=True),
    "an altered count with a matching checksum": lambda e: _forged(e, {**marshal.loads(_split(e)[1]), " the": 10**9}),
    "truncated": lambda e: e[: len(e) // 2],
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_entry_is_a_miss_that_is_rewritten(tmp_path, cached, damage):
    """Before, one count turned into a string crashed every later run until the cache was cleared."""
    corpus, entry, plain = cached
    good = entry.read_bytes()
    entry.write_bytes(DAMAGES[damage](good))
    result = cli(tmp_path, "count", str(corpus), "--cache", "--out", "again.tsv")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    notes = result.stderr.splitlines()
    assert len(notes) == 1 and "count cache" in notes[0] and "damaged" in notes[0] and "c.txt" in notes[0], notes
    assert (tmp_path / "again.tsv").read_bytes() == plain
    # Rewritten: the entry is whole again, and the next run is a quiet hit with the same table.
    key = entry.name.removesuffix(".counts")
    assert decode_entry(entry.read_bytes(), key) == decode_entry(good, key)
    hit = cli(tmp_path, "count", str(corpus), "--cache", "--out", "hit.tsv")
    assert hit.returncode == 0 and hit.stderr == "" and (tmp_path / "hit.tsv").read_bytes() == plain


def test_training_over_a_damaged_entry_gives_the_uncached_merges(tmp_path, cached):
    corpus, entry, _plain = cached
    entry.write_bytes(_one_count_as_string(entry.read_bytes(), forge=False))
    args = ["--merges", "40", "--progress", "none"]
    damaged = cli(tmp_path, "train", str(corpus), "--project", "a.tokproj", *args)
    assert damaged.returncode == 0 and "damaged" in damaged.stderr, damaged.stderr
    plain = cli(tmp_path, "train", str(corpus), "--project", "b.tokproj", "--no-count-cache", *args)
    assert plain.returncode == 0, plain.stderr
    merges = []
    for name in ("a.tokproj", "b.tokproj"):
        with ProjectStore.open(tmp_path / name, readonly=True) as store:
            merges.append(store.load_tokenizer(store.latest_run_id()).merges)
    assert merges[0] == merges[1] and len(merges[0]) == 40


def test_fuzzed_entries_are_never_accepted_with_other_content(tmp_path, monkeypatch):
    """300 mutated entries (bit flips, byte edits, cuts, insertions): each is either the original
    table or a miss, and a count through the cache always equals the count without it. (In-process:
    300 child processes would take minutes; the CLI cases are above.)"""
    require_corpora()
    monkeypatch.setattr(counts_module, "MIN_CACHED_BYTES", 0)
    corpus = tmp_path / "c.txt"
    corpus.write_bytes((CORPORA / "zh_fortunes.txt").read_bytes()[:6000].rsplit(b"\n", 1)[0] + b"\n")
    src = open_source(corpus)
    settings = {"pretokenizer": "gpt2", "normalizer": (), "sequences": "lines"}
    reference = count_sources([src], **settings)
    cache = CountCache(tmp_path / "cache")
    count_sources([src], cache=cache, **settings)
    (entry,) = cache.folder.iterdir()
    key = entry.name.removesuffix(".counts")
    good = entry.read_bytes()
    rng = random.Random(26)
    accepted_altered = 0
    for case in range(300):
        data = bytearray(good)
        for _ in range(rng.choice((1, 1, 2, 8))):
            at = rng.randrange(len(data))
            how = rng.choice(("flip", "byte", "cut", "insert"))
            if how == "flip":
                data[at] ^= 1 << rng.randrange(8)
            elif how == "byte":
                data[at] = rng.randrange(256)
            elif how == "cut":
                del data[at: at + rng.randrange(1, 16)]
            else:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        if bytes(data) == good:
            continue
        entry.write_bytes(bytes(data))
        got = cache.get(key)
        if got is not None and list(got.items()) != list(reference.items()):
            accepted_altered += 1
        entry.write_bytes(bytes(data))
        assert list(count_sources([src], cache=cache, **settings).items()) == list(reference.items()), case
        assert decode_entry(entry.read_bytes(), key) == reference  # rewritten whole
    assert accepted_altered == 0


# ---- many small files -------------------------------------------------------------------------------
class Calls:
    """Counts calls of an os function while passing them on."""

    def __init__(self, monkeypatch, name: str):
        self.n = 0
        real = getattr(os, name)

        def counted(*args, **kwargs):
            self.n += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(os, name, counted)


@pytest.fixture(scope="module")
def small_files(tmp_path_factory) -> Path:
    """5,000 small files of real text, each different (written once: creating files is the slow part)."""
    require_corpora()
    lines = (CORPORA / "en_shakespeare.txt").read_text("utf-8").splitlines()
    folder = tmp_path_factory.mktemp("small") / "many"
    folder.mkdir()
    for i in range(5000):
        (folder / f"f{i:05d}.txt").write_text("\n".join(lines[i * 3: i * 3 + 3]) + f"\nend of {i}\n", "utf-8")
    return folder


def test_a_put_scans_the_folder_and_syncs_a_constant_number_of_times(tmp_path, monkeypatch, small_files):
    """Before, each put fsynced three times and stat-ed every entry of the folder: O(n²) over a
    folder of 100,000 files. Counted calls, not time: a slow disk cannot make this flaky."""
    monkeypatch.setattr(counts_module, "MIN_CACHED_BYTES", 0)  # cache every one of these tiny files
    sources = [open_source(p) for p in sorted(small_files.iterdir())]
    scans, fsyncs, listdirs = Calls(monkeypatch, "scandir"), Calls(monkeypatch, "fsync"), Calls(monkeypatch, "listdir")
    cache = CountCache(tmp_path / "cache")
    settings = {"pretokenizer": "gpt2", "normalizer": (), "sequences": "lines"}
    cached = count_sources(sources, cache=cache, **settings)
    assert (scans.n, fsyncs.n, listdirs.n) == (1, 0, 0)  # one scan for the folder's size, at the first put
    assert cache.misses == 5000 and len(list(cache.folder.iterdir())) == 5000
    assert list(cached.items()) == list(count_sources(sources, **settings).items())

    # A bound that forces trims: each trim goes 10 % below it, so scans stay a small fraction of puts.
    one = max(p.stat().st_size for p in cache.folder.iterdir())
    scans.n = 0
    small = CountCache(tmp_path / "small", max_bytes=100 * one)
    count_sources(sources[:2000], cache=small, **settings)
    assert sum(p.stat().st_size for p in small.folder.iterdir()) <= 100 * one
    assert scans.n <= 2000 // 8, scans.n
    assert fsyncs.n == 0


def test_thousands_of_small_files_train_with_the_cache_with_progress_and_stop(tmp_path, small_files):
    """5,000 files through the CLI: count with the cache gives the uncached table; train shows its
    reading progress; SIGINT while reading stops it at once with nothing stored."""
    (tmp_path / "many").symlink_to(small_files, target_is_directory=True)
    started = time.monotonic()
    assert cli(tmp_path, "count", "many", "--cache", "--out", "cached.tsv", timeout=300).returncode == 0
    assert cli(tmp_path, "count", "many", "--out", "plain.tsv", timeout=300).returncode == 0
    assert (tmp_path / "cached.tsv").read_bytes() == (tmp_path / "plain.tsv").read_bytes()
    trained = cli(tmp_path, "train", "many", "--project", "p.tokproj", "--merges", "30", "--progress", "json",
                  timeout=300)
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert time.monotonic() - started < 240
    events = [json.loads(line) for line in trained.stderr.splitlines() if line.startswith("{")]
    reading = [e["bytes_read"] for e in events if e["event"] == "reading"]
    assert reading and reading == sorted(reading)
    with ProjectStore.open(tmp_path / "p.tokproj", readonly=True) as store:
        assert len(store.corpora()) == 5000

    # Stop while reading: with a pause before each file's first chunk, the read is still under way.
    marker = tmp_path / "paused"
    child = subprocess.Popen([sys.executable, "-m", "workbench", "train", "many", "--project", "q.tokproj",
                              "--merges", "30", "--progress", "none", "--no-count-cache"], cwd=tmp_path,
                             env=child_env(tmp_path, **{READ_PAUSE_ENV: f"{marker}:0"}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)
        time.sleep(0.2)
        marker.unlink()
        t0 = time.monotonic()
        _out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 3, err
    assert "cancelled before training started" in err
    assert time.monotonic() - t0 < 10
    assert stored_runs(tmp_path / "q.tokproj") == 0


# ---- a counting process killed --------------------------------------------------------------------
def test_a_counting_process_killed_mid_count_fails_the_run_at_once_instead_of_hanging(tmp_path):
    """The kernel's out-of-memory killer (or a group SIGTERM) ends a counting worker: the pool used to
    replace it and wait for its lost chunk forever. Now the run fails with one line, nothing stored."""
    import psutil

    require_corpora()
    corpus = tmp_path / "corpus.txt"  # over PARALLEL_COUNT_BYTES: counted by two processes
    corpus.write_bytes(b"".join(p.read_bytes() for p in sorted(CORPORA.glob("*.txt"))))
    assert corpus.stat().st_size > counts_module.PARALLEL_COUNT_BYTES
    marker = tmp_path / "paused"
    child = subprocess.Popen([sys.executable, "-m", "workbench", "train", str(corpus), "--project",
                              str(tmp_path / "p.tokproj"), "--merges", "20", "--progress", "none", "--no-count-cache"],
                             cwd=tmp_path, env=child_env(tmp_path, **{READ_PAUSE_ENV: f"{marker}:2"}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the read never reached the pause"
            time.sleep(0.02)
        trainer = psutil.Process(child.pid)
        # the forked counting process (the trainer counts the other share itself): a fork has the
        # trainer's command line, the store's writer process (if started) another
        workers = [p for p in trainer.children() if p.cmdline() == trainer.cmdline()]
        assert len(workers) == 1
        workers[0].kill()
        gone_by = time.monotonic() + 10  # dead: gone, or a zombie until the CLI reaps it
        while time.monotonic() < gone_by:
            try:
                if workers[0].status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.02)
        marker.unlink()
        _out, err = child.communicate(timeout=60)  # hung forever before
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 2, err
    line = one_line_error(err)
    assert "counting process ended" in line and "Traceback" not in err
    assert stored_runs(tmp_path / "p.tokproj") == 0
