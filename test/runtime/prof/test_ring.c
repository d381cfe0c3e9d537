/*
 * test_ring.c — the perf_event engine's two deliveries (docs/profiler-runtime.md
 * "Sampling engines"): ring delivery, where the kernel writes each sample (registers, its
 * frame-pointer call chain and a copy of the top of the stack) into a ring buffer that the
 * sampler thread walks later, and signal delivery (OSPREY_PROFILE_PERF_DELIVERY=signal),
 * where the counter signals the thread and the handler walks the live stack. Both must
 * give the same stacks:
 *  - a stack deeper than the ring's stack copy (60 frames of 400+ bytes): the walk over
 *    the copy is continued with the kernel's chain, every frame, not marked truncated;
 *  - a leaf without frame pointers: its caller (which a frame-pointer walk skips) is
 *    found from the leaf's CFI over the copy;
 *  - a callback under two frameless frames: both are there;
 * and on-CPU weight adds up to the thread's CPU time. Ring delivery is checked to be the
 * one running by its mapping in /proc/self/maps (skipped where the kernel refuses rings:
 * perf_event_paranoid 3, a locked-memory limit).
 */
#define _GNU_SOURCE
#include "support.h"

#include "frameless.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "osp_prof.h"

static char g_dir[PATH_MAX];

static int setup(void **state) {
    (void)state;
    scratch_dir(g_dir, sizeof g_dir, "ring");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_cleanup(g_dir);
    return 0;
}

static int end_session(void **state) {
    (void)state;
    osp_prof_session_end();
    unsetenv("OSPREY_PROFILE_PERF_DELIVERY");
    unsetenv("OSPREY_PROFILE_ENGINE");
    return 0;
}

/* Whether a perf_event ring is mapped in this process now. */
static bool ring_mapped(void) {
    static char buf[1 << 20];
    long n = read_text("/proc/self/maps", buf, sizeof buf);
    return n > 0 && strstr(buf, "perf_event") != NULL;
}

/* The perf_event rings mapped in this process now. */
static int rings_mapped(void) {
    static char buf[1 << 20];
    long n = read_text("/proc/self/maps", buf, sizeof buf);
    int c = 0;
    for (const char *p = buf; n > 0 && (p = strstr(p, "perf_event")) != NULL; p++) c++;
    return c;
}

/* Start a session at `hz` with the given delivery ("ring" or "signal"); false when the
 * perf_event engine (or, for "ring", ring delivery) is not available here. */
static bool begin(const char *path, unsigned hz, const char *delivery) {
    setenv("OSPREY_PROFILE_ENGINE", "perf_event", 1);
    setenv("OSPREY_PROFILE_PERF_DELIVERY", delivery, 1);
    assert_true(osp_prof_session_begin(path, hz));
    if (strcmp(delivery, "ring") == 0 && !ring_mapped()) {
        osp_prof_session_end();
        print_message("ring delivery unavailable here: skipped\n");
        return false;
    }
    return true;
}

/* End the session and load its file into `r`; false (nothing kept) when an engine other
 * than perf_event ran (the kernel refused it). */
static bool finish(const char *path, struct raw *r) {
    assert_true(osp_prof_session_end());
    raw_load(r, path);
    if (strcmp(r->engine, "perf_event") == 0) return true;
    raw_free(r);
    return false;
}

/* ---- a stack deeper than the copy --------------------------------------------------------- */

#define DEPTH 60

__attribute__((noinline)) double ring_deep(int n) {
    volatile char pad[400];
    memset((char *)pad, n, sizeof pad);
    double v = n == 0 ? burn_cpu(0.4) : ring_deep(n - 1);
    return v + pad[n % 400];
}

/* Frames of stack `k` named `fn`. */
static size_t count_named(const struct raw *r, uint32_t k, const char *fn) {
    size_t c = 0;
    for (uint32_t i = 0; i < r->stack_len[k]; i++)
        if (strcmp(sym_name(r->stacks[k][i], i > 0), fn) == 0) c++;
    return c;
}

