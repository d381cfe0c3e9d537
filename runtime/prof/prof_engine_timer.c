/*
 * prof_engine_timer.c — the kernel-timed sampling engines (§(l.3)): "perf_event" (one
 * perf_event_open software task-clock counter per thread, user-only, whose overflow
 * signal is routed to that thread with F_SETOWN_EX(F_OWNER_TID) + F_SETSIG(SIGPROF)) and
 * "cpu_timer" (one timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) timer per
 * thread). Both timers count the thread's own CPU time, so they fire only while it runs
 * and a blocked thread is never signalled; the handler (prof_handler.c) takes the sample
 * on the thread itself and re-arms the timer with a period drawn from [0.7p, 1.3p).
 * The sampler thread still runs (prof_sampler.c): it drains the rings and records
 * waiting samples, but never signals a thread.
 *
 * Who runs what: start/stop on the session owner under the session lock; the
 * thread_registered / thread_unregistered hooks on the thread itself under the registry
 * mutex (SIGPROF blocked while it unregisters); osp_prof__ktimer_rearm in signal context
 * on the thread; fork_child in a forked child (async-signal-safe calls only).
 *
 * Source: docs/spec/profiler.md §(l.3), §(b.3) "Teardown", §(d).
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "prof_blocked.h"
#include "prof_cfi.h"
#include "prof_session.h"

#if defined(__x86_64__)
#include <asm/perf_regs.h>
#include "prof_own_text.h"
#define PERF_RING_SUPPORTED 1
#else
#define PERF_RING_SUPPORTED 0
#endif

/* ---- perf_event ----------------------------------------------------------------------- */

_Atomic uint64_t osp_prof__sig_fds[OSP_PROF_SIG_FD_WORDS];

/* A task-clock counter of the calling thread (`tid`) that samples it every `period_ns` of
 * its user-mode CPU time, set up but not counting yet (perf_enable starts it). With
 * `ring` the samples go to a ring buffer the caller maps (perf_ring_open): each carries
 * the time, the counter's value, the kernel's frame-pointer call chain, rbp/rsp/rip and a
 * copy of the top OSP_PROF_PERF_STACK_BYTES of the stack, and the thread is never
 * interrupted for it beyond the timer itself. Without, each overflow signals the thread
 * with SIGPROF. Returns the descriptor (>= OSP_PROF_FD_MIN) or -1 with errno set. */
static int perf_open(pid_t tid, uint64_t period_ns, bool ring, bool kernel) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = period_ns;
    a.disabled = 1;
    /* Signal delivery is user-only: allowed at perf_event_paranoid 2, and never a signal
     * that becomes pending inside a system call. Counting kernel mode too was measured to
     * make blocking calls return EINTR there: an expiry on the way into a wait leaves the
     * signal pending, and the wait returns at once (bench/prof_engines.sh part 1: 992
     * EINTR in 1.5 s at 10 kHz, 27 at 997 Hz). Ring delivery sends no signal, so where
     * the kernel allows it (`kernel`: paranoid <= 1, or CAP_PERFMON) it samples kernel
     * mode too: the record still carries the user registers and stack at the system
     * call, so time in the kernel is sampled at the call that spent it instead of being
     * weighed on the next user-mode sample, wherever that lands. */
    a.exclude_kernel = ring && kernel ? 0 : 1;
    a.exclude_hv = 1;
#if PERF_RING_SUPPORTED
    if (ring) {
        a.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN |
                        PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.exclude_callchain_kernel = 1;
        a.sample_regs_user =
            1ull << PERF_REG_X86_BP | 1ull << PERF_REG_X86_SP | 1ull << PERF_REG_X86_IP;
        a.sample_stack_user = OSP_PROF_PERF_STACK_BYTES;
        a.use_clockid = 1;
        a.clockid = CLOCK_MONOTONIC;
        /* No wake-ups: the sampler thread empties the ring on its own ticks. A wake-up is
         * an interrupt on the sampled thread's core. */
        a.watermark = 1;
        a.wakeup_watermark = 0x7fffffff;
    } else
#endif
    {
        (void)ring;
        a.wakeup_events = 1;
    }
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -1;
    fd = osp_prof__fd_high(fd);
    if (fd < 0) return -1;
    if (ring) {
        if (ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0) {
            int e = errno;
            osp_prof__close_nc(fd);
            errno = e;
            return -1;
        }
        return fd;
    }
    /* Known as ours before it can signal (it is enabled later), for good. */
    osp_prof__sig_fd_mark(fd);
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
        fcntl(fd, F_SETFL, fl | O_ASYNC) != 0 || ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0) {
        int e = errno;
        osp_prof__close_nc(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Start a counter of perf_open; on failure it is closed. Returns 0 or -1 with errno.
 * `one_overflow`: for one overflow only (PERF_EVENT_IOC_REFRESH 1): the kernel disables it
 * at its first overflow, after writing that sample, and the sampler thread enables it
 * again with the next period (osp_prof__perf_ring_drain). For ring delivery only: with a
 * signal (F_SETSIG) the kernel would also send one at that overflow. */
static int perf_enable_ex(int fd, bool one_overflow) {
    int rc =
        one_overflow ? ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) : ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    if (rc == 0) return 0;
    int e = errno;
    osp_prof__close_nc(fd);
    errno = e;
    return -1;
}

/* Start a counter of perf_open (perf_enable_ex, every overflow). */
static int perf_enable(int fd) {
    return perf_enable_ex(fd, false);
}

/* ---- per-thread timers ----------------------------------------------------------------- */

/* A POSIX timer on CPU clock `clock` whose expiries send SIGPROF to slot `s`'s thread, its
 * value the slot (the handler's check), not armed. False (errno set) when refused. */
static bool posix_timer_new(struct osp_prof_slot *s, clockid_t clock, timer_t *out) {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev.sigev_value.sival_ptr = s;
#ifdef sigev_notify_thread_id
    ev.sigev_notify_thread_id = s->tid;
#else
    ev._sigev_un._tid = s->tid;
#endif
    return timer_create(clock, &ev, out) == 0;
}

/* The shortest period the kernel's software timers accept (perf: 10 µs). */
#define MIN_PERIOD_NS    10000ull
/* The shortest first period of a thread's timer, unless half the period is shorter (see
 * ktimer_first). */
#define FIRST_MIN_NS     100000ull
/* CPU time between two new draws of a perf_event counter's period (see perf_schedule):
 * signal delivery draws in the handler; ring delivery from the sampler thread, where each
 * draw costs the sampled thread an interrupt (the ioctl reaches its core), so less often. */
#define REJITTER_NS      4000000ull
/* Each draw of ring delivery interrupts the sampled thread's core and keeps the sampler
 * thread waiting for that core to answer (smp_call_function_single: it was a quarter of
 * the sampler thread's CPU with one draw per 16 ms of CPU on this virtual machine). */
#define RING_REJITTER_NS 32000000ull

/* Samples of a perf_event counter that share one drawn period: one draw per `every_ns`
 * of CPU time, at least one per sample. */
static uint32_t rejitter_every(const struct osp_prof_slot *s, uint64_t every_ns) {
    uint64_t k = every_ns / (s->h_period_ns ? s->h_period_ns : 1);
    return k < 1 ? 1 : k > 1000 ? 1000 : (uint32_t)k;
}

static bool perf_schedule(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t cpu_now,
                          uint32_t k, uint64_t *period);

/* ---- perf_event ring delivery (x86-64) ------------------------------------------------- */

static size_t page_bytes(void) {
    static size_t pg;
    if (pg == 0) {
        long v = sysconf(_SC_PAGESIZE);
        pg = v > 0 ? (size_t)v : 4096;
    }
    return pg;
}

/* Remember what the slot's perf_fd is; perf_fd_ours: it still is (§(l.3): a program may
 * close every descriptor and reuse the number). */
static void perf_fd_remember(struct osp_prof_slot *s) {
    struct stat st;
    if (fstat(s->perf_fd, &st) == 0) {
        s->perf_dev = (uint64_t)st.st_dev;
        s->perf_ino = (uint64_t)st.st_ino;
    } else {
        s->perf_dev = s->perf_ino = 0;
    }
}

static bool perf_fd_ours(const struct osp_prof_slot *s) {
    struct stat st;
    return fstat(s->perf_fd, &st) == 0 && (uint64_t)st.st_dev == s->perf_dev &&
           (uint64_t)st.st_ino == s->perf_ino;
}

/* The session's own process, not a child made by a raw fork or clone system call (which
 * runs no atfork handler, so its slots still describe the parent's counters and rings,
 * whose descriptors it shares and whose rings it does not have). */
static bool in_session_process(const struct osp_prof_session *ps) {
    return (pid_t)syscall(SYS_getpid) == atomic_load_explicit(&ps->pid, memory_order_relaxed);
}

/* A ring's data bytes for the session's rate (a power of two): room for about 25 of the
 * largest records up to 1 kHz, 50 above. */
static size_t perf_ring_bytes(uint64_t session_period_ns) {
    return session_period_ns >= 1000000 ? (size_t)256 << 10 : (size_t)512 << 10;
}

/* The longest the sampler thread may wait between two drains of a ring: the time the
 * thread needs to fill half of it with samples. */
static uint64_t perf_ring_tick_ns(const struct osp_prof_session *ps) {
    uint64_t records = perf_ring_bytes(ps->period_ns) / OSP_PROF_PERF_RECORD_MAX;
    return records / 2 * ps->period_ns;
}

/* A ring-delivery counter of thread `tid` (perf_open) with its ring mapped, sized for a
 * session sampling every `session_period_ns`: the descriptor, with the mapping in *rb and
 * its data bytes in *bytes; -1 (nothing left open) where the counter is refused or the
 * ring cannot be mapped (the locked-memory limit of an unprivileged user:
 * perf_event_mlock_kb, then RLIMIT_MEMLOCK). */
static int perf_ring_open(uint64_t session_period_ns, pid_t tid, uint64_t period_ns, bool kernel,
                          void **rb, size_t *bytes) {
    *rb = NULL;
    *bytes = 0;
    int fd = perf_open(tid, period_ns, true, kernel);
    if (fd < 0) return -1;
    size_t len = perf_ring_bytes(session_period_ns);
    /* Every page is faulted in here, on the registering thread, the control page for
     * writing too (the kernel maps it read-only until its first write): the sampler
     * thread's first access would otherwise fault, and a fault waits for the process's
     * address-space lock behind every thread mapping at the time (with 64 threads
     * starting at once the sampler thread waited up to 250 ms on its first store to a
     * new ring's data_tail, sched_switch traces). */
    void *m =
        mmap(NULL, page_bytes() + len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) {
        osp_prof__close_nc(fd);
        return -1;
    }
    __atomic_store_n(&((struct perf_event_mmap_page *)m)->data_tail, 0, __ATOMIC_RELEASE);
    *rb = m;
    *bytes = len;
    return fd;
}

static void perf_ring_unmap(struct osp_prof_slot *s) {
    if (s->perf_rb != NULL) munmap(s->perf_rb, page_bytes() + s->perf_rb_bytes);
    s->perf_rb = NULL;
    s->perf_rb_bytes = 0;
}

#if PERF_RING_SUPPORTED

/* A registered thread's live stack, read from another thread (inside its bounds, under
 * the registry mutex: mapped). Not instrumented: the words may lie in a sanitizer's
 * redzone of that thread's frames, or be written by it meanwhile. Copies [a, a + len) to
 * `to` word by word. */
__attribute__((no_sanitize("address", "thread", "undefined"), noinline)) static void
live_copy(uint8_t *to, uintptr_t a, size_t len) {
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uintptr_t w = *(const volatile uintptr_t *)(a + i);
        memcpy(to + i, &w, 8);
    }
}

