"""The C merge loop (core/_bpe_merge.c) under hostile use: what an adversarial review found (review29).

A bug in C gives no traceback: it kills the trainer process, corrupts memory or changes the merges
without a word. So: every misuse of the raw ``MergeLoop`` API must raise a Python error (never
crash), and hostile inputs to the trainer — counts summed past 64 bits, runs of one symbol, a 2 MB
word, pair keys that all collide in the hash table, ids at the 2**21 pair-key limit — must give the
pure loops' merges. The crash-prone checks run in a child process, so a regression fails this test
instead of killing the test run. Cheap: a few seconds in all. Not here: speed (bench/); out of
memory only in merge()'s first growth (one injected failure, not every allocation)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core import bpe
from workbench.core.bpe import BpeTrainer, TrainConfig

ROOT = Path(__file__).resolve().parents[2]

if bpe._native is None:
    pytest.skip("the C merge loop was not built (no C compiler at install) or WORKBENCH_PURE=1",
                allow_module_level=True)

MergeLoop = bpe._native.MergeLoop
ERRORS = (ValueError, TypeError, OverflowError, RuntimeError, BufferError)


def _loop(words: list[list[int]], freqs: list[int] | None = None, units: int = 3, first_seen: bool = True,
          rank: list[int] | None = None):
    sym = array("i", [s for w in words for s in w])
    lens = array("i", map(len, words))
    start, at = [], 0
    for w in words:
        start.append(at)
        at += len(w)
    return MergeLoop(sym, lens, start, freqs or [1] * len(words), [1] * units, first_seen, rank or []), sym, lens


def _run(counts: dict[str, int], config: TrainConfig, native: bool | None) -> tuple:
    trainer = BpeTrainer(counts, config)
    trainer.native = native
    events = list(trainer.run())
    return (events, list(trainer.merges), list(trainer.frequencies), list(trainer.token_counts),
            list(trainer.vocab), trainer.token_count, trainer.words)


def _child(code: str) -> None:
    """Run ``code`` in a fresh interpreter: a segfault is a failed test, not a dead test run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("WORKBENCH_PURE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, f"child died (rc {out.returncode}): {out.stderr[-2000:]}"
    assert out.stdout.strip().endswith("ok"), out.stdout + out.stderr


def test_methods_of_a_loop_that_was_never_set_up_raise():
    """Found: merge() on ``MergeLoop.__new__(MergeLoop)`` (or after a failed __init__, or from an
    item's __index__ during __init__) read a NULL pair table: SIGSEGV. Now a RuntimeError."""
    _child("""
from array import array
from workbench.core._bpe_merge import MergeLoop as M
bare = M.__new__(M)
for call in (lambda: bare.merge(0, 1, 2), bare.pop_best, bare.live_pairs):
    try:
        call()
    except RuntimeError:
        pass
    else:
        raise SystemExit("a bare loop answered")
failed = M.__new__(M)
try:
    failed.__init__(array("i", [0, 1]), array("i", [2]), [0], [1], [1, 1], True, [[]])
except TypeError:
    pass
for call in (lambda: failed.merge(0, 1, 2), failed.pop_best, failed.live_pairs):
    try:
        call()
    except RuntimeError:
        pass
    else:
        raise SystemExit("a half set-up loop answered")
loop = M.__new__(M)
class Sneaky:
    def __index__(self):
        try:
            loop.merge(0, 1, 2)
        except RuntimeError:
            return 1
        raise SystemExit("merge() ran inside __init__")
loop.__init__(array("i", [0, 1]), array("i", [2]), [0], [Sneaky()], [1, 1], True, [])
assert loop.pop_best() == (0, 1, 1)
print("ok")
""")


def test_a_list_changed_while_it_is_read_is_refused():
    """Found: an item's __index__ that shrinks the list being read left the C side reading freed
    items (heap-use-after-free under AddressSanitizer). Now a RuntimeError."""
    _child("""
from array import array
from workbench.core._bpe_merge import MergeLoop as M
freqs = []
class Shrink:
    def __index__(self):
        freqs.clear()
        [object() for _ in range(1000)]
        return 1
freqs[:] = [Shrink()] + [1] * 99
sym, lens = array("i", [0, 1] * 100), array("i", [2] * 100)
try:
    M(sym, lens, list(range(0, 200, 2)), freqs, [1, 1], True, [])
except RuntimeError as e:
    assert "changed size" in str(e)
else:
    raise SystemExit("accepted")
print("ok")
""")


def test_buffers_must_be_separate_writable_signed_int32_arrays():
    """Found: the format was never checked (array('I'), array('f'), a big-endian numpy array were
    taken as ids), one array passed as both ``sym`` and ``lens`` was accepted (rewriting a word then
    rewrites the lengths: reads past the buffer), and a memoryview was refused (FORMAT without ND)."""
    np = pytest.importorskip("numpy")
    lens = array("i", [2])
    for bad in (array("I", [0, 1]), array("f", [0, 1]), array("q", [0, 1]), array("h", [0, 1, 0, 0]),
                np.array([0, 1], dtype=">i4"), np.array([0, 1], dtype=np.float32), bytearray(8), b"\0" * 8,
                [0, 1], np.zeros((2, 4), dtype=np.int32)[:, ::2], memoryview(array("i", [0, 1])).toreadonly()):
        with pytest.raises(ERRORS):
            MergeLoop(bad, lens, [0], [1], [1, 1], True, [])
    for good in (array("i", [0, 1]), np.array([0, 1], dtype=np.int32), memoryview(array("i", [0, 1])).cast("B").cast("i")):
        assert MergeLoop(good, array("i", [2]), [0], [1], [1, 1], True, []).pop_best() == (0, 1, 1)
    both = array("i", [1, 1, 0, 0])
    with pytest.raises(ValueError, match="separate"):
        MergeLoop(both, both, [0, 0, 0, 0], [1] * 4, [1, 1], True, [])
    whole = array("i", [0, 1, 2, 0])
    view = memoryview(whole)
    with pytest.raises(ValueError, match="separate"):  # overlapping views of one array
        MergeLoop(view[:3], view[2:], [0], [1], [1, 1], True, [])


def test_words_outside_the_buffer_and_bad_tables_are_refused():
    """Found: a start near 2**63 wrapped ``start + length`` around and passed the bounds check: the
    loop read symbols from before the buffer. Also refused: negative frequencies and lengths, a
    symbol without a unit length, a Hugging Face rank that does not fit a 21-bit key half."""
    sym, lens = array("i", [0, 1]), array("i", [2])
    for start, freqs, ulen, rank in (([2**63 - 1], [1], [1, 1], []), ([2**62], [1], [1, 1], []), ([-1], [1], [1, 1], []),
                                     ([1], [1], [1, 1], []), ([0], [-1], [1, 1], []), ([0], [1], [1], []),
                                     ([0, 0], [1], [1, 1], []), ([0], [1, 1], [1, 1], []),
                                     ([0], [1], [1, 1], [0, 1 << 21]), ([0], [1], [1, 1], [-1, 0])):
        with pytest.raises(ERRORS):
            MergeLoop(sym, lens, start, freqs, ulen, rank == [], rank)
    with pytest.raises(ValueError):
        MergeLoop(sym, array("i", [-1]), [0], [1], [1, 1], True, [])
    sym.append(0)  # every failed construction released its buffers
    lens.append(0)


def test_counts_past_64_bits_train_like_the_pure_loops():
    """Found: a word's frequency above 2**50 made the trainer die (OverflowError from the C loop)
    where the pure loops train; and counts summed past 2**63 (2**50 × 9,000 pairs) wrapped around:
    different merges, silently. The C loop now refuses 2**62 tokens or more and BpeTrainer.run
    keeps such corpora on the pure loops; below that the C loop's 64-bit counts cannot wrap."""
    huge = {"ab": 2**51, "abc": 3, "ba" * 3: 2**49}
    config = TrainConfig(units="chars", merges=5)
    assert _run(huge, config, None) == _run(huge, config, False)
    wrap = {"a" * i + "b": 2**50 for i in range(1, 20)} | {"x" * 9000: 2**50}
    config = TrainConfig(units="chars", merges=4)
    native, pure = _run(wrap, config, None), _run(wrap, config, False)
    assert native == pure and pure[2][0] == 8999 * 2**50
    sym, lens = array("i", [0, 1, 0, 1]), array("i", [2, 2])
    with pytest.raises(OverflowError):  # 2**62 tokens
        MergeLoop(sym, lens, [0, 2], [2**60, 2**60], [1, 1], True, [])
    loop = MergeLoop(sym, lens, [0, 2], [2**60 - 1, 2**60], [1, 1], True, [])  # 2**62 - 2 tokens
    assert loop.pop_best() == (0, 1, 2**61 - 1)
    assert loop.merge(0, 1, 2) == 2**61 - 1


def test_merge_out_of_protocol_raises_and_keeps_the_store():
    """merge() without pop_best(), with another pair, twice, with a new id out of range; pop_best()
    after the last pair; a length written from Python while the loop runs (found: read and wrote
    past the buffer; now a RuntimeError, after which the loop refuses to go on)."""
    loop, sym, lens = _loop([[0, 1, 2, 0, 1], [2, 2], [], [1]])
    with pytest.raises(RuntimeError):
        loop.merge(0, 1, 3)  # before pop_best
    assert loop.pop_best() == (0, 1, 2)
    for a, b, new in ((1, 2, 3), (0, 2, 3), (-1, 1, 3), (0, 1, 9), (0, 1, -1), (0, 1, 1 << 21)):
        with pytest.raises((RuntimeError, ValueError)):
            loop.merge(a, b, new)
    assert list(sym) == [0, 1, 2, 0, 1, 2, 2, 1] and list(lens) == [5, 2, 0, 1]  # untouched by refusals
    assert loop.merge(0, 1, 3) == 2
    with pytest.raises(RuntimeError):
        loop.merge(0, 1, 3)  # twice
    assert list(sym[:3]) == [3, 2, 3] and list(lens) == [3, 2, 0, 1]
    seen = []
    while (picked := loop.pop_best()) is not None:
        seen.append(picked)
        loop.merge(picked[0], picked[1], 4 + len(seen) - 1)
    assert seen == [(3, 2, 1), (4, 3, 1), (2, 2, 1)]  # first-seen: word 0 offset 0, then 0, then word 1
    assert loop.pop_best() is None and loop.pop_best() is None and loop.live_pairs() == 0
    with pytest.raises(RuntimeError):
        loop.merge(4, 3, 7)

    _child("""
from array import array
from workbench.core._bpe_merge import MergeLoop as M
sym, lens = array("i", [0, 1, 0, 1]), array("i", [4])
loop = M(sym, lens, [0], [1], [1, 1], True, [])
picked = loop.pop_best()
lens[0] = 10**9
for call in (lambda: loop.merge(picked[0], picked[1], 2), loop.pop_best):
    try:
        call()
    except RuntimeError as e:
        assert "changed under" in str(e) or "unusable" in str(e), e
    else:
        raise SystemExit("went on")
print("ok")
""")


@pytest.mark.skipif(not sys.platform.startswith("linux") or "asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="an address-space limit (RLIMIT_AS) on Linux; AddressSanitizer needs its own")
def test_out_of_memory_in_the_middle_of_a_merge_retires_the_loop():
    """Found: a merge() that ran out of memory half-way (some words rewritten, their counts not)
    left a loop that went on answering pop_best() from the half-applied state: wrong merges for a
    caller that caught the MemoryError. Now every later call raises. (A 4-million-symbol word, the
    address space capped 1 MB above the process's size before its first merge.)"""
    code = """
import resource
from array import array
from workbench.core._bpe_merge import MergeLoop as M
n = 2_000_000
sym, lens = array("i", [0, 1]) * n, array("i", [2 * n])
loop = M(sym, lens, [0], [1], [1, 1], True, [])
picked = loop.pop_best()
size = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 20), resource.RLIM_INFINITY))
try:
    loop.merge(picked[0], picked[1], 2)
except MemoryError:
    pass
else:
    raise SystemExit("no MemoryError: the limit did not bite")
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
for call in (loop.pop_best, loop.live_pairs, lambda: loop.merge(0, 1, 2)):
    try:
        call()
    except RuntimeError as e:
        assert "unusable" in str(e), e
    else:
        raise SystemExit("a half-merged loop answered")
print("ok")
"""
    _child(code)


def test_empty_and_tiny_inputs():
    loop, _, _ = _loop([])
    assert loop.pop_best() is None and loop.live_pairs() == 0
    loop, _, _ = _loop([[], [0], [1], []])
    assert loop.pop_best() is None
    loop, _, _ = _loop([[0, 1]], freqs=[0])  # frequency 0: no pair counts
    assert loop.pop_best() is None
    for counts in ({"a": 5}, {"ab": 1}, {"a": 3, "b": 2, "ab": 1}):
        for units in ("bytes", "chars"):
            config = TrainConfig(units=units, merges=5)
            assert _run(counts, config, None) == _run(counts, config, False)


def test_ids_at_the_pair_key_limit():
    """Ids 2**21 - 2 and 2**21 - 1 (a unit table of 2**21): their pairs do not alias others', the
    last free id is used, and one more is refused rather than wrapped into another pair's key."""
    top = (1 << 21) - 1
    sym = array("i", [top, top - 1, top, top - 1, 0, top])
    with pytest.raises(ValueError):  # a table of ids 0 .. 2**21 - 2: the symbol top has no unit length
        MergeLoop(sym, array("i", [4, 2]), [0, 4], [1, 5], [1] * top, True, [])
    loop = MergeLoop(sym, array("i", [4, 2]), [0, 4], [1, 5], [1] * (top + 1), True, [])
    assert loop.pop_best() == (0, top, 5)
    assert loop.merge(0, top, top - 2) == 5  # (an existing id: a rebuilt piece)
    assert loop.pop_best() == (top, top - 1, 2)
    with pytest.raises(ValueError):
        loop.merge(top, top - 1, top + 1)  # 2**21: no room in a pair key
    assert list(sym[:4]) == [top, top - 1, top, top - 1]


def test_runs_of_one_symbol_and_huge_words():
    """Overlapping pairs ("aaaa" holds (a, a) three times) counted as the pure loops do, in a
    1,500-symbol word among ordinary ones; and a 2 MB word of one byte, whose merges halve it
    (checked against arithmetic: the pure loops take seconds on it)."""
    counts = {"a" * 1500: 3, "a" * 7 + "b": 2, "ab" * 700: 1, "b" * 1499 + "a": 2, "a": 9, "aab": 4}
    for units in ("bytes", "chars"):
        for tie in ("first-seen", "hf"):
            config = TrainConfig(units=units, merges=40, tie_break=tie)
            assert _run(counts, config, None) == _run(counts, config, False)
    n = 1 << 21
    trainer = BpeTrainer({"a" * n: 3}, TrainConfig(merges=25))
    events = list(trainer.run())
    assert len(events) == 21
    assert [e.frequency for e in events] == [3 * ((n >> k) - 1) for k in range(21)]
    assert [e.token_count for e in events] == [3 * (n >> k) for k in range(1, 22)]
    assert trainer.words == [[trainer.merges[-1][2]]]


def test_pair_keys_colliding_in_the_hash_table():
    """Thousands of pairs whose keys the unseeded hash put into 256 neighbouring buckets (found: probe
    runs thousands long, quadratic inserts; the hash is now seeded per loop), then enough other pairs
    to make the table grow twice: counts and merges as the pure loops'. (Time is bench material: on
    16,000 such pairs the seeded table builds in 2 ms where the unseeded one took 77 ms.)"""
    np = pytest.importorskip("numpy")
    n = 1024
    keys = (np.arange(n, dtype=np.uint64)[:, None] << np.uint64(21)) | np.arange(n, dtype=np.uint64)[None, :]
    k = keys.ravel()
    h = k ^ (k >> np.uint64(31))
    with np.errstate(over="ignore"):
        h = h * np.uint64(0x9E3779B97F4A7C15)
    h = (h ^ (h >> np.uint64(29))) & np.uint64((1 << 16) - 1)
    clustered = k[h < 256][:3000]  # ~16 keys a bucket for 256 buckets: probe runs thousands long
    assert len(clustered) == 3000
    alphabet = [chr(0x4E00 + i) for i in range(n)]  # chars units, no specials: id = rank in the alphabet
    counts = {alphabet[int(p) >> 21] + alphabet[int(p) & (n - 1)]: 1 + int(p) % 7 for p in clustered}
    rng = np.random.default_rng(0)
    for left, right, third in rng.integers(0, n, size=(40_000, 3)):
        counts[alphabet[left] + alphabet[right] + alphabet[third]] = 1
    config = TrainConfig(units="chars", merges=60)
    native = _run(counts, config, None)
    assert native == _run(counts, config, False)


def test_two_loops_in_two_threads():
    """No shared state between loops: two threads training at once give the merges of one at a time."""
    counts_a = {"the cat sat": 3, "on the mat": 2, "aaaa": 5}
    counts_b = {"中文中文字": 4, "字中": 1, "文文文": 2}
    config = TrainConfig(units="chars", merges=12)
    alone = [_run(counts_a, config, None), _run(counts_b, config, None)]
    together: list = [None, None]

    def train(i: int, counts: dict[str, int]) -> None:
        together[i] = [_run(counts, config, None) for _ in range(20)]

    threads = [threading.Thread(target=train, args=(i, c)) for i, c in enumerate((counts_a, counts_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == alone[0] for r in together[0]) and all(r == alone[1] for r in together[1])


def test_failed_constructions_free_what_they_allocated():
    """A construction that fails late (its lists read, its buffers held) frees them: 300 failures
    over 60,000 words would keep ~290 MB if the lists leaked; the arrays can grow again after."""
    import psutil

    words = 60_000
    sym, lens = array("i", [0, 1] * words), array("i", [2] * words)
    sym[-1] = 7  # the last word's last symbol has no unit length: refused after every list is read
    start, freqs = list(range(0, 2 * words, 2)), [1] * words
    before = psutil.Process().memory_info().rss
    for _ in range(300):
        with pytest.raises(ValueError):
            MergeLoop(sym, lens, start, freqs, [1, 1], False, [0, 1])
    assert psutil.Process().memory_info().rss - before < 40 << 20
    sym.append(0)
    lens.append(0)


alphabets = st.sampled_from(["ab", "a", "aaab", "abc ", "中文字", "".join(map(chr, range(0x4E00, 0x4E00 + 300))),
                             "aé中🙂"])


@st.composite
def hostile_tables(draw) -> dict[str, int]:
    alphabet = draw(alphabets)
    word = st.text(alphabet=st.sampled_from(alphabet), min_size=1, max_size=draw(st.sampled_from([3, 12, 60])))
    run = st.builds(lambda c, n, tail: c * n + tail, st.sampled_from(alphabet), st.integers(1, 200),
                    st.text(alphabet=st.sampled_from(alphabet), max_size=3))
    freq = draw(st.sampled_from([st.just(1), st.integers(1, 3), st.integers(1, 2**40), st.sampled_from([7, 2**33])]))
    return draw(st.dictionaries(st.one_of(word, run), freq, min_size=1, max_size=30))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=hostile_tables(), units=st.sampled_from(["chars", "bytes"]), tie=st.sampled_from(["first-seen", "hf"]),
       merges=st.integers(1, 120), min_frequency=st.integers(1, 3))
def test_adversarial_tables_equal_the_pure_loops(counts, units, tie, merges, min_frequency):
    """Many ties (all counts equal), huge counts, long runs of one symbol, wide CJK alphabets."""
    config = TrainConfig(units=units, tie_break=tie, merges=merges, min_frequency=min_frequency)
    assert _run(counts, config, None) == _run(counts, config, False)
