/*
 * prof_registry.c — the thread registry's registered-thread side (§(d)): a thread
 * registering or unregistering itself (osp_prof_thread_register / _unregister, the TLS
 * key's destructor at thread exit), under the registry mutex with SIGPROF blocked while
 * it releases; and the blocking-region hooks (osp_prof_block_begin / _end), which run on
 * the registered thread lock-free and allocation-free. Runs on program threads only,
 * never on the sampler thread and never in signal context.
 *
 * Source: docs/spec/profiler.md §(b.3), §(c) item 6, §(d).
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prof_cfi.h"
#include "prof_session.h"
#include "prof_own_text.h"

__thread struct osp_prof_slot *osp_prof__t_slot __attribute__((tls_model("initial-exec")));
/* The interposer's registration of this thread found no free slot (and counted it). */
static __thread bool t_over_counted __attribute__((tls_model("initial-exec")));
/* The generation of the calling thread's slot when it registered. */
static __thread uint64_t t_gen __attribute__((tls_model("initial-exec")));

static void stack_bounds(uintptr_t *lo, uintptr_t *hi) {
    *lo = *hi = 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr != NULL && size > 0) {
        *lo = (uintptr_t)addr;
        *hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
}

/* Release the calling thread's slot (§(d) unregister): block SIGPROF, mark the slot
 * free and bump its generation under the registry mutex, clear the slot pointer, and
 * only then restore the signal mask (a SIGPROF that became pending meanwhile then finds
 * no slot and is ignored). */
