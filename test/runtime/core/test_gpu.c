/*
 * GPU buffers and the worker pool (docs/spec/language.md §9.9, docs/runtime.md "GPU buffers"):
 * the buffer entry points, and osp_gpu_run's two paths — every element exactly once, chunks
 * on the calling thread and on workers registered with the profiler as (-3, "gpu"), waits in
 * balanced blocking regions; the sequential path for small runs, unsafe kernels and runs
 * made on a worker. Linked with fake_prof.c, which records the profiler hook calls.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_prof.h"
#include "rt_internal.h"
#include "support.h"

#define STR(w) ((const char *)(uintptr_t)(w))

static void test_buffers(void **state) {
    (void)state;
    osp_gpu *b = osp_gpu_iota(5);
    assert_int_equal(osp_gpu_length(b), 5);
    for (int64_t i = 0; i < 5; i++) assert_int_equal(osp_gpu_data(b)[i], i);
    osp_rres r = osp_gpu_get(b, 4);
    assert_int_equal(r.tag, OSP_RESULT_SUCCESS);
    assert_int_equal(r.word, 4);
    for (int64_t bad = -1; bad <= 5; bad += 6) {
        r = osp_gpu_get(b, bad);
        assert_int_equal(r.tag, OSP_RESULT_ERROR);
        assert_string_equal(STR(r.word), "gpuGet: index out of bounds");
    }
    assert_int_equal(osp_gpu_length(osp_gpu_iota(0)), 0);
    assert_int_equal(osp_gpu_length(osp_gpu_iota(-7)), 0);
    assert_string_equal(osp_gpu_device(), "host");

    osp_word ws[3] = {7, 8, 9};
    osp_gpu *c = osp_gpu_from_list(osp_list_new_scalar(3, ws));
    assert_int_equal(osp_gpu_length(c), 3);
    assert_int_equal(osp_gpu_data(c)[2], 9);
    /* toGpu shares the list's words, and keeps them alive by itself */
    osp_word *many = malloc(100000 * sizeof(osp_word));
    for (int i = 0; i < 100000; i++) many[i] = (osp_word)(i * 3);
    osp_list *big = osp_list_new_scalar(100000, many);
    free(many);
    osp_gpu *shared = osp_gpu_from_list(osp_list_drop(big, 10));
    assert_ptr_equal(osp_gpu_data(shared), osp_list_words(big) + 10);
    big = NULL;
    GC_gcollect();
    for (int k = 0; k < 8; k++) (void)osp_gpu_iota(100000); /* reuse what was freed */
    GC_gcollect();
    assert_int_equal(osp_gpu_length(shared), 99990);
    assert_int_equal(osp_gpu_get(shared, 0).word, 30);
    assert_int_equal(osp_gpu_get(shared, 99989).word, 299997);
    osp_list *back = osp_gpu_to_list(c);
    assert_int_equal(osp_list_length(back), 3);
    assert_int_equal(osp_list_at(back, 0), 7);

    osp_word flags[5] = {1, 0, 0, 1, 1};
    osp_gpu *kept = osp_gpu_compact(b, flags);
    assert_int_equal(osp_gpu_length(kept), 3);
    assert_int_equal(osp_gpu_data(kept)[0], 0);
    assert_int_equal(osp_gpu_data(kept)[1], 3);
    assert_int_equal(osp_gpu_data(kept)[2], 4);

    osp_gpu *t = osp_gpu_alloc(10);
    osp_gpu_truncate(t, 4);
    assert_int_equal(osp_gpu_length(t), 4);
    osp_gpu_truncate(t, 9); /* never longer */
    assert_int_equal(osp_gpu_length(t), 4);
}

/* ---- osp_gpu_run ------------------------------------------------------------------------ */

enum { MAX_THREADS = 16 };

typedef struct run_record {
    _Atomic uint8_t *seen; /* per element: how often a chunk covered it */
    pthread_mutex_t lock;
    pthread_t threads[MAX_THREADS];
    int nthreads;
    int calls;
    int bad_registration; /* a chunk on another thread not registered as (-3, "gpu") */
    int64_t nested_calls; /* calls of the nested run made from a worker's chunk */
    _Atomic int worker_ran;
    pthread_t caller;
    bool nest;
} run_record;

static void nested_chunk(void *ctx, int64_t lo, int64_t hi) {
    run_record *r = ctx;
    (void)lo;
    (void)hi;
    pthread_mutex_lock(&r->lock);
    r->nested_calls++;
    pthread_mutex_unlock(&r->lock);
}

