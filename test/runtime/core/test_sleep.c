/*
 * sleep (docs/spec/language.md §11.2, docs/spec/profiler.md §(b.3) "No early returns"): an absolute
 * monotonic deadline, resumed after every signal, inside one blocking region; yield.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_prof.h"
#include "rt_internal.h"

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void test_non_positive_returns_at_once(void **state) {
    (void)state;
    int64_t regions = fake_prof_regions();
    osp_sleep_ms(0);
    osp_sleep_ms(-1);
    osp_sleep_ms(INT64_MIN);
    /* No wait happened, so no blocking region was entered. */
    assert_int_equal(fake_prof_regions(), regions);
}

static void test_sleeps_at_least(void **state) {
    (void)state;
    const int64_t ms[] = {1, 2, 7, 30, 120};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        int64_t regions = fake_prof_regions();
        int64_t t0 = now_ns();
        osp_sleep_ms(ms[i]);
        int64_t slept = now_ns() - t0;
        if (slept < ms[i] * 1000000)
            fail_msg("sleep(%lld) returned after %lld ns", (long long)ms[i], (long long)slept);
        assert_int_equal(fake_prof_regions() - regions, 1);
        assert_int_equal(fake_prof_depth(), 0);
    }
}

/* ---- signal storm ------------------------------------------------------------------ */

static atomic_long signals_seen;
static _Thread_local long signals_here;

static void on_signal(int sig) {
    (void)sig;
    signals_here++;
    atomic_fetch_add_explicit(&signals_seen, 1, memory_order_relaxed);
}

static void install(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* as the profiler installs SIGPROF; sleeps still see EINTR */
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(sig, &sa, NULL), 0);
}

typedef struct {
    pthread_t target;
    atomic_bool stop;
    long sent;
} storm;

/* Signal `target` every 100 µs (alternating SIGPROF and SIGUSR1) until told to stop.
 * The target stays alive until the storm has stopped (see callers). */
static void *storm_main(void *arg) {
    storm *s = arg;
    struct timespec gap = {0, 100000};
    while (!atomic_load(&s->stop)) {
        pthread_kill(s->target, (s->sent & 1) ? SIGUSR1 : SIGPROF);
        s->sent++;
        nanosleep(&gap, NULL);
    }
    return NULL;
}

typedef struct {
    int64_t ms;
    pthread_t self;
    int64_t slept_ns;
    long signals;
    int depth_after;
    int64_t regions;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int phase; /* 0 starting, 1 ready (self set), 2 slept, 3 released */
} sleeper;

