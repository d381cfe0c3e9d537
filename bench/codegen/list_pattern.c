/* bench: a growable array built by appends, summed 40 times, as list_pattern.osp. */
#include <stdio.h>
#include <stdlib.h>
static long sum(const long *xs, long n, long acc) {
    for (long i = 0; i < n; i++) {
        long r;
        if (!__builtin_add_overflow(acc, xs[i], &r)) acc = r;
    }
    return acc;
}
int main(void) {
    long n = 0, cap = 4;
    long *xs = malloc(cap * sizeof *xs);
    for (long i = 0; i < 1000000; i++) {
        if (n == cap) xs = realloc(xs, (cap *= 2) * sizeof *xs);
        xs[n++] = i * 7 % 1000;
    }
    long acc = 0;
    for (long k = 0; k < 40; k++) {
        long r;
        if (!__builtin_add_overflow(acc, sum(xs, n, k), &r)) acc = r;
    }
    printf("%ld\n", acc);
    free(xs);
    return 0;
}
