/*
 * prof_session.h — the Linux sampler's internal shapes: the session state, the registry's
 * slots and rows, the per-thread rings, the sampling-engine seam, and the functions the
 * files of the sampler call across file boundaries. Included only by the sampler's own
 * files (prof_session.c, prof_registry.c, prof_handler.c, prof_sampler.c,
 * prof_engine_sampler.c, prof_raw_writer.c, prof_arch_*.c); compiled only where
 * OSP_PROF_SAMPLER is 1.
 *
 * Source: docs/spec/profiler.md §(a), §(b.1)–(b.3), §(b.5), §(c), §(d), §(e), §(k)
 * items 1–18; [PROF-ACTIVATE-ENV], [PROF-COLLECT-*], [PROF-RAW-FORMAT].
 *
 * Thread map — which thread runs each file's code and which lock it may hold:
 *  - prof_registry.c, on registered threads: registration and unregistration of the
 *    calling thread (under the registry mutex), its own slot's identity and blocking
 *    buffer (the blocking hooks are lock-free), its TLS slot pointer;
 *  - prof_handler.c, the SIGPROF handler in signal context on a registered thread: its
 *    slot's ring (producer side) and a few atomics; nothing else — no locks, no
 *    allocation, no stdio;
 *  - prof_sampler.c, the sampler thread: every slot's sampler-side state and ring
 *    (consumer side), under the registry mutex; the sample store, alone (the registry's
 *    unregistration path also drains its own slot into the store, under the mutex);
 *  - prof_engine_sampler.c, the session owner: starts and stops the "sampler" engine
 *    (installs and restores the SIGPROF action, creates and joins the sampler thread),
 *    under the session lock;
 *  - prof_raw_writer.c, the session owner after the sampler has been joined: reads the
 *    store and the rows, writes the file, under the session lock only;
 *  - prof_session.c, the session owner (boot / exit hook / test entry points /
 *    fork child): activation, start, stop, under the session lock;
 *  - prof_arch_*.c: pure functions, called from the handler;
 *  - prof_cfi.c (CFI tables): built by the session owner at start and by the sampler
 *    thread each tick, no profiler lock; read lock-free by every walk (prof_unwind.c);
 *  - prof_blocked.c: the sampler thread, under the registry mutex (a blocked thread's
 *    stack from /proc, §(l.4)).
 * Lock order: session lock, then registry mutex, then the allocator.
 */
#ifndef OSP_PROF_SESSION_H
#define OSP_PROF_SESSION_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "osp_raw_format.h"
#include "prof_internal.h"

/* ---- constants ------------------------------------------------------------------------- */

#define OSP_PROF_NSLOTS 1024 /* live registered threads, §(d) "at least 1024" */
#define OSP_PROF_RING_N \
    128 /* ring entries per slot, §(b.3) "at least 8": a kernel timer answers on its own,
         * many times while the sampler thread waits for a core (12.8 ms of the thread's
         * CPU at 10 kHz; 64 entries lost 1.9 % of the samples to ring_full at 10 kHz on a
         * loaded machine). About 136 KiB per registered thread, touched as it fills. */
#define OSP_PROF_WAIT_HZ_MAX \
    100                               /* sampler ticks per second beside a kernel timer, unless \
                                  * the rings need more (osp_prof__tick_ns) */
#define OSP_PROF_FD_MIN           100 /* profiler descriptors are kept at or above this, §(l.3) */
/* perf_event ring delivery (prof_engine_timer.c): bytes of the top of the stack the kernel
 * copies with each sample, and the largest sample record it can then write (header, time,
 * counter value, a call chain of up to 127 user frames plus context markers, three
 * registers, the stack copy with its two size words), rounded up. */
#define OSP_PROF_PERF_STACK_BYTES 8192
#define OSP_PROF_PERF_RECORD_MAX  (OSP_PROF_PERF_STACK_BYTES + 2048)
/* The most of a thread's stack, from the sampled sp up, a ring sample's walk reads (the
 * copy, then the live stack above it). */
#define OSP_PROF_PERF_VIEW_BYTES  (256 * 1024)

/* A slot is FREE, RESERVED by a registering thread that is making its timer outside the
 * registry mutex (prof_registry.c), ACTIVE, or RETIRED (its thread gone or the session
 * stopped; only its owner frees it). */
enum { OSP_SLOT_FREE = 0, OSP_SLOT_ACTIVE = 1, OSP_SLOT_RETIRED = 2, OSP_SLOT_RESERVED = 3 };
enum { OSP_SESSION_IDLE = 0, OSP_SESSION_RUNNING = 1, OSP_SESSION_STOPPING = 2 };
/* The kernel timer a slot's thread carries (§(l.3)): none (the sampler thread's directed
 * requests sample it), a perf_event task-clock descriptor, or a POSIX CPU-time timer. */
enum { OSP_KTIMER_NONE = 0, OSP_KTIMER_PERF = 1, OSP_KTIMER_POSIX = 2 };

/* ---- rings, slots, rows ---------------------------------------------------------------- */

/* One answer of the handler: the stack it walked for request `seq`, or (seq 0) a sample
 * taken when the thread's own kernel timer fired. */
struct osp_prof_ring_entry {
    uint64_t seq;    /* the request this answers (slot's req_seq when the handler ran); 0: timer */
    uint64_t t_ns;   /* timer samples: CLOCK_MONOTONIC when the handler ran */
    uint64_t cpu_ns; /* timer samples: the thread's CPU clock when the handler ran */
    uint64_t weight_ns; /* timer samples: CPU time since the thread's previous timer sample */
    uint32_t n;
    uint16_t truncated;
    uint8_t in_syscall; /* the signal interrupted a blocking system call (EINTR) */
    uint8_t unwind_end; /* enum osp_unwind_end of the walk (prof_cfi.h) */
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
};

/* Single-producer (the handler on the slot's thread) / single-consumer (the sampler)
 * ring. Entries are published with a release store of head, freed with a release store
 * of tail. Allocated at registration, never freed. */
struct osp_prof_ring {
    _Atomic uint32_t head;
    _Atomic uint32_t tail;
    struct osp_prof_ring_entry e[OSP_PROF_RING_N];
};

/* The terminating signals whose default action the session takes over (prof_session.c). */
#define OSP_PROF_TERM_SIGNALS 4

