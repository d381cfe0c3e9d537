/*
 * prof_sampler.c — the sampler thread of the "sampler" engine (§(b.1)–(b.3)): the tick
 * loop, the classification of each registered thread, directed requests (tgkill), the
 * draining of the per-thread rings into the sample store, and the teardown. Runs on the
 * sampler thread, which holds the registry mutex while it touches any slot and owns the
 * sample store alone. The helpers exported to prof_registry.c (drain, flush_tail,
 * slot_abandon_request, stat_fd_release) also run on an unregistering thread, always
 * under the registry mutex.
 *
 * A thread blocked outside a runtime wait is never signalled: its stack is read from the
 * kernel's view of it (prof_blocked.c, §(l.4)).
 *
 * Source: docs/spec/profiler.md §(b.1), §(b.2), §(b.3), §(b.5), §(d) "Validity", §(l.1),
 * §(l.4).
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "prof_blocked.h"
#include "prof_cfi.h"
#include "prof_session.h"
#include "prof_own_text.h"

#define ANSWER_TIMEOUT_NS   1000000000ull /* a request unanswered after 1 s is no_answer */
/* CPU time a thread may consume between a request and the next tick without that
 * counting as progress, once the request has been answered: the cost of taking our own
 * signal (delivery, the handler, sigreturn, restarting the interrupted call or an EINTR
 * retry). Without this allowance, answering a capture signal would itself look like
 * progress and a blocked thread would be signalled every tick. A thread that really runs
 * is far above it at any rate we allow (the shortest tick at 10 kHz is 70 µs). */
#define SIGNAL_ALLOWANCE_NS 50000ull
/* CPU time a thread may consume inside one blocking region before it counts as running
 * there (a region left by siglongjmp, a wait that keeps returning at once) and is sent
 * on-CPU requests in it. A thread blocked in the region consumes only its way into and out
 * of the kernel's wait, which on a loaded virtual machine was seen above the signal
 * allowance: its region was distrusted and a request then ended the wait (EINTR,
 * bench/prof_engines.sh part 1). A thread that runs passes 1 ms within a tick or two. */
#define REGION_RUN_NS       1000000ull
#define SLEEP_CHUNK_NS      20000000ull /* the sampler notices a stop within 20 ms */

enum { SCHED_RUNNABLE, SCHED_BLOCKED, SCHED_GONE };

/* ---- scheduler state from /proc (§(b.2)) ------------------------------------------------ */

/* /proc/self/task/<tid>/stat descriptors are cached per slot (a pread is a third of an
 * open/read/close). The program may close any descriptor, and reuse its number, so a
 * cached one is trusted only while its content names the thread, and is never closed
 * unless it still does. Under the registry mutex. */
static ssize_t stat_read_fd(int fd, char *buf, size_t cap) {
    ssize_t n;
    do n = osp_prof__pread_nc(fd, buf, cap - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n >= 0) buf[n] = '\0';
    return n;
}

/* Whether a stat line belongs to thread `tid` ("<tid> (comm) ..."). */
static bool stat_names(const char *buf, pid_t tid) {
    unsigned long long v = 0;
    size_t n = 0;
    while (buf[n] >= '0' && buf[n] <= '9' && n < 12) v = v * 10 + (unsigned)(buf[n++] - '0');
    return n > 0 && v == (unsigned long long)(unsigned)tid && buf[n] == ' ' && buf[n + 1] == '(';
}

static void stat_fd_forget(struct osp_prof_session *ps, struct osp_prof_slot *s, bool close_it) {
    if (s->sm.stat_fd < 0) return;
    if (close_it) osp_prof__close_nc(s->sm.stat_fd);
    s->sm.stat_fd = -1;
    ps->stat_fds_open--;
}

/* Close a slot's cached descriptor if it is still ours. */
void osp_prof__stat_fd_release(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    if (s->sm.stat_fd < 0) return;
    char buf[128];
    ssize_t n = stat_read_fd(s->sm.stat_fd, buf, sizeof buf);
    bool ours = (n > 0 && stat_names(buf, s->tid)) || (n < 0 && errno == ESRCH);
    stat_fd_forget(ps, s, ours);
}

static int sched_state(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    char buf[512];
    ssize_t n = -1;
    if (s->sm.stat_fd >= 0) {
        n = stat_read_fd(s->sm.stat_fd, buf, sizeof buf);
        if (n < 0 && errno == ESRCH) return SCHED_GONE;
        if (n <= 0 || !stat_names(buf, s->tid)) {
            stat_fd_forget(ps, s, false); /* not ours any more: leave it to the program */
            n = -1;
        }
    }
    if (n < 0) {
        char path[OSP_PROF_TASK_PATH_MAX];
        osp_prof__task_path(path, s->tid, "stat");
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return errno == ENOENT || errno == ESRCH ? SCHED_GONE : SCHED_BLOCKED;
        n = stat_read_fd(fd, buf, sizeof buf);
        /* A cached descriptor never keeps a low number the program expects back. */
        /* A quarter of the descriptor budget at most (the counters have the rest). */
        if (n > 0 && ps->stat_fds_open < osp_prof__stat_fd_cap(ps) &&
            (fd = osp_prof__fd_high(fd)) >= 0) {
            s->sm.stat_fd = fd;
            ps->stat_fds_open++;
        } else if (fd >= 0) {
            osp_prof__close_nc(fd);
        }
        if (n <= 0) return SCHED_GONE;
    }
    /* "tid (comm) S ...": comm may contain ')' and spaces, so use the last ')'. */
    const char *rp = strrchr(buf, ')');
    if (rp == NULL || rp[1] != ' ' || rp[2] == '\0') return SCHED_BLOCKED;
    switch (rp[2]) {
    case 'R': return SCHED_RUNNABLE;
    case 'Z':
    case 'X':
    case 'x': return SCHED_GONE;
    default: return SCHED_BLOCKED; /* S, D, T, t, I, P, W, K: not running, not runnable */
    }
}

