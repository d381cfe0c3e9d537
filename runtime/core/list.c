/*
 * Immutable lists (docs/spec/language.md §9.4): a list is a view (offset, length) of a shared
 * backing array of boxed words. Views never change; a backing array only grows at its
 * high-water mark `used` and at its low-water mark `front`, each claimed with a
 * compare-and-swap, so the one list that ends exactly at `used` may append in place, the one
 * that starts exactly at `front` may prepend in place, and every other list copies.
 *
 * Room to grow. A copy made by an append leaves about the list's length free after it, one
 * made by a prepend about as much before it, so building a list by repeated appends or
 * prepends (recursion over `[h, ...t]` that rebuilds the list) is amortised O(1) per element.
 * A backing remembers which ends its copies grew at (`grows`) and its copies keep room at
 * those ends too, so appends and prepends interleaved on the newest list stay amortised O(1).
 *
 * Release. A backing also remembers the one view it was made for (`sole`) until another view
 * of it appears. Every function here that returns a list returns a view object nobody else
 * holds (or a shared empty view), so when generated code knows that nothing will read a view
 * again (codegen/codegen_own.c) it calls osp_list_release, which gives a large backing whose
 * only view that was back to the collector at once: the next list of that size reuses memory
 * that is still in the cache, and the collector runs less often.
 */
#include "rt_internal.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

typedef struct osp_backing {
    _Atomic int64_t used;  /* slots [front, used) are written and owned by some view */
    _Atomic int64_t front; /* slots below it were never written */
    int64_t cap;
    int32_t scalar; /* 1: the words are never pointers (ints, floats, bools) */
    int32_t grows;  /* GROW_BACK | GROW_FRONT: the ends a copy of it leaves room at */
    /* The one view of these words, when no other view of them was ever made (else NULL).
     * Accessed atomically (relaxed): views of one backing may be made on several threads. */
    struct osp_list *sole;
    osp_word w[];
} osp_backing;

struct osp_list {
    osp_backing *b; /* NULL for an empty list (or the scalar empty backing below) */
    int64_t off;
    int64_t len;
};

_Static_assert(offsetof(osp_list, b) == OSP_LIST_BACKING_OFFSET, "view layout (osprey_rt.h)");
_Static_assert(offsetof(osp_list, off) == OSP_LIST_START_OFFSET, "view layout (osprey_rt.h)");
_Static_assert(offsetof(osp_list, len) == OSP_LIST_LENGTH_OFFSET, "view layout (osprey_rt.h)");
_Static_assert(sizeof(osp_list) == OSP_LIST_VIEW_BYTES, "view layout (osprey_rt.h)");
_Static_assert(offsetof(osp_backing, w) == OSP_BACKING_WORDS_OFFSET,
               "backing layout (osprey_rt.h)");

/*
 * Empty lists are shared, never written: views never change, and an empty backing of
 * capacity 0 is never claimed. The scalar one carries the "no pointers" mark of
 * osp_list_new_scalar to the first backing an append or prepend makes.
 */
static osp_backing scalar_empty_backing = {0, 0, 0, 1, 0, NULL};
static osp_list empty_view = {NULL, 0, 0};
static osp_list scalar_empty_view = {&scalar_empty_backing, 0, 0};

/* Backings at least this large that hold no pointers are allocated pointer-free (neither
 * cleared nor scanned by the collector); smaller ones come from the per-thread free lists
 * of osp_gc_alloc, which serve objects up to this size faster. */
enum { OSP_PTRFREE_MIN_BYTES = 512 };

/* Backings smaller than this are left to the collector when released: they come from the
 * per-thread free lists, which serve them faster than an explicit free would. */
enum { OSP_RELEASE_MIN_BYTES = 512 };

/* osp_backing.grows */
enum { GROW_BACK = 1, GROW_FRONT = 2 };

static bool is_scalar(const osp_list *xs) {
    return xs->b != NULL && xs->b->scalar;
}

