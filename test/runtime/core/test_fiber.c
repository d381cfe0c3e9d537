/*
 * Fibers (docs/spec/language.md §11.1, §14.5): ids, await, fiberDone, the profiler registration
 * and blocking-region contract (docs/spec/profiler.md §(d)), 999 live fibers, fatal awaits.
 * Linked with fake_prof.c, which records the hook calls.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_prof.h"
#include "rt_internal.h"
#include "support.h"

static osp_word return_env_int(void *env) {
    return (osp_word)(*(int64_t *)env);
}

static int64_t *boxed(int64_t v) {
    int64_t *p = osp_gc_alloc(sizeof *p);
    *p = v;
    return p;
}

/* Must run first in this process: the counter starts at 1 and is shared. */
static void test_ids_start_at_one_and_are_shared(void **state) {
    (void)state;
    int64_t a = osp_fiber_spawn(return_env_int, boxed(10));
    assert_int_equal(a, 1);
    int64_t b = osp_fiber_spawn(return_env_int, boxed(20));
    assert_int_equal(b, 2);
    /* A channel (T2) takes the next id from the same counter. */
    int64_t ch = osp_handle_register(OSP_HANDLE_CHANNEL, osp_gc_alloc(16));
    assert_int_equal(ch, 3);
    int64_t c = osp_fiber_spawn(return_env_int, boxed(30));
    assert_int_equal(c, 4);
    assert_int_equal(osp_fiber_state(ch), -1); /* a channel is not a fiber */
    assert_null(osp_handle_lookup(ch, OSP_HANDLE_FIBER));
    assert_non_null(osp_handle_lookup(ch, OSP_HANDLE_CHANNEL));
    assert_null(osp_handle_lookup(a, OSP_HANDLE_CHANNEL));
    assert_int_equal(osp_fiber_wait(c), 30);
    assert_int_equal(osp_fiber_wait(a), 10);
    assert_int_equal(osp_fiber_wait(b), 20);
    assert_int_equal(fake_prof_violations(), 0);
}

/* ---- a fiber that waits on a gate, to observe it while it runs ---------------------- */

typedef struct {
    sem_t gate;
    sem_t started;
    int64_t seen_id; /* registration seen by the fiber itself */
    char seen_label[16];
    bool registered;
    int depth_in_body;
    int64_t current_id; /* osp_fiber_current_id() inside */
    int detach_state;   /* of the fiber's own thread */
    osp_result *result;
} gated;

static osp_word gated_body(void *env) {
    gated *g = env;
    const char *label = NULL;
    g->registered = fake_prof_current(&g->seen_id, &label);
    snprintf(g->seen_label, sizeof g->seen_label, "%s", label ? label : "");
    g->depth_in_body = fake_prof_depth();
    g->current_id = osp_fiber_current_id();
    pthread_attr_t attr;
    g->detach_state = -1;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getdetachstate(&attr, &g->detach_state);
        pthread_attr_destroy(&attr);
    }
    sem_post(&g->started);
    while (sem_wait(&g->gate) != 0) {
    }
    g->result = osp_result_ok((osp_word)osp_show_int(g->current_id * 100));
    return (osp_word)g->result;
}

static void test_await_and_state(void **state) {
    (void)state;
    gated *g = osp_gc_alloc(sizeof *g);
    sem_init(&g->gate, 0, 0);
    sem_init(&g->started, 0, 0);
    int64_t regions_before = fake_prof_regions();
    int64_t id = osp_fiber_spawn(gated_body, g);
    while (sem_wait(&g->started) != 0) {
    }
    /* Registered as (id, "fiber") before its body, outside any blocking region. */
    assert_true(g->registered);
    assert_int_equal(g->seen_id, id);
    assert_string_equal(g->seen_label, "fiber");
    assert_int_equal(g->depth_in_body, 0);
    assert_int_equal(g->current_id, id);
    assert_int_equal(osp_fiber_current_id(), 0);
    /* Nobody joins fiber threads: they are detached, so an un-awaited fiber that ends
     * leaves no zombie thread behind. */
    assert_int_equal(g->detach_state, PTHREAD_CREATE_DETACHED);

    assert_int_equal(osp_fiber_state(id), 0); /* still running */
    assert_false(fake_prof_unregistered(id));
    sem_post(&g->gate);

    osp_word w1 = osp_fiber_wait(id);
    /* Unregistered before completion was signalled: await has returned, so it happened. */
    assert_true(fake_prof_unregistered(id));
    assert_int_equal(osp_fiber_state(id), 1);
    /* The main thread waited inside exactly one blocking region, now closed. The fiber
     * may have finished before we waited, so allow 0 or 1 regions. */
    assert_true(fake_prof_regions() - regions_before <= 1);
    assert_int_equal(fake_prof_depth(), 0);

    /* The result survives collections and every await returns the same value. */
    GC_gcollect();
    osp_word w2 = osp_fiber_wait(id);
    osp_word w3 = osp_fiber_wait(id);
    assert_int_equal(w1, w2);
    assert_int_equal(w1, w3);
    osp_result *r = (osp_result *)(uintptr_t)w1;
    assert_int_equal(r->tag, OSP_RESULT_SUCCESS);
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)(id * 100));
    assert_string_equal((const char *)(uintptr_t)r->value, want);
    assert_int_equal(fake_prof_violations(), 0);
    sem_destroy(&g->gate);
    sem_destroy(&g->started);
}

