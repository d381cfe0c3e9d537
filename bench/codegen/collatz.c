/* bench: Collatz chain lengths with the checked arithmetic of collatz.osp. */
#include <stdio.h>
static long steps(long n, long acc) {
    while (n != 1) {
        long a, t;
        if (__builtin_add_overflow(acc, 1, &a)) a = 0;
        if (n % 2 == 0)
            n = n / 2;
        else if (__builtin_mul_overflow(3, n, &t) || __builtin_add_overflow(t, 1, &t))
            n = 1;
        else
            n = t;
        acc = a;
    }
    return acc;
}
int main(void) {
    long acc = 0;
    for (long n = 1; n < 1000000; n++) {
        long r;
        if (!__builtin_add_overflow(acc, steps(n, 0), &r)) acc = r;
    }
    printf("%ld\n", acc);
    return 0;
}
