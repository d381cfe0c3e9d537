/*
 * Lists (docs/spec/language.md §9.4), maps (§9.5), the string built-ins (§9.3), the numeric and
 * system built-ins (§9.2) and channels (§11.3): values, sharing, exact failure messages.
 */
#define _GNU_SOURCE
#define GC_THREADS 1 /* GC_pthread_create (gc.h, first reached through gc_inline.h) */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <gc/gc_inline.h>
#include <gc/gc_mark.h>

#include "fake_prof.h"
#include "rt_internal.h"
#include "support.h"

#define W(x)   ((osp_word)(x))
#define SW(s)  ((osp_word)(uintptr_t)(s))
#define STR(w) ((const char *)(uintptr_t)(w))

static void assert_list(const osp_list *l, int64_t n, const osp_word *want) {
    assert_int_equal(osp_list_length(l), n);
    for (int64_t i = 0; i < n; i++) assert_int_equal(osp_list_at(l, i), want[i]);
}

static void assert_err(osp_rres r, const char *msg) {
    assert_int_equal(r.tag, OSP_RESULT_ERROR);
    assert_string_equal(STR(r.word), msg);
}

static void assert_ok_str(osp_rres r, const char *s) {
    assert_int_equal(r.tag, OSP_RESULT_SUCCESS);
    assert_string_equal(STR(r.word), s);
}

static void assert_ok_int(osp_rres r, int64_t v) {
    assert_int_equal(r.tag, OSP_RESULT_SUCCESS);
    assert_int_equal((int64_t)r.word, v);
}

/* ---- lists ------------------------------------------------------------------------------ */

static void test_list_basics(void **state) {
    (void)state;
    osp_word e[3] = {10, 20, 30};
    osp_list *xs = osp_list_new(3, e);
    assert_list(xs, 3, e);
    assert_ok_int(osp_list_get(xs, 1), 20);
    assert_err(osp_list_get(xs, 3), "index out of bounds");
    assert_err(osp_list_get(xs, -1), "index out of bounds");
    osp_list *empty = osp_list_new(0, NULL);
    assert_int_equal(osp_list_length(empty), 0);
    assert_err(osp_list_get(empty, 0), "index out of bounds");

    osp_word r[3] = {30, 20, 10};
    assert_list(osp_list_reverse(xs), 3, r);
    osp_word p[4] = {5, 10, 20, 30};
    assert_list(osp_list_prepend(xs, 5), 4, p);
    osp_list *t = osp_list_drop(xs, 1);
    osp_word tail[2] = {20, 30};
    assert_list(t, 2, tail);
    assert_int_equal(osp_list_length(osp_list_drop(xs, 3)), 0);
    assert_list(xs, 3, e); /* nothing changed the original */
    assert_true(osp_list_contains(xs, 20, OSP_EQ_WORD));
    assert_false(osp_list_contains(xs, 25, OSP_EQ_WORD));
}

static void test_list_sharing_is_safe(void **state) {
    (void)state;
    osp_word e[2] = {1, 2};
    osp_list *base = osp_list_new(2, e);
    osp_list *a = osp_list_append(base, 3); /* may extend base's storage in place */
    osp_list *b = osp_list_append(base, 4); /* must not overwrite a's third element */
    osp_word wa[3] = {1, 2, 3}, wb[3] = {1, 2, 4};
    assert_list(a, 3, wa);
    assert_list(b, 3, wb);
    assert_list(base, 2, e);
    osp_list *c = osp_list_concat(a, b);
    osp_word wc[6] = {1, 2, 3, 1, 2, 4};
    assert_list(c, 6, wc);
    assert_list(a, 3, wa);
    osp_list *d = osp_list_concat(a, base);
    osp_word wd[5] = {1, 2, 3, 1, 2};
    assert_list(d, 5, wd);
    assert_list(c, 6, wc);
    /* A tail view appends by copying when it does not end at the high-water mark. */
    osp_list *t = osp_list_drop(a, 1);
    osp_list *t2 = osp_list_append(osp_list_drop(base, 1), 9);
    osp_word wt[2] = {2, 3}, wt2[2] = {2, 9};
    assert_list(t, 2, wt);
    assert_list(t2, 2, wt2);
    assert_list(a, 3, wa);
}

static void test_list_append_many(void **state) {
    (void)state;
    osp_list *l = osp_list_new(0, NULL);
    for (int64_t i = 0; i < 100000; i++) l = osp_list_append(l, W(i * 2));
    GC_gcollect();
    assert_int_equal(osp_list_length(l), 100000);
    for (int64_t i = 0; i < 100000; i += 997) assert_int_equal(osp_list_at(l, i), i * 2);
}

static void test_list_contains_kinds(void **state) {
    (void)state;
    char a[4] = "abc";
    osp_word e[2] = {SW("xyz"), SW(a)};
    osp_list *l = osp_list_new(2, e);
    assert_true(osp_list_contains(l, SW("abc"), OSP_EQ_STRING)); /* by content */
    assert_false(osp_list_contains(l, SW("ab"), OSP_EQ_STRING));
    double z = 0.0, nz = -0.0, n = NAN;
    osp_word fz, fnz, fn;
    memcpy(&fz, &z, 8);
    memcpy(&fnz, &nz, 8);
    memcpy(&fn, &n, 8);
    osp_word f[2] = {fz, fn};
    osp_list *fl = osp_list_new(2, f);
    assert_true(osp_list_contains(fl, fnz, OSP_EQ_FLOAT)); /* -0.0 == 0.0 */
    assert_false(osp_list_contains(fl, fn, OSP_EQ_FLOAT)); /* NaN never equal */
}

/* The collector's kind of the backing array behind a non-empty list (the view layout of
 * osprey_rt.h). */
static int backing_kind(const osp_list *l) {
    void *b;
    memcpy(&b, (const char *)l + OSP_LIST_BACKING_OFFSET, sizeof b);
    return GC_get_kind_and_size(b, NULL);
}

