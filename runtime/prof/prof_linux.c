/*
 * prof_linux.c — the Linux sampling profiler: activation, thread registry, sampler
 * thread, directed SIGPROF with per-thread rings, blocking regions, teardown and the raw
 * profile writer.
 *
 * Source: docs/spec/profiler.md §(a), §(b.1)–(b.3), §(b.5), §(c), §(d), §(e), §(k)
 * items 1–18; [PROF-ACTIVATE-ENV], [PROF-COLLECT-*], [PROF-RAW-FORMAT].
 *
 * Threads and what they touch:
 *  - registered threads: their own slot's identity and blocking buffer (registration
 *    under the registry mutex; blocking hooks lock-free), their TLS slot pointer;
 *  - the SIGPROF handler (on a registered thread): its slot's ring (producer side), a
 *    few atomics; nothing else — no locks, no allocation, no stdio;
 *  - the sampler thread: every slot's sampler-side state and ring (consumer side), under
 *    the registry mutex; the sample store, alone;
 *  - the session owner (boot / exit hook / test entry points): starts and joins the
 *    sampler, writes the file after the join.
 * Lock order: session lock, then registry mutex, then the allocator.
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#include "prof_blocked.h"
#include "prof_cfi.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ---- constants ------------------------------------------------------------------------- */

#define NSLOTS              1024          /* live registered threads, §(d) "at least 1024" */
#define RING_N              8             /* ring entries per slot, §(b.3) "at least 8" */
#define ANSWER_TIMEOUT_NS   1000000000ull /* a request unanswered after 1 s is no_answer */
/* CPU time a thread may consume between a request and the next tick without that
 * counting as progress, once the request has been answered: the cost of taking our own
 * signal (delivery, the handler, sigreturn, restarting the interrupted call or an EINTR
 * retry). Without this allowance, answering a capture signal would itself look like
 * progress and a blocked thread would be signalled every tick. A thread that really runs
 * is far above it at any rate we allow (the shortest tick at 10 kHz is 70 µs). */
#define SIGNAL_ALLOWANCE_NS 50000ull
#define MAX_STAT_FDS        64          /* cached /proc/self/task/<tid>/stat descriptors */
#define SLEEP_CHUNK_NS      20000000ull /* the sampler notices a stop within 20 ms */

enum { SLOT_FREE = 0, SLOT_ACTIVE = 1, SLOT_RETIRED = 2 };
enum { SESSION_IDLE = 0, SESSION_RUNNING = 1, SESSION_STOPPING = 2 };
enum { SCHED_RUNNABLE, SCHED_BLOCKED, SCHED_GONE };

/* ---- data structures ------------------------------------------------------------------- */

struct ring_entry {
    uint64_t seq; /* the request this answers (slot's req_seq when the handler ran) */
    uint32_t n;
    uint16_t truncated;
    uint8_t in_syscall; /* the signal interrupted a blocking system call (EINTR) */
    uint8_t unwind_end; /* enum osp_unwind_end of the walk */
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
};

/* Single-producer (the handler on the slot's thread) / single-consumer (the sampler)
 * ring. Entries are published with a release store of head, freed with a release store
 * of tail. Allocated at registration, never freed. */
struct ring {
    _Atomic uint32_t head;
    _Atomic uint32_t tail;
    struct ring_entry e[RING_N];
};

/* Sampler-side bookkeeping of one slot; accessed only under the registry mutex. */
struct sampler_state {
    uint64_t last_t;   /* monotonic time of the previous examination */
    uint64_t cpu_req;  /* CPU clock at the last on-CPU request: weight baseline */
    uint64_t cpu_due;  /* CPU clock from which the next on-CPU request is due */
    uint64_t cpu_base; /* CPU clock below which the thread has made no progress */
    uint64_t run_cpu;  /* CPU clock when the thread was last seen runnable ... */
    bool run_known;    /* ... valid while this is set */
    int64_t last_on;   /* store index of the thread's last on-CPU sample, or -1 */
    uint64_t carry_w;  /* weight of unanswered on-CPU requests, for the next one */
    uint64_t ring_full_seen;
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
    int stat_fd; /* cached /proc/self/task/<tid>/stat, or -1 */
};

struct slot {
    /* Shared with the handler and the owning thread. */
    _Atomic int state;
    _Atomic uint64_t gen;
    _Atomic uint64_t req_seq;
    _Atomic uint64_t ring_full;
    struct ring *ring;
    uintptr_t lo, hi; /* stack bounds captured at registration */
    /* Blocking region: written by the owner, read by the sampler under block_seq. */
    int block_depth; /* owner only */
    _Atomic int in_block;
    _Atomic uint32_t block_seq; /* odd while the owner writes the stack */
    _Atomic uint32_t block_n, block_trunc;
    _Atomic uintptr_t block_pcs[OSP_PROF_MAX_FRAMES];
    /* Identity, under the registry mutex. */
    uint32_t row;
    pid_t tid;
    clockid_t cpu_clock;
    struct sampler_state sm;
};

struct row {
    int64_t fiber;
    pid_t tid;
    char label[OSP_PROF_LABEL_MAX + 1];
};

/* ---- global state ---------------------------------------------------------------------- */

static pthread_mutex_t g_session_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_reg = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_boot_once = PTHREAD_ONCE_INIT;
static bool g_init_ok;
static pthread_key_t g_key;

static _Atomic int g_on;           /* hooks act: a session is running */
static _Atomic int g_stop;         /* the sampler should stop */
static _Atomic int g_forked_child; /* this process is a fork of a profiled one: inert */
static _Atomic pid_t g_pid;

/* Under g_reg. */
static int g_state;
static struct slot *g_slots; /* NSLOTS, allocated once, never freed */
static size_t g_slots_hi;    /* 1 + highest slot index ever used */
static struct row *g_rows;
static size_t g_nrows, g_rows_cap;
static uint64_t g_threads_over_limit;
static uint64_t g_reg_dropped[OSP_DROP_COUNT];
static int g_stat_fds_open;

/* Set by the session owner before the sampler starts; read-only while it runs. */
static uint32_t g_rate;
static uint64_t g_period_ns;
static _Atomic uint64_t g_start_mono;
static uint64_t g_start_unix;
static char g_path[OSP_PROF_PATH_MAX + 1];
static pthread_t g_sampler;

/* The sampler's own, read by the writer after the join. */
static struct osp_prof_store g_store;
static uint64_t g_ticks, g_late_ticks, g_next_seq;
/* How the walks behind the stored samples ended (enum osp_unwind_end), and how many
 * blocked threads' stacks were read from /proc without a signal (§(l.4)). */