static void deep_case(const char *delivery) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/deep-%s.json", g_dir, delivery);
    if (!begin(path, 997, delivery)) return;
    double c0 = thread_cpu_seconds();
    ring_deep(DEPTH);
    double used = thread_cpu_seconds() - c0;
    struct raw r;
    if (!finish(path, &r)) return;
    size_t hot = 0, whole = 0, truncated = 0;
    uint64_t w = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0) continue;
        w += r.samples[i].weight;
        uint32_t k = r.samples[i].stack;
        if (!raw_stack_has(&r, k, "hot_loop")) continue;
        hot++;
        if (r.truncated[k]) truncated++;
        /* DEPTH + 1 calls of ring_deep, then this function and main. */
        if (count_named(&r, k, "ring_deep") == DEPTH + 1 && raw_stack_has(&r, k, "main")) whole++;
    }
    print_message(
        "%s: %zu samples in hot_loop, %zu whole, %zu truncated; weight %.3f s of %.3f s CPU\n",
        delivery, hot, whole, truncated, (double)w / 1e9, used);
    assert_true(hot >= 200);
    /* A sample whose outer frames cannot be told for certain is cut at the copy: never
     * kept wrong, and (but for a thread's first) not kept at all -- its thread is moved to
     * signal delivery and its CPU time goes to the next sample. */
    assert_true(truncated <= 1); /* a thread's first cut sample is kept */
    assert_true(whole + truncated + 2 >= hot);
    assert_true(whole >= hot * 93 / 100);
    /* Weight: the CPU from the session's start (before the timed call) is in it too. */
    assert_true((double)w / 1e9 >= used * 0.97);
    raw_free(&r);
}

static void test_deep_ring(void **state) {
    (void)state;
    deep_case("ring");
}

static void test_deep_signal(void **state) {
    (void)state;
    deep_case("signal");
}

/* ---- frameless frames --------------------------------------------------------------------- */

__attribute__((noinline)) long ring_spin_caller(void) {
    unsigned long acc = 0;
    double end = thread_cpu_seconds() + 0.3;
    while (thread_cpu_seconds() < end) acc += (unsigned long)osp_test_frameless_spin(200000);
    return (long)(acc & 0xffff);
}

static void ring_callback(void *arg) {
    *(double *)arg += burn_cpu(0.3);
}

__attribute__((noinline)) void ring_frameless_outer(void) {
    double acc = 0;
    osp_test_frameless_nested(ring_callback, &acc);
}

static void frameless_case(const char *delivery) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/frameless-%s.json", g_dir, delivery);
    if (!begin(path, 997, delivery)) return;
    ring_spin_caller();
    ring_frameless_outer();
    struct raw r;
    if (!finish(path, &r)) return;
    /* Leaf spin: frame 1 is its caller. Callback: both frameless frames above it. */
    size_t spin = 0, spin_ok = 0, cb = 0, cb_ok = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0) continue;
        uint32_t k = r.samples[i].stack;
        if (r.stack_len[k] >= 2 &&
            strcmp(sym_name(r.stacks[k][0], false), "osp_test_frameless_spin") == 0) {
            spin++;
            if (strcmp(sym_name(r.stacks[k][1], true), "ring_spin_caller") == 0 &&
                raw_stack_has(&r, k, "main"))
                spin_ok++;
        } else if (raw_stack_has(&r, k, "hot_loop") &&
                   raw_stack_has(&r, k, "ring_frameless_outer")) {
            cb++;
            if (raw_stack_has(&r, k, "osp_test_frameless_call") &&
                raw_stack_has(&r, k, "osp_test_frameless_nested"))
                cb_ok++;
        }
    }
    print_message(
        "%s: frameless leaf %zu/%zu with its caller, callback %zu/%zu with both frameless "
        "frames\n",
        delivery, spin_ok, spin, cb_ok, cb);
    /* Under ThreadSanitizer the spin's volatile accesses call into its runtime, where
     * most of the samples land: fewer have the frameless leaf itself. */
    assert_true(spin >= (RUNNING_UNDER_TSAN ? 10 : 150));
    assert_true(cb >= 150);
    assert_true(spin_ok >= spin * 97 / 100);
    assert_true(cb_ok >= cb * 97 / 100);
    raw_free(&r);
}

static void test_frameless_ring(void **state) {
    (void)state;
    frameless_case("ring");
}

static void test_frameless_signal(void **state) {
    (void)state;
    frameless_case("signal");
}

/* ---- a buffer on the stack bigger than the copy ------------------------------------------- */

