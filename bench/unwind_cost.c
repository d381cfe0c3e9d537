/*
 * unwind_cost.c — the SIGPROF handler's stack walk, before and after the hybrid unwinder
 * (docs/spec/profiler.md §(l.1), issue 11: frame-pointer stacks must not get slower by
 * more than 10 %). One process, one thread, a signal handler that does what the
 * profiler's handler does per sample (read pc/sp/fp from the ucontext, enter the CFI
 * set, walk into a 128-entry buffer, leave), in three modes, alternated round by round
 * so drift hits all alike:
 *   empty   the same handler without a walk (the floor: the handler's timing itself)
 *   fp      osp_prof__fp_walk (the walk before: frame pointers only)
 *   hybrid  osp_prof__sample_walk (osp_prof__cfi_enter + osp_prof__hybrid_walk +
 *           osp_prof__cfi_leave) over the process's own CFI tables: prof_handler.c's call
 *           (the walk now)
 * on three stacks, each the signal's target thread interrupted by a tgkill it issued
 * itself (an inline syscall: the interrupted pc is in frame-pointer code):
 *   fp      24 distinct frame-pointer functions, the walk bounded at the outermost one's
 *           frame (both walks record exactly the same frames): the target;
 *   fp+root the same stack walked to the thread's root (the hybrid walk also steps
 *           through libc's frameless __libc_start_call_main/__libc_start_main to _start,
 *           which the frame chain loses): for information;
 *   qsort   12 frames under qsort's frameless merge sort (CFI steps): for information.
 * Prints the handler's own time per sample (the time-stamp counter around the handler
 * body, calibrated to ns;
 * `walk` is that minus the empty mode): the median over rounds of each round's
 * interquartile mean (the mean of its middle half of signals; a round's plain mean is
 * printed too: on a loaded machine it carries the preemptions that land inside a
 * handler, milliseconds each, which have nothing to do with the walk), the whole signal's round trip, frames per walk, and one 'target ...: ok /
 * MISSED' line: hybrid handler time (medians) <= 1.10 x fp on the fp stack, with the same
 * frames.
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
static uintptr_t g_lo, g_hi, g_stack_hi;
static uintptr_t g_out[OSP_PROF_MAX_FRAMES];
static uint64_t g_handler_ns, g_frames, g_count;
static uint32_t *g_each; /* this round's handler times, one per signal */
static long g_each_cap;

/* The handler's clock: the time-stamp counter on x86-64 (CLOCK_MONOTONIC moves in 10 ns
 * steps on some virtual machines, as much as the difference measured here), calibrated
 * against CLOCK_MONOTONIC at start; CLOCK_MONOTONIC elsewhere. */
static double g_ns_per_tick = 1.0;
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ticks(void) {
    return __rdtsc();
}
#else
static uint64_t now_ns(void);
static inline uint64_t ticks(void) {
    return now_ns();
}
#endif

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void handler(int sig, siginfo_t *si, void *ucv) {
    (void)sig, (void)si;
    uint64_t t0 = ticks();
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
        n = osp_prof__sample_walk(0, &r, lo, g_hi, g_out, OSP_PROF_MAX_FRAMES, &tr, &info);
    }
    g_frames += n;
    uint64_t dt = ticks() - t0;
    if ((long)g_count < g_each_cap) g_each[g_count] = dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;
    g_count++;
    g_handler_ns += dt;
}

static long g_per_round;
static pid_t g_pid, g_tid;

/* The bottom of each stack: send the round's signals to this thread, with the syscall
 * inline so the interrupted pc is this frame-pointer function's. */
__attribute__((noinline)) static void fire(void) {
    for (long i = 0; i < g_per_round; i++) {
#if defined(__x86_64__)
        long ret;
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "0"((long)SYS_tgkill), "D"((long)g_pid), "S"((long)g_tid),
                           "d"((long)SIGUSR2)
                         : "rcx", "r11", "memory");
        (void)ret;
#else
        syscall(SYS_tgkill, g_pid, g_tid, SIGUSR2);
#endif
    }
}

