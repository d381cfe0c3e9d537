/*
 * test_capture.c — real sampling sessions in this process (test entry points
 * osp_prof_session_begin / osp_prof_session_end, docs/spec/profiler.md §(d)), each checked through
 * the raw file it writes (§(e)):
 *  - main thread + two workers at 2 kHz: rows, images, hot function inside the
 *    executable's text range, slide, weights equal to measured CPU time (§(b.2), (k) 7);
 *  - a second session in the same process holds only its own data ((k) 17);
 *  - churn: 40 rounds x 8 threads at 10 kHz, no sample outside a thread's lifetime;
 *  - threads that exit registered (return, pthread_exit, cancellation) are dropped by
 *    the exit destructor and their slots reused ((k) 4); more than 1024 live threads;
 *  - threads blocked in nanosleep / poll / read: waiting samples with their blocking
 *    stack, calls that return after the full time, at most two signals ((k) 5, 8);
 *  - blocking regions: the self-captured stack, never signalled;
 *  - errno preserved by the handler, the previous SIGPROF action chained and restored
 *    ((k) 9); a forked child never writes ((k) 15); stacks cut at 128 frames ((k) 10).
 *
 * Minimum sample counts are far below the nominal ones so that a loaded 2-core CI
 * machine (and ThreadSanitizer) passes; the assertions that matter are structural.
 */
#define _GNU_SOURCE
#include "support.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static char g_dir[PATH_MAX];

static int setup(void **state) {
    (void)state;
    scratch_dir(g_dir, sizeof g_dir, "capture");
    /* A TSan run of the perf_event signal variant died of SIGPROF between two tests (once
     * in seven TSan runs). The likely cause, not verified: ThreadSanitizer defers an
     * asynchronous signal that arrives outside its interceptors and runs the handler
     * later from its own copy of the action, so a counter's overflow taken just before a
     * session ended reaches the action restored at the end -- here the default, which
     * terminates. The kernel discards such pending signals when the profiler restores the
     * action through SIG_IGN; TSan's queue it cannot reach. So under TSan this program's
     * own SIGPROF action is SIG_IGN; the test of the restored actions sets each itself. */
    if (RUNNING_UNDER_TSAN) signal(SIGPROF, SIG_IGN);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_cleanup(g_dir);
    return 0;
}

/* After each test: a failed assertion must not leave a session running for the next. */
static int end_session(void **state) {
    (void)state;
    osp_prof_session_end();
    return 0;
}

static void raw_path(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", g_dir, name);
}

/* One session at `hz` writing `name` (its path in `path`) around one thread running
 * `fn(arg)` from start to join. */
static void session_around_thread(char *path, size_t cap, const char *name, int hz,
                                  void *(*fn)(void *), void *arg) {
    raw_path(path, cap, name);
    assert_true(osp_prof_session_begin(path, hz));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(osp_prof_session_end());
}

static pid_t my_tid(void) {
    return (pid_t)syscall(SYS_gettid);
}

static uint64_t mono_ns(void) {
    return osp_prof__mono_ns();
}

/* Sums per row and state. */
struct row_stats {
    size_t n[2];
    uint64_t w[2];
};

static void row_stats(const struct raw *r, long row, struct row_stats *st) {
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < r->nsamples; i++)
        if ((long)r->samples[i].row == row) {
            st->n[r->samples[i].state]++;
            st->w[r->samples[i].state] += r->samples[i].weight;
        }
}

static bool has_image(const struct raw *r, const char *needle) {
    for (size_t i = 0; i < r->nimages; i++)
        if (strstr(r->images[i].path, needle)) return true;
    return false;
}

/* ---- main thread and two workers at 2 kHz ------------------------------------------------ */

struct worker {
    int64_t fiber;
    double burn;
    pid_t tid;
    double cpu_used;
};

void *capture_worker(void *p) {
    struct worker *w = p;
    w->tid = my_tid();
    osp_prof_thread_register(w->fiber, "fiber");
    double c0 = thread_cpu_seconds();
    burn_cpu(w->burn);
    w->cpu_used = thread_cpu_seconds() - c0;
    osp_prof_thread_unregister();
    return NULL;
}