static uint64_t g_unwind_ends[OSP_UNWIND_CAP + 1];
static uint64_t g_blocked_reads;

/* The SIGPROF action we replaced; published before our handler is installed. */
static struct sigaction g_old_action;
static _Atomic int g_old_action_ready;

/* The calling thread's registration. Initial-exec TLS, written outside signal context,
 * so the first access from the handler can never allocate (§(b.3)). */
static __thread struct slot *t_slot __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_gen __attribute__((tls_model("initial-exec")));

/* ---- small helpers --------------------------------------------------------------------- */

uint64_t osp_prof__mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool read_clock(clockid_t id, uint64_t *out) {
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) return false;
    *out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return true;
}

uint64_t osp_prof__session_start_mono_ns(void) {
    return atomic_load(&g_start_mono);
}
bool osp_prof__active(void) {
    return atomic_load_explicit(&g_on, memory_order_acquire) != 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char line[OSP_PROF_PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    line[len++] = '\n';
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(2, line + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        off += (size_t)w;
    }
}

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

/* ---- the SIGPROF handler (§(b.3), (k) items 1, 9) -------------------------------------- */

static void chain_foreign(int sig, siginfo_t *si, void *uc) {
    if (!atomic_load_explicit(&g_old_action_ready, memory_order_acquire)) return;
    const struct sigaction *old = &g_old_action;
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) old->sa_sigaction(sig, si, uc);
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN && old->sa_handler) {
        old->sa_handler(sig);
    }
}

static void on_sigprof(int sig, siginfo_t *si, void *ucv) {
    int saved_errno = errno;
    if (si == NULL || si->si_code != SI_TKILL ||
        si->si_pid != atomic_load_explicit(&g_pid, memory_order_relaxed)) {
        chain_foreign(sig, si, ucv);
        errno = saved_errno;
        return;
    }
    struct slot *s = t_slot;
    if (s == NULL || atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_ACTIVE) {
        errno = saved_errno;
        return;
    }
    struct ring *r = s->ring;
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail >= RING_N) {
        atomic_fetch_add_explicit(&s->ring_full, 1, memory_order_relaxed);
        errno = saved_errno;
        return;
    }
    const ucontext_t *uc = ucv;
    uintptr_t pc, fp, sp, lr;
    (void)lr;
    long ret; /* the system-call return register */
#if defined(__x86_64__)
    pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    lr = 0;
    ret = (long)uc->uc_mcontext.gregs[REG_RAX];
#elif defined(__aarch64__)
    pc = (uintptr_t)uc->uc_mcontext.pc;
    fp = (uintptr_t)uc->uc_mcontext.regs[29];
    sp = (uintptr_t)uc->uc_mcontext.sp;
    lr = (uintptr_t)uc->uc_mcontext.regs[30];
    ret = (long)uc->uc_mcontext.regs[0];
#endif
    /* Nothing below the interrupted stack pointer is a frame, and everything between it
     * and the top of the stack is mapped: a tighter lower bound than the registered one
     * (for the main thread that one comes from RLIMIT_STACK and may be unmapped). */
    uintptr_t lo = s->lo > sp ? s->lo : sp;
    struct ring_entry *e = &r->e[head % RING_N];
    bool truncated;
    e->seq = atomic_load_explicit(&s->req_seq, memory_order_acquire);
    /* The hybrid walk (§(l.1)): frame pointers where the CFI agrees, CFI steps elsewhere. */
    struct osp_unwind_regs regs = {.pc = pc, .sp = sp, .fp = fp, .lr = lr, .fp_known = true};
    struct osp_unwind_info info;
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    e->n = (uint32_t)osp_prof__hybrid_walk(set, &regs, lo, s->hi, e->pcs, OSP_PROF_MAX_FRAMES,
                                           &truncated, &info);
    osp_prof__cfi_release();
    e->truncated = truncated;
    e->unwind_end = info.end;
    /* A sleeping call this signal interrupted (nanosleep, poll, select, epoll_wait, ...)
     * returns -EINTR in the return register: the stack is the thread's blocking stack. */
    e->in_syscall = ret == -EINTR;
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    errno = saved_errno;
}

/* ---- registry (§(d)) ------------------------------------------------------------------- */

/* /proc/self/task/<tid>/stat descriptors are cached per slot (a pread is a third of an
 * open/read/close). The program may close any descriptor, and reuse its number, so a
 * cached one is trusted only while its content names the thread, and is never closed
 * unless it still does. Under g_reg. */
static ssize_t stat_read_fd(int fd, char *buf, size_t cap) {
    ssize_t n;
    do n = pread(fd, buf, cap - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n >= 0) buf[n] = '\0';
    return n;
}

