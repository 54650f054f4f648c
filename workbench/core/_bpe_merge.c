/* The merge loop of workbench.core.bpe.BpeTrainer in C (issue 24): an optional accelerator.
 *
 * Same algorithm and data as the pure trainer's flat loop (core/bpe.py, _run_flat), in machine
 * words instead of Python objects:
 *   - the words: the FlatWords store's own array('i') buffers (symbols, lengths), rewritten in place,
 *     so the trainer's store is current at every merge, as in the pure loop;
 *   - the pairs: an open-addressed table from the 42-bit pair key (left << 21 | right) to a pair
 *     slot; each slot holds the pair's summed frequency (0: not counted) and the words it occurs in
 *     (a growable int32 list, its smallest word in front; stale entries allowed, as in the pure loop);
 *   - the best pair: a lazy binary heap of (count, tie key, pair) entries; an entry's count is an
 *     upper bound and its key a lower bound, made exact before the pair may win (_pick_best).
 *
 * The merges are the pure trainer's, bit for bit: the pick is the pair of largest count, then
 * smallest tie key (first-seen: word index * 2**32 + unit offset of its first occurrence; hf:
 * rank(left) * 2**21 + rank(right)), both unique per pair; a merge makes the same matches (left to
 * right, not overlapping) and the same count changes. A hypothesis test holds the two equal.
 *
 * Python drives the loop (MergeLoop.pop_best, MergeLoop.merge), so the piece table, the log, the
 * events and the stop checks stay in core/bpe.py. Left out: extensions (refuse, refit) and the
 * trainers that subclass BpeTrainer keep the pure loops.
 *
 * Hostile use raises, never crashes (tests/core/test_bpe_native_hostile.py): a loop whose __init__
 * did not finish, buffers that are not two separate writable array('i'), words outside the buffer,
 * a corpus of 2**62 tokens or more (64-bit counts would wrap), merge() out of turn, a length written
 * into the store from Python while the loop runs. The GIL is held throughout (training runs in its
 * own process; the longest call measured: __init__ over 1.5 million words, about half a second).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_merge_common.h"

#define SHIFT_BITS 21
#define POS_BITS 32
/* The corpus's tokens (sum of frequency * length over the words) must stay below this: every count,
 * count change and token total of the loop is at most that sum, so int64 arithmetic cannot wrap
 * (the extension is built with -fwrapv: a wrapped count would silently change the merges). Larger
 * corpora (huge frequencies) train on the pure loops, which count in Python ints (bpe.py run()). */
#define MAX_TOKENS ((int64_t)1 << 62)

typedef struct {
    int32_t *w;
    int32_t n, cap;
} WList;

typedef struct {
    uint64_t count; /* current count when pushed */
    uint64_t key;   /* tie key (lower bound for first-seen) */
    uint64_t pair;  /* pair key */
    int32_t slot;
} Entry;

typedef struct {
    PyObject_HEAD
    Py_buffer symbuf, lensbuf;
    int have_sym, have_lens;
    int32_t *sym;
    int32_t *lens;
    int64_t *start;
    int64_t *freq;
    Py_ssize_t nwords, nsym;
    int ready;  /* __init__ finished: the other methods refuse until then (a bare __new__ object) */
    int broken; /* an error (out of memory) in the middle of a merge: the store is half rewritten */
    /* pairs */
    uint64_t *pkey;
    int64_t *pcount;
    WList *pw;
    int64_t *pdelta;
    uint8_t *ptouched;
    Py_ssize_t npairs, pcap;
    int32_t *htab;
    size_t hsize; /* power of two */
    uint64_t seed;
    /* heap */
    Entry *heap;
    size_t hn, hcap;
    /* unit lengths and Hugging Face ranks */
    int64_t *ulen;
    Py_ssize_t nulen;
    size_t ulencap;
    int64_t *rank;
    Py_ssize_t nrank;
    int first_seen;
    /* per-merge scratch */
    int32_t *touched;
    size_t ntouched, tcap;
    int32_t *wstamp;
    int32_t stamp;
    int32_t *pos;
    size_t poscap;
    int32_t best_slot;
} MergeLoop;



