/* bench: small structs passed by value, as records.osp. */
#include <stdio.h>
typedef struct vec {
    long x, y;
} vec;
static vec add(vec a, vec b) {
    vec r;
    if (__builtin_add_overflow(a.x, b.x, &r.x)) r.x = 0;
    if (__builtin_add_overflow(a.y, b.y, &r.y)) r.y = 0;
    return r;
}
static long dot(vec a, vec b) {
    long p, q, r;
    if (__builtin_mul_overflow(a.x, b.x, &p) || __builtin_mul_overflow(a.y, b.y, &q) ||
        __builtin_add_overflow(p, q, &r))
        return 0;
    return r;
}
int main(void) {
    long acc = 0;
    for (long i = 0; i < 100000000; i++) {
        vec p = {i % 100, i % 37};
        vec q = add(p, (vec){3, -2});
        long t, r;
        if (__builtin_add_overflow(acc, dot(p, q), &t) || __builtin_sub_overflow(t, q.x % 7, &r))
            continue;
        acc = r;
    }
    printf("%ld\n", acc);
    return 0;
}