/* Whether `ret`, an entry of the kernel's frame-pointer chain, is a return address into
 * an image of `set` (past a frame without a frame record the chain reads garbage). */
static bool chain_code(const struct osp_cfi_set *set, uintptr_t ret) {
    return ret >= 4096 && set != NULL && osp_prof__cfi_find(set, ret - 1) != NULL;
}

/* One stack of a ring sample: the hybrid walk over the stack copy [sp, sp + dyn) (bytes at
 * `stack`). Where the copy ended below the top of the thread's stack before the walk did,
 * what lies above it is taken from the kernel's frame-pointer chain `kc[0..kn)` (kc[0]
 * the pc, kc[i + 1] the return address in the i-th frame record from rbp), checked to be
 * this stack's, through a walk over the copy followed by the live stack (in `view`,
 * OSP_PROF_PERF_VIEW_BYTES) that must agree with it; where nothing above the copy can be
 * told, the sample is marked truncated and `*cut` set. Returns the frame count. */
static size_t perf_stack(const struct osp_prof_slot *s, const struct osp_cfi_set *set,
                         uint8_t *view, uint64_t ip, uint64_t sp, uint64_t bp, const uint8_t *stack,
                         uint64_t dyn, const uintptr_t *kc, size_t kn, uintptr_t *out, bool *trunc,
                         bool *cut) {
    size_t cap = OSP_PROF_MAX_FRAMES;
    *trunc = false;
    *cut = false;
    if (stack == NULL || dyn < 16 || sp == 0) {
        /* No registers or no copy: the kernel's chain is all there is. */
        size_t n = 0;
        for (size_t i = 0; i < kn && n < cap; i++) out[n++] = kc[i];
        *trunc = kn > cap;
        return n;
    }
    uintptr_t lo = (uintptr_t)sp, hi = (uintptr_t)(sp + dyn);
    bool on_stack = s->lo < s->hi && lo >= s->lo && lo < s->hi;
    if (on_stack && hi > s->hi) hi = s->hi;
    intptr_t d = (intptr_t)((uintptr_t)stack - lo);
    struct osp_unwind_regs r = {.pc = (uintptr_t)ip,
                                .sp = lo,
                                .fp = (uintptr_t)bp,
                                .lr = 0,
                                .pc_is_return = false,
                                .fp_known = true};
    struct osp_unwind_info info;
    size_t n = osp_prof__hybrid_walk_copy(set, &r, lo, hi, d, out, cap, trunc, &info);
    if (*trunc || n == 0 || info.end == OSP_UNWIND_ROOT) return n;
    if (!on_stack || hi >= s->hi) {
        /* The copy reached the top of the thread's stack: the walk is whole. Off the
         * registered stack (a makecontext or alternate stack), a copy that was cut says
         * nothing of what lies above it. */
        if (!on_stack && dyn >= OSP_PROF_PERF_STACK_BYTES) *trunc = true;
        return n;
    }
    /* The copy ended below the top of the thread's stack, and the walk there. What lies
     * above it is known for certain only from the kernel's frame-pointer chain, taken at
     * the sample: it must be this stack's (its records in the copy are those the walk
     * followed: the same return addresses, and the walk's last frame is the chain's last
     * one in the copy), or nothing above the copy can be told (the leaf's rbp was not a
     * frame pointer): the sample is cut there, marked truncated, and counted against the
     * thread (*cut). */
    *trunc = true;
    uintptr_t b = (uintptr_t)bp;
    size_t idx = 0;
    while (idx + 1 < kn && (b & 7u) == 0 && b >= lo && b <= hi - 16) {
        uintptr_t next, ret;
        memcpy(&next, (const void *)(b + (uintptr_t)d), sizeof next);
        memcpy(&ret, (const void *)(b + 8 + (uintptr_t)d), sizeof ret);
        if (ret != kc[idx + 1] || ret == 0) break;
        idx++;
        b = next;
    }
    /* A frame record whose return address is 0 is the outermost frame (the runtime's
     * fiber entry zeroes its own, so that walks end there). When the chain, agreeing with
     * the copy's records up to the walk's last frame, shows that record right after it,
     * the walk is whole: the walk read the record in the copy and stopped there, or the
     * copy ended below it and the kernel read it (the record of the function the walk's
     * last frame returns into, when that function keeps the chain). */
    if (idx > 0 && idx + 1 < kn && kc[idx + 1] == 0 && out[n - 1] == kc[idx] &&
        (b < hi ? info.end == OSP_UNWIND_CHAIN_END : osp_prof__keeps_chain(set, out[n - 1]))) {
        *trunc = false;
        return n;
    }
    /* No record of the chain lies in the copy: the first is above it (a function with
     * more than the copy's bytes of locals below its frame record -- a buffer on the
     * stack -- that called a function without one, memcpy or a system call's wrapper).
     * Only the walk over the live stack can join the two, below, and only where the chain
     * names code above that record: the live walk must agree with it there, or an rbp
     * that is no frame pointer (the chain then ends at once) would let a live stack that
     * has moved on since the sample stand unchecked. */
    bool above = idx == 0 && b >= hi && (b & 7u) == 0 && b <= s->hi - 16 && kn >= 2 &&
                 chain_code(set, kc[1]);
    if (!above && (idx == 0 || b < hi || b > s->hi - 16 || out[n - 1] != kc[idx])) {
        *cut = true;
        return n;
    }
    /* The chain above the copy is right for frames with frame records and turns to
     * garbage at the first frame without one (whose rbp it reads). So the walk is taken
     * again over the copy followed by the live stack above it (read now: the thread
     * cannot exit, the registry mutex is held), which steps through such frames by their
     * CFI, and kept if it agrees with every return address of the chain above the copy
     * up to the first one that is not code (the chain's garbage): then the thread is
     * still inside those frames, and the outer ones are the sample's. */
    uintptr_t top = s->hi - lo > OSP_PROF_PERF_VIEW_BYTES ? lo + OSP_PROF_PERF_VIEW_BYTES : s->hi;
    hi &= ~(uintptr_t)7;
    if (top > hi) {
        memcpy(view, stack, hi - lo);
        live_copy(view + (hi - lo), hi, top - hi);
        uintptr_t all[OSP_PROF_MAX_FRAMES];
        bool all_trunc;
        struct osp_unwind_info all_info;
        size_t m = osp_prof__hybrid_walk_copy(set, &r, lo, top, (intptr_t)((uintptr_t)view - lo),
                                              all, cap, &all_trunc, &all_info);
        bool agree = m > n && all[n - 1] == out[n - 1];
        size_t i = n, k = idx + 1;
        for (; agree && i < m && k < kn; i++, k++) {
            if (!chain_code(set, kc[k])) break;
            if (all[i] != kc[k]) agree = false;
        }
        /* A walk that ended short of its root while the chain still names code ended in
         * the live stack's newer contents: the thread returned past those frames between
         * the sample and this read (the drain at a session's end, or a late tick under
         * load, after a deep call returned) and rewrote them. Such walks looked whole --
         * read to the top of the stack, not truncated -- with the outer frames missing
         * (test_ring's deep case under load: 56 of its 63 frames, kept untruncated). */
        if (agree && i == m && all_info.end != OSP_UNWIND_ROOT && k < kn && chain_code(set, kc[k]))
            agree = false;
        if (agree) {
            memcpy(out, all, m * sizeof *out);
            *trunc = all_trunc || (all_info.end != OSP_UNWIND_ROOT && top < s->hi);
            return m;
        }
    }
    if (above) {
        /* The walk's last frame is not known to be the one whose record the chain starts
         * at, so the chain cannot be joined to it without the live walk. */
        *cut = true;
        return n;
    }
    /* The live stack moved on (a late drain: the thread returned past those frames), or
     * the chain named code where the live walk did not. The chain alone is certain when
     * every function it passes keeps the frame chain at its calls (Osprey code, the
     * runtime) and it ends in a zero return address (a fiber's entry): taken whole.
     * Under load such fiber samples were cut, and their thread moved to signal delivery. */
    size_t k0 = idx + 1, ke = k0;
    bool certain = osp_prof__keeps_chain(set, out[n - 1]);
    for (; certain && ke < kn && kc[ke] != 0; ke++) certain = osp_prof__keeps_chain(set, kc[ke]);
    if (certain && ke < kn && n + (ke - k0) <= cap) {
        for (size_t j = k0; j < ke; j++) out[n++] = kc[j];
        *trunc = false;
        return n;
    }
    /* Otherwise the chain, as far as it names code, still cut (marked truncated and
     * counted). */
    *cut = true;
    for (size_t k = idx + 1; k < kn && n < cap; k++) {
        if (!chain_code(set, kc[k])) break;
        out[n++] = kc[k];
    }
    return n;
}

