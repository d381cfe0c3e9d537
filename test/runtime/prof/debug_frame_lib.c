/*
 * debug_frame_lib.c — a shared library whose only call-frame information is .debug_frame
 * (test_cfi.c): built with -fno-asynchronous-unwind-tables -fno-unwind-tables -g and
 * without frame pointers (test/runtime/prof/CMakeLists.txt), so its loaded image has no
 * PT_GNU_EH_FRAME and the frame chain skips its functions' callers. Built twice: 32-bit
 * DWARF and 64-bit DWARF (-gdwarf64).
 */
#include <string.h>

volatile int osp_test_dbgframe_sink;

/* Call fn(arg) from a frameless frame of 96+ bytes. */
__attribute__((noinline)) int osp_test_dbgframe_call(void (*fn)(void *), void *arg) {
    volatile char pad[96];
    memset((char *)pad, 4, sizeof pad);
    fn(arg);
    osp_test_dbgframe_sink += pad[5];
    return osp_test_dbgframe_sink;
}

/* osp_test_dbgframe_call from another frameless frame. */
__attribute__((noinline)) int osp_test_dbgframe_nested(void (*fn)(void *), void *arg) {
    volatile char pad[160];
    memset((char *)pad, 5, sizeof pad);
    osp_test_dbgframe_call(fn, arg);
    osp_test_dbgframe_sink += pad[11];
    return osp_test_dbgframe_sink;
}