static int rehash(MergeLoop *self, size_t size) {
    int32_t *t = (int32_t *)malloc(size * sizeof(int32_t));
    if (!t) { PyErr_NoMemory(); return -1; }
    memset(t, 0xff, size * sizeof(int32_t));
    size_t mask = size - 1;
    for (Py_ssize_t i = 0; i < self->npairs; i++) {
        size_t h = hash64(self->pkey[i], self->seed, mask);
        while (t[h] >= 0) h = (h + 1) & mask;
        t[h] = (int32_t)i;
    }
    free(self->htab);
    self->htab = t;
    self->hsize = size;
    return 0;
}

/* The slot of pair ``key``; with ``create``, a new slot (count 0, no words) when there is none. -1: none / error. */
static int32_t pair_slot(MergeLoop *self, uint64_t key, int create) {
    size_t mask = self->hsize - 1;
    size_t h = hash64(key, self->seed, mask);
    for (;;) {
        int32_t s = self->htab[h];
        if (s < 0) break;
        if (self->pkey[s] == key) return s;
        h = (h + 1) & mask;
    }
    if (!create) return -1;
    if (self->npairs >= INT32_MAX - 1) { PyErr_SetString(PyExc_OverflowError, "too many pairs"); return -2; }
    if (self->npairs >= self->pcap) {
        size_t cap = self->pcap ? (size_t)self->pcap * 2 : 1024;
        uint64_t *k = realloc(self->pkey, cap * sizeof(uint64_t));
        if (!k) { PyErr_NoMemory(); return -2; }
        self->pkey = k;
        int64_t *c = realloc(self->pcount, cap * sizeof(int64_t));
        if (!c) { PyErr_NoMemory(); return -2; }
        self->pcount = c;
        WList *w = realloc(self->pw, cap * sizeof(WList));
        if (!w) { PyErr_NoMemory(); return -2; }
        self->pw = w;
        int64_t *d = realloc(self->pdelta, cap * sizeof(int64_t));
        if (!d) { PyErr_NoMemory(); return -2; }
        self->pdelta = d;
        uint8_t *t = realloc(self->ptouched, cap);
        if (!t) { PyErr_NoMemory(); return -2; }
        self->ptouched = t;
        self->pcap = (Py_ssize_t)cap;
    }
    int32_t s = (int32_t)self->npairs++;
    self->pkey[s] = key;
    self->pcount[s] = 0;
    self->pw[s].w = NULL;
    self->pw[s].n = self->pw[s].cap = 0;
    self->pdelta[s] = 0;
    self->ptouched[s] = 0;
    if ((size_t)self->npairs * 2 > self->hsize) {
        if (rehash(self, self->hsize * 2) < 0) return -2;
    } else {
        self->htab[h] = s;
    }
    return s;
}

/* Add word w to a pair's list (not when it is already last); the smallest word stays in front. */
static int wlist_add(WList *l, int32_t w) {
    if (l->n && l->w[l->n - 1] == w) return 0;
    if (l->n == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 2;
        int32_t *p = realloc(l->w, (size_t)cap * sizeof(int32_t));
        if (!p) { PyErr_NoMemory(); return -1; }
        l->w = p;
        l->cap = cap;
    }
    l->w[l->n++] = w;
    if (l->n > 1 && w < l->w[0]) {
        l->w[l->n - 1] = l->w[0];
        l->w[0] = w;
    }
    return 0;
}

static void wlist_free(WList *l) {
    free(l->w);
    l->w = NULL;
    l->n = l->cap = 0;
}

/* ---- heap: the smallest entry is the largest count, then the smallest key, then the smallest pair ---- */
static inline int entry_less(const Entry *x, const Entry *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->key != y->key) return x->key < y->key;
    return x->pair < y->pair;
}