/* A frame-pointer function with 16 KiB of locals calls a frameless leaf (as a function
 * with an I/O buffer on its stack calls memcpy or read): the copy taken at the leaf ends
 * inside the buffer, below the caller's frame record, so the copy holds no record of the
 * kernel's chain. Such samples were cut, marked truncated, and the thread moved to signal
 * delivery at the first. */
__attribute__((noinline)) long ring_big_frame(double seconds) {
    volatile char buf[16384];
    memset((char *)buf, 5, sizeof buf);
    unsigned long acc = 0;
    double end = thread_cpu_seconds() + seconds;
    while (thread_cpu_seconds() < end) acc += (unsigned long)osp_test_frameless_spin(200000);
    return (long)((acc + (unsigned long)buf[acc % sizeof buf]) & 0xffff);
}

static void test_big_frame_ring(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/bigframe.json", g_dir);
    if (!begin(path, 997, "ring")) return;
    int before = rings_mapped();
    ring_big_frame(0.4);
    int after = rings_mapped();
    struct raw r;
    if (!finish(path, &r)) return;
    size_t leaf = 0, whole = 0, truncated = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0) continue;
        uint32_t k = r.samples[i].stack;
        if (r.stack_len[k] < 2 ||
            strcmp(sym_name(r.stacks[k][0], false), "osp_test_frameless_spin") != 0)
            continue;
        leaf++;
        if (r.truncated[k]) truncated++;
        if (strcmp(sym_name(r.stacks[k][1], true), "ring_big_frame") == 0 &&
            raw_stack_has(&r, k, "main") && !r.truncated[k])
            whole++;
    }
    print_message("16 KiB frame: %zu samples in the frameless leaf, %zu whole to main, %zu "
                  "truncated; rings %d before, %d after\n",
                  leaf, whole, truncated, before, after);
    /* Under ThreadSanitizer most samples land in its runtime (the spin's volatile
     * accesses), whose leaves hold an rbp that is no frame pointer: the thread is moved to
     * signal delivery at its first such sample, as test_clobbered_rbp_deep's is. */
    assert_true(leaf >= (RUNNING_UNDER_TSAN ? 10 : 150));
    assert_true(whole >= leaf * 97 / 100);
    if (!RUNNING_UNDER_TSAN) assert_int_equal(after, before); /* the thread kept its ring */
    raw_free(&r);
}

/* ---- short-lived threads ------------------------------------------------------------------ */

static double g_short_cpu[400];

/* About 0.3 ms of CPU, a third of a period at 997 Hz. */
__attribute__((noinline)) void *ring_brief_worker(void *arg) {
    osp_prof_thread_register((int64_t)(intptr_t)arg + 1000, "brief");
    double c0 = thread_cpu_seconds();
    volatile unsigned long acc = 0;
    while (thread_cpu_seconds() < c0 + 0.0003) acc += (unsigned long)osp_test_frameless_spin(2000);
    g_short_cpu[(intptr_t)arg] = thread_cpu_seconds() - c0;
    osp_prof_thread_unregister();
    return NULL;
}

/* 400 threads of 0.3 ms each: each is sampled with a chance of a third (its first sample
 * is due at a point drawn from the residual distribution of the periods), and the one
 * sample of a sampled thread weighs the period, so their weight in the worker is their
 * CPU time in expectation. Before, the first period was floored at half a period and
 * such threads were never sampled (weight 0); with the draw alone, a sampled thread's
 * weight was its own CPU time (a third of the total). */
static void test_short_threads_ring(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/short.json", g_dir);
    if (!begin(path, 997, "ring")) return;
    double truth = 0;
    for (intptr_t i = 0; i < 400; i++) {
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, ring_brief_worker, (void *)i), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        truth += g_short_cpu[i];
    }
    struct raw r;
    if (!finish(path, &r)) return;
    uint64_t w = 0;
    size_t n = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0 || !raw_stack_has(&r, r.samples[i].stack, "ring_brief_worker"))
            continue;
        w += r.samples[i].weight;
        n++;
    }
    double ratio = (double)w / 1e9 / truth;
    print_message("400 threads of %.2f ms: %zu samples in the worker, weight %.4f s of %.4f s "
                  "CPU (%.2f)\n",
                  truth / 400 * 1e3, n, (double)w / 1e9, truth, ratio);
    /* About 120 samples of 1 ms: one standard deviation is about 8 %. */
    assert_true(ratio > 0.6 && ratio < 1.4);
    raw_free(&r);
}

