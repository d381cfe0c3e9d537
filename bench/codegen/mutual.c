/* bench: mutual recursion (is_even / is_odd) with the checked decrements of mutual.osp. */
#include <stdbool.h>
#include <stdio.h>
static bool is_odd(long n);
static bool is_even(long n) {
    long m;
    if (n == 0) return true;
    if (__builtin_sub_overflow(n, 1, &m)) m = 0;
    return is_odd(m);
}
static bool is_odd(long n) {
    long m;
    if (n == 0) return false;
    if (__builtin_sub_overflow(n, 1, &m)) m = 0;
    return is_even(m);
}
int main(void) {
    long acc = 0;
    for (long i = 0; i < 400000; i++)
        if (is_even(i % 3001)) acc++;
    printf("%ld\n", acc);
    return 0;
}