static void test_capture_main_and_two_workers(void **state) {
    (void)state;
    char path[PATH_MAX];
    raw_path(path, sizeof path, "capture.json");
    assert_int_equal(sampler_count(), 0);
    double t0 = mono_seconds();
    assert_true(osp_prof_session_begin(path, 2000));
    assert_true(osp_prof__active());
    assert_int_equal(sampler_count(), 1);
    assert_false(osp_prof_session_begin(path, 2000)); /* one session at a time */
    struct worker w[2] = {{1, 0.4, 0, 0}, {2, 0.4, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, capture_worker, &w[i]), 0);
    burn_cpu(0.2);
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_true(osp_prof_session_end());
    double session_s = mono_seconds() - t0;
    assert_false(osp_prof__active());
    assert_int_equal(sampler_count(), 0); /* joined */
    assert_false(osp_prof_session_end());

    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    struct raw r;
    raw_load(&r, path);
    assert_int_equal(r.rate_hz, 2000);
    assert_int_equal(r.pid, getpid());
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(k > 0);
    exe[k] = '\0';
    assert_string_equal(r.exe, exe);
    /* The sampler thread ticked through the session: at its engine's tick rate (100 Hz
     * beside a kernel timer), with room for a loaded machine. */
    assert_true((double)r.ticks >= 0.3 * session_s * raw_wait_hz(&r, 2000));
    /* The profiler's own CPU no sample carries (its sampler thread ticked, the file was
     * written): more than nothing, less than two cores' worth of the session. */
    assert_true(r.profiler_cpu_ns > 0);
    assert_true((double)r.profiler_cpu_ns < 2.0 * session_s * 1e9);

    /* Rows in registration order: main first. */
    assert_true(r.nthreads == 3);
    assert_int_equal(r.threads[0].fiber, 0);
    assert_string_equal(r.threads[0].label, "main");
    assert_int_equal(r.threads[0].tid, my_tid());
    for (int i = 0; i < 2; i++) {
        long row = raw_row(&r, "fiber", w[i].fiber);
        assert_true(row > 0);
        assert_int_equal(r.threads[row].tid, w[i].tid);
    }

    /* Images: the executable (with a correct slide), the loader, libc, the vDSO. */
    size_t mi = raw_main_image(&r);
    assert_true(r.images[mi].text_size > 0);
    assert_string_equal(r.images[mi].arch, "x86_64");
    uint64_t sym_addr, sym_size;
    assert_true(elf_symbol(exe, "hot_loop", &sym_addr, &sym_size));
    assert_int_equal((uint64_t)(uintptr_t)&hot_loop - r.images[mi].slide, sym_addr);
    assert_true(raw_in_text(&r, mi, (uint64_t)(uintptr_t)&hot_loop));
    assert_true(has_image(&r, "ld-linux"));
    assert_true(has_image(&r, "libc.so"));
    bool vdso = false;
    for (size_t i = 0; i < r.nimages; i++)
        if (strcmp(r.images[i].path, "[vdso]") == 0) {
            vdso = true;
            assert_true(r.images[i].has_symbols && r.images[i].nsymbols > 0);
            assert_true(r.images[i].text_size > 0);
        }
    assert_true(vdso);

    /* Each worker: on-CPU samples whose leaf is the hot function, inside the text range;
     * their weights add up to the CPU time the worker measured itself. */
    for (int i = 0; i < 2; i++) {
        long row = raw_row(&r, "fiber", w[i].fiber);
        struct row_stats st;
        row_stats(&r, row, &st);
        size_t in_hot = 0, named_hot = 0, with_caller = 0;
        for (size_t s = 0; s < r.nsamples; s++) {
            if ((long)r.samples[s].row != row || r.samples[s].state != 0) continue;
            uint32_t sk = r.samples[s].stack;
            uint64_t leaf = r.stacks[sk][0];
            if (strcmp(sym_name(leaf, false), "hot_loop") == 0) {
                named_hot++;
                /* The hot function's addresses fall inside the executable's text range. */
                assert_true(raw_in_text(&r, mi, leaf));
            }
            if (leaf >= sym_addr + r.images[mi].slide &&
                leaf < sym_addr + sym_size + r.images[mi].slide)
                in_hot++;
            if (raw_stack_has(&r, sk, "burn_cpu")) with_caller++;
        }
        print_message("worker %d: %zu on-CPU (%zu in hot_loop, %zu with burn_cpu), "
                      "%zu waiting; weight %.3f s vs %.3f s CPU\n",
                      i, st.n[0], in_hot, with_caller, st.n[1], (double)st.w[0] / 1e9,
                      w[i].cpu_used);
        assert_true((double)st.n[0] >= 0.4 * raw_engine_hz(&r, 2000) / 8);
        assert_int_equal(in_hot, named_hot);
        /* ThreadSanitizer defers an asynchronous signal to its next interceptor (here
         * the clock_gettime of burn_cpu's loop), so under it about half the samples have
         * their leaf at that interceptor's exit (__tsan_read8/__tsan_write8 under
         * ___interceptor_clock_gettime, 45-51 % in hot_loop over 6 runs): the leaf
         * check is for builds that deliver signals where they arrive. */
        if (!RUNNING_UNDER_TSAN) assert_true(in_hot * 2 >= st.n[0]);
        assert_true(with_caller >= 1);
        assert_true(st.n[1] * 50 <= st.n[0]); /* CPU-bound: waiting is rare */
        /* All the CPU time the worker used while registered is in its weights, including
         * what it used after its last sample (added to that sample when it unregistered):
         * never less than what it measured between registering and unregistering, but for
         * a kernel-timed sample that lands in the unregistration itself (a system call of
         * the profiler's work there: osp_prof__own_stack), whose weight, at most a period
         * or two, is the profiler's (ASan and TSan runs, 0.400 s vs 0.400 s). */
        double ratio = (double)st.w[0] / 1e9 / w[i].cpu_used;
        double slack = 2.0 / 2000 / w[i].cpu_used; /* two periods at 2 kHz */
        assert_true(ratio >= 1.0 - slack && ratio < 1.02);
    }
    assert_int_equal(r.dropped_reasons[OSP_RAW_DROP_THREAD_GONE], 0);
    raw_print_dropped(&r, "main and two workers");
    /* (Under ThreadSanitizer signals are delivered in bursts at its interceptors and the
     * sampler runs slowly: rings overflow more often.) */
    assert_true(raw_dropped_samples(&r) * (RUNNING_UNDER_TSAN ? 4 : 20) <= r.nsamples);
    raw_free(&r);
}

/* ---- requests follow CPU time ------------------------------------------------------------- */

/* On-CPU requests are due one period of the thread's CPU time after the previous one
 * (docs/profiler-runtime.md "Rate"), so however threads share the cores, a thread never
 * has more on-CPU samples than its CPU time over the period, plus one. Four busy
 * threads (more than this machine's cores when it has few; on a wide machine the bound
 * holds all the same). */
static void test_rate_follows_cpu_time(void **state) {
    (void)state;
    char path[PATH_MAX];
    raw_path(path, sizeof path, "rate.json");
    const unsigned hz = 2000;
    assert_true(osp_prof_session_begin(path, hz));
    struct worker w[4] = {{21, 0.2, 0, 0}, {22, 0.2, 0, 0}, {23, 0.2, 0, 0}, {24, 0.2, 0, 0}};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, capture_worker, &w[i]), 0);
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_true(osp_prof_session_end());
    struct raw r;
    raw_load(&r, path);
    for (int i = 0; i < 4; i++) {
        long row = raw_row(&r, "fiber", w[i].fiber);
        assert_true(row > 0);
        struct row_stats st;
        row_stats(&r, row, &st);
        /* The sampler engine's requests are due at exact CPU periods: at most one more
         * than CPU x rate. A kernel timer's periods are drawn from [0.7p, 1.3p): the
         * count varies by a few around CPU x rate. With ring delivery the samples' CPU
         * times come from the counter, which runs a few per cent fast on a virtual
         * machine (interrupt and steal time) until its first reading against the CPU
         * clock, 50 ms in: the schedule's catch-up then takes a few samples too many.
         * Measured, release build, 4 threads of 0.2 s CPU on 2 cores, 100 runs each of
         * this tree and the one before it: the ratio to CPU x rate averaged 0.997 to
         * 1.001, and the largest of 400 threads was 1.055 here and 1.090 before (436 for
         * 400); CI's AddressSanitizer run once gave 427. The rate target itself (3 %) is
         * checked over whole seconds by bench/prof_engines.sh; this bound catches a
         * schedule that runs away. */
        double cpu_hz = (double)st.w[0] * hz / 1e9;
        bool exact = strcmp(r.engine, OSP_RAW_ENGINE_SAMPLER) == 0;
        double bound = exact ? cpu_hz + 1 : cpu_hz * 1.10 + 4;
        print_message("worker %d [%s]: %zu on-CPU samples for %.3f s CPU (at most %.1f)\n", i,
                      r.engine, st.n[0], (double)st.w[0] / 1e9, bound);
        assert_true((double)st.n[0] >= 0.2 * raw_engine_hz(&r, hz) / 8);
        assert_true((double)st.n[0] <= bound);
    }
    raw_free(&r);
}

/* ---- a second session in the same process ------------------------------------------------- */

