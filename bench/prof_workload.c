/*
 * prof_workload.c — the CPU-bound workload of bench/prof_overhead.sh. Linked with the
 * runtime archive, so OSPREY_PROFILE activates the profiler exactly as in an Osprey
 * program (load-time boot, main thread registered as fiber 0); extra threads register
 * as fibers like runtime/core's fiber threads do.
 *
 *   prof_workload <threads> <units>
 *
 * Each of <threads> threads (the main thread is one of them) runs <units> units of
 * recursive work (fib with frame pointers, a few stack levels deep). Prints one line:
 *   wall_s=<s> cpu_s=<t0>,<t1>,... tid=<tid0>,<tid1>,...
 * with each thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) over its work.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "osp_prof.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) long fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static volatile int g_depth = 24; /* read on every unit: the calls cannot be hoisted */

__attribute__((noinline)) long work_unit(void) {
    return fib(g_depth);
}

struct job {
    long units;
    int index;
    double cpu;
    pid_t tid;
    long result;
};

static void run_job(struct job *j) {
    j->tid = (pid_t)syscall(SYS_gettid);
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    long r = 0;
    for (long i = 0; i < j->units; i++) r += work_unit();
    j->cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    j->result = r;
}

static void *thread_main(void *p) {
    struct job *j = p;
    osp_prof_thread_register(j->index, "fiber");
    run_job(j);
    osp_prof_thread_unregister();
    return NULL;
}

int main(int argc, char **argv) {
    osp_prof_boot(); /* as generated main does; idempotent after the load-time boot */
    if (argc != 3) {
        fprintf(stderr, "usage: %s <threads> <units>\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    long units = atol(argv[2]);
    if (n < 1 || n > 64 || units < 1) return 2;
    struct job jobs[64];
    pthread_t t[64];
    double w0 = clock_s(CLOCK_MONOTONIC);
    for (int i = 1; i < n; i++) {
        jobs[i] = (struct job){.units = units, .index = i};
        if (pthread_create(&t[i], NULL, thread_main, &jobs[i]) != 0) return 1;
    }
    jobs[0] = (struct job){.units = units, .index = 0};
    run_job(&jobs[0]);
    for (int i = 1; i < n; i++) pthread_join(t[i], NULL);
    double wall = clock_s(CLOCK_MONOTONIC) - w0;
    long check = 0;
    printf("wall_s=%.6f cpu_s=", wall);
    for (int i = 0; i < n; i++) printf("%s%.6f", i ? "," : "", jobs[i].cpu);
    printf(" tid=");
    for (int i = 0; i < n; i++) {
        printf("%s%d", i ? "," : "", (int)jobs[i].tid);
        check += jobs[i].result;
    }
    printf(" check=%ld\n", check);
    return 0;
}