/* Sampler-side bookkeeping of one slot; accessed only under the registry mutex. */
struct osp_prof_sampler_state {
    uint64_t last_t;   /* monotonic time of the previous examination */
    uint64_t cpu_req;  /* CPU clock at the last on-CPU request: weight baseline */
    uint64_t cpu_due;  /* CPU clock from which the next on-CPU request is due */
    uint64_t cpu_base; /* CPU clock below which the thread has made no progress */
    uint64_t run_cpu;  /* CPU clock when the thread's scheduler state was last read ... */
    bool run_known;    /* ... valid while this is set */
    int run_state;     /* what it was then: SCHED_RUNNABLE or SCHED_BLOCKED (prof_sampler.c) */
    int64_t last_on;   /* store index of the thread's last on-CPU sample, or -1 */
    uint64_t carry_w;  /* weight of unanswered on-CPU requests, for the next one */
    uint64_t ring_full_seen;
    uint64_t rf_credit; /* ring_full losses not yet matched by a heavier timer sample */
    int64_t owed_ns;    /* on-CPU weight recorded minus one period per on-CPU sample */
    uint64_t cpu_start; /* CPU clock at registration */
    uint32_t on_n;      /* on-CPU timer samples stored (up to 2: one, or more) */
    bool perf_timed;    /* sampled by a perf_event counter whose first period was drawn
                         * from the residual distribution (ktimer_first) */
    bool pend_on, pend_capture;
    uint64_t pend_seq, pend_t, pend_w, pend_sent;
    uint64_t pend_cpu;   /* the thread's CPU clock when the request was sent */
    bool ep_on, ep_lost; /* blocking episode outside a region (§(b.2) case 3) */
    int64_t ep_stack;    /* its captured stack, -1 until the capture arrives */
    uint64_t ep_pre_w;   /* waiting weight accumulated before a capture could be sent */
    int64_t ans_stack;   /* stack of the last answer, while no progress was seen since */
    bool ans_in_syscall; /* ... and that answer interrupted a blocking system call */
    uint32_t blk_seq_cached;
    int64_t blk_stack_cached;
    uint64_t blk_cpu;     /* CPU clock at the first tick that found the thread in a region */
    uint32_t blk_cpu_seq; /* ... and that region's block_seq */
    bool blk_cpu_known;
    uint32_t blk_distrust_seq; /* a region (block_seq) the thread was seen running in */
    bool blk_distrust_known;
    uint64_t wait_seen; /* region wall time already in waiting samples (region_wait) */
    int stat_fd;        /* cached /proc/self/task/<tid>/stat, or -1 */
    /* Time blocked outside on-CPU samples (kernel timers only, prof_sampler.c
     * blocked_since): the reading at ss_t (the CPU clock, and the time spent waiting for a
     * CPU from /proc/self/task/<tid>/schedstat), the waiting weight given since then, what
     * earlier readings gave beyond what they measured (negative; the kernel adds a queued
     * thread's wait only when it runs), and blocked time seen at ticks that found the
     * thread running, for its next waiting sample outside a region. */
    bool ss_tried, ss_known;
    uint64_t ss_t, ss_run, ss_rq, ss_given;
    int64_t ss_balance;
    uint64_t wait_carry;
    int64_t last_wait; /* store index of its last waiting sample outside a region, or -1 */
};

/* One registered thread (§(d)). */
struct osp_prof_slot {
    /* Shared with the handler and the owning thread. */
    _Atomic int state;
    _Atomic uint64_t gen;
    _Atomic uint64_t req_seq;
    /* 1 from the moment the sampler thread commits to a directed request until the
     * handler answers it (or the sampler takes it back): the handshake that keeps a
     * request from landing in a wait the thread entered meanwhile (osp_prof_block_begin,
     * send_request; docs/profiler-runtime.md "No signal for blocked threads"). */
    _Atomic int req_out;
    _Atomic uint64_t ring_full;
    struct osp_prof_ring *ring;
    uintptr_t lo, hi; /* stack bounds captured at registration */
    /* Blocking region: written by the owner, read by the sampler under block_seq. */
    int block_depth; /* owner only */
    _Atomic int in_block;
    /* Set by the owner before it takes the registry mutex to unregister: blocked from then
     * on, it waits for the sampler (which holds the mutex while it examines the slot), a
     * wait the profiler causes and never samples as the program's. */
    _Atomic int leaving;
    _Atomic uint32_t block_seq; /* odd while the owner writes the stack */
    /* Time waited in regions, kept by the owner: the monotonic time the open region began
     * (and the thread's CPU time and voluntary switches then, owner only), and the total of
     * the regions it ended, each its wall time less the CPU time it used in it, when it
     * blocked in it (prof_registry.c; read by region_wait in prof_sampler.c). */
    _Atomic uint64_t blk_t0;
    uint64_t blk_cpu0, blk_nvcsw0;
    _Atomic uint64_t wait_done_ns;
    _Atomic uint32_t block_n, block_trunc;
    _Atomic uintptr_t block_pcs[OSP_PROF_MAX_FRAMES];
    /* Identity, under the registry mutex. */
    uint32_t row;
    pid_t tid;
    clockid_t cpu_clock;
    struct osp_prof_sampler_state sm;
    /* Kernel timer (perf_event / cpu_timer engines). Set up by the thread itself at
     * registration, torn down by it at unregistration or by the engine's stop. */
    _Atomic int ktimer_kind; /* OSP_KTIMER_*: set by the thread, cleared under the registry mutex */
    _Atomic int ktimer_armed; /* the handler may re-arm it */
    int perf_fd;              /* OSP_KTIMER_PERF */
    /* OSP_KTIMER_PERF with ring delivery (docs/profiler-runtime.md "Sampling engines"):
     * the counter's mapped ring buffer (its control page, then perf_rb_bytes of data, a
     * power of two), which the kernel fills with samples -- registers, call chain and a
     * copy of the top of the stack -- and the sampler thread empties (osp_prof__perf_ring
     * _drain); NULL: the counter signals the thread instead (F_SETSIG). Under the
     * registry mutex once set up. */
    void *perf_rb;
    size_t perf_rb_bytes;
    /* This registration's counter has ring delivery (kept after the ring is unmapped at
     * unregistration, until the slot's next registration): its samples never depended
     * on SIGPROF, so a program that takes SIGPROF loses none of them. */
    bool ring_delivery;
    /* Ring delivery: the counter runs on the kernel's clock while the thread is on a CPU,
     * which also counts interrupt time and, in a virtual machine, time the host took the
     * CPU away (steal): up to a few per cent more than the thread's CPU clock. A sample's
     * counter value v is turned into the thread's CPU clock as perf_ca + perf_rho * (v -
     * perf_va): (perf_ca, perf_va) a pair of CPU clock and counter read together, at most
     * CALIBRATE_NS ago (prof_engine_timer.c), perf_rho the ratio of the two clocks' advance
     * over the window before it. perf_cal_t: monotonic time of that reading; perf_cal_n:
     * the readings so far, up to CALIBRATE_EARLY (they come less often after that). */
    uint64_t perf_ca, perf_va, perf_cal_t;
    uint32_t perf_cal_n;
    double perf_rho;
    /* Ring delivery: monotonic time of the anchor (perf_ca, perf_va), and the share of a
     * core the thread used since it, from the last reading (1 until then): a thread that
     * is seldom on a CPU gets its periods drawn more often (prof_engine_timer.c
     * ring_rejitter_ns). */
    uint64_t perf_anchor_t;
    double perf_share;
    /* Ring samples whose stack had to be cut at the copy (nothing above it could be told):
     * at the first, the thread is moved to signal delivery (CUT_LIMIT). */
    uint32_t perf_cut;
    bool perf_stays; /* its move to signal delivery failed: cut samples are kept truncated */
    /* Its ring counter was started for one overflow (a short first period): the sampler
     * thread enables it again at the drain that reads that sample. */
    bool perf_limited;
    /* Ring delivery: the thread's voluntary context switches (status) and all its runs on
     * a CPU (schedstat) at sw_t, for the move of a thread that switches so often that its
     * counter's per-switch cost shows (prof_engine_timer.c switches_often). sw_runs_ok:
     * sw_runs was read at sw_t (the status read is skipped while schedstat shows too few
     * switches of any kind); sw_all_ok: sw_all was. */
    uint64_t sw_t, sw_runs, sw_all;
    bool sw_known, sw_runs_ok, sw_all_ok;
    uint8_t sw_checks; /* windows measured so far, up to 255 */
    bool sw_over;      /* the last window was over the switch rate */
    bool sw_stays;     /* that move failed, or SIGPROF is blocked in it: keeps its ring */
    /* What perf_fd was when opened (fstat): a program that closes every descriptor and
     * opens its own at that number keeps it -- the profiler then never reads, stops or
     * closes it. */
    uint64_t perf_dev, perf_ino;
    timer_t posix_timer;   /* OSP_KTIMER_POSIX */
    uintptr_t block_frame; /* owner only: frame address of the outermost region's hook */
    bool auto_reg;         /* registered by the pthread_create interposer, §(l.2) */
    /* Handler side (the owning thread, in signal context or with SIGPROF blocked). */
    uint64_t h_cpu_last; /* CPU clock at the previous timer sample */
    uint64_t h_rng;      /* xorshift state: jittered periods */
    /* The session's period when the timer was made: what the handler reads (a late
     * signal's handler may still run while the next session starts and sets its own). */
    uint64_t h_period_ns;
    uint64_t h_next_due; /* CPU clock at which the next timer sample is due (cpu_timer), or
                          * the next sample that draws a period (perf_event) */
    uint32_t h_left;     /* perf_event: samples left before the period is drawn again */
};

