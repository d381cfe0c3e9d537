/* Two threads that compute for about 0.3 s of CPU each (in spin), joined by main. */
#include <pthread.h>
#include <time.h>

volatile double sink;

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void spin(void) {
    double x = 1, end = cpu_now() + 0.3;
    while (cpu_now() < end)
        for (long i = 0; i < 100000; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

static void *worker(void *arg) {
    spin();
    return arg;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
