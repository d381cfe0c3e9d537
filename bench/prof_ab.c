/*
 * prof_ab.c — in-process A/B measurement of the profiler's overhead, for a machine whose
 * other load drifts (bench/prof_overhead.sh). One process alternates short windows of
 * the same CPU-bound work (fib with frame pointers), unprofiled and profiled at 997 Hz
 * and 10 kHz through the test-only sessions, in a shuffled order per round, so that
 * slow changes in machine load hit every mode alike. Session start and stop (and the
 * file write) happen outside the timed windows. Two more modes send bare SIGPROFs with
 * tgkill at 997 Hz and 10 kHz to the working threads, with an empty handler: the cost
 * of signal delivery alone on this machine, which the profiler cannot avoid.
 *
 *   prof_ab <threads 1|2> <rounds> <units per window> <scratch dir>
 *
 * For each mode it prints the median over rounds of
 *   wall  the window's wall time per unit of work,
 *   cpu   the working threads' own CPU time per unit (CLOCK_THREAD_CPUTIME_ID, so the
 *         signal delivery and handler costs are included, the sampler thread's are not),
 * as ratios to the unprofiled medians.
 *
 * What this leaves out: session start and stop and the file write (outside the windows),
 * the sampler thread's own CPU (not in `cpu`), and, with one working thread on a machine
 * with a free core, the sampler's effect on wall time (it runs on the other core). It
 * measures the cost inside the profiled threads only; bench/prof_overhead.sh's
 * whole-process runs and bench/accuracy.sh measure the rest.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "osp_prof.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) long fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
static volatile int g_depth = 24;
__attribute__((noinline)) long work_unit(void) {
    return fib(g_depth);
}

/* Bare signals: a sender thread, active only during "bare" windows. Between them it
 * waits on a condition variable, so it takes no CPU in the other modes (a thread that
 * kept waking up there would slow the unprofiled baseline too and hide part of the
 * profiler's cost when both cores are busy). */
static pthread_mutex_t g_raw_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_raw_cond = PTHREAD_COND_INITIALIZER;
static int g_raw_hz, g_raw_quit; /* under g_raw_lock */
static _Atomic pid_t g_tids[2];
static void empty_handler(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    (void)uc;
}
static void raw_set(int hz, int quit) {
    pthread_mutex_lock(&g_raw_lock);
    g_raw_hz = hz;
    g_raw_quit = quit;
    pthread_cond_signal(&g_raw_cond);
    pthread_mutex_unlock(&g_raw_lock);
}
static void *raw_sender(void *arg) {
    (void)arg;
    struct timespec next;
    for (;;) {
        pthread_mutex_lock(&g_raw_lock);
        while (g_raw_hz == 0 && !g_raw_quit) pthread_cond_wait(&g_raw_cond, &g_raw_lock);
        int hz = g_raw_hz, quit = g_raw_quit;
        pthread_mutex_unlock(&g_raw_lock);
        if (quit) return NULL;
        /* A bare window: tgkill every 1/hz on absolute deadlines until it ends. */
        clock_gettime(CLOCK_MONOTONIC, &next);
        long step = 1000000000L / hz;
        for (;;) {
            next.tv_nsec += step;
            while (next.tv_nsec >= 1000000000L) next.tv_nsec -= 1000000000L, next.tv_sec++;
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0) {
            }
            pthread_mutex_lock(&g_raw_lock);
            int still = g_raw_hz == hz && !g_raw_quit;
            pthread_mutex_unlock(&g_raw_lock);
            if (!still) break;
            for (int i = 0; i < 2; i++) {
                pid_t t = atomic_load(&g_tids[i]);
                if (t) syscall(SYS_tgkill, getpid(), t, SIGPROF);
            }
        }
    }
}

static pthread_barrier_t g_bar;
static long g_units;
static int g_mode; /* 0 off, else rate; -1 quit */
static double g_worker_cpu;
static volatile long g_sink;

