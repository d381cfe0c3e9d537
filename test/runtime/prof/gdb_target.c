/*
 * gdb_target.c — the program of the unwinder's gdb validation (gdb_validate.py,
 * docs/spec/profiler.md §(l.1)): its time is in libc (qsort's merge sort and strcmp, which
 * keep no frame pointers, and snprintf), partly inside a signal handler, and it carries the
 * profiler runtime, so it can be profiled (OSPREY_PROFILE) and gdb can ask the runtime's
 * own walker for the stack at a breakpoint (osp_test_gdb_walk).
 * Usage: gdb_target [seconds]   (default 1.5)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "prof_cfi.h"

/* ---- called by gdb at a breakpoint (gdb_validate.py) ------------------------------------ */

uintptr_t osp_test_gdb_frames[OSP_PROF_MAX_FRAMES];
static uintptr_t g_stack_hi; /* the main thread's stack top, taken at start */

/* Walk from the stopped thread's registers with the published tables, as the SIGPROF
 * handler does; the frames go to osp_test_gdb_frames. Returns how many. gdb calls this
 * on the stopped main thread: its dummy frame lies below sp, the stack above is untouched.
 * Calls nothing in libc (gdb has breakpoints there). */
__attribute__((used, noinline)) int osp_test_gdb_walk(uintptr_t pc, uintptr_t sp, uintptr_t fp) {
    uintptr_t hi = g_stack_hi;
    struct osp_unwind_regs r = {.pc = pc, .sp = sp, .fp = fp, .fp_known = true};
    bool tr;
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    size_t n =
        osp_prof__hybrid_walk(set, &r, sp, hi, osp_test_gdb_frames, OSP_PROF_MAX_FRAMES, &tr, NULL);
    osp_prof__cfi_release();
    return (int)n;
}

/* The same walk from a signal: gdb_validate.py resumes the stopped thread with SIGUSR2
 * (no inferior call, which some kernels' extended register state does not allow gdb to
 * make), the handler walks from the interrupted registers — the stop's — and stops at
 * osp_test_gdb_walked, where gdb reads osp_test_gdb_frames[0, osp_test_gdb_nframes). */
int osp_test_gdb_nframes;

__attribute__((used, noinline)) void osp_test_gdb_walked(void) {
    __asm__ volatile("" ::: "memory");
}

static void on_walk_request(int sig, siginfo_t *si, void *ucv) {
    (void)sig, (void)si;
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    osp_test_gdb_nframes = osp_test_gdb_walk((uintptr_t)uc->uc_mcontext.gregs[REG_RIP],
                                             (uintptr_t)uc->uc_mcontext.gregs[REG_RSP],
                                             (uintptr_t)uc->uc_mcontext.gregs[REG_RBP]);
#else
    (void)uc;
    osp_test_gdb_nframes = 0;
#endif
    osp_test_gdb_walked();
}

/* ---- the workload ----------------------------------------------------------------------- */

#define N 4000
static char g_buf[N][32];
static char *g_v[N];

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

__attribute__((noinline)) void gdb_target_format(unsigned seed) {
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        snprintf(g_buf[i], sizeof g_buf[i], "k%08u-%d", seed % 100000000u, i % 31);
        g_v[i] = g_buf[i];
    }
}

__attribute__((noinline)) void gdb_target_sort(void) {
    qsort(g_v, N, sizeof g_v[0], by_name);
}

static volatile sig_atomic_t g_in_handler;

/* A signal handler with work of its own: stacks through the kernel's signal frame. */
static void on_alarm(int sig) {
    (void)sig;
    g_in_handler = 1;
    char tmp[64];
    unsigned s = 7;
    for (int i = 0; i < 2000; i++) {
        s = s * 1103515245u + 12345u;
        snprintf(tmp, sizeof tmp, "%u", s);
    }
    g_in_handler = 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.5;
    pthread_attr_t a;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &addr, &size))
        return 1;
    pthread_attr_destroy(&a);
    g_stack_hi = (uintptr_t)addr + size;
    /* The tables osp_test_gdb_walk reads; a running session builds and refreshes its own
     * (and refresh has one caller at a time). */
    if (!osp_prof__active()) osp_prof__cfi_refresh();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct sigaction wr;
    memset(&wr, 0, sizeof wr);
    wr.sa_sigaction = on_walk_request;
    wr.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&wr.sa_mask);
    sigaddset(&wr.sa_mask, SIGALRM);
    sigaction(SIGUSR2, &wr, NULL);
    struct itimerval it = {{0, 20000}, {0, 20000}}; /* every 20 ms of real time */
    setitimer(ITIMER_REAL, &it, NULL);
    double end = now_s() + secs;
    unsigned seed = 1;
    while (now_s() < end) {
        gdb_target_format(seed++);
        gdb_target_sort();
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("%s\n", g_v[0]);
    return 0;
}