/* One row of the raw file's "threads" (§(e)): a registration, kept after it ends. */
struct osp_prof_row {
    int64_t fiber;
    pid_t tid;
    char label[OSP_PROF_LABEL_MAX + 1];
};

struct osp_prof_session;

/* ---- the sampling-engine seam ---------------------------------------------------------- */

/*
 * A sampling engine: the mechanism that makes registered threads produce samples. Chosen
 * by the session owner at session start; today the only one is "sampler" (the sampler
 * thread, directed SIGPROF via tgkill and the per-thread rings, §(b.1)–(b.3)).
 *  - start: called on the session owner under the session lock, after the session's
 *    rate, start times and store are set and its state is RUNNING, before any thread is
 *    registered. Returns true when the engine runs; false with `*cause` an errno value
 *    (the caller reports it), in which case the engine has undone everything it did.
 *  - stop: called on the session owner under the session lock, after hooks have been
 *    turned off and no registration can start. Returns once no engine thread runs and no
 *    engine signal handler will record anything more; the store is then the owner's.
 *  - thread_prepare: called on the registering thread without the registry mutex,
 *    after it reserved a slot under it, with `p` holding the session's parameters as read
 *    there (p->engine, p->epoch, p->period_ns, p->ring, p->signal_ok): makes the
 *    thread's kernel timer ready but not running (the slow part of a registration:
 *    perf_event_open, mapping the counter's ring), so that the mutex is held only to
 *    publish it. With 64 threads starting at once on 2 cores, each registration opening
 *    and mapping its counter under the mutex and being preempted there made a convoy
 *    that kept the last threads, and the sampler thread's drains, waiting for over a
 *    second (rings full). May be NULL; failures leave p->fd at -1.
 *  - thread_registered / thread_unregistered: called on the thread itself, under the
 *    registry mutex, right after its slot became active / when it unregisters (or exits)
 *    while its slot is still active. thread_registered gets what thread_prepare made
 *    (made again under the mutex when another session began meanwhile) and takes what
 *    it keeps out of it (p->fd -1, p->rb NULL); the caller releases the rest after
 *    unlocking (osp_prof__ktimer_prep_release). May be NULL. Must not take the session lock. Slots
 *    the session retires without their thread (thread gone, session stop) get no
 *    thread_unregistered call: `stop` releases whatever the engine still holds for them.
 *  - fork_child: called in a forked child (pthread_atfork child handler, async-signal-safe
 *    code only) when a session was running in the parent; puts the child's process state
 *    (signal actions, descriptors) back as the program had it. May be NULL.
 */
/* A registering thread's kernel timer made ready outside the registry mutex (the
 * engine's thread_prepare). Inputs, read under the mutex: the session's engine, epoch,
 * period, whether counters get rings and whether they may signal. Outputs: the counter
 * (opened, not counting; -1 none) with its ring mapping and data bytes, the thread's
 * jitter state and its first due time (ns of CPU time from its registration). */
struct osp_prof_ktimer_prep {
    const struct osp_prof_engine *engine;
    uint64_t epoch;
    uint64_t period_ns;
    bool ring, signal_ok;
    bool kernel; /* ring delivery samples kernel mode too (the session's perf_kernel) */
    /* Within the session's descriptor budget: may open a counter, one descriptor of the
     * budget reserved for it (set_prep) until a slot takes it or it is given back. */
    bool perf_ok;
    int fd;
    void *rb;
    size_t rb_bytes;
    uint64_t rng, first;
};

struct osp_prof_engine {
    const char *name;
    bool (*start)(struct osp_prof_session *ps, int *cause);
    void (*stop)(struct osp_prof_session *ps);
    void (*thread_prepare)(struct osp_prof_ktimer_prep *p, pid_t tid);
    void (*thread_registered)(struct osp_prof_session *ps, struct osp_prof_slot *s,
                              struct osp_prof_ktimer_prep *p);
    void (*thread_unregistered)(struct osp_prof_session *ps, struct osp_prof_slot *s);
    void (*fork_child)(struct osp_prof_session *ps);
};

/* The engines, in the order the session tries them (§(l.3)): "perf_event" and
 * "cpu_timer" (prof_engine_timer.c), "sampler" (prof_engine_sampler.c). */
OSP_PROF_HIDDEN extern const struct osp_prof_engine osp_prof__engine_perf_event;
OSP_PROF_HIDDEN extern const struct osp_prof_engine osp_prof__engine_cpu_timer;
OSP_PROF_HIDDEN extern const struct osp_prof_engine osp_prof__engine_sampler;

