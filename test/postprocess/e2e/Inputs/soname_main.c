/* Calls the libwt library (soname_lib.c) until SIGUSR1 or argv[1] seconds; prints "ready"
 * first and "finished" last (attach_run.py's protocol). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void wt_work(unsigned long n);

static volatile sig_atomic_t g_stop;

static void on_usr1(int sig) {
    (void)sig;
    g_stop = 1;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2;
    signal(SIGUSR1, on_usr1);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("ready\n");
    fflush(stdout);
    do {
        wt_work(100000);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (!g_stop && (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    printf("finished\n");
    return 0;
}
