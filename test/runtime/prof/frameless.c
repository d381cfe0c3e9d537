/*
 * frameless.c — code without frame pointers for test_cfi.c: compiled with
 * -fomit-frame-pointer (test/runtime/prof/CMakeLists.txt), as C libraries are. Each
 * function keeps some stack of its own, so its CFA is rsp + N, and calls back into
 * frame-pointer code, so a frame-pointer walk from the callback skips the function that
 * called this one.
 */
#define _GNU_SOURCE
#include "frameless.h"

#include <stdlib.h>
#include <string.h>

volatile int osp_test_frameless_sink;

/* Capture the registers here: frame 0 is in this frameless function. */
__attribute__((noinline)) int osp_test_frameless_capture(ucontext_t *uc) {
    volatile char pad[48];
    memset((char *)pad, 1, sizeof pad);
    int r = getcontext(uc);
    osp_test_frameless_sink += pad[3] + r;
    return osp_test_frameless_sink;
}

__attribute__((noinline)) int osp_test_frameless_call(void (*fn)(void *), void *arg) {
    volatile char pad[80];
    memset((char *)pad, 2, sizeof pad);
    fn(arg);
    osp_test_frameless_sink += pad[7];
    return osp_test_frameless_sink;
}

__attribute__((noinline)) int osp_test_frameless_nested(void (*fn)(void *), void *arg) {
    volatile char pad[200];
    memset((char *)pad, 3, sizeof pad);
    osp_test_frameless_call(fn, arg);
    osp_test_frameless_sink += pad[9];
    return osp_test_frameless_sink;
}

__attribute__((noinline)) long osp_test_frameless_spin(long iterations) {
    volatile long pad[8] = {0};
    for (long i = 0; i < iterations; i++) pad[i & 7] += i ^ pad[(i + 3) & 7];
    return pad[0] + pad[5];
}
