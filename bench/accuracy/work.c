/*
 * work.c — C workloads with a known answer for bench/accuracy.sh. A plain program: no
 * profiler linked in. Built with -O2 -g -fno-omit-frame-pointer
 * -mno-omit-leaf-frame-pointer and profiled from outside (perf, gperftools' preloaded
 * libprofiler.so, our preloaded libosprey_prof.so).
 *
 *   work ratio <threads> <rounds> <k>   threads share <rounds> rounds; one round calls
 *                                       burn60(6k), burn30(3k), burn10(k) iterations
 *   work only <60|30|10> <rounds> <k>   one thread, only that function's part of each
 *                                       round (calibration: the truth of the ratio)
 *   work mixed <rounds> <k> <sleep_ms>  2 computing threads share the rounds while 2
 *                                       threads sleep in <sleep_ms> slices until the
 *                                       computing ones are done; main waits in join
 *   work deep <depth> <rounds> <k>      the rounds run <depth> frames below main
 *   work tiny <iterations>              per iteration: 6 calls of tinyA, 3 of tinyB,
 *                                       1 of tinyC (a few instructions each, never
 *                                       inlined)
 *   work tinyx <iterations> <A|B|C>     the same plus 10 more calls of tinyA, tinyB or
 *                                       tinyC per iteration (truth: the extra CPU time
 *                                       over the `tiny` run is 10 calls' worth)
 *
 * The three burn functions have identical bodies (an xorshift chain), so an iteration
 * costs the same in each and the ratio of CPU time is the ratio of iterations, 60/30/10;
 * bench/accuracy.py checks that by timing each alone (`only`). tinyA/B/C likewise share
 * one body; their truth comes from the marginal CPU time of 10 more calls of each
 * (`tinyx`), and callgrind's instruction counts are shown next to it.
 * Prints one line `result=<n>` so the work cannot be optimised away.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BURN_BODY                  \
    for (long i = 0; i < n; i++) { \
        x ^= x << 13;              \
        x ^= x >> 7;               \
        x ^= x << 17;              \
    }                              \
    return x;

__attribute__((noinline)) uint64_t burn60(uint64_t x, long n) {
    BURN_BODY
}
__attribute__((noinline)) uint64_t burn30(uint64_t x, long n) {
    BURN_BODY
}
__attribute__((noinline)) uint64_t burn10(uint64_t x, long n) {
    BURN_BODY
}

/* Which parts of a round run: bit 0 burn60, bit 1 burn30, bit 2 burn10. */
static int g_parts = 7;

static uint64_t round_mix(uint64_t x, long k) {
    if (g_parts & 1) x = burn60(x, 6 * k);
    if (g_parts & 2) x = burn30(x, 3 * k);
    if (g_parts & 4) x = burn10(x, k);
    return x;
}

struct job {
    long rounds, k;
    uint64_t result;
};

static void *run_rounds(void *p) {
    struct job *j = p;
    uint64_t x = 88172645463325252ull + (uint64_t)j->rounds;
    for (long r = 0; r < j->rounds; r++) x = round_mix(x, j->k);
    j->result = x;
    return NULL;
}

/* Start n - 1 threads and run one share on the calling thread; join. */
static uint64_t run_threads(int n, long rounds, long k) {
    struct job jobs[64];
    pthread_t t[64];
    for (int i = 0; i < n; i++) jobs[i] = (struct job){rounds / n + (i < rounds % n), k, 0};
    for (int i = 1; i < n; i++)
        if (pthread_create(&t[i], NULL, run_rounds, &jobs[i]) != 0) exit(1);
    run_rounds(&jobs[0]);
    uint64_t r = jobs[0].result;
    for (int i = 1; i < n; i++) {
        pthread_join(t[i], NULL);
        r ^= jobs[i].result;
    }
    return r;
}

/* ---- mixed: computing and sleeping threads ------------------------------------------- */

static atomic_int g_done;
static long g_sleep_ms;

static void *sleeper(void *p) {
    (void)p;
    struct timespec ts = {g_sleep_ms / 1000, (g_sleep_ms % 1000) * 1000000L};
    while (!atomic_load(&g_done)) nanosleep(&ts, NULL);
    return NULL;
}

static void *computer(void *p) {
    run_rounds(p);
    return NULL;
}