/* Forget a pending request of a slot that stops being sampled. Under the registry mutex. */
void osp_prof__slot_abandon_request(struct osp_prof_slot *s, uint64_t *dropped) {
    if (s->sm.pend_on) {
        dropped[OSP_DROP_NO_ANSWER]++;
        s->sm.pend_on = false;
    }
    atomic_store_explicit(&s->req_out, 0, memory_order_release);
    uint64_t rf = atomic_load_explicit(&s->ring_full, memory_order_relaxed);
    dropped[OSP_DROP_RING_FULL] += rf - s->sm.ring_full_seen;
    s->sm.ring_full_seen = rf;
}

/* The thread stops being sampled while its CPU clock reads `c`: the CPU time it
 * consumed since its last on-CPU request (and that of a request that will never be
 * answered) is added to its last on-CPU sample, so that a thread's on-CPU weights add up
 * to all the CPU time it used while registered, not only up to its last request.
 * Call before slot_abandon_request. Under the registry mutex. */
static void settle_unsampled(struct osp_prof_session *ps, struct osp_prof_sampler_state *m);

static bool blocked_since(struct osp_prof_slot *s, uint64_t t, uint64_t c, uint64_t *fresh);

void osp_prof__flush_tail(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t c) {
    struct osp_prof_sampler_state *m = &s->sm;
    uint64_t fresh;
    /* Blocked time since the last schedstat reading (at most SCHEDSTAT_EVERY_NS old). */
    if (blocked_since(s, osp_prof__mono_ns(), c, &fresh)) m->wait_carry += fresh;
    if (m->wait_carry > 0) {
        /* Blocked time seen at ticks that found the thread running, with no waiting sample
         * after them: to its last waiting sample outside a region. */
        if (m->last_wait >= 0 && (size_t)m->last_wait < ps->store.nsamples)
            ps->store.samples[m->last_wait].weight_ns += m->wait_carry;
        else
            ps->store.dropped[OSP_DROP_NO_STACK]++;
        m->wait_carry = 0;
    }
    uint64_t tail = (c > m->cpu_req ? c - m->cpu_req : 0) + m->carry_w;
    if (m->pend_on && !m->pend_capture) tail += m->pend_w;
    if (atomic_load_explicit(&ps->handler_lost, memory_order_relaxed) && !s->ring_delivery) {
        /* The program took SIGPROF (§(l.3)): this CPU time had no sample of ours; it is
         * counted as lost samples, never charged to the sample before the replacement. */
        ps->store.dropped[OSP_DROP_HANDLER_REPLACED] += tail / ps->period_ns;
        tail = 0;
    }
    if (m->last_on >= 0 && (size_t)m->last_on < ps->store.nsamples) {
        ps->store.samples[m->last_on].weight_ns += tail;
        m->owed_ns += (int64_t)tail;
        /* A thread of less than a period of CPU time in all (a short-lived thread or
         * fiber) under a perf_event counter is sampled with a chance of its CPU time over
         * the period: its first sample is due at a point drawn from the residual
         * distribution of the periods (ktimer_first). So the one that was sampled stands
         * for those that were not, and its one sample weighs the period -- its CPU time
         * over that chance -- making the expected weight of every such thread its CPU
         * time. Without it, 3,000 threads of 0.3 ms each at 997 Hz showed a third of
         * their 0.9 s. cpu_timer's expiries come at the scheduler's tick, whatever was
         * drawn, so its threads keep their CPU time. */
        uint64_t total = c > m->cpu_start ? c - m->cpu_start : 0;
        if (m->perf_timed && m->on_n == 1 && total < ps->period_ns) {
            ps->store.samples[m->last_on].weight_ns += ps->period_ns - total;
            m->owed_ns += (int64_t)(ps->period_ns - total);
        }
    } else {
        /* No sample of this thread was ever kept -- a thread that blocks SIGPROF (one of
         * a pool that leaves every signal to a sigwait thread) under an engine that
         * signals it: its CPU time has no sample to go to. It is counted as samples the
         * rate asked for and that were not taken, never lost silently (§(l.3) "any
         * shortfall is counted"), less the ones counted otherwise (the unanswered
         * request, ring_full). A thread that ran less than a period before it ended (a
         * short-lived thread: its kernel timer never expired) has no whole period to
         * count; such remainders add up over the session, so a program of many short
         * threads shows its loss too. */
        uint64_t k = tail / ps->period_ns;
        ps->unsampled_rest_ns += tail % ps->period_ns;
        k += ps->unsampled_rest_ns / ps->period_ns;
        ps->unsampled_rest_ns %= ps->period_ns;
        uint64_t other =
            (m->pend_on ? 1u : 0u) + m->rf_credit +
            (atomic_load_explicit(&s->ring_full, memory_order_relaxed) - m->ring_full_seen);
        if (k > other) ps->store.dropped[OSP_DROP_CPU_UNSAMPLED] += k - other;
    }
    settle_unsampled(ps, m);
    m->cpu_req = c > m->cpu_req ? c : m->cpu_req;
    m->carry_w = 0;
    if (m->pend_on && !m->pend_capture) m->pend_w = 0;
}

/* Copy a slot's blocking stack consistently and intern it. Returns the stack index,
 * -1 on allocation failure, -2 if the owner kept rewriting it. Under the registry mutex. */
static int64_t block_stack(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
    for (int tries = 0; tries < 16; tries++) {
        uint32_t q1 = atomic_load_explicit(&s->block_seq, memory_order_acquire);
        if (q1 & 1u) {
            sched_yield();
            continue;
        }
        if (q1 == s->sm.blk_seq_cached && s->sm.blk_stack_cached >= 0)
            return s->sm.blk_stack_cached;
        uint32_t n = atomic_load_explicit(&s->block_n, memory_order_relaxed);
        bool trunc = atomic_load_explicit(&s->block_trunc, memory_order_relaxed) != 0;
        if (n > OSP_PROF_MAX_FRAMES) n = OSP_PROF_MAX_FRAMES;
        for (uint32_t i = 0; i < n; i++)
            pcs[i] = atomic_load_explicit(&s->block_pcs[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->block_seq, memory_order_relaxed) != q1) continue;
        if (n == 0) return -2;
        int64_t k = osp_prof__store_intern(&ps->store, pcs, n, trunc);
        if (k < 0) return -1;
        s->sm.blk_seq_cached = q1;
        s->sm.blk_stack_cached = k;
        return k;
    }
    return -2;
}