/* Shared by every engine (prof_engine_sampler.c), session owner under the session lock:
 * install the SIGPROF action (keeping the program's, published in old_action) and start
 * the sampler thread through the real pthread_create; false with `*cause` (errno value)
 * after undoing everything. `stop_thread` sets the stop flag and joins the sampler thread
 * (unless called on it); `restore_action` puts the program's SIGPROF action back,
 * discarding our pending signals, and says so when the program replaced ours. */
OSP_PROF_HIDDEN bool osp_prof__engine_start_common(struct osp_prof_session *ps, int *cause);
OSP_PROF_HIDDEN void osp_prof__engine_stop_thread(struct osp_prof_session *ps);
OSP_PROF_HIDDEN void osp_prof__engine_restore_action(struct osp_prof_session *ps);

/* The sampler thread's mean tick for a session at `period_ns` (§(b.3), §(l.3)): the
 * period under the "sampler" engine (`kernel_timer` false). Beside a kernel timer the
 * thread only records waiting samples and drains the rings: OSP_PROF_WAIT_HZ_MAX ticks
 * per second, or more when a busy thread would fill a quarter of its ring between two
 * ticks (above 3.2 kHz with 128 entries), never faster than the period. Each wake-up
 * costs the process CPU that no sample shows (about 4 % of an allocation-heavy
 * program's at 250 ticks per second), so ticks are kept to what the rings need. */
static inline uint64_t osp_prof__tick_ns(uint64_t period_ns, bool kernel_timer) {
    if (!kernel_timer) return period_ns;
    uint64_t t = 1000000000ull / OSP_PROF_WAIT_HZ_MAX;
    uint64_t drain = period_ns * (OSP_PROF_RING_N / 4);
    if (drain < t) t = drain;
    return t > period_ns ? t : period_ns;
}

/* A uniform draw in [0, 2^53) from the xorshift state `*rng` (non-zero). Pure,
 * async-signal-safe. */
static inline uint64_t osp_prof__rand53(uint64_t *rng) {
    uint64_t x = *rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    return (x * 0x2545F4914F6CDD1Dull) >> 11; /* 53 random bits */
}

/* `p` times the fraction `r` / 2^53. */
static inline uint64_t osp_prof__scale53(uint64_t p, uint64_t r) {
    return (uint64_t)(((unsigned __int128)p * r) >> 53);
}

/* Jittered period in ns: uniform in [0.7p, 1.3p) for period `p`, from the xorshift state
 * `*rng` (non-zero). Pure, async-signal-safe. */
static inline uint64_t osp_prof__jitter_ns(uint64_t *rng, uint64_t p) {
    return p * 7 / 10 + osp_prof__scale53(p * 6 / 10, osp_prof__rand53(rng));
}

/* The first due time of a new per-thread timer, in ns of the thread's CPU time from its
 * start: drawn from the residual ("equilibrium") distribution of the jittered periods,
 * so that the expected number of samples in any T ns of a thread's CPU time is T / p from
 * its very start. (A first period drawn like the others, in [0.7p, 1.3p), loses half a
 * sample per thread on average: 1 % of the samples of 64 threads that run 50 ms each.)
 * The residual's density is 1/p on [0, 0.7p) (mass 0.7) and falls linearly to 0 on
 * [0.7p, 1.3p) (mass 0.3: the minimum of two uniform draws has that shape). Pure,
 * async-signal-safe. */
static inline uint64_t osp_prof__first_due_ns(uint64_t *rng, uint64_t p) {
    uint64_t u = osp_prof__rand53(rng);
    const uint64_t flat = (uint64_t)(0.7 * (double)(1ull << 53));
    if (u < flat) return osp_prof__scale53(p, u);
    uint64_t a = osp_prof__rand53(rng), b = osp_prof__rand53(rng);
    return p * 7 / 10 + osp_prof__scale53(p * 6 / 10, a < b ? a : b);
}

/* The period to set on a perf_event counter that keeps it for the next `k` samples, for
 * a drawn period `w`, when the sample taking it came `late_ns` after its CPU-time
 * deadline (negative: early): w less late_ns / k, so that the k-th sample lands on the
 * deadline k drawn periods on; within [0.8w, 1.25w] and at least `min_ns`. The clamp
 * makes up a few per cent of lost samples and never more (prof_engine_timer.c says why).
 * Pure, async-signal-safe. */
static inline uint64_t osp_prof__catch_up_period(uint64_t w, int64_t late_ns, uint32_t k,
                                                 uint64_t min_ns) {
    int64_t v = (int64_t)w - late_ns / (int64_t)(k ? k : 1);
    if (v < (int64_t)(w - w / 5)) v = (int64_t)(w - w / 5);
    if (v > (int64_t)(w + w / 4)) v = (int64_t)(w + w / 4);
    if (v < (int64_t)min_ns) v = (int64_t)min_ns;
    return (uint64_t)v;
}

/* The kernel timer of the calling thread's slot fired (prof_engine_timer.c) while its CPU
 * clock read `cpu_now`: re-arm it for the next jittered deadline. Signal context,
 * async-signal-safe. */
OSP_PROF_HIDDEN void osp_prof__ktimer_rearm(struct osp_prof_session *ps, struct osp_prof_slot *s,
                                            uint64_t cpu_now);
/* A perf_event counter with ring delivery (slot->perf_rb): turn the samples the kernel
 * wrote since the last call into on-CPU samples of the store, walking each one's copy of
 * the stack (osp_prof__hybrid_walk_copy) and splicing the kernel's frame-pointer call
 * chain above it; count lost records as ring_full; draw the counter's next jittered
 * period. Called by osp_prof__drain (the sampler thread, an unregistering thread), under
 * the registry mutex. Does nothing for other slots. prof_engine_timer.c. */
OSP_PROF_HIDDEN void osp_prof__perf_ring_drain(struct osp_prof_session *ps,
                                               struct osp_prof_slot *s);
/* One on-CPU sample of a thread's own kernel timer into the store (§(l.3)): taken at
 * monotonic time `t_ns` when the thread's CPU clock read `cpu_ns`, weighted with
 * `weight_ns` (its CPU time since its previous sample), stack `pcs[0..n)` (n may be 0: the
 * loss is counted and the weight carried to the next sample). Under the registry mutex.
 * prof_sampler.c. */
OSP_PROF_HIDDEN void osp_prof__record_timer_sample(struct osp_prof_session *ps,
                                                   struct osp_prof_slot *s, uint64_t t_ns,
                                                   uint64_t cpu_ns, uint64_t weight_ns,
                                                   const uintptr_t *pcs, uint32_t n,
                                                   bool truncated);

/* Close the counter and unmap the ring a thread_prepare made that thread_registered did
 * not take (p->fd >= 0, p->rb non-NULL); leaves p empty. Outside the registry mutex, on
 * the registering thread. prof_engine_timer.c. */
OSP_PROF_HIDDEN void osp_prof__ktimer_prep_release(struct osp_prof_ktimer_prep *p);