/* How often the sampler thread reads a ring-delivery counter together with its thread's
 * CPU clock (slot perf_ca/perf_va/perf_rho). Reading a running thread's counter from
 * another thread interrupts that thread's core (the kernel brings the count up to date
 * there) and keeps the sampler thread waiting for it, so it is done at most this often:
 * every CALIBRATE_NS for a thread's first CALIBRATE_EARLY readings (its ratio settles),
 * then every CALIBRATE_LATE_NS. */
#define CALIBRATE_NS      50000000ull
#define CALIBRATE_LATE_NS 200000000ull
#define CALIBRATE_EARLY   4

/* Read the counter and the thread's CPU clock together (the counter first: the clock is
 * read within microseconds after) and move the anchor there, with the ratio of the two
 * clocks' advance since the previous anchor; windows under 2 ms of counter time only
 * move nothing. Under the registry mutex. */
static void perf_calibrate(struct osp_prof_slot *s, uint64_t now) {
    s->perf_cal_t = now;
    uint64_t v, c;
    if (!perf_fd_ours(s) || syscall(SYS_read, s->perf_fd, &v, sizeof v) != (long)sizeof v) return;
    if (!osp_prof__read_clock(s->cpu_clock, &c)) return;
    if (now > s->perf_anchor_t + 10000000 && c >= s->perf_ca) {
        double share = (double)(c - s->perf_ca) / (double)(now - s->perf_anchor_t);
        s->perf_share = share > 1 ? 1 : share;
    }
    if (v < s->perf_va + 2000000 || c <= s->perf_ca) return;
    double rho = (double)(c - s->perf_ca) / (double)(v - s->perf_va);
    /* A counter never runs slower than the CPU clock by more than the reading's own
     * jitter; steal beyond half of the time is not believed either. */
    s->perf_rho = rho > 1.01 ? 1.01 : rho < 0.5 ? 0.5 : rho;
    s->perf_ca = c;
    s->perf_va = v;
    s->perf_anchor_t = now;
    if (s->perf_cal_n < CALIBRATE_EARLY) s->perf_cal_n++;
}

/* The thread's CPU clock when its counter read `v` (see perf_calibrate). */
static uint64_t perf_cpu_at(const struct osp_prof_slot *s, uint64_t v) {
    double d = ((double)v - (double)s->perf_va) * s->perf_rho;
    double c = (double)s->perf_ca + d;
    return c <= 0 ? 0 : (uint64_t)c;
}

/* Read the 8-byte word at `off` of a record of `size` bytes. */
static bool rec_u64(const uint8_t *rec, size_t size, size_t *off, uint64_t *v) {
    if (*off > size || size - *off < 8) return false;
    memcpy(v, rec + *off, 8);
    *off += 8;
    return true;
}

/* Ring samples a thread may have cut at the copy before it is moved to signal delivery:
 * the first. Each cut sample is a truncated stack in the profile; a thread that cuts once
 * (the collector's marker threads, whose mark stack is a 64 KiB local under frames without
 * frame records) cuts again, and 8 cuts per marker thread left 3.7 % of an allocating
 * Osprey program's CPU weight in truncated stacks (bench/unwind.sh). */
#define CUT_LIMIT 1

