/*
 * sigprof_program.c — a program linked with the profiler runtime (booted from the
 * environment by the load-time constructor) that, like the program of issue 3 item 2,
 * installs its own SIGPROF handler and an ITIMER_PROF timer after the profiler started.
 * Driven by test_outputs.c.
 *
 *   sigprof_program own <ms>    install the handler and timer, burn <ms> of CPU
 *   sigprof_program none <ms>   just burn (the control: the profiler keeps SIGPROF)
 *
 * Prints "ticks=<n>" (SIGPROFs its own handler saw) on stdout.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t g_ticks;

static void own_handler(int sig) {
    (void)sig;
    g_ticks++;
}

/* This thread's CPU clock: the process's would count the profiler's sampler thread too,
 * which under ThreadSanitizer on a loaded machine left the sampled thread 0.276 s of a
 * "0.3 s" burn (a make test failure of test_sigprof_replaced_is_reported). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double program_hot(double ms) {
    volatile double x = 1;
    double end = cpu_now() + ms / 1000.0;
    while (cpu_now() < end)
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    double ms = atof(argv[2]);
    if (strcmp(argv[1], "own") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = own_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPROF, &sa, NULL);
        struct itimerval it = {{0, 10000}, {0, 10000}};
        setitimer(ITIMER_PROF, &it, NULL);
    }
    program_hot(ms);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("ticks=%d\n", (int)g_ticks);
    return 0;
}