static void sift_down(Entry *h, size_t n, size_t i) {
    Entry e = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_less(&h[c + 1], &h[c])) c++;
        if (!entry_less(&h[c], &e)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static int heap_push(MergeLoop *self, Entry e) {
    if (grow((void **)&self->heap, &self->hcap, self->hn + 1, sizeof(Entry)) < 0) return -1;
    size_t i = self->hn++;
    Entry *h = self->heap;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!entry_less(&e, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
    return 0;
}

static void heap_pop(MergeLoop *self) {
    self->hn--;
    if (self->hn) {
        self->heap[0] = self->heap[self->hn];
        sift_down(self->heap, self->hn, 0);
    }
}

static void heap_replace(MergeLoop *self, Entry e) {
    self->heap[0] = e;
    sift_down(self->heap, self->hn, 0);
}

static inline int64_t rank_of(MergeLoop *self, int64_t id) {
    return id < self->nrank ? self->rank[id] : id;
}

static inline uint64_t tie_key(MergeLoop *self, int32_t s) {
    if (self->first_seen) /* (no word listed: 0, a lower bound like any other) */
        return self->pw[s].n ? (uint64_t)self->pw[s].w[0] << POS_BITS : 0;
    uint64_t p = self->pkey[s];
    return ((uint64_t)rank_of(self, (int64_t)(p >> SHIFT_BITS)) << SHIFT_BITS) |
           (uint64_t)rank_of(self, (int64_t)(p & ((1u << SHIFT_BITS) - 1)));
}

/* Unit offset of the first (a, b) in word w, or -1. */
static int64_t pair_offset(MergeLoop *self, int32_t w, int32_t a, int32_t b) {
    const int32_t *s = self->sym + self->start[w];
    int32_t n = self->lens[w];
    /* (the store's arrays are Python objects: a length or symbol written from Python while the
     * loop runs must not make it read outside them; such a word is "not found") */
    if (n < 0 || n > self->nsym - self->start[w]) return -1;
    int64_t off = 0;
    for (int32_t i = 0; i + 1 < n; i++) {
        if (s[i] == a && s[i + 1] == b) return off;
        if ((uint32_t)s[i] >= (uint64_t)self->nulen) return -1;
        off += self->ulen[s[i]];
    }
    return -1;
}


/* Exact first-seen key of the pair in slot s, or -1 when it occurs nowhere (_first_position_flat). */
static int64_t first_position(MergeLoop *self, int32_t s) {
    WList *l = &self->pw[s];
    if (!l->n) return -1;
    uint64_t p = self->pkey[s];
    int32_t a = (int32_t)(p >> SHIFT_BITS), b = (int32_t)(p & ((1u << SHIFT_BITS) - 1));
    int64_t found = pair_offset(self, l->w[0], a, b);
    if (found >= 0) return ((int64_t)l->w[0] << POS_BITS) + found;
    qsort(l->w, (size_t)l->n, sizeof(int32_t), cmp_i32);
    for (int32_t k = 0; k < l->n; k++) {
        int32_t w = l->w[k];
        found = pair_offset(self, w, a, b);
        if (found >= 0) {
            if (k) {
                memmove(l->w, l->w + k, (size_t)(l->n - k) * sizeof(int32_t));
                l->n -= k;
            }
            return ((int64_t)w << POS_BITS) + found;
        }
    }
    l->n = 0;
    return -1;
}

static void MergeLoop_dealloc(MergeLoop *self) {
    if (self->have_sym) PyBuffer_Release(&self->symbuf);
    if (self->have_lens) PyBuffer_Release(&self->lensbuf);
    if (self->pw) {
        for (Py_ssize_t i = 0; i < self->npairs; i++) free(self->pw[i].w);
    }
    free(self->start); free(self->freq); free(self->pkey); free(self->pcount); free(self->pw);
    free(self->pdelta); free(self->ptouched); free(self->htab); free(self->heap); free(self->ulen);
    free(self->rank); free(self->touched); free(self->wstamp); free(self->pos);
    Py_TYPE(self)->tp_free((PyObject *)self);
}


/* A buffer of native signed 32-bit ints: array('i'), a memoryview cast to 'i', numpy int32. Not
 * array('I') (unsigned), array('f') (4-byte floats), bytes, or a list: the loop writes symbol ids
 * into it, so anything else would be reinterpreted bits. */
static int int32_format(const Py_buffer *b) {
    const char *f = b->format ? b->format : "B";
    if (b->itemsize != 4) return 0;
#if PY_LITTLE_ENDIAN
    if (*f == '@' || *f == '=' || *f == '<') f++;
#else
    if (*f == '@' || *f == '=' || *f == '>' || *f == '!') f++;
#endif
    if (f[0] && !f[1] && (f[0] == 'i' || (f[0] == 'l' && sizeof(long) == 4))) return 1;
    return 0;
}

/* MergeLoop(sym, lens, start, freqs, unit_len, first_seen, hf_rank) */
static int MergeLoop_init(MergeLoop *self, PyObject *args, PyObject *kwds) {
    PyObject *sym, *lens, *start, *freqs, *unit_len, *hf_rank;
    int first_seen;
    static char *kwlist[] = {"sym", "lens", "start", "freqs", "unit_len", "first_seen", "hf_rank", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOpO", kwlist, &sym, &lens, &start, &freqs, &unit_len,
                                     &first_seen, &hf_rank))
        return -1;
    self->best_slot = -1;
    if (self->have_sym || self->have_lens) {
        PyErr_SetString(PyExc_RuntimeError, "MergeLoop is set up once");
        return -1;
    }
    /* PyBUF_ND: C-contiguous, with its format (a memoryview refuses FORMAT without ND) */
    if (PyObject_GetBuffer(sym, &self->symbuf, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) return -1;
    self->have_sym = 1;
    if (PyObject_GetBuffer(lens, &self->lensbuf, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) return -1;
    self->have_lens = 1;
    if (!int32_format(&self->symbuf) || !int32_format(&self->lensbuf)) {
        PyErr_SetString(PyExc_TypeError, "sym and lens must be array('i') (signed 4-byte items)");
        return -1;
    }
    self->sym = (int32_t *)self->symbuf.buf;
    self->lens = (int32_t *)self->lensbuf.buf;
    Py_ssize_t nsym = self->nsym = self->symbuf.len / 4;
    self->nwords = self->lensbuf.len / 4;
    {   /* one buffer for both (or overlapping views): rewriting a word would rewrite lengths */
        const char *s0 = (const char *)self->symbuf.buf, *l0 = (const char *)self->lensbuf.buf;
        if (self->symbuf.len && self->lensbuf.len && s0 < l0 + self->lensbuf.len && l0 < s0 + self->symbuf.len) {
            PyErr_SetString(PyExc_ValueError, "sym and lens must be two separate arrays");
            return -1;
        }
    }
    Py_ssize_t n;
    if (!(self->start = int64_list(start, &n, "start must be a sequence"))) return -1;
    if (n != self->nwords) { PyErr_SetString(PyExc_ValueError, "start and lens differ in length"); return -1; }
    if (!(self->freq = int64_list(freqs, &n, "freqs must be a sequence"))) return -1;
    if (n != self->nwords) { PyErr_SetString(PyExc_ValueError, "freqs and lens differ in length"); return -1; }
    if (!(self->ulen = int64_list(unit_len, &self->nulen, "unit_len must be a sequence"))) return -1;
    if (self->nulen > ((Py_ssize_t)1 << SHIFT_BITS)) {
        /* a pair key holds two ids of SHIFT_BITS bits each: larger vocabularies stay on the pure loop */
        PyErr_SetString(PyExc_OverflowError, "more units than a pair key holds");
        return -1;
    }
    self->ulencap = (size_t)(self->nulen ? self->nulen : 1);
    self->first_seen = first_seen;
    if (!(self->rank = int64_list(hf_rank, &self->nrank, "hf_rank must be a sequence"))) return -1;
    for (Py_ssize_t i = 0; i < self->nrank; i++) {
        if (self->rank[i] < 0 || self->rank[i] >= ((int64_t)1 << SHIFT_BITS)) {
            PyErr_SetString(PyExc_ValueError, "a Hugging Face rank is outside 0 .. 2**21 - 1");
            return -1;
        }
    }
    if (self->nwords >= INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "too many words"); return -1; }
    int64_t tokens = 0;
    for (Py_ssize_t w = 0; w < self->nwords; w++) {
        int64_t s = self->start[w], l = self->lens[w], f = self->freq[w];
        /* (s > nsym first: s + l could wrap around for a huge s) */
        if (s < 0 || l < 0 || s > nsym || l > nsym - s) {
            PyErr_SetString(PyExc_ValueError, "a word lies outside sym");
            return -1;
        }
        for (int64_t i = s; i < s + l; i++) {
            int32_t v = self->sym[i];
            if (v < 0 || v >= self->nulen) { PyErr_SetString(PyExc_ValueError, "a symbol has no unit length"); return -1; }
        }
        if (f < 0) { PyErr_SetString(PyExc_ValueError, "a word frequency is negative"); return -1; }
        if (l && f > (MAX_TOKENS - 1 - tokens) / l) {
            PyErr_SetString(PyExc_OverflowError, "the corpus has 2**62 tokens or more (frequency * length): "
                                                 "too many for the C loop's 64-bit counts");
            return -1;
        }
        tokens += f * l;
    }
    self->wstamp = (int32_t *)calloc((size_t)(self->nwords ? self->nwords : 1), sizeof(int32_t));
    if (!self->wstamp) { PyErr_NoMemory(); return -1; }
    {
        PyObject *name = PyUnicode_FromString("workbench.core._bpe_merge");
        Py_hash_t h = name ? PyObject_Hash(name) : -1;
        Py_XDECREF(name);
        if (h == -1) return -1;
        self->seed = ((uint64_t)h * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)(uintptr_t)self;
    }
    self->hsize = 1 << 16;
    if (rehash(self, self->hsize) < 0) return -1;
    /* The index: every adjacent pair of every word, words in order (so each list is ascending). */
    for (Py_ssize_t w = 0; w < self->nwords; w++) {
        const int32_t *s = self->sym + self->start[w];
        int32_t l = self->lens[w];
        int64_t f = self->freq[w];
        for (int32_t i = 0; i + 1 < l; i++) {
            uint64_t key = ((uint64_t)s[i] << SHIFT_BITS) | (uint64_t)s[i + 1];
            int32_t slot = pair_slot(self, key, 1);
            if (slot < 0) return -1;
            self->pcount[slot] += f;
            if (wlist_add(&self->pw[slot], (int32_t)w) < 0) return -1;
        }
    }
    if (grow((void **)&self->heap, &self->hcap, (size_t)self->npairs + 1, sizeof(Entry)) < 0) return -1;
    for (Py_ssize_t i = 0; i < self->npairs; i++) {
        if (self->pcount[i] <= 0) continue; /* words of frequency 0 */
        Entry e = {(uint64_t)self->pcount[i], tie_key(self, (int32_t)i), self->pkey[i], (int32_t)i};
        self->heap[self->hn++] = e;
    }
    for (size_t i = self->hn / 2; i-- > 0;) sift_down(self->heap, self->hn, i);
    self->best_slot = -1;
    self->ready = 1;
    return 0;
}

/* The methods' guard: set up, and not left half-way by an error inside merge(). */
static int usable(MergeLoop *self) {
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "MergeLoop not set up (its __init__ did not succeed)");
        return 0;
    }
    if (self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "MergeLoop unusable: an earlier merge() failed half-way");
        return 0;
    }
    return 1;
}