/* One PERF_RECORD_SAMPLE (layout: perf_open's sample_type, in the kernel's order: time,
 * counter value, call chain, user registers, user stack) into the store. Returns false
 * for a record too short for its fields (nothing recorded). `*cpu_out`: the thread's CPU
 * clock at the sample. */
static bool perf_sample(struct osp_prof_session *ps, struct osp_prof_slot *s,
                        const struct osp_cfi_set *set, const uint8_t *rec, size_t size,
                        uint64_t *cpu_out) {
    size_t off = sizeof(struct perf_event_header);
    uint64_t t, value, nr, abi, bp = 0, sp = 0, ip = 0, ssize, dyn = 0;
    if (!rec_u64(rec, size, &off, &t) || !rec_u64(rec, size, &off, &value) ||
        !rec_u64(rec, size, &off, &nr) || nr > (size - off) / 8)
        return false;
    uintptr_t kc[OSP_PROF_MAX_FRAMES + 1];
    size_t kn = 0;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t v;
        memcpy(&v, rec + off + 8 * i, 8);
        if (v >= (uint64_t)PERF_CONTEXT_MAX) continue; /* context markers */
        if (kn < sizeof kc / sizeof *kc) kc[kn++] = (uintptr_t)v;
    }
    off += (size_t)nr * 8;
    if (!rec_u64(rec, size, &off, &abi)) return false;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE &&
        (!rec_u64(rec, size, &off, &bp) || !rec_u64(rec, size, &off, &sp) ||
         !rec_u64(rec, size, &off, &ip)))
        return false;
    if (!rec_u64(rec, size, &off, &ssize)) return false;
    const uint8_t *stack = NULL;
    if (ssize != 0) {
        if (ssize > size - off) return false;
        stack = rec + off;
        off += (size_t)ssize;
        if (!rec_u64(rec, size, &off, &dyn)) return false;
        if (dyn > ssize) dyn = ssize;
    }
    uint64_t cpu = perf_cpu_at(s, value);
    *cpu_out = cpu;
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
    bool trunc = false, cut = false;
    size_t n = 0;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE && ip >= 4096)
        n = perf_stack(s, set, ps->perf_view, ip, sp, bp, stack, dyn, kc, kn, pcs, &trunc, &cut);
    else
        n = perf_stack(s, set, ps->perf_view, 0, 0, 0, NULL, 0, kc, kn, pcs, &trunc, &cut);
    if (cut) {
        s->perf_cut++;
        if (s->perf_cut >= CUT_LIMIT && !s->perf_stays && s->sm.last_on >= 0 &&
            !atomic_load_explicit(&ps->handler_lost, memory_order_relaxed))
            /* Its thread moves to signal delivery after this read: the sample is not
             * kept with a truncated stack, its CPU time goes to the thread's next sample
             * (a whole stack, walked live by the handler) or, if the thread ends first,
             * to its last one (osp_prof__flush_tail: the CPU time since the last recorded
             * sample), and it counts as a sample the rate asked for and that was not
             * taken (cpu_unsampled). A thread with no sample yet keeps it, truncated:
             * its CPU time would have no sample to go to. */
            return true;
    }
    uint64_t weight = cpu > s->h_cpu_last ? cpu - s->h_cpu_last : 0;
    if (cpu > s->h_cpu_last) s->h_cpu_last = cpu;
    osp_prof__record_timer_sample(ps, s, t, cpu, weight, pcs, (uint32_t)n, trunc);
    return true;
}

/* CPU time between two draws of a ring-delivery counter's period: RING_REJITTER_NS for a
 * thread that keeps its core, less for one that is seldom on a CPU (its share of a core,
 * perf_share), down to REJITTER_NS. A draw interrupts the thread's core only while the
 * thread runs there, so the interruptions per second of wall time stay what they are for
 * a busy thread; and each draw makes up the samples lost since the previous one (the
 * schedule's catch-up): with 64 busy threads on 2 cores, each running about 70 ms of
 * CPU in 2 s, draws every 32 ms of CPU made up little of what the kernel drops (0.971 to
 * 0.979 of the rate in 6 runs). */
static uint64_t ring_rejitter_ns(const struct osp_prof_slot *s) {
    double ns = (double)RING_REJITTER_NS * s->perf_share;
    return ns < (double)REJITTER_NS ? REJITTER_NS : (uint64_t)ns;
}

/* Turn the records the kernel wrote since the last call into samples. Returns true with
 * `*period` (in the thread's CPU clock) when a group of samples ended: the counter's next
 * period is due. */
static bool perf_ring_read(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t *period) {
    struct perf_event_mmap_page *pg = s->perf_rb;
    size_t size = s->perf_rb_bytes;
    const uint8_t *data =
        (const uint8_t *)s->perf_rb + (pg->data_offset ? pg->data_offset : page_bytes());
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = pg->data_tail;
    const struct osp_cfi_set *set = NULL;
    bool entered = false, draw = false;
    uint32_t k = rejitter_every(s, ring_rejitter_ns(s));
    while (head - tail >= sizeof(struct perf_event_header)) {
        size_t at = (size_t)(tail & (size - 1));
        struct perf_event_header h;
        memcpy(&h, data + at, sizeof h); /* records are 8-byte multiples: never split */
        if (h.size < sizeof h || h.size > head - tail) break;
        const uint8_t *rec = data + at;
        if (at + h.size > size) {
            if (h.size > sizeof ps->perf_scratch) {
                tail += h.size;
                continue;
            }
            size_t first = size - at;
            memcpy(ps->perf_scratch, rec, first);
            memcpy(ps->perf_scratch + first, data, h.size - first);
            rec = ps->perf_scratch;
        }
        if (h.type == PERF_RECORD_SAMPLE) {
            if (!entered) {
                set = osp_prof__cfi_acquire();
                entered = true;
            }
            uint64_t cpu, p;
            if (perf_sample(ps, s, set, rec, h.size, &cpu) && perf_schedule(ps, s, cpu, k, &p)) {
                draw = true;
                *period = p;
            }
        } else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
            /* Samples the kernel had no room for: ring_full (their CPU time is in the next
             * sample's weight, the counter's value being cumulative). */
            uint64_t lost;
            memcpy(&lost, rec + 16, sizeof lost);
            atomic_fetch_add_explicit(&s->ring_full, lost, memory_order_relaxed);
        }
        tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
    if (entered) osp_prof__cfi_release();
    return draw;
}

/* Take a thread off its ring: its counter stopped, the records the kernel wrote made
 * samples (h_cpu_last: the CPU clock at the last), the ring unmapped and the counter
 * closed if the descriptor is still ours. The slot keeps perf_fd -1 and its place in the
 * descriptor budget (perf_fds). Sampler thread, under the registry mutex. */
static void ring_retire(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    bool ours = perf_fd_ours(s);
    if (ours) ioctl(s->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t period;
    (void)perf_ring_read(ps, s, &period);
    perf_ring_unmap(s);
    s->ring_delivery = false;
    if (ours) osp_prof__close_nc(s->perf_fd);
    s->perf_fd = -1;
}

/* Move a thread whose stacks the copy keeps cutting (deep stacks under code without
 * frame records: its ring samples cannot tell what lies above the copy) to signal
 * delivery: a new counter of that thread that signals it, opened here, enabled once the
 * ring counter is stopped and emptied. Its handler then walks the whole live stack. On
 * any failure the thread keeps its ring. Sampler thread, under the registry mutex. */
static void perf_to_signal(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    int fd = perf_open(s->tid, ps->period_ns, false, false);
    if (fd < 0) {
        s->perf_stays = true;
        return;
    }
    ring_retire(ps, s);
    s->h_left = 1; /* the handler's first sample draws a period */
    s->perf_fd = fd;
    perf_fd_remember(s);
    /* Published to the handler, which reads ktimer_kind before perf_fd and the h_* fields
     * (the counter cannot fire before it is enabled, but that order goes through the
     * kernel, which a race detector does not see). */
    atomic_store_explicit(&s->ktimer_kind, OSP_KTIMER_PERF, memory_order_release);
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        atomic_store_explicit(&s->ktimer_armed, 0, memory_order_release);
        s->ktimer_kind = OSP_KTIMER_NONE;
        osp_prof__close_nc(fd);
        s->perf_stays = true;
    }
}

