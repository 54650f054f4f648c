/* The frequency-score merge loop of workbench.core.wordpiece.WordPieceTrainer in C (issue 24): an
 * optional accelerator of WordPieceTrainer._run_frequency, which stays the reference.
 *
 * It replays tokenizers' BpeTrainer priority queue with its quirks, as the pure loop does:
 *   - a queue entry is (count when pushed, pair, entry index) and owns the words it was pushed
 *     with: popping it merges the pair in those words only (tokenizers' Merge.pos);
 *   - a popped entry whose count is stale goes back in with the pair's current count, same words;
 *   - the merged pair's count is never reset (only the merge's count changes are applied);
 *   - after a merge, every pair that gained in some words is pushed with those words (ascending)
 *     when its count is positive.
 * The order is the pure heap's: most frequent first, then the smallest pair key (left << 21 |
 * right), then the oldest entry. Entry indices only grow, so entries pushed at the start (one per
 * pair) come before any later one, whatever order they were numbered in.
 *
 * Data: the words are the FlatWords store's own array('i') buffers (symbols, lengths), rewritten in
 * place (the trainer's store is current at every merge); pairs in an open-addressed table from the
 * 42-bit key to a slot (count); entries as int32 word lists; a binary heap of (count, pair, entry).
 *
 * Python drives the loop (QueueLoop.pop, QueueLoop.tied, QueueLoop.merge): the piece table, the
 * minimum frequency, the log, the events and the stop checks stay in core/wordpiece.py, so a
 * cancel is seen between merges as in the pure loop. A hypothesis test holds the two equal
 * (tests/core/test_wordpiece_native.py).
 *
 * Hostile use raises, never crashes (tests/core/test_wordpiece_native_hostile.py, the fixes review29
 * made to _bpe_merge.c ported): a loop whose __init__ did not finish, buffers that are not separate
 * writable array('i') (start, freqs: 8-byte signed or a sequence of ints), a list changed by an
 * item's __index__ while read, words outside the buffer, a corpus of 2**61 tokens or more (64-bit
 * counts could wrap), a length or start written from Python while the loop runs, a merge() that ran
 * out of memory half-way (the loop is retired). The pair table's hash is seeded per loop. The GIL is
 * held throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_merge_common.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define SHIFT_BITS 21
/* The corpus's tokens (sum of frequency * length over the words) must stay below this. A pair's
 * count is at most its first count plus its gains; the merged pair's count is never reset (the
 * quirk above), so gains add up over merges, but every gain is one side of a merge made, and the
 * merges made over the whole run are at most the tokens: every count stays below 3 * 2**61 < 2**63
 * (the extension is built with -fwrapv: a wrapped count would silently change the merges). Larger
 * corpora (huge frequencies) train on the pure loop, whose Python ints do not wrap (wordpiece.py run()). */
#define MAX_TOKENS ((int64_t)1 << 61)

/* A word list; one word is held inline (cap 0), without an allocation: most queue entries are one word. */
typedef struct {
    union {
        int32_t *w;
        int32_t one;
    } u;
    int32_t n, cap;
} WList;

static inline int32_t *wl_data(WList *l) { return l->cap ? l->u.w : &l->u.one; }

typedef struct {
    int64_t count;  /* the pair's count when pushed */
    uint32_t entry; /* whose words it merges */
    int32_t slot;   /* the pair's slot (its key: pkey[slot]) */
} HEntry;

typedef struct {
    int32_t slot;
    int64_t delta;
    WList grown; /* words in which the pair gained in this merge (ascending) */
} Touch;