/* Disarm and release every slot's kernel timer (engine stop). Under the registry mutex. */
OSP_PROF_HIDDEN void osp_prof__ktimer_disarm_all(struct osp_prof_session *ps, bool release);
/* Disarm the kernel timers that signal their thread (every one but ring delivery's), when
 * the program took SIGPROF (§(l.3)). Under the registry mutex. */
OSP_PROF_HIDDEN void osp_prof__ktimer_disarm_signalling(struct osp_prof_session *ps);

/* The descriptors that have ever carried a perf_event counter of ours that signals its
 * thread (F_SETSIG SIGPROF), as a bitmap of [OSP_PROF_FD_MIN, OSP_PROF_FD_MIN + 64 *
 * OSP_PROF_SIG_FD_WORDS); set when such a counter is opened, never cleared. An overflow
 * signal names its descriptor (si_fd) and may reach the handler late: a handler preempted
 * for milliseconds on a loaded machine ran after its session had ended and the next had
 * begun with another engine, took the signal for the program's and re-raised it under
 * the program's default action, which ended the process (test_capture's
 * registrations_race_session_stops, about 1 run in 15 under load). With this map the
 * handler knows such a signal for ours, and drops it, whatever the session is doing
 * (§(l.3): profiling never changes what the program does). prof_engine_timer.c. */
#define OSP_PROF_SIG_FD_WORDS 1024 /* 65,536 descriptors, 8 KiB */
OSP_PROF_HIDDEN extern _Atomic uint64_t osp_prof__sig_fds[OSP_PROF_SIG_FD_WORDS];

/* Record that descriptor `fd` carries a signalling counter of ours (see osp_prof__sig_fds).
 * Descriptors past the map are not recorded. Any thread. */
static inline void osp_prof__sig_fd_mark(int fd) {
    if (fd < OSP_PROF_FD_MIN || fd - OSP_PROF_FD_MIN >= 64 * OSP_PROF_SIG_FD_WORDS) return;
    unsigned i = (unsigned)(fd - OSP_PROF_FD_MIN);
    atomic_fetch_or_explicit(&osp_prof__sig_fds[i / 64], (uint64_t)1 << (i % 64),
                             memory_order_release);
}

/* Whether an overflow signal naming descriptor `fd` (si_fd) is one of ours: the map says
 * so in its range; past it, whatever the session's engine says (`perf_engine`: the
 * session runs the perf_event engine). Async-signal-safe. */
static inline bool osp_prof__sig_fd_ours(int fd, bool perf_engine) {
    if (fd < OSP_PROF_FD_MIN) return false;
    unsigned i = (unsigned)(fd - OSP_PROF_FD_MIN);
    if (i >= 64 * OSP_PROF_SIG_FD_WORDS) return perf_engine;
    return (atomic_load_explicit(&osp_prof__sig_fds[i / 64], memory_order_acquire) >> (i % 64)) & 1;
}

/* Move descriptor `fd` to the lowest free number >= OSP_PROF_FD_MIN, close-on-exec, and
 * close the original (§(l.3): a program that closes stdin gets fd 0 back from its next
 * open). Returns the new descriptor, or -1 (errno set; `fd` closed). prof_session.c. */
OSP_PROF_HIDDEN int osp_prof__fd_high(int fd);

/* The raw file's body, opened at session start and held to the end (§(l.3), §(l.5)): an
 * unnamed O_TMPFILE in the destination's directory at a descriptor >= OSP_PROF_FD_MIN,
 * close-on-exec, so the write at the end needs no new descriptor (a program that holds
 * every descriptor at exit, or a seccomp filter that refuses openat, still gets its
 * profile) and a run that ends by exec, _exit, a crash or SIGKILL leaves no stray file.
 * `fd` is -1 when nothing is held; `dev`/`ino` tell it from whatever a program may have
 * put at that number since (osp_prof__raw_hold_ours). */
struct osp_prof_raw_hold {
    int fd;
    dev_t dev;
    ino_t ino;
};

/* ---- the session ----------------------------------------------------------------------- */

/* Scratch of one sampler tick: a slot to examine and the generation it had. */
struct osp_prof_snap {
    uint32_t idx;
    uint64_t gen;
};

/* Everything a profiling session shares between threads. One static instance
 * (osp_prof__session); the comments say who writes each group and under which lock. */
struct osp_prof_session {
    pthread_mutex_t session_lock; /* serialises start and stop */
    pthread_mutex_t reg;          /* the registry mutex */
    pthread_once_t init_once;
    pthread_once_t boot_once;
    bool init_ok;      /* init_once succeeded: slots, TLS key, atfork and atexit are set */
    pthread_key_t key; /* its destructor unregisters a thread that exits registered */

    _Atomic int on;           /* hooks act: a session is running */
    _Atomic int stop;         /* the sampler should stop */
    _Atomic int forked_child; /* this process is a fork of a profiled one: inert */
    _Atomic pid_t pid;

    /* Under reg. */
    int state;                   /* OSP_SESSION_* */
    uint64_t epoch;              /* sessions started in this process (under reg) */
    struct osp_prof_slot *slots; /* OSP_PROF_NSLOTS, allocated once, never freed */
    size_t slots_hi;             /* 1 + highest slot index ever used */
    struct osp_prof_row *rows;
    size_t nrows, rows_cap;
    uint64_t threads_over_limit;
    uint64_t reg_dropped[OSP_DROP_COUNT]; /* losses counted by unregistrations */
    int stat_fds_open;
    int perf_fds; /* perf_event descriptors held by slots or reserved for registering ones */

    /* Set by the session owner before the engine starts; read-only while it runs. */
    const struct osp_prof_engine *engine;
    /* Descriptors the profiler may hold for its threads at once (per-thread counters,
     * cached /proc stat files): an eighth of the soft RLIMIT_NOFILE less the sampler
     * thread's probe pipe (OSP_PROF_PROBE_FDS) and the raw file's body (OSP_PROF_RAW_FDS),
     * both held for the whole session, so a program
     * near its limit keeps nearly all of it (§(l.3)); threads beyond it get a CPU-time
     * timer. */
    int fd_budget;
    /* The raw file's body (osp_prof__raw_probe); session owner only, under session_lock. */
    struct osp_prof_raw_hold raw;
    uint32_t rate_hz;
    uint64_t period_ns;
    /* The sampler thread's tick: the period under the "sampler" engine; with a kernel
     * timer sampling on-CPU it only records waiting samples and drains the rings:
     * osp_prof__tick_ns (docs/profiler-runtime.md). */
    uint64_t tick_ns;
    _Atomic uint64_t start_mono_ns;
    uint64_t start_unix_ns;
    char path[OSP_PROF_PATH_MAX + 1];
    pthread_t sampler;

