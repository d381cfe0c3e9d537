/* bench: fib with the same checked arithmetic as fib.osp (overflow -> the `?:` default). */
#include <stdio.h>
static long fib(long n) {
    switch (n) {
    case 0: return 0;
    case 1: return 1;
    default: {
        long a, b, r;
        if (__builtin_sub_overflow(n, 1, &a)) a = 0;
        if (__builtin_sub_overflow(n, 2, &b)) b = 0;
        if (__builtin_add_overflow(fib(a), fib(b), &r)) r = 0;
        return r;
    }
    }
}
int main(void) {
    printf("%ld\n", fib(40));
    return 0;
}
