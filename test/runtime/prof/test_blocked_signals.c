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

#include "prof_session.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A session at `hz` around one thread running `fn`, writing <scratch dir>/run.osprof.json
 * (its directory in dir[256], its path in path[512]). */
static void profile_one_thread(const char *scratch, unsigned hz, void *(*fn)(void *), char *dir,
                               char *path) {
    scratch_dir(dir, 256, scratch);
    snprintf(path, 512, "%s/run.osprof.json", dir);
    assert_true(osp_prof_session_begin(path, hz));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, NULL), 0);
    pthread_join(t, NULL);
    assert_true(osp_prof_session_end());
}

static void test_sleeper_not_signalled(void **state) {
    (void)state;
    char dir[256], path[512];
    atomic_store(&g_eintr, 0);
    profile_one_thread("blocked-signals", 997, sleeper, dir, path);
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

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- region waits weigh what the thread waited ------------------------------------- */

#define BURSTS 120

static double g_burst_wall, g_burst_slept;

static void *burster(void *arg) {
    (void)arg;
    osp_prof_thread_register(8, "burster");
    uint64_t t0 = now_ns();
    double slept = 0;
    for (int i = 0; i < BURSTS; i++) {
        burn_cpu(0.002);
        struct timespec req = {0, 3000000};
        uint64_t a = now_ns();
        osp_prof_block_begin(); /* a runtime wait, as the Osprey runtime's sleep is */
        nanosleep(&req, NULL);
        osp_prof_block_end();
        slept += (double)(now_ns() - a) / 1e9;
    }
    g_burst_wall = (double)(now_ns() - t0) / 1e9;
    g_burst_slept = slept;
    osp_prof_thread_unregister();
    return NULL;
}

/* A thread that runs 2 ms, then waits 3 ms in a region, over and over: shorter than the
 * sampler's tick for waits (10 ms beside a kernel timer). Its waiting samples weigh the
 * time it spent in the regions (measured by the thread), not whole ticks, so its on-CPU
 * and waiting weights together stay within its wall time and the waits are all there.
 * (Weighing a tick found in a region with the whole tick counted the burst before the
 * region twice: on-CPU and waiting.) */
static void test_region_waits_weigh_the_wait(void **state) {
    (void)state;
    char dir[256], path[512];
    profile_one_thread("region-waits", 997, burster, dir, path);
    struct raw r;
    raw_load(&r, path);
    long row = raw_row(&r, "burster", 8);
    assert_true(row >= 0);
    uint64_t w[2] = {0, 0};
    size_t n[2] = {0, 0};
    for (size_t i = 0; i < r.nsamples; i++) {
        if ((long)r.samples[i].row != row || r.samples[i].state > 1) continue;
        w[r.samples[i].state] += r.samples[i].weight;
        n[r.samples[i].state]++;
    }
    double on = (double)w[0] / 1e9, waiting = (double)w[1] / 1e9;
    print_message("burster: %.3f s on-CPU (%zu), %.3f s waiting (%zu); slept %.3f s in %.3f s "
                  "wall: (on + waiting) / wall %.3f, waiting / slept %.3f\n",
                  on, n[0], waiting, n[1], g_burst_slept, g_burst_wall,
                  (on + waiting) / g_burst_wall, waiting / g_burst_slept);
    assert_true(on + waiting <= g_burst_wall * 1.01 + 0.002);
    assert_true(waiting >= 0.9 * g_burst_slept && waiting <= g_burst_slept + 0.002);
    raw_free(&r);
    scratch_cleanup(dir);
}

/* Spins for `ns` of wall time without a system call (CLOCK_MONOTONIC is read in the vDSO):
 * pure computation, as an Osprey function's, never bringing the scheduler's count of the
 * thread's runtime up to date (a CPU-clock read would). */
static void spin_wall(uint64_t ns) {
    uint64_t end = now_ns() + ns;
    volatile uint64_t acc = 0;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++) acc = acc * 31 + (uint64_t)i;
}

#define LONG_BURSTS 40

static double g_long_inner, g_long_outer;

