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
    volatile unsigned long pad[8] = {0};
    for (long i = 0; i < iterations; i++) pad[i & 7] += (unsigned long)i ^ pad[(i + 3) & 7];
    return (long)(pad[0] + pad[5]);
}

#if defined(__x86_64__)
/* rbp holds no frame pointer while the loop runs (it is saved on the stack, as the CFI
 * directives say, and holds a constant): the kernel's frame-pointer chain from this leaf
 * is garbage, only CFI finds its caller. */
__attribute__((noinline)) long osp_test_clobber_spin(long iterations) {
    long acc;
    __asm__ volatile("push %%rbp\n\t"
                     ".cfi_adjust_cfa_offset 8\n\t"
                     ".cfi_rel_offset %%rbp, 0\n\t"
                     "mov $0x5a5a5a5a, %%rbp\n\t"
                     "xor %0, %0\n"
                     "1:\n\t"
                     "add %%rbp, %0\n\t"
                     "dec %1\n\t"
                     "jnz 1b\n\t"
                     "pop %%rbp\n\t"
                     ".cfi_adjust_cfa_offset -8\n\t"
                     ".cfi_restore %%rbp\n\t"
                     : "=&r"(acc), "+r"(iterations)
                     :
                     : "cc", "memory");
    return acc;
}
#endif
