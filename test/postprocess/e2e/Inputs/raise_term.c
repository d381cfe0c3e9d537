/* A program that ends itself with raise(): unprofiled, raise() of a signal whose action is
 * the default never returns and the process dies of it (exit status 128 + N). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

volatile double sink;

__attribute__((noinline)) static void spin_raise(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

int main(int argc, char **argv) {
    spin_raise(60000000);
    int sig = argc > 1 && strcmp(argv[1], "INT") == 0   ? SIGINT
              : argc > 1 && strcmp(argv[1], "HUP") == 0 ? SIGHUP
                                                        : SIGTERM;
    raise(sig);
    puts("after raise"); /* never reached unprofiled */
    return 0;
}
