/*
 * sort_target.c — the target of test/lit/attach-cfi.test (docs/spec/profiler.md §(l.1),
 * §(l.9)): its on-CPU time is in libc, qsort calling back into strcmp, whose frames keep no
 * frame-pointer chain, on the main thread and on a second thread. Built once with frame
 * pointers (as a user's program would be) and once with -fomit-frame-pointer (none of its
 * own frames keep a chain either). Prints "ready", sorts for <seconds> (default 60) or
 * until SIGUSR1, prints "finished eintr=0" and exits 0.
 * usage: sort_target [seconds]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 4000
static char g_buf[2][N][24];
static char *g_v[2][N];
static volatile sig_atomic_t g_stop;
static double g_seconds;

static void on_usr1(int sig) {
    (void)sig;
    g_stop = 1;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One round: shuffle the strings, sort them (qsort -> by_name -> strcmp). */
__attribute__((noinline)) static void sort_round(int k, unsigned *seed) {
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(rand_r(seed) % (unsigned)(i + 1));
        char *t = g_v[k][i];
        g_v[k][i] = g_v[k][j];
        g_v[k][j] = t;
    }
    qsort(g_v[k], N, sizeof g_v[k][0], by_name);
}

__attribute__((noinline)) static void sort_for_a_while(int k) {
    unsigned seed = 12345u + (unsigned)k;
    double end = now_s() + g_seconds;
    while (!g_stop && now_s() < end) sort_round(k, &seed);
}

static void *sorter(void *arg) {
    sort_for_a_while((int)(long)arg);
    return NULL;
}

int main(int argc, char **argv) {
    g_seconds = argc > 1 ? atof(argv[1]) : 60;
    signal(SIGUSR1, on_usr1);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < N; i++) {
            /* a shared prefix, so strcmp does some work per comparison */
            snprintf(g_buf[k][i], sizeof g_buf[k][i], "name-%014d", (i * 7919) % N);
            g_v[k][i] = g_buf[k][i];
        }
    printf("ready\n");
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, sorter, (void *)1L);
    sort_for_a_while(0);
    pthread_join(t, NULL);
    printf("finished eintr=0\n");
    return 0;
}
