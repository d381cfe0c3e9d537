/* bench: digit sums with the checked arithmetic of digits.osp. */
#include <stdio.h>
static long digit_sum(long n) {
    long acc = 0;
    while (n != 0) {
        long r;
        if (!__builtin_add_overflow(acc, n % 10, &r)) acc = r;
        n /= 10;
    }
    return acc;
}
int main(void) {
    long acc = 0;
    for (long x = 0; x < 20000000; x++) {
        long r;
        if (!__builtin_add_overflow(acc, digit_sum(x), &r)) acc = r;
    }
    printf("%ld\n", acc);
    return 0;
}
