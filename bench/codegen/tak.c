/* bench: the Takeuchi function with the checked decrements of tak.osp. */
#include <stdio.h>
static long dec(long v) {
    long r;
    return __builtin_sub_overflow(v, 1, &r) ? 0 : r;
}
static long tak(long x, long y, long z) {
    if (y < x) return tak(tak(dec(x), y, z), tak(dec(y), z, x), tak(dec(z), x, y));
    return z;
}
int main(void) {
    printf("%ld\n", tak(30, 21, 10));
    return 0;
}