/* pop_best() -> (left, right, count) of the pair to merge next, taken out of the counts; None: no pair left. */
static PyObject *MergeLoop_pop_best(MergeLoop *self, PyObject *Py_UNUSED(ignored)) {
    if (!usable(self)) return NULL;
    while (self->hn) {
        Entry e = self->heap[0];
        int32_t s = e.slot;
        int64_t c = self->pcount[s];
        if (c <= 0) { heap_pop(self); continue; }
        if ((uint64_t)c != e.count) {
            if (self->first_seen) {
                if (!self->pw[s].n) { heap_pop(self); continue; }
                e.key = tie_key(self, s);
            }
            e.count = (uint64_t)c;
            heap_replace(self, e);
            continue;
        }
        if (self->first_seen) {
            int64_t true_key = first_position(self, s);
            if (true_key < 0) { heap_pop(self); continue; }
            if ((uint64_t)true_key != e.key) {
                e.key = (uint64_t)true_key;
                heap_replace(self, e);
                continue;
            }
        }
        heap_pop(self);
        self->pcount[s] = 0;
        self->best_slot = s;
        uint64_t p = self->pkey[s];
        return Py_BuildValue("(llL)", (long)(p >> SHIFT_BITS), (long)(p & ((1u << SHIFT_BITS) - 1)), (long long)c);
    }
    Py_RETURN_NONE;
}