static void test_second_session(void **state) {
    (void)state;
    char a[PATH_MAX], b[PATH_MAX];
    raw_path(a, sizeof a, "first.json");
    raw_path(b, sizeof b, "second.json");
    struct worker w1 = {11, 0.1, 0, 0}, w2 = {12, 0.15, 0, 0};
    pthread_t t;

    assert_true(osp_prof_session_begin(a, 500));
    assert_int_equal(pthread_create(&t, NULL, capture_worker, &w1), 0);
    burn_cpu(0.05);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(osp_prof_session_end());

    uint64_t b0 = mono_ns();
    assert_true(osp_prof_session_begin(b, 1000));
    assert_int_equal(pthread_create(&t, NULL, capture_worker, &w2), 0);
    burn_cpu(0.05);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(osp_prof_session_end());
    uint64_t b1 = mono_ns();

    struct raw ra, rb;
    raw_load(&ra, a);
    raw_load(&rb, b);
    assert_int_equal(ra.rate_hz, 500);
    assert_int_equal(rb.rate_hz, 1000);
    assert_int_equal(ra.nthreads, 2);
    assert_int_equal(rb.nthreads, 2);
    assert_true(raw_row(&ra, "fiber", 11) == 1 && raw_row(&ra, "fiber", 12) < 0);
    assert_true(raw_row(&rb, "fiber", 12) == 1 && raw_row(&rb, "fiber", 11) < 0);
    assert_true(raw_row(&rb, "main", 0) == 0); /* the main thread registered afresh */
    assert_true(rb.start_unix_ns >= ra.end_unix_ns);
    for (size_t i = 0; i < rb.nsamples; i++) assert_true(rb.samples[i].t <= b1 - b0);
    struct row_stats st;
    row_stats(&rb, 1, &st);
    assert_true(st.n[0] >= 20);
    raw_free(&ra);
    raw_free(&rb);
}

/* ---- churn: 40 rounds x 8 threads at 10 kHz ------------------------------------------------ */

struct churn {
    int64_t fiber;
    int mode;
    uint64_t t_reg;
};

__attribute__((noinline)) void churn_region(void) {
    osp_prof_block_begin();
    struct timespec ts = {0, 300000};
    nanosleep(&ts, NULL);
    /* mode 3 leaves the region open and exits: the destructor must cope. */
}

void *churn_thread(void *p) {
    struct churn *c = p;
    /* (t_reg is set by the creating thread just before pthread_create: the interposer
     * registers the thread as it starts, §(l.2), before this registration takes it over.) */
    osp_prof_thread_register(c->fiber, "churn");
    burn_cpu(0.002);
    switch (c->mode) {
    case 0: osp_prof_thread_unregister(); break;
    case 1: break; /* return registered */
    case 2: pthread_exit(NULL);
    case 3: churn_region(); break;
    }
    return NULL;
}

static void test_churn(void **state) {
    (void)state;
    enum { ROUNDS = 40, PER = 8 };
    char path[PATH_MAX];
    raw_path(path, sizeof path, "churn.json");
    static struct churn c[ROUNDS * PER];
    static uint64_t joined[ROUNDS];
    assert_true(osp_prof_session_begin(path, 10000));
    uint64_t start = osp_prof__session_start_mono_ns();
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t t[PER];
        for (int i = 0; i < PER; i++) {
            struct churn *x = &c[round * PER + i];
            x->fiber = 100 + round * PER + i;
            x->mode = i % 4;
            x->t_reg = mono_ns();
            assert_int_equal(pthread_create(&t[i], NULL, churn_thread, x), 0);
        }
        for (int i = 0; i < PER; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
        joined[round] = mono_ns();
    }
    assert_true(osp_prof_session_end());

    struct raw r;
    raw_load(&r, path);
    assert_int_equal(r.nthreads, 1 + ROUNDS * PER);
    assert_int_equal(r.threads_over_limit, 0);
    assert_int_equal(r.dropped_reasons[OSP_RAW_DROP_THREAD_GONE],
                     0); /* never signalled an exited thread */
    size_t churn_samples = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        const struct raw_sample *s = &r.samples[i];
        if (s->row == 0) continue;
        int64_t fiber = r.threads[s->row].fiber;
        assert_string_equal(r.threads[s->row].label, "churn");
        int idx = (int)(fiber - 100);
        assert_true(idx >= 0 && idx < ROUNDS * PER);
        uint64_t t = start + s->t;
        /* No sample before the thread was created or after it was joined. */
        assert_true(t >= c[idx].t_reg);
        assert_true(t <= joined[idx / PER]);
        churn_samples++;
    }
    print_message("churn: %zu samples of churn threads, %zu total\n", churn_samples, r.nsamples);
    raw_print_dropped(&r, "churn");
    assert_true(churn_samples >= 50);
    raw_free(&r);
}

/* ---- threads that exit registered; more threads than slots --------------------------------- */

void *exit_registered_thread(void *p) {
    int mode = (int)(intptr_t)p;
    osp_prof_thread_register(20 + mode, "noreg");
    if (mode == 2) {
        pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
        for (;;) {
            burn_cpu(0.005);
            pthread_testcancel();
        }
    }
    burn_cpu(0.05);
    if (mode == 1) pthread_exit(NULL);
    return NULL;
}

void *short_registered_thread(void *p) {
    osp_prof_thread_register((int64_t)(intptr_t)p, "short");
    return NULL;
}

static void test_threads_exit_without_unregistering(void **state) {
    (void)state;
    char path[PATH_MAX];
    raw_path(path, sizeof path, "noreg.json");
    assert_true(osp_prof_session_begin(path, 2000));
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, exit_registered_thread, (void *)(intptr_t)i),
                         0);
    assert_int_equal(pthread_join(t[0], NULL), 0);
    assert_int_equal(pthread_join(t[1], NULL), 0);
    burn_cpu(0.03);
    assert_int_equal(pthread_cancel(t[2]), 0);
    void *res;
    assert_int_equal(pthread_join(t[2], &res), 0);
    assert_true(res == PTHREAD_CANCELED);
    uint64_t joined = mono_ns() - osp_prof__session_start_mono_ns();
    /* 1100 more threads that each exit registered: only works if the destructor frees
     * their slots (there are 1024). */
    for (int i = 0; i < 1100; i++) {
        pthread_t s;
        assert_int_equal(
            pthread_create(&s, NULL, short_registered_thread, (void *)(intptr_t)(1000 + i)), 0);
        assert_int_equal(pthread_join(s, NULL), 0);
    }
    burn_cpu(0.05); /* ticks go on after the threads are gone */
    assert_true(osp_prof_session_end());

    struct raw r;
    raw_load(&r, path);
    assert_int_equal(r.threads_over_limit, 0);
    assert_int_equal(r.nthreads, 1 + 3 + 1100);
    assert_int_equal(r.dropped_reasons[OSP_RAW_DROP_THREAD_GONE], 0);
    for (int i = 0; i < 3; i++) {
        long row = raw_row(&r, "noreg", 20 + i);
        assert_true(row > 0);
        struct row_stats st;
        row_stats(&r, row, &st);
        /* each burned at least 0.05 s of CPU: a quarter of that engine's samples, at least one
         * (cpu_timer expires at the kernel's tick) */
        double want = 0.05 * raw_engine_hz(&r, 2000) / 4;
        assert_true((double)st.n[0] >= (want > 1 ? want : 1));
        for (size_t s = 0; s < r.nsamples; s++)
            if ((long)r.samples[s].row == row) assert_true(r.samples[s].t <= joined);
    }
    raw_free(&r);
}

static pthread_barrier_t g_many_barrier;

