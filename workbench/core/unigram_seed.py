"""Unigram seeding in numpy: every valid substring of the distinct words counted by frequency, at once.

The trainer (:mod:`workbench.core.unigram`, step 2 of its docstring) needs, for every substring of
2..``max_len`` characters that may be a piece, its weighted number of occurrences, whether it is
*right-branching* (not always followed by the same character, a word's end counting as one
follower), and then each word's lattice of the chosen seeds. Done with Python strings that was
tens of millions of slices and dict updates (about half of a run, and a Counter of every distinct
substring: most of the run's peak memory). Here the words are one array of code points and:

1. **Which substrings may be pieces** (:func:`valid_lengths`): for each position, how many
   characters from there may form a piece — :func:`workbench.core.unigram.valid_limits` computed
   for all positions at once (script class per distinct character, combining marks inherit the
   class before them by a forward fill, runs of one class by a cumulative sum).
2. **Grouping equal substrings** (:func:`_prefix_sorted`): the positions are sorted by their first
   ``max_len + 1`` characters by prefix doubling (a few ``argsort`` of int64 keys) and the longest
   common prefix of neighbours is found from the doubling ranks (capped). The occurrences of one
   substring of length ``L`` are then a run of neighbours whose common prefix is at least ``L``:
   a group id is a cumulative sum, and counts are ``bincount`` with the words' counts as weights.
   Lengths go 2, 3, …; positions too short for the next length are dropped (their common prefixes
   folded by a running minimum), so the work is the number of valid substrings, in C.
3. **Branching**: a substring of length ``L`` is the parent of the groups of length ``L + 1``
   inside its run (its extensions); the largest extension count (and the count of occurrences that
   end their word) is compared with its own count, exactly as the dict version compares them —
   including that an extension which is not itself valid (one character past a position's limit)
   is counted in a table of its own.
4. **Order**: seeds are ranked by frequency × length, ties by the string (code-point order). The
   prefix-sorted order *is* that string order (a group's first sorted index, then its length for a
   prefix of a longer one), so no string is made until the chosen seeds are named.
5. **Lattices**: each position's piece id for each length is looked up through the groups (no
   string lookups) and written straight into its slot in (word, start, end) order (a position's
   character, then its seeds by length: no sort).

Memory: a few int32/int64 arrays over the characters of the distinct words (1.9 M on the 8.9 MB
shared corpora: seeding's peak is the lattice it hands over plus ~150 MB, where the Counters of
every distinct substring took ~800 MB).

Exact: the seeds, their order and every lattice edge are those of the string version (the
Unigram fingerprint pins them). Left out: corpora of 2**31 characters or more of distinct words
(int32 positions; a one-line error names the limit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from workbench.errors import WorkbenchError

METASPACE = "\u2581"
UNK_CHAR = "\u2585"
_BARRIER = 0  # class of ▁, the unknown character and the separator between words
_INHERITED = 1  # a combining mark with nothing before it to take its class from


def word_codes(words: Sequence[str], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """The words as one uint32 array of code points, each followed by a NUL separator, and ``pad``
    more NULs at the end; and each word's first position. NUL is never inside a word (the trainer
    turns it into the unknown character)."""
    joined = "\x00".join(words) + "\x00" * (pad + 1)
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    first = np.zeros(len(words), dtype=np.int64)
    if len(words):
        np.cumsum(lens[:-1] + 1, out=first[1:])
    return codes, first


def valid_lengths(codes: np.ndarray, max_len: int, script_class: Callable[[str], str],
                  check: Callable[[], None] = lambda: None,
                  distinct_inverse: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """For each position, how many characters from it may be a piece (0 at separators):
    ``valid_limits(word, max_len)[i] - i`` for every word at once. ``distinct_inverse``:
    ``np.unique(codes, return_inverse=True)`` when the caller has it."""
    distinct, inverse = distinct_inverse or np.unique(codes, return_inverse=True)
    check()
    names: dict[str, int] = {}
    cls_of = np.empty(len(distinct), dtype=np.int32)
    for k, code in enumerate(distinct.tolist()):
        ch = chr(code)
        if code == 0 or ch == METASPACE or ch == UNK_CHAR:
            cls_of[k] = _BARRIER
            continue
        name = script_class(ch)
        cls_of[k] = _INHERITED if name == "Inherited" else names.setdefault(name, len(names) + 2)
    cls = cls_of[inverse.reshape(-1)]
    check()
    m = len(cls)
    pos = np.arange(m, dtype=np.int64)
    # Combining marks take the class of the last character before them that is not one (a barrier
    # before it, or the start: they stay "Inherited").
    source = np.where(cls != _INHERITED, pos, -1)
    np.maximum.accumulate(source, out=source)
    ec = np.where(source >= 0, cls[np.maximum(source, 0)], _BARRIER)
    ec = np.where((cls == _INHERITED) & (ec == _BARRIER), _INHERITED, np.where(cls == _INHERITED, ec, cls))
    check()
    # Runs of one class (a barrier is a run of its own): ends[i] = where i's run ends.
    starts_run = np.ones(m, dtype=bool)
    starts_run[1:] = (ec[1:] != ec[:-1]) | (ec[1:] == _BARRIER) | (ec[:-1] == _BARRIER)
    run_start = np.flatnonzero(starts_run)
    run_end = np.append(run_start[1:], m)
    ends = run_end[np.cumsum(starts_run) - 1]
    barrier = ec == _BARRIER
    ends[barrier] = pos[barrier]
    limit = ends
    check()
    meta = codes == ord(METASPACE)
    if meta.any():
        nxt = np.append(ec[1:], _BARRIER)
        after = np.append(ends[1:], m)
        limit = np.where(meta, np.where(nxt != _BARRIER, after, pos + 1), limit)
    limit = np.where(codes == ord(UNK_CHAR), pos, limit)
    limit = np.where(codes == 0, pos, limit)
    return np.minimum(limit - pos, max_len).astype(np.int32)


def _prefix_sorted(inverse: np.ndarray, depth: int, check: Callable[[], None]) -> tuple[np.ndarray, np.ndarray]:
    """Positions sorted by their first ``depth`` characters (or more) and the common prefix length of
    each with the one before it (capped at the largest power of two below ``depth`` × 2 − 1, at
    least ``depth``; 0 for the first). ``inverse``: each position's rank among the distinct code
    points (``np.unique``'s inverse), the text ending in at least ``2 * depth`` NULs (rank 0)."""
    m = len(inverse)
    rank = inverse.reshape(-1).astype(np.int64)
    levels = [rank]  # levels[a]: dense rank of each position's first 2**a characters
    h = 1
    order = np.argsort(rank, kind="stable")
    while h < depth:
        check()
        cur = levels[-1]
        shifted = np.zeros(m, dtype=np.int64)
        shifted[:m - h] = cur[h:]
        key = cur * (int(cur.max()) + 1) + shifted
        del shifted
        order = np.argsort(key, kind="stable")
        sk = key[order]
        del key
        new = np.empty(m, dtype=bool)
        new[0] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
        del sk
        nxt = np.empty(m, dtype=np.int64)
        nxt[order] = np.cumsum(new) - 1
        del new
        levels.append(nxt)
        h *= 2
        check()
    check()
    # Common prefix of neighbours in the sorted order, by binary lifting over the ranks.
    x, y = order[:-1], order[1:]
    lcp = np.zeros(m - 1, dtype=np.int64)
    for a in range(len(levels) - 1, -1, -1):
        step = 1 << a
        lv = levels[a]
        xi, yi = np.minimum(x + lcp, m - 1), np.minimum(y + lcp, m - 1)
        lcp += np.where(lv[xi] == lv[yi], step, 0)
        check()
    out = np.zeros(m, dtype=np.int32)
    out[1:] = np.minimum(lcp, 1 << 30)
    return order, out


class Seeds:
    """The outcome of :func:`seed`: the chosen substrings (best first) and every word's lattice."""

    def __init__(self, pieces: list[str], scores: list[int], starts: np.ndarray, ends: np.ndarray,
                 ids: np.ndarray, per_word: np.ndarray):
        self.pieces = pieces  # the multi-character seeds, best first
        self.scores = scores  # frequency × length of each
        self.starts, self.ends, self.ids, self.per_word = starts, ends, ids, per_word


def seed(words: Sequence[str], counts: Sequence[int], max_len: int, room: int, char_pid: Callable[[str], int],
         first_pid: int, script_class: Callable[[str], str], check: Callable[[], None]) -> Seeds:
    """Count, choose and place the multi-character seeds (see the module docstring).

    ``room``: how many to keep, best first (frequency × length, ties by the string); their ids are
    ``first_pid``, ``first_pid + 1``, …; ``char_pid(ch)`` is each character's id in the lattice
    (−1: none). Lattice edges come back in (word, start, end) order: local start, end, piece id, and
    the number of edges of each word.
    """
    depth = max_len + 1  # a substring and the character after it
    codes, word_first = word_codes(words, pad=2 * depth + 2)
    if len(codes) >= (1 << 31) - 1:
        raise WorkbenchError("Unigram training handles distinct words of up to 2**31 characters in all: "
                             "train on a sample (--sample-lines) or fewer files")
    check()
    distinct, inverse = np.unique(codes, return_inverse=True)
    check()
    vlen = valid_lengths(codes, max_len, script_class, check, (distinct, inverse))
    check()
    n_words = len(words)
    lens = np.fromiter(map(len, words), dtype=np.int64, count=n_words)
    word_of = np.repeat(np.arange(n_words, dtype=np.int64), lens + 1)
    word_of = np.append(word_of, np.full(len(codes) - len(word_of), n_words, dtype=np.int64))
    count_arr = np.append(np.asarray(counts, dtype=np.float64), 0.0)
    first_ext = np.append(word_first, len(codes))
    lens_ext = np.append(lens, 0)
    pos_all = np.arange(len(codes), dtype=np.int64)
    # the valid run from each position ends its word (an occurrence followed by the word's end)
    reaches_end = (pos_all + vlen == first_ext[word_of] + lens_ext[word_of]) & (vlen > 0)
    del pos_all
    is_char = codes != 0
    del codes
    char_ids = np.array([char_pid(chr(c)) for c in distinct.tolist()], dtype=np.int32)[inverse.reshape(-1)[is_char]]
    check()
    order, lcp = _prefix_sorted(inverse, depth, check)
    del inverse
    # Only positions where some substring of 2+ characters is valid take part.
    keep = vlen[order] >= 2
    idx = order[keep]
    rank_of = np.flatnonzero(keep)  # index in the full sorted order: the string order of groups
    lcp = _fold(lcp, keep)
    del order, keep
    level_idx: list[np.ndarray] = []  # per length L ≥ 2: positions holding a valid substring of L …
    level_gid: list[np.ndarray] = []  # … and its group
    cands: list[tuple[np.ndarray, ...]] = []  # per length: (length, count, rank, group, position)
    prev: _Level | None = None
    for length in range(2, depth + 1):
        check()
        v = vlen[idx]
        prev_gid = None
        if prev is not None:
            keep = v >= length - 1  # holds a valid substring of L, or its extension past the limit
            prev_gid = prev.gid
            if not keep.all():
                idx, rank_of, lcp, v, prev_gid = idx[keep], rank_of[keep], _fold(lcp, keep), v[keep], prev_gid[keep]
            del keep
        if not len(idx):
            break
        new = lcp < length
        gid = np.cumsum(new) - 1
        n_groups = int(gid[-1]) + 1
        first_entry = np.flatnonzero(new)
        del new
        w = weight_of(count_arr, word_of, idx)
        valid = v >= length
        occ = np.bincount(gid[valid], weights=w[valid], minlength=n_groups)
        at_end = (v == length) & reaches_end[idx]
        most = np.bincount(gid[at_end], weights=w[at_end], minlength=n_groups)
        if prev is not None and prev_gid is not None:
            if length > 2:
                parent = prev_gid[first_entry]
                # extensions that are valid substrings (their own counts) …
                big = occ >= 2
                np.maximum.at(prev.most, parent[big], occ[big])
                # … and those one character past a position's limit (a table of their own)
                past = (v == length - 1) & ~reaches_end[idx]
                ext = np.bincount(gid[past], weights=w[past], minlength=n_groups)
                big = ext >= 2
                np.maximum.at(prev.most, parent[big], ext[big])
            cands.append(prev.candidates())
        if length <= max_len and valid.any():
            level_idx.append(idx[valid].astype(np.int32))
            level_gid.append(gid[valid].astype(np.int32))
        prev = _Level(length, gid, occ, most, rank_of[first_entry], idx[first_entry])
    if prev is not None:
        cands.append(prev.candidates())
    del prev, idx, rank_of, lcp, reaches_end
    check()
    c_len, c_count, c_rank, c_gid, c_pos = (np.concatenate([c[k] for c in cands]) if cands else np.zeros(0, np.int64)
                                            for k in range(5))
    del cands
    score = c_count.astype(np.int64) * c_len
    chosen = np.lexsort((c_len, c_rank, -score))[:room]
    chosen_len, chosen_gid, chosen_pos = c_len[chosen], c_gid[chosen], c_pos[chosen]
    scores = score[chosen].tolist()
    del c_len, c_count, c_rank, c_gid, c_pos, score
    w_of = word_of[chosen_pos]
    local = chosen_pos - word_first[w_of]
    pieces = [words[w][s:s + n] for w, s, n in zip(w_of.tolist(), local.tolist(), chosen_len.tolist())]
    check()
    # Lattice edges: every character (its id) and every seed occurrence, in (word, start, end) order,
    # written straight into their slots: a position's edges are its character, then its seeds by
    # length (no sort, and int32 throughout).
    hit_pos: list[np.ndarray] = []
    hit_pid: list[np.ndarray] = []
    for k, (positions, groups) in enumerate(zip(level_idx, level_gid)):
        length = k + 2
        table = np.full(int(groups.max()) + 1 if len(groups) else 0, -1, dtype=np.int32)
        mine = np.flatnonzero(chosen_len == length)
        table[chosen_gid[mine]] = (first_pid + mine).astype(np.int32)
        pid = table[groups]
        hit = pid >= 0
        hit_pos.append(positions[hit])
        hit_pid.append(pid[hit])
        level_idx[k] = level_gid[k] = np.zeros(0, np.int32)  # freed as it goes
        check()
    del level_idx, level_gid, chosen_len, chosen_gid
    char_pos = np.flatnonzero(is_char).astype(np.int32)
    del is_char
    if (char_ids < 0).any():  # a character with no id has no edge (cannot happen in training)
        char_pos, char_ids = char_pos[char_ids >= 0], char_ids[char_ids >= 0]
    check()
    per_pos = np.zeros(len(word_of), dtype=np.int32)
    per_pos[char_pos] = 1
    for positions in hit_pos:
        per_pos[positions] += 1
    slot = np.cumsum(per_pos, dtype=np.int64)
    n_edges = int(slot[-1]) if len(slot) else 0
    per_word = np.add.reduceat(per_pos, word_first).astype(np.int64) if n_words else np.zeros(0, np.int64)
    slot -= per_pos  # each position's first slot
    del per_pos
    check()
    local = (np.arange(len(word_of), dtype=np.int64) - first_ext[word_of]).astype(np.int32)
    starts = np.empty(n_edges, dtype=np.int32)
    ends = np.empty(n_edges, dtype=np.int32)
    ids = np.empty(n_edges, dtype=np.int32)
    at = slot[char_pos]
    starts[at] = local[char_pos]
    ends[at] = starts[at] + 1
    ids[at] = char_ids
    slot[char_pos] += 1
    del char_pos, char_ids, at
    check()
    for length, (positions, pid) in enumerate(zip(hit_pos, hit_pid), start=2):
        at = slot[positions]
        starts[at] = local[positions]
        ends[at] = starts[at] + length
        ids[at] = pid
        slot[positions] += 1
        check()
    del hit_pos, hit_pid, slot, local
    if n_words and int(lens.max()) < (1 << 15) - 1:  # the lattice's own position type: no copy there
        starts, ends = starts.astype(np.int16), ends.astype(np.int16)
    return Seeds(pieces, scores, starts, ends, ids, per_word)


def weight_of(count_arr: np.ndarray, word_of: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The count of the word each position of ``idx`` is in."""
    return count_arr[word_of[idx]]


class _Level:
    """One length's groups: each kept position's group, the groups' weighted counts, their largest
    follower count (extension or word end: filled in by the next length), and each group's first
    sorted index and a position of it."""

    def __init__(self, length: int, gid: np.ndarray, occ: np.ndarray, most: np.ndarray, rank: np.ndarray,
                 position: np.ndarray):
        self.length, self.gid, self.occ, self.most, self.rank, self.position = length, gid, occ, most, rank, position

    def candidates(self) -> tuple[np.ndarray, ...]:
        """Seen twice or more and not always followed the same way: (length, count, rank, group, position)."""
        ok = np.flatnonzero((self.occ >= 2) & (self.most != self.occ))
        return (np.full(len(ok), self.length, dtype=np.int64), self.occ[ok], self.rank[ok].astype(np.int64),
                ok.astype(np.int64), self.position[ok].astype(np.int64))


def _fold(lcp: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The common prefixes of the kept entries with the kept entry before each: the minimum over the
    dropped ones between (0 for the first)."""
    kept = np.flatnonzero(keep)
    if not len(kept):
        return np.zeros(0, dtype=lcp.dtype)
    seg = np.empty(len(kept), dtype=np.int64)
    seg[0] = 0
    seg[1:] = kept[:-1] + 1
    out = np.minimum.reduceat(lcp[: kept[-1] + 1], seg)
    out[0] = 0
    return out
