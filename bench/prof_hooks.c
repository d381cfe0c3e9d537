/*
 * prof_hooks.c — what the profiler hooks cost a program that is not being profiled
 * (docs/spec/profiler.md §(a): "every hook is a no-op"). Times N pairs of
 * osp_prof_block_begin/end and of register/unregister against the same number of calls
 * to an empty out-of-line function, in one process with OSPREY_PROFILE unset.
 * Prints ns per pair for each.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "osp_prof.h"

__attribute__((noinline)) void empty_hook(void) {
    __asm__ volatile("");
}
__attribute__((noinline)) void empty_hook2(long id, const char *label) {
    __asm__ volatile("" ::"r"(id), "r"(label));
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000L;
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (long i = 0; i < n; i++) {
            empty_hook();
            empty_hook();
        }
        double t1 = now();
        for (long i = 0; i < n; i++) {
            osp_prof_block_begin();
            osp_prof_block_end();
        }
        double t2 = now();
        for (long i = 0; i < n; i++) {
            empty_hook2(i, "fiber");
            empty_hook();
        }
        double t3 = now();
        for (long i = 0; i < n; i++) {
            osp_prof_thread_register(i, "fiber");
            osp_prof_thread_unregister();
        }
        double t4 = now();
        double d[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
        for (int k = 0; k < 4; k++)
            if (d[k] < best[k]) best[k] = d[k];
    }
    printf("inactive hooks, ns per pair (best of 5, %ld pairs):\n", n);
    printf("  empty calls           %6.3f\n", best[0] / (double)n * 1e9);
    printf("  block_begin/end       %6.3f  (ratio %.2f)\n", best[1] / (double)n * 1e9,
           best[1] / best[0]);
    printf("  empty calls (2 args)  %6.3f\n", best[2] / (double)n * 1e9);
    printf("  register/unregister   %6.3f  (ratio %.2f)\n", best[3] / (double)n * 1e9,
           best[3] / best[2]);
    return 0;
}
