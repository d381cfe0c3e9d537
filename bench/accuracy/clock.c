/*
 * clock.c — the clock of bench/accuracy.sh's runs: a tiny LD_PRELOAD library that times
 * the whole life of a program, preloaded profiler included:
 *
 *   OSPREY_BENCH_CLOCK=<file> LD_PRELOAD="... libbench_clock.so" ./program
 *
 * It goes LAST in LD_PRELOAD. ld.so runs the constructors of preloaded libraries in the
 * reverse of their order in LD_PRELOAD and their destructors (with the atexit handlers
 * each registered, __cxa_finalize) in the reverse of that, so this library's constructor
 * runs before a preloaded profiler's (libosprey_prof.so, gperftools' libprofiler.so)
 * starts sampling, and its destructor after that profiler has stopped and written its
 * file. The program's own exit handlers and destructors run before it as well.
 *
 * At exit it writes one line to <file>:
 *   wall_ns=<n> utime_ns=<n> stime_ns=<n>
 *   wall          CLOCK_MONOTONIC from this library's constructor to its destructor (the
 *                 program's life, without whatever started it: perf's own set-up is not
 *                 in it)
 *   utime, stime  getrusage(RUSAGE_SELF) in the destructor: every thread of the process
 * The variable is read once, in the constructor, and left in place.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static char g_path[4096];
static uint64_t g_t0;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned long long tv_ns(struct timeval tv) {
    return (unsigned long long)tv.tv_sec * 1000000000ull + (unsigned long long)tv.tv_usec * 1000ull;
}

__attribute__((constructor)) static void clock_start(void) {
    const char *p = getenv("OSPREY_BENCH_CLOCK");
    if (p != NULL) snprintf(g_path, sizeof g_path, "%s", p);
    g_t0 = mono_ns();
}

__attribute__((destructor)) static void clock_end(void) {
    uint64_t wall = mono_ns() - g_t0;
    if (g_path[0] == '\0') return;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    FILE *f = fopen(g_path, "w");
    if (f == NULL) return;
    fprintf(f, "wall_ns=%llu utime_ns=%llu stime_ns=%llu\n", (unsigned long long)wall,
            tv_ns(ru.ru_utime), tv_ns(ru.ru_stime));
    fclose(f);
}