static void record_chunk(void *ctx, int64_t lo, int64_t hi) {
    run_record *r = ctx;
    pthread_t self = pthread_self();
    bool on_caller = pthread_equal(self, r->caller);
    pthread_mutex_lock(&r->lock);
    r->calls++;
    bool known = false;
    for (int i = 0; i < r->nthreads; i++)
        if (pthread_equal(r->threads[i], self)) known = true;
    if (!known && r->nthreads < MAX_THREADS) r->threads[r->nthreads++] = self;
    pthread_mutex_unlock(&r->lock);
    if (!on_caller) {
        int64_t id = 0;
        const char *label = NULL;
        if (!fake_prof_current(&id, &label) || id != -3 || !label || strcmp(label, "gpu") != 0)
            r->bad_registration++;
        atomic_store(&r->worker_ran, 1);
        /* a run made on a worker stays on it: one call for the whole range */
        if (r->nest) osp_gpu_run(100000, nested_chunk, r, 1);
    } else {
        /* hold the caller's first chunk until a worker has run one (at most 10 s), so
         * the test sees the pool take part even on a loaded machine */
        for (int i = 0; i < 10000 && !atomic_load(&r->worker_ran); i++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&r->seen[i], 1);
}

static run_record *record_new(int64_t n) {
    run_record *r = calloc(1, sizeof *r);
    r->seen = calloc((size_t)n, 1);
    pthread_mutex_init(&r->lock, NULL);
    r->caller = pthread_self();
    return r;
}

static void record_free(run_record *r) {
    pthread_mutex_destroy(&r->lock);
    free((void *)r->seen);
    free(r);
}

static void assert_each_once(run_record *r, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (r->seen[i] != 1) fail_msg("element %lld covered %d times", (long long)i, r->seen[i]);
}

static void test_parallel_run(void **state) {
    (void)state;
    int64_t before = fake_prof_violations();
    int64_t n = 1000003;
    run_record *r = record_new(n);
    r->nest = true;
    osp_gpu_run(n, record_chunk, r, 1);
    assert_each_once(r, n);
    /* a worker ran chunks (the caller's first chunk waits for one; when the workers take
     * every chunk the caller runs none), and no more threads than OSPREY_GPU_THREADS=3 */
    assert_true(atomic_load(&r->worker_ran));
    assert_true(r->nthreads <= 3);
    assert_true(r->calls > r->nthreads); /* chunks, not one call per thread */
    assert_int_equal(r->bad_registration, 0);
    assert_true(r->nested_calls >= 1);
    assert_int_equal(fake_prof_violations(), before);
    assert_int_equal(fake_prof_depth(), 0);
    record_free(r);

    /* the pool is reused: a second run covers everything again */
    r = record_new(n);
    osp_gpu_run(n, record_chunk, r, 1);
    assert_each_once(r, n);
    assert_true(atomic_load(&r->worker_ran));
    assert_int_equal(r->bad_registration, 0);
    record_free(r);
}

static void one_call_chunk(void *ctx, int64_t lo, int64_t hi) {
    run_record *r = ctx;
    r->calls++;
    if (!pthread_equal(pthread_self(), r->caller)) r->bad_registration++;
    for (int64_t i = lo; i < hi; i++) r->seen[i]++;
}

static void test_sequential_paths(void **state) {
    (void)state;
    /* a kernel codegen did not find parallel-safe: one call on the caller, whatever n */
    int64_t n = 500000;
    run_record *r = record_new(n);
    osp_gpu_run(n, one_call_chunk, r, 0);
    assert_int_equal(r->calls, 1);
    assert_int_equal(r->bad_registration, 0);
    assert_each_once(r, n);
    record_free(r);
    /* a small run stays on the caller too */
    r = record_new(100);
    osp_gpu_run(100, one_call_chunk, r, 1);
    assert_int_equal(r->calls, 1);
    assert_each_once(r, 100);
    /* an empty run calls nothing */
    osp_gpu_run(0, one_call_chunk, r, 1);
    osp_gpu_run(-5, one_call_chunk, r, 1);
    assert_int_equal(r->calls, 1);
    record_free(r);
}

int main(void) {
    setenv("OSPREY_GPU_THREADS", "3", 1);
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_parallel_run),
        cmocka_unit_test(test_sequential_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