void osp_prof__release_current(struct osp_prof_session *ps) {
    struct osp_prof_nocancel nc;
    osp_prof__nocancel_enter(&nc);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    struct osp_prof_slot *s = osp_prof__t_slot;
    if (s != NULL) {
        atomic_store_explicit(&s->leaving, 1, memory_order_seq_cst);
        pthread_mutex_lock(&ps->reg);
        int st = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (st == OSP_SLOT_ACTIVE) {
            /* The thread's CPU time ends here: what the drains below cost (a ring's records
             * walked on this thread) is the profiler's, not charged to its last sample. */
            uint64_t c;
            bool c_ok = osp_prof__read_clock(s->cpu_clock, &c);
            if (ps->engine != NULL && ps->engine->thread_unregistered != NULL)
                ps->engine->thread_unregistered(ps, s);
            osp_prof__drain(ps, s); /* answers already in the ring still become samples */
            if (c_ok) osp_prof__flush_tail(ps, s, c);
            osp_prof__slot_abandon_request(s, ps->reg_dropped);
            atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
        }
        osp_prof__stat_fd_release(ps, s);
        /* A walk of this thread's handler cancelled asynchronously left its word entered. */
        osp_prof__cfi_walker_reset((size_t)(s - ps->slots));
        atomic_store_explicit(&s->state, OSP_SLOT_FREE, memory_order_release);
        pthread_mutex_unlock(&ps->reg);
        osp_prof__t_slot = NULL;
        t_gen = 0;
        if (ps->init_ok) pthread_setspecific(ps->key, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    osp_prof__nocancel_leave(&nc);
}

/* Thread-exit destructor: a thread that exits registered is unregistered (§(d)). */
void osp_prof__key_destructor(void *value) {
    (void)value;
    if (osp_prof__t_slot != NULL) osp_prof__release_current(&osp_prof__session);
}

/* The first free slot, or NULL. Under the registry mutex. */
static struct osp_prof_slot *free_slot(struct osp_prof_session *ps) {
    for (size_t i = 0; i < OSP_PROF_NSLOTS; i++)
        if (atomic_load_explicit(&ps->slots[i].state, memory_order_relaxed) == OSP_SLOT_FREE)
            return &ps->slots[i];
    return NULL;
}

/* Whether a thread may register now: the session runs and its engine has started. The
 * state turns RUNNING before the engine is chosen and started; `on` is set (release) once
 * it has, so reading it (acquire) also orders the engine's settings (ps->engine,
 * ps->perf_ring) before what the registration reads of them. Under the registry mutex. */
static bool session_open(struct osp_prof_session *ps) {
    return ps->state == OSP_SESSION_RUNNING && atomic_load_explicit(&ps->on, memory_order_acquire);
}

/* The session's parameters a thread_prepare needs. Under the registry mutex. */
static void set_prep(struct osp_prof_session *ps, struct osp_prof_ktimer_prep *p) {
    p->engine = ps->engine;
    p->epoch = ps->epoch;
    p->period_ns = ps->period_ns;
    p->ring = ps->perf_ring;
    p->kernel = ps->perf_kernel;
    p->signal_ok = !atomic_load(&ps->handler_lost);
    /* Reserved now, under the mutex: threads that start together would otherwise all see
     * the budget unspent. The slot that takes the counter keeps the count (until its timer
     * is released); prep_unreserve gives back one that was not taken. The stat cache's
     * share is kept out whether or not it has filled yet: counting only its open
     * descriptors let the counters take the whole budget first and the cache add its
     * quarter later (31 descriptors under a budget of 25, record-fd-budget.test). */
    p->perf_ok = ps->perf_fds + osp_prof__stat_fd_cap(ps) < ps->fd_budget;
    if (p->perf_ok) ps->perf_fds++;
}

/* Give back a descriptor reserved by set_prep that no slot took. Under the registry mutex. */
static void prep_unreserve(struct osp_prof_session *ps, struct osp_prof_ktimer_prep *p) {
    if (!p->perf_ok) return;
    p->perf_ok = false;
    if (ps->perf_fds > 0) ps->perf_fds--;
}

static void register_impl(struct osp_prof_session *ps, int64_t fiber_id, const char *label,
                          bool is_auto) {
    struct osp_prof_slot *cur = osp_prof__t_slot;
    if (cur != NULL) {
        if (atomic_load_explicit(&cur->state, memory_order_acquire) == OSP_SLOT_ACTIVE &&
            atomic_load_explicit(&cur->gen, memory_order_relaxed) == t_gen) {
            /* Already registered in this session. A registration of the interposer is
             * taken over by the thread's own (a fiber started through the collector). */
            if (cur->auto_reg && !is_auto) {
                pthread_mutex_lock(&ps->reg);
                if (atomic_load_explicit(&cur->state, memory_order_relaxed) == OSP_SLOT_ACTIVE &&
                    cur->row < ps->nrows) {
                    ps->rows[cur->row].fiber = fiber_id;
                    osp_prof__cut_label(label, ps->rows[cur->row].label);
                    cur->auto_reg = false;
                }
                pthread_mutex_unlock(&ps->reg);
            }
            return;
        }
        osp_prof__release_current(ps); /* left over from an earlier session */
    }
    clockid_t cid;
    if (pthread_getcpuclockid(pthread_self(), &cid) != 0) return;
    uintptr_t lo, hi;
    stack_bounds(&lo, &hi);
    char lab[OSP_PROF_LABEL_MAX + 1];
    osp_prof__cut_label(label, lab);
    pid_t tid = (pid_t)syscall(SYS_gettid);

    /* What may wait for the kernel (opening the thread's counter, mapping its ring,
     * allocating a slot's sample ring: mmap waits for the process's address-space lock,
     * which every thread starting at the same time takes) is done without the registry
     * mutex: the slot is reserved and the session's parameters read under it first, and
     * the mutex is taken again only to publish what was made. With 64 threads starting
     * at once on 2 cores, registrations that opened and mapped under the mutex, and were
     * preempted or put to sleep there, formed a convoy that kept the last threads
     * unregistered, and the sampler thread from emptying the rings, for over a second. */
    struct osp_prof_ktimer_prep prep = {.fd = -1};
    struct osp_prof_ring *spare = NULL;
    pthread_mutex_lock(&ps->reg);
    if (!session_open(ps)) {
        pthread_mutex_unlock(&ps->reg);
        return;
    }
    struct osp_prof_slot *s = free_slot(ps);
    if (s == NULL) {
        /* One count per thread: its own registration after the interposer's is the same. */
        if (!t_over_counted) ps->threads_over_limit++;
        t_over_counted = is_auto;
        pthread_mutex_unlock(&ps->reg);
        return;
    }
    /* Neither free (no other registration takes it) nor active (the sampler thread and
     * the session's stop pass it by). */
    atomic_store_explicit(&s->state, OSP_SLOT_RESERVED, memory_order_relaxed);
    bool prepare = ps->engine->thread_prepare != NULL;
    bool need_ring = s->ring == NULL;
    if (prepare) set_prep(ps, &prep);
    pthread_mutex_unlock(&ps->reg);
    if (prepare) prep.engine->thread_prepare(&prep, tid);
    if (need_ring) spare = calloc(1, sizeof *spare); /* never in the handler */

    pthread_mutex_lock(&ps->reg);
    if (!session_open(ps)) goto out;
    /* The CPU clock from which the thread's samples count: read now, with the slot
     * reserved and the timer made (their CPU is the profiler's, not sampled). */
    uint64_t cpu0;
    if (!osp_prof__read_clock(cid, &cpu0)) goto out;
    if (s->ring == NULL) {
        s->ring = spare;
        spare = NULL;
        if (s->ring == NULL) goto out;
    }
    if (ps->nrows == ps->rows_cap) {
        size_t c = ps->rows_cap ? ps->rows_cap * 2 : 64;
        struct osp_prof_row *q = realloc(ps->rows, c * sizeof *q);
        if (q == NULL) goto out;
        ps->rows = q;
        ps->rows_cap = c;
    }
    struct osp_prof_row *rw = &ps->rows[ps->nrows];
    rw->fiber = fiber_id;
    rw->tid = tid;
    memcpy(rw->label, lab, sizeof lab);
    s->row = (uint32_t)ps->nrows++;
    s->tid = tid;
    s->cpu_clock = cid;
    s->lo = lo;
    s->hi = hi;
    s->block_depth = 0;
    s->block_frame = 0;
    s->auto_reg = is_auto;
    s->ktimer_kind = OSP_KTIMER_NONE;
    s->ring_delivery = false;
    s->perf_rb = NULL;
    atomic_store_explicit(&s->ktimer_armed, 0, memory_order_relaxed);
    atomic_store_explicit(&s->in_block, 0, memory_order_relaxed);
    atomic_store_explicit(&s->req_out, 0, memory_order_relaxed);
    atomic_store_explicit(&s->blk_t0, 0, memory_order_relaxed);
    atomic_store_explicit(&s->wait_done_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->leaving, 0, memory_order_relaxed);
    memset(&s->sm, 0, sizeof s->sm);
    s->sm.last_t = osp_prof__mono_ns();
    s->sm.cpu_req = s->sm.cpu_base = s->sm.cpu_due = cpu0; /* first progress: a request */
    s->sm.cpu_start = cpu0;
    s->sm.last_on = -1;
    s->sm.last_wait = -1;
    s->sm.ep_stack = -1;
    s->sm.ans_stack = -1;
    s->sm.blk_stack_cached = -1;
    s->sm.stat_fd = -1;
    s->sm.ring_full_seen = atomic_load_explicit(&s->ring_full, memory_order_relaxed);
    size_t idx = (size_t)(s - ps->slots);
    if (idx + 1 > ps->slots_hi) ps->slots_hi = idx + 1;
    osp_prof__t_slot = s;
    t_gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
    pthread_setspecific(ps->key, s);
    atomic_store_explicit(&s->state, OSP_SLOT_ACTIVE, memory_order_release);
    if (ps->engine->thread_prepare != NULL &&
        (prep.engine != ps->engine || prep.epoch != ps->epoch)) {
        /* Rare: the session ended and another began while the timer was made. */
        osp_prof__ktimer_prep_release(&prep);
        prep_unreserve(ps, &prep);
        set_prep(ps, &prep);
        ps->engine->thread_prepare(&prep, tid);
    }
    if (ps->engine->thread_registered != NULL) ps->engine->thread_registered(ps, s, &prep);
out:
    prep_unreserve(ps, &prep);
    if (atomic_load_explicit(&s->state, memory_order_relaxed) == OSP_SLOT_RESERVED)
        atomic_store_explicit(&s->state, OSP_SLOT_FREE, memory_order_release);
    pthread_mutex_unlock(&ps->reg);
    osp_prof__ktimer_prep_release(&prep);
    free(spare);
}

/* Every path that takes a profiler lock on a program thread runs uncancellable
 * (osp_prof__nocancel_enter), so asynchronous cancellation can never leave a lock held
 * (§(l.3)). */
void osp_prof__register_current(struct osp_prof_session *ps, int64_t fiber_id, const char *label) {
    struct osp_prof_nocancel nc;
    osp_prof__nocancel_enter(&nc);
    register_impl(ps, fiber_id, label, false);
    osp_prof__nocancel_leave(&nc);
}

void osp_prof__register_auto(int64_t fiber_id, const char *label) {
    struct osp_prof_session *ps = &osp_prof__session;
    if (!atomic_load_explicit(&ps->on, memory_order_relaxed)) return;
    struct osp_prof_nocancel nc;
    osp_prof__nocancel_enter(&nc);
    register_impl(ps, fiber_id, label, true);
    osp_prof__nocancel_leave(&nc);
}

OSP_PROF_PUBLIC void osp_prof_thread_register(int64_t fiber_id, const char *label) {
    struct osp_prof_session *ps = &osp_prof__session;
    if (!atomic_load_explicit(&ps->on, memory_order_relaxed)) return;
    osp_prof__register_current(ps, fiber_id, label);
}

OSP_PROF_PUBLIC void osp_prof_thread_unregister(void) {
    if (osp_prof__t_slot == NULL) return;
    osp_prof__release_current(&osp_prof__session);
}

/* ---- blocking regions (§(b.3), §(c) item 6, §(d)) ------------------------------------- */

/* The calling thread's CPU time (user + system, ns) and voluntary context switches, for
 * a region's time waited (osp_prof_block_end). False (zeros) if either cannot be read.
 * The CPU time is the thread's CPU clock, not getrusage's: getrusage(RUSAGE_THREAD) sums
 * the scheduler's runtime as of its last update, which for a thread that is running lags
 * by up to a scheduler tick (4 ms at CONFIG_HZ 250). A region entered after a burst of
 * computation then began with a stale reading, and the burst's last milliseconds, taken
 * at the region's end, were subtracted from its wait as if the thread had run inside it
 * (40 sleeps of 20 ms after 12 ms bursts were weighed 0.74 s instead of 0.80 s). The
 * clock brings the runtime up to date first. */
static bool region_usage(uint64_t *cpu_ns, uint64_t *nvcsw) {
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0 ||
        !osp_prof__read_clock(CLOCK_THREAD_CPUTIME_ID, cpu_ns)) {
        *cpu_ns = *nvcsw = 0;
        return false;
    }
    *nvcsw = (uint64_t)ru.ru_nvcsw;
    return true;
}

/* The capture of osp_prof_block_begin, out of line so that the hook's fast path (no
 * session, no slot, nested region) stays a few instructions. `hook_fp` is the hook's
 * frame record {caller's fp, return address}; the walk starts at the caller's record,
 * with frame 0 = the hook's return address - 1 standing for the call site in the
 * runtime's waiting function (§(c) item 6). */
static __attribute__((noinline)) void block_capture(struct osp_prof_slot *s, uintptr_t hook_fp,
                                                    uintptr_t ret) {
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
    bool truncated;
    uintptr_t caller_fp = *(const uintptr_t *)hook_fp;
    uintptr_t lo = s->lo > hook_fp ? s->lo : hook_fp;
    /* The hybrid walk (§(l.1)); frame 0 is ret - 1, the caller's frame starts above the
     * hook's record. */
    struct osp_unwind_regs regs = {
        .pc = ret, .sp = hook_fp + 16, .fp = caller_fp, .pc_is_return = true, .fp_known = true};
    /* Uncancellable while the walk is counted in (a thread cancelled here would leave the
     * count raised for good: replaced tables never freed, the session's end waiting). */
    struct osp_prof_nocancel nc;
    osp_prof__nocancel_enter(&nc);
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    size_t n =
        osp_prof__hybrid_walk(set, &regs, lo, s->hi, pcs, OSP_PROF_MAX_FRAMES, &truncated, NULL);
    osp_prof__cfi_release();
    osp_prof__nocancel_leave(&nc);
    uint32_t q = atomic_load_explicit(&s->block_seq, memory_order_relaxed);
    atomic_store_explicit(&s->block_seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&s->block_pcs[i], pcs[i], memory_order_relaxed);
    atomic_store_explicit(&s->block_n, (uint32_t)n, memory_order_relaxed);
    atomic_store_explicit(&s->block_trunc, truncated, memory_order_relaxed);
    /* Sequentially consistent: the thread's half of the request handshake (send_request
     * in prof_sampler.c), read back by osp_prof_block_begin. */
    atomic_store_explicit(&s->block_seq, q + 2, memory_order_seq_cst);
    region_usage(&s->blk_cpu0, &s->blk_nvcsw0);
    atomic_store_explicit(&s->blk_t0, osp_prof__mono_ns(), memory_order_relaxed);
    atomic_store_explicit(&s->in_block, 1, memory_order_seq_cst);
}

/* The longest a thread entering a wait waits for the answer to a request already out. */
#define AWAIT_LIMIT_NS 20000000ull

/* A directed request was committed before the sampler thread could see this region: wait
 * for the handler's answer (or the request taken back) before the wait blocks, so the
 * signal cannot end the wait early (EINTR, §(l.3)). The answer comes within microseconds
 * of the tgkill (delivered on the return of each sched_yield); the wait is bounded for a
 * sampler thread preempted between its commitment and the tgkill. Not at all while this
 * thread blocks SIGPROF (the answer could not come; the signal stays pending through a
 * wait that does not unblock it) -- e.g. inside a program handler for another signal. */
static __attribute__((noinline)) void await_request(struct osp_prof_slot *s) {
    sigset_t cur;
    if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0 || sigismember(&cur, SIGPROF)) return;
    uint64_t t0 = osp_prof__mono_ns();
    while (atomic_load_explicit(&s->req_out, memory_order_acquire) &&
           osp_prof__mono_ns() - t0 < AWAIT_LIMIT_NS)
        sched_yield();
}