static void test_list_scalar_backings(void **state) {
    (void)state;
    /* Built by appends from the scalar empty list: the large backings are pointer-free. */
    osp_list *l = osp_list_new_scalar(0, NULL);
    assert_int_equal(osp_list_length(l), 0);
    for (int64_t i = 0; i < 10000; i++) l = osp_list_append(l, W(i * 3));
    assert_int_equal(backing_kind(l), GC_I_PTRFREE);
    osp_list *r = osp_list_reverse(l);
    osp_list *p = osp_list_prepend(r, W(-1));
    osp_list *c = osp_list_concat(p, l);
    assert_int_equal(backing_kind(r), GC_I_PTRFREE);
    assert_int_equal(backing_kind(p), GC_I_PTRFREE);
    assert_int_equal(backing_kind(c), GC_I_PTRFREE);
    GC_gcollect();
    assert_int_equal(osp_list_length(c), 20001);
    assert_int_equal(osp_list_at(c, 0), W(-1));
    for (int64_t i = 0; i < 10000; i += 7) {
        assert_int_equal(osp_list_at(c, 1 + i), W((9999 - i) * 3));
        assert_int_equal(osp_list_at(c, 10001 + i), W(i * 3));
    }
    /* The mark survives a list emptied by drop; a literal is scalar too. */
    osp_list *again = osp_list_drop(l, 10000);
    for (int64_t i = 0; i < 100; i++) again = osp_list_append(again, W(i));
    assert_int_equal(backing_kind(again), GC_I_PTRFREE);
    osp_word e[3] = {1, 2, 3};
    assert_list(osp_list_new_scalar(3, e), 3, e);
    /* A list that may hold pointers keeps scanned backings, however large. */
    osp_list *q = osp_list_new(0, NULL);
    for (int64_t i = 0; i < 10000; i++) q = osp_list_append(q, W(i));
    assert_int_equal(backing_kind(q), GC_I_NORMAL);
    assert_int_equal(backing_kind(osp_list_reverse(q)), GC_I_NORMAL);
}

static void test_list_contains_every_position(void **state) {
    (void)state;
    /* Word lists are searched eight at a time plus a scalar tail: every length and position
     * around those blocks, and absent values. */
    osp_word e[40];
    for (int n = 0; n <= 40; n++) {
        for (int i = 0; i < n; i++) e[i] = W(100 + i);
        osp_list *l = osp_list_new(n, e);
        for (int i = 0; i < n; i++) assert_true(osp_list_contains(l, W(100 + i), OSP_EQ_WORD));
        assert_false(osp_list_contains(l, W(99), OSP_EQ_WORD));
        assert_false(osp_list_contains(l, W(100 + n), OSP_EQ_WORD));
        if (n > 0) {
            /* a view that starts inside its backing */
            osp_list *t = osp_list_drop(l, 1);
            assert_false(osp_list_contains(t, W(100), OSP_EQ_WORD));
            if (n > 1) assert_true(osp_list_contains(t, W(100 + n - 1), OSP_EQ_WORD));
        }
    }
}

static void *backing_of(const osp_list *l) {
    void *b;
    memcpy(&b, (const char *)l + OSP_LIST_BACKING_OFFSET, sizeof b);
    return b;
}

/* The 0, 1, ..., n-1 list as a pointer-free (scalar) or a scanned list. */
static osp_list *iota(int64_t n, bool scalar) {
    osp_list *l = scalar ? osp_list_new_scalar(0, NULL) : osp_list_new(0, NULL);
    for (int64_t i = 0; i < n; i++) l = osp_list_append(l, W(i));
    return l;
}

/* osp_list_release frees a large backing only through the one view it was made for: never
 * one that another view shares, never a small or a shared empty one. */
static void test_list_release(void **state) {
    (void)state;
    for (int scalar = 0; scalar < 2; scalar++) {
        osp_list *base = iota(3000, scalar);
        /* the only view of a new backing: freed, and the view reads as empty */
        osp_list *r = osp_list_reverse(base);
        void *rb = backing_of(r);
        assert_non_null(GC_base(rb));
        osp_list_release(r);
        assert_int_equal(osp_list_length(r), 0);
        assert_null(backing_of(r));
        osp_list_release(r); /* twice: nothing */
        /* the next backing of that size reuses the memory (the thread's spare) */
        osp_list *r2 = osp_list_reverse(base);
        assert_ptr_equal(backing_of(r2), rb);
        assert_int_equal(osp_list_at(r2, 0), W(2999));
        assert_int_equal(osp_list_at(r2, 2999), W(0));
        /* a backing that another view shares stays: an in-place append, a drop, a concat
         * with an empty list (a new view, never the argument) */
        osp_list *grown1 = osp_list_append(r2, W(-1));    /* a copy with room to grow */
        osp_list *grown = osp_list_append(grown1, W(-2)); /* in place */
        assert_ptr_equal(backing_of(grown), backing_of(grown1));
        osp_list_release(grown1);
        assert_int_equal(osp_list_length(grown1), 3001);
        assert_int_equal(osp_list_at(grown, 3001), W(-2));
        osp_list *tail = osp_list_drop(grown, 1);
        osp_list_release(grown);
        assert_int_equal(osp_list_length(grown), 3002);
        assert_int_equal(osp_list_at(tail, 3000), W(-2));
        osp_list_release(tail); /* a view made by drop shares its backing: nothing */
        assert_int_equal(osp_list_at(grown, 0), W(2999));
        osp_list *c = osp_list_reverse(base);
        osp_list *same = osp_list_concat(c, osp_list_new(0, NULL));
        assert_ptr_not_equal(same, c);
        osp_list_release(c);
        assert_int_equal(osp_list_length(same), 3000);
        assert_int_equal(osp_list_at(same, 0), W(2999));
        osp_list *c2 = osp_list_reverse(base);
        osp_list *same2 = osp_list_concat(osp_list_new(0, NULL), c2);
        assert_ptr_not_equal(same2, c2);
        osp_list_release(c2);
        assert_int_equal(osp_list_at(same2, 2999), W(0));
        /* small backings and shared empty lists: nothing */
        osp_list *small = osp_list_reverse(iota(5, scalar));
        osp_list_release(small);
        assert_int_equal(osp_list_length(small), 5);
        osp_list_release(osp_list_new(0, NULL));
        osp_list_release(osp_list_new_scalar(0, NULL));
        osp_list_release(osp_list_drop(base, 3000));
        GC_gcollect();
        for (int64_t i = 0; i < 3000; i += 97) assert_int_equal(osp_list_at(base, i), W(i));
    }
}

/* Copies into a new backing are placed co-aligned with their source (slot 0 to 3): the
 * elements are right from every starting offset, and appends after them still work. */
static void test_list_copies_coaligned(void **state) {
    (void)state;
    osp_list *base = iota(500, true);
    for (int64_t k = 0; k < 9; k++) {
        osp_list *v = osp_list_drop(base, k);
        osp_list *p = osp_list_prepend(v, W(-1));
        osp_list *c = osp_list_concat(v, osp_list_drop(base, 490));
        osp_list *a = osp_list_append(osp_list_append(osp_list_drop(base, k), W(-2)), W(-3));
        assert_int_equal(osp_list_length(p), 501 - k);
        assert_int_equal(osp_list_at(p, 0), W(-1));
        assert_int_equal(osp_list_length(c), 510 - k);
        assert_int_equal(osp_list_length(a), 502 - k);
        for (int64_t i = 0; i < 500 - k; i++) {
            assert_int_equal(osp_list_at(p, 1 + i), W(k + i));
            assert_int_equal(osp_list_at(c, i), W(k + i));
            assert_int_equal(osp_list_at(a, i), W(k + i));
        }
        for (int64_t i = 0; i < 10; i++) assert_int_equal(osp_list_at(c, 500 - k + i), W(490 + i));
        assert_int_equal(osp_list_at(a, 500 - k), W(-2));
        assert_int_equal(osp_list_at(a, 501 - k), W(-3));
        /* an append to the prepended list lands right after it */
        osp_list *pa = osp_list_append(p, W(99));
        assert_int_equal(osp_list_at(pa, 501 - k), W(99));
        assert_int_equal(osp_list_length(p), 501 - k);
    }
}