static osp_backing *backing_new(int64_t cap, bool scalar) {
    if (cap < 4) cap = 4;
    if ((uint64_t)cap > (SIZE_MAX - sizeof(osp_backing)) / sizeof(osp_word)) osp_fatal_oom();
    size_t bytes = sizeof(osp_backing) + (size_t)cap * sizeof(osp_word);
    /* Pointer-free memory is not cleared: slots at or past `used` are never read. */
    osp_backing *b = bytes >= OSP_RELEASE_MIN_BYTES
                         ? osp_gc_reuse(bytes, scalar && bytes >= OSP_PTRFREE_MIN_BYTES)
                         : osp_gc_alloc(bytes);
    b->cap = cap;
    b->scalar = scalar;
    b->grows = 0;
    b->sole = NULL; /* pointer-free memory is not cleared */
    atomic_store_explicit(&b->used, 0, memory_order_relaxed);
    atomic_store_explicit(&b->front, 0, memory_order_relaxed);
    return b;
}

/* A new view of `b`'s words [off, off + len) (a shared empty view when len == 0). */
static osp_list *view(osp_backing *b, int64_t off, int64_t len) {
    if (len == 0) return b != NULL && b->scalar ? &scalar_empty_view : &empty_view;
    osp_list *l = osp_gc_alloc(sizeof *l);
    l->b = b;
    l->off = off;
    l->len = len;
    return l;
}

/* Another view of an existing backing: it has more than one view from now on. */
static osp_list *shared_view(osp_backing *b, int64_t off, int64_t len) {
    if (b != NULL && __atomic_load_n(&b->sole, __ATOMIC_RELAXED) != NULL)
        __atomic_store_n(&b->sole, NULL, __ATOMIC_RELAXED);
    return view(b, off, len);
}

/* The first view of a new backing `b` (its words [off, off + len) written, len > 0). */
static osp_list *first_view(osp_backing *b, int64_t off, int64_t len) {
    atomic_store_explicit(&b->used, off + len, memory_order_relaxed);
    atomic_store_explicit(&b->front, off, memory_order_relaxed);
    osp_list *l = view(b, off, len);
    __atomic_store_n(&b->sole, l, __ATOMIC_RELAXED);
    return l;
}

static const osp_word *elems(const osp_list *xs) {
    return xs->b ? xs->b->w + xs->off : NULL;
}

/* Copies of at least this many words are placed 32-byte co-aligned with their source. */
enum { OSP_COALIGN_MIN_WORDS = 64 };

/*
 * A fresh backing holding `n` words from `a` then `m` from `c`, with room for `before` more
 * words before them and `after` more after them; `grows` goes to the backing.
 *
 * The longer copy is placed so that its destination and its source are equal modulo 32
 * bytes: the view then starts 0 to 3 slots after the room before it (the slots in between
 * are never used, unless a prepend claims them). Large backings start at a page boundary,
 * so without this a prepend copies its source to an address 8 bytes further modulo 4096,
 * and each load of the copy is taken for a possible read of the store just before it (4K
 * aliasing): such a copy of 16 KB took about 15 times as long as a co-aligned one on x86-64.
 */
static osp_list *fresh(const osp_word *a, int64_t n, const osp_word *c, int64_t m, int64_t before,
                       int64_t after, int grows, bool scalar) {
    int64_t len = n + m;
    if (len == 0) return scalar ? &scalar_empty_view : &empty_view;
    bool big = (n > m ? n : m) >= OSP_COALIGN_MIN_WORDS;
    if (before > INT64_MAX / 4 || after > INT64_MAX / 4 || len > INT64_MAX / 4) osp_fatal_oom();
    osp_backing *b = backing_new(before + len + after + (big ? 3 : 0), scalar);
    b->grows = grows;
    int64_t off = before;
    if (big) {
        /* the slot where the longer copy's source would land co-aligned */
        uintptr_t src = (uintptr_t)(n >= m ? a : c),
                  dst = (uintptr_t)(b->w + before + (n >= m ? 0 : n));
        off += (int64_t)(((src - dst) & 31u) / sizeof(osp_word));
    }
    if (n) memcpy(b->w + off, a, (size_t)n * sizeof(osp_word));
    if (m) memcpy(b->w + off + n, c, (size_t)m * sizeof(osp_word));
    return first_view(b, off, len);
}

