/*
 * prof_handler.c — the SIGPROF handler of the "sampler" engine. Runs in signal context on
 * a registered thread; holds no lock and takes none. Touches only the thread's own slot's
 * ring (producer side) and a few atomics: no allocation, no stdio, errno preserved.
 *
 * Source: docs/spec/profiler.md §(b.3), §(c), §(l.1), §(k) items 1, 9.
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "prof_cfi.h"
#include "prof_session.h"
#include "prof_own_text.h"

_Static_assert(OSP_CFI_WALKERS == OSP_PROF_NSLOTS, "one CFI walker id per registry slot");

/* A SIGPROF that is not ours goes to the action the session replaced. One whose action
 * was the default (a program's setitimer(ITIMER_PROF) without a handler) ends the process
 * as it would unprofiled: default action restored, signal unblocked and re-raised
 * (§(l.3)). */
OSP_PROF_WRAPPER static void chain_foreign(struct osp_prof_session *ps, int sig, siginfo_t *si,
                                           void *uc) {
    if (!atomic_load_explicit(&ps->old_action_ready, memory_order_acquire)) return;
    const struct sigaction *old = &ps->old_action;
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) old->sa_sigaction(sig, si, uc);
    } else if (old->sa_handler == SIG_DFL) {
        osp_prof__raise_default(sig);
    } else if (old->sa_handler != SIG_IGN && old->sa_handler) {
        old->sa_handler(sig);
    }
}

/* Walk the interrupted stack into the next ring entry; false when the ring is full (the
 * loss is counted). */
static struct osp_prof_ring_entry *ring_walk(struct osp_prof_slot *s, void *ucv, uint32_t *head) {
    struct osp_prof_ring *r = s->ring;
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h - tail >= OSP_PROF_RING_N) {
        atomic_fetch_add_explicit(&s->ring_full, 1, memory_order_relaxed);
        return NULL;
    }
    struct osp_prof_regs regs;
    osp_prof__ucontext_regs(ucv, &regs);
    /* Nothing below the interrupted stack pointer is a frame, and everything between it
     * and the top of the stack is mapped: a tighter lower bound than the registered one
     * (for the main thread that one comes from RLIMIT_STACK and may be unmapped). */
    uintptr_t lo = s->lo > regs.sp ? s->lo : regs.sp;
    struct osp_prof_ring_entry *e = &r->e[h % OSP_PROF_RING_N];
    bool truncated;
    e->seq = atomic_load_explicit(&s->req_seq, memory_order_acquire);
    /* The hybrid walk (§(l.1)): frame pointers where the CFI agrees, CFI steps elsewhere,
     * through signal frames; the tables are read lock-free. */
    struct osp_unwind_regs ur = {
        .pc = regs.pc, .sp = regs.sp, .fp = regs.fp, .lr = regs.lr, .fp_known = true};
    struct osp_unwind_info info;
    /* The slot's index is the walker id: one acquire load, no shared cache line written.
     * A thread cancelled asynchronously inside the walk leaves its walker word entered;
     * releasing the slot (the thread's exit) resets it (osp_prof__cfi_walker_reset), so
     * cancellation is not disabled here (§(l.3)). */
    size_t walker = (size_t)(s - osp_prof__session.slots);
    e->n = (uint32_t)osp_prof__sample_walk(walker, &ur, lo, s->hi, e->pcs, OSP_PROF_MAX_FRAMES,
                                           &truncated, &info);
    /* Off the registered stack (a makecontext coroutine's, an alternate signal stack's)
     * nothing above the interrupted frame can be read: the sample is the leaf end of a
     * stack whose callers are unknown, marked truncated rather than shown as called from
     * the thread's root. */
    if ((regs.sp < s->lo || regs.sp >= s->hi) && info.end != OSP_UNWIND_ROOT) truncated = true;
    e->truncated = truncated;
    e->unwind_end = info.end;
    /* A sleeping call this signal interrupted (nanosleep, poll, select, epoll_wait, ...)
     * returns -EINTR in the return register: the stack is the thread's blocking stack. */
    e->in_syscall = regs.ret == -EINTR;
    *head = h;
    return e;
}