/* Prepends copy with room before the list: the list that starts at its backing's low-water
 * mark prepends in place, every other view copies, and no view ever sees its words change. */
static void test_list_prepend_in_place(void **state) {
    (void)state;
    for (int scalar = 0; scalar < 2; scalar++) {
        osp_list *empty = scalar ? osp_list_new_scalar(0, NULL) : osp_list_new(0, NULL);
        osp_list *p1 = osp_list_prepend(empty, W(1)); /* a copy with room before it */
        osp_list *p2 = osp_list_prepend(p1, W(2));    /* in place */
        assert_ptr_equal(backing_of(p2), backing_of(p1));
        osp_word w1[1] = {1}, w2[2] = {2, 1};
        assert_list(p1, 1, w1);
        assert_list(p2, 2, w2);
        /* p1 no longer starts at the mark: its prepend copies, p2 keeps its 2 */
        osp_list *q = osp_list_prepend(p1, W(9));
        assert_ptr_not_equal(backing_of(q), backing_of(p1));
        osp_word wq[2] = {9, 1};
        assert_list(q, 2, wq);
        assert_list(p2, 2, w2);
        assert_list(p1, 1, w1);
        /* ... and p2 still prepends in place */
        osp_list *p3 = osp_list_prepend(p2, W(3));
        assert_ptr_equal(backing_of(p3), backing_of(p2));
        osp_word w3[3] = {3, 2, 1};
        assert_list(p3, 3, w3);
        /* a tail view (drop, `[h, ...t]`) starts past the mark: it copies */
        osp_list *t = osp_list_drop(p3, 1);
        osp_list *pt = osp_list_prepend(t, W(7));
        assert_ptr_not_equal(backing_of(pt), backing_of(p3));
        osp_word wt[3] = {7, 2, 1};
        assert_list(pt, 3, wt);
        assert_list(p3, 3, w3);
        assert_list(t, 2, w2);
        /* rebuilding a list by recursion: many prepends, few copies, right words */
        osp_list *l = empty;
        int copies = 0;
        for (int64_t i = 0; i < 100000; i++) {
            osp_list *n = osp_list_prepend(l, W(i));
            if (osp_list_length(l) == 0 || backing_of(n) != backing_of(l)) copies++;
            l = n;
        }
        assert_true(copies <= 20);
        assert_int_equal(backing_kind(l), scalar ? GC_I_PTRFREE : GC_I_NORMAL);
        GC_gcollect();
        assert_int_equal(osp_list_length(l), 100000);
        for (int64_t i = 0; i < 100000; i += 991) assert_int_equal(osp_list_at(l, i), W(99999 - i));
        /* a list made by a copy of 64 words or more (co-aligned) prepends in place too */
        osp_list *big = osp_list_prepend(iota(300, scalar), W(-1));
        osp_list *big2 = osp_list_prepend(big, W(-2));
        assert_ptr_equal(backing_of(big2), backing_of(big));
        assert_int_equal(osp_list_at(big2, 0), W(-2));
        assert_int_equal(osp_list_at(big2, 1), W(-1));
        assert_int_equal(osp_list_at(big2, 301), W(299));
        assert_int_equal(osp_list_at(big, 0), W(-1));
    }
}

/* Appends and prepends interleaved on the newest list claim both ends of one backing:
 * amortised O(1), and older views keep their words. */
static void test_list_append_prepend_interleaved(void **state) {
    (void)state;
    osp_list *l = osp_list_new_scalar(0, NULL);
    int copies = 0;
    enum { N = 20000 };
    for (int64_t i = 0; i < N; i++) {
        osp_list *n = i % 2 ? osp_list_append(l, W(i)) : osp_list_prepend(l, W(-i));
        if (osp_list_length(l) == 0 || backing_of(n) != backing_of(l)) copies++;
        l = n;
    }
    assert_true(copies <= 40);
    assert_int_equal(osp_list_length(l), N);
    /* [-(N-2), ..., -2, 0, 1, 3, ..., N-1] */
    for (int64_t k = 0; k < N / 2; k++) {
        assert_int_equal(osp_list_at(l, k), W(-(N - 2 - 2 * k)));
        assert_int_equal(osp_list_at(l, N / 2 + k), W(2 * k + 1));
    }
    /* both ends of an older view are taken: it copies at either end */
    osp_word e[3] = {1, 2, 3};
    osp_list *base = osp_list_new(3, e);
    osp_list *front = osp_list_prepend(base, W(0)); /* copy, room before */
    osp_list *both = osp_list_append(front, W(4));  /* copy, room at both ends */
    osp_list *a = osp_list_prepend(both, W(-1));    /* in place */
    osp_list *b = osp_list_append(both, W(5));      /* in place */
    assert_ptr_equal(backing_of(a), backing_of(both));
    assert_ptr_equal(backing_of(b), backing_of(both));
    osp_list *c = osp_list_prepend(b, W(-9)); /* b starts past the mark: copy */
    osp_list *d = osp_list_append(a, W(9));   /* a ends before the mark: copy */
    assert_ptr_not_equal(backing_of(c), backing_of(both));
    assert_ptr_not_equal(backing_of(d), backing_of(both));
    osp_word wboth[5] = {0, 1, 2, 3, 4}, wa[6] = {-1, 0, 1, 2, 3, 4}, wb[6] = {0, 1, 2, 3, 4, 5};
    osp_word wc[7] = {-9, 0, 1, 2, 3, 4, 5}, wd[7] = {-1, 0, 1, 2, 3, 4, 9};
    assert_list(both, 5, wboth);
    assert_list(a, 6, wa);
    assert_list(b, 6, wb);
    assert_list(c, 7, wc);
    assert_list(d, 7, wd);
    assert_list(base, 3, e);
    osp_word wf[4] = {0, 1, 2, 3};
    assert_list(front, 4, wf);
}

/* `acc + [x]` in a loop: the newest list of a backing that concatenation grew keeps room at
 * its back, so repeated concatenations copy O(log n) times (amortised O(1) per element, as
 * repeated appends), and older views keep their words. */