/* ---- the sampler (§(b.1), §(b.2), §(b.3)) ---------------------------------------------- */

static uint64_t t_rel(struct osp_prof_session *ps, uint64_t t) {
    uint64_t s = atomic_load_explicit(&ps->start_mono_ns, memory_order_relaxed);
    return t > s ? t - s : 0;
}

/* Deactivate a slot whose thread is gone (failed clock read, signal or stat). */
static void slot_gone(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    osp_prof__slot_abandon_request(s, ps->store.dropped);
    ps->store.dropped[OSP_DROP_THREAD_GONE]++;
    osp_prof__stat_fd_release(ps, s);
    atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
    /* Retired, not free: only its owner (unregister, exit destructor) frees it, so a
     * slot is never handed to another thread while its owner might still use it. */
    atomic_store_explicit(&s->state, OSP_SLOT_RETIRED, memory_order_release);
}

/* Send a directed on-CPU request. False when it was not sent: the thread was entering a
 * blocking region meanwhile, and a signal now could end its wait early (EINTR, §(l.3)).
 *
 * The handshake with osp_prof_block_begin (a Dekker pair, both sides sequentially
 * consistent): this side raises req_out, then reads in_block; the thread raises in_block,
 * then reads req_out. At least one sees the other: either the request is taken back
 * here, or the thread sees it out and waits for the handler's answer before it blocks
 * (prof_registry.c, await_request). A region the thread was seen running in (left by
 * siglongjmp, or a wait that returns at once) does not stop the request. */
static bool send_request(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t t,
                         uint64_t cpu, uint64_t weight, bool capture) {
    atomic_store_explicit(&s->req_out, 1, memory_order_seq_cst);
    uint32_t bseq = atomic_load_explicit(&s->block_seq, memory_order_seq_cst);
    if (atomic_load_explicit(&s->in_block, memory_order_seq_cst) &&
        !(s->sm.blk_distrust_known && bseq == s->sm.blk_distrust_seq)) {
        atomic_store_explicit(&s->req_out, 0, memory_order_release);
        return false;
    }
    uint64_t seq = ++ps->next_seq;
    atomic_store_explicit(&s->req_seq, seq, memory_order_release);
    s->sm.pend_on = true;
    s->sm.pend_capture = capture;
    s->sm.pend_seq = seq;
    s->sm.pend_t = t;
    s->sm.pend_w = weight;
    s->sm.pend_sent = t;
    s->sm.pend_cpu = cpu;
    if (syscall(SYS_tgkill, (pid_t)atomic_load(&ps->pid), s->tid, SIGPROF) != 0) {
        s->sm.pend_on = false; /* ESRCH or any error: the thread is gone (§(b.3)) */
        slot_gone(ps, s);
    }
    return true;
}

/* §(l.3) "any shortfall is counted": every on-CPU sample stands for one period of the
 * thread's CPU time. The balance of weight recorded minus one period per sample, kept
 * per thread, says how many samples the rate asked for and were not taken (expiries the
 * kernel skipped while the thread was in kernel mode, coalesced signals, late requests);
 * jittered periods cancel out in it. It is settled when the thread stops being sampled
 * (settle_unsampled): each whole period of shortfall counts one cpu_unsampled sample,
 * except samples the ring had no room for, counted as ring_full already (their CPU time
 * is in the next sample's weight). Counting on the way instead (a sample heavier than
 * two periods) missed most of the shortfall, which comes as many samples each a little
 * late; counting each period the running balance reached overcounted the jitter's
 * random walk. */
static void count_unsampled(struct osp_prof_session *ps, struct osp_prof_sampler_state *m,
                            uint64_t weight_ns) {
    m->owed_ns += (int64_t)weight_ns - (int64_t)ps->period_ns;
}

static void settle_unsampled(struct osp_prof_session *ps, struct osp_prof_sampler_state *m) {
    int64_t p = (int64_t)ps->period_ns;
    if (m->owed_ns >= p) {
        uint64_t k = (uint64_t)(m->owed_ns / p);
        uint64_t known = k < m->rf_credit ? k : m->rf_credit;
        ps->store.dropped[OSP_DROP_CPU_UNSAMPLED] += k - known;
    }
    m->owed_ns = 0;
    m->rf_credit = 0;
}

void osp_prof__record_timer_sample(struct osp_prof_session *ps, struct osp_prof_slot *s,
                                   uint64_t t_ns, uint64_t cpu_ns, uint64_t weight_ns,
                                   const uintptr_t *pcs, uint32_t n, bool truncated) {
    struct osp_prof_sampler_state *m = &s->sm;
    if (osp_prof__own_stack(pcs, n)) {
        /* Taken in the profiler's own work: its CPU time is the profiler's (a sample all
         * the same for the rate's balance). */
        ps->own_thread_ns += weight_ns;
        count_unsampled(ps, m, weight_ns);
    } else if (n == 0 || !osp_prof__store_record(&ps->store, t_rel(ps, t_ns), s->row, pcs, n,
                                                 truncated, OSP_RAW_STATE_ON_CPU, weight_ns)) {
        if (n == 0) ps->store.dropped[OSP_DROP_ALLOC]++;
        m->carry_w += weight_ns;
    } else {
        m->last_on = (int64_t)ps->store.nsamples - 1;
        if (m->on_n < 2) m->on_n++;
        if (m->carry_w) {
            ps->store.samples[m->last_on].weight_ns += m->carry_w;
            m->carry_w = 0;
        }
        count_unsampled(ps, m, ps->store.samples[m->last_on].weight_ns);
    }
    if (cpu_ns > m->cpu_req) m->cpu_req = cpu_ns;
    if (cpu_ns > m->cpu_base) m->cpu_base = cpu_ns;
}

