/* Starts 40 threads that compute a moment and then wait, then opens /dev/null until the
 * descriptor limit refuses it and prints how many it got: what a program near its
 * RLIMIT_NOFILE gets to use. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { THREADS = 40 };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;
volatile double sink;

static void *worker(void *arg) {
    double x = 1;
    for (long i = 0; i < 3000000; i++) x = x * 1.0000001 + 0.5;
    sink = x;
    pthread_mutex_lock(&mu);
    while (!done) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return arg;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 1;
    struct timespec ts = {0, 300000000}; /* the sampler looks at the waiting threads */
    nanosleep(&ts, NULL);
    int n = 0;
    while (open("/dev/null", O_RDONLY) >= 0) n++;
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("opened %d\n", n);
    return 0;
}