static void set_phase(sleeper *s, int phase) {
    pthread_mutex_lock(&s->lock);
    s->phase = phase;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void wait_phase(sleeper *s, int phase) {
    pthread_mutex_lock(&s->lock);
    while (s->phase < phase) pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static osp_word sleeper_body(void *env) {
    sleeper *s = env;
    s->self = pthread_self();
    set_phase(s, 1);
    int64_t regions = fake_prof_regions();
    long before = signals_here;
    int64_t t0 = now_ns();
    osp_sleep_ms(s->ms);
    s->slept_ns = now_ns() - t0;
    s->signals = signals_here - before;
    s->depth_after = fake_prof_depth();
    s->regions = fake_prof_regions() - regions;
    set_phase(s, 2);
    wait_phase(s, 3); /* stay alive until the storm has stopped signalling us */
    return 0;
}

/* A fiber sleeps while another thread signals it every 100 µs. */
static void test_fiber_sleep_under_signal_storm(void **state) {
    (void)state;
    install(SIGPROF);
    install(SIGUSR1);
    const int64_t ms[] = {5, 40, 250};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        sleeper *s = osp_gc_alloc(sizeof *s);
        s->ms = ms[i];
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        int64_t id = osp_fiber_spawn(sleeper_body, s);
        wait_phase(s, 1);
        storm st = {.target = s->self};
        pthread_t storm_thread;
        assert_int_equal(pthread_create(&storm_thread, NULL, storm_main, &st), 0);
        wait_phase(s, 2);
        atomic_store(&st.stop, true);
        pthread_join(storm_thread, NULL);
        set_phase(s, 3);
        (void)osp_fiber_wait(id);

        if (s->slept_ns < ms[i] * 1000000)
            fail_msg("sleep(%lld) returned early after %lld ns with %ld signals", (long long)ms[i],
                     (long long)s->slept_ns, s->signals);
        assert_int_equal(s->depth_after, 0);
        assert_int_equal(s->regions, 1);
        /* The storm really hit the sleeping thread (EINTRs to survive). On a loaded
         * machine the storm thread may get little CPU, so one delivered signal is
         * enough to prove the sleep survived an interruption. */
        if (ms[i] >= 40 && s->signals < 1)
            fail_msg("only %ld signals reached the sleeper (%ld sent)", s->signals, st.sent);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
    }
}

/* The main thread sleeps under the same storm. */
static void test_main_sleep_under_signal_storm(void **state) {
    (void)state;
    install(SIGPROF);
    install(SIGUSR1);
    storm st = {.target = pthread_self()};
    pthread_t storm_thread;
    assert_int_equal(pthread_create(&storm_thread, NULL, storm_main, &st), 0);
    long before = signals_here;
    int64_t t0 = now_ns();
    osp_sleep_ms(150);
    int64_t slept = now_ns() - t0;
    long got = signals_here - before;
    atomic_store(&st.stop, true);
    pthread_join(storm_thread, NULL);
    if (slept < 150 * 1000000LL)
        fail_msg("sleep(150) returned early after %lld ns", (long long)slept);
    if (got < 1) fail_msg("no signal reached the sleeper (%ld sent)", st.sent);
}

/* Huge durations compute their deadline without overflow and really sleep (a failing
 * clock_nanosleep would end the process with a fatal error). The fibers are never
 * awaited: the process exits with them asleep. */
static osp_word sleep_env_ms(void *env) {
    osp_sleep_ms(*(int64_t *)env);
    return 1;
}

static void test_huge_durations(void **state) {
    (void)state;
    const int64_t ms[] = {INT64_MAX, INT64_MAX / 1000, INT64_MAX - 999, 9223372036854775LL,
                          86400000LL * 365 * 1000};
    int64_t ids[sizeof ms / sizeof ms[0]];
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        int64_t *env = osp_gc_alloc(sizeof *env);
        *env = ms[i];
        ids[i] = osp_fiber_spawn(sleep_env_ms, env);
    }
    osp_sleep_ms(50);
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        assert_int_equal(osp_fiber_state(ids[i]), 0);
}

/* yield offers the processor and returns (docs/spec/language.md §11.1): it is not a wait, so it
 * enters no blocking region — the profiler must see a yielding thread as on-CPU — and it
 * keeps the region protocol intact, on the main thread and in a fiber. */
static osp_word yield_in_fiber(void *env) {
    int64_t *regions = env;
    int64_t before = fake_prof_regions();
    for (int i = 0; i < 1000; i++) osp_fiber_yield();
    *regions = fake_prof_regions() - before;
    return 7;
}

static void test_yield(void **state) {
    (void)state;
    int64_t violations = fake_prof_violations();
    int64_t regions = fake_prof_regions();
    for (int i = 0; i < 1000; i++) osp_fiber_yield();
    assert_int_equal(fake_prof_regions(), regions);
    assert_int_equal(fake_prof_depth(), 0);

    int64_t *in_fiber = osp_gc_alloc(sizeof *in_fiber);
    *in_fiber = -1;
    int64_t id = osp_fiber_spawn(yield_in_fiber, in_fiber);
    assert_int_equal(osp_fiber_wait(id), 7);
    assert_int_equal(*in_fiber, 0);
    assert_int_equal(fake_prof_violations(), violations);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_non_positive_returns_at_once),
        cmocka_unit_test(test_sleeps_at_least),
        cmocka_unit_test(test_fiber_sleep_under_signal_storm),
        cmocka_unit_test(test_main_sleep_under_signal_storm),
        cmocka_unit_test(test_huge_durations),
        cmocka_unit_test(test_yield),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
