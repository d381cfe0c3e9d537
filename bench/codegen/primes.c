/* bench: count primes by trial division, with the checked arithmetic of primes.osp. */
#include <stdbool.h>
#include <stdio.h>
static bool is_prime(long n) {
    for (long d = 2;;) {
        long sq;
        if (__builtin_mul_overflow(d, d, &sq)) sq = n;
        if (sq > n) return true;
        if (n % d == 0) return false;
        if (__builtin_add_overflow(d, 1, &d)) d = n;
    }
}
int main(void) {
    long acc = 0;
    for (long n = 2; n < 3000000; n++)
        if (is_prime(n)) acc++;
    printf("%ld\n", acc);
    return 0;
}