/* A per-thread task-clock counter costs its thread at every context switch: the kernel
 * stops the counter's timer when the thread leaves its CPU and starts it again when it
 * comes back, two timer reprogrammings, each a trip through the hypervisor in a virtual
 * machine. A two-fiber channel ping-pong (about 120,000 switches) ran 0.16 s unprofiled
 * and 1.06 s with the counters (perf record, whose events are per thread too: 1.10 s),
 * 0.19 s with CPU-time timers, which the kernel checks at its tick and which cost nothing
 * at a switch. So a ring-delivered thread that switches in more than SWITCH_HZ_MAX times
 * a second of wall time (switches_often) moves to a CPU-time
 * timer for the rest of its life: at most CONFIG_HZ samples per CPU-second, each
 * weighed with the CPU time since the previous one, and its system calls sampled where
 * the signal arrives, on their return. Only voluntary switches count (the thread
 * blocked): a busy thread preempted on an overloaded machine passed 2,000 a second. */
#define SWITCH_HZ_MAX     2000
/* A rate no start-up reaches (its one window over 1,000/s was 1,040/s; a channel
 * ping-pong switches 20,000-70,000 times a second): over it for SWITCH_AT_ONCE_NS is
 * enough, so a short-lived thread that switches from its start moves at the first tick
 * 20 ms into its first window, not after two whole windows. */
#define SWITCH_HZ_AT_ONCE 10000
#define SWITCH_AT_ONCE_NS 20000000ull
#define SWITCH_CHECK_NS   200000000ull
#define SWITCH_EARLY_NS   50000000ull
#define SWITCH_EARLY      4

/* The number after `key` (with its leading newline, e.g. "\nSigBlk:") in thread `tid`'s
 * /proc/self/task/<tid>/status, read in `base`. False when the file or the line cannot be
 * read. */