/* The thread's own kernel timer fired (§(l.3)): one on-CPU sample weighted with the CPU
 * time since the previous one, measured (so an overrun or a late expiry is weighted by
 * what really ran), then the timer is re-armed with a new jittered period. A full ring
 * keeps the baseline, so the next sample carries the lost one's CPU time. */
static void timer_sample(struct osp_prof_session *ps, struct osp_prof_slot *s, void *ucv) {
    if (s == NULL || atomic_load_explicit(&s->state, memory_order_acquire) != OSP_SLOT_ACTIVE)
        return;
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return;
    uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    {
        uint32_t head;
        struct osp_prof_ring_entry *e = ring_walk(s, ucv, &head);
        if (e != NULL) {
            e->seq = 0;
            e->t_ns = osp_prof__mono_ns();
            e->cpu_ns = cpu;
            e->weight_ns = cpu > s->h_cpu_last ? cpu - s->h_cpu_last : 0;
            s->h_cpu_last = cpu;
            atomic_store_explicit(&s->ring->head, head + 1, memory_order_release);
        }
    }
    osp_prof__ktimer_rearm(ps, s, cpu);
}

void osp_prof__on_sigprof(int sig, siginfo_t *si, void *ucv) {
    struct osp_prof_session *ps = &osp_prof__session;
    int saved_errno = errno;
    struct osp_prof_slot *s = osp_prof__t_slot;
    if (si == NULL) {
        chain_foreign(ps, sig, si, ucv);
    } else if (si->si_code == SI_TKILL &&
               si->si_pid == atomic_load_explicit(&ps->pid, memory_order_relaxed)) {
        /* A directed request of the sampler thread (§(b.3)). */
        if (s != NULL && atomic_load_explicit(&s->state, memory_order_acquire) == OSP_SLOT_ACTIVE) {
            uint32_t head;
            struct osp_prof_ring_entry *e = ring_walk(s, ucv, &head);
            if (e != NULL) {
                e->seq = atomic_load_explicit(&s->req_seq, memory_order_acquire);
                atomic_store_explicit(&s->ring->head, head + 1, memory_order_release);
            }
        }
        /* Answered: a wait this thread is entering may begin (osp_prof_block_begin). */
        if (s != NULL) atomic_store_explicit(&s->req_out, 0, memory_order_release);
    } else if ((si->si_code == POLL_IN || si->si_code == POLL_HUP) &&
               osp_prof__sig_fd_ours(si->si_fd, __atomic_load_n(&ps->engine, __ATOMIC_RELAXED) ==
                                                    &osp_prof__engine_perf_event)) {
        /* A perf_event overflow (F_SETSIG): a sample when it is this thread's descriptor;
         * a stale one (the thread unregistering, the session over, another begun) is
         * dropped, never passed on as the program's. */
        if (s != NULL && s->ktimer_kind == OSP_KTIMER_PERF && si->si_fd == s->perf_fd)
            timer_sample(ps, s, ucv);
    } else if (si->si_code == SI_TIMER && ps->slots != NULL &&
               (uintptr_t)si->si_value.sival_ptr >= (uintptr_t)ps->slots &&
               (uintptr_t)si->si_value.sival_ptr < (uintptr_t)(ps->slots + OSP_PROF_NSLOTS)) {
        /* A POSIX CPU-time timer of ours (its value is its slot). */
        if (s != NULL && s->ktimer_kind == OSP_KTIMER_POSIX && si->si_value.sival_ptr == s)
            timer_sample(ps, s, ucv);
    } else {
        chain_foreign(ps, sig, si, ucv);
    }
    errno = saved_errno;
}

#endif /* OSP_PROF_SAMPLER */
