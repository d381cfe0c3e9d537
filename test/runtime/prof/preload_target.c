/*
 * preload_target.c — a plain pthread program that knows nothing about the profiler:
 * main and two threads burn CPU in target_hot, a third sleeps in one plain nanosleep
 * call (target_sleep) and prints "sleep_ret=<r> slept=<seconds>". test_preload.c runs it
 * with LD_PRELOAD=libosprey_prof.so. Built with frame pointers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double target_hot(double secs) {
    volatile double x = 1;
    double end = cpu_now() + secs;
    while (cpu_now() < end)
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) int target_sleep(double secs) {
    struct timespec req = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    int r = nanosleep(&req, NULL); /* one call, no EINTR loop */
    __asm__ volatile("" ::: "memory");
    return r;
}

static void *sleeper(void *arg) {
    double secs = *(double *)arg, t0 = mono_now();
    int r = target_sleep(secs);
    printf("sleep_ret=%d slept=%.6f\n", r, mono_now() - t0);
    return NULL;
}

static void *worker(void *arg) {
    target_hot(*(double *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    pthread_t t[3];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, &secs) != 0) return 1;
    if (pthread_create(&t[2], NULL, sleeper, &secs) != 0) return 1;
    target_hot(secs / 2);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    return 0;
}
