/* A worker thread that blocks every signal (as the threads of a pool that leaves signals
 * to one sigwait thread do) and computes; the main thread waits for it. Under an engine
 * that delivers samples by signal, the worker's samples never arrive. */
#include <pthread.h>
#include <signal.h>

volatile double sink;

__attribute__((noinline)) static void spin_blocked(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

static void *worker(void *arg) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    spin_blocked(150000000);
    return arg;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    pthread_join(t, NULL);
    return 0;
}
