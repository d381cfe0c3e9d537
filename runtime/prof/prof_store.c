/*
 * prof_store.c — the sampler's sample store, docs/spec/profiler.md §(b.5): interned stacks (a hash
 * table over an address arena), samples appended with doubling growth up to a cap, and
 * every lost sample counted under exactly one reason. Used by the sampler thread only.
 */
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <stdlib.h>
#include <string.h>
#include "prof_own_text.h"

static uint64_t hash_stack(const uintptr_t *pcs, uint32_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= (uint64_t)pcs[i];
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    return h;
}

/* Grow `*p` (elements of `size` bytes, capacity `*cap`) to hold at least `need`. */
static bool grow(void **p, size_t *cap, size_t need, size_t size, size_t first) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : first;
    while (c < need) {
        if (c > SIZE_MAX / 2 / size) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * size);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static bool rehash(struct osp_prof_store *s, size_t cap) {
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < s->nstacks; i++) {
        const struct osp_prof_stack_ref *r = &s->stacks[i];
        size_t j = hash_stack(s->addrs + r->off, r->n) & (cap - 1);
        while (t[j]) j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(s->table);
    s->table = t;
    s->table_cap = cap;
    return true;
}

int64_t osp_prof__store_intern(struct osp_prof_store *s, const uintptr_t *pcs, uint32_t n,
                               bool truncated) {
    if (n == 0) return -1;
    /* The profiler's own frames between the leaf and the root -- the preload library's
     * thread-start trampoline under every thread it starts, its pthread_create,
     * sigaction or dlclose wrapper under a call the program made -- are not the
     * program's: the stack is kept as it would be unprofiled (the return address less
     * one names the call; a leaf in the profiler's code is the caller's business). */
    uintptr_t kept[OSP_PROF_MAX_FRAMES];
    if (n <= OSP_PROF_MAX_FRAMES) {
        uint32_t m = 1;
        for (uint32_t i = 1; i < n; i++)
            if (!osp_prof__own_pc(pcs[i] - 1)) kept[m++] = pcs[i];
        if (m < n) {
            kept[0] = pcs[0];
            pcs = kept;
            n = m;
        }
    }
    if (s->table_cap == 0 && !rehash(s, 1024)) return -1;
    /* Keep the load factor at most 1/2; if the table cannot grow, it still works until
     * it is nearly full, after which new stacks are refused (the caller counts `alloc`). */
    if ((s->nstacks + 1) * 2 > s->table_cap && !rehash(s, s->table_cap * 2) &&
        s->nstacks + 2 > s->table_cap)
        return -1;
    uint64_t h = hash_stack(pcs, n);
    size_t mask = s->table_cap - 1;
    size_t j = h & mask;
    while (s->table[j]) {
        struct osp_prof_stack_ref *r = &s->stacks[s->table[j] - 1];
        if (r->n == n && memcmp(s->addrs + r->off, pcs, n * sizeof *pcs) == 0) {
            if (truncated) r->truncated = 1;
            return (int64_t)(s->table[j] - 1);
        }
        j = (j + 1) & mask;
    }
    if (s->nstacks >= UINT32_MAX - 1) return -1;
    if (!grow((void **)&s->stacks, &s->stacks_cap, s->nstacks + 1, sizeof *s->stacks, 256))
        return -1;
    if (!grow((void **)&s->addrs, &s->addrs_cap, s->naddrs + n, sizeof *s->addrs, 4096)) return -1;
    memcpy(s->addrs + s->naddrs, pcs, n * sizeof *pcs);
    struct osp_prof_stack_ref *r = &s->stacks[s->nstacks];
    r->off = s->naddrs;
    r->n = n;
    r->truncated = truncated ? 1 : 0;
    s->naddrs += n;
    s->table[j] = (uint32_t)s->nstacks + 1;
    s->nstacks++;
    return (int64_t)(s->nstacks - 1);
}

bool osp_prof__store_add(struct osp_prof_store *s, uint64_t t_rel_ns, uint32_t row, uint32_t stack,
                         uint32_t state, uint64_t weight_ns) {
    size_t limit = s->samples_limit ? s->samples_limit : (size_t)OSP_PROF_SAMPLES_LIMIT;
    if (s->nsamples >= limit) {
        s->dropped[OSP_DROP_STORE_FULL]++;
        return false;
    }
    if (s->nsamples == s->samples_cap) {
        size_t c = s->samples_cap ? s->samples_cap * 2 : 4096;
        if (c > limit) c = limit;
        void *q = realloc(s->samples, c * sizeof *s->samples);
        if (!q) {
            s->dropped[OSP_DROP_ALLOC]++;
            return false;
        }
        s->samples = q;
        s->samples_cap = c;
    }
    struct osp_prof_sample *x = &s->samples[s->nsamples++];
    x->t_rel_ns = t_rel_ns;
    x->weight_ns = weight_ns;
    x->row = row;
    x->stack = stack;
    x->state = state;
    return true;
}

bool osp_prof__store_record(struct osp_prof_store *s, uint64_t t_rel_ns, uint32_t row,
                            const uintptr_t *pcs, uint32_t n, bool truncated, uint32_t state,
                            uint64_t weight_ns) {
    size_t limit = s->samples_limit ? s->samples_limit : (size_t)OSP_PROF_SAMPLES_LIMIT;
    if (s->nsamples >= limit) { /* do not grow the stack table for a sample we drop */
        s->dropped[OSP_DROP_STORE_FULL]++;
        return false;
    }
    int64_t k = osp_prof__store_intern(s, pcs, n, truncated);
    if (k < 0) {
        s->dropped[OSP_DROP_ALLOC]++;
        return false;
    }
    return osp_prof__store_add(s, t_rel_ns, row, (uint32_t)k, state, weight_ns);
}

static int cmp_sample(const void *a, const void *b) {
    const struct osp_prof_sample *x = a, *y = b;
    if (x->t_rel_ns != y->t_rel_ns) return x->t_rel_ns < y->t_rel_ns ? -1 : 1;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    if (x->state != y->state) return x->state < y->state ? -1 : 1;
    if (x->stack != y->stack) return x->stack < y->stack ? -1 : 1;
    return 0;
}

void osp_prof__store_sort(struct osp_prof_store *s) {
    /* Samples arrive almost in order (an on-CPU sample is recorded when its answer is
     * drained, a tick later); skip the sort when they already are. */
    size_t i = 1;
    while (i < s->nsamples && cmp_sample(&s->samples[i - 1], &s->samples[i]) <= 0) i++;
    if (i < s->nsamples) qsort(s->samples, s->nsamples, sizeof *s->samples, cmp_sample);
}

void osp_prof__store_free(struct osp_prof_store *s) {
    size_t limit = s->samples_limit;
    free(s->samples);
    free(s->stacks);
    free(s->addrs);
    free(s->table);
    memset(s, 0, sizeof *s);
    s->samples_limit = limit;
}

#endif /* OSP_PROF_SAMPLER */
