/* What the two optional C loops of training share (_bpe_merge.c, _wordpiece_queue.c): array
 * growth, the seeded hash of their pair tables, an int32 comparison for qsort and the copying of a
 * sequence of Python ints. Static functions in a header: each extension is its own module, built
 * from its own .c file, with no shared library between them. */
#ifndef WORKBENCH_MERGE_COMMON_H
#define WORKBENCH_MERGE_COMMON_H

static int grow(void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *p = realloc(*ptr, n * elem);
    if (!p) { PyErr_NoMemory(); return -1; }
    *ptr = p;
    *cap = n;
    return 0;
}

/* The table's hash: a seeded mix. Unseeded, pair keys are known in advance, and a corpus built so
 * that thousands of its pairs land in a few neighbouring buckets makes every insert walk the whole
 * run (16,000 such pairs: 77 times the time of random ones; a million: minutes). The seed comes from
 * Python's string hash (random per process, fixed by PYTHONHASHSEED); the merges never depend on it. */
static inline size_t hash64(uint64_t k, uint64_t seed, size_t mask) {
    k ^= seed;
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ULL;
    k ^= k >> 29;
    return (size_t)k & mask;
}

static int cmp_i32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

static int64_t *int64_list(PyObject *seq, Py_ssize_t *n_out, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int64_t *out = (int64_t *)malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!out) { Py_DECREF(fast); PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* An item's __index__ may run Python code that changes the list: size and item are read
         * afresh each time (a saved items pointer would dangle), and the item is held while converted. */
        if (i >= PySequence_Fast_GET_SIZE(fast)) {
            PyErr_Format(PyExc_RuntimeError, "%s: the sequence changed size while being read", what);
            free(out); Py_DECREF(fast); return NULL;
        }
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        Py_INCREF(item);
        long long v = PyLong_AsLongLong(item);
        Py_DECREF(item);
        if (v == -1 && PyErr_Occurred()) { free(out); Py_DECREF(fast); return NULL; }
        out[i] = (int64_t)v;
    }
    if (n != PySequence_Fast_GET_SIZE(fast)) {
        PyErr_Format(PyExc_RuntimeError, "%s: the sequence changed size while being read", what);
        free(out); Py_DECREF(fast); return NULL;
    }
    Py_DECREF(fast);
    *n_out = n;
    return out;
}

#endif