/* 24 distinct frame-pointer functions f0 -> f1 -> ... -> f23 -> fire. f0 records its own
 * frame record's end: the bound of the "fp" stack. */
#define CHAIN_FN(i, next)                       \
    __attribute__((noinline)) int f##i(int x) { \
        int r = next(x + 1);                    \
        __asm__ volatile("" ::: "memory");      \
        return r + 1;                           \
    }
static int fire_fn(int x) {
    fire();
    return x;
}
CHAIN_FN(23, fire_fn)
CHAIN_FN(22, f23)
CHAIN_FN(21, f22)
CHAIN_FN(20, f21)
CHAIN_FN(19, f20)
CHAIN_FN(18, f19)
CHAIN_FN(17, f18)
CHAIN_FN(16, f17)
CHAIN_FN(15, f16)
CHAIN_FN(14, f15)
CHAIN_FN(13, f14)
CHAIN_FN(12, f13)
CHAIN_FN(11, f12)
CHAIN_FN(10, f11)
CHAIN_FN(9, f10)
CHAIN_FN(8, f9)
CHAIN_FN(7, f8)
CHAIN_FN(6, f7)
CHAIN_FN(5, f6)
CHAIN_FN(4, f5)
CHAIN_FN(3, f4)
CHAIN_FN(2, f3)
CHAIN_FN(1, f2)
__attribute__((noinline)) int f0(int bounded) {
    /* Bounded: the walk may read f0's frame record (its return address is the last frame)
     * and nothing above it. */
    g_hi = bounded ? (uintptr_t)__builtin_frame_address(0) + 16 : g_stack_hi;
    int r = f1(1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

/* qsort's merge sort calls cmp (frameless libc frames between our frames). */
static int g_cmp_fired;
static int cmp(const void *a, const void *b) {
    if (!g_cmp_fired) {
        g_cmp_fired = 1;
        f12(0);
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

static int u32cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The mean of the middle half of n values (sorted in place): robust against the
 * preemptions a loaded machine puts inside some handlers, and finer than a median of
 * per-signal times that the clock quantises (10 ns steps on some virtual machines). */
static double middle_mean(uint32_t *v, size_t n) {
    if (n == 0) return 0.0;
    qsort(v, n, sizeof *v, u32cmp);
    size_t a = n / 4, z = n - n / 4;
    double sum = 0;
    for (size_t i = a; i < z; i++) sum += v[i];
    return sum / (double)(z - a);
}

struct figures {
    double handler_ns, handler_mean_ns, round_trip_ns, frames;
};

enum { STACK_FP, STACK_FP_ROOT, STACK_QSORT, NSTACKS };
static const char *const stack_names[NSTACKS] = {
    "fp: 24 distinct frame-pointer functions, walk bounded at the outermost (same frames)",
    "fp+root: the same stack walked to the thread's root (libc's frameless start frames)",
    "qsort: 12 frames under qsort's frameless merge sort"};

/* Median over rounds of each mode's handler time and round trip per signal. */
static void measure(int rounds, int which, struct figures out[NMODES]) {
    double *h[NMODES], *hm[NMODES], *rt[NMODES];
    for (int m = 0; m < NMODES; m++) {
        h[m] = calloc((size_t)rounds, sizeof(double));
        hm[m] = calloc((size_t)rounds, sizeof(double));
        rt[m] = calloc((size_t)rounds, sizeof(double));
    }
    double frames[NMODES] = {0};
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NMODES; k++) {
            int m = (k + r) % NMODES; /* rotate the order each round */
            g_mode = m;
            g_handler_ns = g_frames = g_count = 0;
            uint64_t t0 = now_ns();
            if (which == STACK_QSORT) {
                g_hi = g_stack_hi;
                sort_chain(12);
            } else {
                f0(which == STACK_FP);
            }
            uint64_t t1 = now_ns();
            size_t ne = g_count < (uint64_t)g_each_cap ? (size_t)g_count : (size_t)g_each_cap;
            h[m][r] = middle_mean(g_each, ne) * g_ns_per_tick;
            hm[m][r] = (double)g_handler_ns * g_ns_per_tick / (double)g_count;
            rt[m][r] = (double)(t1 - t0) / (double)g_count;
            frames[m] = (double)g_frames / (double)g_count;
        }
    for (int m = 0; m < NMODES; m++) {
        qsort(h[m], (size_t)rounds, sizeof(double), dcmp);
        qsort(hm[m], (size_t)rounds, sizeof(double), dcmp);
        qsort(rt[m], (size_t)rounds, sizeof(double), dcmp);
        out[m].handler_ns = h[m][rounds / 2];
        out[m].handler_mean_ns = hm[m][rounds / 2];
        out[m].round_trip_ns = rt[m][rounds / 2];
        out[m].frames = frames[m];
        free(h[m]);
        free(hm[m]);
        free(rt[m]);
    }
}

int main(int argc, char **argv) {
    g_per_round = argc > 1 ? atol(argv[1]) : 20000;
    int rounds = argc > 2 ? atoi(argv[2]) : 31;
    if (g_per_round < 1 || rounds < 1) return 2;
    g_each_cap = g_per_round;
    g_each = calloc((size_t)g_each_cap, sizeof *g_each);
    if (g_each == NULL) return 1;
    g_pid = getpid();
    g_tid = (pid_t)syscall(SYS_gettid);
    pthread_attr_t a;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &addr, &size))
        return 1;
    g_lo = (uintptr_t)addr;
    g_stack_hi = (uintptr_t)addr + size;
    osp_prof__cfi_refresh();
    {
        uint64_t n0 = now_ns(), c0 = ticks(), n1;
        do n1 = now_ns();
        while (n1 - n0 < 50000000ull);
        g_ns_per_tick = (double)(n1 - n0) / (double)(ticks() - c0);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    printf("unwind_cost: %ld signals per round, %d rounds, medians over rounds of each round's "
           "interquartile mean (ns per sample; mean: of each round's plain mean)\n",
           g_per_round, rounds);
    int ok = 1;
    for (int which = 0; which < NSTACKS; which++) {
        struct figures f[NMODES];
        measure(rounds, which, f);
        printf("%s\n", stack_names[which]);
        for (int m = 0; m < NMODES; m++)
            printf("  %-7s handler %8.1f ns (mean %8.1f)  round trip %8.1f ns  %5.1f frames\n",
                   mode_names[m], f[m].handler_ns, f[m].handler_mean_ns, f[m].round_trip_ns,
                   f[m].frames);
        double fp_w = f[MODE_FP].handler_ns - f[MODE_EMPTY].handler_ns;
        double hy_w = f[MODE_HYBRID].handler_ns - f[MODE_EMPTY].handler_ns;
        double ratio = f[MODE_HYBRID].handler_ns / f[MODE_FP].handler_ns;
        double rt_ratio = f[MODE_HYBRID].round_trip_ns / f[MODE_FP].round_trip_ns;
        printf("  walk alone: fp %.1f ns, hybrid %.1f ns (%.3f); handler hybrid/fp %.3f; signal "
               "round trip hybrid/fp %.3f\n",
               fp_w, hy_w, fp_w > 0 ? hy_w / fp_w : 0.0, ratio, rt_ratio);
        if (which == STACK_FP) {
            /* The handler's time per sample, hybrid against frame pointers, on a stack both
             * walk alike (the same frames). */
            int good = ratio <= 1.10 && f[MODE_HYBRID].frames == f[MODE_FP].frames;
            ok &= good;
            printf("target handler cost per sample on frame-pointer stacks, hybrid <= 1.10 x fp: "
                   "%s (%.3f, %+.1f ns; %.1f vs %.1f frames)\n",
                   good ? "ok" : "MISSED", ratio, hy_w - fp_w, f[MODE_HYBRID].frames,
                   f[MODE_FP].frames);
        } else {
            printf("  (frames: fp %.1f, hybrid %.1f)\n", f[MODE_FP].frames, f[MODE_HYBRID].frames);
        }
    }
    osp_prof__cfi_reset();
    return ok ? 0 : 0; /* figures, not a test: the verdict is the printed line */
}