/* ---- callers above the copy that change ---------------------------------------------------- */

/* The main thread alternates two callers every 5 ms, each under the same 30 KiB of
 * recursion: what lies above the copy differs between samples whose copies are alike.
 * No sample may show one caller's leaf under the other caller. */
__attribute__((noinline)) double ring_mid(int n, int which) {
    volatile char pad[400];
    memset((char *)pad, n, sizeof pad);
    double v;
    if (n > 0)
        v = ring_mid(n - 1, which);
    else
        v = which ? hot_loop(40000) : hot_loop(40001);
    return v + pad[n % 400];
}

__attribute__((noinline)) double ring_phase_a(void) {
    double v = ring_mid(70, 0);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return v + 1;
}

__attribute__((noinline)) double ring_phase_b(void) {
    double v = ring_mid(70, 1);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return v + 1;
}

static void callers_case(const char *delivery) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/callers-%s.json", g_dir, delivery);
    if (!begin(path, 997, delivery)) return;
    double end = thread_cpu_seconds() + 0.5;
    volatile double acc = 0;
    while (thread_cpu_seconds() < end) {
        double t = thread_cpu_seconds() + 0.005;
        while (thread_cpu_seconds() < t) acc += ring_phase_a();
        t = thread_cpu_seconds() + 0.005;
        while (thread_cpu_seconds() < t) acc += ring_phase_b();
    }
    struct raw r;
    if (!finish(path, &r)) return;
    size_t a = 0, b = 0, both = 0, cut = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0) continue;
        uint32_t k = r.samples[i].stack;
        if (!raw_stack_has(&r, k, "ring_mid")) continue;
        bool ha = raw_stack_has(&r, k, "ring_phase_a"), hb = raw_stack_has(&r, k, "ring_phase_b");
        if (ha && hb) both++;
        if (ha) a++;
        if (hb) b++;
        if (!ha && !hb) cut++;
    }
    print_message("%s: under phase a %zu, under b %zu, under both %zu, under neither %zu\n",
                  delivery, a, b, both, cut);
    assert_int_equal(both, 0);
    /* Under ThreadSanitizer samples land at its interceptors' exits and its frames
     * change the stacks' shape: only "never mixed" is checked there. */
    if (!RUNNING_UNDER_TSAN) {
        assert_true(a >= 100 && b >= 100);
        assert_true(cut * 10 <= a + b);
    }
    raw_free(&r);
}

static void test_callers_ring(void **state) {
    (void)state;
    callers_case("ring");
}

static void test_callers_signal(void **state) {
    (void)state;
    callers_case("signal");
}

#if defined(__x86_64__)
/* A deep stack under a leaf whose rbp is not a frame pointer: ring samples cannot tell
 * what lies above the copy, so at the first the thread is moved to signal delivery; the
 * cut samples are not kept (their CPU time goes to the next sample) except a thread's
 * first, so every stack but that one is whole, and the weights add up to the CPU time. */
__attribute__((noinline)) double ring_clobber_deep(int n) {
    volatile char pad[400];
    memset((char *)pad, n, sizeof pad);
    double v;
    if (n > 0) {
        v = ring_clobber_deep(n - 1);
    } else {
        double end = thread_cpu_seconds() + 0.4;
        v = 0;
        while (thread_cpu_seconds() < end) v += (double)osp_test_clobber_spin(200000);
    }
    return v + pad[n % 400];
}

static void test_clobbered_rbp_deep(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/clobber.json", g_dir);
    if (!begin(path, 997, "ring")) return;
    double c0 = thread_cpu_seconds();
    ring_clobber_deep(DEPTH);
    double used = thread_cpu_seconds() - c0;
    struct raw r;
    if (!finish(path, &r)) return;
    size_t leaf = 0, whole = 0, truncated = 0;
    uint64_t w = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0) continue;
        w += r.samples[i].weight;
        uint32_t k = r.samples[i].stack;
        if (strcmp(sym_name(r.stacks[k][0], false), "osp_test_clobber_spin") != 0) continue;
        leaf++;
        if (r.truncated[k]) truncated++;
        if (count_named(&r, k, "ring_clobber_deep") == DEPTH + 1 && raw_stack_has(&r, k, "main"))
            whole++;
    }
    print_message("clobbered rbp: %zu samples in the leaf, %zu whole, %zu truncated; weight %.3f s "
                  "of %.3f s CPU\n",
                  leaf, whole, truncated, (double)w / 1e9, used);
    assert_true((double)w / 1e9 >= used * 0.97); /* the cut samples' time is in the others */
    assert_true(leaf >= (RUNNING_UNDER_TSAN ? 10 : 200));
    /* ThreadSanitizer runs a signal handler at its next interceptor with the context of
     * the moment the signal came: signal delivery's walks of that stale context are not
     * whole there (see test_capture), so after the move only the count is checked. */
    if (RUNNING_UNDER_TSAN) {
        raw_free(&r);
        return;
    }
    /* At most the first: a thread with no sample yet keeps its first cut sample. */
    assert_true(truncated <= 1);
    assert_true(whole + 2 >= leaf);
    raw_free(&r);
}
#endif