/* Decimal digits of a positive id into `out` (at least 12 bytes); returns the length. */
static size_t format_id(char *out, pid_t id) {
    char tmp[12];
    size_t n = 0;
    unsigned v = (unsigned)id;
    do tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* Whether a stat line belongs to thread `tid` ("<tid> (comm) ..."). */
static bool stat_names(const char *buf, pid_t tid) {
    char digits[12];
    size_t n = format_id(digits, tid);
    return strncmp(buf, digits, n) == 0 && buf[n] == ' ' && buf[n + 1] == '(';
}

static void stat_fd_forget(struct slot *s, bool close_it) {
    if (s->sm.stat_fd < 0) return;
    if (close_it) close(s->sm.stat_fd);
    s->sm.stat_fd = -1;
    g_stat_fds_open--;
}

/* Close a slot's cached descriptor if it is still ours. */
static void stat_fd_release(struct slot *s) {
    if (s->sm.stat_fd < 0) return;
    char buf[128];
    ssize_t n = stat_read_fd(s->sm.stat_fd, buf, sizeof buf);
    bool ours = (n > 0 && stat_names(buf, s->tid)) || (n < 0 && errno == ESRCH);
    stat_fd_forget(s, ours);
}

static int sched_state(struct slot *s) {
    char buf[512];
    ssize_t n = -1;
    if (s->sm.stat_fd >= 0) {
        n = stat_read_fd(s->sm.stat_fd, buf, sizeof buf);
        if (n < 0 && errno == ESRCH) return SCHED_GONE;
        if (n <= 0 || !stat_names(buf, s->tid)) {
            stat_fd_forget(s, false); /* not ours any more: leave it to the program */
            n = -1;
        }
    }
    if (n < 0) {
        char path[64] = "/proc/self/task/";
        size_t k = strlen(path);
        k += format_id(path + k, s->tid);
        memcpy(path + k, "/stat", 6);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return errno == ENOENT || errno == ESRCH ? SCHED_GONE : SCHED_BLOCKED;
        n = stat_read_fd(fd, buf, sizeof buf);
        if (n > 0 && g_stat_fds_open < MAX_STAT_FDS) {
            s->sm.stat_fd = fd;
            g_stat_fds_open++;
        } else {
            close(fd);
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

static void drain(struct slot *s);

/* Forget a pending request of a slot that stops being sampled. Under g_reg. */
static void slot_abandon_request(struct slot *s, uint64_t *dropped) {
    if (s->sm.pend_on) {
        dropped[OSP_DROP_NO_ANSWER]++;
        s->sm.pend_on = false;
    }
    uint64_t rf = atomic_load_explicit(&s->ring_full, memory_order_relaxed);
    dropped[OSP_DROP_RING_FULL] += rf - s->sm.ring_full_seen;
    s->sm.ring_full_seen = rf;
}

/* The thread stops being sampled while its CPU clock reads `c`: the CPU time it
 * consumed since its last on-CPU request (and that of a request that will never be
 * answered) is added to its last on-CPU sample, so that a thread's on-CPU weights add up
 * to all the CPU time it used while registered, not only up to its last request.
 * Call before slot_abandon_request. Under g_reg. */
static void flush_tail(struct slot *s, uint64_t c) {
    struct sampler_state *m = &s->sm;
    uint64_t tail = (c > m->cpu_req ? c - m->cpu_req : 0) + m->carry_w;
    if (m->pend_on && !m->pend_capture) tail += m->pend_w;
    if (m->last_on >= 0 && (size_t)m->last_on < g_store.nsamples)
        g_store.samples[m->last_on].weight_ns += tail;
    m->cpu_req = c > m->cpu_req ? c : m->cpu_req;
    m->carry_w = 0;
    if (m->pend_on && !m->pend_capture) m->pend_w = 0;
}

/* Release the calling thread's slot (§(d) unregister): block SIGPROF, mark the slot
 * free and bump its generation under the registry mutex, clear the slot pointer, and
 * only then restore the signal mask (a SIGPROF that became pending meanwhile then finds
 * no slot and is ignored). */
static void release_current(void) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    struct slot *s = t_slot;
    if (s != NULL) {
        pthread_mutex_lock(&g_reg);
        int st = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (st == SLOT_ACTIVE) {
            drain(s); /* answers already in the ring still become samples */
            uint64_t c;
            if (read_clock(s->cpu_clock, &c)) flush_tail(s, c);
            slot_abandon_request(s, g_reg_dropped);
            atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
        }
        stat_fd_release(s);
        atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
        pthread_mutex_unlock(&g_reg);
        t_slot = NULL;
        t_gen = 0;
        if (g_init_ok) pthread_setspecific(g_key, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Thread-exit destructor: a thread that exits registered is unregistered (§(d)). */
static void key_destructor(void *value) {
    (void)value;
    if (t_slot != NULL) release_current();
}

static void register_current(int64_t fiber_id, const char *label) {
    struct slot *cur = t_slot;
    if (cur != NULL) {
        if (atomic_load_explicit(&cur->state, memory_order_acquire) == SLOT_ACTIVE &&
            atomic_load_explicit(&cur->gen, memory_order_relaxed) == t_gen)
            return;        /* already registered in this session */
        release_current(); /* left over from an earlier session */
    }
    clockid_t cid;
    if (pthread_getcpuclockid(pthread_self(), &cid) != 0) return;
    uint64_t cpu0;
    if (!read_clock(cid, &cpu0)) return;
    uintptr_t lo, hi;
    stack_bounds(&lo, &hi);
    char lab[OSP_PROF_LABEL_MAX + 1];
    osp_prof__cut_label(label, lab);
    pid_t tid = (pid_t)syscall(SYS_gettid);

    pthread_mutex_lock(&g_reg);
    if (g_state != SESSION_RUNNING) goto out;
    struct slot *s = NULL;
    size_t idx = 0;
    for (; idx < NSLOTS; idx++)
        if (atomic_load_explicit(&g_slots[idx].state, memory_order_relaxed) == SLOT_FREE) {
            s = &g_slots[idx];
            break;
        }
    if (s == NULL) {
        g_threads_over_limit++;
        goto out;
    }
    if (s->ring == NULL) {
        s->ring = calloc(1, sizeof *s->ring); /* registering thread, never in the handler */
        if (s->ring == NULL) goto out;
    }
    if (g_nrows == g_rows_cap) {
        size_t c = g_rows_cap ? g_rows_cap * 2 : 64;
        struct row *q = realloc(g_rows, c * sizeof *q);
        if (q == NULL) goto out;
        g_rows = q;
        g_rows_cap = c;
    }
    struct row *rw = &g_rows[g_nrows];
    rw->fiber = fiber_id;
    rw->tid = tid;
    memcpy(rw->label, lab, sizeof lab);
    s->row = (uint32_t)g_nrows++;
    s->tid = tid;
    s->cpu_clock = cid;
    s->lo = lo;
    s->hi = hi;
    s->block_depth = 0;
    atomic_store_explicit(&s->in_block, 0, memory_order_relaxed);
    memset(&s->sm, 0, sizeof s->sm);
    s->sm.last_t = osp_prof__mono_ns();
    s->sm.cpu_req = s->sm.cpu_base = s->sm.cpu_due = cpu0; /* first progress: a request */
    s->sm.last_on = -1;
    s->sm.ep_stack = -1;
    s->sm.ans_stack = -1;
    s->sm.blk_stack_cached = -1;
    s->sm.stat_fd = -1;
    s->sm.ring_full_seen = atomic_load_explicit(&s->ring_full, memory_order_relaxed);
    if (idx + 1 > g_slots_hi) g_slots_hi = idx + 1;
    t_slot = s;
    t_gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
    pthread_setspecific(g_key, s);
    atomic_store_explicit(&s->state, SLOT_ACTIVE, memory_order_release);
out:
    pthread_mutex_unlock(&g_reg);
}

OSP_PROF_PUBLIC void osp_prof_thread_register(int64_t fiber_id, const char *label) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return;
    register_current(fiber_id, label);
}

OSP_PROF_PUBLIC void osp_prof_thread_unregister(void) {
    if (t_slot == NULL) return;
    release_current();
}

/* ---- blocking regions (§(b.3), §(c) item 6, §(d)) --------------------------------------- */

/* The capture of osp_prof_block_begin, out of line so that the hook's fast path (no
 * session, no slot, nested region) stays a few instructions. `hook_fp` is the hook's
 * frame record {caller's fp, return address}; the walk starts at the caller's record,
 * with frame 0 = the hook's return address - 1 standing for the call site in the
 * runtime's waiting function (§(c) item 6). */
static __attribute__((noinline)) void block_capture(struct slot *s, uintptr_t hook_fp,
                                                    uintptr_t ret) {
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
    bool truncated;
    uintptr_t caller_fp = *(const uintptr_t *)hook_fp;
    uintptr_t lo = s->lo > hook_fp ? s->lo : hook_fp;
    /* Frame 0 is ret - 1; the caller's frame starts above the hook's record. */
    struct osp_unwind_regs regs = {
        .pc = ret, .sp = hook_fp + 16, .fp = caller_fp, .pc_is_return = true, .fp_known = true};
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    size_t n = osp_prof__hybrid_walk(set, &regs, lo, s->hi, pcs, OSP_PROF_MAX_FRAMES, &truncated,
                                     NULL);
    osp_prof__cfi_release();
    uint32_t q = atomic_load_explicit(&s->block_seq, memory_order_relaxed);
    atomic_store_explicit(&s->block_seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&s->block_pcs[i], pcs[i], memory_order_relaxed);
    atomic_store_explicit(&s->block_n, (uint32_t)n, memory_order_relaxed);
    atomic_store_explicit(&s->block_trunc, truncated, memory_order_relaxed);
    atomic_store_explicit(&s->block_seq, q + 2, memory_order_release);
    atomic_store_explicit(&s->in_block, 1, memory_order_release);
}

/* Kept out of line with its own frame record (the runtime is built with frame
 * pointers): the capture starts from it. Lock-free and allocation-free. */
OSP_PROF_PUBLIC __attribute__((noinline)) void osp_prof_block_begin(void) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return;
    struct slot *s = t_slot;
    if (s == NULL || s->block_depth++ > 0) return;
    block_capture(s, (uintptr_t)__builtin_frame_address(0), (uintptr_t)__builtin_return_address(0));
}

OSP_PROF_PUBLIC void osp_prof_block_end(void) {
    struct slot *s = t_slot;
    if (s == NULL || s->block_depth == 0) return;
    if (--s->block_depth > 0) return;
    atomic_store_explicit(&s->in_block, 0, memory_order_release);
}

/* Copy a slot's blocking stack consistently and intern it. Returns the stack index,
 * -1 on allocation failure, -2 if the owner kept rewriting it. Under g_reg. */
static int64_t block_stack(struct slot *s) {
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
        int64_t k = osp_prof__store_intern(&g_store, pcs, n, trunc);
        if (k < 0) return -1;
        s->sm.blk_seq_cached = q1;
        s->sm.blk_stack_cached = k;
        return k;
    }
    return -2;
}

/* ---- the sampler (§(b.1), §(b.2), §(b.3)) ---------------------------------------------- */

static uint64_t t_rel(uint64_t t) {
    uint64_t s = atomic_load_explicit(&g_start_mono, memory_order_relaxed);
    return t > s ? t - s : 0;
}

/* Deactivate a slot whose thread is gone (failed clock read, signal or stat). */
static void slot_gone(struct slot *s) {
    slot_abandon_request(s, g_store.dropped);
    g_store.dropped[OSP_DROP_THREAD_GONE]++;
    stat_fd_release(s);
    atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
    /* Retired, not free: only its owner (unregister, exit destructor) frees it, so a
     * slot is never handed to another thread while its owner might still use it. */
    atomic_store_explicit(&s->state, SLOT_RETIRED, memory_order_release);
}

static void send_request(struct slot *s, uint64_t t, uint64_t cpu, uint64_t weight, bool capture) {
    uint64_t seq = ++g_next_seq;
    atomic_store_explicit(&s->req_seq, seq, memory_order_release);
    s->sm.pend_on = true;
    s->sm.pend_capture = capture;
    s->sm.pend_seq = seq;
    s->sm.pend_t = t;
    s->sm.pend_w = weight;
    s->sm.pend_sent = t;
    s->sm.pend_cpu = cpu;
    if (syscall(SYS_tgkill, (pid_t)atomic_load(&g_pid), s->tid, SIGPROF) != 0) {
        s->sm.pend_on = false; /* ESRCH or any error: the thread is gone (§(b.3)) */
        slot_gone(s);
    }
}

/* Turn ring entries into samples; each answers the pending request of the same sequence
 * number, others are discarded. */
static void drain(struct slot *s) {
    struct ring *r = s->ring;
    struct sampler_state *m = &s->sm;
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    while (tail != head) {
        const struct ring_entry *e = &r->e[tail % RING_N];
        if (m->pend_on && e->seq == m->pend_seq) {
            uint32_t n = e->n > OSP_PROF_MAX_FRAMES ? OSP_PROF_MAX_FRAMES : e->n;
            int64_t k = n ? osp_prof__store_intern(&g_store, e->pcs, n, e->truncated != 0) : -1;
            if (k < 0) {
                g_store.dropped[OSP_DROP_ALLOC]++;
            } else {
                if (e->unwind_end <= OSP_UNWIND_CAP) g_unwind_ends[e->unwind_end]++;
                if (osp_prof__store_add(&g_store, t_rel(m->pend_t), s->row, (uint32_t)k,
                                        m->pend_capture ? 1 : 0, m->pend_w) &&
                    !m->pend_capture)
                    m->last_on = (int64_t)g_store.nsamples - 1;
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
    g_store.dropped[OSP_DROP_RING_FULL] += rf - m->ring_full_seen;
    m->ring_full_seen = rf;
}

/* The blocking stack of a thread the scheduler reports blocked, read without a signal
 * (§(l.4)): unwound from the sp and pc the kernel reports, inside the thread's stack
 * bounds. `c` is its CPU clock at this tick: if the clock moved meanwhile the thread ran
 * and the stack may be torn, so it is discarded. Returns the interned stack, -1 when
 * memory ran out, -2 when there is no stack to take (not in a system call, registers
 * unreadable, sp off the registered stack, or the thread ran). Under g_reg. */
static int64_t blocked_capture(struct slot *s, uint64_t c) {
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
    bool truncated;
    struct osp_unwind_info info;
    size_t n = osp_prof__blocked_stack(s->tid, s->lo, s->hi, pcs, OSP_PROF_MAX_FRAMES,
                                       &truncated, &info);
    if (n == 0) return -2;
    uint64_t c1;
    if (!read_clock(s->cpu_clock, &c1) || c1 != c) return -2;
    int64_t k = osp_prof__store_intern(&g_store, pcs, (uint32_t)n, truncated);
    if (k < 0) return -1;
    g_blocked_reads++;
    if (info.end <= OSP_UNWIND_CAP) g_unwind_ends[info.end]++;
    return k;
}

/* Classify one validated slot at time t (§(b.2)). Under g_reg. */
static void examine(struct slot *s, uint64_t t) {
    struct sampler_state *m = &s->sm;
    drain(s);
    if (m->pend_on && t - m->pend_sent >= ANSWER_TIMEOUT_NS) {
        g_store.dropped[OSP_DROP_NO_ANSWER]++;
        if (m->pend_capture)
            m->ep_lost = true;
        else
            m->carry_w += m->pend_w; /* its CPU time goes to the next on-CPU sample */
        m->pend_on = false;
    }
    uint64_t wall = t > m->last_t ? t - m->last_t : 0;
    m->last_t = t;

    /* 1. Inside a runtime wait: waiting, with the stack the thread captured itself. */
    if (atomic_load_explicit(&s->in_block, memory_order_acquire)) {
        m->ep_on = false;
        int64_t k = block_stack(s);
        if (k >= 0)
            osp_prof__store_add(&g_store, t_rel(t), s->row, (uint32_t)k, 1, wall);
        else
            g_store.dropped[k == -1 ? OSP_DROP_ALLOC : OSP_DROP_NO_ANSWER]++;
        return;
    }

    /* 2. CPU progress: an on-CPU request (one outstanding at a time) once the thread has
     * used a period's worth of CPU since its previous one (deviation from §(b.2), see
     * docs/profiler-runtime.md "Rate"): requests follow consumed CPU time, so a thread
     * that shares its core is sampled about rate_hz times per CPU-second, not once per
     * tick in which it ran at all. The weight is still all CPU time since the previous
     * request. */
    uint64_t c;
    if (!read_clock(s->cpu_clock, &c)) {
        slot_gone(s);
        return;
    }
    if (c > m->cpu_base) {
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
                m->cpu_due = c - m->cpu_due < 3 * g_period_ns ? m->cpu_due + g_period_ns
                                                              : c - 2 * g_period_ns;
                send_request(s, t, c, w, false);
            }
            return;
        }
        /* Progress, but less than a period: no on-CPU sample this tick (the time goes to
         * the next one); the scheduler says whether the thread is waiting now. */
    }

    /* 3. No progress (or not a period's worth): ask the scheduler. A thread last seen
     * runnable whose CPU clock has not moved since is still runnable (it cannot block
     * without running), which spares the /proc read for preempted threads. */
    int st;
    if (m->run_known && c == m->run_cpu) {
        st = SCHED_RUNNABLE;
    } else {
        st = sched_state(s);
        m->run_known = st == SCHED_RUNNABLE;
        m->run_cpu = c;
    }
    if (st == SCHED_GONE) {
        slot_gone(s);
        return;
    }
    if (st == SCHED_RUNNABLE) return; /* running or preempted: neither sample nor wait */
    if (!m->ep_on) {
        m->ep_on = true;
        m->ep_lost = false;
        m->ep_stack = -1;
        m->ep_pre_w = 0;
    }
    /* An answer that interrupted a blocking call, with no progress since, was taken in
     * this very wait: the episode needs no capture signal of its own. (This is the usual
     * case when a thread runs and then blocks between two ticks: the on-CPU request sent
     * for its last run lands in the wait.) */
    if (m->ep_stack < 0 && !m->pend_on && m->ans_stack >= 0 && m->ans_in_syscall)
        m->ep_stack = m->ans_stack;
    if (m->ep_stack >= 0) {
        osp_prof__store_add(&g_store, t_rel(t), s->row, (uint32_t)m->ep_stack, 1,
                            m->ep_pre_w + wall);
        m->ep_pre_w = 0;
    } else if (m->pend_on && m->pend_capture) {
        m->pend_w += wall; /* ticks before the capture arrives add to its sample */
    } else if (m->pend_on) {
        m->ep_pre_w += wall; /* an earlier request is still out: one at a time */
    } else if (m->ep_lost) {
        g_store.dropped[OSP_DROP_NO_ANSWER]++;
    } else {
        /* No signal to a blocked thread (§(l.4)): its stack comes from the kernel's view. */
        int64_t k = blocked_capture(s, c);
        uint64_t w = m->ep_pre_w + wall;
        m->ep_pre_w = 0;
        if (k >= 0) {
            m->ep_stack = k;
            osp_prof__store_add(&g_store, t_rel(t), s->row, (uint32_t)k, 1, w);
        } else {
            /* Counted lost; the next tick of the episode tries again. */
            g_store.dropped[k == -1 ? OSP_DROP_ALLOC : OSP_DROP_NO_ANSWER]++;
        }
    }
}

struct snap {
    uint32_t idx;
    uint64_t gen;
};
static struct snap g_snap[NSLOTS];

static void tick(void) {
    g_ticks++;
    /* Images the program loaded (or unloaded) since the last tick get their CFI tables
     * before the walks that need them; a cheap check when nothing changed (§(l.1)). */
    osp_prof__cfi_refresh();
    size_t n = 0;
    pthread_mutex_lock(&g_reg);
    for (size_t i = 0; i < g_slots_hi; i++)
        if (atomic_load_explicit(&g_slots[i].state, memory_order_relaxed) == SLOT_ACTIVE) {
            g_snap[n].idx = (uint32_t)i;
            g_snap[n].gen = atomic_load_explicit(&g_slots[i].gen, memory_order_relaxed);
            n++;
        }
    pthread_mutex_unlock(&g_reg);
    for (size_t j = 0; j < n; j++) {
        if (atomic_load_explicit(&g_stop, memory_order_relaxed)) return;
        pthread_mutex_lock(&g_reg);
        struct slot *s = &g_slots[g_snap[j].idx];
        /* Revalidate under the mutex: unregistration takes it too, so the thread stays
         * alive and registered for the whole examination (§(d) "Validity"). */
        if (atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_ACTIVE &&
            atomic_load_explicit(&s->gen, memory_order_relaxed) == g_snap[j].gen)
            examine(s, osp_prof__mono_ns());
        pthread_mutex_unlock(&g_reg);
    }
}

static void sleep_until(uint64_t deadline) {
    for (;;) {
        if (atomic_load_explicit(&g_stop, memory_order_relaxed)) return;
        uint64_t now = osp_prof__mono_ns();
        if (now >= deadline) return;
        uint64_t until = deadline - now > SLEEP_CHUNK_NS ? now + SLEEP_CHUNK_NS : deadline;
        struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
    }
}

/* §(b.3) "Teardown": stop sending, wait up to two periods for outstanding answers,
 * drain every ring a last time, count what is still unanswered as no_answer. */
static void sampler_teardown(void) {
    uint64_t until = osp_prof__mono_ns() + 2 * g_period_ns;
    for (;;) {
        bool outstanding = false;
        pthread_mutex_lock(&g_reg);
        for (size_t i = 0; i < g_slots_hi; i++) {
            struct slot *s = &g_slots[i];
            if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_ACTIVE) continue;
            drain(s);
            if (s->sm.pend_on) outstanding = true;
        }
        pthread_mutex_unlock(&g_reg);
        if (!outstanding || osp_prof__mono_ns() >= until) break;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&g_reg);
    for (size_t i = 0; i < g_slots_hi; i++) {
        struct slot *s = &g_slots[i];
        if (atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_ACTIVE) {
            uint64_t c;
            if (read_clock(s->cpu_clock, &c)) flush_tail(s, c);
            slot_abandon_request(s, g_store.dropped);
        }
        stat_fd_release(s);
    }
    pthread_mutex_unlock(&g_reg);
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

static void *sampler_main(void *arg) {
    (void)arg;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    sampler_short_slice();
    uint64_t rng = osp_prof__mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ull;
    if (rng == 0) rng = 1;
    uint64_t deadline = osp_prof__mono_ns();
    while (!atomic_load_explicit(&g_stop, memory_order_acquire)) {
        /* xorshift64*: interval uniform in [0.7p, 1.3p). */
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        uint64_t r = rng * 0x2545F4914F6CDD1Dull;
        double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
        deadline += (uint64_t)((double)g_period_ns * (0.7 + 0.6 * u));
        uint64_t now = osp_prof__mono_ns();
        if (deadline <= now) {
            deadline = now; /* late: no catch-up burst */
            g_late_ticks++;
        } else {
            sleep_until(deadline);
        }
        if (atomic_load_explicit(&g_stop, memory_order_acquire)) break;
        tick();
    }
    sampler_teardown();
    return NULL;
}

/* ---- the raw profile (§(e)) ------------------------------------------------------------ */

static void write_body(struct osp_prof_out *o, uint64_t end_unix) {
    char exe[OSP_PROF_PATH_MAX + 1];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k < 0) k = 0;
    exe[k] = '\0';
    struct osp_prof_store *st = &g_store;
    osp_prof__out_str(o, "{\"version\":1,\"pid\":");
    osp_prof__out_i64(o, (int64_t)atomic_load(&g_pid));
    osp_prof__out_str(o, ",\"exe\":");
    osp_prof__out_json_string(o, exe, (size_t)k);
    osp_prof__out_str(o, ",\"rate_hz\":");
    osp_prof__out_u64(o, g_rate);
    osp_prof__out_str(o, ",\"platform\":\"");
    osp_prof__out_str(o, osp_prof__platform());
    osp_prof__out_str(o, "\",\"start_unix_ns\":");
    osp_prof__out_u64(o, g_start_unix);
    osp_prof__out_str(o, ",\"end_unix_ns\":");
    osp_prof__out_u64(o, end_unix);
    osp_prof__out_str(o, ",\"images\":");
    osp_prof__write_images(o, exe);
    osp_prof__out_str(o, ",\"threads\":[");
    for (size_t i = 0; i < g_nrows; i++) {
        osp_prof__out_str(o, i ? ",{\"fiber\":" : "{\"fiber\":");
        osp_prof__out_i64(o, g_rows[i].fiber);
        osp_prof__out_str(o, ",\"label\":");
        osp_prof__out_json_string(o, g_rows[i].label, strlen(g_rows[i].label));
        osp_prof__out_str(o, ",\"tid\":");
        osp_prof__out_i64(o, g_rows[i].tid);
        osp_prof__out_str(o, "}");
    }
    osp_prof__out_str(o, "],\"stacks\":[");
    for (size_t i = 0; i < st->nstacks; i++) {
        const struct osp_prof_stack_ref *r = &st->stacks[i];
        osp_prof__out_str(o, i ? ",[" : "[");
        for (uint32_t j = 0; j < r->n; j++) {
            if (j) osp_prof__out_bytes(o, ",", 1);
            osp_prof__out_u64(o, st->addrs[r->off + j]);
        }
        osp_prof__out_str(o, "]");
    }
    osp_prof__out_str(o, "],\"samples\":[");
    for (size_t i = 0; i < st->nsamples; i++) {
        const struct osp_prof_sample *x = &st->samples[i];
        osp_prof__out_str(o, i ? ",[" : "[");
        osp_prof__out_u64(o, x->t_rel_ns);
        osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, x->row);
        osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, x->stack);
        osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, x->state);
        osp_prof__out_str(o, "]");
    }
    uint64_t dropped = 0;
    for (int i = 0; i < OSP_DROP_COUNT; i++) dropped += st->dropped[i];
    osp_prof__out_str(o, "],\"dropped\":");
    osp_prof__out_u64(o, dropped);
    osp_prof__out_str(o, ",\"sample_weights_ns\":[");
    for (size_t i = 0; i < st->nsamples; i++) {
        if (i) osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, st->samples[i].weight_ns);
    }
    osp_prof__out_str(o, "],\"ticks\":");
    osp_prof__out_u64(o, g_ticks);
    osp_prof__out_str(o, ",\"late_ticks\":");
    osp_prof__out_u64(o, g_late_ticks);
    static const char *const reasons[OSP_DROP_COUNT] = {"alloc", "no_answer", "ring_full",
                                                        "store_full", "thread_gone"};
    osp_prof__out_str(o, ",\"dropped_reasons\":{");
    for (int i = 0; i < OSP_DROP_COUNT; i++) {
        osp_prof__out_str(o, i ? ",\"" : "\"");
        osp_prof__out_str(o, reasons[i]);
        osp_prof__out_str(o, "\":");
        osp_prof__out_u64(o, st->dropped[i]);
    }
    osp_prof__out_str(o, "},\"threads_over_limit\":");
    osp_prof__out_u64(o, g_threads_over_limit);
    osp_prof__out_str(o, ",\"truncated_stacks\":[");
    bool first = true;
    for (size_t i = 0; i < st->nstacks; i++) {
        if (!st->stacks[i].truncated) continue;
        if (!first) osp_prof__out_bytes(o, ",", 1);
        first = false;
        osp_prof__out_u64(o, i);
    }
    /* How the stored stacks' walks ended, and how many blocked threads were read from
     * /proc without a signal (docs/profiler-runtime.md "The unwinder"). */
    static const char *const ends[OSP_UNWIND_CAP + 1] = {"chain_end", "root", "no_rule",
                                                         "bad_stack", "cap"};
    osp_prof__out_str(o, "],\"unwind\":{");
    for (int i = 0; i <= OSP_UNWIND_CAP; i++) {
        osp_prof__out_str(o, i ? ",\"" : "\"");
        osp_prof__out_str(o, ends[i]);
        osp_prof__out_str(o, "\":");
        osp_prof__out_u64(o, g_unwind_ends[i]);
    }
    osp_prof__out_str(o, ",\"blocked_reads\":");
    osp_prof__out_u64(o, g_blocked_reads);
    osp_prof__out_str(o, "}}\n");
}

