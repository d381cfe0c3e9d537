/* Ignores SIGINT and computes until it is killed. */
#include <signal.h>

volatile double sink;

int main(void) {
    signal(SIGINT, SIG_IGN);
    double x = 1;
    for (long i = 0;; i++) {
        x = x * 1.0000001 + 0.5;
        if ((i & 0xffffff) == 0) sink = x;
    }
}
