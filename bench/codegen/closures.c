/* bench: closures as structs of a code pointer and captured values, called through pointers,
 * as closures.osp. */
#include <stdio.h>
typedef struct fnv fnv;
struct fnv {
    long (*code)(const fnv *self, long x);
    long n;
    const fnv *f, *g;
};
static long add_code(const fnv *s, long x) {
    long r;
    return __builtin_add_overflow(x, s->n, &r) ? x : r;
}
static long scale_code(const fnv *s, long x) {
    long r;
    return __builtin_mul_overflow(x, s->n, &r) ? x : r % 1000003;
}
static long compose_code(const fnv *s, long x) {
    return s->g->code(s->g, s->f->code(s->f, x));
}
int main(void) {
    static const fnv a3 = {add_code, 3, 0, 0}, s7 = {scale_code, 7, 0, 0}, a1 = {add_code, 1, 0, 0},
                     s11 = {scale_code, 11, 0, 0}, a5 = {add_code, 5, 0, 0},
                     s3 = {scale_code, 3, 0, 0}, am4 = {add_code, -4, 0, 0};
    static const fnv c1 = {compose_code, 0, &s7, &a1}, c2 = {compose_code, 0, &a5, &s3};
    const fnv *fs[] = {&a3, &c1, &s11, &c2, &am4};
    long acc = 0;
    for (long i = 0; i < 15000000; i++) {
        long x;
        if (__builtin_add_overflow(acc, i, &x)) x = 0;
        for (int k = 0; k < 5; k++) x = fs[k]->code(fs[k], x);
        acc = x;
    }
    printf("%ld\n", acc);
    return 0;
}