typedef struct {
    PyObject_HEAD
    Py_buffer symbuf, lensbuf, startbuf, freqbuf;
    int have_sym, have_lens, have_startbuf, have_freqbuf;
    int32_t *sym;
    int32_t *lens;
    int64_t *start; /* the trainer's array('q') (startbuf) or a copy of a sequence */
    int64_t *freq;
    Py_ssize_t nwords, nsym;
    int ready;  /* __init__ finished: the other methods refuse until then (a bare __new__ object) */
    int broken; /* an error (out of memory) in the middle of a merge: the store is half rewritten */
    /* pairs */
    uint64_t *pkey;
    int64_t *pcount;
    int32_t *ptouch; /* index into touch[] during a merge, -1 otherwise */
    Py_ssize_t npairs, pcap;
    int32_t *htab;
    size_t hsize;
    uint64_t seed;
    /* entries */
    WList *entries;
    size_t nentries, ecap;
    /* heap */
    HEntry *heap;
    size_t hn, hcap;
    /* the popped entry (what merge() and tied() act on) */
    int have_popped;
    HEntry popped;
    /* per-merge scratch */
    Touch *touch;
    size_t ntouch, tcap;
    int32_t *pos;
    size_t poscap;
    size_t merges;
} QueueLoop;



static int rehash(QueueLoop *self, size_t size) {
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

/* The slot of pair ``key``, made (count 0) when there is none. Negative: error. */
static int32_t pair_slot(QueueLoop *self, uint64_t key) {
    size_t mask = self->hsize - 1;
    size_t h = hash64(key, self->seed, mask);
    for (;;) {
        int32_t s = self->htab[h];
        if (s < 0) break;
        if (self->pkey[s] == key) return s;
        h = (h + 1) & mask;
    }
    if (self->npairs >= INT32_MAX - 1) { PyErr_SetString(PyExc_OverflowError, "too many pairs"); return -2; }
    if (self->npairs >= self->pcap) {
        size_t cap = self->pcap ? (size_t)self->pcap * 2 : 1024;
        uint64_t *k = realloc(self->pkey, cap * sizeof(uint64_t));
        if (!k) { PyErr_NoMemory(); return -2; }
        self->pkey = k;
        int64_t *c = realloc(self->pcount, cap * sizeof(int64_t));
        if (!c) { PyErr_NoMemory(); return -2; }
        self->pcount = c;
        int32_t *t = realloc(self->ptouch, cap * sizeof(int32_t));
        if (!t) { PyErr_NoMemory(); return -2; }
        self->ptouch = t;
        self->pcap = (Py_ssize_t)cap;
    }
    int32_t s = (int32_t)self->npairs++;
    self->pkey[s] = key;
    self->pcount[s] = 0;
    self->ptouch[s] = -1;
    if ((size_t)self->npairs * 2 > self->hsize) {
        if (rehash(self, self->hsize * 2) < 0) return -2;
    } else {
        self->htab[h] = s;
    }
    return s;
}

/* Append word w unless it is already last. */
static int wlist_add(WList *l, int32_t w) {
    if (!l->cap) {
        if (!l->n) { l->u.one = w; l->n = 1; return 0; }
        if (l->u.one == w) return 0;
        int32_t *p = malloc(4 * sizeof(int32_t));
        if (!p) { PyErr_NoMemory(); return -1; }
        p[0] = l->u.one;
        p[1] = w;
        l->u.w = p;
        l->n = 2;
        l->cap = 4;
        return 0;
    }
    if (l->u.w[l->n - 1] == w) return 0;
    if (l->n == l->cap) {
        int32_t cap = l->cap < 1024 ? l->cap * 2 : l->cap + l->cap / 2;
        int32_t *p = realloc(l->u.w, (size_t)cap * sizeof(int32_t));
        if (!p) { PyErr_NoMemory(); return -1; }
        l->u.w = p;
        l->cap = cap;
    }
    l->u.w[l->n++] = w;
    return 0;
}

static void wlist_free(WList *l) {
    if (l->cap) free(l->u.w);
    l->u.w = NULL;
    l->n = l->cap = 0;
}

/* Exact size (the lists of queued entries live until popped): one word goes inline. */
static void wlist_shrink(WList *l) {
    if (!l->cap || l->cap == l->n) return;
    if (l->n <= 1) {
        int32_t *p = l->u.w;
        l->u.one = l->n ? p[0] : 0;
        free(p);
        l->cap = 0;
        return;
    }
    int32_t *p = realloc(l->u.w, (size_t)l->n * sizeof(int32_t));
    if (p) { l->u.w = p; l->cap = l->n; }
}

/* ---- heap: the smallest entry is the largest count, then the smallest pair, then the oldest entry ---- */
static inline int entry_less(const HEntry *x, const HEntry *y, const uint64_t *pkey) {
    if (x->count != y->count) return x->count > y->count;
    if (x->slot != y->slot) return pkey[x->slot] < pkey[y->slot];
    return x->entry < y->entry;
}

static void sift_down(HEntry *h, size_t n, size_t i, const uint64_t *pkey) {
    HEntry e = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_less(&h[c + 1], &h[c], pkey)) c++;
        if (!entry_less(&h[c], &e, pkey)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static int heap_push(QueueLoop *self, HEntry e) {
    if (grow((void **)&self->heap, &self->hcap, self->hn + 1, sizeof(HEntry)) < 0) return -1;
    size_t i = self->hn++;
    HEntry *h = self->heap;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!entry_less(&e, &h[p], self->pkey)) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
    return 0;
}

/* A new entry owning ``*l`` (which is emptied); its index, or -1. */
static int64_t new_entry(QueueLoop *self, WList *l) {
    if (self->nentries >= UINT32_MAX) { PyErr_SetString(PyExc_OverflowError, "too many queue entries"); return -1; }
    if (grow((void **)&self->entries, &self->ecap, self->nentries + 1, sizeof(WList)) < 0) return -1;
    wlist_shrink(l); /* no doubling's slack: entries live long */
    self->entries[self->nentries] = *l;
    l->u.w = NULL;
    l->n = l->cap = 0;
    return (int64_t)self->nentries++;
}

static void QueueLoop_dealloc(QueueLoop *self) {
    if (self->have_sym) PyBuffer_Release(&self->symbuf);
    if (self->have_lens) PyBuffer_Release(&self->lensbuf);
    if (self->have_startbuf) PyBuffer_Release(&self->startbuf);
    else free(self->start);
    if (self->have_freqbuf) PyBuffer_Release(&self->freqbuf);
    else free(self->freq);
    if (self->entries)
        for (size_t i = 0; i < self->nentries; i++) wlist_free(&self->entries[i]);
    if (self->touch)
        for (size_t i = 0; i < self->ntouch; i++) wlist_free(&self->touch[i].grown);
    free(self->pkey); free(self->pcount); free(self->ptouch);
    free(self->htab); free(self->entries); free(self->heap); free(self->touch); free(self->pos);
    Py_TYPE(self)->tp_free((PyObject *)self);
}


/* A buffer of native signed integers of ``size`` bytes: 'i' (or a 4-byte 'l') for 4, 'q' (or an
 * 8-byte 'l') for 8. Not unsigned, floats, other byte orders or bytes: they would be reinterpreted bits. */
static int signed_format(const Py_buffer *b, Py_ssize_t size) {
    const char *f = b->format ? b->format : "B";
    if (b->itemsize != size) return 0;
#if PY_LITTLE_ENDIAN
    if (*f == '@' || *f == '=' || *f == '<') f++;
#else
    if (*f == '@' || *f == '=' || *f == '>' || *f == '!') f++;
#endif
    if (!f[0] || f[1]) return 0;
    if (size == 4) return f[0] == 'i' || (f[0] == 'l' && sizeof(long) == 4);
    if (size == 8) return f[0] == 'q' || (f[0] == 'l' && sizeof(long) == 8);
    return 0;
}

/* Whether two buffers share bytes. */
static int overlap(const Py_buffer *x, const Py_buffer *y) {
    const char *a = (const char *)x->buf, *b = (const char *)y->buf;
    return x->len && y->len && a < b + y->len && b < a + x->len;
}

/* ``seq`` as int64 values: read in place when it is a buffer of 8-byte integers (the trainer's
 * array('q'), held until the loop goes), else copied from a sequence of ints. */
static int64_t *int64_view(PyObject *seq, Py_buffer *buf, int *have, Py_ssize_t *n_out, const char *what) {
    if (PyObject_CheckBuffer(seq)) {
        /* (anything else that is a buffer is read as a sequence of ints, below: its values, not its bits) */
        if (PyObject_GetBuffer(seq, buf, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return NULL;
        if (signed_format(buf, 8)) {
            *have = 1;
            *n_out = buf->len / 8;
            return (int64_t *)buf->buf;
        }
        PyBuffer_Release(buf);
    }
    return int64_list(seq, n_out, what);
}

/* QueueLoop(sym, lens, start, freqs) */
static int QueueLoop_init(QueueLoop *self, PyObject *args, PyObject *kwds) {
    PyObject *sym, *lens, *start, *freqs;
    static char *kwlist[] = {"sym", "lens", "start", "freqs", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO", kwlist, &sym, &lens, &start, &freqs)) return -1;
    if (self->have_sym || self->have_lens || self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "QueueLoop is set up once");
        return -1;
    }
    /* PyBUF_ND: C-contiguous, with its format (a memoryview refuses FORMAT without ND) */
    if (PyObject_GetBuffer(sym, &self->symbuf, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) return -1;
    self->have_sym = 1;
    if (PyObject_GetBuffer(lens, &self->lensbuf, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) return -1;
    self->have_lens = 1;
    if (!signed_format(&self->symbuf, 4) || !signed_format(&self->lensbuf, 4)) {
        PyErr_SetString(PyExc_TypeError, "sym and lens must be array('i') (signed 4-byte items)");
        return -1;
    }
    /* one buffer for both (or overlapping views): rewriting a word would rewrite lengths */
    if (overlap(&self->symbuf, &self->lensbuf)) {
        PyErr_SetString(PyExc_ValueError, "sym and lens must be two separate arrays");
        return -1;
    }
    self->sym = (int32_t *)self->symbuf.buf;
    self->lens = (int32_t *)self->lensbuf.buf;
    Py_ssize_t nsym = self->nsym = self->symbuf.len / 4;
    self->nwords = self->lensbuf.len / 4;
    Py_ssize_t n;
    if (!(self->start = int64_view(start, &self->startbuf, &self->have_startbuf, &n, "start must be a sequence")))
        return -1;
    if (n != self->nwords) { PyErr_SetString(PyExc_ValueError, "start and lens differ in length"); return -1; }
    if (!(self->freq = int64_view(freqs, &self->freqbuf, &self->have_freqbuf, &n, "freqs must be a sequence")))
        return -1;
    if (n != self->nwords) { PyErr_SetString(PyExc_ValueError, "freqs and lens differ in length"); return -1; }
    /* start and freqs read in place must not be the words' bytes either (merges rewrite those) */
    if ((self->have_startbuf && (overlap(&self->startbuf, &self->symbuf) || overlap(&self->startbuf, &self->lensbuf)))
        || (self->have_freqbuf && (overlap(&self->freqbuf, &self->symbuf) || overlap(&self->freqbuf, &self->lensbuf)))) {
        PyErr_SetString(PyExc_ValueError, "start and freqs must not share memory with sym or lens");
        return -1;
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
            if (v < 0 || v >= (1 << SHIFT_BITS)) {
                /* a pair key holds two ids of SHIFT_BITS bits each */
                PyErr_SetString(PyExc_OverflowError, "a symbol id is past what a pair key holds");
                return -1;
            }
        }
        if (f < 0) { PyErr_SetString(PyExc_ValueError, "a word frequency is negative"); return -1; }
        if (l && f > (MAX_TOKENS - 1 - tokens) / l) {
            PyErr_SetString(PyExc_OverflowError, "the corpus has 2**61 tokens or more (frequency * length): "
                                                 "too many for the C loop's 64-bit counts");
            return -1;
        }
        tokens += f * l;
    }
    {
        PyObject *name = PyUnicode_FromString("workbench.core._wordpiece_queue");
        Py_hash_t h = name ? PyObject_Hash(name) : -1;
        Py_XDECREF(name);
        if (h == -1) return -1;
        self->seed = ((uint64_t)h * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)(uintptr_t)self;
    }
#if defined(__GLIBC__)
    /* What setting up freed (the table of strings, the count stage's batches) goes back to the
     * system before the loop's own arrays are made (the trainer's peak is in the loop). */
    malloc_trim(0);
#endif
    self->hsize = 1 << 16;
    if (rehash(self, self->hsize) < 0) return -1;
    /* The index: every adjacent pair of every word, words in order (each list ascending, each word once). */
    for (Py_ssize_t w = 0; w < self->nwords; w++) {
        const int32_t *s = self->sym + self->start[w];
        int32_t l = self->lens[w];
        int64_t f = self->freq[w];
        for (int32_t i = 0; i + 1 < l; i++) {
            uint64_t key = ((uint64_t)s[i] << SHIFT_BITS) | (uint64_t)s[i + 1];
            int32_t slot = pair_slot(self, key);
            if (slot < 0) return -1;
            self->pcount[slot] += f;
            if ((size_t)slot >= self->nentries) { /* entry i is pair slot i's word list */
                if (grow((void **)&self->entries, &self->ecap, (size_t)slot + 1, sizeof(WList)) < 0) return -1;
                self->entries[slot].u.w = NULL;
                self->entries[slot].n = self->entries[slot].cap = 0;
                self->nentries = (size_t)slot + 1;
            }
            if (wlist_add(&self->entries[slot], (int32_t)w) < 0) return -1;
        }
    }
    for (size_t i = 0; i < self->nentries; i++) wlist_shrink(&self->entries[i]); /* they live until popped */
    if (grow((void **)&self->heap, &self->hcap, (size_t)self->npairs + 1, sizeof(HEntry)) < 0) return -1;
    for (Py_ssize_t i = 0; i < self->npairs; i++) {
        HEntry e = {self->pcount[i], (uint32_t)i, (int32_t)i};
        self->heap[self->hn++] = e;
    }
    for (size_t i = self->hn / 2; i-- > 0;) sift_down(self->heap, self->hn, i, self->pkey);
    self->ready = 1;
    return 0;
}

/* The methods' guard: set up, and not left half-way by an error inside merge(). */
static int usable(QueueLoop *self) {
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "QueueLoop not set up (its __init__ did not succeed)");
        return 0;
    }
    if (self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "QueueLoop unusable: an earlier merge() failed half-way");
        return 0;
    }
    return 1;
}

/* Whether word w still lies inside sym (the store's arrays are Python objects: a length or start
 * written from Python while the loop runs must not make it read outside them). */
static inline int word_inside(const QueueLoop *self, int32_t w) {
    int64_t s = self->start[w], n = self->lens[w];
    return s >= 0 && n >= 0 && s <= self->nsym && n <= self->nsym - s;
}

/* pop() -> (left, right, count) of the next current entry, taken off the queue; None: the queue is empty. */
static PyObject *QueueLoop_pop(QueueLoop *self, PyObject *Py_UNUSED(ignored)) {
    if (!usable(self)) return NULL;
    if (self->have_popped) {
        PyErr_SetString(PyExc_RuntimeError, "pop() again before merge(): the popped entry would be lost");
        return NULL;
    }
    while (self->hn) {
        HEntry e = self->heap[0];
        int64_t c = self->pcount[e.slot];
        if (c != e.count) { /* stale: back in with the pair's count, same words */
            e.count = c;
            self->heap[0] = e;
            sift_down(self->heap, self->hn, 0, self->pkey);
            continue;
        }
        self->hn--;
        if (self->hn) {
            self->heap[0] = self->heap[self->hn];
            sift_down(self->heap, self->hn, 0, self->pkey);
        }
        self->popped = e;
        self->have_popped = 1;
        uint64_t pair = self->pkey[e.slot];
        return Py_BuildValue("(llL)", (long)(pair >> SHIFT_BITS), (long)(pair & ((1u << SHIFT_BITS) - 1)),
                             (long long)c);
    }
    Py_RETURN_NONE;
}

static int holds(const QueueLoop *self, int32_t w, int32_t a, int32_t b) {
    if (!word_inside(self, w)) return 0; /* (a store written from Python: "not found") */
    const int32_t *s = self->sym + self->start[w];
    int32_t n = self->lens[w];
    for (int32_t i = 0; i + 1 < n; i++)
        if (s[i] == a && s[i + 1] == b) return 1;
    return 0;
}


/* The words of entry ``k`` that hold (a, b) now, sorted, into ``*out`` (n in ``*n``). */
static int live_words(QueueLoop *self, uint32_t k, int32_t a, int32_t b, int32_t **out, size_t *cap, size_t *n) {
    WList *l = &self->entries[k];
    const int32_t *ws = wl_data(l);
    *n = 0;
    for (int32_t j = 0; j < l->n; j++) {
        if (holds(self, ws[j], a, b)) {
            if (grow((void **)out, cap, *n + 1, sizeof(int32_t)) < 0) return -1;
            (*out)[(*n)++] = ws[j];
        }
    }
    qsort(*out, *n, sizeof(int32_t), cmp_i32);
    return 0;
}

/* tied() -> whether the popped entry ties with other queued entries (same count and pair) that would
 * merge other words: which one tokenizers pops first depends on its hash maps' seeds (see
 * WordPieceTrainer._check_tie, which this is). */
static PyObject *QueueLoop_tied(QueueLoop *self, PyObject *Py_UNUSED(ignored)) {
    if (!usable(self)) return NULL;
    if (!self->have_popped) { PyErr_SetString(PyExc_RuntimeError, "tied() must follow pop()"); return NULL; }
    HEntry e = self->popped;
    if (!self->hn || self->heap[0].count != e.count || self->heap[0].slot != e.slot) Py_RETURN_FALSE;
    uint64_t pair = self->pkey[e.slot];
    int32_t a = (int32_t)(pair >> SHIFT_BITS), b = (int32_t)(pair & ((1u << SHIFT_BITS) - 1));
    /* the equal keys form a subtree at the heap's root */
    size_t *todo = NULL, ntodo = 0, todocap = 0;
    uint32_t *tied = NULL;
    size_t ntied = 0, tiedcap = 0;
    int32_t *first = NULL, *other = NULL;
    size_t firstcap = 0, othercap = 0, nfirst = 0, nother = 0;
    int result = 0, failed = 0;
    if (grow((void **)&tied, &tiedcap, 1, sizeof(uint32_t)) < 0) goto fail;
    tied[ntied++] = e.entry;
    if (grow((void **)&todo, &todocap, 1, sizeof(size_t)) < 0) goto fail;
    todo[ntodo++] = 0;
    while (ntodo) {
        size_t i = todo[--ntodo];
        if (i < self->hn && self->heap[i].count == e.count && self->heap[i].slot == e.slot) {
            if (grow((void **)&tied, &tiedcap, ntied + 1, sizeof(uint32_t)) < 0) goto fail;
            tied[ntied++] = self->heap[i].entry;
            if (grow((void **)&todo, &todocap, ntodo + 2, sizeof(size_t)) < 0) goto fail;
            todo[ntodo++] = 2 * i + 1;
            todo[ntodo++] = 2 * i + 2;
        }
    }
    /* two different non-empty word sets: tied */
    int have_first = 0;
    for (size_t t = 0; t < ntied && !result; t++) {
        int32_t **buf = have_first ? &other : &first;
        size_t *cap = have_first ? &othercap : &firstcap;
        size_t *n = have_first ? &nother : &nfirst;
        if (live_words(self, tied[t], a, b, buf, cap, n) < 0) goto fail;
        if (!*n) continue;
        if (!have_first) { have_first = 1; continue; }
        if (nother != nfirst || memcmp(first, other, nfirst * sizeof(int32_t)) != 0) result = 1;
    }
    goto done;
fail:
    failed = 1;
done:
    free(todo); free(tied); free(first); free(other);
    if (failed) return NULL;
    return PyBool_FromLong(result);
}

static inline int add_delta(QueueLoop *self, uint64_t key, int64_t d, int32_t w, int gained) {
    int32_t s = pair_slot(self, key);
    if (s < 0) return -1;
    int32_t t = self->ptouch[s];
    if (t < 0) {
        if (grow((void **)&self->touch, &self->tcap, self->ntouch + 1, sizeof(Touch)) < 0) return -1;
        t = (int32_t)self->ntouch++;
        self->ptouch[s] = t;
        Touch *x = &self->touch[t];
        x->slot = s;
        x->delta = 0;
        x->grown.u.w = NULL;
        x->grown.n = x->grown.cap = 0;
    }
    Touch *x = &self->touch[t];
    x->delta += d;
    if (gained && wlist_add(&x->grown, w) < 0) return -1;
    return 0;
}

static void drop_touched(QueueLoop *self) {
    for (size_t t = 0; t < self->ntouch; t++) {
        self->ptouch[self->touch[t].slot] = -1;
        wlist_free(&self->touch[t].grown);
    }
    self->ntouch = 0;
}

/* merge(new) -> weighted merges made: the popped entry's pair becomes ``new`` in the entry's words
 * that hold it (left to right, not overlapping); counts change, and the pairs that gained are queued
 * with the words they gained in. The merged pair's own count is not reset. */
static PyObject *QueueLoop_merge(QueueLoop *self, PyObject *args) {
    int nw;
    if (!PyArg_ParseTuple(args, "i", &nw)) return NULL;
    if (!usable(self)) return NULL;
    if (!self->have_popped) { PyErr_SetString(PyExc_RuntimeError, "merge() must follow pop()"); return NULL; }
    if (nw < 0 || nw >= (1 << SHIFT_BITS)) { PyErr_SetString(PyExc_ValueError, "new id out of range"); return NULL; }
    HEntry e = self->popped;
    self->have_popped = 0;
    uint64_t pair = self->pkey[e.slot];
    int32_t a = (int32_t)(pair >> SHIFT_BITS), b = (int32_t)(pair & ((1u << SHIFT_BITS) - 1));
    WList list = self->entries[e.entry];
    self->entries[e.entry].u.w = NULL;
    self->entries[e.entry].n = self->entries[e.entry].cap = 0;
    const int32_t *ws = wl_data(&list);
    int64_t made = 0;
    uint64_t S = (uint64_t)1 << SHIFT_BITS;
    for (int32_t k = 0; k < list.n; k++) {
        int32_t w = ws[k];
        if (!word_inside(self, w)) {
            PyErr_SetString(PyExc_RuntimeError, "the word store changed under the queue loop (a length or start)");
            goto fail;
        }
        int32_t *s = self->sym + self->start[w];
        int32_t n = self->lens[w];
        int64_t f = self->freq[w];
        size_t np = 0;
        for (int32_t i = 0; i + 1 < n; i++) {
            if (s[i] == a && s[i + 1] == b) {
                if (grow((void **)&self->pos, &self->poscap, np + 1, sizeof(int32_t)) < 0) goto fail;
                self->pos[np++] = i;
                i++;
            }
        }
        if (!np) continue;
        int32_t last_end = -1;
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
        made += (int64_t)np * f;
    }
    wlist_free(&list);
    for (size_t t = 0; t < self->ntouch; t++) self->pcount[self->touch[t].slot] += self->touch[t].delta;
    for (size_t t = 0; t < self->ntouch; t++) {
        Touch *x = &self->touch[t];
        self->ptouch[x->slot] = -1;
        if (!x->grown.n) continue;
        int64_t c = self->pcount[x->slot];
        if (c <= 0) { wlist_free(&x->grown); continue; }
        int64_t k = new_entry(self, &x->grown);
        if (k < 0) goto fail_after;
        HEntry h = {c, (uint32_t)k, x->slot};
        if (heap_push(self, h) < 0) goto fail_after;
    }
    self->ntouch = 0;
#if defined(__GLIBC__)
    /* Every 4,096 merges the freed lists and word-list copies go back to the system (~1 ms each):
     * measured on 3.9 MB, the trainer's peak 53-56 MB without, 52.5-53 MB with. */
    if ((++self->merges & 4095) == 0) malloc_trim(0);
#endif
    return PyLong_FromLongLong(made);
fail:
    wlist_free(&list);
fail_after:
    self->broken = 1; /* some words are rewritten, their counts or entries not: no further merges */
    drop_touched(self);
    return NULL;
}

static PyObject *QueueLoop_queued(QueueLoop *self, PyObject *Py_UNUSED(ignored)) {
    if (!usable(self)) return NULL;
    return PyLong_FromSize_t(self->hn);
}

/* held() -> (pairs, queued entries, words listed in live entries, bytes allocated): what the loop holds. */
static PyObject *QueueLoop_held(QueueLoop *self, PyObject *Py_UNUSED(ignored)) {
    size_t words = 0, bytes = 0;
    for (size_t i = 0; i < self->nentries; i++) {
        words += (size_t)self->entries[i].n;
        bytes += (size_t)self->entries[i].cap * sizeof(int32_t) + (self->entries[i].cap ? 16 : 0);
    }
    bytes += (size_t)self->pcap * (sizeof(uint64_t) + sizeof(int64_t) + sizeof(int32_t)) + self->hsize * sizeof(int32_t)
             + self->ecap * sizeof(WList) + self->hcap * sizeof(HEntry) + self->tcap * sizeof(Touch)
             + (size_t)self->nwords * 2 * sizeof(int64_t);
    return Py_BuildValue("(nnnn)", self->npairs, (Py_ssize_t)self->hn, (Py_ssize_t)words, (Py_ssize_t)bytes);
}

static PyMethodDef QueueLoop_methods[] = {
    {"held", (PyCFunction)QueueLoop_held, METH_NOARGS,
     "held() -> (pairs, queued entries, words listed in live entries, bytes allocated)."},
    {"pop", (PyCFunction)QueueLoop_pop, METH_NOARGS,
     "pop() -> (left, right, count) of the next current queue entry, taken off; None: the queue is empty."},
    {"tied", (PyCFunction)QueueLoop_tied, METH_NOARGS,
     "tied() -> whether the popped entry ties with queued ones that hold other words (a seed-dependent pop)."},
    {"merge", (PyCFunction)QueueLoop_merge, METH_VARARGS,
     "merge(new) -> weighted merges made: apply the popped entry to its words."},
    {"queued", (PyCFunction)QueueLoop_queued, METH_NOARGS, "How many entries the queue holds."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject QueueLoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "workbench.core._wordpiece_queue.QueueLoop",
    .tp_basicsize = sizeof(QueueLoop),
    .tp_dealloc = (destructor)QueueLoop_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "WordPiece's frequency-score queue loop over a FlatWords store (see workbench.core.wordpiece).",
    .tp_methods = QueueLoop_methods,
    .tp_init = (initproc)QueueLoop_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_wordpiece_queue", "Optional C queue loop of workbench.core.wordpiece (issue 24).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wordpiece_queue(void) {
    if (PyType_Ready(&QueueLoopType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&QueueLoopType);
    if (PyModule_AddObject(m, "QueueLoop", (PyObject *)&QueueLoopType) < 0) {
        Py_DECREF(&QueueLoopType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