static inline int add_delta(MergeLoop *self, uint64_t key, int64_t d, int32_t w, int add_word) {
    int32_t s = pair_slot(self, key, 1);
    if (s < 0) return -1;
    if (!self->ptouched[s]) {
        self->ptouched[s] = 1;
        self->pdelta[s] = 0;
        if (grow((void **)&self->touched, &self->tcap, self->ntouched + 1, sizeof(int32_t)) < 0) return -1;
        self->touched[self->ntouched++] = s;
    }
    self->pdelta[s] += d;
    if (add_word && wlist_add(&self->pw[s], w) < 0) return -1;
    return 0;
}

/* merge(left, right, new) -> tokens removed: the pair taken by pop_best becomes ``new`` in every word
 * holding it; the counts, the word lists and the heap follow. */
static PyObject *MergeLoop_merge(MergeLoop *self, PyObject *args) {
    int a, b, nw;
    if (!PyArg_ParseTuple(args, "iii", &a, &b, &nw)) return NULL;
    if (!usable(self)) return NULL;
    int32_t bs = self->best_slot;
    if (bs < 0 || self->pkey[bs] != (((uint64_t)a << SHIFT_BITS) | (uint64_t)b)) {
        PyErr_SetString(PyExc_RuntimeError, "merge() must follow pop_best() with its pair");
        return NULL;
    }
    if (a < 0 || b < 0 || a >= self->nulen || b >= self->nulen) { /* (a symbol written from Python) */
        PyErr_SetString(PyExc_ValueError, "the pair's ids have no unit length");
        return NULL;
    }
    if (nw < 0 || nw >= (1 << SHIFT_BITS) || nw > self->nulen) {
        PyErr_SetString(PyExc_ValueError, "new id out of range");
        return NULL;
    }
    self->best_slot = -1;
    if (nw == self->nulen) {
        if (grow((void **)&self->ulen, &self->ulencap, (size_t)self->nulen + 1, sizeof(int64_t)) < 0)
            return NULL;
        self->ulen[self->nulen++] = self->ulen[a] + self->ulen[b];
    }
    WList list = self->pw[bs]; /* where.pop(best) */
    self->pw[bs].w = NULL;
    self->pw[bs].n = self->pw[bs].cap = 0;
    self->ntouched = 0;
    if (++self->stamp == INT32_MAX) {
        memset(self->wstamp, 0, (size_t)self->nwords * sizeof(int32_t));
        self->stamp = 1;
    }
    int64_t removed = 0;
    uint64_t S = 1u << SHIFT_BITS;
    for (int32_t k = 0; k < list.n; k++) {
        int32_t w = list.w[k];
        if (self->wstamp[w] == self->stamp) continue; /* listed twice */
        self->wstamp[w] = self->stamp;
        int32_t *s = self->sym + self->start[w];
        int32_t n = self->lens[w];
        int64_t f = self->freq[w];
        if (n < 0 || n > self->nsym - self->start[w]) {
            PyErr_SetString(PyExc_RuntimeError, "the word store changed under the merge loop (a length)");
            goto fail;
        }
        /* the matches, left to right, not overlapping */
        size_t np = 0;
        int32_t last_end = -1;
        for (int32_t i = 0; i + 1 < n; i++) {
            if (s[i] == a && s[i + 1] == b && i >= last_end) {
                if (grow((void **)&self->pos, &self->poscap, np + 1, sizeof(int32_t)) < 0) goto fail;
                self->pos[np++] = i;
                last_end = i + 2;
                i++;
            }
        }
        if (!np) continue;
        last_end = -1;
        for (size_t j = 0; j < np; j++) {
            int32_t i = self->pos[j];
            if (i > 0) {
                uint64_t x = (i == last_end) ? (uint64_t)nw : (uint64_t)s[i - 1];
                if (add_delta(self, x * S + (uint64_t)a, -f, w, 0) < 0) goto fail;
                if (add_delta(self, x * S + (uint64_t)nw, f, w, 1) < 0) goto fail;
            }
            if (i + 2 < n) {
                uint64_t y = (uint64_t)s[i + 2];
                if (add_delta(self, (uint64_t)b * S + y, -f, w, 0) < 0) goto fail;
                if (add_delta(self, (uint64_t)nw * S + y, f, w, 1) < 0) goto fail;
            }
            last_end = i + 2;
        }
        /* rewrite the word in place */
        int32_t out = 0, j = 0;
        for (int32_t i = 0; i < n; i++) {
            if (j < (int32_t)np && i == self->pos[j]) {
                s[out++] = nw;
                i++;
                j++;
            } else {
                s[out++] = s[i];
            }
        }
        self->lens[w] = out;
        removed += (int64_t)np * f;
    }
    free(list.w);
    list.w = NULL;
    /* counts and heap */
    for (size_t t = 0; t < self->ntouched; t++) {
        int32_t q = self->touched[t];
        self->ptouched[q] = 0;
        if (q == bs) continue;
        int64_t d = self->pdelta[q];
        int64_t c = self->pcount[q] + d;
        if (c <= 0) {
            self->pcount[q] = 0;
            wlist_free(&self->pw[q]);
            continue;
        }
        self->pcount[q] = c;
        if (d > 0 || (self->first_seen && d == 0)) {
            Entry e = {(uint64_t)c, tie_key(self, q), self->pkey[q], q};
            if (heap_push(self, e) < 0) {
                self->broken = 1;
                for (; t < self->ntouched; t++) self->ptouched[self->touched[t]] = 0;
                self->ntouched = 0;
                return NULL;
            }
        }
    }
    self->ntouched = 0;
    return PyLong_FromLongLong(removed);
fail:
    self->broken = 1; /* some words are rewritten, their counts not: no further merges */
    free(list.w);
    for (size_t t = 0; t < self->ntouched; t++) self->ptouched[self->touched[t]] = 0;
    self->ntouched = 0;
    return NULL;
}