/* Turn ring entries into samples; each answers the pending request of the same sequence
 * number, others are discarded. A perf_event counter with ring delivery has its kernel
 * buffer emptied first (its thread's handler never writes this ring then). */
void osp_prof__drain(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    if (s->perf_rb != NULL) osp_prof__perf_ring_drain(ps, s);
    struct osp_prof_ring *r = s->ring;
    struct osp_prof_sampler_state *m = &s->sm;
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t rf0 = atomic_load_explicit(&s->ring_full, memory_order_relaxed);
    m->rf_credit += rf0 - m->ring_full_seen;
    ps->store.dropped[OSP_DROP_RING_FULL] += rf0 - m->ring_full_seen;
    m->ring_full_seen = rf0;
    while (tail != head) {
        const struct osp_prof_ring_entry *e = &r->e[tail % OSP_PROF_RING_N];
        if (e->seq == 0) {
            /* A sample of the thread's own kernel timer (§(l.3)), weighted by the CPU
             * time since its previous one. */
            osp_prof__record_timer_sample(ps, s, e->t_ns, e->cpu_ns, e->weight_ns, e->pcs,
                                          e->n > OSP_PROF_MAX_FRAMES ? OSP_PROF_MAX_FRAMES : e->n,
                                          e->truncated != 0);
        } else if (m->pend_on && e->seq == m->pend_seq) {
            uint32_t n = e->n > OSP_PROF_MAX_FRAMES ? OSP_PROF_MAX_FRAMES : e->n;
            int64_t k = n ? osp_prof__store_intern(&ps->store, e->pcs, n, e->truncated != 0) : -1;
            if (k < 0) {
                ps->store.dropped[OSP_DROP_ALLOC]++;
            } else if (!m->pend_capture && osp_prof__own_stack(e->pcs, n)) {
                ps->own_thread_ns += m->pend_w; /* the profiler's own work, as above */
                count_unsampled(ps, m, m->pend_w);
            } else {
                if (e->unwind_end < OSP_RAW_UNWIND_COUNT) ps->unwind_ends[e->unwind_end]++;
                if (osp_prof__store_add(&ps->store, t_rel(ps, m->pend_t), s->row, (uint32_t)k,
                                        m->pend_capture ? 1 : 0, m->pend_w) &&
                    !m->pend_capture) {
                    m->last_on = (int64_t)ps->store.nsamples - 1;
                    count_unsampled(ps, m, m->pend_w);
                }
                if (m->pend_capture && m->ep_on) m->ep_stack = k;
            }
            m->ans_stack = k;
            m->ans_in_syscall = e->in_syscall != 0;
            m->pend_on = false;
            if (m->pend_cpu + SIGNAL_ALLOWANCE_NS > m->cpu_base)
                m->cpu_base = m->pend_cpu + SIGNAL_ALLOWANCE_NS;
        }
        tail++;
        atomic_store_explicit(&r->tail, tail, memory_order_release);
    }
    uint64_t rf = atomic_load_explicit(&s->ring_full, memory_order_relaxed);
    ps->store.dropped[OSP_DROP_RING_FULL] += rf - m->ring_full_seen;
    m->ring_full_seen = rf;
}

_Static_assert(OSP_RAW_UNWIND_COUNT == OSP_UNWIND_CAP + 1,
               "the raw file's unwind keys follow enum osp_unwind_end");

/* The blocking stack of a thread the scheduler reports blocked, read without a signal
 * (§(l.4)): unwound from the sp and pc the kernel reports, inside the thread's stack
 * bounds. `c` is its CPU clock at this tick: if the clock moved meanwhile the thread ran
 * and the stack may be torn, so it is discarded. Returns the interned stack, -1 when
 * memory ran out, -2 when there is no stack to take (not in a system call, registers
 * unreadable, sp off the registered stack, or the thread ran). Under the registry mutex
 * (the thread cannot unregister, so its stack stays mapped). */
static int64_t blocked_capture(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t c) {
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
    bool truncated;
    struct osp_unwind_info info;
    size_t n =
        osp_prof__blocked_stack(s->tid, s->lo, s->hi, pcs, OSP_PROF_MAX_FRAMES, &truncated, &info);
    if (n == 0) return -2;
    uint64_t c1;
    if (!osp_prof__read_clock(s->cpu_clock, &c1) || c1 != c) return -2;
    int64_t k = osp_prof__store_intern(&ps->store, pcs, (uint32_t)n, truncated);
    if (k < 0) return -1;
    ps->blocked_reads++;
    if (info.end < OSP_RAW_UNWIND_COUNT) ps->unwind_ends[info.end]++;
    return k;
}

/* sched_state, remembered with the CPU clock `c` it was read at: until that clock moves the
 * thread cannot have changed between runnable and blocked (examine, case 3). */
static int sched_observe(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t c) {
    int st = sched_state(ps, s);
    s->sm.run_known = st == SCHED_RUNNABLE || st == SCHED_BLOCKED;
    s->sm.run_state = st;
    s->sm.run_cpu = c;
    return st;
}

/* The longest a running thread's blocked time waits for its next schedstat reading. */
#define SCHEDSTAT_EVERY_NS 50000000ull