static bool status_number(pid_t tid, const char *key, int base, unsigned long long *out) {
    char path[OSP_PROF_TASK_PATH_MAX];
    osp_prof__task_path(path, tid, "status");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[4096];
    ssize_t n = osp_prof__pread_nc(fd, buf, sizeof buf - 1, 0);
    osp_prof__close_nc(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *p = strstr(buf, key);
    if (p == NULL) return false;
    *out = strtoull(p + strlen(key), NULL, base);
    return true;
}

/* Whether thread `tid` blocks SIGPROF now (its SigBlk mask; true when it cannot be read):
 * its timer's signals would stay pending, and ring delivery needs none. */
static bool sigprof_blocked(pid_t tid) {
    unsigned long long mask;
    if (!status_number(tid, "\nSigBlk:", 16, &mask)) return true;
    return (mask >> (SIGPROF - 1)) & 1;
}

/* The voluntary context switches of thread `tid` so far (voluntary_ctxt_switches): the
 * times it blocked. False when they cannot be read. */
static bool voluntary_switches(pid_t tid, uint64_t *out) {
    unsigned long long v;
    if (!status_number(tid, "\nvoluntary_ctxt_switches:", 10, &v)) return false;
    *out = v;
    return true;
}

/* Move a ring-delivered thread to a POSIX CPU-time timer on its own CPU clock (created
 * here, on the sampler thread, delivered to the thread), once its counter is stopped and
 * its ring emptied. On failure it keeps its counter. Sampler thread, under the registry
 * mutex. */
static void perf_to_cpu_timer(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    timer_t tm;
    if (sigprof_blocked(s->tid) || !posix_timer_new(s, s->cpu_clock, &tm)) {
        s->sw_stays = true;
        return;
    }
    atomic_store_explicit(&s->ktimer_armed, 0, memory_order_release);
    ring_retire(ps, s);
    if (ps->perf_fds > 0) ps->perf_fds--; /* a CPU-time timer holds no descriptor */
    uint64_t c;
    s->posix_timer = tm;
    if (!osp_prof__read_clock(s->cpu_clock, &c)) c = s->h_cpu_last;
    uint64_t first = osp_prof__jitter_ns(&s->h_rng, s->h_period_ns);
    /* The handler reads ktimer_kind and posix_timer when the timer fires, after this. */
    s->h_next_due = c + first;
    atomic_store_explicit(&s->ktimer_kind, OSP_KTIMER_POSIX, memory_order_release);
    atomic_store_explicit(&s->ktimer_armed, 1, memory_order_release);
    struct itimerspec its = {
        {0, 0}, {(time_t)(s->h_next_due / 1000000000ull), (long)(s->h_next_due % 1000000000ull)}};
    if (timer_settime(tm, TIMER_ABSTIME, &its, NULL) != 0) {
        atomic_store_explicit(&s->ktimer_armed, 0, memory_order_release);
        timer_delete(tm);
        s->ktimer_kind = OSP_KTIMER_NONE;
    }
}

/* Whether a ring-delivered thread switches often enough to move: more than SWITCH_HZ_MAX
 * voluntary switches (blocking: a preempted busy thread's switches are not, and on an
 * overloaded machine they passed 2,000 a second and moved busy threads to the coarser
 * timer) a second in two windows in a row (a thread's start-up alone -- the session's
 * own start, the collector's first collections -- gave one window over 1,000/s), or more
 * than SWITCH_HZ_AT_ONCE in one. Windows
 * last SWITCH_EARLY_NS for a thread's first SWITCH_EARLY windows, so one that switches
 * from its start moves after about 50-100 ms, then SWITCH_CHECK_NS (one read of its
 * status per window). */
/* Start a switch-rate window at `now` from these readings (`runs_ok`/`all_ok`: read). */
static void sw_window(struct osp_prof_slot *s, uint64_t now, bool runs_ok, uint64_t runs,
                      bool all_ok, uint64_t all) {
    s->sw_t = now;
    s->sw_runs_ok = runs_ok;
    s->sw_runs = runs;
    s->sw_all_ok = all_ok;
    s->sw_all = all;
}

static bool switches_often(struct osp_prof_slot *s, uint64_t now) {
    bool early = s->sw_checks < SWITCH_EARLY;
    uint64_t window = early ? SWITCH_EARLY_NS : SWITCH_CHECK_NS;
    uint64_t elapsed = now - s->sw_t;
    /* In a thread's first windows the rate so far is read at every drain once
     * SWITCH_AT_ONCE_NS of the window have passed: over SWITCH_HZ_AT_ONCE, it moves. */
    if (s->sw_known && elapsed < (early ? SWITCH_AT_ONCE_NS : window)) return false;
    bool ends = elapsed >= window;
    /* Every voluntary switch is also a run on a CPU (schedstat, three numbers), so while
     * the runs stay under the rate that matters here the voluntary switches do too, and
     * their count (status: a page of text, which takes the address-space lock) is not
     * read. That read was a quarter of the sampler thread's CPU with 16 busy threads on 2
     * cores, each read at every drain of its first windows. */
    uint64_t rq, all = 0;
    bool all_ok = osp_prof__schedstat(s->tid, &rq, &all);
    if (s->sw_known && all_ok && s->sw_all_ok) {
        double runs_ns = all > s->sw_all ? (double)(all - s->sw_all) * 1e9 : 0;
        double hz = (double)(ends ? SWITCH_HZ_MAX : SWITCH_HZ_AT_ONCE);
        if (runs_ns <= hz * (double)elapsed) {
            if (!ends) return false;
            /* The window ends under the rate; the next one starts without a status read,
             * its voluntary switches unknown until the runs pass the rate. */
            if (s->sw_checks < 255) s->sw_checks++;
            s->sw_over = false;
            sw_window(s, now, false, s->sw_runs, true, all);
            return false;
        }
    }
    uint64_t runs;
    if (!voluntary_switches(s->tid, &runs)) return false;
    if (s->sw_known && !s->sw_runs_ok) {
        /* Runs passed the rate in a window begun without a status read: what part of them
         * was voluntary is measured from now, in windows as short as a new thread's (a
         * thread that starts switching late moves as soon as one that switches from its
         * start). */
        s->sw_checks = 0;
        s->sw_over = false;
        sw_window(s, now, true, runs, all_ok, all);
        return false;
    }
    double switched = s->sw_known && runs > s->sw_runs ? (double)(runs - s->sw_runs) * 1e9 : 0;
    if (switched > (double)SWITCH_HZ_AT_ONCE * (double)elapsed) return true;
    if (s->sw_known && !ends) return false; /* the window goes on */
    bool over = switched > (double)SWITCH_HZ_MAX * (double)elapsed;
    if (s->sw_known && s->sw_checks < 255) s->sw_checks++;
    bool often = over && s->sw_over;
    s->sw_over = over;
    s->sw_known = true;
    sw_window(s, now, true, runs, all_ok, all);
    return often;
}

void osp_prof__perf_ring_drain(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    if (s->perf_rb == NULL || !in_session_process(ps)) return;
    uint64_t now = osp_prof__mono_ns();
    if (now - s->perf_cal_t >= (s->perf_cal_n < CALIBRATE_EARLY ? CALIBRATE_NS : CALIBRATE_LATE_NS))
        perf_calibrate(s, now);
    uint64_t period = 0;
    bool draw = perf_ring_read(ps, s, &period);
    bool armed = atomic_load_explicit(&s->ktimer_armed, memory_order_acquire);
    if (armed && s->perf_cut >= CUT_LIMIT && !s->perf_stays && !atomic_load(&ps->handler_lost)) {
        perf_to_signal(ps, s);
        return;
    }
    if (armed && !s->sw_stays && !atomic_load(&ps->handler_lost) && switches_often(s, now)) {
        perf_to_cpu_timer(ps, s);
        return;
    }
    if (draw && armed && perf_fd_ours(s)) {
        /* The schedule is in the thread's CPU clock; the counter's period in its own. */
        double pc = (double)period / s->perf_rho;
        period = pc < (double)MIN_PERIOD_NS ? MIN_PERIOD_NS : (uint64_t)pc;
        ioctl(s->perf_fd, PERF_EVENT_IOC_PERIOD, &period);
        /* The first sample drew (h_left was 1): a counter started for one overflow
         * stopped there, and runs again from now with that period. */
        if (s->perf_limited) {
            s->perf_limited = false;
            ioctl(s->perf_fd, PERF_EVENT_IOC_ENABLE, 0);
        }
    }
}

#else

void osp_prof__perf_ring_drain(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    (void)ps;
    (void)s;
}

#endif /* PERF_RING_SUPPORTED */

/* A thread's jitter state and the CPU time from its registration to its first sample. */
static void ktimer_first(pid_t tid, uint64_t period_ns, uint64_t *rng, uint64_t *first) {
    uint64_t r = osp_prof__mono_ns() ^ ((uint64_t)tid << 20) ^ 0x9E3779B97F4A7C15ull;
    if (r == 0) r = 1;
    /* The first due time comes from the residual distribution of the periods, so the
     * expected count of a thread's samples is its CPU time over the period from its
     * start: a thread of a third of a period has one chance in three of a sample, which
     * then weighs its CPU time. It was once floored at half a period, and threads (or
     * fibers) shorter than that were never sampled: 3,000 threads of 0.3 ms each showed
     * none of their 0.9 s at 997 Hz, only cpu_unsampled. The floor is now FIRST_MIN_NS
     * (at most half a period): a counter that expires again and again while its thread is
     * still in the kernel (on its way out of the ioctl that enabled it) is dropped each
     * time but costs a timer interrupt each time, and with a first period of 10 µs
     * threads were measured spending hundreds of milliseconds of CPU in that interrupt
     * storm (64 threads at 997 Hz on this virtual machine); 50 µs (half of 10 kHz's
     * period) never showed it. A ring counter with a first period under half a period
     * stops after its first overflow (perf_enable_ex), so the short period is not
     * repeated until the sampler thread's next drain. */
    uint64_t f = osp_prof__first_due_ns(&r, period_ns);
    uint64_t floor_ns = period_ns / 2 < FIRST_MIN_NS ? period_ns / 2 : FIRST_MIN_NS;
    if (f < floor_ns) f = floor_ns;
    if (f < MIN_PERIOD_NS) f = MIN_PERIOD_NS;
    *rng = r;
    *first = f;
}

/* The perf_event engine's thread_prepare (prof_session.h): on the registering thread,
 * outside the registry mutex, its counter opened with the first period and not counting,
 * with ring delivery where the session has it (p->ring), else one that signals the thread
 * (p->signal_ok). */
static void perf_prepare(struct osp_prof_ktimer_prep *p, pid_t tid) {
    p->fd = -1;
    p->rb = NULL;
    p->rb_bytes = 0;
    ktimer_first(tid, p->period_ns, &p->rng, &p->first);
    if (!p->perf_ok) return; /* over the descriptor budget: a CPU-time timer instead */
    if (p->ring)
        p->fd = perf_ring_open(p->period_ns, tid, p->first, p->kernel, &p->rb, &p->rb_bytes);
    if (p->fd < 0 && p->signal_ok) p->fd = perf_open(tid, p->first, false, false);
}

void osp_prof__ktimer_prep_release(struct osp_prof_ktimer_prep *p) {
    if (p->rb != NULL) munmap(p->rb, page_bytes() + p->rb_bytes);
    if (p->fd >= 0) osp_prof__close_nc(p->fd);
    p->rb = NULL;
    p->rb_bytes = 0;
    p->fd = -1;
}

/* Give the calling thread (slot `s`, already active) its timer of `kind`: for
 * OSP_KTIMER_PERF the counter `p` prepared (taken out of it; none: the slot keeps no
 * timer), for OSP_KTIMER_POSIX a new timer. On failure the slot keeps OSP_KTIMER_NONE. */
static void ktimer_create(struct osp_prof_session *ps, struct osp_prof_slot *s, int kind,
                          struct osp_prof_ktimer_prep *p) {
    s->ktimer_kind = OSP_KTIMER_NONE;
    s->ring_delivery = false;
    s->h_period_ns = ps->period_ns;
    uint64_t first;
    if (kind == OSP_KTIMER_PERF) {
        s->h_rng = p->rng;
        first = p->first;
    } else {
        ktimer_first(s->tid, ps->period_ns, &s->h_rng, &first);
    }
    s->h_cpu_last = s->sm.cpu_req; /* the CPU clock read at registration */
    s->h_next_due = s->h_cpu_last + first;
    /* perf_event: the first sample draws the first real period (the kernel keeps the
     * period it was opened with until told otherwise). */
    s->h_left = 1;
    if (kind == OSP_KTIMER_PERF) {
        if (p->fd < 0) return;
        int fd = p->fd;
        void *rb = p->rb;
        size_t bytes = p->rb_bytes;
        p->fd = -1;
        p->rb = NULL;
        p->rb_bytes = 0;
        s->ring_delivery = rb != NULL;
        s->sm.perf_timed = true;
        /* The slot knows its counter before the counter runs: a signal of it that the
         * handler did not recognise would not re-arm it, and with a period shorter than
         * a signal's round trip (delivery, handler, sigreturn: over 70 µs on a loaded
         * virtual machine) the thread then took signal after signal at the same
         * instruction -- threads were measured spending seconds of CPU inside their
         * registration at 10 kHz. */
        s->perf_fd = fd;
        perf_fd_remember(s);
        s->perf_rb = rb;
        s->perf_rb_bytes = bytes;
        s->perf_cut = 0;
        s->perf_stays = false;
        s->sw_known = false;
        s->sw_runs_ok = false;
        s->sw_all_ok = false;
        s->sw_checks = 0;
        s->sw_over = false;
        s->sw_stays = false;
        if (rb != NULL) {
            /* The counter reads 0 at this clock reading. */
            if (!osp_prof__read_clock(CLOCK_THREAD_CPUTIME_ID, &s->perf_ca))
                s->perf_ca = s->h_cpu_last;
            s->perf_va = 0;
            s->perf_rho = 1.0;
            s->perf_cal_n = 0;
            s->perf_cal_t = s->perf_anchor_t = osp_prof__mono_ns();
            s->perf_share = 1.0;
        }
        s->ktimer_kind = kind;
        atomic_store_explicit(&s->ktimer_armed, 1, memory_order_release);
        /* A short first period of ring delivery is for one overflow only: the kernel would
         * keep it until the sampler thread's drain sets the next (perf_ring_drain). */
        s->perf_limited = rb != NULL && first < ps->period_ns / 2;
        if (perf_enable_ex(fd, s->perf_limited) != 0) {
            atomic_store_explicit(&s->ktimer_armed, 0, memory_order_release);
            s->ktimer_kind = OSP_KTIMER_NONE;
            perf_ring_unmap(s);
            osp_prof__close_nc(fd);
            s->perf_fd = -1;
            return;
        }
        p->perf_ok = false; /* the descriptor reserved for it is the slot's (ktimer_disarm) */
        return;
    } else {
        if (!posix_timer_new(s, CLOCK_THREAD_CPUTIME_ID, &s->posix_timer)) return;
        struct itimerspec its = {{0, 0},
                                 {(time_t)(first / 1000000000ull), (long)(first % 1000000000ull)}};
        if (timer_settime(s->posix_timer, 0, &its, NULL) != 0) {
            timer_delete(s->posix_timer);
            return;
        }
    }
    s->ktimer_kind = kind;
    atomic_store_explicit(&s->ktimer_armed, 1, memory_order_release);
}

/* One more sample of a perf_event counter, taken when the thread's CPU clock read
 * `cpu_now`; `k` samples share a drawn period. Returns true with `*period` when this
 * sample ends a group: the counter's next period (PERF_EVENT_IOC_PERIOD), else false.
 * Async-signal-safe (the signal delivery's handler; the sampler thread for ring delivery).
 *
 * The kernel restarts the counter's timer by itself at every overflow, from the overflow,
 * with the current period, whatever the signal's delivery and the handler cost. Setting a
 * new period restarts the timer from the ioctl instead, and the ioctl was measured at
 * about 15 µs of CPU time (two timer reprogrammings; more in a virtual machine): drawn
 * for every sample, it cost 15 % of the CPU and 12 % of the samples at 10 kHz, 1.5 % of
 * both at 997 Hz. So a period is drawn once per group of k samples and the samples in
 * between keep it (docs/profiler-runtime.md "Sampling engines").
 *
 * Samples are due on a schedule of CPU-time deadlines, as with cpu_timer: the sample that
 * draws a period was due at h_next_due, and the next one that draws is due k periods
 * later. The period set now is the drawn one less 1/k of this sample's lateness, so the
 * schedule, not the kernel's timer, decides the long-run count: one sample per period of
 * the thread's CPU clock. Without it, 2.5 to 4 % of the samples were missing (measured,
 * bench/prof_engines.sh): expiries the kernel drops while the thread is in kernel mode
 * (exclude_kernel; counting kernel mode too made blocking calls return EINTR), a second
 * overflow while the first signal is pending (coalesced), and the elapsed part of a
 * period each ioctl throws away (with ring delivery the ioctl comes from the sampler
 * thread, after the group's last sample: the time since that sample is thrown away, and
 * made up by the next group). A thread more than k periods off the schedule (it ran in
 * the kernel for long) restarts it from now: those samples are lost, and counted
 * (cpu_unsampled). */
static bool perf_schedule(struct osp_prof_session *ps, struct osp_prof_slot *s, uint64_t cpu_now,
                          uint32_t k, uint64_t *period) {
    if (s->h_left > 1) {
        s->h_left--;
        return false;
    }
    uint64_t w = osp_prof__jitter_ns(&s->h_rng, s->h_period_ns);
    int64_t late = (int64_t)(cpu_now - s->h_next_due);
    int64_t span = (int64_t)k * (int64_t)s->h_period_ns;
    if (late > span || late < -span) {
        s->h_next_due = cpu_now;
        late = 0;
    }
    /* Within [0.8w, 1.25w]: the correction makes up a few per cent of lost samples, and
     * never more. Losses grow with the time the thread spends in the kernel, our own
     * signal deliveries included (about 50 µs each, measured on this loaded virtual
     * machine); periods shortened without bound would add deliveries, hence losses, hence
     * shorter periods. What the clamp leaves is counted, as cpu_unsampled. */
    *period = osp_prof__catch_up_period(w, late, k, MIN_PERIOD_NS);
    /* The schedule advances by k nominal periods, not by the drawn ones: the count then
     * stays within a few samples of CPU time over the period instead of wandering with the
     * sum of the draws (k samples share each draw, so that walk was measured at about 10
     * samples in 400, test_capture's rate case), and the drawn period still moves every
     * group of samples by up to 0.3 of a group. */
    s->h_next_due += (uint64_t)k * s->h_period_ns;
    s->h_left = k;
    return true;
}

void osp_prof__ktimer_rearm(struct osp_prof_session *ps, struct osp_prof_slot *s,
                            uint64_t cpu_now) {
    if (!atomic_load_explicit(&s->ktimer_armed, memory_order_acquire)) return;
    if (s->ktimer_kind == OSP_KTIMER_PERF) {
        /* A new jittered period once per REJITTER_NS of CPU time, on the CPU-time
         * schedule (perf_schedule). */
        uint64_t period;
        if (perf_schedule(ps, s, cpu_now, rejitter_every(s, REJITTER_NS), &period))
            ioctl(s->perf_fd, PERF_EVENT_IOC_PERIOD, &period);
        return;
    }
    /* cpu_timer: samples are due at CPU-time deadlines, each a jittered period after the
     * previous one, so the time it takes to deliver the signal and run this handler is
     * not added to every period: the long-run count is CPU time / period. A thread more
     * than two periods behind (samples skipped while it was in the kernel) restarts from
     * now rather than catching up in a burst. A catch-up period is never shorter than 0.3
     * of the period. (The kernel checks CPU-time timers at its scheduler tick only, so
     * this engine samples at most CONFIG_HZ times per CPU-second; each sample's weight
     * is the CPU time measured since the previous one, so CPU time stays right.) */
    uint64_t min_gap =
        s->h_period_ns * 3 / 10 > MIN_PERIOD_NS ? s->h_period_ns * 3 / 10 : MIN_PERIOD_NS;
    uint64_t due = s->h_next_due + osp_prof__jitter_ns(&s->h_rng, s->h_period_ns);
    if (due < cpu_now + min_gap || due > cpu_now + 2 * s->h_period_ns) {
        if (due < cpu_now + min_gap && cpu_now + min_gap - due <= 2 * s->h_period_ns)
            due = cpu_now + min_gap;
        else
            due = cpu_now + osp_prof__jitter_ns(&s->h_rng, s->h_period_ns);
    }
    s->h_next_due = due;
    if (s->ktimer_kind == OSP_KTIMER_POSIX) {
        struct itimerspec its = {{0, 0},
                                 {(time_t)(due / 1000000000ull), (long)(due % 1000000000ull)}};
        timer_settime(s->posix_timer, TIMER_ABSTIME, &its, NULL);
    }
}

/* Stop a slot's timer; `release` also closes / deletes it. Under the registry mutex. */
static void ktimer_disarm(struct osp_prof_session *ps, struct osp_prof_slot *s, bool release) {
    if (s->ktimer_kind == OSP_KTIMER_NONE) return;
    atomic_store_explicit(&s->ktimer_armed, 0, memory_order_release);
    if (s->ktimer_kind == OSP_KTIMER_PERF) {
        bool ours = perf_fd_ours(s);
        if (ours) ioctl(s->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
        if (release) {
            perf_ring_unmap(s); /* emptied by the caller first (osp_prof__drain) */
            if (ours) osp_prof__close_nc(s->perf_fd);
            if (ps->perf_fds > 0) ps->perf_fds--;
        }
    } else {
        struct itimerspec zero;
        memset(&zero, 0, sizeof zero);
        timer_settime(s->posix_timer, 0, &zero, NULL);
        if (release) timer_delete(s->posix_timer);
    }
    if (release) s->ktimer_kind = OSP_KTIMER_NONE;
}

void osp_prof__ktimer_disarm_all(struct osp_prof_session *ps, bool release) {
    for (size_t i = 0; i < ps->slots_hi; i++) ktimer_disarm(ps, &ps->slots[i], release);
}

void osp_prof__ktimer_disarm_signalling(struct osp_prof_session *ps) {
    for (size_t i = 0; i < ps->slots_hi; i++)
        if (!ps->slots[i].ring_delivery) ktimer_disarm(ps, &ps->slots[i], false);
}

/* ---- the engines ------------------------------------------------------------------------ */

/* Probe that the calling thread can get a timer of `kind`, then start like the sampler. */
static bool timer_start(struct osp_prof_session *ps, int kind, int *cause) {
    if (kind == OSP_KTIMER_PERF) {
        int fd = perf_open((pid_t)syscall(SYS_gettid), ps->period_ns, false, false);
        if (fd < 0 || perf_enable(fd) != 0) {
            *cause = errno;
            return false;
        }
        osp_prof__close_nc(fd);
        /* Ring delivery (no signal per sample) where this architecture has it and a ring
         * can be opened and mapped here; OSPREY_PROFILE_PERF_DELIVERY=signal (for testing,
         * docs/profiler-runtime.md) keeps signal delivery. */
        const char *dv = getenv("OSPREY_PROFILE_PERF_DELIVERY");
        ps->perf_ring = false;
        ps->perf_kernel = false;
        if (PERF_RING_SUPPORTED && (dv == NULL || strcmp(dv, "signal") != 0)) {
            void *rb;
            size_t bytes;
            /* Kernel mode too where the kernel allows it (perf_open), unless
             * OSPREY_PROFILE_PERF_KERNEL=0 (for testing, docs/profiler-runtime.md). */
            const char *kv = getenv("OSPREY_PROFILE_PERF_KERNEL");
            ps->perf_kernel = kv == NULL || strcmp(kv, "0") != 0;
            fd = -1;
            if (ps->perf_kernel)
                fd = perf_ring_open(ps->period_ns, (pid_t)syscall(SYS_gettid), ps->period_ns, true,
                                    &rb, &bytes);
            if (fd < 0) {
                ps->perf_kernel = false;
                fd = perf_ring_open(ps->period_ns, (pid_t)syscall(SYS_gettid), ps->period_ns, false,
                                    &rb, &bytes);
            }
            if (fd >= 0) {
                munmap(rb, page_bytes() + bytes);
                osp_prof__close_nc(fd);
                ps->perf_ring = true;
                uint64_t t = perf_ring_tick_ns(ps);
                if (t < ps->tick_ns) ps->tick_ns = t > ps->period_ns ? t : ps->period_ns;
            }
        }
    } else {
        timer_t t;
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_NONE;
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) != 0) {
            *cause = errno;
            return false;
        }
        timer_delete(t);
    }
    return osp_prof__engine_start_common(ps, cause);
}