static void *long_burster(void *arg) {
    (void)arg;
    osp_prof_thread_register(10, "long-burster");
    struct osp_prof_slot *s = osp_prof__t_slot;
    assert_non_null(s);
    uint64_t inner = 0, outer = 0, weighed = 0;
    for (int i = 0; i < LONG_BURSTS; i++) {
        spin_wall(10000000); /* longer than a scheduler tick */
        struct timespec req = {0, 4000000};
        uint64_t done0 = atomic_load(&s->wait_done_ns);
        uint64_t a = now_ns();
        osp_prof_block_begin();
        uint64_t b = now_ns();
        nanosleep(&req, NULL);
        uint64_t c = now_ns();
        osp_prof_block_end();
        uint64_t d = now_ns();
        weighed += atomic_load(&s->wait_done_ns) - done0;
        inner += c - b; /* inside the region: the wait, and a few microseconds of CPU */
        outer += d - a; /* the region and its hooks (preemption in them, on a busy machine) */
    }
    g_long_inner = (double)weighed / (double)inner;
    g_long_outer = (double)weighed / (double)outer;
    osp_prof_thread_unregister();
    return NULL;
}

/* A region entered right after a burst of computation longer than a scheduler tick weighs
 * the whole wait. The region's own CPU time used to come from getrusage(RUSAGE_THREAD),
 * which for a running thread lags by up to a tick: the burst's last milliseconds were
 * taken off every wait (0.61-0.82 of the time slept here, 0.74 s for 0.80 s of sleeps in
 * an Osprey program). The regions' total is read directly, so no sampling noise. */
static void test_region_wait_after_long_burst(void **state) {
    (void)state;
    char dir[256], path[512];
    profile_one_thread("region-long-burst", 997, long_burster, dir, path);
    print_message("long bursts: regions weighed %.4f of the time inside them, %.4f of the "
                  "time around them\n",
                  g_long_inner, g_long_outer);
    assert_true(g_long_inner >= 0.98);
    assert_true(g_long_outer <= 1.0);
    scratch_cleanup(dir);
}

/* ---- short waits outside regions ------------------------------------------------------ */

#define PIPE_MSGS 600

static int g_pipe[2], g_ack[2];
static double g_reader_blocked, g_reader_wall;

/* The time this thread has waited for a CPU (schedstat's second field), ns. */
static uint64_t own_runqueue_ns(void) {
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", (long)syscall(SYS_gettid));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    unsigned long long run = 0, rq = 0;
    assert_int_equal(sscanf(buf, "%llu %llu", &run, &rq), 2);
    return rq;
}

static uint64_t own_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Feeds the reader one byte 0.25 ms after each of its acknowledgements, so the reader
 * blocks at every read however slowly it runs on a loaded machine. */
static void *pipe_writer(void *arg) {
    (void)arg;
    for (int i = 0; i < PIPE_MSGS; i++) {
        char c;
        assert_int_equal(read(g_ack[0], &c, 1), 1);
        struct timespec d = {0, 250000};
        nanosleep(&d, NULL);
        assert_int_equal(write(g_pipe[1], "x", 1), 1);
    }
    return NULL;
}

__attribute__((noinline)) void short_waits_read(char *c) {
    assert_int_equal(read(g_pipe[0], c, 1), 1);
}

static void *pipe_reader(void *arg) {
    (void)arg;
    osp_prof_thread_register(11, "reader");
    pthread_t w;
    assert_int_equal(pipe(g_pipe), 0);
    assert_int_equal(pipe(g_ack), 0);
    uint64_t t0 = now_ns(), c0 = own_cpu_ns(), q0 = own_runqueue_ns();
    assert_int_equal(pthread_create(&w, NULL, pipe_writer, NULL), 0);
    for (int i = 0; i < PIPE_MSGS; i++) {
        char c;
        assert_int_equal(write(g_ack[1], "a", 1), 1);
        short_waits_read(&c);
        burn_cpu(0.00075);
    }
    uint64_t t1 = now_ns(), c1 = own_cpu_ns(), q1 = own_runqueue_ns();
    pthread_join(w, NULL);
    /* Blocked: neither on a CPU nor waiting for one. */
    g_reader_blocked = (double)((t1 - t0) - (c1 - c0) - (q1 - q0)) / 1e9;
    g_reader_wall = (double)(t1 - t0) / 1e9;
    osp_prof_thread_unregister();
    close(g_pipe[0]);
    close(g_pipe[1]);
    close(g_ack[0]);
    close(g_ack[1]);
    return NULL;
}

/* A thread that blocks outside any region (a read of a pipe fed 0.25 ms after it asks)
 * after each 0.75 ms of computation: most ticks find it running, after several of its
 * waits. Its waiting weight is the time it was blocked (measured by the thread: wall
 * time less CPU time less time waiting for a CPU). Under the kernel-timed engines a tick
 * that found the thread running used to drop the waits of its interval (0.68-0.93 of the
 * time blocked, with the reader fed every millisecond; 0.97-0.98 now). */