void *many_thread(void *p) {
    osp_prof_thread_register((int64_t)(intptr_t)p, "many");
    pthread_barrier_wait(&g_many_barrier); /* all registered */
    pthread_barrier_wait(&g_many_barrier); /* held until the sampler has seen them */
    return NULL;
}

static void test_more_threads_than_slots(void **state) {
    (void)state;
    enum { N = 1030 };
    char path[PATH_MAX];
    raw_path(path, sizeof path, "many.json");
    assert_true(osp_prof_session_begin(path, 50));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    assert_int_equal(pthread_barrier_init(&g_many_barrier, NULL, N + 1), 0);
    static pthread_t t[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&t[i], &attr, many_thread, (void *)(intptr_t)(i + 1)), 0);
    pthread_barrier_wait(&g_many_barrier);
    struct timespec ts = {0, 150000000};
    nanosleep(&ts, NULL);
    pthread_barrier_wait(&g_many_barrier);
    for (int i = 0; i < N; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&g_many_barrier);
    pthread_attr_destroy(&attr);
    assert_true(osp_prof_session_end());

    struct raw r;
    raw_load(&r, path);
    /* The main thread holds one of the 1024 slots. */
    assert_int_equal(r.nthreads, 1024);
    assert_int_equal(r.threads_over_limit, N + 1 - 1024);
    raw_free(&r);
}

/* ---- threads blocked in foreign calls ------------------------------------------------------ */

struct blocked {
    int kind; /* 0 nanosleep, 1 poll, 2 read */
    int fd;
    double secs;
    int eintr;
    double elapsed;
    ssize_t got;
    _Atomic double t0; /* set just before blocking */
};

__attribute__((noinline)) void sleeper_nanosleep(struct blocked *b) {
    struct timespec req = {(time_t)b->secs, (long)((b->secs - (double)(time_t)b->secs) * 1e9)}, rem;
    while (nanosleep(&req, &rem) == -1 && errno == EINTR) {
        b->eintr++;
        req = rem;
    }
}

__attribute__((noinline)) void sleeper_poll(struct blocked *b) {
    double end = mono_seconds() + b->secs;
    for (;;) {
        double left = end - mono_seconds();
        if (left <= 0) break;
        int r = poll(NULL, 0, (int)(left * 1000.0) + 1);
        if (r < 0 && errno == EINTR) {
            b->eintr++;
            continue;
        }
        if (r == 0 && mono_seconds() >= end) break;
    }
}

__attribute__((noinline)) void sleeper_read(struct blocked *b) {
    char c;
    b->got = read(b->fd, &c, 1); /* SA_RESTART: restarted, never EINTR */
    if (b->got < 0 && errno == EINTR) b->eintr++;
}

void *blocked_thread_main(void *p) {
    struct blocked *b = p;
    osp_prof_thread_register(30 + b->kind, "blocked");
    burn_cpu(0.03); /* a stale stack would show hot_loop */
    double t0 = mono_seconds();
    atomic_store(&b->t0, t0);
    if (b->kind == 0)
        sleeper_nanosleep(b);
    else if (b->kind == 1)
        sleeper_poll(b);
    else
        sleeper_read(b);
    b->elapsed = mono_seconds() - t0;
    osp_prof_thread_unregister();
    return NULL;
}

/* How often one blocking episode may be interrupted: the one capture signal, plus possibly
 * an on-CPU request already in flight when the thread blocked. Under ThreadSanitizer a
 * signal is not handled where it lands but at TSan's next safe point, and every
 * interrupted call runs through TSan's interceptors; under load that CPU can read as
 * progress to the sampler, which then asks again, so the TSan build (there to find races)
 * allows a few more and the release and ASan builds check the real bound. */
#if defined(__SANITIZE_THREAD__)
#define MAX_EINTR 6
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MAX_EINTR 6
#endif
#endif
#ifndef MAX_EINTR
#define MAX_EINTR 2
#endif

