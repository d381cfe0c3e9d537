/*
 * prof_perf_causes.c — where the perf_event engine's samples and CPU go, measured on a
 * bare perf_event_open task-clock counter (no profiler linked), one variable at a time
 * (bench/prof_perf_causes.sh runs it; docs/profiler-runtime.md "Cost" quotes it).
 *
 *   prof_perf_causes rate <hz> <seconds> <exclude_kernel> <rt> <ioctl_every>
 *       one thread spins for <seconds> of wall time with a counter that signals it every
 *       period of its CPU time: exclude_kernel 0/1 (0 needs perf_event_paranoid <= 1 or
 *       CAP_PERFMON), rt 1 = a real-time signal (queued) instead of SIGPROF (coalesced),
 *       ioctl_every k > 0 = PERF_EVENT_IOC_PERIOD every k-th signal (as the engine does to
 *       draw a period). The handler reads the thread's CPU clock, as the engine's does.
 *       Prints "rate <signals per CPU-second over the rate>".
 *   prof_perf_causes cost <hz> <units> <mode>
 *       fixed work of <units> units; mode 0: no counter, 1: a counter whose handler does
 *       nothing, 2: the handler reads the thread's CPU clock. Prints "cost <signals>
 *       <thread CPU ns> <wall ns>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static volatile long g_signals;
static int g_read_clock = 1, g_ioctl_every, g_fd;
static long g_left;
static uint64_t g_period;

static void on_signal(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    (void)uc;
    g_signals++;
    if (g_read_clock) (void)now_ns(CLOCK_THREAD_CPUTIME_ID);
    if (g_ioctl_every > 0 && --g_left <= 0) {
        g_left = g_ioctl_every;
        uint64_t v = g_period;
        ioctl(g_fd, PERF_EVENT_IOC_PERIOD, &v);
    }
}

static int open_counter(int exclude_kernel, int signo) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = g_period;
    a.wakeup_events = 1;
    a.disabled = 1;
    a.exclude_kernel = (unsigned)exclude_kernel;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        perror("perf_event_open");
        exit(1);
    }
    struct f_owner_ex o = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    if (fcntl(fd, F_SETSIG, signo) != 0 || fcntl(fd, F_SETOWN_EX, &o) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) != 0) {
        perror("fcntl");
        exit(1);
    }
    return fd;
}

static void install(int signo) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(signo, &sa, NULL);
}

__attribute__((noinline)) static double unit(double x) {
    for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

int main(int argc, char **argv) {
    if (argc == 7 && strcmp(argv[1], "rate") == 0) {
        int hz = atoi(argv[2]);
        double secs = atof(argv[3]);
        int signo = atoi(argv[5]) ? SIGRTMIN + 5 : SIGPROF;
        g_period = 1000000000ull / (uint64_t)hz;
        g_ioctl_every = atoi(argv[6]);
        g_left = g_ioctl_every;
        install(signo);
        g_fd = open_counter(atoi(argv[4]), signo);
        uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        ioctl(g_fd, PERF_EVENT_IOC_ENABLE, 0);
        uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(secs * 1e9);
        volatile double x = 1;
        while (now_ns(CLOCK_MONOTONIC) < end) x = unit(x);
        ioctl(g_fd, PERF_EVENT_IOC_DISABLE, 0);
        uint64_t c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        printf("rate %.4f\n", (double)g_signals * (double)g_period / (double)(c1 - c0));
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "cost") == 0) {
        int hz = atoi(argv[2]), mode = atoi(argv[4]);
        long units = atol(argv[3]);
        g_period = 1000000000ull / (uint64_t)hz;
        g_read_clock = mode >= 2;
        install(SIGPROF);
        if (mode >= 1) {
            g_fd = open_counter(1, SIGPROF);
            ioctl(g_fd, PERF_EVENT_IOC_ENABLE, 0);
        }
        uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
        volatile double x = 1;
        for (long u = 0; u < units; u++) x = unit(x);
        uint64_t c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);
        printf("cost %ld %llu %llu\n", g_signals, (unsigned long long)(c1 - c0),
               (unsigned long long)(w1 - w0));
        return 0;
    }
    fprintf(stderr, "usage: see the opening comment of bench/prof_perf_causes.c\n");
    return 2;
}
