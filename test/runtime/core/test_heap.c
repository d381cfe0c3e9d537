/*
 * The Osprey heap (docs/spec/language.md §14.3; runtime/core/start.c): osp_gc_alloc's
 * per-thread free lists hand out cleared objects of the requested size whose every word the
 * collector scans, on the main thread and on collector-created threads, across collections.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rt_internal.h"

/* A node whose last word is a pointer: the word a size class one byte too small would leave
 * unscanned (an object of g granules is scanned up to g * 16 - 1 bytes). */
typedef struct node {
    int64_t tag;
    struct node *left;
    int64_t value;
    struct node *right;
} node;

static node *make(int depth, int64_t v) {
    node *n = osp_gc_alloc(depth ? sizeof(node) : 8);
    if (depth == 0) return n; /* a leaf: tag 0, only its first word in use */
    n->tag = 1;
    n->left = make(depth - 1, v * 2);
    n->value = v;
    n->right = make(depth - 1, v * 2 + 1);
    return n;
}

static int64_t check(const node *t, int64_t *bad) {
    if (t->tag == 0) return 0;
    if (t->tag != 1) {
        (*bad)++;
        return 0;
    }
    return check(t->left, bad) + t->value + check(t->right, bad) + 1;
}

/* What check(make(depth, v)) is, computed without the heap. */
static int64_t expected(int depth, int64_t v) {
    if (depth == 0) return 0;
    return expected(depth - 1, v * 2) + v + expected(depth - 1, v * 2 + 1) + 1;
}

/* Build trees while the collector runs; every node must survive intact. */
static void churn(void) {
    node *keep = make(12, 1);
    int64_t bad = 0;
    int64_t want = check(keep, &bad);
    for (int round = 0; round < 30; round++) {
        node *t = make(12, round);
        if (round % 5 == 0) GC_gcollect();
        int64_t sum = check(t, &bad);
        assert_int_equal(bad, 0);
        assert_int_equal(sum, expected(12, round));
    }
    assert_int_equal(check(keep, &bad), want);
    assert_int_equal(bad, 0);
}

static void test_objects_are_cleared_and_sized(void **state) {
    (void)state;
    osp_heap_cache cache;
    osp_heap_thread_begin(&cache);
    for (size_t size = 0; size <= 300; size++) {
        unsigned char *a = osp_gc_alloc(size), *b = osp_gc_alloc(size);
        assert_non_null(a);
        assert_true(a != b);
        assert_int_equal((uintptr_t)a % 16, 0);
        assert_true(GC_size(a) >= size + 1); /* like GC_MALLOC: one byte past the end */
        for (size_t i = 0; i < size; i++) assert_int_equal(a[i], 0);
        memset(a, 0xAB, size); /* the whole object is ours: the neighbour stays clear */
        for (size_t i = 0; i < size; i++) assert_int_equal(b[i], 0);
    }
    osp_heap_thread_end();
    for (size_t g = 0; g < OSP_HEAP_CACHE_CLASSES; g++) assert_null(cache.free_list[g]);
}

static void test_main_thread_survives_collections(void **state) {
    (void)state;
    static osp_heap_cache cache; /* static data: scanned */
    osp_heap_thread_begin(&cache);
    churn();
    osp_heap_thread_end();
}

typedef struct worker {
    osp_heap_cache cache; /* in a heap record, as fibers keep theirs */
    int64_t done;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    osp_heap_thread_begin(&w->cache);
    churn();
    osp_heap_thread_end();
    w->done = 1;
    return NULL;
}

static void test_threads_survive_collections(void **state) {
    (void)state;
    worker *w[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        w[i] = osp_gc_alloc(sizeof *w[i]);
        assert_int_equal(GC_pthread_create(&th[i], NULL, worker_main, w[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(GC_pthread_join(th[i], NULL), 0);
        assert_int_equal(w[i]->done, 1);
    }
}

int main(void) {
    osp_rt_heap_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objects_are_cleared_and_sized),
        cmocka_unit_test(test_main_thread_survives_collections),
        cmocka_unit_test(test_threads_survive_collections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