static void test_list_concat_many(void **state) {
    (void)state;
    for (int scalar = 0; scalar < 2; scalar++) {
        osp_list *l = scalar ? osp_list_new_scalar(0, NULL) : osp_list_new(0, NULL);
        osp_list *old = NULL;
        int copies = 0;
        enum { N = 20000 };
        for (int64_t i = 0; i < N; i++) {
            osp_word one = W(i);
            osp_list *n =
                osp_list_concat(l, scalar ? osp_list_new_scalar(1, &one) : osp_list_new(1, &one));
            if (osp_list_length(l) == 0 || backing_of(n) != backing_of(l)) copies++;
            if (i == N / 2) old = n;
            l = n;
        }
        assert_true(copies <= 40);
        assert_int_equal(osp_list_length(l), N);
        for (int64_t k = 0; k < N; k++) assert_int_equal(osp_list_at(l, k), W(k));
        assert_int_equal(osp_list_length(old), N / 2 + 1);
        /* an older view concatenates by copying; the newest is unchanged */
        osp_word x = W(-5);
        osp_list *o2 = osp_list_concat(old, osp_list_new(1, &x));
        assert_int_equal(osp_list_at(o2, N / 2 + 1), W(-5));
        assert_int_equal(osp_list_at(l, N / 2 + 1), W(N / 2 + 1));
        /* a one-off concatenation of two literals leaves little room */
        osp_word e[2] = {1, 2};
        osp_list *c = osp_list_concat(osp_list_new(2, e), osp_list_new(2, e));
        assert_int_equal(osp_list_length(c), 4);
    }
}

/* Threads racing to prepend to (and append to) one shared list: each gets its own words and
 * the shared list never changes. */
typedef struct prepend_racer {
    osp_heap_cache cache;
    const osp_list *shared;
    _Atomic int *go;
    int64_t id;
    osp_list *got[2000];
} prepend_racer;

static void *prepend_racer_main(void *arg) {
    prepend_racer *r = arg;
    osp_heap_thread_begin(&r->cache);
    while (!atomic_load(r->go)) {
    }
    for (int64_t i = 0; i < 2000; i++)
        r->got[i] = i % 2 ? osp_list_append(r->shared, W(r->id * 10000 + i))
                          : osp_list_prepend(r->shared, W(r->id * 10000 + i));
    osp_heap_thread_end();
    return NULL;
}

static void test_list_prepend_race(void **state) {
    (void)state;
    static _Atomic int go;
    /* Static, so the collector sees them: under ASan an array of locals lives on a fake
     * stack the collector does not scan, and the racers' lists would be freed and reused
     * once their thread has ended. */
    static osp_list *shared;
    static prepend_racer *r[2];
    for (int round = 0; round < 20; round++) {
        shared = osp_list_prepend(iota(100, true), W(-1)); /* room at the front */
        atomic_store(&go, 0);
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            r[i] = osp_gc_alloc(sizeof *r[i]);
            r[i]->shared = shared;
            r[i]->go = &go;
            r[i]->id = i + 1;
            assert_int_equal(GC_pthread_create(&th[i], NULL, prepend_racer_main, r[i]), 0);
        }
        atomic_store(&go, 1);
        for (int i = 0; i < 2; i++) assert_int_equal(GC_pthread_join(th[i], NULL), 0);
        int in_place = 0;
        for (int i = 0; i < 2; i++)
            for (int64_t k = 0; k < 2000; k++) {
                osp_list *l = r[i]->got[k];
                osp_word x = W(r[i]->id * 10000 + k);
                assert_int_equal(osp_list_length(l), 102);
                if (k % 2) {
                    assert_int_equal(osp_list_at(l, 0), W(-1));
                    assert_int_equal(osp_list_at(l, 101), x);
                } else {
                    assert_int_equal(osp_list_at(l, 0), x);
                    assert_int_equal(osp_list_at(l, 1), W(-1));
                    assert_int_equal(osp_list_at(l, 101), W(99));
                }
                if (backing_of(l) == backing_of(shared)) in_place++;
            }
        assert_true(in_place <= 2); /* one prepend and one append at most took a slot */
        assert_int_equal(osp_list_length(shared), 101);
        assert_int_equal(osp_list_at(shared, 0), W(-1));
        for (int64_t i = 0; i < 100; i++) assert_int_equal(osp_list_at(shared, 1 + i), W(i));
    }
}

/* ---- maps ------------------------------------------------------------------------------------ */

static void test_map_basics(void **state) {
    (void)state;
    osp_map *m = osp_map_empty();
    assert_int_equal(osp_map_length(m), 0);
    assert_err(osp_map_get(m, "x"), "mapGet: key not found");
    osp_map *a = osp_map_set(osp_map_set(m, "ann", 31), "bob", 27);
    assert_int_equal(osp_map_length(a), 2);
    assert_ok_int(osp_map_get(a, "bob"), 27);
    osp_map *b = osp_map_set(a, "bob", 28); /* replace */
    assert_int_equal(osp_map_length(b), 2);
    assert_ok_int(osp_map_get(b, "bob"), 28);
    assert_ok_int(osp_map_get(a, "bob"), 27); /* persistent */
    osp_map *c = osp_map_remove(b, "ann");
    assert_int_equal(osp_map_length(c), 1);
    assert_false(osp_map_contains(c, "ann"));
    assert_true(osp_map_contains(b, "ann"));
    assert_int_equal(osp_map_length(osp_map_remove(c, "nobody")), 1);
    osp_map *d =
        osp_map_merge(osp_map_set(m, "bob", 1), osp_map_set(osp_map_set(m, "cy", 2), "bob", 3));
    assert_int_equal(osp_map_length(d), 2);
    assert_ok_int(osp_map_get(d, "bob"), 3); /* the right side wins */
    osp_list *k = osp_map_keys(d), *v = osp_map_values(d);
    assert_int_equal(osp_list_length(k), 2);
    assert_string_equal(STR(osp_list_at(k, 0)), "cy"); /* c0: cy 17, bob 20 */
    assert_string_equal(STR(osp_list_at(k, 1)), "bob");
    assert_int_equal(osp_list_at(v, 0), 2);
    assert_int_equal(osp_list_at(v, 1), 3);
}

/* The chunks (c0, ..., c6) of docs/spec/language.md §9.5, compared lexicographically. */
static int chunk_cmp(const char *a, const char *b) {
    uint32_t ha = osp_map_hash(a), hb = osp_map_hash(b);
    for (int d = 0; d < 7; d++) {
        unsigned ca = (ha >> (5 * d)) & 31u, cb = (hb >> (5 * d)) & 31u;
        if (ca != cb) return ca < cb ? -1 : 1;
    }
    return 0;
}

static void assert_keys(const osp_map *m, int n, const char *const *want) {
    osp_list *k = osp_map_keys(m);
    assert_int_equal(osp_list_length(k), n);
    for (int i = 0; i < n; i++) assert_string_equal(STR(osp_list_at(k, i)), want[i]);
}

