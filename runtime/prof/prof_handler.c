/*
 * prof_handler.c — the SIGPROF handler of the "sampler" engine. Runs in signal context on
 * a registered thread; holds no lock and takes none. Touches only the thread's own slot's
 * ring (producer side) and a few atomics: no allocation, no stdio, errno preserved.
 *
 * Source: docs/spec/profiler.md §(b.3), §(c), §(k) items 1, 9.
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>

#include "prof_session.h"

/* A SIGPROF that is not ours goes to the action the session replaced. */
static void chain_foreign(struct osp_prof_session *ps, int sig, siginfo_t *si, void *uc) {
    if (!atomic_load_explicit(&ps->old_action_ready, memory_order_acquire)) return;
    const struct sigaction *old = &ps->old_action;
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) old->sa_sigaction(sig, si, uc);
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN && old->sa_handler) {
        old->sa_handler(sig);
    }
}

void osp_prof__on_sigprof(int sig, siginfo_t *si, void *ucv) {
    struct osp_prof_session *ps = &osp_prof__session;
    int saved_errno = errno;
    if (si == NULL || si->si_code != SI_TKILL ||
        si->si_pid != atomic_load_explicit(&ps->pid, memory_order_relaxed)) {
        chain_foreign(ps, sig, si, ucv);
        errno = saved_errno;
        return;
    }
    struct osp_prof_slot *s = osp_prof__t_slot;
    if (s == NULL || atomic_load_explicit(&s->state, memory_order_acquire) != OSP_SLOT_ACTIVE) {
        errno = saved_errno;
        return;
    }
    struct osp_prof_ring *r = s->ring;
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail >= OSP_PROF_RING_N) {
        atomic_fetch_add_explicit(&s->ring_full, 1, memory_order_relaxed);
        errno = saved_errno;
        return;
    }
    struct osp_prof_regs regs;
    osp_prof__ucontext_regs(ucv, &regs);
    /* Nothing below the interrupted stack pointer is a frame, and everything between it
     * and the top of the stack is mapped: a tighter lower bound than the registered one
     * (for the main thread that one comes from RLIMIT_STACK and may be unmapped). */
    uintptr_t lo = s->lo > regs.sp ? s->lo : regs.sp;
    struct osp_prof_ring_entry *e = &r->e[head % OSP_PROF_RING_N];
    bool truncated;
    e->seq = atomic_load_explicit(&s->req_seq, memory_order_acquire);
    e->n = (uint32_t)osp_prof__fp_walk(regs.pc, regs.fp, regs.lr, lo, s->hi, e->pcs,
                                       OSP_PROF_MAX_FRAMES, &truncated);
    e->truncated = truncated;
    /* A sleeping call this signal interrupted (nanosleep, poll, select, epoll_wait, ...)
     * returns -EINTR in the return register: the stack is the thread's blocking stack. */
    e->in_syscall = regs.ret == -EINTR;
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    errno = saved_errno;
}

#endif /* OSP_PROF_SAMPLER */
