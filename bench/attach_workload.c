/* bench/attach_workload.c — fixed work for bench/attach.sh: <threads> busy threads (default
 * 2), each running <units> rounds of attach_a (3 parts), attach_b (2 parts) and attach_c
 * (1 part), so the expected self shares are 50 / 33.3 / 16.7 %. Prints "ready", waits
 * <delay_ms> (default 300, time for an attacher to seize it), then times the work and
 * prints "work_ns=<n>" (wall time) and "cpu_ns=<n>" (the process's CPU time, user + system,
 * over the same interval). usage: attach_workload <units> [threads [delay_ms]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static long g_units;

static unsigned long long clock_ns(clockid_t clk) {
    struct timespec t;
    clock_gettime(clk, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* Each function does its own work (no shared callee), so its self time is its share. */
__attribute__((noinline)) void attach_a(void) {
    for (unsigned long i = 0; i < 60000; i++) sink += i * i;
}
__attribute__((noinline)) void attach_b(void) {
    for (unsigned long i = 0; i < 40000; i++) sink += i * i;
}
__attribute__((noinline)) void attach_c(void) {
    for (unsigned long i = 0; i < 20000; i++) sink += i * i;
}

static void *worker(void *p) {
    (void)p;
    for (long u = 0; u < g_units; u++) {
        attach_a();
        attach_b();
        attach_c();
    }
    return NULL;
}

int main(int argc, char **argv) {
    g_units = argc > 1 ? atol(argv[1]) : 1000;
    int nthreads = argc > 2 ? atoi(argv[2]) : 2;
    long delay_ms = argc > 3 ? atol(argv[3]) : 300;
    if (nthreads < 1 || nthreads > 64) nthreads = 2;
    printf("ready\n");
    fflush(stdout);
    struct timespec d = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    pthread_t t[64];
    unsigned long long t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    unsigned long long t1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    printf("work_ns=%llu\ncpu_ns=%llu\n", t1 - t0, c1 - c0);
    return 0;
}