bool osp_prof__schedstat(pid_t tid, uint64_t *rq, uint64_t *runs) {
    char path[OSP_PROF_TASK_PATH_MAX];
    osp_prof__task_path(path, tid, "schedstat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[96];
    ssize_t n = stat_read_fd(fd, buf, sizeof buf);
    osp_prof__close_nc(fd);
    if (n <= 0) return false;
    /* "<ns on a CPU> <ns waiting for a CPU> <times run on a CPU>\n" */
    uint64_t v[3] = {0, 0, 0};
    const char *p = buf;
    for (int i = 0; i < 3; i++) {
        if (*p < '0' || *p > '9') return false;
        while (*p >= '0' && *p <= '9') v[i] = v[i] * 10 + (uint64_t)(*p++ - '0');
        if (i < 2 && *p++ != ' ') return false;
    }
    *rq = v[1];
    *runs = v[2];
    return true;
}

/* The time the thread spent waiting for a CPU (runnable, not running), in ns (schedstat's
 * second field; opened and closed per read, at most one read per SCHEDSTAT_EVERY_NS for
 * a thread that runs). Its first field, the time on a CPU, is not used: for a running
 * thread it lags by up to a scheduler tick; the CPU clock does not. A thread waiting for
 * a CPU now has that wait added only once it runs. False when the file cannot be read. */
static bool schedstat_rq(pid_t tid, uint64_t *rq) {
    uint64_t runs;
    return osp_prof__schedstat(tid, rq, &runs);
}

/* Blocked time since the last reading: wall time neither on a CPU (the CPU clock, `c`
 * now) nor waiting for one (schedstat), less the waiting weight given meanwhile
 * (ss_given: regions, ticks found blocked) and less what earlier readings gave too much;
 * the reading moves to `t`. False (nothing known) when schedstat cannot be read. */
static bool blocked_since(struct osp_prof_slot *s, uint64_t t, uint64_t c, uint64_t *fresh) {
    struct osp_prof_sampler_state *m = &s->sm;
    uint64_t rq;
    if (!m->ss_known || !schedstat_rq(s->tid, &rq)) return false;
    int64_t span = (int64_t)(t - m->ss_t);
    int64_t busy = (int64_t)(c - m->ss_run) + (int64_t)(rq - m->ss_rq);
    int64_t bal = m->ss_balance + span - busy - (int64_t)m->ss_given;
    *fresh = bal > 0 ? (uint64_t)bal : 0;
    m->ss_balance = bal > 0 ? 0 : bal;
    m->ss_t = t;
    m->ss_run = c;
    m->ss_rq = rq;
    m->ss_given = 0;
    return true;
}

/* The wall time the thread spent in blocking regions since the previous tick, from the
 * times it keeps itself (osp_prof_block_begin/_end): the regions it ended (wait_done_ns)
 * plus the open one so far, less what earlier waiting samples carry (wait_seen). Read
 * in the order that can only miss time, never count it twice (the total of ended regions
 * first, then whether one is open, then since when): a region that ends or begins between
 * the reads is counted at the next tick. So a thread that runs, then waits, within one
 * tick has the waiting sample weigh its wait, not the whole tick, and a wait that ended
 * before the tick is not lost. `running_in` (a region the thread runs in, distrusted):
 * its open part is not waiting and is never counted. */
static uint64_t region_wait(struct osp_prof_slot *s, uint64_t t, bool running_in) {
    struct osp_prof_sampler_state *m = &s->sm;
    uint64_t total = atomic_load_explicit(&s->wait_done_ns, memory_order_acquire);
    if (running_in) {
        m->wait_seen = total;
        return 0;
    }
    if (atomic_load_explicit(&s->in_block, memory_order_acquire)) {
        uint64_t t0 = atomic_load_explicit(&s->blk_t0, memory_order_relaxed);
        if (t > t0) total += t - t0;
    }
    if (total <= m->wait_seen) return 0;
    uint64_t w = total - m->wait_seen;
    m->wait_seen = total;
    return w;
}

/* A waiting sample outside a region; remembered as the thread's last (flush_tail). */
static void wait_add(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t t, int64_t k,
                     uint64_t w) {
    if (osp_prof__store_add(&ps->store, t_rel(ps, t), s->row, (uint32_t)k, 1, w))
        s->sm.last_wait = (int64_t)ps->store.nsamples - 1;
}

/* Classify one validated slot at time t (§(b.2)). Under the registry mutex. */
static void examine(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t t) {
    struct osp_prof_sampler_state *m = &s->sm;
    osp_prof__drain(ps, s);
    if (m->pend_on && t - m->pend_sent >= ANSWER_TIMEOUT_NS) {
        ps->store.dropped[OSP_DROP_NO_ANSWER]++;
        if (m->pend_capture)
            m->ep_lost = true;
        else
            m->carry_w += m->pend_w; /* its CPU time goes to the next on-CPU sample */
        m->pend_on = false;
        /* Never answered (SIGPROF blocked, or taken by the program's own handler): a
         * thread entering a wait must not wait for it. */
        atomic_store_explicit(&s->req_out, 0, memory_order_release);
    }
    uint64_t wall = t > m->last_t ? t - m->last_t : 0;
    m->last_t = t;
    if (!m->ss_tried && s->ktimer_kind != OSP_KTIMER_NONE) {
        /* The first reading (blocked_since). */
        m->ss_tried = true;
        m->ss_known =
            osp_prof__read_clock(s->cpu_clock, &m->ss_run) && schedstat_rq(s->tid, &m->ss_rq);
        m->ss_t = t;
    }

    /* 1. Inside a runtime wait: waiting, with the stack the thread captured itself --
     * unless it ran more than REGION_RUN_NS since the region was first seen: then it is
     * on-CPU whatever its region says (a region left by siglongjmp, a wait that keeps
     * returning at once), §(l.3). */
    bool in_block = atomic_load_explicit(&s->in_block, memory_order_acquire) != 0;
    bool region_distrusted = false;
    if (in_block) {
        uint32_t seq = atomic_load_explicit(&s->block_seq, memory_order_acquire);
        uint64_t c;
        if (m->blk_distrust_known && seq == m->blk_distrust_seq) {
            region_distrusted = true;
        } else if (osp_prof__read_clock(s->cpu_clock, &c)) {
            if (m->blk_cpu_known && m->blk_cpu_seq == seq && c > m->blk_cpu + REGION_RUN_NS) {
                /* It runs inside this region: from now on the region only lends its
                 * stack when the scheduler says the thread is blocked (case 3). */
                m->blk_distrust_known = true;
                m->blk_distrust_seq = seq;
                region_distrusted = true;
            }
            if (!m->blk_cpu_known || m->blk_cpu_seq != seq) {
                /* The CPU clock when this region was first seen: a thread blocked in it
                 * accumulates (almost) nothing from then on. */
                m->blk_cpu = c;
                m->blk_cpu_seq = seq;
                m->blk_cpu_known = true;
            }
        }
    } else {
        m->blk_cpu_known = false;
    }
    if (region_distrusted) in_block = false;
    /* Waiting in regions since the last tick, weighed with the region times the thread
     * measured. */
    /* In a region still (case 1), or in one it left since the last tick: that wait, with
     * the region's stack (kept until the next region's capture replaces it). */
    uint64_t region_w = region_wait(s, t, region_distrusted);
    m->ss_given += region_w;
    if (region_w > 0) {
        int64_t k = block_stack(ps, s);
        if (k >= 0)
            osp_prof__store_add(&ps->store, t_rel(ps, t), s->row, (uint32_t)k, 1, region_w);
        else
            ps->store.dropped[k == -1 ? OSP_DROP_ALLOC : OSP_DROP_NO_ANSWER]++;
    }
    if (in_block) {
        m->ep_on = false;
        return;
    }

    /* 2. CPU progress: an on-CPU request (one outstanding at a time) once the thread has
     * used a period's worth of CPU since its previous one (deviation from §(b.2), see
     * docs/profiler-runtime.md "Rate"): requests follow consumed CPU time, so a thread
     * that shares its core is sampled about rate_hz times per CPU-second, not once per
     * tick in which it ran at all. The weight is still all CPU time since the previous
     * request. */
    uint64_t c;
    if (!osp_prof__read_clock(s->cpu_clock, &c)) {
        slot_gone(ps, s);
        return;
    }
    int st;
    /* A thread with its own kernel timer is sampled on-CPU by it; none is sampled once
     * the program took SIGPROF. Neither gets a directed request. (A thread of a
     * kernel-timed session whose timer could not be created -- descriptors exhausted --
     * gets on-CPU requests from this thread, the last fallback; it is never sent a
     * capture signal.) */
    bool requests = s->ktimer_kind == OSP_KTIMER_NONE &&
                    !atomic_load_explicit(&ps->handler_lost, memory_order_relaxed);
    if (!requests && c > m->cpu_base + SIGNAL_ALLOWANCE_NS) {
        /* It ran since the last tick: on-CPU, sampled by its timer. If it ran for only part
         * of the interval, the rest was waiting for a core or blocked -- a short burst,
         * then a sleep, within one tick, or many short waits (a thread reading a pipe fed
         * every millisecond). The scheduler's times (schedstat) tell how long it was
         * blocked since their last reading, less the waiting weight given since then;
         * that time is waiting, weighed on the thread's next waiting sample outside a
         * region (now, if it is blocked now): the stack it is found blocked in, as the
         * CPU time between two on-CPU samples goes to the later one. Without schedstat:
         * the interval less the CPU time it used, when it is blocked now. (Before, a
         * thread found running lost the waits of its tick: that reader showed 0.47 s of
         * its 0.59 s of waiting.) Preempted (runnable) time is in neither, as in case 3. */
        uint64_t ran = c - m->cpu_base;
        m->cpu_base = c;
        m->ep_on = false;
        if (wall <= ran + ps->period_ns) return;
        st = sched_observe(ps, s, c);
        if (st == SCHED_GONE) {
            slot_gone(ps, s);
            return;
        }
        /* A thread running now is read at most every SCHEDSTAT_EVERY_NS: the readings are
         * cumulative, so a later one takes this interval's blocked time too, and a thread
         * preempted at every tick (more busy threads than cores) costs the sampler thread
         * one open/read/close per 50 ms, not per tick. */
        if (st != SCHED_BLOCKED && m->ss_known && t - m->ss_t < SCHEDSTAT_EVERY_NS) return;
        uint64_t fresh;
        if (blocked_since(s, t, c, &fresh)) {
            m->wait_carry += fresh;
            if (st != SCHED_BLOCKED) return;
            wall = 0; /* the interval is in the carry */
            goto blocked;
        }
        if (st != SCHED_BLOCKED) return;
        wall -= ran;
        goto blocked;
    }
    if (requests && c > m->cpu_base) {
        m->cpu_base = c;
        m->ep_on = false;
        m->ans_stack = -1; /* the thread has moved since that answer */
        if (c >= m->cpu_due) {
            if (!m->pend_on) {
                uint64_t w = c - m->cpu_req + m->carry_w;
                m->cpu_req = c;
                m->carry_w = 0;
                /* The next request is due one period of CPU after this one was, so the
                 * long-run count is the CPU time over the period. A thread more than
                 * three periods behind (late ticks) keeps only two periods of backlog:
                 * catching up costs at most one request per tick, never a burst. */
                m->cpu_due = c - m->cpu_due < 3 * ps->period_ns ? m->cpu_due + ps->period_ns
                                                                : c - 2 * ps->period_ns;
                /* The thread may have blocked since it ran, and a blocked thread is never
                 * signalled (§(l.4)): ask the scheduler first (one pread of the cached
                 * stat file). If it is blocked, its CPU time goes to its next on-CPU
                 * sample and the wait is taken from /proc below. Skipping this read for
                 * threads that ran the whole tick was measured to let about one sleep in
                 * ten be interrupted (test_blocked_signals), so it is made every time;
                 * what remains is the few microseconds between this read and tgkill. */
                st = sched_observe(ps, s, c);
                if (st == SCHED_GONE) {
                    slot_gone(ps, s);
                    return;
                }
                if (st == SCHED_BLOCKED) {
                    m->carry_w = w;
                    ps->blocked_skips++;
                    goto blocked;
                }
                if (!send_request(ps, s, t, c, w, false)) {
                    /* Entering a wait: its CPU time goes to its next on-CPU sample, and
                     * the region is seen at the next tick. */
                    m->carry_w = w;
                    ps->blocked_skips++;
                }
            }
            return;
        }
        /* Progress, but less than a period: no on-CPU sample this tick (the time goes to
         * the next one); the scheduler says whether the thread is waiting now. */
    }

    /* 3. No progress (or not a period's worth): ask the scheduler. A thread last seen
     * runnable or blocked whose CPU clock has not moved since is still so (it cannot
     * block, nor wake and block again, without running), which spares the /proc read
     * for preempted and for long-blocked threads. */
    if (m->run_known && c == m->run_cpu) {
        st = m->run_state;
    } else {
        st = sched_observe(ps, s, c);
    }
    if (st == SCHED_GONE) {
        slot_gone(ps, s);
        return;
    }
    if (st == SCHED_RUNNABLE) return; /* running or preempted: neither sample nor wait */
blocked:
    /* Blocked while it unregisters: waiting for the registry mutex this thread holds, a
     * wait of the profiler's making, not the program's (§(d) "unregister"). The store came
     * before the thread blocked, and the scheduler's answer after it. */
    if (atomic_load_explicit(&s->leaving, memory_order_seq_cst)) return;
    /* This interval's wait counts as given; blocked time seen at earlier ticks joins it. */
    m->ss_given += wall;
    wall += m->wait_carry;
    m->wait_carry = 0;
    if (wall == 0) return;
    if (region_distrusted) {
        /* Blocked inside a region it also ran in: waiting, with the region's stack. */
        int64_t k = block_stack(ps, s);
        if (k >= 0)
            wait_add(ps, s, t, k, wall);
        else
            ps->store.dropped[k == -1 ? OSP_DROP_ALLOC : OSP_DROP_NO_STACK]++;
        return;
    }
    if (!m->ep_on) {
        m->ep_on = true;
        m->ep_lost = false;
        m->ep_stack = -1;
        m->ep_pre_w = 0;
    }
    /* An answer that interrupted a blocking call, with no progress since, was taken in
     * this very wait: its stack is the waiting stack. (An on-CPU request sent for the
     * thread's last run that landed in the wait; the sampler engine only.) */
    if (m->ep_stack < 0 && !m->pend_on && m->ans_stack >= 0 && m->ans_in_syscall)
        m->ep_stack = m->ans_stack;
    if (m->ep_stack >= 0) {
        wait_add(ps, s, t, m->ep_stack, m->ep_pre_w + wall);
        m->ep_pre_w = 0;
    } else if (m->pend_on) {
        m->ep_pre_w += wall; /* an on-CPU request is out: its answer may show this wait */
    } else {
        /* No engine signals a blocked thread (§(l.3): it could return EINTR): its stack
         * comes from the kernel's view (§(l.4)); when that fails the tick is counted,
         * never invented, and the next tick of the episode tries again. */
        int64_t k = blocked_capture(ps, s, c);
        uint64_t w = m->ep_pre_w + wall;
        m->ep_pre_w = 0;
        if (k >= 0) {
            m->ep_stack = k;
            wait_add(ps, s, t, k, w);
        } else if (k == -2 && m->ss_known) {
            /* No stack this time (the thread woke during the read): the wait goes to the
             * next waiting sample of this thread, like blocked time seen while it ran. */
            m->wait_carry += w;
        } else {
            ps->store.dropped[k == -1 ? OSP_DROP_ALLOC : OSP_DROP_NO_STACK]++;
        }
    }
}

void osp_prof__sigprof_replaced(struct osp_prof_session *ps) {
    if (atomic_exchange(&ps->handler_lost, 1)) return;
    pthread_mutex_lock(&ps->reg);
    osp_prof__ktimer_disarm_signalling(ps);
    for (size_t i = 0; i < ps->slots_hi; i++) {
        struct osp_prof_slot *s = &ps->slots[i];
        if (atomic_load_explicit(&s->state, memory_order_relaxed) != OSP_SLOT_ACTIVE) continue;
        osp_prof__drain(ps, s); /* what was answered before stays */
    }
    pthread_mutex_unlock(&ps->reg);
}

static void tick(struct osp_prof_session *ps) {
    ps->ticks++;
    /* A program that installs its own SIGPROF action without going through our
     * sigaction (a raw system call, a sanitizer build) is noticed here, within 16 ticks. */
    struct sigaction cur;
    if ((ps->ticks & 15) == 0 && !atomic_load_explicit(&ps->handler_lost, memory_order_relaxed) &&
        osp_prof__real_sigaction(SIGPROF, NULL, &cur) == 0 && !osp_prof__own_sigprof(&cur))
        osp_prof__sigprof_replaced(ps);
    /* Images the program loaded (or unloaded) since the last tick get their CFI tables
     * before the walks that need them; a cheap check when nothing changed (§(l.1)).
     * The images are remembered too, so one unloaded later still names its samples. */
    osp_prof__cfi_refresh();
    osp_prof__images_note();
    size_t n = 0;
    osp_prof__sampler_reg_lock(ps);
    for (size_t i = 0; i < ps->slots_hi; i++)
        if (atomic_load_explicit(&ps->slots[i].state, memory_order_relaxed) == OSP_SLOT_ACTIVE) {
            ps->snap[n].idx = (uint32_t)i;
            ps->snap[n].gen = atomic_load_explicit(&ps->slots[i].gen, memory_order_relaxed);
            n++;
        }
    pthread_mutex_unlock(&ps->reg);
    for (size_t j = 0; j < n; j++) {
        if (atomic_load_explicit(&ps->stop, memory_order_relaxed) ||
            atomic_load_explicit(&ps->term_sig, memory_order_relaxed))
            return;
        osp_prof__sampler_reg_lock(ps);
        struct osp_prof_slot *s = &ps->slots[ps->snap[j].idx];
        /* Revalidate under the mutex: unregistration takes it too, so the thread stays
         * alive and registered for the whole examination (§(d) "Validity"). */
        if (atomic_load_explicit(&s->state, memory_order_relaxed) == OSP_SLOT_ACTIVE &&
            atomic_load_explicit(&s->gen, memory_order_relaxed) == ps->snap[j].gen)
            examine(ps, s, osp_prof__mono_ns());
        pthread_mutex_unlock(&ps->reg);
    }
}

static void sleep_until(struct osp_prof_session *ps, uint64_t deadline) {
    for (;;) {
        if (atomic_load_explicit(&ps->stop, memory_order_relaxed) ||
            atomic_load_explicit(&ps->term_sig, memory_order_relaxed))
            return;
        uint64_t now = osp_prof__mono_ns();
        if (now >= deadline) return;
        uint64_t until = deadline - now > SLEEP_CHUNK_NS ? now + SLEEP_CHUNK_NS : deadline;
        struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
        if (ps->term_sem_ok) {
            /* Woken at once by a termination signal (§(l.5)) or the stop. */
            if (sem_clockwait(&ps->term_sem, CLOCK_MONOTONIC, &ts) == 0) return;
        } else {
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
            }
        }
    }
}

