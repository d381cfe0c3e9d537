/* A target for osprey --attach with thread churn: batches of short-lived threads (each
 * computes about half a millisecond and exits), until SIGUSR1. Prints "ready" first
 * (attach_run.py waits for it). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t done;
volatile double sink;

static void on_usr1(int sig) {
    (void)sig;
    done = 1;
}

__attribute__((noinline)) static void spin_short(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

static void *short_thread(void *arg) {
    spin_short(300000);
    return arg;
}

int main(void) {
    signal(SIGUSR1, on_usr1);
    puts("ready");
    fflush(stdout);
    while (!done) {
        pthread_t t[32];
        int n = 0;
        for (; n < 32; n++)
            if (pthread_create(&t[n], NULL, short_thread, NULL) != 0) break;
        for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    }
    puts("finished");
    return 0;
}