    /* The sampler's own, read by the writer after the join. */
    struct osp_prof_store store;
    uint64_t ticks, late_ticks, next_seq;
    struct osp_prof_snap snap[OSP_PROF_NSLOTS];
    /* How the walks behind stored samples ended (enum osp_unwind_end, prof_cfi.h), and how
     * many blocked threads' stacks were read from /proc without a signal (§(l.4)). */
    uint64_t unwind_ends[OSP_RAW_UNWIND_COUNT];
    uint64_t blocked_reads;
    uint64_t blocked_skips; /* on-CPU requests not sent: the thread was blocked by then */
    /* The profiler's own CPU time that no sample carries ("profiler_cpu_ns", §(e) additional
     * keys): the session owner's start-up before it registered (set by session_start), the
     * sampler thread's CPU clock when it ends (set by the sampler thread before it returns),
     * and the session owner's CPU clock when sampling ended (set by the stop, after the
     * engine stopped; the writer adds what the owner used since). */
    uint64_t own_startup_ns;
    uint64_t sampler_cpu_ns;
    /* The weight of on-CPU samples taken in the profiler's own code (osp_prof__own_pc) on
     * program threads: the profiler's work there, not the program's. Sampler thread. */
    uint64_t own_thread_ns;
    /* CPU time of threads that ended without any sample, short of a whole period each:
     * summed over the session, each whole period of it counts one cpu_unsampled sample
     * (prof_sampler.c, osp_prof__flush_tail). Under the registry mutex. */
    uint64_t unsampled_rest_ns;
    uint64_t own_stop_cpu_ns;
    bool own_stop_cpu_ok;

    /* perf_event engine: counters are opened with ring delivery where the kernel allows
     * it (x86-64; OSPREY_PROFILE_PERF_DELIVERY not "signal"), prof_engine_timer.c. The
     * scratch buffer holds a record that wraps around a ring's end (sampler side, under
     * the registry mutex). */
    bool perf_ring;
    /* ... and their counters sample kernel mode too (the kernel allows it: paranoid <= 1
     * or CAP_PERFMON; OSPREY_PROFILE_PERF_KERNEL not "0"). */
    bool perf_kernel;
    uint8_t perf_scratch[OSP_PROF_PERF_RECORD_MAX];
    /* A ring sample's stack copy followed by the live stack above it, for a walk that the
     * copy alone could not finish (prof_engine_timer.c perf_stack). */
    uint8_t perf_view[OSP_PROF_PERF_VIEW_BYTES];

    /* The SIGPROF action we replaced; published before our handler is installed. */
    struct sigaction old_action;
    _Atomic int old_action_ready;
    /* The program replaced our SIGPROF action during the session (§(l.3)): noticed by the
     * interposed sigaction or by the sampler; from then on nothing is sampled. */
    _Atomic int handler_lost;

    /* §(l.5): termination signals whose default action we replaced, and the one that
     * arrived (0: none; OSP_PROF_TERM_EXIT: the program is calling _exit). The handler (or
     * the _exit interposer) posts term_sem; the sampler thread writes the file. */
    struct sigaction term_old[OSP_PROF_TERM_SIGNALS];
    bool term_installed[OSP_PROF_TERM_SIGNALS];
    _Atomic int term_sig;
    _Atomic int exit_written; /* the file of an _exit is written (or was not to be) */
    sem_t term_sem;
    bool term_sem_ok;
};

/* The process's session state (prof_session.c). */
OSP_PROF_HIDDEN extern struct osp_prof_session osp_prof__session;

/* The calling thread's registration. Initial-exec TLS, written outside signal context,
 * so the first access from the handler can never allocate (§(b.3)). Owned by
 * prof_registry.c; read by the handler. */
OSP_PROF_HIDDEN extern __thread struct osp_prof_slot *osp_prof__t_slot
    __attribute__((tls_model("initial-exec")));

/* ---- interposers (prof_interpose.c) ---------------------------------------------------- */

/* The C library's pthread_create and sigaction, never an interposer's (ours or the
 * program's), §(l.2). Same contract as the C functions. */
OSP_PROF_HIDDEN int osp_prof__real_pthread_create(pthread_t *t, const pthread_attr_t *attr,
                                                  void *(*start)(void *), void *arg);
OSP_PROF_HIDDEN int osp_prof__real_sigaction(int sig, const struct sigaction *act,
                                             struct sigaction *old);
/* Die of `sig` as if no handler were installed: its default action set through the real
 * sigaction, the signal unblocked in the calling thread, then raised. For a signal whose
 * default action ends the process it does not return. Async-signal-safe. */
OSP_PROF_HIDDEN void osp_prof__raise_default(int sig);

/* ---- helpers (prof_session.c) ---------------------------------------------------------- */

/* CLOCK_REALTIME now, in ns. */
OSP_PROF_HIDDEN uint64_t osp_prof__realtime_ns(void);
/* Read clock `id` into `*out` (ns). False when the clock cannot be read (for a thread's
 * CPU clock: the thread is gone). */
OSP_PROF_HIDDEN bool osp_prof__read_clock(clockid_t id, uint64_t *out);
/* One line to stderr (a newline is added), with one write(2) where possible. */
OSP_PROF_HIDDEN void osp_prof__say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- registers from a signal context (prof_arch_<arch>.c) ------------------------------- */

/* The registers the handler needs, from the interrupted context. */
struct osp_prof_regs {
    uintptr_t pc, fp, sp;
    uintptr_t lr; /* link register (arm64); 0 where there is none */
    long ret;     /* the system-call return register */
};
/* Fill `*r` from `uc` (a ucontext_t * as passed to an SA_SIGINFO handler). Pure,
 * async-signal-safe. One implementation per architecture. */
OSP_PROF_HIDDEN void osp_prof__ucontext_regs(const void *uc, struct osp_prof_regs *r);

/* ---- the handler (prof_handler.c) ------------------------------------------------------ */

/* The SIGPROF action (SA_SIGINFO) of the "sampler" engine, §(b.3). Signals that are not
 * this process's directed requests are passed to the action it replaced. */
OSP_PROF_HIDDEN void osp_prof__on_sigprof(int sig, siginfo_t *si, void *ucv);
/* Tests only (test_handler_malloc): an action that wraps osp_prof__on_sigprof and calls it,
 * accepted as the profiler's own by the replaced-handler checks (§(l.3)); NULL otherwise.
 * Set before the wrapper is installed; never written by the runtime. */
OSP_PROF_HIDDEN extern void (*osp_prof__sigprof_wrapper)(int sig, siginfo_t *si, void *ucv);
/* True when `act` is the profiler's SIGPROF action (or the tests' accepted wrapper). */
static inline bool osp_prof__own_sigprof(const struct sigaction *act) {
    return (act->sa_flags & SA_SIGINFO) &&
           (act->sa_sigaction == osp_prof__on_sigprof ||
            (osp_prof__sigprof_wrapper != NULL && act->sa_sigaction == osp_prof__sigprof_wrapper));
}

/* ---- asynchronous cancellation (§(l.3)) ------------------------------------------------ */

