"""The C queue loop (core/_wordpiece_queue.c) under hostile use: review29's findings in the BPE merge
loop (tests/core/test_bpe_native_hostile.py), ported to WordPiece's loop, which shared their patterns.

A bug in C gives no traceback: it kills the trainer process, corrupts memory or changes the merges
without a word. So: every misuse of the raw ``QueueLoop`` API must raise a Python error (never
crash), and hostile inputs to the trainer — counts summed past 64 bits, huge frequencies, runs of
one symbol, pair keys that all collide in the unseeded hash table — must give the pure loop's
merges. The crash-prone checks run in a child process, so a regression fails this test instead of
killing the test run. Cheap: a few seconds in all. Not here: speed (bench/); out of memory only in
merge()'s first growth (one injected failure, not every allocation)."""

from __future__ import annotations

import os
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core import wordpiece
from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer

ROOT = Path(__file__).resolve().parents[2]

if wordpiece._native is None:
    pytest.skip("the C queue loop was not built (no C compiler at install) or WORKBENCH_PURE=1",
                allow_module_level=True)

QueueLoop = wordpiece._native.QueueLoop
ERRORS = (ValueError, TypeError, OverflowError, RuntimeError, BufferError)


def _loop(words: list[list[int]], freqs: list[int] | None = None):
    sym = array("i", [s for w in words for s in w])
    lens = array("i", map(len, words))
    start, at = array("q"), 0
    for w in words:
        start.append(at)
        at += len(w)
    return QueueLoop(sym, lens, start, array("q", freqs or [1] * len(words))), sym, lens, start


def _run(counts: dict[str, int], config: WordPieceConfig, native: bool | None) -> tuple:
    trainer = WordPieceTrainer(counts, config)
    trainer.native = native
    events = list(trainer.run())
    return (events, list(trainer.merges), list(trainer.frequencies), list(trainer.token_counts),
            list(trainer.pieces), trainer.token_count, trainer.words, trainer.undetermined_from)