/* Kept out of line with its own frame record (the runtime is built with frame
 * pointers): the capture starts from it. Lock-free and allocation-free. */
/* A region whose hook frame lies at or below the current one (the stack grows down)
 * cannot still be open: its frame was left without block_end (siglongjmp out of a
 * wrapped wait, §(l.3)); the new region replaces it. */
OSP_PROF_PUBLIC __attribute__((noinline)) void osp_prof_block_begin(void) {
    if (!atomic_load_explicit(&osp_prof__session.on, memory_order_relaxed)) return;
    struct osp_prof_slot *s = osp_prof__t_slot;
    if (s == NULL) return;
    uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
    if (s->block_depth > 0 && frame >= s->block_frame) s->block_depth = 0;
    if (s->block_depth++ > 0) return;
    s->block_frame = frame;
    block_capture(s, frame, (uintptr_t)__builtin_return_address(0));
    if (atomic_load_explicit(&s->req_out, memory_order_seq_cst)) await_request(s);
}

OSP_PROF_PUBLIC void osp_prof_block_end(void) {
    struct osp_prof_slot *s = osp_prof__t_slot;
    if (s == NULL || s->block_depth == 0) return;
    if (--s->block_depth > 0) return;
    /* The time waited in the region joins the total before the region is seen closed: its
     * wall time less the CPU time used in it. A region in which the thread never blocked
     * (no voluntary context switch: a busy poll(..., 0) loop, a wait that keeps returning
     * at once) waited nothing, however long it was preempted on a busy machine: its time
     * is on-CPU or runnable, which no waiting sample shows (§(l.3)). */
    uint64_t t0 = atomic_load_explicit(&s->blk_t0, memory_order_relaxed);
    uint64_t now = osp_prof__mono_ns(), cpu, nvcsw;
    uint64_t wall = now > t0 ? now - t0 : 0;
    bool known = region_usage(&cpu, &nvcsw);
    uint64_t ran = known && cpu > s->blk_cpu0 ? cpu - s->blk_cpu0 : 0;
    if (known && nvcsw != s->blk_nvcsw0 && ran < wall) {
        uint64_t done = atomic_load_explicit(&s->wait_done_ns, memory_order_relaxed);
        atomic_store_explicit(&s->wait_done_ns, done + (wall - ran), memory_order_relaxed);
    }
    atomic_store_explicit(&s->in_block, 0, memory_order_release);
}

#endif /* OSP_PROF_SAMPLER */