/* The calling thread's cancellability, saved by osp_prof__nocancel_enter. */
struct osp_prof_nocancel {
    int state, type;
};

/*
 * Make the calling thread uncancellable until osp_prof__nocancel_leave: every profiler
 * path on a program thread that takes a lock or holds a count another thread waits on
 * runs inside one (§(l.3) "never cancelled while holding a profiler lock").
 *
 * Disabling cancellation alone is not enough with glibc 2.36 (Debian 12): its SIGCANCEL
 * handler tests only the cancel *type*, so a cancellation request sent while the thread
 * was still cancellable, and delivered after it disabled cancellation, unwinds it anyway
 * (a registry mutex left locked, the thread's own exit then deadlocked on it). The type
 * is therefore switched to deferred first, which that handler does honour, then the
 * state to disabled. Two atomic operations on the thread's own descriptor, no lock:
 * usable in the SIGPROF handler too. Nests. `g` is caller-owned.
 */
static inline void osp_prof__nocancel_enter(struct osp_prof_nocancel *g) {
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &g->type);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &g->state);
}

/* close(2) and pread(2) through syscall(2), which is not a cancellation point. glibc
 * 2.36's cancellation points (close, pread, read, write, open, ...) switch the calling
 * thread to the asynchronous cancel type for the duration of the system call even when
 * cancellation is disabled, so with the SIGCANCEL handler's type-only test (above) a late
 * request could still unwind a thread inside one of them with a profiler lock held.
 * Every descriptor the profiler closes or reads under the registry mutex on a program
 * thread goes through these. Same results and errno as the libc functions. */
static inline int osp_prof__close_nc(int fd) {
#ifdef OSP_PROF_UNDER_TSAN
    /* ThreadSanitizer must see the close: it keeps its own table of descriptors, and a
     * number we closed behind its back and the program then got from open() was reported
     * as a data race between our open() and the program's close() (a fresh-clone CI
     * failure of test_env). Its interceptor ends in the libc close, a cancellation point
     * (the sanitizer builds skip the asynchronous-cancellation case). */
    return close(fd);
#else
    return (int)syscall(SYS_close, fd);
#endif
}
static inline ssize_t osp_prof__pread_nc(int fd, void *buf, size_t n, off_t off) {
    return (ssize_t)syscall(SYS_pread64, fd, buf, n, off);
}

/* Restore what osp_prof__nocancel_enter saved: the state first (a deferred thread does
 * not act on a pending request), then the type, where a pending asynchronous request is
 * acted on at once, with nothing of the profiler held any more. */
static inline void osp_prof__nocancel_leave(const struct osp_prof_nocancel *g) {
    pthread_setcancelstate(g->state, NULL);
    pthread_setcanceltype(g->type, NULL);
}

/* ---- registry (prof_registry.c) -------------------------------------------------------- */

/*
 * The sampler thread's way to take the registry mutex (ps->reg): without queueing behind
 * its sleeping waiters. Try it, and while it is held, sleep 20 µs, then twice as long
 * each time up to 1 ms, and try again. A mutex's waiters sleep in the kernel and its
 * unlock wakes the first of them, which holds everyone queued behind it until the
 * scheduler runs it: with 64 busy threads starting on 2 cores that was about 30 ms per
 * hand-off, and a sampler thread queued behind the registrations waited for over a
 * second, the mutex free nearly all along, while the rings overflowed (sched_switch
 * traces). A poller takes the mutex at its first try after it came free. Only the
 * sampler thread polls, one thread: program threads block on the mutex as usual (a
 * thousand threads polling, test_capture's threads beyond the slots ending at once under
 * ThreadSanitizer, kept the holder from running). The sleep is the system call (not the
 * C library's nanosleep, which the preload library interposes). Not in signal context.
 */
