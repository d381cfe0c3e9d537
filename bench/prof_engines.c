/*
 * prof_engines.c — workloads of bench/prof_engines.sh (the sampling engines, §(l.3)).
 * Linked with the runtime archive, so the profiler boots from OSPREY_PROFILE and every
 * thread is registered by the pthread_create interposer (§(l.2)).
 *
 *   prof_engines busy <threads> <seconds>   <threads> threads spin for <seconds> of wall
 *       time; each prints "cpu <tid> <ns> <ns0>" (its own CPU clock at the end, and when
 *       its start routine began: after its registration) at the end.
 *   prof_engines eintr <busy> <seconds>     <busy> spinning threads beside one waiter per
 *       call (sigtimedwait, sem_timedwait, syscall(SYS_nanosleep), poll, epoll_wait,
 *       select, nanosleep with a 1 ms timeout, and a blocking read of a pipe that a
 *       feeder thread writes every 2 ms), each looping over its call; prints
 *       "eintr <call> <count> <calls>".
 *   prof_engines work <units> [floor]       one thread computes <units> fixed units and
 *       prints "work_ns <wall ns>". With a floor, no profiler runs but the bare mechanism
 *       does, at 997 Hz, so its cost is measured apart from ours: "timer" a task-clock
 *       counter of the thread writing bare samples (the time only) to a ring nobody reads
 *       (the kernel timer alone, as under ring delivery or perf record); "tgkill" a second
 *       thread that sends SIGPROF to it every 1.003 ms to an empty handler (the sampler
 *       engine's delivery); "chain" the timer writing, as ring delivery's counter does, the
 *       user registers and the frame-pointer call chain too, and "copy" those and 8 KiB of
 *       the user stack, each to a 256 KiB ring that a second thread empties every 5 ms
 *       without reading it (the kernel's share of ring delivery, without our sampler).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static double spin_unit(double x) {
    for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

static atomic_int g_stop;

/* The "tgkill" floor of `work`: SIGPROF to g_kick_tid every 1.003 ms, to an empty handler. */
static pid_t g_kick_tid;
static void empty_handler(int sig) {
    (void)sig;
}
static void *kicker_main(void *p) {
    (void)p;
    struct timespec ts = {0, 1003000};
    for (;;) {
        nanosleep(&ts, NULL);
        syscall(SYS_tgkill, getpid(), g_kick_tid, SIGPROF);
    }
    return NULL;
}
/* The "chain" and "copy" floors: the ring's control page; its records are discarded
 * every 5 ms by moving the tail to the head (nothing is read). */
static struct perf_event_mmap_page *g_floor_rb;

static void *discard_main(void *p) {
    (void)p;
    struct timespec ts = {0, 5000000};
    for (;;) {
        nanosleep(&ts, NULL);
        uint64_t head = __atomic_load_n(&g_floor_rb->data_head, __ATOMIC_ACQUIRE);
        __atomic_store_n(&g_floor_rb->data_tail, head, __ATOMIC_RELEASE);
    }
    return NULL;
}
static double g_seconds;
static pthread_mutex_t g_print = PTHREAD_MUTEX_INITIALIZER;

static void *busy_main(void *p) {
    (void)p;
    /* The thread was registered, and its timer armed, before its start routine runs: the
     * CPU it used before this line (creation, registration) was not sampled. */
    uint64_t cpu0 = thread_cpu_ns();
    volatile double x = 1;
    uint64_t end = mono_ns() + (uint64_t)(g_seconds * 1e9);
    while (mono_ns() < end && !atomic_load_explicit(&g_stop, memory_order_relaxed))
        x = spin_unit(x);
    pthread_mutex_lock(&g_print);
    printf("cpu %ld %llu %llu\n", (long)syscall(SYS_gettid), (unsigned long long)thread_cpu_ns(),
           (unsigned long long)cpu0);
    pthread_mutex_unlock(&g_print);
    return NULL;
}

/* ---- waiters ------------------------------------------------------------------------- */

enum { W_SIGTIMEDWAIT, W_SEM, W_SYS_NANOSLEEP, W_POLL, W_EPOLL, W_SELECT, W_NANOSLEEP, W_READ, NW };
static const char *const w_names[NW] = {"sigtimedwait", "sem_timedwait", "syscall_nanosleep",
                                        "poll",         "epoll_wait",    "select",
                                        "nanosleep",    "read"};
struct waiter {
    int kind;
    long eintr, calls;
    int rfd, wfd;
};

