/* 400 short-lived threads, each computing for a fraction of a millisecond (less than one
 * sampling period at 997 Hz) and ending; the main thread only starts and joins them. */
#include <pthread.h>

volatile double sink;

__attribute__((noinline)) static void spin_short(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

static void *short_thread(void *arg) {
    spin_short(250000);
    return arg;
}

int main(void) {
    for (int round = 0; round < 50; round++) {
        pthread_t t[8];
        for (int i = 0; i < 8; i++)
            if (pthread_create(&t[i], NULL, short_thread, NULL) != 0) return 1;
        for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    }
    return 0;
}
