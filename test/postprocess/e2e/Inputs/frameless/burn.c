/* The leaf of record-frameless-callers.test: a loop that keeps its state in registers
 * (it is called with sp unaligned, so it must not need an aligned stack). */
volatile unsigned long sink;

__attribute__((noinline)) void burn(long k) {
    unsigned long x = 88172645463325252ul;
    for (long i = 0; i < k; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
}