/* §(b.3) "Teardown": stop sending, wait up to two periods for outstanding answers,
 * drain every ring a last time, count what is still unanswered as no_answer. */
static void sampler_teardown(struct osp_prof_session *ps) {
    uint64_t until = osp_prof__mono_ns() + 2 * ps->period_ns;
    for (;;) {
        bool outstanding = false;
        pthread_mutex_lock(&ps->reg);
        for (size_t i = 0; i < ps->slots_hi; i++) {
            struct osp_prof_slot *s = &ps->slots[i];
            if (atomic_load_explicit(&s->state, memory_order_relaxed) != OSP_SLOT_ACTIVE) continue;
            osp_prof__drain(ps, s);
            if (s->sm.pend_on) outstanding = true;
        }
        pthread_mutex_unlock(&ps->reg);
        if (!outstanding || osp_prof__mono_ns() >= until) break;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&ps->reg);
    for (size_t i = 0; i < ps->slots_hi; i++) {
        struct osp_prof_slot *s = &ps->slots[i];
        if (atomic_load_explicit(&s->state, memory_order_relaxed) == OSP_SLOT_ACTIVE) {
            uint64_t c;
            if (osp_prof__read_clock(s->cpu_clock, &c)) osp_prof__flush_tail(ps, s, c);
            osp_prof__slot_abandon_request(s, ps->store.dropped);
        }
        osp_prof__stat_fd_release(ps, s);
    }
    pthread_mutex_unlock(&ps->reg);
}

