/* frameless.h — functions built without frame pointers, for test_cfi.c and test_ring.c
 * (see frameless.c). */
#ifndef PROF_TEST_FRAMELESS_H
#define PROF_TEST_FRAMELESS_H

#include <ucontext.h>

/* getcontext(uc) from a frameless frame; returns a value that keeps the call alive. */
int osp_test_frameless_capture(ucontext_t *uc);
/* Call fn(arg) from a frameless frame of 80+ bytes. */
int osp_test_frameless_call(void (*fn)(void *), void *arg);
/* osp_test_frameless_call from another frameless frame. */
int osp_test_frameless_nested(void (*fn)(void *), void *arg);

/* Spin for `iterations` in a frameless leaf that keeps 64+ bytes of stack and leaves rbp
 * alone (so rbp is its caller's frame record, and a frame-pointer walk skips the caller's
 * call site); returns a value that keeps the loop alive. */
long osp_test_frameless_spin(long iterations);
#if defined(__x86_64__)
/* Spin for `iterations` (> 0) with rbp saved and overwritten by a constant. */
long osp_test_clobber_spin(long iterations);
#endif

#endif
