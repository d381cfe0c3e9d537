/*
 * prof_arch_x86_64.c — register extraction from an x86-64 Linux signal context. Pure
 * code, called by the SIGPROF handler in signal context (prof_handler.c); holds no lock.
 *
 * Source: docs/spec/profiler.md §(b.3), §(c).
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER && defined(__x86_64__)

#include <ucontext.h>

#include "prof_session.h"
#include "prof_own_text.h"

void osp_prof__ucontext_regs(const void *ucv, struct osp_prof_regs *r) {
    const ucontext_t *uc = ucv;
    r->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    r->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    r->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    r->lr = 0;
    r->ret = (long)uc->uc_mcontext.gregs[REG_RAX];
}

#endif