/* struct sched_attr of sched_setattr(2) (not in glibc's headers). */
struct sched_attr_v1 {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

/* Ask the kernel for a short time slice for the sampler (SCHED_OTHER's sched_runtime,
 * honoured by the EEVDF scheduler since Linux 6.12 without privileges, ignored before):
 * a thread with a short slice gets the CPU soon after it wakes even when every core is
 * busy with the program's threads, so ticks stay on time when threads outnumber cores.
 * Policy and nice value are kept; any failure leaves the defaults. */
static void sampler_short_slice(void) {
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    struct sched_attr_v1 a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) != 0) return;
    if (a.policy != SCHED_OTHER) return;
    a.size = (uint32_t)sizeof a;
    a.flags = 0;
    a.runtime = 100000; /* 0.1 ms, the shortest slice the kernel accepts */
    (void)syscall(SYS_sched_setattr, 0, &a, 0);
#endif
}

/* This thread's probe pipe for image bytes (osp_prof__image_bytes): its walks of blocked
 * threads' stacks and of ring samples meet stale return addresses into images the
 * program may have unloaded. Without one (descriptors exhausted) bytes are read directly. */
static void probe_open(int fds[2]) {
    fds[0] = fds[1] = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return;
    fds[0] = osp_prof__fd_high(p[0]);
    fds[1] = osp_prof__fd_high(p[1]);
    if (fds[0] < 0 || fds[1] < 0) {
        if (fds[0] >= 0) osp_prof__close_nc(fds[0]);
        if (fds[1] >= 0) osp_prof__close_nc(fds[1]);
        fds[0] = fds[1] = -1;
        return;
    }
    osp_prof__image_probe_set(fds[0], fds[1]);
}