static void *waiter_main(void *p) {
    struct waiter *w = p;
    sem_t sem;
    sem_init(&sem, 0, 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int pfd[2];
    if (pipe(pfd) != 0) abort();
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev);
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, NULL);
    char c;
    while (!atomic_load(&g_stop)) {
        int rc = 0;
        struct timespec ms1 = {0, 1000000};
        switch (w->kind) {
        case W_SIGTIMEDWAIT: rc = sigtimedwait(&usr2, NULL, &ms1); break;
        case W_SEM: {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 1000000;
            if (dl.tv_nsec >= 1000000000) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000;
            }
            rc = sem_timedwait(&sem, &dl);
            break;
        }
        case W_SYS_NANOSLEEP: rc = (int)syscall(SYS_nanosleep, &ms1, NULL); break;
        case W_POLL: {
            struct pollfd q = {.fd = pfd[0], .events = POLLIN};
            rc = poll(&q, 1, 1);
            break;
        }
        case W_EPOLL: rc = epoll_wait(ep, &ev, 1, 1); break;
        case W_SELECT: {
            fd_set r;
            FD_ZERO(&r);
            FD_SET(pfd[0], &r);
            struct timeval tv = {0, 1000};
            rc = select(pfd[0] + 1, &r, NULL, NULL, &tv);
            break;
        }
        case W_NANOSLEEP: rc = nanosleep(&ms1, NULL); break;
        case W_READ: rc = (int)read(w->rfd, &c, 1); break;
        }
        w->calls++;
        if (rc < 0 && errno == EINTR) w->eintr++;
    }
    close(ep);
    close(pfd[0]);
    close(pfd[1]);
    sem_destroy(&sem);
    return NULL;
}

/* Feeds the read waiter one byte every 2 ms (its "timeout"). */
static void *feeder_main(void *p) {
    struct waiter *w = p;
    while (!atomic_load(&g_stop)) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        if (write(w->wfd, "x", 1) != 1) break;
    }
    if (write(w->wfd, "x", 1) != 1) return NULL; /* wake it for the stop */
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(argv[1], "busy") == 0 && argc == 4) {
        int n = atoi(argv[2]);
        g_seconds = atof(argv[3]);
        pthread_t *t = calloc((size_t)n, sizeof *t);
        for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, busy_main, NULL);
        for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
        free(t);
        return 0;
    }
    if (strcmp(argv[1], "eintr") == 0 && argc == 4) {
        int nb = atoi(argv[2]);
        g_seconds = atof(argv[3]);
        pthread_t bt[64], wt[NW], feeder;
        struct waiter w[NW];
        for (int i = 0; i < nb && i < 64; i++) pthread_create(&bt[i], NULL, busy_main, NULL);
        int rp[2];
        if (pipe(rp) != 0) return 1;
        for (int k = 0; k < NW; k++) {
            w[k] = (struct waiter){.kind = k, .rfd = rp[0], .wfd = rp[1]};
            pthread_create(&wt[k], NULL, waiter_main, &w[k]);
        }
        pthread_create(&feeder, NULL, feeder_main, &w[W_READ]);
        struct timespec ts = {(time_t)g_seconds, (long)((g_seconds - (long)g_seconds) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        atomic_store(&g_stop, 1);
        for (int i = 0; i < nb && i < 64; i++) pthread_join(bt[i], NULL);
        pthread_join(feeder, NULL);
        for (int k = 0; k < NW; k++) pthread_join(wt[k], NULL);
        for (int k = 0; k < NW; k++)
            printf("eintr %s %ld %ld\n", w_names[k], w[k].eintr, w[k].calls);
        return 0;
    }
    if (strcmp(argv[1], "work") == 0) {
        long units = atol(argv[2]);
        const char *floor_kind = argc > 3 ? argv[3] : "";
        pthread_t kick;
        bool chain = strcmp(floor_kind, "chain") == 0, copy = strcmp(floor_kind, "copy") == 0;
        if (strcmp(floor_kind, "timer") == 0 || chain || copy) {
            struct perf_event_attr a;
            memset(&a, 0, sizeof a);
            a.size = sizeof a;
            a.type = PERF_TYPE_SOFTWARE;
            a.config = PERF_COUNT_SW_TASK_CLOCK;
            a.sample_period = 1003009;
            a.sample_type = PERF_SAMPLE_TIME;
            if (chain || copy) {
                a.sample_type |= PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER;
                a.exclude_callchain_kernel = 1;
                a.sample_regs_user = 1ull << 6 | 1ull << 7 | 1ull << 8; /* bp, sp, ip (x86-64) */
            }
            if (copy) {
                a.sample_type |= PERF_SAMPLE_STACK_USER;
                a.sample_stack_user = 8192;
            }
            a.exclude_kernel = 1;
            a.exclude_hv = 1;
            a.watermark = 1;
            a.wakeup_watermark = 0x7fffffff;
            int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
            void *rb = fd < 0 ? MAP_FAILED
                              : mmap(NULL, 65 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (rb == MAP_FAILED) return 3;
            if (chain || copy) {
                g_floor_rb = rb;
                pthread_create(&kick, NULL, discard_main, NULL);
            }
        } else if (strcmp(floor_kind, "tgkill") == 0) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = empty_handler;
            sa.sa_flags = SA_RESTART;
            sigaction(SIGPROF, &sa, NULL);
            g_kick_tid = (pid_t)syscall(SYS_gettid);
            pthread_create(&kick, NULL, kicker_main, NULL);
        }
        volatile double x = 1;
        uint64_t t0 = mono_ns();
        for (long i = 0; i < units; i++) x = spin_unit(x);
        printf("work_ns %llu\n", (unsigned long long)(mono_ns() - t0));
        return 0;
    }
    return 2;
}
