/* A target for osprey --attach whose executable is deleted while it runs (as an upgrade
 * replaces a server's binary): it unlinks its own file, prints "ready" (attach_run.py
 * waits for it) and computes in spin_deleted until SIGUSR1. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t done;
volatile double sink;

static void on_usr1(int sig) {
    (void)sig;
    done = 1;
}

__attribute__((noinline)) static void spin_deleted(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

int main(int argc, char **argv) {
    (void)argc;
    signal(SIGUSR1, on_usr1);
    if (unlink(argv[0]) != 0) return 1;
    puts("ready");
    fflush(stdout);
    while (!done) spin_deleted(1000000);
    puts("finished");
    return 0;
}