static PyObject *MergeLoop_pairs(MergeLoop *self, PyObject *Py_UNUSED(ignored)) {
    if (!usable(self)) return NULL;
    Py_ssize_t live = 0;
    for (Py_ssize_t i = 0; i < self->npairs; i++) live += self->pcount[i] > 0;
    return PyLong_FromSsize_t(live);
}

static PyMethodDef MergeLoop_methods[] = {
    {"pop_best", (PyCFunction)MergeLoop_pop_best, METH_NOARGS,
     "pop_best() -> (left, right, count) of the pair to merge next, removed from the counts; None: none left."},
    {"merge", (PyCFunction)MergeLoop_merge, METH_VARARGS,
     "merge(left, right, new) -> tokens removed: apply the pair pop_best() returned."},
    {"live_pairs", (PyCFunction)MergeLoop_pairs, METH_NOARGS, "How many pairs have a count."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MergeLoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "workbench.core._bpe_merge.MergeLoop",
    .tp_basicsize = sizeof(MergeLoop),
    .tp_dealloc = (destructor)MergeLoop_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The BPE merge loop over a FlatWords store (see workbench.core.bpe).",
    .tp_methods = MergeLoop_methods,
    .tp_init = (initproc)MergeLoop_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_bpe_merge", "Optional C merge loop of workbench.core.bpe (issue 24).", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bpe_merge(void) {
    if (PyType_Ready(&MergeLoopType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&MergeLoopType);
    if (PyModule_AddObject(m, "MergeLoop", (PyObject *)&MergeLoopType) < 0) {
        Py_DECREF(&MergeLoopType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