static void test_map_order(void **state) {
    (void)state;
    /* the hash itself: 32-bit FNV-1a */
    assert_int_equal(osp_map_hash(""), 0x811C9DC5u);
    assert_int_equal(osp_map_hash("a"), 0xE40C292Cu);
    /* Example L37 */
    osp_map *m = osp_map_empty();
    const char *hues[] = {"red", "green", "blue", "cyan"};
    for (int i = 0; i < 4; i++) m = osp_map_set(m, hues[i], W(i + 1));
    assert_keys(m, 4, (const char *const[]){"blue", "cyan", "green", "red"});
    assert_keys(osp_map_set(osp_map_remove(m, "green"), "green", 9), 4,
                (const char *const[]){"blue", "cyan", "green", "red"});
    /* equal hashes (k32728 and k261234 are both 0x92c402be): insertion order among the keys
     * present; replacing keeps the place, removing and re-adding goes last */
    assert_int_equal(osp_map_hash("k32728"), osp_map_hash("k261234"));
    osp_map *c =
        osp_map_set(osp_map_set(osp_map_set(osp_map_empty(), "k261234", 1), "x", 2), "k32728", 3);
    assert_keys(c, 3, (const char *const[]){"x", "k261234", "k32728"}); /* c0: x 7, k.. 30 */
    assert_keys(osp_map_set(c, "k261234", 7), 3, (const char *const[]){"x", "k261234", "k32728"});
    osp_map *re = osp_map_set(osp_map_remove(c, "k261234"), "k261234", 1);
    assert_keys(re, 3, (const char *const[]){"x", "k32728", "k261234"});
    assert_ok_int(osp_map_get(re, "k32728"), 3);
    assert_ok_int(osp_map_get(re, "k261234"), 1);
    assert_keys(osp_map_remove(re, "k32728"), 2, (const char *const[]){"x", "k261234"});
    assert_err(osp_map_get(osp_map_remove(re, "k32728"), "k32728"), "mapGet: key not found");
    /* merge inserts b's entries into a in b's order */
    osp_map *b = osp_map_set(osp_map_set(osp_map_empty(), "k32728", 5), "k261234", 6);
    assert_keys(osp_map_merge(osp_map_set(osp_map_empty(), "y", 0), b), 3,
                (const char *const[]){"y", "k32728", "k261234"});
    assert_true(chunk_cmp("y", "k32728") < 0);
}

static void test_map_many(void **state) {
    (void)state;
    osp_map *m = osp_map_empty();
    char key[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        m = osp_map_set(m, osp_str_dup_n(key, strlen(key)), W(i));
    }
    for (int i = 0; i < 5000; i += 2) {
        snprintf(key, sizeof key, "k%d", i);
        m = osp_map_remove(m, key);
    }
    GC_gcollect();
    assert_int_equal(osp_map_length(m), 2500);
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(osp_map_contains(m, key), i % 2 == 1);
    }
    osp_list *k = osp_map_keys(m);
    for (int64_t i = 1; i < osp_list_length(k); i++)
        assert_true(chunk_cmp(STR(osp_list_at(k, i - 1)), STR(osp_list_at(k, i))) <= 0);
    /* every removal path: empty the map again, checking the rest after each step */
    for (int i = 1; i < 5000; i += 2) {
        snprintf(key, sizeof key, "k%d", i);
        osp_map *n = osp_map_remove(m, key);
        assert_int_equal(osp_map_length(n), osp_map_length(m) - 1);
        assert_false(osp_map_contains(n, key));
        assert_true(osp_map_contains(m, key)); /* persistent */
        m = n;
        if (i % 501 == 0) {
            for (int j = i + 2; j < 5000; j += 2) {
                snprintf(key, sizeof key, "k%d", j);
                assert_ok_int(osp_map_get(m, key), j);
            }
        }
    }
    assert_int_equal(osp_map_length(m), 0);
    assert_int_equal(osp_list_length(osp_map_keys(m)), 0);
}

/* A transient map (osp_map_transient) is updated in place, and never changes the map it was
 * made from, nor any map it shared nodes with before, nor itself once sealed. */
static void test_map_transient(void **state) {
    (void)state;
    char key[32];
    osp_map *base = osp_map_empty();
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "k%d", i);
        base = osp_map_set(base, osp_str_dup_n(key, strlen(key)), W(i));
    }
    osp_map *t = osp_map_transient(base);
    assert_ptr_not_equal(t, base);
    /* replace every old key twice, add 2000 new ones, remove every third old one */
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 2300; i++) {
            snprintf(key, sizeof key, "k%d", i);
            osp_map *u = osp_map_set(t, osp_str_dup_n(key, strlen(key)), W(i * 10 + round));
            assert_ptr_equal(u, t); /* in place */
        }
    for (int i = 0; i < 300; i += 3) {
        snprintf(key, sizeof key, "k%d", i);
        assert_ptr_equal(osp_map_remove(t, key), t);
    }
    assert_ptr_equal(osp_map_remove(t, "nobody"), t);
    GC_gcollect();
    assert_int_equal(osp_map_length(t), 2300 - 100);
    assert_int_equal(osp_map_length(base), 300);
    for (int i = 0; i < 2300; i++) {
        snprintf(key, sizeof key, "k%d", i);
        if (i < 300 && i % 3 == 0)
            assert_false(osp_map_contains(t, key));
        else
            assert_ok_int(osp_map_get(t, key), i * 10 + 1);
        if (i < 300)
            assert_ok_int(osp_map_get(base, key), i); /* the map it came from: untouched */
        else
            assert_false(osp_map_contains(base, key));
    }
    /* equal hashes in a transient collision node: replace in place, remove, re-add last */
    osp_map *c = osp_map_transient(osp_map_empty());
    osp_map_set(c, "k261234", W(1));
    osp_map_set(c, "x", W(2));
    osp_map_set(c, "k32728", W(3));
    osp_map_set(c, "k261234", W(7));
    assert_keys(c, 3, (const char *const[]){"x", "k261234", "k32728"});
    osp_map_set(osp_map_remove(c, "k261234"), "k261234", W(8));
    assert_keys(c, 3, (const char *const[]){"x", "k32728", "k261234"});
    assert_ok_int(osp_map_get(c, "k261234"), 8);
    /* sealed: persistent again, and a later transient of it does not touch it */
    osp_map *s = osp_map_seal(t);
    assert_ptr_equal(s, t);
    osp_map *s2 = osp_map_set(s, "k1", W(-1));
    assert_ptr_not_equal(s2, s);
    assert_ok_int(osp_map_get(s, "k1"), 11);
    osp_map *t2 = osp_map_transient(s);
    osp_map_set(t2, "k2", W(-2));
    osp_map_remove(t2, "k4");
    assert_ok_int(osp_map_get(s, "k2"), 21);
    assert_ok_int(osp_map_get(s, "k4"), 41);
    assert_ok_int(osp_map_get(s2, "k2"), 21);
    assert_ok_int(osp_map_get(t2, "k2"), -2);
    assert_false(osp_map_contains(t2, "k4"));
    assert_int_equal(osp_map_length(s), 2200);
    assert_int_equal(osp_map_length(t2), 2199);
}