osp_list *osp_list_new(int64_t n, const osp_word *e) {
    if (n <= 0) return &empty_view;
    return fresh(e, n, NULL, 0, 0, 0, 0, false);
}

osp_list *osp_list_new_scalar(int64_t n, const osp_word *e) {
    if (n <= 0) return &scalar_empty_view;
    return fresh(e, n, NULL, 0, 0, 0, 0, true);
}

int64_t osp_list_length(const osp_list *xs) {
    return xs ? xs->len : 0;
}

osp_word osp_list_at(const osp_list *xs, int64_t i) {
    return xs->b->w[xs->off + i];
}

osp_rres osp_list_get(const osp_list *xs, int64_t i) {
    if (xs == NULL || i < 0 || i >= xs->len)
        return (osp_rres){OSP_RESULT_ERROR, (osp_word)(uintptr_t)"index out of bounds"};
    return (osp_rres){OSP_RESULT_SUCCESS, xs->b->w[xs->off + i]};
}

const osp_word *osp_list_words(const osp_list *xs) {
    return xs == NULL || xs->len == 0 ? NULL : xs->b->w + xs->off;
}

osp_list *osp_list_drop(const osp_list *xs, int64_t k) {
    if (k <= 0) return (osp_list *)xs;
    if (k >= xs->len) return view(xs->b, 0, 0);
    return shared_view(xs->b, xs->off + k, xs->len - k);
}

