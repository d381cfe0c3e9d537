/*
 * preload_target.c — a plain pthread program that knows nothing about the profiler:
 * main and two threads burn CPU in target_hot. test_preload.c runs it with
 * LD_PRELOAD=libosprey_prof.so. Built with frame pointers.
 */
#define _GNU_SOURCE
#include <pthread.h>
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

static void *worker(void *arg) {
    target_hot(*(double *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, &secs) != 0) return 1;
    target_hot(secs / 2);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