static uint64_t run_mixed(long rounds, long k) {
    pthread_t s[2], c[2];
    struct job jobs[2] = {{rounds / 2, k, 0}, {rounds - rounds / 2, k, 0}};
    for (int i = 0; i < 2; i++)
        if (pthread_create(&s[i], NULL, sleeper, NULL) != 0) exit(1);
    for (int i = 0; i < 2; i++)
        if (pthread_create(&c[i], NULL, computer, &jobs[i]) != 0) exit(1);
    for (int i = 0; i < 2; i++) pthread_join(c[i], NULL);
    atomic_store(&g_done, 1);
    for (int i = 0; i < 2; i++) pthread_join(s[i], NULL);
    return jobs[0].result ^ jobs[1].result;
}

/* ---- deep recursion ------------------------------------------------------------------ */

__attribute__((noinline)) uint64_t deep(int depth, long rounds, long k) {
    if (depth == 0) {
        struct job j = {rounds, k, 0};
        run_rounds(&j);
        return j.result;
    }
    /* Not a tail call: every level keeps its frame. */
    return deep(depth - 1, rounds, k) + (uint64_t)depth;
}

/* ---- very short functions ------------------------------------------------------------ */

#define TINY_BODY return (x ^ (x >> 3)) * 0x9E3779B97F4A7C15ull + 1;
__attribute__((noinline)) uint64_t tinyA(uint64_t x) {
    TINY_BODY
}
__attribute__((noinline)) uint64_t tinyB(uint64_t x) {
    TINY_BODY
}
__attribute__((noinline)) uint64_t tinyC(uint64_t x) {
    TINY_BODY
}

__attribute__((noinline)) uint64_t tiny_driver(long iterations) {
    uint64_t x = 12345;
    for (long i = 0; i < iterations; i++) {
        x = tinyA(x);
        x = tinyB(x);
        x = tinyA(x);
        x = tinyC(x);
        x = tinyA(x);
        x = tinyB(x);
        x = tinyA(x);
        x = tinyA(x);
        x = tinyB(x);
        x = tinyA(x);
    }
    return x;
}

#define TINY_EXTRA(f)                                                     \
    __attribute__((noinline)) uint64_t tiny_driver_##f(long iterations) { \
        uint64_t x = 12345;                                               \
        for (long i = 0; i < iterations; i++) {                           \
            x = tinyA(x);                                                 \
            x = tinyB(x);                                                 \
            x = tinyA(x);                                                 \
            x = tinyC(x);                                                 \
            x = tinyA(x);                                                 \
            x = tinyB(x);                                                 \
            x = tinyA(x);                                                 \
            x = tinyA(x);                                                 \
            x = tinyB(x);                                                 \
            x = tinyA(x);                                                 \
            for (int j = 0; j < 10; j++) x = f(x);                        \
        }                                                                 \
        return x;                                                         \
    }
TINY_EXTRA(tinyA)
TINY_EXTRA(tinyB)
TINY_EXTRA(tinyC)

static long arg(char **argv, int i) {
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end != '\0' || v < 0) {
        fprintf(stderr, "work: bad argument '%s'\n", argv[i]);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    uint64_t r;
    if (argc == 5 && strcmp(argv[1], "ratio") == 0) {
        long n = arg(argv, 2);
        if (n < 1 || n > 64) return 2;
        r = run_threads((int)n, arg(argv, 3), arg(argv, 4));
    } else if (argc == 5 && strcmp(argv[1], "only") == 0) {
        long which = arg(argv, 2);
        g_parts = which == 60 ? 1 : which == 30 ? 2 : which == 10 ? 4 : 0;
        if (g_parts == 0) return 2;
        r = run_threads(1, arg(argv, 3), arg(argv, 4));
    } else if (argc == 5 && strcmp(argv[1], "mixed") == 0) {
        g_sleep_ms = arg(argv, 4);
        r = run_mixed(arg(argv, 2), arg(argv, 3));
    } else if (argc == 5 && strcmp(argv[1], "deep") == 0) {
        r = deep((int)arg(argv, 2), arg(argv, 3), arg(argv, 4));
    } else if (argc == 3 && strcmp(argv[1], "tiny") == 0) {
        r = tiny_driver(arg(argv, 2));
    } else if (argc == 4 && strcmp(argv[1], "tinyx") == 0) {
        long n = arg(argv, 2);
        if (strcmp(argv[3], "A") == 0)
            r = tiny_driver_tinyA(n);
        else if (strcmp(argv[3], "B") == 0)
            r = tiny_driver_tinyB(n);
        else if (strcmp(argv[3], "C") == 0)
            r = tiny_driver_tinyC(n);
        else
            return 2;
    } else {
        fprintf(stderr, "usage: work ratio|only|mixed|deep|tiny ... (see work.c)\n");
        return 2;
    }
    printf("result=%llu\n", (unsigned long long)r);
    return 0;
}