/* ---- a thread whose outermost frame has a zero return address ---------------------------- */

/* The runtime's fiber entry zeroes its own return-address slot so that walks end there.
 * A ring sample whose stack is deeper than the copy is continued with the kernel's chain,
 * checked against a walk of the live stack when the sampler reads it; when the thread has
 * moved on by then (here it switches between two recursions every millisecond, so their
 * frames overwrite each other), the chain alone is certain only through functions that
 * keep the frame chain, up to that zero return address. Such samples were cut: marked
 * truncated, and the thread moved to signal delivery. */
__attribute__((noinline)) double zero_deep_a(int n) {
    volatile char pad[200];
    memset((char *)pad, n, sizeof pad);
    double v = n == 0 ? burn_cpu(0.001) : zero_deep_a(n - 1);
    return v + pad[n % 200];
}

__attribute__((noinline)) double zero_deep_b(int n) {
    volatile char pad[184];
    memset((char *)pad, n, sizeof pad);
    double v = n == 0 ? burn_cpu(0.001) : zero_deep_b(n - 1);
    return v + pad[n % 184];
}

struct zero_run {
    double used, v;
    int rings0, rings1;
};

__attribute__((noinline)) void *zero_root_thread(void *p) {
    struct zero_run *z = p;
    void *volatile *slot = (void *volatile *)__builtin_frame_address(0) + 1;
    void *ret = *slot;
    *slot = NULL;
    osp_prof_thread_register(77, "fiber");
    z->rings0 = rings_mapped();
    double c0 = thread_cpu_seconds();
    /* Copies of 8 KiB end near depth 36: these stacks are deeper. */
    while (thread_cpu_seconds() < c0 + 0.6)
        for (int depth = 40; depth < 60; depth++)
            z->v += depth % 2 ? zero_deep_a(depth) : zero_deep_b(depth);
    z->used = thread_cpu_seconds() - c0;
    z->rings1 = rings_mapped();
    osp_prof_thread_unregister();
    *slot = ret;
    return NULL;
}

static void test_zero_return_root(void **state) {
    (void)state;
#if defined(__x86_64__)
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/zero-root.json", g_dir);
    if (!begin(path, 997, "ring")) return;
    struct zero_run z = {0, 0, 0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, zero_root_thread, &z), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    struct raw r;
    if (!finish(path, &r)) return;
    long row = raw_row(&r, "fiber", 77);
    assert_true(row >= 0);
    size_t deep = 0, ends = 0, truncated = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if ((long)r.samples[i].row != row || r.samples[i].state != 0) continue;
        uint32_t k = r.samples[i].stack;
        if (!raw_stack_has(&r, k, "zero_deep_a") && !raw_stack_has(&r, k, "zero_deep_b")) continue;
        deep++;
        if (r.truncated[k]) truncated++;
        uint32_t last = r.stack_len[k] - 1;
        if (strcmp(sym_name(r.stacks[k][last], true), "zero_root_thread") == 0) ends++;
    }
    print_message("zero return address: %zu samples in the recursions, %zu ending at the "
                  "thread's entry, %zu truncated; rings %d -> %d; %.3f s CPU\n",
                  deep, ends, truncated, z.rings0, z.rings1, z.used);
    assert_true(deep >= (RUNNING_UNDER_TSAN ? 10 : 300));
    assert_int_equal(truncated, 0);
    assert_true(ends + 2 >= deep);
    /* Still sampled by its ring. Not in sanitizer builds: a sample whose leaf is in the
     * sanitizer's runtime (built without frame pointers; memset, the clock's interceptor)
     * can hold an rbp that is no frame pointer, which nothing above the copy can follow:
     * the thread is moved then as test_clobbered_rbp_deep's is. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ZERO_ROOT_SANITIZED 1
#endif
#endif
#ifndef ZERO_ROOT_SANITIZED
    assert_int_equal(z.rings1, z.rings0);
#endif
    raw_free(&r);
#else
    skip();
#endif
}

/* ---- threads that come and go ----------------------------------------------------------- */

