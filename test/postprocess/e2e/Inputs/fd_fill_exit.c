/* Lowers its soft and hard RLIMIT_NOFILE to argv[1] (after the profiler has started),
 * opens /dev/null until the limit refuses it, keeps every descriptor, then computes for a
 * moment on two threads and returns from main with all of them still open: the profiler
 * has no descriptor left to write its file with. Prints how many it opened. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

volatile double sink;

__attribute__((noinline)) static void fill_spin(void) {
    double x = 1;
    for (long i = 0; i < 60000000; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

static void *worker(void *arg) {
    fill_spin();
    return arg;
}

int main(int argc, char **argv) {
    rlim_t lim = argc > 1 ? (rlim_t)atoi(argv[1]) : 16;
    struct rlimit rl = {lim, lim};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        perror("setrlimit");
        return 1;
    }
    int n = 0;
    while (open("/dev/null", O_RDONLY) >= 0) n++;
    pthread_t t;
    int have = pthread_create(&t, NULL, worker, NULL) == 0;
    fill_spin();
    if (have) pthread_join(t, NULL);
    printf("opened %d\n", n);
    return 0;
}