static bool perf_start(struct osp_prof_session *ps, int *cause) {
    return timer_start(ps, OSP_KTIMER_PERF, cause);
}
static bool cpu_timer_start(struct osp_prof_session *ps, int *cause) {
    return timer_start(ps, OSP_KTIMER_POSIX, cause);
}

/* Once the program took SIGPROF, a new thread still gets a counter with ring delivery
 * (which needs no signal), never one that would signal it (a prepared one is closed by
 * the caller). */
static void perf_registered(struct osp_prof_session *ps, struct osp_prof_slot *s,
                            struct osp_prof_ktimer_prep *p) {
    if (p->rb == NULL && atomic_load(&ps->handler_lost)) return;
    if (p->fd < 0) {
        /* No counter: over the session's descriptor budget, or refused for this thread
         * (descriptors exhausted). A CPU-time timer holds no descriptor and, like the
         * counter, never signals a blocked thread; the sampler thread's requests are the
         * last fallback. */
        ktimer_create(ps, s, OSP_KTIMER_POSIX, NULL);
        return;
    }
    ktimer_create(ps, s, OSP_KTIMER_PERF, p);
}
static void cpu_timer_registered(struct osp_prof_session *ps, struct osp_prof_slot *s,
                                 struct osp_prof_ktimer_prep *p) {
    (void)p;
    if (!atomic_load(&ps->handler_lost)) ktimer_create(ps, s, OSP_KTIMER_POSIX, NULL);
}