/* A transient map and a persistent one given the same updates (a fixed pseudo-random mix of
 * sets and removes over keys that share trie paths) hold the same entries in the same order
 * throughout, and the map the transient was made from does not change. */
static void test_map_transient_matches_persistent(void **state) {
    (void)state;
    char key[32];
    osp_map *start = osp_map_empty();
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof key, "s%d", i);
        start = osp_map_set(start, osp_str_dup_n(key, strlen(key)), W(i));
    }
    osp_map *t = osp_map_transient(start), *p = start;
    uint32_t x = 12345;
    for (int step = 1; step <= 20000; step++) {
        x = x * 1103515245u + 12345u;
        unsigned k = (x >> 8) % 1500;
        snprintf(key, sizeof key, k < 500 ? "s%u" : "k%u", k);
        const char *kk = osp_str_dup_n(key, strlen(key));
        if ((x >> 24) % 4 == 0) {
            assert_ptr_equal(osp_map_remove(t, kk), t);
            p = osp_map_remove(p, kk);
        } else {
            assert_ptr_equal(osp_map_set(t, kk, W(step)), t);
            p = osp_map_set(p, kk, W(step));
        }
        if (step % 2500 == 0) {
            GC_gcollect();
            assert_int_equal(osp_map_length(t), osp_map_length(p));
            osp_list *kt = osp_map_keys(t), *kp = osp_map_keys(p);
            osp_list *vt = osp_map_values(t), *vp = osp_map_values(p);
            for (int64_t i = 0; i < osp_list_length(kp); i++) {
                assert_string_equal(STR(osp_list_at(kt, i)), STR(osp_list_at(kp, i)));
                assert_int_equal(osp_list_at(vt, i), osp_list_at(vp, i));
            }
        }
    }
    assert_int_equal(osp_map_length(start), 500);
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof key, "s%d", i);
        assert_ok_int(osp_map_get(start, key), i);
    }
}

/* ---- strings ----------------------------------------------------------------------------------- */

static const char *join_list(const osp_list *l) {
    return osp_str_join(l, "|");
}

static void test_strings_total(void **state) {
    (void)state;
    assert_int_equal(osp_str_length("h\xc3\xa9llo"), 6);
    assert_true(osp_str_contains("banana", "nan"));
    assert_true(osp_str_contains("banana", ""));
    assert_false(osp_str_contains("banana", "x"));
    assert_true(osp_str_starts_with("osprey", "osp"));
    assert_true(osp_str_ends_with("osprey", "rey"));
    assert_false(osp_str_ends_with("ey", "rey"));
    assert_string_equal(osp_str_take("osprey", 3), "osp");
    assert_string_equal(osp_str_take("osprey", 99), "osprey");
    assert_string_equal(osp_str_take("osprey", -1), "");
    assert_string_equal(osp_str_drop("osprey", 3), "rey");
    assert_string_equal(osp_str_drop("osprey", 99), "");
    assert_string_equal(join_list(osp_str_lines("a\nb\n")), "a|b");
    assert_string_equal(join_list(osp_str_lines("a\n\nb")), "a||b");
    assert_int_equal(osp_list_length(osp_str_lines("")), 0);
    assert_string_equal(join_list(osp_str_words("  one\ttwo \n three ")), "one|two|three");
    assert_string_equal(osp_str_upper("abc-\xc3\xa9"), "ABC-\xc3\xa9");
    assert_string_equal(osp_str_lower("ABC"), "abc");
    assert_string_equal(osp_str_trim(" \t x y \n"), "x y");
    assert_string_equal(osp_str_trim_start("  x "), "x ");
    assert_string_equal(osp_str_trim_end("  x "), "  x");
    assert_string_equal(osp_str_reverse("abc"), "cba");
    osp_word parts[3] = {SW("a"), SW("b"), SW("c")};
    assert_string_equal(osp_str_join(osp_list_new(3, parts), ", "), "a, b, c");
    assert_string_equal(osp_str_join(osp_list_new(0, NULL), ", "), "");
}

/* Reading a long string byte by byte is linear: its length is not measured again at every
 * index, and the length remembered for one string is never used for another. Nothing here
 * is timed (speed belongs to bench/): re-measuring would make the scan quadratic, hours at
 * this size, and the test's time limit (180 s) would fail it. */
static void test_strings_long_scan(void **state) {
    (void)state;
    enum { N = 3000000 };
    char *s = osp_gc_alloc_atomic(N + 1);
    for (int i = 0; i < N; i++) s[i] = (char)('a' + i % 26);
    s[N] = '\0';
    int64_t sum = 0;
    for (int64_t i = 0;; i++) {
        osp_rres r = osp_str_byte_at(s, i);
        if (r.tag != OSP_RESULT_SUCCESS) break;
        osp_rres c = osp_str_code_point_at(s, i), x = osp_str_index(s, i);
        assert_int_equal(c.word, r.word);
        assert_int_equal((unsigned char)STR(x.word)[0], r.word);
        sum += (int64_t)r.word;
    }
    assert_int_equal(osp_str_length(s), N);
    int64_t want = 0;
    for (int i = 0; i < N; i++) want += 'a' + i % 26;
    assert_int_equal(sum, want);
    /* two long strings in turn, and one that a shorter string follows */
    char *a = osp_gc_alloc_atomic(301), *b = osp_gc_alloc_atomic(501);
    memset(a, 'x', 300);
    a[300] = '\0';
    memset(b, 'y', 500);
    b[500] = '\0';
    for (int k = 0; k < 3; k++) {
        assert_int_equal(osp_str_length(a), 300);
        assert_err(osp_str_byte_at(a, 300), "byteAt: index out of range");
        assert_ok_int(osp_str_byte_at(b, 499), 'y');
        assert_err(osp_str_index(b, 500), "index out of range");
        assert_ok_str(osp_str_substring(a, 299, 300), "x");
        assert_err(osp_str_code_point_at("short", 5), "codePointAt: index out of range");
        assert_err(osp_str_substring(b, 0, 501), "substring: index out of range");
    }
}

/* Many threads (more than the remembered-length slots) scan strings of different lengths
 * at once: each always sees its own string's length. */
typedef struct {
    int64_t len;
    int64_t bad;
} scan_job;

static void *scan_main(void *arg) {
    scan_job *j = arg;
    char *a = osp_gc_alloc_atomic((size_t)j->len + 1), *b = osp_gc_alloc_atomic(301);
    memset(a, 'a', (size_t)j->len);
    a[j->len] = '\0';
    memset(b, 'b', 300);
    b[300] = '\0';
    for (int round = 0; round < 200; round++) {
        const char *s = round % 2 ? b : a;
        int64_t n = round % 2 ? 300 : j->len;
        if (osp_str_byte_at(s, n - 1).tag != OSP_RESULT_SUCCESS) j->bad++;
        if (osp_str_byte_at(s, n).tag == OSP_RESULT_SUCCESS) j->bad++;
        if (osp_str_length_long(s) != n) j->bad++;
    }
    return NULL;
}

