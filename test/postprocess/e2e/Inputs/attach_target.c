/* A target for `osprey --attach` tests (docs/spec/profiler.md §(l.9)), built with frame
 * pointers: two busy threads (spin_a about 3x spin_b), one waiting thread that loops over
 * short poll() and nanosleep() calls and counts early returns (EINTR), and, one second in,
 * a late busy thread (spin_late) that the sampler must pick up. Prints "ready" once every
 * thread is running, then "finished eintr=<n>" and exits with <status> (default 0) after
 * <seconds> (default 4), or as soon as it gets SIGUSR1 (handled on the main thread only, so
 * no other thread's wait is interrupted by it). usage: attach_target [seconds [status]] */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static volatile double g_end;

static void finish_now(int sig) {
    (void)sig;
    g_end = 0;
}
static atomic_int g_eintr;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin_a(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i * i;
}
__attribute__((noinline)) void spin_b(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink ^= i * 3;
}
__attribute__((noinline)) void spin_late(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i ^ 7;
}

static void *busy(void *p) {
    (void)p;
    while (now_s() < g_end) {
        spin_a(300000);
        spin_b(100000);
    }
    return NULL;
}

static void *late(void *p) {
    (void)p;
    while (now_s() < g_end) spin_late(100000);
    return NULL;
}

__attribute__((noinline)) void wait_a_little(void) {
    if (poll(NULL, 0, 3) < 0 && errno == EINTR) atomic_fetch_add(&g_eintr, 1);
    struct timespec ts = {0, 2 * 1000 * 1000};
    if (nanosleep(&ts, NULL) < 0 && errno == EINTR) atomic_fetch_add(&g_eintr, 1);
}

static void *waiter(void *p) {
    (void)p;
    while (now_s() < g_end) wait_a_little();
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 4;
    g_end = now_s() + secs;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL); /* inherited by every thread created below */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = finish_now;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t[4];
    pthread_create(&t[0], NULL, busy, NULL);
    pthread_create(&t[1], NULL, busy, NULL);
    pthread_create(&t[2], NULL, waiter, NULL);
    printf("ready\n");
    fflush(stdout);
    struct timespec one = {1, 0};
    nanosleep(&one, NULL);
    pthread_create(&t[3], NULL, late, NULL);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL); /* SIGUSR1 now reaches the main thread only */
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("finished eintr=%d\n", atomic_load(&g_eintr));
    return argc > 2 ? atoi(argv[2]) : 0;
}