static void probe_close(int fds[2]) {
    if (fds[0] < 0) return;
    osp_prof__image_probe_set(-1, -1);
    osp_prof__close_nc(fds[0]);
    osp_prof__close_nc(fds[1]);
}

void *osp_prof__sampler_main(void *arg) {
    struct osp_prof_session *ps = arg;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    sampler_short_slice();
    int probe[2];
    probe_open(probe);
    uint64_t rng = osp_prof__mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ull;
    if (rng == 0) rng = 1;
    uint64_t deadline = osp_prof__mono_ns();
    while (!atomic_load_explicit(&ps->stop, memory_order_acquire) &&
           !atomic_load_explicit(&ps->term_sig, memory_order_acquire)) {
        deadline += osp_prof__jitter_ns(&rng, ps->tick_ns); /* [0.7p, 1.3p) */
        uint64_t now = osp_prof__mono_ns();
        if (deadline <= now) {
            deadline = now; /* late: no catch-up burst */
            ps->late_ticks++;
        } else {
            sleep_until(ps, deadline);
        }
        if (atomic_load_explicit(&ps->stop, memory_order_acquire) ||
            atomic_load_explicit(&ps->term_sig, memory_order_acquire))
            break;
        tick(ps);
    }
    sampler_teardown(ps);
    probe_close(probe);
    /* This thread's CPU is sampled nowhere: the file accounts for it ("profiler_cpu_ns"). */
    if (!osp_prof__read_clock(CLOCK_THREAD_CPUTIME_ID, &ps->sampler_cpu_ns)) ps->sampler_cpu_ns = 0;
    int sig = atomic_load(&ps->term_sig);
    /* A signal: does not return. An _exit (OSP_PROF_TERM_EXIT): returns once written. */
    if (sig != 0 && !atomic_load(&ps->stop)) osp_prof__terminate(ps, sig);
    return NULL;
}

#endif /* OSP_PROF_SAMPLER */