static void test_blocked_in_foreign_calls(void **state) {
    (void)state;
    char path[PATH_MAX];
    raw_path(path, sizeof path, "blocked.json");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    struct blocked b[3] = {
        {0, -1, 0.4, 0, 0, 0, 0}, {1, -1, 0.4, 0, 0, 0, 0}, {2, fds[0], 0, 0, 0, 0, 0}};
    assert_true(osp_prof_session_begin(path, 2000));
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, blocked_thread_main, &b[i]), 0);
    /* Write 0.4 s after the reader blocked. The main thread is registered too: its
     * sleeps may see EINTR, so it polls the clock. */
    while (atomic_load(&b[2].t0) == 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    double wake = atomic_load(&b[2].t0) + 0.4;
    while (mono_seconds() < wake) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(write(fds[1], "x", 1), 1);
    for (int i = 0; i < 3; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_true(osp_prof_session_end());
    close(fds[0]);
    close(fds[1]);

    struct raw r;
    raw_load(&r, path);
    raw_print_dropped(&r, "blocked");
    /* No engine signals a blocked thread (§(l.3)); the sampler engine's on-CPU request
     * sent just before a thread blocked may still land in its wait. */
    bool signals = strcmp(r.engine, OSP_RAW_ENGINE_SAMPLER) == 0;
    size_t unshown = 0;

    /* The calls returned after their full time, interrupted at most twice under the
     * sampler engine (the one capture signal of the episode, plus possibly an on-CPU
     * request already in flight when the thread blocked) -- not once per tick -- and
     * never under the kernel-timed engines. */
    assert_true(b[0].elapsed >= 0.4 - 1e-3);
    assert_true(b[1].elapsed >= 0.4 - 1e-3);
    assert_true(b[2].elapsed >= 0.4 - 1e-3);
    assert_int_equal(b[2].got, 1);
    assert_int_equal(b[2].eintr, 0);
    int max_eintr = signals ? MAX_EINTR : 0;
    if (b[0].eintr > max_eintr || b[1].eintr > max_eintr)
        fail_msg("nanosleep interrupted %d times, poll %d times (at most %d each)", b[0].eintr,
                 b[1].eintr, max_eintr);

    for (int i = 0; i < 3; i++) {
        long row = raw_row(&r, "blocked", 30 + i);
        assert_true(row > 0);
        struct row_stats st;
        row_stats(&r, row, &st);
        size_t with_caller = 0, in_burn = 0;
        uint64_t longest_wait_ns = 0;
        for (size_t s = 0; s < r.nsamples; s++) {
            if ((long)r.samples[s].row != row || r.samples[s].state != 1) continue;
            if (r.samples[s].weight > longest_wait_ns) longest_wait_ns = r.samples[s].weight;
            uint32_t k = r.samples[s].stack;
            /* Captured during this wait: never the CPU-burning stack from before it,
             * which a stale capture would show in every tick of the wait. One such
             * sample was seen in one ThreadSanitizer run under load (not reproduced in
             * 4 more; cause not determined: a thread blocked in the kernel outside a
             * system call while it burns -- a page fault waiting for the address-space
             * lock, /proc/<tid>/syscall "-1 <sp> <pc>" -- is really waiting at that
             * stack; or a walk through TSan's interceptor frames). Two are allowed. */
            if (raw_stack_has(&r, k, "hot_loop") || raw_stack_has(&r, k, "burn_cpu")) in_burn++;
            if (raw_stack_has(&r, k, "blocked_thread_main")) with_caller++;
        }
        if (in_burn > 2)
            fail_msg("blocked %d: %zu waiting samples with the burning stack", i, in_burn);
        print_message(
            "blocked %d: %zu waiting (%zu with caller) %.3f s, %zu on-CPU, eintr %d, %.3f s\n", i,
            st.n[1], with_caller, (double)st.w[1] / 1e9, st.n[0], b[i].eintr, b[i].elapsed);
        if (st.n[1] < 5) {
            /* No signal-free stack for a wait in foreign code yet (§(l.4)): the ticks are
             * counted as no_stack, never shown with an invented stack. */
            unshown++;
            continue;
        }
        /* Frame-pointer walks pass through libc's wrappers to our caller. Under
         * ThreadSanitizer poll and read go through its interceptors, which are built
         * without frame pointers and hide every caller (the documented limitation of
         * code without frame pointers, §(c)); there only nanosleep is checked. */
        if (!RUNNING_UNDER_TSAN || i == 0) assert_true(with_caller * 10 >= st.n[1] * 9);
        /* Waiting weights are wall time between ticks: all but the episode's first (which
         * may start before the call) lie inside the call. How close the sum comes to the
         * call's length depends on the machine's load and is measured by bench/ (the
         * waiting share in bench/accuracy.sh), not bounded here. */
        assert_true(st.w[1] - longest_wait_ns <= (uint64_t)(b[i].elapsed * 1e9));
    }
    if (unshown) assert_true(r.dropped_reasons[OSP_RAW_DROP_NO_STACK] >= (uint64_t)unshown);
    raw_free(&r);
}

/* ---- blocking regions ----------------------------------------------------------------------- */

struct region {
    int eintr;
    double elapsed; /* from before osp_prof_block_begin to after osp_prof_block_end */
};

__attribute__((noinline)) void region_wait(struct region *g) {
    double t0 = mono_seconds();
    osp_prof_block_begin();
    osp_prof_block_begin(); /* nested: only the outer pair acts */
    struct timespec req = {0, 300000000}, rem;
    while (nanosleep(&req, &rem) == -1 && errno == EINTR) {
        g->eintr++;
        req = rem;
    }
    osp_prof_block_end();
    osp_prof_block_end();
    g->elapsed = mono_seconds() - t0;
}

void *region_thread_main(void *p) {
    osp_prof_thread_register(40, "region");
    burn_cpu(0.03);
    region_wait(p);
    burn_cpu(0.03);
    osp_prof_thread_unregister();
    return NULL;
}

static void test_blocking_region(void **state) {
    (void)state;
    char path[PATH_MAX];
    struct region g = {0, 0};
    session_around_thread(path, sizeof path, "region.json", 2000, region_thread_main, &g);
    /* Never signalled inside the region (at most one on-CPU request already in flight
     * when it entered). */
    assert_true(g.eintr <= 1);

    struct raw r;
    raw_load(&r, path);
    long row = raw_row(&r, "region", 40);
    assert_true(row > 0);
    struct row_stats st;
    row_stats(&r, row, &st);
    uint64_t longest_wait_ns = 0;
    size_t distrusted = 0;
    for (size_t s = 0; s < r.nsamples; s++) {
        if ((long)r.samples[s].row != row || r.samples[s].state != 1) continue;
        if (r.samples[s].weight > longest_wait_ns) longest_wait_ns = r.samples[s].weight;
        uint32_t k = r.samples[s].stack;
        /* The region's own stack: frame 0 is the hook's return address - 1, inside
         * region_wait. Or, where the thread's CPU clock moved by more than the signal
         * allowance inside the region between two ticks (a loaded machine), the region is
         * distrusted and the blocked thread's stack is read from /proc: the C library's
         * sleep frames, then region_wait (docs/profiler-runtime.md, "siglongjmp"). Either
         * way region_wait is called by region_thread_main. */
        uint32_t j = 0;
        while (j < r.stack_len[k] && strcmp(sym_name(r.stacks[k][j], j > 0), "region_wait") != 0)
            j++;
        if (j == r.stack_len[k]) {
            print_message("region: waiting sample %zu at %.3f s without region_wait:\n", s,
                          (double)r.samples[s].t / 1e9);
            for (uint32_t f = 0; f < r.stack_len[k]; f++)
                print_message("  #%u %#llx %s\n", f, (unsigned long long)r.stacks[k][f],
                              sym_name(r.stacks[k][f], f > 0));
        }
        assert_true(j < r.stack_len[k]);
        if (j > 0) distrusted++;
        assert_true(j + 1 < r.stack_len[k]);
        assert_string_equal(sym_name(r.stacks[k][j + 1], true), "region_thread_main");
    }
    print_message(
        "region: %zu waiting %.3f s (%zu with the stack from /proc), %zu on-CPU, eintr %d\n",
        st.n[1], (double)st.w[1] / 1e9, distrusted, st.n[0], g.eintr);
    /* Checks on events, not on how fast a loaded machine ran the test (how close the
     * waiting weight comes to the region's length is bench/ material): the region was
     * sampled as waiting and the CPU burnt around it as on-CPU; a waiting weight is the wall
     * time between two ticks that both found the thread in the region, except the first
     * one's, which may start before the region — so all but the longest lie inside it. */
    assert_true(st.n[1] >= 1);
    assert_true(st.n[0] >= 1);
    assert_true(st.w[1] - longest_wait_ns <= (uint64_t)(g.elapsed * 1e9));
    raw_free(&r);
}

/* ---- the profiler's own code on a program thread ---------------------------------------------- */

struct own_work {
    long pairs;
    double cpu;
};

void *own_work_main(void *p) {
    struct own_work *w = p;
    osp_prof_thread_register(45, "own");
    double start = thread_cpu_seconds();
    /* Each empty blocking region captures the thread's stack: much of this thread's CPU
     * is the profiler's own work. */
    while (thread_cpu_seconds() < start + 0.3) {
        osp_prof_block_begin();
        osp_prof_block_end();
        w->pairs++;
    }
    w->cpu = thread_cpu_seconds() - start;
    osp_prof_thread_unregister();
    return NULL;
}

/* An on-CPU sample taken in the profiler's own code (section osp_prof_text), or in a
 * function that code called (not through a wrapper of a program call), is the profiler's
 * CPU: counted in profiler_cpu_ns, never a sample of the program
 * (docs/profiler-runtime.md "The raw profile"). */
static void test_own_code_is_profiler_cpu(void **state) {
    (void)state;
#if OSP_PROF_OWN_TEXT
    char path[PATH_MAX];
    struct own_work w = {0, 0};
    session_around_thread(path, sizeof path, "own.json", 2000, own_work_main, &w);
    struct raw r;
    raw_load(&r, path);
    long row = raw_row(&r, "own", 45);
    assert_true(row > 0);
    size_t on = 0, own = 0;
    uint64_t on_w = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if ((long)r.samples[i].row != row || r.samples[i].state != 0) continue;
        on++;
        on_w += r.samples[i].weight;
        if (osp_prof__own_pc((uintptr_t)r.stacks[r.samples[i].stack][0])) own++;
    }
    print_message("own code: %ld region pairs in %.3f s of CPU; %zu on-CPU samples (%.3f s), "
                  "%zu of them in the profiler's code; profiler_cpu_ns %.3f s\n",
                  w.pairs, w.cpu, on, (double)on_w / 1e9, own, (double)r.profiler_cpu_ns / 1e9);
    assert_int_equal(own, 0);
    /* The thread's CPU went somewhere: into its samples or the profiler's account. */
    assert_true((double)on_w + (double)r.profiler_cpu_ns >= 0.5 * w.cpu * 1e9);
    /* Most of it is the regions' bookkeeping -- the walk, and the C library's getrusage
     * and clock_gettime called by it (osp_prof__own_stack: the innermost profiler frame is
     * work, not a wrapper) -- which is the profiler's: the loop's own share (its CPU clock
     * reading each round) was 0.05-0.07 s of 0.3 s; with only a leaf in the profiler's code
     * counted, the program was charged 0.27 s. Not under TSan, which delivers a signal
     * when an interceptor returns: signal-delivered samples land on the loop's own calls
     * (0.15-0.17 s there). */
    if (!RUNNING_UNDER_TSAN) assert_true((double)on_w < 0.5 * w.cpu * 1e9);
    raw_free(&r);
#else
    skip();
#endif
}