/* A fiber that is still running when awaited: the wait is one blocking region. */
static osp_word slow_body(void *env) {
    osp_sleep_ms(50);
    return (osp_word)(*(int64_t *)env);
}

static void test_await_blocks_in_region(void **state) {
    (void)state;
    int64_t before = fake_prof_regions();
    int64_t id = osp_fiber_spawn(slow_body, boxed(7));
    assert_int_equal(osp_fiber_wait(id), 7);
    assert_int_equal(fake_prof_regions() - before, 1);
    assert_int_equal(fake_prof_depth(), 0);
    assert_int_equal(osp_fiber_wait(id), 7);
}

static void test_unknown_state(void **state) {
    (void)state;
    assert_int_equal(osp_fiber_state(0), -1);
    assert_int_equal(osp_fiber_state(-1), -1);
    assert_int_equal(osp_fiber_state(INT64_MIN), -1);
    assert_int_equal(osp_fiber_state(1000000000), -1);
    assert_int_equal(osp_fiber_state(INT64_MAX), -1);
}

/* ---- fibers spawning fibers ---------------------------------------------------------- */

static osp_word child_sum(void *env) {
    int64_t n = *(int64_t *)env;
    if (n <= 1) return (osp_word)n;
    int64_t left = osp_fiber_spawn(child_sum, boxed(n - 1));
    int64_t right = osp_fiber_spawn(child_sum, boxed(n - 2));
    return (osp_word)((int64_t)osp_fiber_wait(left) + (int64_t)osp_fiber_wait(right));
}

static void test_nested_spawn(void **state) {
    (void)state;
    int64_t id = osp_fiber_spawn(child_sum, boxed(12)); /* fib(12) = 144, 465 fibers */
    assert_int_equal(osp_fiber_wait(id), 144);
    assert_int_equal(fake_prof_violations(), 0);
}

/* ---- 999 fibers alive at once ---------------------------------------------------------- */

#define MANY 999
static pthread_barrier_t many_barrier;

static osp_word many_body(void *env) {
    int64_t k = *(int64_t *)env;
    int64_t me = osp_fiber_current_id();
    int64_t id;
    const char *label;
    if (!fake_prof_current(&id, &label) || id != me || strcmp(label, "fiber") != 0)
        return (osp_word)-1;
    const char *text = osp_show_int(k * 7); /* lives across a collection on this stack */
    pthread_barrier_wait(&many_barrier);    /* all 999 fibers and main are alive here */
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)(k * 7));
    if (strcmp(text, want) != 0) return (osp_word)-2;
    return (osp_word)(k * 3 + me * 1000000);
}

static void test_999_fibers(void **state) {
    (void)state;
    assert_int_equal(pthread_barrier_init(&many_barrier, NULL, MANY + 1), 0);
    int64_t *ids = calloc(MANY, sizeof *ids);
    for (int64_t k = 0; k < MANY; k++) {
        ids[k] = osp_fiber_spawn(many_body, boxed(k));
        if (k > 0) assert_int_equal(ids[k], ids[k - 1] + 1);
    }
    pthread_barrier_wait(&many_barrier);
    GC_gcollect(); /* stop the world with 1000 threads */
    for (int64_t k = 0; k < MANY; k++) {
        int64_t v = (int64_t)osp_fiber_wait(ids[k]);
        assert_int_equal(v, k * 3 + ids[k] * 1000000);
        assert_int_equal(osp_fiber_state(ids[k]), 1);
        assert_true(fake_prof_unregistered(ids[k]));
    }
    free(ids);
    pthread_barrier_destroy(&many_barrier);
    assert_int_equal(fake_prof_violations(), 0);
}

