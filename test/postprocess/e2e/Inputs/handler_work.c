/* A program that does most of its work in a signal handler: SIGALRM every 10 ms of real
 * time interrupts busy(), and the handler computes for a few milliseconds. Its stacks go
 * through the kernel's signal frame: handler_work <- on_alarm <- __restore_rt <- busy. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long g_sink;

__attribute__((noinline)) static void handler_work(void) {
    for (unsigned long i = 0; i < 3000000; i++) g_sink += i * i;
}

static void on_alarm(int sig) {
    (void)sig;
    handler_work();
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void busy(double secs) {
    double end = now_s() + secs;
    while (now_s() < end)
        for (unsigned long i = 0; i < 100000; i++) g_sink += i;
}

int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_REAL, &it, NULL);
    busy(argc > 1 ? atof(argv[1]) : 1.0);
    return 0;
}