/* ---- errno ------------------------------------------------------------------------------------ */

struct errno_check {
    long bad, loops;
};

void *errno_thread(void *p) {
    struct errno_check *e = p;
    osp_prof_thread_register(50, "errno");
    double end = thread_cpu_seconds() + 0.2;
    while (thread_cpu_seconds() < end) {
        errno = 4242;
        hot_loop(2000);
        if (errno != 4242) e->bad++;
        e->loops++;
    }
    osp_prof_thread_unregister();
    return NULL;
}

static void test_errno_preserved(void **state) {
    (void)state;
    char path[PATH_MAX];
    struct errno_check e = {0, 0};
    session_around_thread(path, sizeof path, "errno.json", 10000, errno_thread, &e);
    struct raw r;
    raw_load(&r, path);
    struct row_stats st;
    row_stats(&r, raw_row(&r, "errno", 50), &st);
    /* the handler did run on this thread (0.2 s of CPU) */
    assert_true((double)st.n[0] >= 0.2 * raw_engine_hz(&r, 10000) / 20);
    assert_int_equal(e.bad, 0);
    raw_free(&r);
}

/* ---- the program's own SIGPROF action --------------------------------------------------------- */

static atomic_int g_foreign_calls;
static atomic_int g_foreign_codes[8];

static void counting_action(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (sig != SIGPROF) return;
    int i = atomic_fetch_add(&g_foreign_calls, 1);
    if (i < 8) atomic_store(&g_foreign_codes[i], si ? si->si_code : 99);
}

static atomic_int g_plain_calls;
static void plain_handler(int sig) {
    if (sig == SIGPROF) atomic_fetch_add(&g_plain_calls, 1);
}

static void profile_briefly(const char *name, void (*inside)(void)) {
    char path[PATH_MAX];
    raw_path(path, sizeof path, name);
    assert_true(osp_prof_session_begin(path, 2000));
    burn_cpu(0.05); /* our own directed signals hit this thread meanwhile */
    if (inside) inside();
    burn_cpu(0.02);
    assert_true(osp_prof_session_end());
    struct raw r;
    raw_load(&r, path);
    struct row_stats st;
    row_stats(&r, 0, &st);
    assert_true((double)st.n[0] >= fmin(10, 0.07 * raw_engine_hz(&r, 2000) / 8)); /* 0.07 s CPU */
    raw_free(&r);
}

/* Wait until `counter` reaches `want` (up to 5 s). Sleeping also lets ThreadSanitizer,
 * which defers signals to its interceptors, deliver them. */
static void wait_for(atomic_int *counter, int want) {
    for (int i = 0; i < 500 && atomic_load(counter) < want; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
}

static atomic_int *g_foreign_counter;

static void send_ignored(void) {
    assert_int_equal(kill(getpid(), SIGPROF), 0);
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
}

/* Two SIGPROFs that are not the sampler's: kill() (SI_USER, to the process; only this
 * thread has SIGPROF unblocked) and pthread_sigqueue() (SI_QUEUE, to this thread). A
 * standard signal sent while the same one is pending on the thread is merged into it,
 * so this thread first stops being sampled (and lets a last request of ours arrive),
 * and the two are sent one at a time. */
static void send_foreign(void) {
    osp_prof_thread_unregister();
    struct timespec settle = {0, 20000000};
    nanosleep(&settle, NULL);
    int base = atomic_load(g_foreign_counter);
    assert_int_equal(kill(getpid(), SIGPROF), 0);
    wait_for(g_foreign_counter, base + 1);
    union sigval v = {.sival_int = 7};
    assert_int_equal(pthread_sigqueue(pthread_self(), SIGPROF, v), 0);
    wait_for(g_foreign_counter, base + 2);
}

static struct sigaction g_saved_sigprof;

/* Teardown of the SIGPROF test: end any session, put the original action back. */
static int restore_sigprof(void **state) {
    end_session(state);
    sigaction(SIGPROF, &g_saved_sigprof, NULL);
    return 0;
}

static void test_previous_handler_chained_and_restored(void **state) {
    (void)state;
    /* An SA_SIGINFO handler: foreign signals reach it, ours never do. */
    struct sigaction sa, cur, saved;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = counting_action;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGPROF, &sa, &saved), 0);
    g_saved_sigprof = saved;
    atomic_store(&g_foreign_calls, 0);
    g_foreign_counter = &g_foreign_calls;
    profile_briefly("chain1.json", send_foreign);
    assert_int_equal(atomic_load(&g_foreign_calls), 2);
    assert_int_equal(atomic_load(&g_foreign_codes[0]), SI_USER);
    assert_int_equal(atomic_load(&g_foreign_codes[1]), SI_QUEUE);
    assert_int_equal(sigaction(SIGPROF, NULL, &cur), 0);
    assert_true((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == counting_action);
    assert_true(cur.sa_flags & SA_RESTART);

    /* A plain handler. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = plain_handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGPROF, &sa, NULL), 0);
    atomic_store(&g_plain_calls, 0);
    g_foreign_counter = &g_plain_calls;
    profile_briefly("chain2.json", send_foreign);
    assert_int_equal(atomic_load(&g_plain_calls), 2);
    assert_int_equal(sigaction(SIGPROF, NULL, &cur), 0);
    assert_true(!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == plain_handler);

    /* Ignored: foreign signals stay ignored, SIG_IGN comes back. */
    sa.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGPROF, &sa, NULL), 0);
    profile_briefly("chain3.json", send_ignored);
    assert_int_equal(sigaction(SIGPROF, NULL, &cur), 0);
    assert_true(cur.sa_handler == SIG_IGN);

    /* Default: restored, and no signal of ours is left to kill the process. */
    sa.sa_handler = SIG_DFL;
    assert_int_equal(sigaction(SIGPROF, &sa, NULL), 0);
    profile_briefly("chain4.json", NULL);
    assert_int_equal(sigaction(SIGPROF, NULL, &cur), 0);
    assert_true(cur.sa_handler == SIG_DFL);
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
    assert_int_equal(sigaction(SIGPROF, &saved, NULL), 0);
}

