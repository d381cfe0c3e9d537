/* bench: reverse, prepend, concatenate and search arrays, as list_ops.osp (fresh arrays
 * each round, like the immutable lists). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    enum { N = 2000 };
    long *base = malloc(N * sizeof *base);
    for (long i = 0; i < N; i++) base[i] = i * 3;
    long acc = 0;
    for (long k = 0; k < 30000; k++) {
        long *r = malloc(N * sizeof *r);
        for (long i = 0; i < N; i++) r[i] = base[N - 1 - i];
        long *c = malloc((2 * N + 1) * sizeof *c);
        c[0] = k;
        memcpy(c + 1, r, N * sizeof *c);
        memcpy(c + 1 + N, base, N * sizeof *c);
        long n = 2 * N + 1, want = k % 6000;
        bool hit = false;
        for (long i = 0; i < n; i++)
            if (c[i] == want) {
                hit = true;
                break;
            }
        long t;
        if (!__builtin_add_overflow(acc, n + hit, &t)) acc = t;
        free(r);
        free(c);
    }
    printf("%ld\n", acc);
    free(base);
    return 0;
}