static void test_short_waits_outside_regions(void **state) {
    (void)state;
    char dir[256], path[512];
    profile_one_thread("short-waits", 997, pipe_reader, dir, path);
    struct raw r;
    raw_load(&r, path);
    long row = raw_row(&r, "reader", 11);
    assert_true(row >= 0);
    uint64_t waiting = 0, named = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if ((long)r.samples[i].row != row || r.samples[i].state != 1) continue;
        waiting += r.samples[i].weight;
        if (raw_stack_has(&r, r.samples[i].stack, "short_waits_read")) named += r.samples[i].weight;
    }
    double w = (double)waiting / 1e9;
    print_message("reader: %.3f s waiting (%.3f s under short_waits_read), blocked %.3f s of "
                  "%.3f s wall: %.3f\n",
                  w, (double)named / 1e9, g_reader_blocked, g_reader_wall, w / g_reader_blocked);
    assert_true(g_reader_blocked >= 0.1);
    assert_true(w >= 0.94 * g_reader_blocked && w <= 1.08 * g_reader_blocked + 0.005);
    assert_true(named * 10 >= waiting * 9);
    raw_free(&r);
    scratch_cleanup(dir);
}

/* ---- the request handshake (osp_prof_block_begin, docs/profiler-runtime.md) ---------- */

struct answer {
    pid_t tid;
    long delay_ns;
};

/* Plays the sampler thread's part: the directed SIGPROF of a request already out. */
static void *answerer(void *p) {
    struct answer *a = p;
    struct timespec d = {0, a->delay_ns};
    nanosleep(&d, NULL);
    syscall(SYS_tgkill, getpid(), a->tid, SIGPROF);
    return NULL;
}

/* A request the sampler committed to before it could see the region (req_out raised, the
 * tgkill not yet sent): the thread entering the wait waits for the answer, so the signal
 * lands before the wait blocks, not in it (EINTR). Bounded when no answer comes, and not
 * at all while the thread blocks SIGPROF. */
static void *handshake_thread(void *arg) {
    (void)arg;
    osp_prof_thread_register(9, "handshake");
    struct osp_prof_slot *s = osp_prof__t_slot;
    assert_non_null(s);

    /* 1. Answered 5 ms later: the region begins after the answer. */
    struct answer a = {.tid = (pid_t)syscall(SYS_gettid), .delay_ns = 5000000};
    atomic_store(&s->req_out, 1);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, answerer, &a), 0);
    uint64_t t0 = now_ns();
    osp_prof_block_begin();
    uint64_t waited = now_ns() - t0;
    int out = atomic_load(&s->req_out);
    osp_prof_block_end();
    pthread_join(t, NULL);
    print_message("answered request: region began after %.2f ms, req_out %d\n", waited / 1e6, out);
    assert_int_equal(out, 0);
    assert_true(waited >= 4000000);

    /* 2. SIGPROF blocked: the answer cannot come; no wait. */
    sigset_t prof, old;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &prof, &old);
    atomic_store(&s->req_out, 1);
    t0 = now_ns();
    osp_prof_block_begin();
    waited = now_ns() - t0;
    osp_prof_block_end();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    print_message("SIGPROF blocked: region began after %.3f ms\n", waited / 1e6);
    assert_true(waited < 2000000);

    /* 3. Never answered: the wait is bounded. */
    atomic_store(&s->req_out, 1);
    t0 = now_ns();
    osp_prof_block_begin();
    waited = now_ns() - t0;
    osp_prof_block_end();
    atomic_store(&s->req_out, 0);
    print_message("unanswered request: region began after %.2f ms\n", waited / 1e6);
    assert_true(waited >= 15000000 && waited < 1000000000);
    osp_prof_thread_unregister();
    return NULL;
}

static void test_request_answered_before_wait(void **state) {
    (void)state;
    char dir[256], path[512];
    /* The sampler engine (the one that sends requests) at a rate too low to send this
     * thread one of its own. */
    const char *was = getenv("OSPREY_PROFILE_ENGINE");
    char saved[32] = "";
    if (was) snprintf(saved, sizeof saved, "%s", was);
    setenv("OSPREY_PROFILE_ENGINE", "sampler", 1);
    profile_one_thread("handshake", 10, handshake_thread, dir, path);
    if (was)
        setenv("OSPREY_PROFILE_ENGINE", saved, 1);
    else
        unsetenv("OSPREY_PROFILE_ENGINE");
    scratch_cleanup(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sleeper_not_signalled),
        cmocka_unit_test(test_request_answered_before_wait),
        cmocka_unit_test(test_region_waits_weigh_the_wait),
        cmocka_unit_test(test_region_wait_after_long_burst),
        cmocka_unit_test(test_short_waits_outside_regions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
