/* bench: the range |> filter |> fold loop of fold.osp with the same checked arithmetic. */
#include <stdio.h>
static long step(long acc, long x) {
    long sq, r;
    if (__builtin_mul_overflow(x, x, &sq) || __builtin_add_overflow(acc, sq, &r)) return acc;
    return r;
}
int main(void) {
    long acc = 0;
    for (long x = 0; x < 400000000; x++)
        if (x % 3 != 0) acc = step(acc, x);
    printf("%ld\n", acc);
    return 0;
}