def _child(code: str) -> None:
    """Run ``code`` in a fresh interpreter: a segfault is a failed test, not a dead test run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("WORKBENCH_PURE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, f"child died (rc {out.returncode}): {out.stderr[-2000:]}"
    assert out.stdout.strip().endswith("ok"), out.stdout + out.stderr


def test_methods_of_a_loop_that_was_never_set_up_raise():
    """Found: a loop whose __init__ failed half-way (or was never called, or is still running: an
    item's __index__) answered pop() (None) and queued() from its half-built tables. Now every
    method but held() raises RuntimeError until __init__ has finished."""
    _child("""
from array import array
from workbench.core._wordpiece_queue import QueueLoop as Q
def refused(loop, what):
    for call in (loop.pop, loop.tied, lambda: loop.merge(2), loop.queued):
        try:
            call()
        except RuntimeError:
            pass
        else:
            raise SystemExit(what + " answered")
refused(Q.__new__(Q), "a bare loop")
failed = Q.__new__(Q)
try:
    failed.__init__(array("i", [0, 1]), array("i", [2]), [0], [[]])
except TypeError:
    pass
refused(failed, "a half set-up loop")
try:
    failed.__init__(array("i", [0, 1]), array("i", [2]), [0], [1])
except RuntimeError:
    pass
else:
    raise SystemExit("set up twice")
loop = Q.__new__(Q)
class Sneaky:
    def __index__(self):
        try:
            loop.pop()
        except RuntimeError:
            return 1
        raise SystemExit("pop() ran inside __init__")
loop.__init__(array("i", [0, 1]), array("i", [2]), [0], [Sneaky()])
assert loop.pop() == (0, 1, 1) and loop.merge(2) == 1
print("ok")
""")


def test_a_list_changed_while_it_is_read_is_refused():
    """Found: an item's __index__ that shrinks the list being read left the C side reading freed
    items (the saved PySequence_Fast items pointer). Now a RuntimeError."""
    _child("""
from array import array
from workbench.core._wordpiece_queue import QueueLoop as Q
for which in ("start", "freqs"):
    seq = []
    class Shrink:
        def __index__(self):
            seq.clear()
            [object() for _ in range(1000)]
            return 0 if which == "start" else 1
    seq[:] = [Shrink()] + ([1] * 99 if which == "freqs" else list(range(2, 200, 2)))
    sym, lens = array("i", [0, 1] * 100), array("i", [2] * 100)
    args = (seq, [1] * 100) if which == "start" else (list(range(0, 200, 2)), seq)
    try:
        Q(sym, lens, *args)
    except RuntimeError as e:
        assert "changed size" in str(e), e
    else:
        raise SystemExit("accepted")
print("ok")
""")


def test_buffers_must_be_separate_writable_signed_int32_arrays():
    """Found: only the item size was checked (array('I'), array('f'), a big-endian numpy array were
    taken as ids), one array passed as both ``sym`` and ``lens`` was accepted (rewriting a word then
    rewrites the lengths), and a memoryview was refused (FORMAT without ND). ``start`` and ``freqs``
    are read in place only when native signed 8-byte; anything else is read by value."""
    np = pytest.importorskip("numpy")
    lens = array("i", [2])
    for bad in (array("I", [0, 1]), array("f", [0, 1]), array("q", [0, 1]), array("h", [0, 1, 0, 0]),
                np.array([0, 1], dtype=">i4"), np.array([0, 1], dtype=np.float32), bytearray(8), b"\0" * 8,
                [0, 1], np.zeros((2, 4), dtype=np.int32)[:, ::2], memoryview(array("i", [0, 1])).toreadonly()):
        with pytest.raises(ERRORS):
            QueueLoop(bad, lens, [0], [1])
    for good in (array("i", [0, 1]), np.array([0, 1], dtype=np.int32), memoryview(array("i", [0, 1])).cast("B").cast("i")):
        assert QueueLoop(good, array("i", [2]), [0], [1]).pop() == (0, 1, 1)
    # start / freqs by value whatever their format (a big-endian 1 is 2**56 as bits)
    for start, freqs in ((np.array([0], dtype=">i8"), np.array([3], dtype=">i8")), (array("I", [0]), array("Q", [3])),
                         (array("q", [0]), np.array([3], dtype="<i8")), ([0], [3.0])):
        if isinstance(freqs[0], float):
            with pytest.raises(TypeError):
                QueueLoop(array("i", [0, 1]), array("i", [2]), start, freqs)
            continue
        assert QueueLoop(array("i", [0, 1]), array("i", [2]), start, freqs).pop() == (0, 1, 3)
    both = array("i", [1, 1, 0, 0])
    with pytest.raises(ValueError, match="separate"):
        QueueLoop(both, both, [0, 0, 0, 0], [1] * 4)
    view = memoryview(array("i", [0, 1, 2, 0]))
    with pytest.raises(ValueError, match="separate"):  # overlapping views of one array
        QueueLoop(view[:3], view[2:], [0], [1])
    raw = memoryview(bytearray(8))
    with pytest.raises(ValueError, match="share memory"):  # start read in place from the symbols' bytes
        QueueLoop(raw.cast("i"), array("i", [2]), raw.cast("q"), [1])
    with pytest.raises(ValueError, match="share memory"):
        QueueLoop(raw.cast("i"), array("i", [2]), [0], raw.cast("q"))


def test_words_outside_the_buffer_are_refused():
    """Found: a start near 2**63 wrapped ``start + length`` around and passed the bounds check: the
    loop read symbols far outside the buffer (a segfault). Also refused: negative starts, lengths and
    frequencies, lists of the wrong length; every failed construction releases its buffers."""
    _child("""
from array import array
from workbench.core._wordpiece_queue import QueueLoop as Q
sym, lens = array("i", [0, 1]), array("i", [2])
for start, freqs in (([2**63 - 1], [1]), ([2**62], [1]), ([-1], [1]), ([1], [1]), ([0], [-1]),
                     ([0, 0], [1]), ([0], [1, 1]), (array("q", [2**63 - 1]), array("q", [1]))):
    try:
        Q(sym, lens, start, freqs)
    except (ValueError, OverflowError):
        pass
    else:
        raise SystemExit(f"accepted {start} {freqs}")
try:
    Q(sym, array("i", [-1]), [0], [1])
except ValueError:
    pass
else:
    raise SystemExit("accepted a negative length")
sym.append(0)  # every failed construction released its buffers
lens.append(0)
print("ok")
""")


def test_counts_past_64_bits_train_like_the_pure_loop():
    """Found: a word's frequency above 2**50 made the trainer die (OverflowError from the C loop)
    where the pure loop trains; and at 2**50 (allowed) counts summed past 2**63 (8,998 pairs of one
    word) could wrap, silently. The C loop now refuses 2**61 tokens or more (the merged pair's count
    is never reset, so a count can reach three times the tokens) and WordPieceTrainer.run keeps such
    corpora on the pure loop; below that the C loop's 64-bit counts cannot wrap."""
    config = WordPieceConfig(score="frequency", merges=5)
    huge = {"ab": 2**51, "abc": 3, "ba" * 3: 2**49}
    assert _run(huge, config, None) == _run(huge, config, False)
    wrap = {"a" * i + "b": 2**50 for i in range(1, 20)} | {"x" * 9000: 2**50}
    config = WordPieceConfig(score="frequency", merges=4)
    native, pure = _run(wrap, config, None), _run(wrap, config, False)
    assert native == pure and pure[2][0] == 8998 * 2**50  # (##x, ##x): past 2**63
    sym, lens = array("i", [0, 1, 0, 1]), array("i", [2, 2])
    with pytest.raises(OverflowError):  # 2**61 tokens
        QueueLoop(sym, lens, [0, 2], [2**59, 2**59])
    loop = QueueLoop(sym, lens, [0, 2], [2**59 - 1, 2**59])  # 2**61 - 2 tokens
    assert loop.pop() == (0, 1, 2**60 - 1)
    assert loop.merge(2) == 2**60 - 1


def test_merge_out_of_protocol_raises_and_keeps_the_store():
    """merge() and tied() before pop(), pop() twice, a new id out of range; then a length or a start
    written from Python while the loop runs (found: merge() read and wrote past the buffer; now a
    RuntimeError, after which the loop refuses to go on; tied() treats such a word as not holding
    the pair)."""
    loop, sym, lens, _ = _loop([[0, 1, 2, 0, 1], [2, 2], [], [1]])
    for call in (lambda: loop.merge(3), loop.tied):
        with pytest.raises(RuntimeError):
            call()
    assert loop.pop() == (0, 1, 2)
    with pytest.raises(RuntimeError):
        loop.pop()  # again before merge()
    for new in (-1, 1 << 21):
        with pytest.raises(ValueError):
            loop.merge(new)
    assert list(sym) == [0, 1, 2, 0, 1, 2, 2, 1] and list(lens) == [5, 2, 0, 1]  # untouched by refusals
    assert loop.merge(3) == 2
    with pytest.raises(RuntimeError):
        loop.merge(3)  # twice
    assert list(sym[:3]) == [3, 2, 3] and list(lens) == [3, 2, 0, 1]

    _child("""
from array import array
from workbench.core._wordpiece_queue import QueueLoop as Q
for field, value in (("lens", 10**9), ("lens", -5), ("start", 2**62), ("start", -3)):
    sym, lens, start = array("i", [0, 1, 0, 1, 0, 1]), array("i", [4, 2]), array("q", [0, 4])
    loop = Q(sym, lens, start, array("q", [1, 1]))
    picked = loop.pop()
    (lens if field == "lens" else start)[0] = value
    loop.tied()
    for call in (lambda: loop.merge(2), loop.pop):
        try:
            call()
        except RuntimeError as e:
            assert "changed under" in str(e) or "unusable" in str(e), e
        else:
            raise SystemExit(f"went on after {field} = {value}")
print("ok")
""")


@pytest.mark.skipif(not sys.platform.startswith("linux") or "asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="an address-space limit (RLIMIT_AS) on Linux; AddressSanitizer needs its own")
def test_out_of_memory_in_the_middle_of_a_merge_retires_the_loop():
    """Found: a merge() that ran out of memory half-way (the entry taken off, some words rewritten,
    their counts not) left a loop that went on answering pop() from the half-applied state: wrong
    merges for a caller that caught the MemoryError. Now every later call raises. (A 4-million-symbol
    word, the address space capped 1 MB above the process's size before its first merge.)"""
    _child("""
import resource
from array import array
from workbench.core._wordpiece_queue import QueueLoop as Q
n = 2_000_000
sym, lens = array("i", [0, 1]) * n, array("i", [2 * n])
loop = Q(sym, lens, array("q", [0]), array("q", [1]))
picked = loop.pop()
size = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 20), resource.RLIM_INFINITY))
try:
    loop.merge(2)
except MemoryError:
    pass
else:
    raise SystemExit("no MemoryError: the limit did not bite")
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
for call in (loop.pop, loop.queued, loop.tied, lambda: loop.merge(2)):
    try:
        call()
    except RuntimeError as e:
        assert "unusable" in str(e), e
    else:
        raise SystemExit("a half-merged loop answered")
print("ok")
""")


def test_empty_and_tiny_inputs():
    loop, _, _, _ = _loop([])
    assert loop.pop() is None and loop.queued() == 0
    loop, _, _, _ = _loop([[], [0], [1], []])
    assert loop.pop() is None
    loop, _, _, _ = _loop([[0, 1]], freqs=[0])  # frequency 0: a count-0 entry, as the pure loop's
    assert loop.pop() == (0, 1, 0)
    for counts in ({"a": 5}, {"ab": 1}, {"a": 3, "b": 2, "ab": 1}):
        config = WordPieceConfig(score="frequency", merges=5)
        assert _run(counts, config, None) == _run(counts, config, False)


def test_pair_keys_colliding_in_the_hash_table():
    """3,000 pairs whose keys the unseeded hash put into 256 neighbouring buckets of the first table
    (probe runs thousands long, quadratic inserts: the hash is now seeded per loop, as _bpe_merge.c's),
    then 40,000 other pairs to make the table grow: each two-symbol word's entry pops in the queue's
    order (count, then key) and merges it. (Time is bench material, not asserted here.)"""
    np = pytest.importorskip("numpy")
    n = 1024
    keys = (np.arange(n, dtype=np.uint64)[:, None] << np.uint64(21)) | np.arange(n, dtype=np.uint64)[None, :]
    k = keys.ravel()
    h = k ^ (k >> np.uint64(31))
    with np.errstate(over="ignore"):
        h = h * np.uint64(0x9E3779B97F4A7C15)
    h = (h ^ (h >> np.uint64(29))) & np.uint64((1 << 16) - 1)
    clustered = [int(p) for p in k[h < 256][:3000]]
    assert len(clustered) == 3000
    rng = np.random.default_rng(0)
    other = {int(a) << 21 | int(b) for a, b in rng.integers(n, 2 * n, size=(40_000, 2))}
    pairs = clustered + sorted(other)
    freqs = [1 + p % 7 for p in pairs]
    loop, sym, lens, _ = _loop([[p >> 21, p & ((1 << 21) - 1)] for p in pairs], freqs)
    assert loop.held()[0] == len(pairs)
    expected = sorted(zip(freqs, pairs), key=lambda t: (-t[0], t[1]))
    got = []
    while (picked := loop.pop()) is not None:
        got.append((picked[2], picked[0] << 21 | picked[1]))
        assert loop.merge(5000) == picked[2]
    assert got == expected and set(lens) == {1} and set(sym[::2]) == {5000}


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer's quarantine holds freed memory (passes with quarantine_size_mb=0)")
def test_failed_constructions_free_what_they_allocated():
    """A construction that fails late (its lists copied, its buffers held) frees them: 300 failures
    over 60,000 words would keep ~290 MB if the copies leaked; the arrays can grow again after."""
    import psutil

    words = 60_000
    sym, lens = array("i", [0, 1] * words), array("i", [2] * words)
    sym[-1] = 1 << 21  # the last word's last symbol does not fit a pair key: refused after every list is read
    start, freqs = list(range(0, 2 * words, 2)), [1] * words
    before = psutil.Process().memory_info().rss
    for _ in range(300):
        with pytest.raises(OverflowError):
            QueueLoop(sym, lens, start, freqs)
    assert psutil.Process().memory_info().rss - before < 40 << 20
    sym.append(0)
    lens.append(0)


alphabets = st.sampled_from(["ab", "a", "aaab", "ab#c", "中文字", "".join(map(chr, range(0x4E00, 0x4E00 + 300))),
                             "aé中🙂"])


@st.composite
def hostile_tables(draw) -> dict[str, int]:
    alphabet = draw(alphabets)
    word = st.text(alphabet=st.sampled_from(alphabet), min_size=1, max_size=draw(st.sampled_from([3, 12, 60])))
    run = st.builds(lambda c, n, tail: c * n + tail, st.sampled_from(alphabet), st.integers(1, 200),
                    st.text(alphabet=st.sampled_from(alphabet), max_size=3))
    freq = draw(st.sampled_from([st.just(1), st.integers(1, 3), st.integers(1, 2**40), st.sampled_from([7, 2**33]),
                                 st.sampled_from([2**51, 2**58])]))
    return draw(st.dictionaries(st.one_of(word, run), freq, min_size=1, max_size=30))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=hostile_tables(), merges=st.integers(1, 120), min_frequency=st.integers(0, 3))
def test_adversarial_tables_equal_the_pure_loop(counts, merges, min_frequency):
    """Many ties (all counts equal), huge counts (some past the C loop's total: the pure loop then),
    long runs of one symbol, wide CJK alphabets."""
    config = WordPieceConfig(score="frequency", merges=merges, min_frequency=min_frequency)
    assert _run(counts, config, None) == _run(counts, config, False)
