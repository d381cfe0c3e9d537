/*
 * test_blocked_signals.c — a blocked thread is never signalled (docs/spec/profiler.md
 * §(l.4)), and its waiting stack still names its own callers. A registered thread
 * alternates short CPU bursts with 15 ms nanosleeps (nanosleep is never restarted after a
 * handler, so every signal that lands in it is seen as EINTR); before §(l.4) the sampler
 * sent a capture signal, or an on-CPU request for the burst, into nearly every sleep.
 * Now the sampler asks the scheduler first and reads the sleeper's stack from /proc:
 * at most a few sleeps (a thread that blocks between the sampler's check and the
 * signal's arrival) may see one, and the waiting samples have the sleeper's frames.
 */
#define _GNU_SOURCE
#include "support.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CYCLES 60

static _Atomic int g_eintr;

__attribute__((noinline)) void blocked_signals_sleeper_nap(void) {
    struct timespec req = {0, 15000000}, rem;
    while (nanosleep(&req, &rem) == -1 && errno == EINTR) {
        atomic_fetch_add(&g_eintr, 1);
        req = rem;
    }
    __asm__ volatile("" ::: "memory");
}

static void *sleeper(void *arg) {
    (void)arg;
    osp_prof_thread_register(7, "sleeper");
    for (int i = 0; i < CYCLES; i++) {
        burn_cpu(0.0015); /* more than a period at 997 Hz, less than a tick's worth */
        blocked_signals_sleeper_nap();
    }
    osp_prof_thread_unregister();
    return NULL;
}

static void test_sleeper_not_signalled(void **state) {
    (void)state;
    char dir[256], path[512];
    scratch_dir(dir, sizeof dir, "blocked-signals");
    snprintf(path, sizeof path, "%s/run.osprof.json", dir);
    atomic_store(&g_eintr, 0);
    assert_true(osp_prof_session_begin(path, 997));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, sleeper, NULL), 0);
    pthread_join(t, NULL);
    assert_true(osp_prof_session_end());
    struct raw r;
    raw_load(&r, path);
    long row = raw_row(&r, "sleeper", 7);
    assert_true(row >= 0);
    size_t waiting = 0, named = 0;
    uint64_t waiting_ns = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].row != (uint32_t)row || r.samples[i].state != 1) continue;
        waiting++;
        waiting_ns += r.samples[i].weight;
        if (raw_stack_has(&r, r.samples[i].stack, "blocked_signals_sleeper_nap")) named++;
    }
    int eintr = atomic_load(&g_eintr);
    print_message("sleeper: %d of %d sleeps interrupted; %zu waiting samples (%.3f s), %zu name "
                  "the caller; %llu blocked reads, %llu requests not sent to a blocked thread\n",
                  eintr, CYCLES, waiting, (double)waiting_ns / 1e9, named,
                  (unsigned long long)r.unwind[5], (unsigned long long)r.unwind[6]);
    /* The waiting samples come at the sampler thread's tick (100 Hz beside a kernel timer):
     * several of the 60 naps of 15 ms are seen, and their weights carry the time slept
     * (0.9 s; more under load, never much less). */
    assert_true(waiting >= CYCLES / 6);
    assert_true(waiting_ns >= 0.6 * CYCLES * 15e6);
    assert_true(named * 10 >= waiting * 9); /* the /proc stacks reach the program's frames */
    assert_true(r.unwind[5] > 0);           /* stacks read without a signal */
    assert_true(eintr <= CYCLES / 10);
    raw_free(&r);
    scratch_cleanup(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sleeper_not_signalled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