/* Write the raw profile to a temporary name in the target directory (mode 0600), check
 * every write, then rename it into place (§(a), (k) item 14). An existing character
 * device or FIFO (OSPREY_PROFILE=/dev/null, a named pipe) is written in place, never
 * replaced by a file; a symbolic link to a regular file is followed (the file it points
 * to is replaced, the link stays); a directory, a dangling link or any other kind of
 * file is refused with the usual one-line message (docs/profiler-runtime.md). */
static bool write_raw(const char *path, uint64_t end_unix) {
    char *tmp = NULL;
    char *resolved = NULL;
    const char *dest = path;
    char *buf = malloc(1 << 16);
    int err = 0;
    int fd = -1;
    if (buf == NULL) {
        err = ENOMEM;
        goto fail;
    }
    struct stat lst, st;
    if (lstat(path, &lst) == 0) {
        st = lst;
        if (S_ISLNK(lst.st_mode) && stat(path, &st) != 0) {
            err = errno;
            goto fail;
        }
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
            if (fd < 0) {
                err = errno;
                goto fail;
            }
            struct osp_prof_out o = {.fd = fd, .buf = buf, .cap = 1 << 16, .len = 0, .err = 0};
            write_body(&o, end_unix);
            err = osp_prof__out_flush(&o);
            int cfd = fd;
            fd = -1;
            if (close(cfd) != 0 && err == 0) err = errno;
            if (err) goto fail;
            free(buf);
            return true;
        }
        if (S_ISDIR(st.st_mode)) {
            err = EISDIR;
            goto fail;
        }
        if (!S_ISREG(st.st_mode)) {
            free(buf);
            say("osprey profiler: cannot write %s: not a regular file, character device or FIFO",
                path);
            return false;
        }
        if (S_ISLNK(lst.st_mode)) {
            resolved = realpath(path, NULL);
            if (resolved == NULL) {
                err = errno;
                goto fail;
            }
            dest = resolved;
        }
    }
    size_t plen = strlen(dest);
    tmp = malloc(plen + 8);
    if (tmp == NULL) {
        err = ENOMEM;
        goto fail;
    }
    memcpy(tmp, dest, plen);
    memcpy(tmp + plen, ".XXXXXX", 8);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        free(tmp);
        tmp = NULL;
        goto fail;
    }
    if (fchmod(fd, 0600) != 0) {
        err = errno;
        goto fail;
    }
    struct osp_prof_out o = {.fd = fd, .buf = buf, .cap = 1 << 16, .len = 0, .err = 0};
    write_body(&o, end_unix);
    err = osp_prof__out_flush(&o);
    if (err) goto fail;
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        err = errno;
        goto fail;
    }
    if (rename(tmp, dest) != 0) {
        err = errno;
        goto fail;
    }
    free(tmp);
    free(resolved);
    free(buf);
    return true;
