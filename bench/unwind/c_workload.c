/*
 * c_workload.c — the C workload of bench/unwind.sh (docs/spec/profiler.md §(l.1), §(l.4)):
 * the main thread's time is in libc (qsort + strcmp comparisons, snprintf formatting),
 * built with frame pointers itself, as a user's program would be; four threads stay
 * blocked in libc the whole time, each under a function of the program's own:
 * pthread_cond_wait, pthread_join, sem_wait and read on a pipe.
 * Usage: c_workload [seconds]   (default 2)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_done;
static sem_t g_sem, g_join_sem;
static int g_pipe[2];

__attribute__((noinline)) void wait_for_work_cond(void) {
    pthread_mutex_lock(&g_mu);
    while (!g_done) pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
}
static void *cond_thread(void *a) {
    (void)a;
    wait_for_work_cond();
    return NULL;
}

__attribute__((noinline)) void wait_for_work_sem(void) {
    while (sem_wait(&g_sem) != 0) {
    }
}
static void *sem_thread(void *a) {
    (void)a;
    wait_for_work_sem();
    return NULL;
}

__attribute__((noinline)) void wait_for_input_pipe(void) {
    char c;
    while (read(g_pipe[0], &c, 1) < 0) {
    }
}
static void *pipe_thread(void *a) {
    (void)a;
    wait_for_input_pipe();
    return NULL;
}

static void *joined_thread(void *a) {
    (void)a;
    while (sem_wait(&g_join_sem) != 0) {
    }
    return NULL;
}
__attribute__((noinline)) void wait_for_child_join(void) {
    pthread_t t;
    pthread_create(&t, NULL, joined_thread, NULL);
    pthread_join(t, NULL);
}
static void *join_thread(void *a) {
    (void)a;
    wait_for_child_join();
    return NULL;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define N 20000
static char g_buf[N][32];
static char *g_v[N];

__attribute__((noinline)) void format_names(unsigned seed) {
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        snprintf(g_buf[i], sizeof g_buf[i], "item-%08u-%d-%s", seed % 100000000u, i % 97, "x");
        g_v[i] = g_buf[i];
    }
}

__attribute__((noinline)) void sort_names(void) {
    qsort(g_v, N, sizeof g_v[0], by_name);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    sem_init(&g_sem, 0, 0);
    sem_init(&g_join_sem, 0, 0);
    if (pipe(g_pipe) != 0) return 1;
    pthread_t t[4];
    pthread_create(&t[0], NULL, cond_thread, NULL);
    pthread_create(&t[1], NULL, sem_thread, NULL);
    pthread_create(&t[2], NULL, pipe_thread, NULL);
    pthread_create(&t[3], NULL, join_thread, NULL);
    double end = now_s() + secs;
    unsigned seed = 1;
    unsigned long rounds = 0;
    while (now_s() < end) {
        format_names(seed++);
        sort_names();
        rounds++;
    }
    pthread_mutex_lock(&g_mu);
    g_done = 1;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    sem_post(&g_sem);
    sem_post(&g_join_sem);
    if (write(g_pipe[1], "x", 1) != 1) return 1;
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("%lu rounds, first %s\n", rounds, g_v[0]);
    return 0;
}
