/* Writes numbered lines to standard output for ever, burning a little CPU between them
 * (writer_line): under `| head -1`, it dies of SIGPIPE once head has gone. */
#include <stdio.h>

__attribute__((noinline)) static double writer_line(double x) {
    for (int i = 0; i < 200000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

int main(void) {
    double x = 1;
    for (long n = 0;; n++) {
        x = writer_line(x);
        printf("%ld %g\n", n, x);
        fflush(stdout);
    }
}