fail:
    if (fd >= 0) close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(resolved);
    free(buf);
    say("osprey profiler: cannot write %s: %s", path, strerror(err ? err : EIO));
    return false;
}

/* ---- sessions --------------------------------------------------------------------------- */

static void atfork_child(void) {
    /* A forked child is inert for good: it never samples, signals or writes (§(a)). Its
     * copy of the registry (and perhaps of a locked mutex) is never touched again. */
    bool was_on = atomic_load_explicit(&g_on, memory_order_relaxed) != 0;
    atomic_store(&g_forked_child, 1);
    atomic_store(&g_on, 0);
    t_slot = NULL;
    if (was_on && atomic_load(&g_old_action_ready)) sigaction(SIGPROF, &g_old_action, NULL);
}

static void exit_hook(void);

static void init_once(void) {
    if (pthread_key_create(&g_key, key_destructor) != 0) return;
    g_slots = calloc(NSLOTS, sizeof *g_slots);
    if (g_slots == NULL) return;
    for (size_t i = 0; i < NSLOTS; i++) g_slots[i].sm.stat_fd = -1;
    if (pthread_atfork(NULL, NULL, atfork_child) != 0) return;
    if (atexit(exit_hook) != 0) return;
    g_init_ok = true;
}

/* Start a session writing to absolute path `path` at `rate` Hz. `cause` receives the
 * pthread_create error when the sampler cannot start. Registers the calling thread as
 * fiber 0 "main". */