static inline void osp_prof__sampler_reg_lock(struct osp_prof_session *ps) {
    long ns = 20000;
    while (pthread_mutex_trylock(&ps->reg) != 0) {
        struct timespec ts = {0, ns};
        syscall(SYS_nanosleep, &ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
}

/* Register the calling thread (§(d)) as `fiber_id` with `label` (NULL: ""), unless it is
 * already registered in this session. Takes the registry mutex; does nothing unless the
 * session is RUNNING. Counts threads_over_limit when every slot is in use. */
OSP_PROF_HIDDEN void osp_prof__register_current(struct osp_prof_session *ps, int64_t fiber_id,
                                                const char *label);
/* Register the calling thread as a thread the program started (prof_interpose.c): like
 * osp_prof__register_current, but a later osp_prof_thread_register on the same thread
 * takes the registration over (its row gets the new fiber id and label), §(l.2). */
OSP_PROF_HIDDEN void osp_prof__register_auto(int64_t fiber_id, const char *label);
/* Resolve the C library's pthread_create and sigaction (prof_interpose.c). Outside
 * signal context; idempotent. */
OSP_PROF_HIDDEN void osp_prof__interpose_init(void);
/* The program is replacing the profiler's SIGPROF action (§(l.3)): stop every kernel
 * timer and every directed request; from now on each slot's CPU time is counted as
 * lost samples (handler_replaced), never charged to its last sample. Takes the registry
 * mutex; any program thread or the sampler thread. prof_sampler.c. */
OSP_PROF_HIDDEN void osp_prof__sigprof_replaced(struct osp_prof_session *ps);
/* Release the calling thread's slot, if it has one (§(d) unregister). Takes the registry
 * mutex with SIGPROF blocked. */
OSP_PROF_HIDDEN void osp_prof__release_current(struct osp_prof_session *ps);
/* The TLS key's destructor: a thread that exits registered is unregistered. */
OSP_PROF_HIDDEN void osp_prof__key_destructor(void *value);

/* ---- the sampler thread (prof_sampler.c) ----------------------------------------------- */

/* The sampler thread's body; `arg` is the struct osp_prof_session *. Runs until
 * ps->stop is set, then tears down (§(b.3) "Teardown"). Returns NULL. */
OSP_PROF_HIDDEN void *osp_prof__sampler_main(void *arg);
/* Turn a slot's ring entries into samples (§(b.3)). Under the registry mutex. */
OSP_PROF_HIDDEN void osp_prof__drain(struct osp_prof_session *ps, struct osp_prof_slot *s);
/* The thread stops being sampled while its CPU clock reads `c`: its CPU time since its
 * last on-CPU request goes to its last on-CPU sample. Call before
 * osp_prof__slot_abandon_request. Under the registry mutex. */
OSP_PROF_HIDDEN void osp_prof__flush_tail(struct osp_prof_session *ps, struct osp_prof_slot *s,
                                          uint64_t c);
/* Forget a pending request of a slot that stops being sampled, counting it and the
 * slot's unseen ring_full losses into `dropped` (OSP_DROP_COUNT entries). Under the
 * registry mutex. */
OSP_PROF_HIDDEN void osp_prof__slot_abandon_request(struct osp_prof_slot *s, uint64_t *dropped);
/* Close a slot's cached /proc stat descriptor if it is still ours. Under the registry
 * mutex. */
OSP_PROF_HIDDEN void osp_prof__stat_fd_release(struct osp_prof_session *ps,
                                               struct osp_prof_slot *s);
/* Thread `tid`'s /proc/self/task/<tid>/schedstat: *rq the nanoseconds it spent waiting for
 * a CPU, *runs the times it was put on a CPU (each one a context switch in). Opened, read
 * and closed (no descriptor kept). False when it cannot be read (no schedstat in this
 * kernel, the thread gone). Any thread; async-signal-unsafe (open). */
OSP_PROF_HIDDEN bool osp_prof__schedstat(pid_t tid, uint64_t *rq, uint64_t *runs);

/* ---- interrupted runs (prof_session.c), §(l.5) ------------------------------------------ */

/* term_sig's value for "a thread of the program is calling _exit" (not a signal). */
#define OSP_PROF_TERM_EXIT (-1)

/* On the sampler thread after its teardown, once a termination signal `sig` (SIGINT,
 * SIGTERM, SIGHUP, SIGPIPE whose action was the default) arrived: stop the session, write the raw
 * file (temporary + rename), restore the signal's default action and send it to the
 * process again, so the program dies of it. Returns only if the session owner is already
 * stopping the session (it writes the file). With `sig` OSP_PROF_TERM_EXIT (a thread is
 * in _exit, osp_prof__exit_now): stop, write, set exit_written and return. */
OSP_PROF_HIDDEN void osp_prof__terminate(struct osp_prof_session *ps, int sig);

/* ---- exec by the profiled process (prof_session.c) ------------------------------------- */

/* What osp_prof__exec_prepare did, for osp_prof__exec_failed. */
struct osp_prof_exec_hold {
    bool held;             /* the registry mutex is held across the exec */
    bool ign;              /* SIGPROF was left ignored (the program's action) for the exec */
    struct sigaction ours; /* with `ign`: the profiler's action, put back on failure */
};

/*
 * Right before the C library's exec (the exec interposers, prof_preload.c and
 * prof_interpose.c): when this process's session runs, make sure no SIGPROF of the
 * profiler's is pending or can be sent across the exec, into an image with no handler for
 * it (SIGPROF's default action ends the process; handlers reset at exec, pending signals
 * survive it). Takes the registry mutex, under which the sampler thread sends every
 * request, so none is sent from now on (polled, for at most 1 s: exec may be called from
 * a signal handler that interrupted this thread holding it; it then goes ahead without
 * it). Then sets SIGPROF to SIG_IGN, which discards the instances pending in every
 * thread, and back: to the program's own action when that was SIG_IGN (inherited by the
 * new image as it would be unprofiled), else to the profiler's handler (reset to SIG_DFL
 * by the exec, as the program's would be; until then it absorbs a kernel timer's signal).
 * The session keeps running. Nothing in a forked child, without a session, or when the
 * program took SIGPROF over (its action is left alone). Keeps errno.
 */
OSP_PROF_HIDDEN void osp_prof__exec_prepare(struct osp_prof_exec_hold *h);
/* After an exec that failed: undo osp_prof__exec_prepare (the profiler's action back,
 * the registry mutex released); sampling goes on. A request discarded by the prepare is
 * counted as unanswered. Keeps errno. */
OSP_PROF_HIDDEN void osp_prof__exec_failed(struct osp_prof_exec_hold *h);

/* ---- the raw writer (prof_raw_writer.c) ------------------------------------------------ */

/* Check at session start that `path` can be written as the writer will (§(l.5)): the
 * destination directory must take a new file (the body is created there now and kept in
 * `*hold` when the file system supports O_TMPFILE; otherwise a named temporary is created
 * and removed again, hold->fd = -1), a FIFO or character device is accepted as is, a
 * directory or dangling link is refused. Returns 0 or an errno value; -1 for "not a
 * regular file, character device or FIFO". */
OSP_PROF_HIDDEN int osp_prof__raw_probe(const char *path, struct osp_prof_raw_hold *hold);

/* Whether hold->fd is still the file the probe opened (same device and inode, a regular
 * file with no name): a program may have closed it and reused the number. */
OSP_PROF_HIDDEN bool osp_prof__raw_hold_ours(const struct osp_prof_raw_hold *hold);

/* Give the held body up without writing (a session that ends unwritten, a forked child's
 * copy): closed only when it is still ours; hold->fd becomes -1 either way. */
OSP_PROF_HIDDEN void osp_prof__raw_release(struct osp_prof_raw_hold *hold);

/* The temporary beside `dest` for mkostemp: "<dir>/.<base>.XXXXXX", the one scheme of
 * common/atomic_output.h (hidden, in the destination's own directory; <base> cut to 247
 * bytes so the name fits in NAME_MAX). malloc'd (free it), NULL when out of memory. */
OSP_PROF_HIDDEN char *osp_prof__raw_temp_name(const char *dest);

/* Write the session's raw profile (§(e)) to `path`, atomically where it is a regular file
 * (§(a), (k) item 14); `end_unix_ns` is the end time written. The body goes into the
 * session's held O_TMPFILE (ps->raw) when it is still ours, linked under a temporary name
 * and renamed; otherwise into a new temporary. ps->raw is consumed (closed, fd -1). On
 * failure prints one line naming the path and returns false. Session owner, after the
 * engine has stopped. */
OSP_PROF_HIDDEN bool osp_prof__write_raw(struct osp_prof_session *ps, const char *path,
                                         uint64_t end_unix_ns);

/* The descriptors of the sampler thread's probe pipe (prof_sampler.c probe_open). */
#define OSP_PROF_PROBE_FDS 2
/* The raw file's body, held for the session (struct osp_prof_raw_hold). */
#define OSP_PROF_RAW_FDS   1

/* The session's fd_budget: an eighth of the soft RLIMIT_NOFILE (2^20 when unlimited),
 * at most 10^6, less the OSP_PROF_PROBE_FDS of the probe pipe and the OSP_PROF_RAW_FDS of
 * the held raw file (0 at least). Descriptors
 * the profiler holds per thread (perf_event counters, cached /proc stat files) stay
 * within it, and with the pipe within the eighth, so a program that opens files up to its
 * limit loses at most that many (§(l.3) "its file descriptors"). */
OSP_PROF_HIDDEN int osp_prof__fd_budget(void);

/* The most cached /proc stat descriptors the sampler thread keeps (prof_sampler.c): a
 * quarter of the session's fd_budget, at most 64. That share is kept out of what the
 * perf_event counters may take (set_prep in prof_registry.c), so counters and cache
 * together stay within fd_budget whichever fills first. */
static inline int osp_prof__stat_fd_cap(const struct osp_prof_session *ps) {
    return ps->fd_budget / 4 < 64 ? ps->fd_budget / 4 : 64;
}

#endif /* OSP_PROF_SESSION_H */