static void test_strings_length_threads(void **state) {
    (void)state;
    enum { T = 80 };
    pthread_t th[T];
    scan_job jobs[T];
    for (int i = 0; i < T; i++) {
        jobs[i] = (scan_job){.len = 1000 + 37 * i, .bad = 0};
        assert_int_equal(GC_pthread_create(&th[i], NULL, scan_main, &jobs[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        assert_int_equal(GC_pthread_join(th[i], NULL), 0);
        assert_int_equal(jobs[i].bad, 0);
    }
}

/* take and drop measure only the bytes they keep or skip, and drop shares the rest: walking
 * a long string by dropping one byte at a time is linear (it copied and measured the whole
 * rest at every step: a 1.3 MB walk took minutes; at this size it would take hours, and
 * the test's time limit fails it; nothing is timed here). */
static void test_strings_take_drop_walk(void **state) {
    (void)state;
    enum { N = 3000000 };
    char *s = osp_gc_alloc_atomic(N + 1);
    for (int i = 0; i < N; i++) s[i] = (char)('a' + i % 26);
    s[N] = '\0';
    const char *t = s;
    int64_t steps = 0;
    while (*t) {
        const char *h = osp_str_take(t, 1);
        assert_int_equal(h[0], 'a' + steps % 26);
        assert_int_equal(h[1], '\0');
        t = osp_str_drop(t, 1);
        steps++;
    }
    assert_int_equal(steps, N);
    assert_string_equal(osp_str_drop("abc", 0), "abc");
    assert_string_equal(osp_str_drop("abc", -5), "abc");
    assert_string_equal(osp_str_drop("abc", 2), "c");
    assert_string_equal(osp_str_drop("abc", 3), "");
    assert_string_equal(osp_str_drop("abc", INT64_MAX), "");
    assert_string_equal(osp_str_drop(NULL, 1), "");
    assert_string_equal(osp_str_take("abc", INT64_MAX), "abc");
    assert_string_equal(osp_str_take("abc", 2), "ab");
    assert_string_equal(osp_str_take("abc", -1), "");
    /* a shared rest never changes, and neither does the string it came from */
    const char *rest = osp_str_drop(s, N - 3);
    assert_string_equal(osp_str_cat(rest, "!"), "nop!");
    assert_string_equal(rest, "nop");
    assert_int_equal(osp_str_length(rest), 3);
    assert_int_equal(osp_str_length(s), N);
}

static void test_strings_fallible(void **state) {
    (void)state;
    assert_ok_int(osp_str_index_of("banana", "nan"), 2);
    assert_ok_int(osp_str_index_of("banana", ""), 0);
    assert_err(osp_str_index_of("banana", "x"), "indexOf: substring not found");
    assert_ok_str(osp_str_substring("osprey", 1, 4), "spr");
    assert_ok_str(osp_str_substring("osprey", 6, 6), "");
    assert_err(osp_str_substring("osprey", 4, 1), "substring: index out of range");
    assert_err(osp_str_substring("osprey", 0, 7), "substring: index out of range");
    assert_err(osp_str_substring("osprey", -1, 2), "substring: index out of range");
    osp_rres sp = osp_str_split("a,b,,c", ",");
    assert_int_equal(sp.tag, OSP_RESULT_SUCCESS);
    assert_string_equal(join_list((osp_list *)(uintptr_t)sp.word), "a|b||c");
    assert_err(osp_str_split("a,b", ""), "split: separator must not be empty");
    assert_ok_str(osp_str_replace("a-b-c", "-", "+="), "a+=b+=c");
    assert_ok_str(osp_str_replace("aaa", "aa", "b"), "ba");
    assert_err(osp_str_replace("a", "", "b"), "replace: needle must not be empty");
    assert_ok_str(osp_str_repeat("ab", 3), "ababab");
    assert_ok_str(osp_str_repeat("ab", 0), "");
    assert_err(osp_str_repeat("ab", -1), "repeat: count must not be negative");
    assert_ok_str(osp_str_pad_start("7", 3, "0"), "007");
    assert_ok_str(osp_str_pad_start("7", 4, "ab"), "aba7");
    assert_ok_str(osp_str_pad_end("7", 3, "."), "7..");
    assert_ok_str(osp_str_pad_end("long", 2, "."), "long");
    assert_err(osp_str_pad_start("7", 3, ""), "padStart: fill must not be empty");
    assert_err(osp_str_pad_end("7", 3, ""), "padEnd: fill must not be empty");
    assert_ok_int(osp_str_parse_int("42"), 42);
    assert_ok_int(osp_str_parse_int("-9223372036854775808"), INT64_MIN);
    assert_err(osp_str_parse_int("9223372036854775808"), "parseInt: invalid integer");
    assert_err(osp_str_parse_int(" 42"), "parseInt: invalid integer");
    assert_err(osp_str_parse_int(""), "parseInt: invalid integer");
    assert_err(osp_str_parse_int("4x"), "parseInt: invalid integer");
    osp_rres f = osp_str_parse_float("2.5e1");
    double d;
    memcpy(&d, &f.word, 8);
    assert_int_equal(f.tag, OSP_RESULT_SUCCESS);
    assert_true(d == 25.0);
    assert_err(osp_str_parse_float("1.2.3"), "parseFloat: invalid number");
    assert_err(osp_str_parse_float(" 1"), "parseFloat: invalid number");
    assert_err(osp_str_parse_float("0x10"), "parseFloat: invalid number");
    assert_err(osp_str_parse_float("inf"), "parseFloat: invalid number");
    assert_err(osp_str_parse_float("nan"), "parseFloat: invalid number");
    assert_err(osp_str_parse_float("1e400"), "parseFloat: invalid number");
    assert_err(osp_str_parse_float("1e"), "parseFloat: invalid number");
    assert_err(osp_str_parse_float("."), "parseFloat: invalid number");
    assert_err(osp_str_parse_float(""), "parseFloat: invalid number");
    assert_err(osp_str_parse_float("1 "), "parseFloat: invalid number");
    osp_rres g = osp_str_parse_float("+1.25E-2");
    double gd;
    memcpy(&gd, &g.word, sizeof gd);
    assert_true(g.tag == OSP_RESULT_SUCCESS && gd == 0.0125);
    assert_int_equal(osp_str_parse_float(".5").tag, OSP_RESULT_SUCCESS);
    assert_int_equal(osp_str_parse_float("5.").tag, OSP_RESULT_SUCCESS);
    assert_int_equal(osp_str_parse_float("1e3").tag, OSP_RESULT_SUCCESS);
    assert_int_equal(osp_str_parse_float("1e-400").tag, OSP_RESULT_SUCCESS);
    assert_ok_int(osp_str_byte_at("\xc3\xa9", 1), 0xa9);
    assert_err(osp_str_byte_at("ab", 2), "byteAt: index out of range");
    assert_ok_int(osp_str_code_point_at("x\xc3\xa9", 1), 0xe9);
    assert_ok_int(osp_str_code_point_at("\xf0\x9f\x98\x80", 0), 0x1f600);
    /* docs/spec/language.md §9.3: each failure, in the table's order */
    assert_err(osp_str_code_point_at("a", 5), "codePointAt: index out of range");
    assert_err(osp_str_code_point_at("a", -1), "codePointAt: index out of range");
    assert_err(osp_str_code_point_at("\xc3\xa9", 1), "codePointAt: invalid UTF-8 lead byte");
    assert_err(osp_str_code_point_at("\xf8\x80", 0), "codePointAt: invalid UTF-8 lead byte");
    assert_err(osp_str_code_point_at("\xe4\xb8", 0), "codePointAt: truncated codepoint");
    assert_err(osp_str_code_point_at("\xc3(", 0), "codePointAt: invalid continuation byte");
    assert_err(osp_str_code_point_at("\xc0\x80", 0), "codePointAt: invalid UTF-8 sequence");
    assert_err(osp_str_code_point_at("\xed\xa0\x80", 0), "codePointAt: invalid UTF-8 sequence");
    assert_err(osp_str_code_point_at("\xf4\x90\x80\x80", 0), "codePointAt: invalid UTF-8 sequence");
    /* codePointWidth is the UTF-8 encoded length */
    assert_ok_int(osp_code_point_width('a'), 1);
    assert_ok_int(osp_code_point_width(0x7f), 1);
    assert_ok_int(osp_code_point_width(0x80), 2);
    assert_ok_int(osp_code_point_width(0x7ff), 2);
    assert_ok_int(osp_code_point_width(0x4e2d), 3);
    assert_ok_int(osp_code_point_width(0xffff), 3);
    assert_ok_int(osp_code_point_width(0x10000), 4);
    assert_ok_int(osp_code_point_width(0x10ffff), 4);
    assert_err(osp_code_point_width(0x110000), "codePointWidth: code point out of range");
    assert_err(osp_code_point_width(0xd800), "codePointWidth: surrogate is not a scalar");
    assert_ok_str(osp_from_code_point(0xe9), "\xc3\xa9");
    assert_ok_str(osp_from_code_point(0x1f600), "\xf0\x9f\x98\x80");
    assert_err(osp_from_code_point(0xd800), "fromCodePoint: invalid code point");
    assert_err(osp_from_code_point(-1), "fromCodePoint: invalid code point");
    assert_ok_str(osp_str_index("abc", 1), "b");
    assert_int_equal(osp_str_index("abc", 3).tag, OSP_RESULT_ERROR);
}

static void test_numeric(void **state) {
    (void)state;
    assert_ok_int(osp_int_abs(-5), 5);
    assert_err(osp_int_abs(INT64_MIN), "integer overflow");
    assert_ok_int(osp_checked_add(1, 2), 3);
    assert_err(osp_checked_add(INT64_MAX, 1), "integer overflow");
    assert_err(osp_checked_sub(INT64_MIN, 1), "integer overflow");
    assert_err(osp_checked_mul(INT64_MAX, 2), "integer overflow");
    for (int i = 0; i < 1000; i++) {
        assert_true(osp_random() >= 0);
        osp_rres r = osp_random_below(7);
        assert_int_equal(r.tag, OSP_RESULT_SUCCESS);
        assert_true((int64_t)r.word >= 0 && (int64_t)r.word < 7);
    }
    assert_err(osp_random_below(0), "randomBelow: bound must be positive");
}

/* ---- channels ----------------------------------------------------------------------------------- */

static osp_word producer(void *env) {
    int64_t ch = *(int64_t *)env;
    for (int64_t i = 1; i <= 1000; i++) osp_chan_put(ch, W(i));
    return 0;
}

static void test_channel_fifo_and_blocking(void **state) {
    (void)state;
    int64_t *ch = osp_gc_alloc(sizeof *ch);
    *ch = osp_chan_new(2);
    int64_t before = fake_prof_regions();
    int64_t f = osp_fiber_spawn(producer, ch);
    assert_int_equal(f, *ch + 1); /* ids from the counter shared with fibers */
    int64_t sum = 0, prev = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t v = (int64_t)osp_chan_take(*ch);
        assert_int_equal(v, prev + 1); /* FIFO */
        prev = v;
        sum += v;
    }
    assert_int_equal(sum, 500500);
    assert_int_equal(osp_fiber_wait(f), 0);
    assert_true(fake_prof_regions() > before); /* waits were blocking regions */
    assert_int_equal(fake_prof_depth(), 0);
    assert_int_equal(fake_prof_violations(), 0);
}

static void bad_cap_child(void *arg) {
    (void)arg;
    osp_chan_new(0);
}

static void unknown_chan_child(void *arg) {
    (void)arg;
    osp_chan_take(12345);
}

static void test_channel_errors(void **state) {
    (void)state;
    child_output r;
    run_child(bad_cap_child, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "fatal: Channel capacity must be positive (got 0)\n");
    child_free(&r);
    run_child(unknown_chan_child, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "fatal: recv on unknown channel 12345\n");
    child_free(&r);
}

int main(void) {
    osp_rt_heap_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_basics),
        cmocka_unit_test(test_list_sharing_is_safe),
        cmocka_unit_test(test_list_append_many),
        cmocka_unit_test(test_list_contains_kinds),
        cmocka_unit_test(test_list_scalar_backings),
        cmocka_unit_test(test_list_contains_every_position),
        cmocka_unit_test(test_list_release),
        cmocka_unit_test(test_list_copies_coaligned),
        cmocka_unit_test(test_list_prepend_in_place),
        cmocka_unit_test(test_list_append_prepend_interleaved),
        cmocka_unit_test(test_list_concat_many),
        cmocka_unit_test(test_list_prepend_race),
        cmocka_unit_test(test_map_basics),
        cmocka_unit_test(test_map_many),
        cmocka_unit_test(test_map_order),
        cmocka_unit_test(test_map_transient),
        cmocka_unit_test(test_map_transient_matches_persistent),
        cmocka_unit_test(test_strings_total),
        cmocka_unit_test(test_strings_fallible),
        cmocka_unit_test(test_strings_long_scan),
        cmocka_unit_test(test_strings_take_drop_walk),
        cmocka_unit_test(test_strings_length_threads),
        cmocka_unit_test(test_numeric),
        cmocka_unit_test(test_channel_fifo_and_blocking),
        cmocka_unit_test(test_channel_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