void *ring_short_worker(void *p) {
    osp_prof_thread_register((int64_t)(intptr_t)p, "fiber");
    burn_cpu(0.05);
    osp_prof_thread_unregister();
    return NULL;
}

/* Each thread's ring is emptied when it unregisters: the samples of 16 threads that each
 * run 50 ms are all there (about 50 each at 997 Hz). */
static void test_ring_threads_unregister(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/threads.json", g_dir);
    if (!begin(path, 997, "ring")) return;
    for (int round = 0; round < 4; round++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            assert_int_equal(pthread_create(&t[i], NULL, ring_short_worker,
                                            (void *)(intptr_t)(round * 4 + i + 1)),
                             0);
        for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    }
    struct raw r;
    if (!finish(path, &r)) return;
    size_t on = 0;
    for (size_t i = 0; i < r.nsamples; i++)
        if (r.samples[i].state == 0 && raw_stack_has(&r, r.samples[i].stack, "ring_short_worker"))
            on++;
    print_message("16 threads of 50 ms: %zu on-CPU samples (expected about 800)\n", on);
    assert_true(on >= 16 * 50 * 85 / 100);
    raw_free(&r);
}

/* ---- time in the kernel, at its system call ---------------------------------------------- */

/* Whether this process may sample kernel mode with a task-clock counter of its own
 * (perf_event_paranoid <= 1, or CAP_PERFMON): what ring delivery then does. */
static bool kernel_sampling_allowed(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 1000000;
    a.disabled = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return false;
    close(fd);
    return true;
}

static char g_block[65536];

/* Mostly kernel time: copies of 64 KiB into the page cache. */
__attribute__((noinline)) void ring_kernel_phase(int fd, int n) {
    for (int i = 0; i < n; i++)
        if (pwrite(fd, g_block, sizeof g_block, 0) != (ssize_t)sizeof g_block) fail();
}

/* (The empty statement after the call keeps it from being a tail call: this frame is in
 * the stack.) */
__attribute__((noinline)) void ring_user_phase(double s) {
    burn_cpu(s);
    __asm__ volatile("");
}

/* A thread alternating about 4 ms of system calls and 4 ms of computation, 100 times: with
 * kernel mode sampled, each phase's weight is its CPU time. User-only, an expiry that
 * falls in the kernel is dropped and the phase's time was weighed on the next user-mode
 * sample, in the computation (sysalt: the writes showed 6 % of the CPU time for 47 %). */
static void test_kernel_time_at_its_call(void **state) {
    (void)state;
    if (!kernel_sampling_allowed()) {
        print_message("kernel mode cannot be sampled here (perf_event_paranoid >= 2): skipped\n");
        return;
    }
    char path[PATH_MAX], file[PATH_MAX];
    snprintf(path, sizeof path, "%s/kernel.json", g_dir);
    snprintf(file, sizeof file, "%s/kernel.bin", g_dir);
    int fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    /* Writes per phase: about 4 ms of CPU, measured first. */
    double c0 = thread_cpu_seconds();
    ring_kernel_phase(fd, 200);
    double per = (thread_cpu_seconds() - c0) / 200;
    int n = per > 0 ? (int)(0.004 / per) + 1 : 1000;
    if (!begin(path, 997, "ring")) {
        close(fd);
        return;
    }
    double in_kernel = 0, in_user = 0;
    for (int round = 0; round < 100; round++) {
        double a = thread_cpu_seconds();
        ring_kernel_phase(fd, n);
        double b = thread_cpu_seconds();
        ring_user_phase(0.004);
        in_kernel += b - a;
        in_user += thread_cpu_seconds() - b;
    }
    close(fd);
    struct raw r;
    if (!finish(path, &r)) return;
    uint64_t wk = 0, wu = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0) continue;
        uint32_t k = r.samples[i].stack;
        if (raw_stack_has(&r, k, "ring_kernel_phase")) wk += r.samples[i].weight;
        if (raw_stack_has(&r, k, "ring_user_phase")) wu += r.samples[i].weight;
    }
    double share = (double)wk / (double)(wk + wu), truth = in_kernel / (in_kernel + in_user);
    print_message("system calls: weight %.3f s, computation %.3f s: %.3f of the two (measured "
                  "CPU %.3f s and %.3f s: %.3f)\n",
                  (double)wk / 1e9, (double)wu / 1e9, share, in_kernel, in_user, truth);
    assert_true(wk + wu > 0);
    assert_true(share > truth - 0.08 && share < truth + 0.08);
    raw_free(&r);
}

