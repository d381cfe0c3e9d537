/* Resets every signal's action to the default with signal(), as daemons, supervisors and
 * shells do at start, then computes. Unprofiled it prints "ok" and exits 0. */
#include <signal.h>
#include <stdio.h>

volatile double sink;

__attribute__((noinline)) static void spin_reset(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

int main(void) {
    spin_reset(20000000);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    spin_reset(60000000);
    puts("ok");
    return 0;
}