static bool session_start(const char *path, uint32_t rate, int *cause) {
    *cause = 0;
    if (atomic_load(&g_forked_child)) return false;
    pthread_once(&g_init_once, init_once);
    if (!g_init_ok) {
        *cause = ENOMEM;
        return false;
    }
    pthread_mutex_lock(&g_session_lock);
    pthread_mutex_lock(&g_reg);
    int state = g_state;
    pthread_mutex_unlock(&g_reg);
    if (state != SESSION_IDLE) {
        pthread_mutex_unlock(&g_session_lock);
        return false;
    }
    if (rate < OSP_PROF_HZ_MIN) rate = OSP_PROF_HZ_MIN;
    if (rate > OSP_PROF_HZ_MAX) rate = OSP_PROF_HZ_MAX;
    g_rate = rate;
    g_period_ns = 1000000000ull / rate;
    snprintf(g_path, sizeof g_path, "%s", path);
    osp_prof__store_free(&g_store);
    g_ticks = g_late_ticks = 0;
    memset(g_unwind_ends, 0, sizeof g_unwind_ends);
    g_blocked_reads = 0;
    /* CFI tables of every loaded image, before the first sample can need them (§(l.1)). */
    osp_prof__cfi_refresh();
    atomic_store(&g_stop, 0);
    atomic_store(&g_pid, getpid());

    pthread_mutex_lock(&g_reg);
    free(g_rows);
    g_rows = NULL;
    g_nrows = g_rows_cap = 0;
    g_threads_over_limit = 0;
    memset(g_reg_dropped, 0, sizeof g_reg_dropped);
    pthread_mutex_unlock(&g_reg);

    /* Install the handler; keep the program's action to chain to and to restore. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART; /* no SA_ONSTACK: the thread's own stack */
    sigemptyset(&sa.sa_mask);
    atomic_store(&g_old_action_ready, 0);
    struct sigaction old;
    if (sigaction(SIGPROF, NULL, &old) != 0) {
        *cause = errno;
        pthread_mutex_unlock(&g_session_lock);
        return false;
    }
    g_old_action = old;
    atomic_store_explicit(&g_old_action_ready, 1, memory_order_release);
    sigaction(SIGPROF, &sa, NULL);

    atomic_store(&g_start_mono, osp_prof__mono_ns());
    g_start_unix = realtime_ns();

    /* The sampler blocks SIGPROF (and every other asynchronous signal: it never runs
     * program code); it inherits the mask it is created with. */
    sigset_t all, saved;
    sigfillset(&all);
    int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof sync_signals / sizeof *sync_signals; i++)
        sigdelset(&all, sync_signals[i]);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    pthread_mutex_lock(&g_reg);
    g_state = SESSION_RUNNING;
    pthread_mutex_unlock(&g_reg);
    int rc = pthread_create(&g_sampler, NULL, sampler_main, NULL);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc == 0) pthread_setname_np(g_sampler, "osprey-sampler"); /* visible in top, gdb */
    if (rc != 0) {
        pthread_mutex_lock(&g_reg);
        g_state = SESSION_IDLE;
        pthread_mutex_unlock(&g_reg);
        sigaction(SIGPROF, &g_old_action, NULL);
        *cause = rc;
        pthread_mutex_unlock(&g_session_lock);
        return false;
    }
    atomic_store_explicit(&g_on, 1, memory_order_release);
    register_current(0, "main");
    pthread_mutex_unlock(&g_session_lock);
    return true;
}

