/* bench: Euclid's gcd over a grid, as gcd.osp. */
#include <stdio.h>
static long gcd(long a, long b) {
    while (b != 0) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}
int main(void) {
    long acc = 0;
    for (long i = 1; i < 3200; i++)
        for (long j = 1; j < 3200; j++) {
            long r;
            if (!__builtin_add_overflow(acc, gcd(i, j), &r)) acc = r;
        }
    printf("%ld\n", acc);
    return 0;
}
