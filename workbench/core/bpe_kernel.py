"""numpy passes of :class:`workbench.core.bpe.BpeTrainer`: the pair index at the start, and a merge
that touches many words (issue 24: the per-occurrence Python loop was 70 % of training's CPU).

The words live in one flat ``array('i')`` (:class:`workbench.core.bpe.FlatWords`): word ``w`` has a
slot of its initial length starting at ``start[w]``, its current ``lens[w]`` symbols packed at the
front. numpy views the same memory (no copy), so the trainer's Python loop for small merges and
these passes read and write one store.

A merge here does what the Python loop does occurrence by occurrence, on all the words holding
the pair at once: the same matches (left to right, a run ``a a a a`` of a pair ``(a, a)`` merges at
even offsets inside the run), the same pair-count deltas including the ones that sum to zero, the
same words added to the pair → words index and the same first-seen lower bounds. Results are
identical by construction and held equal to the Python loop by tests (threshold 0 against none).
Left out: extensions that refit words (``BpeTrainer.refit``) keep the list-based loop.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from workbench.core.bpe import FlatWords

_NEVER = 1 << 80


class FlatView:
    """numpy views over a :class:`FlatWords` store and the word frequencies (made once per run)."""

    def __init__(self, flat: FlatWords, freqs: list[int]):
        self.sym = np.frombuffer(flat.sym, dtype=np.int32)
        self.lens = np.frombuffer(flat.lens, dtype=np.int32)
        self.start = np.asarray(flat.start, dtype=np.int64)
        self.freqs = np.asarray(freqs, dtype=np.int64)

    def release(self) -> None:
        """Drop the views so the store's arrays may be resized again."""
        del self.sym, self.lens


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each run of equal values in sorted ``keys``."""
    cut = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut, [keys.size]))
    return starts, ends


def _add_words(keys: np.ndarray, wids: np.ndarray, where: dict[int, array], first: dict[int, int] | None,
               pos_unit: int, base: int = 0, shift: int = 0, front_min: bool = False) -> None:
    """Add word ``wids[i]`` to pair ``keys[i]``'s word list and lower the pair's first-seen bound to
    its smallest word's start. ``keys`` come grouped (equal keys together, each key once), the
    words of a key ascending and without repeats; with ``base``, a key is ``left * base + right``
    (else ``left * shift + right``, the trainer's own). With ``front_min`` a list keeps its
    smallest word in front (a smaller one added is swapped there): the trainer's bound instead of
    ``first``."""
    if not keys.size:
        return
    starts, ends = _groups(keys)
    data = wids.astype(np.int32).tobytes()
    heads = wids[starts].tolist()
    group_keys = keys[starts]
    if base and base != shift:
        group_keys = (group_keys // base) * shift + group_keys % base
    get = where.get
    for q, s, e, w in zip(group_keys.tolist(), (starts * 4).tolist(), (ends * 4).tolist(), heads):
        listed = get(q)
        if listed is None:
            where[q] = array("i", data[s:e])
        elif listed[-1] == w:
            listed.frombytes(data[s + 4:e])
        else:
            at = len(listed)
            listed.frombytes(data[s:e])
            if front_min and w < listed[0]:
                listed[at] = listed[0]
                listed[0] = w
        if first is not None:
            bound = w * pos_unit
            if bound < first.get(q, _NEVER):
                first[q] = bound


def _fresh_lists(keys: np.ndarray, wids: np.ndarray, base: int, shift: int) -> dict[int, array]:
    """:func:`_add_words` into an empty index, in C-level passes: one ``array`` per pair straight
    from the words' bytes (no look-up, no Python loop: stage 2 of SuperBPE starts with ~430k pairs)."""
    if not keys.size:
        return {}
    starts, ends = _groups(keys)
    listed = array("i", wids.astype(np.int32).tobytes())  # slices of an array are arrays: made in C
    group_keys = keys[starts]
    if base != shift:
        group_keys = (group_keys // base) * shift + group_keys % base
    return dict(zip(group_keys.tolist(), map(listed.__getitem__, map(slice, starts.tolist(), ends.tolist()))))


def build_index(view: FlatView, shift: int, pos_unit: int, first_seen: bool
                ) -> tuple[dict[int, int], dict[int, array], dict[int, int]]:
    """``(counts, where, first)`` over every adjacent pair of every word: the pair's summed word
    frequency, the words holding it (ascending) and, for ``first-seen``, its first position as
    ``word * pos_unit + symbol index`` (a lower bound of the unit offset the trainer checks)."""
    sym, lens = view.sym, view.lens.astype(np.int64)
    n = int(lens.sum())
    if n < 2:
        return {}, {}, {}
    starts = view.start
    last = np.zeros(n, dtype=bool)
    last[(starts + lens - 1)[lens > 0]] = True
    pos = np.flatnonzero(~last[:-1])
    del last
    if not pos.size:  # every word a single symbol
        return {}, {}, {}
    # Sort the positions by pair, ascending inside each pair: one in-place sort of (pair, position)
    # packed in an int64 when the symbols are few enough (always at the start of a byte-level run),
    # else a stable argsort of the pair keys (more memory). ``ck``: the pair's key in that packing.
    base = int(sym.max()) + 1
    pair_bits = (base * base - 1).bit_length()
    pos_bits = max(1, int(n).bit_length())
    if pair_bits + pos_bits <= 62:
        ck = sym[pos].astype(np.int64)
        ck *= base
        ck += sym[pos + 1]
        ck <<= pos_bits
        ck |= pos
        del pos
        ck.sort()
        pos = (ck & ((1 << pos_bits) - 1)).astype(np.int32)
        ck >>= pos_bits
    else:
        base = shift
        ck = sym[pos].astype(np.int64) * shift + sym[pos + 1]
        order = np.argsort(ck, kind="stable")
        ck = ck[order]
        pos = pos[order].astype(np.int32)
        del order
    pw = (np.searchsorted(starts, pos, side="right") - 1).astype(np.int32)  # each position's word
    starts_g, _ = _groups(ck)
    sums = np.add.reduceat(view.freqs[pw], starts_g)
    uniq_c = ck[starts_g]
    uniq = ((uniq_c // base) * shift + uniq_c % base).tolist()
    counts = dict(zip(uniq, sums.tolist()))
    first: dict[int, int] = {}
    if first_seen:
        fpos = pos[starts_g].astype(np.int64)
        fw = pw[starts_g].astype(np.int64)
        first = dict(zip(uniq, (fw * pos_unit + (fpos - starts[fw])).tolist()))
    del pos
    keep = np.ones(ck.size, dtype=bool)  # one entry per pair and word
    keep[1:] = (ck[1:] != ck[:-1]) | (pw[1:] != pw[:-1])
    ck = ck[keep]
    pw = pw[keep]
    del keep
    where = _fresh_lists(ck, pw, base, shift)
    del ck, pw
    _give_back()
    return counts, where, first


def split_rare(counts: dict[int, int], keep: float) -> tuple[list[int], list[int], int]:
    """``(hot, cold, floor)``: the pairs to give heap entries now, the others, and a count every
    cold pair is below. Hot are the ``keep`` most frequent (and those tied with the last); when
    that is a quarter of the pairs or more, all are hot (floor 0): nothing worth saving."""
    n = len(counts)
    if not n or keep * 4 >= n:
        return list(counts), [], 0
    k = max(1, int(keep))
    vals = np.fromiter(counts.values(), dtype=np.int64, count=n)
    floor = int(np.partition(vals, n - k)[n - k])  # the keep-th largest count
    keys = np.fromiter(counts.keys(), dtype=np.int64, count=n)
    rare = vals < floor
    return keys[~rare].tolist(), keys[rare].tolist(), floor


def _libc_call(name: str, *args: int) -> None:
    """Call a glibc allocator function if there is one (elsewhere: nothing to do)."""
    try:
        import ctypes

        getattr(ctypes.CDLL(None), name)(*args)
    except (OSError, AttributeError):
        pass


def _give_back() -> None:
    """Return the C heap's free memory to the system: the index's temporary arrays are 5-10 times
    the words."""
    _libc_call("malloc_trim", 0)


# glibc raises its mmap threshold to the largest block freed (up to 32 MB): after the index's
# arrays, every merge's temporaries would then come from the heap, between the word lists that
# grow there, and the heap could no longer shrink (measured: +15-25 MB at the peak). A fixed
# threshold keeps blocks of 1 MB or more in mmap, given back when freed; the merges' chunks stay
# below it and reuse the same heap blocks.
_libc_call("mallopt", -3, 1 << 20)  # M_MMAP_THRESHOLD


_CHUNK = 1 << 15  # symbols gathered at once: bounds the passes' temporary arrays (~20 bytes a symbol)


def apply_merge(view: FlatView, words: array, a: int, b: int, new: int, shift: int, pos_unit: int,
                where: dict[int, array], first: dict[int, int] | None, *, front_min: bool = False
                ) -> tuple[list[int], list[int], int]:
    """Merge ``(a, b)`` → ``new`` in ``words`` (word ids; stale and repeated ones allowed).

    ``first`` (a dict): each new pair's first-seen bound lowered to its smallest new word's start;
    ``front_min``: each word list keeps its smallest word in front instead (see :func:`_add_words`).

    Returns ``(pairs, deltas, tokens removed)``: every pair whose count the merge changes (the
    merged pair and zero sums included, as the Python loop's ``delta``) with its summed change.
    The words are rewritten a chunk of about :data:`_CHUNK` symbols at a time (so a merge held
    by most words does not double the trainer's memory, and its arrays stay below the mmap
    threshold); the changes are summed over all chunks."""
    wu = np.sort(np.frombuffer(words, dtype=np.int32)).astype(np.int64)
    if wu.size > 1:  # a word may be listed twice
        dup = np.flatnonzero(wu[1:] == wu[:-1])
        if dup.size:
            wu = np.delete(wu, dup)
    n = view.lens[wu].astype(np.int64)
    ends = np.cumsum(n)
    total = int(ends[-1]) if ends.size else 0
    if total <= _CHUNK:
        cuts = [0, wu.size]
    else:
        cuts = [0, *np.searchsorted(ends, np.arange(_CHUNK, total, _CHUNK), side="right").tolist(), wu.size]
    parts = [_merge_chunk(view, wu[lo:hi], n[lo:hi], a, b, new, shift)
             for lo, hi in zip(cuts, cuts[1:]) if hi > lo]
    removed = sum(part[3] for part in parts)
    keys = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    pairs: list[int] = []
    changes: list[int] = []
    if keys.size:
        vals = np.concatenate([part[1] for part in parts])
        order = np.argsort(keys)
        keys = keys[order]
        starts_g, _ = _groups(keys)
        pairs = keys[starts_g].tolist()
        changes = np.add.reduceat(vals[order], starts_g).tolist()
        packed = np.concatenate([part[2] for part in parts])
        packed.sort()
        if packed.size > 1:
            packed = packed[np.concatenate(([True], packed[1:] != packed[:-1]))]
        code = packed >> 31
        other = code & ((1 << 21) - 1)
        _add_words(np.where(code >> 21, new * shift + other, other * shift + new), packed & ((1 << 31) - 1), where,
                   first, pos_unit, front_min=front_min)
    return pairs, changes, removed


def _merge_chunk(view: FlatView, wu: np.ndarray, n: np.ndarray, a: int, b: int, new: int, shift: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Merge ``(a, b)`` in the words ``wu`` (ascending, distinct; ``n`` their lengths): rewrites
    them and returns the pair keys and count changes it makes, the new pairs with their words
    packed as ``code << 31 | word`` ((x, new) coded x, (new, y) coded 2**21 + y — (new, new) the
    latter way on both sides, so one code is one pair), and the tokens removed."""
    empty = np.zeros(0, dtype=np.int64)
    st = view.start[wu]
    ends = np.cumsum(n)
    begins = ends - n
    total = int(ends[-1]) if ends.size else 0
    if total < 2:
        return empty, empty, empty, 0
    idx = np.arange(total, dtype=np.int64) + np.repeat(st - begins, n)
    seg = view.sym[idx]
    del idx
    last = np.zeros(total, dtype=bool)
    last[ends[n > 0] - 1] = True
    is_a = seg == a
    if a != b:
        cand = is_a[:-1] & (seg[1:] == b) & ~last[:-1]
    else:
        # Runs of a inside a word merge at even offsets from the run's start (left to right).
        prev_a = np.zeros(total, dtype=bool)
        prev_a[1:] = is_a[:-1] & ~last[:-1]
        run_start = is_a & ~prev_a
        marks = np.where(run_start, np.arange(total), 0)
        np.maximum.accumulate(marks, out=marks)
        cand = prev_a[1:] & is_a[1:] & ((np.arange(total - 1) - marks[:-1]) % 2 == 0)
    m = np.flatnonzero(cand)
    if not m.size:
        return empty, empty, empty, 0
    k = np.searchsorted(ends, m, side="right")  # each match's word (index into wu)
    f = view.freqs[wu][k]
    matched = np.zeros(total + 1, dtype=bool)
    matched[m] = True
    # Left neighbours: the symbol before, or the new piece when the previous match ends there.
    has_left = m > begins[k]
    ml = m[has_left]
    after = np.zeros(ml.size, dtype=bool)
    ok = ml >= 2
    after[ok] = matched[ml[ok] - 2]
    x = np.where(after, new, seg[ml - 1]).astype(np.int64)
    fl = f[has_left]
    # Right neighbours: the symbol after the pair (as it was).
    has_right = m + 2 < ends[k]
    mr = m[has_right]
    y = seg[mr + 2].astype(np.int64)
    fr = f[has_right]
    x_s = x * shift
    keys = np.concatenate((x_s + a, b * shift + y, x_s + new, new * shift + y))
    vals = np.concatenate((-fl, -fr, fl, fr))
    wk = wu[k]
    code = np.concatenate((np.where(x == new, (1 << 21) + new, x), (1 << 21) + y))
    packed = (code << 31) | np.concatenate((wk[has_left], wk[has_right]))
    # Rewrite the words: the match becomes new, its right half goes, the rest moves up.
    seg[m] = new
    keep = np.ones(total, dtype=bool)
    keep[m + 1] = False
    newn = n - np.bincount(k, minlength=wu.size)
    kept = seg[keep]
    new_begins = np.cumsum(newn) - newn
    dest = np.arange(kept.size, dtype=np.int64) + np.repeat(st - new_begins, newn)
    view.sym[dest] = kept
    view.lens[wu] = newn
    return keys, vals, packed, int(f.sum())