/* ---- threads that switch often ----------------------------------------------------------- */

struct pingpong {
    int in, out; /* pipe ends: read a byte from in, write it to out */
    int64_t fiber;
    double cpu;
    long rounds;
    double busy_first; /* seconds of CPU computed before the first read */
};

/* Pass each byte read on, until a 'q' (put into both pipes at the end: each thread reads
 * one, whoever holds the ball). */
__attribute__((noinline)) void *ring_pingpong(void *p) {
    struct pingpong *pp = p;
    osp_prof_thread_register(pp->fiber, "fiber");
    double c0 = thread_cpu_seconds();
    volatile unsigned long acc = 0;
    while (thread_cpu_seconds() < c0 + pp->busy_first)
        acc += (unsigned long)osp_test_frameless_spin(20000);
    char b = 0;
    while (read(pp->in, &b, 1) == 1 && b != 'q') {
        if (write(pp->out, &b, 1) != 1) break;
        __atomic_fetch_add(&pp->rounds, 1, __ATOMIC_RELAXED); /* read while it runs */
    }
    pp->cpu = thread_cpu_seconds() - c0;
    osp_prof_thread_unregister();
    return NULL;
}

/* Two threads passing a byte back and forth through pipes switch tens of thousands of
 * times a second: each moves from its ring counter (whose timer the kernel stops and
 * starts at every switch: the ping-pong ran several times slower) to a CPU-time timer
 * within the first ticks, and is still sampled, its weight its CPU time. */
static void test_switching_threads_leave_the_ring(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pingpong.json", g_dir);
    if (!begin(path, 997, "ring")) return;
    int before = rings_mapped();
    int ab[2], ba[2];
    assert_int_equal(pipe(ab), 0);
    assert_int_equal(pipe(ba), 0);
    struct pingpong a = {ba[0], ab[1], 31, 0, 0, 0}, b = {ab[0], ba[1], 32, 0, 0, 0};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, ring_pingpong, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, ring_pingpong, &b), 0);
    char go = 1, quit = 'q';
    assert_int_equal(write(ab[1], &go, 1), 1); /* b reads first, then a */
    struct timespec nap = {0, 400000000};
    nanosleep(&nap, NULL);
    int during = rings_mapped();
    assert_int_equal(write(ab[1], &quit, 1), 1);
    assert_int_equal(write(ba[1], &quit, 1), 1);
    assert_int_equal(pthread_join(ta, NULL), 0);
    assert_int_equal(pthread_join(tb, NULL), 0);
    for (int i = 0; i < 2; i++) {
        close(ab[i]);
        close(ba[i]);
    }
    struct raw r;
    if (!finish(path, &r)) return;
    print_message("rings mapped: %d before the threads, %d after 0.4 s of ping-pong (%ld and "
                  "%ld round trips)\n",
                  before, during, a.rounds, b.rounds);
    assert_true(a.rounds > 1000);
    /* Both threads left their rings (the main thread may have lost its own meanwhile: a
     * sample in a function that uses rbp as a scratch register, under a sanitizer its
     * runtime's, cut and moved to signal delivery). */
    assert_true(during <= before);
    struct pingpong *t[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        long row = raw_row(&r, "fiber", t[i]->fiber);
        assert_true(row >= 0);
        size_t on = 0;
        uint64_t w = 0;
        for (size_t k = 0; k < r.nsamples; k++)
            if ((long)r.samples[k].row == row && r.samples[k].state == 0) {
                on++;
                w += r.samples[k].weight;
            }
        print_message("thread %d: %zu on-CPU samples, weight %.3f s of %.3f s CPU\n", i, on,
                      (double)w / 1e9, t[i]->cpu);
        assert_true((double)w / 1e9 >= 0.9 * t[i]->cpu);
        assert_true(on >= 5);
    }
    raw_free(&r);
}