static bool session_stop(void) {
    pthread_mutex_lock(&g_session_lock);
    pthread_mutex_lock(&g_reg);
    bool running = g_state == SESSION_RUNNING && !atomic_load(&g_forked_child);
    if (running) g_state = SESSION_STOPPING; /* no registrations from now on */
    pthread_mutex_unlock(&g_reg);
    if (!running) {
        pthread_mutex_unlock(&g_session_lock);
        return false;
    }
    atomic_store(&g_on, 0);
    atomic_store_explicit(&g_stop, 1, memory_order_release);
    pthread_join(g_sampler, NULL);

    /* No thread is sampled any more: retire every slot (owners free them later). */
    pthread_mutex_lock(&g_reg);
    for (size_t i = 0; i < g_slots_hi; i++) {
        struct slot *s = &g_slots[i];
        if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_ACTIVE) continue;
        slot_abandon_request(s, g_store.dropped);
        atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
        atomic_store_explicit(&s->state, SLOT_RETIRED, memory_order_release);
    }
    for (int i = 0; i < OSP_DROP_COUNT; i++) g_store.dropped[i] += g_reg_dropped[i];
    pthread_mutex_unlock(&g_reg);

    /* Restore the program's SIGPROF action. Passing through SIG_IGN discards any of our
     * signals still pending in some thread, which the restored action (possibly the
     * default: terminate) would otherwise receive. If the program replaced our handler
     * during the session, its own handler stays. */
    struct sigaction cur;
    bool ours = sigaction(SIGPROF, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
                cur.sa_sigaction == on_sigprof;
    /* A program that installs its own SIGPROF action (setitimer(ITIMER_PROF) and a
     * handler, another profiler) takes every sample signal from then on: say so once,
     * rather than hand over a silently empty profile ((k) item 9; issue 3). */
    if (!ours)
        say("osprey profiler: SIGPROF handler was replaced by the program; samples after that "
            "point are lost");
    if (ours) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGPROF, &ign, NULL);
        sigaction(SIGPROF, &g_old_action, NULL);
    }
    /* No sample will be taken: unmap the tables (once no walk still reads them). */
    osp_prof__cfi_reset();

    osp_prof__store_sort(&g_store);
    bool ok = write_raw(g_path, realtime_ns());

    osp_prof__store_free(&g_store);
    pthread_mutex_lock(&g_reg);
    free(g_rows);
    g_rows = NULL;
    g_nrows = g_rows_cap = 0;
    g_state = SESSION_IDLE;
    pthread_mutex_unlock(&g_reg);
    pthread_mutex_unlock(&g_session_lock);
    return ok;
}