/* On the thread itself with SIGPROF blocked: no handler of ours is running on it, so the
 * timer can go at once. */
static void timer_unregistered(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    if (!in_session_process(ps)) {
        /* A raw fork's child: the counter and the ring are the parent's (stopping it
         * would stop the parent's thread's sampling; the ring is not mapped here). */
        s->perf_rb = NULL;
        s->ktimer_kind = OSP_KTIMER_NONE;
        return;
    }
    if (s->perf_rb != NULL) {
        /* The samples the kernel wrote until now become samples before the ring goes,
         * their CPU clock from a last reading of both clocks (on the thread itself: no
         * interrupt). */
        ktimer_disarm(ps, s, false);
        s->perf_cal_t = 0;
        osp_prof__perf_ring_drain(ps, s);
    }
    ktimer_disarm(ps, s, true);
}

/* The sampler thread first (its teardown drains every ring), then every timer, then the
 * program's action: no signal of ours can be generated after the action is restored. */
static void timer_stop(struct osp_prof_session *ps) {
    osp_prof__engine_stop_thread(ps);
    pthread_mutex_lock(&ps->reg);
    osp_prof__ktimer_disarm_all(ps, true);
    pthread_mutex_unlock(&ps->reg);
    osp_prof__engine_restore_action(ps);
}

/* A forked child: the descriptors are copies of the parent's threads' counters (POSIX
 * timers are not inherited); close them, give back the program's SIGPROF action. */
static void timer_fork_child(struct osp_prof_session *ps) {
    for (size_t i = 0; i < ps->slots_hi; i++) {
        struct osp_prof_slot *s = &ps->slots[i];
        atomic_store_explicit(&s->ktimer_armed, 0, memory_order_relaxed);
        if (s->ktimer_kind == OSP_KTIMER_PERF) osp_prof__close_nc(s->perf_fd);
        s->ktimer_kind = OSP_KTIMER_NONE;
        /* A ring is not mapped in the child (the kernel maps it VM_DONTCOPY). */
        s->perf_rb = NULL;
        s->perf_rb_bytes = 0;
    }
    ps->perf_fds = 0;
    if (atomic_load(&ps->old_action_ready)) sigaction(SIGPROF, &ps->old_action, NULL);
}

const struct osp_prof_engine osp_prof__engine_perf_event = {
    .name = OSP_RAW_ENGINE_PERF_EVENT,
    .start = perf_start,
    .stop = timer_stop,
    .thread_prepare = perf_prepare,
    .thread_registered = perf_registered,
    .thread_unregistered = timer_unregistered,
    .fork_child = timer_fork_child,
};

const struct osp_prof_engine osp_prof__engine_cpu_timer = {
    .name = OSP_RAW_ENGINE_CPU_TIMER,
    .start = cpu_timer_start,
    .stop = timer_stop,
    .thread_prepare = NULL,
    .thread_registered = cpu_timer_registered,
    .thread_unregistered = timer_unregistered,
    .fork_child = timer_fork_child,
};

#endif /* OSP_PROF_SAMPLER */