/* ---- fork ------------------------------------------------------------------------------------- */

void *fork_worker(void *p) {
    osp_prof_thread_register(60, "fiber");
    burn_cpu(0.15);
    osp_prof_thread_unregister();
    return p;
}

static void test_fork_child_never_writes(void **state) {
    (void)state;
    char path[PATH_MAX];
    raw_path(path, sizeof path, "fork.json");
    struct sigaction before;
    assert_int_equal(sigaction(SIGPROF, NULL, &before), 0);
    assert_true(osp_prof_session_begin(path, 2000));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fork_worker, NULL), 0);
    burn_cpu(0.03);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The child: inert. No cmocka asserts here; failures are exit codes. */
        int code = 0;
        struct sigaction cur;
        if (thread_count() != 1 || sampler_count() != 0) code = 1;
        if (sigaction(SIGPROF, NULL, &cur) != 0 || cur.sa_handler != before.sa_handler) code = 2;
        if (osp_prof__active()) code = 3;
        osp_prof_thread_register(61, "child");
        osp_prof_block_begin();
        osp_prof_block_end();
        osp_prof_thread_unregister();
        if (osp_prof_session_begin(path, 1000)) code = 4;
        if (sampler_count() != 0) code = 5;
        burn_cpu(0.03);
        exit(code); /* atexit handlers run: the profiler's must not write */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(access(path, F_OK), -1); /* nothing written by the child */
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(osp_prof_session_end());
    struct raw r;
    raw_load(&r, path);
    assert_int_equal(r.pid, getpid());
    assert_true(raw_row(&r, "child", 61) < 0);
    assert_true(raw_row(&r, "fiber", 60) > 0);
    raw_free(&r);
}

/* ---- depth cap on real stacks ----------------------------------------------------------------- */

__attribute__((noinline)) double deep_recursion(int depth) {
    if (depth == 0) return burn_cpu(0.1);
    double r = deep_recursion(depth - 1);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return r + 1;
}

static void test_truncated_stacks(void **state) {
    (void)state;
    char path[PATH_MAX];
    raw_path(path, sizeof path, "deep.json");
    assert_true(osp_prof_session_begin(path, 2000));
    deep_recursion(200);
    assert_true(osp_prof_session_end());
    struct raw r;
    raw_load(&r, path);
    size_t truncated = 0;
    for (size_t k = 0; k < r.nstacks; k++) {
        if (!r.truncated[k]) continue;
        /* Ring delivery also marks a stack truncated where it was cut at the kernel's
         * stack copy (the leaf's rbp was no frame pointer: under ThreadSanitizer, its
         * runtime's frames; docs/profiler-runtime.md "Sampling engines"): shorter. */
        if (r.stack_len[k] < 128) continue;
        truncated++;
        assert_int_equal(r.stack_len[k], 128);
        /* The root end is what is missing: the last frames are all deep_recursion. */
        assert_string_equal(sym_name(r.stacks[k][127], true), "deep_recursion");
    }
    assert_true(truncated >= 1);
    raw_free(&r);
}

/* ---- a coroutine's own stack ------------------------------------------------------------ */

static ucontext_t g_co_main, g_co_ctx;
static volatile unsigned long g_co_sink;

/* About a millisecond of CPU, with no call: every sample in it has it as its leaf. */
__attribute__((noinline)) void coro_hot(void) {
    for (int i = 0; i < 1000000; i++) g_co_sink = g_co_sink * 3 + 1;
}

/* The coroutine's loop: a burst of CPU, then back to the thread's own stack. */
__attribute__((noinline)) void coro_loop(void) {
    for (;;) {
        coro_hot();
        swapcontext(&g_co_ctx, &g_co_main);
    }
}

__attribute__((noinline)) void coro_level(int d) {
    volatile char pad[64];
    pad[0] = (char)d;
    if (d > 0)
        coro_level(d - 1);
    else
        coro_loop();
    g_co_sink += (unsigned long)pad[0];
}

__attribute__((unused)) static void coro_entry(void) { /* not under TSan (see below) */
    coro_level(8);
}

/* Samples taken on a coroutine's stack (makecontext, on the heap: off the thread's
 * registered stack, where the signal handler's walk cannot read) are each whole (ring
 * delivery: the kernel's copy of the stack) or marked truncated -- never a bare leaf shown
 * as called from the thread's root, as they were under signal delivery. */
static void test_coroutine_stack(void **state) {
    (void)state;
#if RUNNING_UNDER_TSAN
    skip(); /* ThreadSanitizer does not follow swapcontext */
#else
    char path[PATH_MAX];
    raw_path(path, sizeof path, "coro.json");
    size_t sz = 256 * 1024;
    void *stk = malloc(sz);
    assert_non_null(stk);
    assert_int_equal(getcontext(&g_co_ctx), 0);
    g_co_ctx.uc_stack.ss_sp = stk;
    g_co_ctx.uc_stack.ss_size = sz;
    g_co_ctx.uc_link = &g_co_main;
    makecontext(&g_co_ctx, coro_entry, 0);
    assert_true(osp_prof_session_begin(path, 997));
    double end = thread_cpu_seconds() + 0.3;
    while (thread_cpu_seconds() < end) assert_int_equal(swapcontext(&g_co_main, &g_co_ctx), 0);
    assert_true(osp_prof_session_end());
    free(stk);
    struct raw r;
    raw_load(&r, path);
    size_t hot = 0, whole = 0, truncated = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if (r.samples[i].state != 0) continue;
        uint32_t k = r.samples[i].stack;
        if (r.stack_len[k] == 0 || strcmp(sym_name(r.stacks[k][0], false), "coro_hot") != 0)
            continue;
        hot++;
        if (r.truncated[k])
            truncated++;
        else if (raw_stack_has(&r, k, "coro_entry") && raw_stack_has(&r, k, "coro_level"))
            whole++;
    }
    print_message("coroutine: %zu samples in coro_hot, %zu whole, %zu truncated (%s)\n", hot, whole,
                  truncated, r.engine);
    assert_true(hot >= 20);
    assert_int_equal(whole + truncated, hot);
    raw_free(&r);
#endif
}

/* ---- registrations racing session starts and stops ------------------------------------ */

/* Whether descriptor `fd` is open on a perf_event counter. */
static bool is_perf_fd(int fd) {
    char path[64], link[128];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0) return false;
    link[n] = 0;
    return strstr(link, "perf_event") != NULL;
}

