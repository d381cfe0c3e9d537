/* The main thread starts a worker, writes the process id to the file named by argv[1]
 * and ends with pthread_exit; the worker computes on (at most 20 s) until killed. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

volatile double sink;

static void *worker(void *arg) {
    time_t end = time(NULL) + 20;
    double x = 1;
    while (time(NULL) < end)
        for (long i = 0; i < 10000000; i++) x = x * 1.0000001 + 0.5;
    sink = x;
    return arg;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return 1;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    rename(tmp, argv[1]);
    pthread_exit(NULL);
}