/* Threads that compute for 0.3 s first (past their first switch-rate windows, whose
 * voluntary switches are then not read: schedstat shows too few runs on a CPU) and then
 * pass a byte back and forth leave the ring too, within 0.3 s of starting to switch. */
static void test_late_switching_threads_leave_the_ring(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/latepingpong.json", g_dir);
    if (!begin(path, 997, "ring")) return;
    int before = rings_mapped();
    int ab[2], ba[2];
    assert_int_equal(pipe(ab), 0);
    assert_int_equal(pipe(ba), 0);
    struct pingpong a = {ba[0], ab[1], 33, 0, 0, 0.3}, b = {ab[0], ba[1], 34, 0, 0, 0.3};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, ring_pingpong, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, ring_pingpong, &b), 0);
    char go = 1, quit = 'q';
    assert_int_equal(write(ab[1], &go, 1), 1); /* read once b has computed */
    /* Both compute until about 0.3 s of CPU each (on two cores: about 0.3 s of wall time,
     * up to 0.6 s on one, more on a loaded machine: the first round trip is awaited for up
     * to 10 s). The rings are counted while they are still computing, then 0.3 s into the
     * ping-pong. */
    struct timespec nap = {0, 150000000};
    nanosleep(&nap, NULL);
    int computing = rings_mapped();
    long r0 = 0;
    for (int i = 0; i < 1000 && (r0 = __atomic_load_n(&a.rounds, __ATOMIC_RELAXED)) == 0; i++) {
        struct timespec ms10 = {0, 10000000};
        nanosleep(&ms10, NULL);
    }
    nap.tv_nsec = 300000000;
    nanosleep(&nap, NULL);
    int during = rings_mapped();
    long r1 = __atomic_load_n(&a.rounds, __ATOMIC_RELAXED);
    assert_int_equal(write(ab[1], &quit, 1), 1);
    assert_int_equal(write(ba[1], &quit, 1), 1);
    assert_int_equal(pthread_join(ta, NULL), 0);
    assert_int_equal(pthread_join(tb, NULL), 0);
    for (int i = 0; i < 2; i++) {
        close(ab[i]);
        close(ba[i]);
    }
    struct raw r;
    if (!finish(path, &r)) return;
    print_message("rings mapped: %d before the threads, %d while they compute, %d after 0.3 s "
                  "of ping-pong (%ld round trips then, %ld in all)\n",
                  before, computing, during, r1 - r0, a.rounds);
    assert_true(r0 > 0);
    assert_true(r1 - r0 > 1000);
    /* Under ThreadSanitizer samples landing in its runtime move threads to signal delivery
     * (see test_big_frame_ring) whatever they do: the rings say nothing there. */
    if (RUNNING_UNDER_TSAN) {
        raw_free(&r);
        return;
    }
    /* The main thread may lose its ring meanwhile (a sample in a C library function that
     * uses rbp as a scratch register, its frame record above the copy: cut, and moved to
     * signal delivery), so the two threads' rings are counted against it: both computing
     * threads keep theirs, and both leave them. */
    assert_true(computing >= before + 1 && computing >= 2);
    assert_true(during <= computing - 2);
    raw_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_deep_ring, end_session),
        cmocka_unit_test_teardown(test_deep_signal, end_session),
        cmocka_unit_test_teardown(test_frameless_ring, end_session),
        cmocka_unit_test_teardown(test_frameless_signal, end_session),
        cmocka_unit_test_teardown(test_big_frame_ring, end_session),
        cmocka_unit_test_teardown(test_short_threads_ring, end_session),
        cmocka_unit_test_teardown(test_callers_ring, end_session),
        cmocka_unit_test_teardown(test_callers_signal, end_session),
#if defined(__x86_64__)
        cmocka_unit_test_teardown(test_clobbered_rbp_deep, end_session),
#endif
        cmocka_unit_test_teardown(test_zero_return_root, end_session),
        cmocka_unit_test_teardown(test_ring_threads_unregister, end_session),
        cmocka_unit_test_teardown(test_kernel_time_at_its_call, end_session),
        cmocka_unit_test_teardown(test_switching_threads_leave_the_ring, end_session),
        cmocka_unit_test_teardown(test_late_switching_threads_leave_the_ring, end_session),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