/* The perf_event descriptors open in this process and its mappings of perf rings. */
static int perf_objects(int *maps) {
    int fds = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (is_perf_fd(fd)) fds++;
    *maps = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512];
    while (fgets(line, sizeof line, f) != NULL)
        if (strstr(line, "perf_event") != NULL) (*maps)++;
    fclose(f);
    return fds;
}

static atomic_int g_race_stop;

void *race_thread(void *p) {
    int64_t id = (int64_t)(intptr_t)p;
    while (!atomic_load(&g_race_stop)) {
        osp_prof_thread_register(id, "race");
        burn_cpu(0.0003);
        osp_prof_thread_unregister();
    }
    return NULL;
}

/* Threads register and unregister in a loop while sessions begin and end: a registration
 * reserves its slot and makes its counter and ring outside the registry mutex (§(d),
 * docs/profiler-runtime.md "For runtime developers"), so a session may end, or a new one
 * begin, in between. Every session's file is whole, every thread in it is one of ours,
 * and nothing made for a registration the session never saw is left: no counter
 * descriptor, no ring mapping. */
static void test_registrations_race_session_stops(void **state) {
    (void)state;
    enum { THREADS = 4, SESSIONS = 12 };
    int maps0, fds0 = perf_objects(&maps0);
    atomic_store(&g_race_stop, 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, race_thread, (void *)(intptr_t)(300 + i)), 0);
    size_t rows = 0;
    for (int k = 0; k < SESSIONS; k++) {
        char path[PATH_MAX], name[32];
        snprintf(name, sizeof name, "race-%d.json", k);
        raw_path(path, sizeof path, name);
        assert_true(osp_prof_session_begin(path, k % 2 ? 10000 : 997));
        burn_cpu(0.01);
        assert_true(osp_prof_session_end());
        struct raw r;
        raw_load(&r, path);
        assert_int_equal(r.threads_over_limit, 0);
        /* The session owner ("main", fiber 0) and the racing threads, in the order they
         * registered: a racing thread may come before the owner. */
        size_t mains = 0;
        for (size_t i = 0; i < r.nthreads; i++) {
            if (strcmp(r.threads[i].label, "main") == 0 && r.threads[i].fiber == 0) {
                mains++;
                continue;
            }
            assert_string_equal(r.threads[i].label, "race");
            assert_true(r.threads[i].fiber >= 300 && r.threads[i].fiber < 300 + THREADS);
        }
        assert_int_equal(mains, 1);
        rows += r.nthreads - 1;
        raw_free(&r);
    }
    atomic_store(&g_race_stop, 1);
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    int maps1, fds1 = perf_objects(&maps1);
    print_message("race: %zu registrations seen by %d sessions; perf descriptors %d -> %d, "
                  "ring mappings %d -> %d\n",
                  rows, SESSIONS, fds0, fds1, maps0, maps1);
    assert_true(rows >= SESSIONS); /* the threads did register while sessions ran */
    assert_int_equal(fds1, fds0);
    assert_int_equal(maps1, maps0);
}

/* ---- a late overflow signal ------------------------------------------------------------- */

/* The lowest descriptor >= 100 open on a perf_event counter, or -1. */
static int perf_fd_open(void) {
    for (int fd = 100; fd < 4096; fd++)
        if (is_perf_fd(fd)) return fd;
    return -1;
}

static void setenv_or_unset(const char *name, const char *value) {
    if (value != NULL)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* An overflow signal of a perf_event counter that reaches the handler after its session
 * ended, while a session of another engine runs (a handler preempted for milliseconds on
 * a loaded machine), is still the profiler's: dropped, never passed to the program's
 * action -- here the default one, which would end the process (§(l.3)). The late signal
 * is forged, with the descriptor the first session's counter had. */
static void test_late_overflow_signal_dropped(void **state) {
    (void)state;
    char *engine = getenv("OSPREY_PROFILE_ENGINE"),
         *delivery = getenv("OSPREY_PROFILE_PERF_DELIVERY");
    engine = engine ? strdup(engine) : NULL;
    delivery = delivery ? strdup(delivery) : NULL;
    struct sigaction dfl, saved;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPROF, &dfl, &saved);
    setenv("OSPREY_PROFILE_ENGINE", "perf_event", 1);
    setenv("OSPREY_PROFILE_PERF_DELIVERY", "signal", 1);
    char path[PATH_MAX];
    raw_path(path, sizeof path, "late-1.json");
    assert_true(osp_prof_session_begin(path, 997));
    int fd = perf_fd_open();
    burn_cpu(0.01);
    assert_true(osp_prof_session_end());
    struct raw r;
    raw_load(&r, path);
    bool perf = strcmp(r.engine, "perf_event") == 0;
    raw_free(&r);
    if (perf && fd >= 0) {
        setenv("OSPREY_PROFILE_ENGINE", "sampler", 1);
        raw_path(path, sizeof path, "late-2.json");
        assert_true(osp_prof_session_begin(path, 997));
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = SIGPROF;
        si.si_code = POLL_IN;
        si.si_fd = fd;
        assert_int_equal(
            syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), SIGPROF, &si), 0);
        burn_cpu(0.01); /* still alive */
        assert_true(osp_prof_session_end());
        raw_load(&r, path);
        assert_string_equal(r.engine, "sampler");
        raw_free(&r);
    } else {
        print_message("late overflow signal: perf_event counters are not available here\n");
    }
    setenv_or_unset("OSPREY_PROFILE_ENGINE", engine);
    setenv_or_unset("OSPREY_PROFILE_PERF_DELIVERY", delivery);
    free(engine);
    free(delivery);
    sigaction(SIGPROF, &saved, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_capture_main_and_two_workers, end_session),
        cmocka_unit_test_teardown(test_rate_follows_cpu_time, end_session),
        cmocka_unit_test_teardown(test_second_session, end_session),
        cmocka_unit_test_teardown(test_churn, end_session),
        cmocka_unit_test_teardown(test_threads_exit_without_unregistering, end_session),
        cmocka_unit_test_teardown(test_more_threads_than_slots, end_session),
        cmocka_unit_test_teardown(test_blocked_in_foreign_calls, end_session),
        cmocka_unit_test_teardown(test_blocking_region, end_session),
        cmocka_unit_test_teardown(test_own_code_is_profiler_cpu, end_session),
        cmocka_unit_test_teardown(test_errno_preserved, end_session),
        cmocka_unit_test_teardown(test_previous_handler_chained_and_restored, restore_sigprof),
        cmocka_unit_test_teardown(test_fork_child_never_writes, end_session),
        cmocka_unit_test_teardown(test_truncated_stacks, end_session),
        cmocka_unit_test_teardown(test_coroutine_stack, end_session),
        cmocka_unit_test_teardown(test_registrations_race_session_stops, end_session),
        cmocka_unit_test_teardown(test_late_overflow_signal_dropped, end_session),
    };
    /* PROF_TEST_FILTER=test_blocking_region runs the matching cases only (debugging). */
    const char *only = getenv("PROF_TEST_FILTER");
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, setup, teardown);
}
