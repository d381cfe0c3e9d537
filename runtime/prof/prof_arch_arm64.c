/*
 * prof_arch_arm64.c — register extraction from an arm64 (AArch64) Linux signal context.
 * Pure code, called by the SIGPROF handler in signal context (prof_handler.c); holds no
 * lock.
 *
 * Source: docs/spec/profiler.md §(b.3), §(c).
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER && defined(__aarch64__)

#include <ucontext.h>

#include "prof_session.h"
#include "prof_own_text.h"

void osp_prof__ucontext_regs(const void *ucv, struct osp_prof_regs *r) {
    const ucontext_t *uc = ucv;
    r->pc = (uintptr_t)uc->uc_mcontext.pc;
    r->fp = (uintptr_t)uc->uc_mcontext.regs[29];
    r->sp = (uintptr_t)uc->uc_mcontext.sp;
    r->lr = (uintptr_t)uc->uc_mcontext.regs[30];
    r->ret = (long)uc->uc_mcontext.regs[0];
}

#endif