/* Fibers that are never awaited still end (detached); spawning goes on working. */
static void test_unawaited(void **state) {
    (void)state;
    for (int i = 0; i < 200; i++) (void)osp_fiber_spawn(return_env_int, boxed(i));
    int64_t last = osp_fiber_spawn(return_env_int, boxed(-5));
    assert_int_equal((int64_t)osp_fiber_wait(last), -5);
}

/* ---- fatal awaits ------------------------------------------------------------------------- */

static int64_t fatal_id;
static void child_await_unknown(void *arg) {
    (void)arg;
    osp_print_line("before await");
    (void)osp_fiber_wait(fatal_id);
    osp_print_line("not reached");
}

static void expect_unknown(int64_t id) {
    fatal_id = id;
    child_output r;
    run_child(child_await_unknown, NULL, &r);
    char want[96];
    snprintf(want, sizeof want, "fatal: await of unknown fiber %lld\n", (long long)id);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "before await\n"); /* flushed before the fatal exit */
    assert_string_equal(r.err, want);
    child_free(&r);
}

static void test_await_unknown(void **state) {
    (void)state;
    expect_unknown(123456789);
    expect_unknown(0);
    expect_unknown(-3);
    expect_unknown(INT64_MIN);
    int64_t ch = osp_handle_register(OSP_HANDLE_CHANNEL, osp_gc_alloc(16));
    expect_unknown(ch);
}

static sem_t self_gate;
static int64_t self_id;
static osp_word await_self(void *env) {
    (void)env;
    while (sem_wait(&self_gate) != 0) {
    }
    return osp_fiber_wait(self_id);
}
static void child_await_self(void *arg) {
    (void)arg;
    sem_init(&self_gate, 0, 0);
    self_id = osp_fiber_spawn(await_self, NULL);
    sem_post(&self_gate);
    (void)osp_fiber_wait(self_id);
}

static void test_await_self(void **state) {
    (void)state;
    child_output r;
    run_child(child_await_self, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_true(strncmp(r.err, "fatal: fiber ", 13) == 0);
    assert_non_null(strstr(r.err, " awaits itself\n"));
    child_free(&r);
}

/* A fatal error on a fiber ends the process while main is blocked in await. */
static osp_word fatal_body(void *env) {
    (void)env;
    osp_print_line("fiber line");
    osp_fatal_no_match("/src/a.osp", 3);
}
static void child_fatal_in_fiber(void *arg) {
    (void)arg;
    osp_print_line("main line");
    int64_t id = osp_fiber_spawn(fatal_body, NULL);
    (void)osp_fiber_wait(id);
    osp_print_line("not reached");
}

static void test_fatal_in_fiber(void **state) {
    (void)state;
    child_output r;
    run_child(child_fatal_in_fiber, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "main line\nfiber line\n");
    assert_string_equal(r.err, "fatal: no match arm matched (/src/a.osp:3)\n");
    child_free(&r);
}

static void test_rt_start_idempotent(void **state) {
    (void)state;
    int64_t boots = fake_prof_boots();
    assert_true(boots >= 1);
    osp_rt_start(0, NULL);
    osp_rt_start(0, NULL);
    /* The profiler's own boot is idempotent; the runtime forwards every call. */
    assert_true(fake_prof_boots() >= boots);
    osp_fiber_yield();
    int64_t id = osp_fiber_spawn(return_env_int, boxed(1));
    assert_int_equal(osp_fiber_wait(id), 1);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_start_at_one_and_are_shared),
        cmocka_unit_test(test_await_and_state),
        cmocka_unit_test(test_await_blocks_in_region),
        cmocka_unit_test(test_unknown_state),
        cmocka_unit_test(test_nested_spawn),
        cmocka_unit_test(test_999_fibers),
        cmocka_unit_test(test_unawaited),
        cmocka_unit_test(test_await_unknown),
        cmocka_unit_test(test_await_self),
        cmocka_unit_test(test_fatal_in_fiber),
        cmocka_unit_test(test_rt_start_idempotent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
