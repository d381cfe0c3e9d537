/* frameless.h — functions built without frame pointers, for test_cfi.c (see frameless.c). */
#ifndef PROF_TEST_FRAMELESS_H
#define PROF_TEST_FRAMELESS_H

#include <ucontext.h>

/* getcontext(uc) from a frameless frame; returns a value that keeps the call alive. */
int osp_test_frameless_capture(ucontext_t *uc);
/* Call fn(arg) from a frameless frame of 80+ bytes. */
int osp_test_frameless_call(void (*fn)(void *), void *arg);
/* osp_test_frameless_call from another frameless frame. */
int osp_test_frameless_nested(void (*fn)(void *), void *arg);

#endif