/* Claim the slot just past `xs` in its backing, if `xs` ends at the high-water mark. */
static bool claim_next(const osp_list *xs) {
    osp_backing *b = xs->b;
    if (b == NULL) return false;
    int64_t end = xs->off + xs->len;
    if (end >= b->cap) return false;
    int64_t expect = end;
    return atomic_compare_exchange_strong_explicit(&b->used, &expect, end + 1, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

/* Claim the slot just before `xs` in its backing, if `xs` starts at the low-water mark
 * (the mirror image of claim_next; an empty view starts at slot 0 and claims nothing). */
static bool claim_prev(const osp_list *xs) {
    osp_backing *b = xs->b;
    if (b == NULL) return false;
    int64_t start = xs->off;
    if (start <= 0) return false;
    int64_t expect = start;
    return atomic_compare_exchange_strong_explicit(&b->front, &expect, start - 1,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

/* The ends a copy of `xs` keeps room at, besides the one it is made to grow at. */
static int inherited_growth(const osp_list *xs) {
    return xs->b != NULL ? xs->b->grows : 0;
}

osp_list *osp_list_append(const osp_list *xs, osp_word x) {
    if (claim_next(xs)) {
        xs->b->w[xs->off + xs->len] = x;
        return shared_view(xs->b, xs->off, xs->len + 1);
    }
    /* Copy with room to grow: repeated appends to the newest list stay amortised O(1). */
    int grows = GROW_BACK | inherited_growth(xs);
    int64_t room = xs->len + 4;
    return fresh(elems(xs), xs->len, &x, 1, grows & GROW_FRONT ? room : 0, room, grows,
                 is_scalar(xs));
}

osp_list *osp_list_prepend(const osp_list *xs, osp_word x) {
    if (claim_prev(xs)) {
        xs->b->w[xs->off - 1] = x;
        return shared_view(xs->b, xs->off - 1, xs->len + 1);
    }
    /* Copy with room to grow before it: repeated prepends to the newest list (a list rebuilt
     * by recursion) stay amortised O(1). */
    int grows = GROW_FRONT | inherited_growth(xs);
    int64_t room = xs->len + 4;
    return fresh(&x, 1, elems(xs), xs->len, room, grows & GROW_BACK ? room : 0, grows,
                 is_scalar(xs));
}

osp_list *osp_list_concat(const osp_list *xs, const osp_list *ys) {
    /* A new view even when one side is empty: the result is never an argument (see Release) */
    if (ys->len == 0) return xs->len == 0 ? (osp_list *)xs : shared_view(xs->b, xs->off, xs->len);
    if (xs->len == 0) return shared_view(ys->b, ys->off, ys->len);
    osp_backing *b = xs->b;
    int64_t end = xs->off + xs->len;
    if (end + ys->len <= b->cap) {
        int64_t expect = end;
        if (atomic_compare_exchange_strong_explicit(&b->used, &expect, end + ys->len,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            memcpy(b->w + end, elems(ys), (size_t)ys->len * sizeof(osp_word));
            return shared_view(b, xs->off, xs->len + ys->len);
        }
    }
    /* Little headroom: an append to the result that finds no room copies with room to grow
     * (osp_list_append), so appends stay amortised O(1) without every concatenation paying
     * for, and clearing, twice its size. But when `xs` is the newest list of a backing that
     * a concatenation already had to copy to grow at the back (`acc + [x]` in a loop),
     * leave room as an append does, so repeated concatenations stay amortised O(1) too
     * instead of copying the whole list every few elements. */
    int grows = 0;
    int64_t after = 4;
    if (atomic_load_explicit(&b->used, memory_order_relaxed) == end) {
        grows = GROW_BACK | (b->grows & GROW_FRONT);
        if (b->grows & GROW_BACK) after = xs->len + ys->len + 4;
    }
    return fresh(elems(xs), xs->len, elems(ys), ys->len, 0, after, grows,
                 is_scalar(xs) || is_scalar(ys));
}

osp_list *osp_list_reverse(const osp_list *xs) {
    if (xs->len == 0) return (osp_list *)xs;
    int64_t n = xs->len; /* in a local: the stores below cannot change it, so the loop
                          * vectorises instead of reloading it per word */
    osp_backing *b = backing_new(n, is_scalar(xs));
    const osp_word *e = elems(xs);
    osp_word *w = b->w;
    for (int64_t i = 0; i < n; i++) w[i] = e[n - 1 - i];
    return first_view(b, 0, n);
}

void osp_list_release(osp_list *xs) {
    osp_backing *b = xs ? xs->b : NULL;
    if (b == NULL || __atomic_load_n(&b->sole, __ATOMIC_RELAXED) != xs) return;
    if ((size_t)b->cap * sizeof(osp_word) + sizeof *b < OSP_RELEASE_MIN_BYTES) return;
    /* Empty the view first: a second release of it, or a read that should never happen, then
     * finds an empty list instead of freed memory. */
    xs->b = NULL;
    xs->off = 0;
    xs->len = 0;
    osp_gc_free(b);
}

bool osp_list_contains(const osp_list *xs, osp_word x, int64_t kind) {
    const osp_word *e = elems(xs);
    int64_t n = xs->len;
    /* One loop per kind, chosen once. */
    switch (kind) {
    case OSP_EQ_STRING:
        for (int64_t i = 0; i < n; i++)
            if (osp_str_cmp((const char *)(uintptr_t)e[i], (const char *)(uintptr_t)x) == 0)
                return true;
        return false;
    case OSP_EQ_FLOAT: {
        double b;
        memcpy(&b, &x, sizeof b);
        for (int64_t i = 0; i < n; i++) {
            double a;
            memcpy(&a, &e[i], sizeof a);
            if (a == b) return true;
        }
        return false;
    }
    default: {
        /* Eight words per test, compared two at a time in vector registers (the compiler's
         * generic vectors: SSE2 on x86-64, scalar code where there are none), one branch per
         * block. */
        typedef int64_t word2 __attribute__((vector_size(16)));
        const word2 want = {(int64_t)x, (int64_t)x};
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            word2 a, b, c, d;
            memcpy(&a, e + i, sizeof a);
            memcpy(&b, e + i + 2, sizeof b);
            memcpy(&c, e + i + 4, sizeof c);
            memcpy(&d, e + i + 6, sizeof d);
            word2 m = (a == want) | (b == want) | (c == want) | (d == want);
            if (m[0] | m[1]) return true;
        }
        for (; i < n; i++)
            if (e[i] == x) return true;
        return false;
    }
    }
}