static double run_units(void) {
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    long r = 0;
    for (long i = 0; i < g_units; i++) r += work_unit();
    g_sink += r;
    return clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static void *worker(void *arg) {
    (void)arg;
    atomic_store(&g_tids[1], (pid_t)syscall(SYS_gettid));
    for (;;) {
        pthread_barrier_wait(&g_bar); /* session (if any) started */
        if (g_mode < 0) return NULL;
        if (g_mode > 0) osp_prof_thread_register(1, "fiber");
        pthread_barrier_wait(&g_bar); /* go */
        g_worker_cpu = run_units();
        if (g_mode > 0) osp_prof_thread_unregister();
        pthread_barrier_wait(&g_bar); /* done */
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The i-th quartile (1 or 3) of v[0..n), n >= 1, by linear interpolation between order
 * statistics (Python's statistics.quantiles(n=4, method='inclusive')). Sorts v. */
static double quartile(double *v, int n, int i) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    if (n == 1) return v[0];
    int m = n - 1, j = i * m / 4, delta = i * m - j * 4;
    return (v[j] * (4 - delta) + v[j + 1] * delta) / 4;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s <threads 1|2> <rounds> <units> <scratch dir>\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), rounds = atoi(argv[2]);
    g_units = atol(argv[3]);
    if (threads < 1 || threads > 2 || rounds < 1 || rounds > 1000 || g_units < 1) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/ab.json", argv[4]);
    enum { MODES = 5 };
    const int rate[MODES] = {0, 997, 10000, 0, 0};
    const int raw[MODES] = {0, 0, 0, 997, 10000};
    const char *const name[MODES] = {"unprofiled", "997 Hz", "10 kHz", "bare 997", "bare 10k"};
    atomic_store(&g_tids[0], (pid_t)syscall(SYS_gettid));
    /* The empty handler stays installed for the whole run (a late bare signal must never
     * meet the default action); profiling sessions save and restore it like any
     * program's handler. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = empty_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    pthread_t sender;
    if (pthread_create(&sender, NULL, raw_sender, NULL) != 0) return 1;
    double *wall[MODES], *cpu[MODES];
    for (int m = 0; m < MODES; m++) {
        wall[m] = calloc((size_t)rounds, sizeof(double));
        cpu[m] = calloc((size_t)rounds, sizeof(double));
    }
    pthread_t t;
    pthread_barrier_init(&g_bar, NULL, (unsigned)threads);
    if (threads == 2 && pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    unsigned seed = (unsigned)time(NULL);
    for (int r = 0; r < rounds; r++) {
        int order[MODES] = {0, 1, 2, 3, 4};
        for (int i = MODES - 1; i > 0; i--) {
            int j = (int)(rand_r(&seed) % (unsigned)(i + 1)), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        for (int k = 0; k < MODES; k++) {
            int m = order[k];
            g_mode = rate[m];
            if (rate[m] && !osp_prof_session_begin(path, (uint32_t)rate[m])) {
                fprintf(stderr, "prof_ab: cannot start a session\n");
                return 1;
            }
            if (raw[m]) raw_set(raw[m], 0);
            if (threads == 2) pthread_barrier_wait(&g_bar);
            if (threads == 2) pthread_barrier_wait(&g_bar);
            double w0 = clock_s(CLOCK_MONOTONIC);
            double c = run_units();
            if (threads == 2) pthread_barrier_wait(&g_bar);
            double w = clock_s(CLOCK_MONOTONIC) - w0;
            if (threads == 2) c += g_worker_cpu;
            if (rate[m] && !osp_prof_session_end()) return 1;
            if (raw[m]) raw_set(0, 0);
            wall[m][r] = w / (double)g_units;
            cpu[m][r] = c / (double)g_units / threads;
        }
    }
    raw_set(0, 1);
    pthread_join(sender, NULL);
    if (threads == 2) {
        g_mode = -1;
        pthread_barrier_wait(&g_bar);
        pthread_join(t, NULL);
    }
    /* Each round's wall ratio to the unprofiled window of the same round (taken before
     * median() sorts the arrays): their quartiles show how far the machine's drift
     * moves the figure. */
    double *pair[MODES];
    for (int m = 0; m < MODES; m++) {
        pair[m] = calloc((size_t)rounds, sizeof(double));
        for (int r = 0; r < rounds; r++) pair[m][r] = wall[m][r] / wall[0][r];
    }
    double w0 = median(wall[0], rounds), c0 = median(cpu[0], rounds);
    for (int m = 0; m < MODES; m++) {
        double w = median(wall[m], rounds), c = median(cpu[m], rounds);
        double q1 = quartile(pair[m], rounds, 1), q3 = quartile(pair[m], rounds, 3);
        printf("  %-10s wall/unit %8.2f us  ratio %.4f (rounds %.3f..%.3f)   thread CPU/unit %8.2f "
               "us  ratio %.4f\n",
               name[m], w * 1e6, w / w0, q1, q3, c * 1e6, c / c0);
    }
    return 0;
}