/* atexit: return from main or exit() from any thread (§(a)). */
static void exit_hook(void) {
    if (atomic_load(&g_forked_child)) return;
    session_stop();
}

static void boot_impl(void) {
    const char *out = getenv("OSPREY_PROFILE");
    if (out == NULL || out[0] == '\0') return; /* inert: nothing else happens */
    const char *hz_text = getenv("OSPREY_PROFILE_HZ");
    bool bad = false;
    uint32_t hz = osp_prof__parse_hz(hz_text, &bad);
    if (bad) osp_prof__warn_bad_hz(2, hz_text);
    char path[OSP_PROF_PATH_MAX + 1];
    int rc = osp_prof__absolute_path(out, path, sizeof path);
    char shown[256];
    snprintf(shown, sizeof shown, "%s", out);
    /* Children never profile into, or overwrite, this process's file. */
    unsetenv("OSPREY_PROFILE");
    unsetenv("OSPREY_PROFILE_HZ");
    if (rc == ENAMETOOLONG) {
        say("osprey profiler: output path too long; profiling disabled");
        return;
    }
    if (rc != 0) {
        say("osprey profiler: cannot resolve %s: %s; profiling disabled", shown, strerror(rc));
        return;
    }
    int cause = 0;
    if (!session_start(path, hz, &cause) && cause != 0)
        say("osprey profiler: cannot start sampler: %s; profiling disabled", strerror(cause));
}

OSP_PROF_PUBLIC void osp_prof_boot(void) {
    pthread_once(&g_boot_once, boot_impl);
}

/* Boot at load time too, so any program linked with the runtime can be profiled. */
__attribute__((constructor)) static void osp_prof_load_constructor(void) {
    osp_prof_boot();
}

OSP_PROF_PUBLIC bool osp_prof_session_begin(const char *path, uint32_t rate_hz) {
    if (path == NULL || path[0] == '\0') return false;
    char abs[OSP_PROF_PATH_MAX + 1];
    if (osp_prof__absolute_path(path, abs, sizeof abs) != 0) return false;
    int cause = 0;
    return session_start(abs, rate_hz, &cause);
}

OSP_PROF_PUBLIC bool osp_prof_session_end(void) {
    return session_stop();
}

#endif /* OSP_PROF_SAMPLER */
