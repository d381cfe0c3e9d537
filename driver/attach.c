/*
 * attach.c — the out-of-process sampler (see attach.h for the model; docs/spec/profiler.md
 * §(l.9)). Sections: /proc helpers; refusals and seizing; remote memory and registers; the
 * ptrace event loop; images from /proc/<pid>/maps; the sample store; the capture loop;
 * the raw writer.
 *
 * Ptrace states a traced thread can be in, and who moves it on:
 *   running          — PTRACE_INTERRUPT (a sample, or the final detach) stops it;
 *   interrupt stop   — PTRACE_EVENT_STOP/SIGTRAP: we read registers and PTRACE_CONT at once;
 *   signal stop      — a signal for it (event 0): re-delivered with PTRACE_CONT(sig) at once;
 *   group stop       — PTRACE_EVENT_STOP with a stop signal: PTRACE_LISTEN (stays stopped,
 *                      as unprofiled); its end is reported as another event stop → CONT.
 * The capture loop reaps every event with waitpid(-1, WNOHANG | __WALL) whenever SIGCHLD
 * wakes it (a signalfd), so a signal for the target is delayed by microseconds, not a tick.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "attach.h"
#include "attach_elf.h"
#include "attach_unwind.h"
#include "osp_raw_format.h"
#include "prof_cfi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

#if defined(__x86_64__)
#define OSP_ATTACH_MACHINE  EM_X86_64
#define OSP_ATTACH_PLATFORM "linux-x86_64"
#else
#define OSP_ATTACH_MACHINE  EM_AARCH64
#define OSP_ATTACH_PLATFORM "linux-arm64"
#endif

enum { MAX_FRAMES = 128, MAX_SAMPLES = 50 * 1000 * 1000 };

/* ---- /proc helpers ---------------------------------------------------------------- */

static uint64_t now_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Read a small /proc file into buf (NUL-terminated). Returns its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return n;
}

/* pread of a /proc file kept open (seq files regenerate at offset 0). */
static ssize_t pread_small(int fd, char *buf, size_t cap) {
    if (fd < 0) return -1;
    ssize_t n = pread(fd, buf, cap - 1, 0);
    if (n < 0) return -1;
    buf[n] = 0;
    return n;
}

/* The value of "<key>:\t..." in /proc/<pid>/status, as a long; -1 if absent. */
static long status_field(pid_t pid, const char *key) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (read_small(path, buf, sizeof buf) < 0) return -1;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') return strtol(line + kl + 1, NULL, 10);
    return -1;
}

/* /proc/<pid>/comm without its newline ("" if unreadable). */
static void read_comm(pid_t pid, pid_t tid, char *out, size_t cap) {
    char path[64];
    if (tid > 0)
        snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    else
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (read_small(path, out, cap) < 0) out[0] = 0;
    out[strcspn(out, "\n")] = 0;
}

/* The state letter of a /proc/.../stat line (after the parenthesised name), or 0. */
static char stat_state(const char *buf) {
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* ---- sessions ------------------------------------------------------------------------ */

typedef struct athread {
    pid_t tid;
    size_t row;     /* index into the session's rows */
    int stat_fd;    /* /proc/<pid>/task/<tid>/stat */
    int sched_fd;   /* .../schedstat: CPU time used, in ns */
    int syscall_fd; /* .../syscall: where a blocked thread waits */
    bool gone, group_stopped;
    uint64_t last_cpu_ns; /* schedstat runtime at its previous on-CPU sample (at first:
                           * when it was seized) */
    bool have_cpu;
    uint64_t walk_cpu_ns; /* schedstat runtime read as its stack was taken this tick */
    bool walk_cpu_ok;     /* ... and whether it could be read (false: the thread is gone) */
    char wait_key[160];   /* the syscall line of the last captured waiting stack */
    long wait_stack;      /* its stack index, -1: none */
} athread;

typedef struct arow {
    long fiber;
    pid_t tid;
    char label[32];
} arow;

typedef struct aimage {
    char *path;
    uint64_t base, slide, text, text_size;
    unsigned machine;
    char build_id[129];       /* lowercase hex, "" if none */
    char *symbols_json;       /* the vDSO's "symbols" array text, NULL for other images */
    struct osp_cfi_table cfi; /* from its .eh_frame (x86-64); empty (nrows 0) if none */
} aimage;

struct osp_attach {
    pid_t pid;
    char exe[PATH_MAX];
    int proc_stat_fd; /* /proc/<pid>/stat, kept open: its thread count, read every tick */
    unsigned rate_hz;
    bool attached;
    athread *th;
    size_t nth, cap_th;
    arow *rows;
    size_t nrows, cap_rows;
    /* stacks: frames in one array, stack k = frames[stack_off[k] .. + stack_len[k]) */
    uint64_t *frames;
    size_t nframes, cap_frames;
    size_t *stack_off;
    uint32_t *stack_len;
    size_t nstacks, cap_stacks;
    uint32_t *stack_hash_slots; /* open addressing: stack index + 1, 0 empty */
    size_t hash_cap;
    long *truncated;
    size_t ntrunc, cap_trunc;
    /* samples */
    struct asample {
        uint64_t t_ns, weight_ns;
        uint32_t row, stack;
        uint8_t state;
    } *samples;
    size_t nsamples, cap_samples;
    uint64_t start_unix_ns, end_unix_ns, start_mono_ns, elapsed_ns;
    uint64_t ticks, late_ticks;
    uint64_t drop_alloc, drop_no_answer, drop_store_full, drop_thread_gone;
    uint64_t stopped_ns; /* Σ per sample: stop seen → thread continued */
    bool ended_stopped;  /* every live thread group-stopped at detach_all */
    uint64_t thread_ns;  /* Σ per tick: tick length × threads sampled that tick */
    uint64_t cpu_ns;     /* the capturing thread's CPU time during the capture */
    aimage *images;
    size_t nimages;
    /* the target's mappings that are not executable, in address order (from the last read
     * of /proc/<pid>/maps): the one holding a thread's sp bounds the stack it walks */
    struct amap {
        uint64_t lo, hi;
    } *data_maps;
    size_t ndata_maps;
    /* the images' CFI tables, sorted by address, for the walker (osp_unwind_cfi_step) */
    const struct osp_cfi_table **cfi_tables;
    size_t ncfi;
    osp_unwind_cfi cfi;
    uint64_t rng;
    /* a memory-read cache of one page for the thread being walked */
    uint64_t cache_page;
    bool cache_valid;
    unsigned char cache[4096];
    pid_t walk_tid;
    /* one tick's plan per thread (plan_thread / finish_thread) */
    struct tick_plan {
        int plan;
        uint64_t pc;
        char syscall_line[160];
        bool interrupted; /* PTRACE_INTERRUPT sent, its stop not collected yet */
        long stack;       /* the captured stack (walk_stopped's result); -2: none */
    } *plans;
    size_t cap_plans;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) return NULL;
    *cap = c;
    return q;
}

/* ---- remote memory and registers ----------------------------------------------------- */

static int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len) {
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    return n == (ssize_t)len ? 0 : -1;
}

/* osp_unwind_read_fn over process_vm_readv with a one-page cache (frame records of one
 * walk are usually on the same page or the next). The cache lives for one walk. */
static int walk_read(void *ctx, uint64_t addr, void *buf, size_t len) {
    osp_attach *a = ctx;
    uint64_t page = addr & ~(uint64_t)4095;
    if (len > 4096 || addr + len < addr) return -1;
    if ((addr + len - 1) / 4096 != page / 4096) return remote_read(a->walk_tid, addr, buf, len);
    if (!a->cache_valid || a->cache_page != page) {
        if (remote_read(a->walk_tid, page, a->cache, 4096) != 0) {
            a->cache_valid = false;
            return remote_read(a->walk_tid, addr, buf, len);
        }
        a->cache_page = page;
        a->cache_valid = true;
    }
    memcpy(buf, a->cache + (addr - page), len);
    return 0;
}

static int get_regs(pid_t tid, osp_remote_regs *r) {
#if defined(__x86_64__)
    struct user_regs_struct regs;
    struct iovec io = {&regs, sizeof regs};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0) return -1;
    r->pc = regs.rip;
    r->sp = regs.rsp;
    r->fp = regs.rbp;
    r->lr = 0;
#else
    struct user_pt_regs regs;
    struct iovec io = {&regs, sizeof regs};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0) return -1;
    r->pc = regs.pc;
    r->sp = regs.sp;
    r->fp = regs.regs[29];
    r->lr = regs.regs[30];
#endif
    return 0;
}

/* ---- threads -------------------------------------------------------------------------- */

static athread *find_thread(osp_attach *a, pid_t tid) {
    for (size_t i = 0; i < a->nth; i++)
        if (a->th[i].tid == tid && !a->th[i].gone) return &a->th[i];
    return NULL;
}

static void thread_close_fds(athread *t) {
    if (t->stat_fd >= 0) close(t->stat_fd);
    if (t->sched_fd >= 0) close(t->sched_fd);
    if (t->syscall_fd >= 0) close(t->syscall_fd);
    t->stat_fd = t->sched_fd = t->syscall_fd = -1;
}

static void thread_gone(athread *t) {
    t->gone = true;
    thread_close_fds(t);
}

/* Seize `tid` and add it (a row of its own). 0, or the errno of PTRACE_SEIZE. */
static int seize_thread(osp_attach *a, pid_t tid) {
    if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)0) != 0) return errno ? errno : EPERM;
    athread *th = grow(a->th, &a->cap_th, a->nth + 1, sizeof *th);
    arow *rows = th ? grow(a->rows, &a->cap_rows, a->nrows + 1, sizeof *rows) : NULL;
    if (th) a->th = th;
    if (rows) a->rows = rows;
    if (!th || !rows) {
        ptrace(PTRACE_INTERRUPT, tid, NULL, NULL); /* cannot follow it: let it go */
        int st;
        if (waitpid(tid, &st, __WALL) == tid && WIFSTOPPED(st)) ptrace(PTRACE_DETACH, tid, 0, 0);
        return ENOMEM;
    }
    athread *t = &a->th[a->nth++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->wait_stack = -1;
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)a->pid, (int)tid);
    t->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)a->pid, (int)tid);
    t->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
    /* The CPU time its first on-CPU sample stands for counts from here, as from a
     * registration (§(b.2)). Taking one tick instead gave each new short-lived thread a
     * whole tick: 51 s of CPU in 3 s on two cores with thread churn. */
    char sbuf[128];
    if (pread_small(t->sched_fd, sbuf, sizeof sbuf) > 0) {
        t->last_cpu_ns = strtoull(sbuf, NULL, 10);
        t->have_cpu = true;
    }
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)a->pid, (int)tid);
    t->syscall_fd = open(path, O_RDONLY | O_CLOEXEC);
    arow *r = &a->rows[a->nrows];
    t->row = a->nrows++;
    r->tid = tid;
    /* Rows: the process's main thread is fiber 0 "main"; others 1, 2, ... in the order they
     * were first seen, labelled with their thread name when it differs from the process's. */
    r->fiber = tid == a->pid ? 0 : (long)t->row; /* the main thread is seized first: row 0 */
    if (tid == a->pid) {
        snprintf(r->label, sizeof r->label, "main");
    } else {
        char comm[32], pcomm[32];
        read_comm(a->pid, tid, comm, sizeof comm);
        read_comm(a->pid, 0, pcomm, sizeof pcomm);
        snprintf(r->label, sizeof r->label, "%s", comm[0] && strcmp(comm, pcomm) ? comm : "thread");
    }
    return 0;
}

/* Re-read /proc/<pid>/task: seize new threads, mark vanished ones gone. Returns the number
 * of threads alive. About ten syscalls; osp_attach_capture calls it only when the thread
 * count changed (threads_changed) or every SCAN_NS as a backstop. */
static size_t scan_threads(osp_attach *a) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)a->pid);
    DIR *d = opendir(path);
    if (!d) {
        for (size_t i = 0; i < a->nth; i++)
            if (!a->th[i].gone) thread_gone(&a->th[i]);
        return 0;
    }
    size_t alive = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        pid_t tid = (pid_t)atol(de->d_name);
        if (tid <= 0) continue;
        if (find_thread(a, tid) || seize_thread(a, tid) == 0) alive++;
    }
    closedir(d);
    return alive;
}

/* The backstop period of the thread scan (a thread that started while another exited, so
 * that the count looked unchanged, is seen within this time). */
#define SCAN_NS 200000000u

/* Whether the process's thread count (/proc/<pid>/stat field 20, one pread) differs from the
 * threads alive here; true also when it cannot be read (the scan then finds out why). */
static bool threads_changed(osp_attach *a) {
    char buf[1024];
    if (pread_small(a->proc_stat_fd, buf, sizeof buf) <= 0) return true;
    const char *p = strrchr(buf, ')');
    if (!p) return true;
    /* after the name: field 3 (state) ... field 20 (num_threads) */
    int field = 2;
    for (; *p && field < 20; p++)
        if (*p == ' ') field++;
    if (field != 20) return true;
    long n = strtol(p, NULL, 10);
    size_t alive = 0;
    for (size_t i = 0; i < a->nth; i++) alive += !a->th[i].gone;
    return n <= 0 || (size_t)n != alive;
}

/* ---- ptrace events ------------------------------------------------------------------------ */

static bool is_stop_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Handle one waitpid report that is not the interrupt stop a sample waits for. */
static void handle_event(osp_attach *a, pid_t tid, int st) {
    athread *t = find_thread(a, tid);
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
        if (t) thread_gone(t);
        return;
    }
    if (!WIFSTOPPED(st)) return;
    int sig = WSTOPSIG(st), ev = (unsigned)st >> 16;
    if (ev == PTRACE_EVENT_STOP) {
        if (is_stop_signal(sig)) { /* group stop: keep it stopped, still hear of its end */
            if (t) t->group_stopped = true;
            ptrace(PTRACE_LISTEN, tid, NULL, NULL);
            return;
        }
        if (t) t->group_stopped = false; /* an interrupt stop or the end of a group stop */
        ptrace(PTRACE_CONT, tid, NULL, NULL);
    } else if (ev == 0) {
        /* A signal for the thread: deliver it as if we were not here. */
        ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
    } else {
        ptrace(PTRACE_CONT, tid, NULL, NULL);
    }
}

static void reap_events(osp_attach *a) {
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, WNOHANG | __WALL);
        if (w <= 0) break;
        handle_event(a, w, st);
    }
}

/* Ask `t` to stop (PTRACE_INTERRUPT). 0, or -1 when it is gone. */
static int send_interrupt(athread *t) {
    if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) != 0) {
        if (errno == ESRCH) thread_gone(t);
        return -1;
    }
    return 0;
}

/* ---- samples ------------------------------------------------------------------------------- */

static uint64_t hash_frames(const uint64_t *f, size_t n) {
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) {
        h ^= f[i];
        h *= 1099511628211u;
        h ^= h >> 29;
    }
    return h;
}

/* The index of stack f[0..n), added if new; -1 when out of memory. */
static long intern_stack(osp_attach *a, const uint64_t *f, size_t n, bool truncated) {
    if (a->hash_cap < 2 * (a->nstacks + 1)) {
        size_t cap = a->hash_cap ? a->hash_cap * 2 : 1024;
        uint32_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t k = 0; k < a->nstacks; k++) {
            size_t i = hash_frames(a->frames + a->stack_off[k], a->stack_len[k]) & (cap - 1);
            while (slots[i]) i = (i + 1) & (cap - 1);
            slots[i] = (uint32_t)k + 1;
        }
        free(a->stack_hash_slots);
        a->stack_hash_slots = slots;
        a->hash_cap = cap;
    }
    size_t i = hash_frames(f, n) & (a->hash_cap - 1);
    while (a->stack_hash_slots[i]) {
        size_t k = a->stack_hash_slots[i] - 1;
        if (a->stack_len[k] == n && memcmp(a->frames + a->stack_off[k], f, n * sizeof *f) == 0)
            return (long)k;
        i = (i + 1) & (a->hash_cap - 1);
    }
    uint64_t *fr = grow(a->frames, &a->cap_frames, a->nframes + n, sizeof *fr);
    if (!fr) return -1;
    a->frames = fr;
    size_t cap_off = a->cap_stacks, cap_len = a->cap_stacks;
    size_t *off = grow(a->stack_off, &cap_off, a->nstacks + 1, sizeof *off);
    if (!off) return -1;
    a->stack_off = off;
    uint32_t *len = grow(a->stack_len, &cap_len, a->nstacks + 1, sizeof *len);
    if (!len) return -1;
    a->stack_len = len;
    a->cap_stacks = cap_off < cap_len ? cap_off : cap_len;
    if (truncated) {
        long *tr = grow(a->truncated, &a->cap_trunc, a->ntrunc + 1, sizeof *tr);
        if (!tr) return -1;
        a->truncated = tr;
        a->truncated[a->ntrunc++] = (long)a->nstacks;
    }
    memcpy(a->frames + a->nframes, f, n * sizeof *f);
    a->stack_off[a->nstacks] = a->nframes;
    a->stack_len[a->nstacks] = (uint32_t)n;
    a->nframes += n;
    a->stack_hash_slots[i] = (uint32_t)a->nstacks + 1;
    return (long)a->nstacks++;
}

static void add_sample(osp_attach *a, uint64_t t_ns, const athread *t, long stack, int state,
                       uint64_t weight_ns) {
    if (stack < 0) {
        a->drop_alloc++;
        return;
    }
    if (a->nsamples >= MAX_SAMPLES) {
        a->drop_store_full++;
        return;
    }
    struct asample *s = grow(a->samples, &a->cap_samples, a->nsamples + 1, sizeof *s);
    if (!s) {
        a->drop_alloc++;
        return;
    }
    a->samples = s;
    s[a->nsamples++] =
        (struct asample){t_ns, weight_ns, (uint32_t)t->row, (uint32_t)stack, (uint8_t)state};
}

/* The stack that holds `sp`: the non-executable mapping it lies in, from the last read of
 * /proc/<pid>/maps (0, 0 when none does: a thread newer than that read). */
static void stack_bounds(const osp_attach *a, uint64_t sp, uint64_t *lo, uint64_t *hi) {
    *lo = *hi = 0;
    size_t l = 0, r = a->ndata_maps;
    while (l < r) {
        size_t m = l + (r - l) / 2;
        if (sp < a->data_maps[m].lo) {
            r = m;
        } else if (sp >= a->data_maps[m].hi) {
            l = m + 1;
        } else {
            *lo = a->data_maps[m].lo;
            *hi = a->data_maps[m].hi;
            return;
        }
    }
}

/* Walk the stack of `t`, in its interrupt stop, and continue it. `held_from`: when the
 * stop is counted from (see capture_tick). The stack index, -1 when out of memory, -2
 * when nothing could be read. */
static long walk_stopped(osp_attach *a, athread *t, uint64_t held_from) {
    osp_remote_regs regs;
    uint64_t frames[MAX_FRAMES];
    size_t n = 0;
    bool truncated = false;
    if (get_regs(t->tid, &regs) == 0) {
        a->walk_tid = t->tid;
        a->cache_valid = false;
        a->cfi.read = walk_read;
        a->cfi.read_ctx = a;
        osp_unwinder u = {.read = walk_read,
                          .read_ctx = a,
                          .step = a->ncfi ? osp_unwind_cfi_step : NULL,
                          .step_ctx = &a->cfi};
        stack_bounds(a, regs.sp, &u.stack_lo, &u.stack_hi);
        n = osp_unwind_walk(&u, &regs, frames, MAX_FRAMES, &truncated);
    }
    ptrace(PTRACE_CONT, t->tid, NULL, NULL);
    a->stopped_ns += now_ns(CLOCK_MONOTONIC) - held_from;
    /* Its CPU time now, right after the stop (a short-lived thread may be gone by the
     * time the tick records its sample). */
    char buf[128];
    t->walk_cpu_ok = pread_small(t->sched_fd, buf, sizeof buf) > 0;
    t->walk_cpu_ns = t->walk_cpu_ok ? strtoull(buf, NULL, 10) : 0;
    if (n == 0) return -2;
    return intern_stack(a, frames, n, truncated);
}

/* Parse the PC out of a /proc/.../syscall line "nr a1 .. a6 sp pc" (0 if none). */
static uint64_t syscall_line_pc(const char *line) {
    const char *last = strrchr(line, ' ');
    return last ? strtoull(last + 1, NULL, 0) : 0;
}

/* What one tick does with a thread (decided from /proc, before any thread is stopped). */
enum plan { PLAN_NONE, PLAN_ON_CPU, PLAN_WAIT_CAPTURE, PLAN_WAIT_CACHED, PLAN_WAIT_PC };

/* First half of a tick for `t`: read its state from /proc and decide, before any thread
 * is stopped, so the reads never lengthen a stop. */
static enum plan plan_thread(athread *t, char *syscall_line, size_t cap, uint64_t *pc) {
    char buf[512];
    if (pread_small(t->stat_fd, buf, sizeof buf) <= 0) {
        thread_gone(t);
        return PLAN_NONE;
    }
    char state = stat_state(buf);
    if (state == 'R') return PLAN_ON_CPU;
    if (state != 'S' && state != 'D') return PLAN_NONE; /* stopped, exiting: no sample */
    ssize_t n = pread_small(t->syscall_fd, syscall_line, cap);
    bool in_syscall = n > 0 && syscall_line[0] >= '0' && syscall_line[0] <= '9';
    if (in_syscall)
        syscall_line[strcspn(syscall_line, "\n")] = 0;
    else
        syscall_line[0] = 0;
    if (in_syscall && t->wait_stack >= 0 && strcmp(syscall_line, t->wait_key) == 0)
        return PLAN_WAIT_CACHED; /* the same wait as last time: no need to stop it again */
    if (state == 'D') {
        /* Uninterruptible: never stopped; its PC where the syscall file gives one. */
        *pc = in_syscall ? syscall_line_pc(syscall_line) : 0;
        return *pc ? PLAN_WAIT_PC : PLAN_NONE;
    }
    return PLAN_WAIT_CAPTURE;
}

/*
 * Second step of a tick: every thread whose plan needs its stack is sent PTRACE_INTERRUPT
 * (one each), then the stops are collected in the order they come (waitpid(-1)): each is
 * walked and continued at once, other reports are handled on the way. The interrupts of
 * one tick overlap, so osprey waits for one stop latency per tick, not one per thread.
 * Reports are polled for up to 200 µs before sleeping in waitpid: sleeping would give up
 * the CPU, and on a busy machine getting it back can take milliseconds, all of them with a
 * target thread stopped. A thread's held-stopped time counts from when its stop was seen,
 * or, when its report was already waiting as the previous walk ended, from when the previous
 * stop was seen (it may have stopped at any time during that walk): an upper bound.
 */
static void capture_tick(osp_attach *a) {
    size_t pending = 0;
    for (size_t i = 0; i < a->nth && i < a->cap_plans; i++) {
        struct tick_plan *tp = &a->plans[i];
        tp->interrupted = false;
        tp->stack = -2;
        if (tp->plan != PLAN_ON_CPU && tp->plan != PLAN_WAIT_CAPTURE) continue;
        if (send_interrupt(&a->th[i]) == 0) {
            tp->interrupted = true;
            pending++;
        }
    }
    uint64_t spin_until = now_ns(CLOCK_MONOTONIC) + 200 * 1000, prev_seen = 0;
    bool after_walk = false; /* no poll came back empty since the last walk */
    while (pending > 0) {
        int st;
        /* Right after a walk, always poll first: a report waiting already is told apart
         * from one that a sleeping waitpid would bring later. */
        bool spin = after_walk || now_ns(CLOCK_MONOTONIC) < spin_until;
        pid_t w = waitpid(-1, &st, __WALL | (spin ? WNOHANG : 0));
        if (w == 0) {
            after_walk = false;
            continue; /* nothing yet: poll again */
        }
        if (w < 0) {
            if (errno == EINTR) continue;
            break; /* ECHILD: no tracee left */
        }
        size_t i = 0;
        while (i < a->nth && i < a->cap_plans && !(a->th[i].tid == w && !a->th[i].gone)) i++;
        struct tick_plan *tp = i < a->nth && i < a->cap_plans ? &a->plans[i] : NULL;
        if (tp && tp->interrupted && WIFSTOPPED(st) && ((unsigned)st >> 16) == PTRACE_EVENT_STOP &&
            !is_stop_signal(WSTOPSIG(st))) {
            uint64_t seen = now_ns(CLOCK_MONOTONIC);
            tp->stack = walk_stopped(a, &a->th[i], after_walk ? prev_seen : seen);
            prev_seen = seen;
            after_walk = true;
            tp->interrupted = false;
            pending--;
            continue;
        }
        handle_event(a, w, st);
        if (tp && tp->interrupted && (a->th[i].gone || a->th[i].group_stopped)) {
            tp->interrupted = false; /* exited, or stopped by a signal: not sampled */
            pending--;
        }
    }
}

/* Last step: record the sample. */
static void finish_thread(osp_attach *a, athread *t, const struct tick_plan *tp, uint64_t t_ns,
                          uint64_t tick_ns) {
    long k = -1;
    enum plan plan = (enum plan)tp->plan;
    const char *syscall_line = tp->syscall_line;
    uint64_t pc = tp->pc;
    switch (plan) {
    case PLAN_NONE: return;
    case PLAN_ON_CPU: {
        k = tp->stack;
        if (k == -2) {
            if (t->gone) a->drop_thread_gone++;
            return;
        }
        uint64_t weight_ns = tick_ns;
        if (!t->walk_cpu_ok && t->have_cpu) {
            /* Gone before its CPU time could be read: no made-up weight (a whole tick
             * each, for short-lived threads, was most of the profile's CPU time). */
            a->drop_thread_gone++;
            return;
        }
        if (t->walk_cpu_ok) {
            uint64_t cpu_ns = t->walk_cpu_ns;
            if (t->have_cpu) {
                /* No CPU time since its last sample: runnable, not running (§(b.2) case
                 * 3: no sample; its CPU time goes to its next one). */
                if (cpu_ns <= t->last_cpu_ns) return;
                weight_ns = cpu_ns - t->last_cpu_ns;
            }
            t->last_cpu_ns = cpu_ns;
            t->have_cpu = true;
        }
        t->wait_stack = -1;
        add_sample(a, t_ns, t, k, 0, weight_ns);
        return;
    }
    case PLAN_WAIT_CAPTURE:
        k = tp->stack;
        if (k == -2) {
            if (t->gone) a->drop_thread_gone++;
            return;
        }
        if (syscall_line[0] && k >= 0) {
            snprintf(t->wait_key, sizeof t->wait_key, "%s", syscall_line);
            t->wait_stack = k;
        }
        break;
    case PLAN_WAIT_CACHED: k = t->wait_stack; break;
    case PLAN_WAIT_PC: k = intern_stack(a, &pc, 1, false); break;
    }
    add_sample(a, t_ns, t, k, 1, tick_ns);
}

/* ---- images ------------------------------------------------------------------------------- */

static void free_images(aimage *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(v[i].path);
        free(v[i].symbols_json);
        osp_prof__cfi_table_free(&v[i].cfi);
    }
    free(v);
}

/* attach_elf_read_fn: target memory first, the file on disk if that fails. */
struct image_src {
    pid_t pid;
    const char *path;
};

static int image_bytes(void *ctx, uint64_t addr, uint64_t file_off, void *buf, size_t len) {
    const struct image_src *src = ctx;
    if (remote_read(src->pid, addr, buf, len) == 0) return 0;
    if (src->path[0] != '/') return -1;
    int fd = open(src->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = pread(fd, buf, len, (off_t)file_off);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

/* attach_elf_read_fn over an open file (`ctx` points at its descriptor): file offsets. */
static int file_bytes(void *ctx, uint64_t addr, uint64_t file_off, void *buf, size_t len) {
    (void)addr;
    ssize_t n = pread(*(const int *)ctx, buf, len, (off_t)file_off);
    return n == (ssize_t)len ? 0 : -1;
}

/* attach_elf_read_fn over a copy of an image (the vDSO): file offsets into the copy. */
struct mem_image {
    const unsigned char *p;
    size_t size;
};

static int mem_bytes(void *ctx, uint64_t addr, uint64_t file_off, void *buf, size_t len) {
    (void)addr;
    const struct mem_image *m = ctx;
    if (file_off > m->size || len > m->size - file_off) return -1;
    memcpy(buf, m->p + file_off, len);
    return 0;
}

/*
 * The CFI table of an image (§(l.1), §(l.9)): its `.eh_frame` decoded by the runtime's table
 * builder (runtime/prof/prof_cfi.c) into im->cfi, at the image's run-time addresses (the
 * section's link-time address plus the slide). `vdso`: the vDSO's bytes, copied from the
 * target. Otherwise the file is read, through /proc/<pid>/root so that a process in another
 * mount namespace is read from its own files, and only when its build-id is the mapped
 * image's (a library replaced on disk since it was loaded gets no table rather than a wrong
 * one). Without a table the image's frames are walked by frame pointers.
 */
static void build_cfi(pid_t pid, aimage *im, const char *path, const unsigned char *vdso,
                      size_t vdso_size) {
#if defined(__x86_64__)
    attach_elf_section sec;
    if (vdso) {
        struct mem_image m = {vdso, vdso_size};
        if (attach_elf_eh_frame(mem_bytes, &m, &sec) && sec.offset <= vdso_size &&
            sec.size <= vdso_size - sec.offset)
            osp_prof__cfi_build(vdso + sec.offset, (size_t)sec.size,
                                (uintptr_t)(im->slide + sec.addr), (uintptr_t)im->slide, &im->cfi,
                                NULL);
        return;
    }
    char file[PATH_MAX + 32];
    snprintf(file, sizeof file, "/proc/%d/root%s", (int)pid, path);
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    attach_elf_info info;
    if (im->build_id[0] && (!attach_elf_describe(file_bytes, &fd, 0, &info) ||
                            strcmp(info.build_id, im->build_id) != 0)) {
        close(fd);
        return;
    }
    if (attach_elf_eh_frame(file_bytes, &fd, &sec)) {
        uint8_t *buf = malloc((size_t)sec.size);
        if (buf && file_bytes(&fd, sec.offset, sec.offset, buf, (size_t)sec.size) == 0)
            osp_prof__cfi_build(buf, (size_t)sec.size, (uintptr_t)(im->slide + sec.addr),
                                (uintptr_t)im->slide, &im->cfi, NULL);
        free(buf);
    }
    close(fd);
#else
    (void)pid, (void)im, (void)path, (void)vdso, (void)vdso_size; /* frame records suffice */
#endif
}

static int table_cmp(const void *x, const void *y) {
    const struct osp_cfi_table *a = *(const struct osp_cfi_table *const *)x;
    const struct osp_cfi_table *b = *(const struct osp_cfi_table *const *)y;
    return a->lo < b->lo ? -1 : a->lo > b->lo ? 1 : 0;
}

/* Point the walker at the tables of a->images: sorted, overlaps (impossible for real
 * images) dropped. Called whenever a->images changes. */
static void index_cfi(osp_attach *a) {
    free(a->cfi_tables);
    a->cfi_tables = NULL;
    a->ncfi = 0;
    a->cfi.tables = NULL;
    a->cfi.ntables = 0;
    const struct osp_cfi_table **v = a->nimages ? malloc(a->nimages * sizeof *v) : NULL;
    if (!v) return;
    size_t n = 0;
    for (size_t i = 0; i < a->nimages; i++)
        if (a->images[i].cfi.nrows > 0) v[n++] = &a->images[i].cfi;
    qsort(v, n, sizeof *v, table_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[i]->lo >= v[m - 1]->hi) v[m++] = v[i];
    a->cfi_tables = v;
    a->ncfi = m;
    a->cfi.tables = v;
    a->cfi.ntables = m;
    a->cfi.last = 0;
}

/* Describe the ELF image whose file offset 0 is mapped at `base` (§(e) "Images"). */
static bool describe_image(pid_t pid, const char *path, uint64_t base, uint64_t map_end,
                           aimage *im) {
    struct image_src src = {pid, path};
    attach_elf_info info;
    if (!attach_elf_describe(image_bytes, &src, base, &info)) return false;
    im->base = info.base;
    im->slide = info.slide;
    im->text = info.text;
    im->text_size = info.text_size;
    im->machine = info.machine;
    memcpy(im->build_id, info.build_id, sizeof im->build_id);
    if (strcmp(path, "[vdso]") == 0 && map_end > base && map_end - base <= (1u << 20)) {
        size_t size = (size_t)(map_end - base);
        unsigned char *copy = malloc(size);
        if (copy && remote_read(pid, base, copy, size) == 0) {
            im->symbols_json = attach_elf_symbols_json(copy, size);
            build_cfi(pid, im, path, copy, size);
        }
        free(copy);
    }
    return true;
}

/* Re-read /proc/<pid>/maps into a->images. Keeps the previous list when it cannot. */
static void read_images(osp_attach *a) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)a->pid);
    FILE *f = fopen(path, "re");
    if (!f) return;
    aimage *v = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL, *last_path = NULL;
    size_t linecap = 0;
    bool failed = false;
    struct amap *dm = NULL;
    size_t ndm = 0, capdm = 0;
    /* Each image once: its mapping at file offset 0 (the first of consecutive mappings of
     * one path); the end of that path's mappings bounds the vDSO copy. */
    while (getline(&line, &linecap, f) > 0) {
        unsigned long long lo, hi, off;
        int name_at = 0;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &name_at) < 4 ||
            name_at == 0)
            continue;
        char *name = line + name_at;
        name[strcspn(name, "\n")] = 0;
        if (perms[0] && perms[1] && perms[2] != 'x' && hi > lo) {
            /* a stack is one of these: [stack], a thread's anonymous mapping */
            struct amap *g = grow(dm, &capdm, ndm + 1, sizeof *dm);
            if (g) {
                dm = g;
                dm[ndm++] = (struct amap){lo, hi};
            }
        }
        if (!(name[0] == '/' || strcmp(name, "[vdso]") == 0)) continue;
        if (last_path && strcmp(last_path, name) == 0) continue;
        free(last_path);
        last_path = strdup(name);
        if (off != 0) continue;
        aimage *g = grow(v, &cap, n + 1, sizeof *v);
        if (!g) {
            failed = true;
            break;
        }
        v = g;
        memset(&v[n], 0, sizeof v[n]);
        if (!describe_image(a->pid, name, lo, hi, &v[n])) continue;
        v[n].path = strdup(name);
        if (!v[n].path) {
            osp_prof__cfi_table_free(&v[n].cfi);
            free(v[n].symbols_json);
            failed = true;
            break;
        }
        if (strcmp(name, "[vdso]") != 0) {
            /* An image seen before keeps its table (or its lack of one); a new one is read. */
            aimage *old = NULL;
            for (size_t j = 0; j < a->nimages && !old; j++)
                if (a->images[j].base == v[n].base && strcmp(a->images[j].path, name) == 0 &&
                    strcmp(a->images[j].build_id, v[n].build_id) == 0)
                    old = &a->images[j];
            if (old) {
                v[n].cfi = old->cfi;
                memset(&old->cfi, 0, sizeof old->cfi);
            } else {
                build_cfi(a->pid, &v[n], name, NULL, 0);
            }
        }
        n++;
    }
    free(line);
    free(last_path);
    fclose(f);
    if (ndm) {
        free(a->data_maps);
        a->data_maps = dm;
        a->ndata_maps = ndm;
    } else {
        free(dm);
    }
    if (failed || n == 0) {
        free_images(v, n);
        index_cfi(a); /* tables moved into v are gone with it */
        return;
    }
    /* An image gone since the last read -- a plugin dlclose'd, the old program after an
     * exec -- stays listed, without its table (its memory is something else now), so the
     * samples taken while it was mapped keep their names; unless a new image took over its
     * addresses (as the runtime does, docs/profiler-runtime.md "Profiling any program"). */
    for (size_t j = 0; j < a->nimages; j++) {
        aimage *o = &a->images[j];
        if (o->path == NULL) continue;
        uint64_t olo = o->text_size ? o->text : o->base,
                 ohi = olo + (o->text_size ? o->text_size : 1);
        bool keep = true;
        for (size_t i = 0; i < n && keep; i++) {
            uint64_t lo = v[i].text_size ? v[i].text : v[i].base;
            uint64_t hi = lo + (v[i].text_size ? v[i].text_size : 1);
            if (lo < ohi && olo < hi) keep = false; /* still there, or replaced */
        }
        if (!keep) continue;
        aimage *g = grow(v, &cap, n + 1, sizeof *v);
        if (!g) break;
        v = g;
        v[n] = *o;
        memset(o, 0, sizeof *o);
        osp_prof__cfi_table_free(&v[n].cfi);
        n++;
    }
    free_images(a->images, a->nimages);
    a->images = v;
    a->nimages = n;
    index_cfi(a);
}

/* ---- open, refusals, detach ---------------------------------------------------------------- */

static void refuse_permission(pid_t pid, int e, char *err, size_t errlen) {
    char buf[32];
    long scope = -1;
    if (read_small("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof buf) > 0) scope = atol(buf);
    long uid = -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    {
        char st[4096];
        if (read_small(path, st, sizeof st) > 0) {
            char *u = strstr(st, "\nUid:");
            if (u) uid = strtol(u + 5, NULL, 10);
        }
    }
    const char *owner = NULL;
    struct passwd *pw = uid >= 0 ? getpwuid((uid_t)uid) : NULL;
    if (pw) owner = pw->pw_name;
    if (geteuid() != 0 && uid >= 0 && (uid_t)uid != geteuid()) {
        snprintf(err, errlen,
                 "--attach %d: not permitted: the process belongs to %s%s(uid %ld) and osprey "
                 "runs as uid %ld without CAP_SYS_PTRACE; run osprey as that user or as root",
                 (int)pid, owner ? owner : "", owner ? " " : "", uid, (long)geteuid());
    } else if (scope == 1 && geteuid() != 0) {
        snprintf(err, errlen,
                 "--attach %d: not permitted by Yama (kernel.yama.ptrace_scope is 1: only a "
                 "parent may trace its descendants); run osprey as root, or allow it with "
                 "'sysctl kernel.yama.ptrace_scope=0'",
                 (int)pid);
    } else if (scope == 2) {
        snprintf(err, errlen,
                 "--attach %d: not permitted by Yama (kernel.yama.ptrace_scope is 2: only root "
                 "may attach); run osprey as root (or with CAP_SYS_PTRACE)",
                 (int)pid);
    } else if (scope == 3) {
        snprintf(err, errlen,
                 "--attach %d: not permitted by Yama (kernel.yama.ptrace_scope is 3: attaching is "
                 "disabled until the next reboot); profile the program with --record instead",
                 (int)pid);
    } else {
        snprintf(err, errlen,
                 "--attach %d: not permitted: %s (the process may be setuid or not dumpable, or "
                 "ptrace may be blocked by a container or seccomp policy); run osprey as root "
                 "or profile the program with --record",
                 (int)pid, strerror(e));
    }
}

static const char *machine_name(unsigned m, int cls) {
    if (m == EM_X86_64 && cls == ELFCLASS64) return "x86_64";
    if (m == EM_AARCH64) return "arm64";
    if (m == EM_386 || (m == EM_X86_64 && cls == ELFCLASS32)) return "32-bit x86";
    if (m == EM_ARM) return "32-bit ARM";
    if (m == EM_RISCV) return "RISC-V";
    return "non-native";
}

static void detach_all(osp_attach *a) {
    if (!a->attached) return;
    size_t live = 0, stopped = 0;
    for (size_t i = 0; i < a->nth; i++)
        if (!a->th[i].gone) {
            live++;
            if (a->th[i].group_stopped) stopped++;
        }
    a->ended_stopped = live > 0 && stopped == live;
    for (size_t i = 0; i < a->nth; i++) {
        athread *t = &a->th[i];
        if (t->gone) continue;
        if (t->group_stopped && ptrace(PTRACE_DETACH, t->tid, NULL, NULL) == 0) {
            thread_close_fds(t);
            t->gone = true;
            continue;
        }
        /* PTRACE_DETACH needs a stopped tracee: interrupt, detach at that stop. */
        if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) != 0) {
            thread_gone(t);
            continue;
        }
        int pending_sig = 0;
        for (;;) {
            int st;
            pid_t w = waitpid(t->tid, &st, __WALL);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) break;
            if (!WIFSTOPPED(st)) continue;
            int sig = WSTOPSIG(st), ev = (unsigned)st >> 16;
            if (ev == 0) {
                /* A signal stop: detach with the signal, it is delivered then. */
                pending_sig = sig;
                ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(uintptr_t)pending_sig);
                break;
            }
            /* An event stop (ours, or a group stop: it stays stopped after the detach). */
            ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
            break;
        }
        thread_gone(t);
    }
    /* Reports already queued for threads now detached are harmless; drain ours. */
    int st;
    while (waitpid(-1, &st, WNOHANG | __WALL) > 0) {
    }
    a->attached = false;
}

osp_attach *osp_attach_open(pid_t pid, char *err, size_t errlen) {
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
        snprintf(err, errlen,
                 "--attach %d: no such process (check the id with 'ps'; it may have exited)",
                 (int)pid);
        return NULL;
    }
    long tgid = status_field(pid, "Tgid");
    if (tgid < 0) {
        snprintf(err, errlen,
                 "--attach %d: no such process (check the id with 'ps'; it may have exited)",
                 (int)pid);
        return NULL;
    }
    pid = (pid_t)tgid; /* a thread id names its process */
    if (pid == getpid()) {
        snprintf(err, errlen, "--attach %d: that is this osprey process itself", (int)pid);
        return NULL;
    }
    long tracer = status_field(pid, "TracerPid");
    if (tracer > 0) {
        char comm[32];
        read_comm((pid_t)tracer, 0, comm, sizeof comm);
        snprintf(err, errlen,
                 "--attach %d: the process is already traced by %s%spid %ld (a debugger, strace "
                 "or another profiler); detach that tracer first",
                 (int)pid, comm[0] ? comm : "", comm[0] ? ", " : "", tracer);
        return NULL;
    }
    {
        /* A process that has exited but that its parent has not collected yet (a zombie)
         * cannot be seized: say that, not "not permitted". */
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        if (read_small(path, buf, sizeof buf) > 0) {
            char state = stat_state(buf);
            long threads = status_field(pid, "Threads");
            if ((state == 'Z' || state == 'X') && threads > 1) {
                /* Its main thread ended (pthread_exit) and the others run on: the main
                 * thread, whose refusal is the process's, cannot be seized. */
                snprintf(err, errlen,
                         "--attach %d: the process's main thread has exited (pthread_exit) "
                         "while %ld other thread%s run%s on, and --attach needs the main "
                         "thread; profile the program with --record instead",
                         (int)pid, threads - 1, threads - 1 == 1 ? "" : "s",
                         threads - 1 == 1 ? "s" : "");
                return NULL;
            }
            if (state == 'Z' || state == 'X') {
                snprintf(err, errlen,
                         "--attach %d: the process has exited (a zombie: its parent, pid %ld, "
                         "has not collected it yet); there is nothing left to sample",
                         (int)pid, status_field(pid, "PPid"));
                return NULL;
            }
        }
    }
    osp_attach *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "--attach %d: out of memory", (int)pid);
        return NULL;
    }
    a->pid = pid;
    a->proc_stat_fd = -1;
    /* The main thread first: its refusal is the process's. */
    int e = seize_thread(a, pid);
    if (e != 0) {
        if (e == EPERM && status_field(pid, "TracerPid") > 0) {
            free(a->th);
            free(a->rows);
            free(a);
            return osp_attach_open(pid, err, errlen); /* a tracer raced us: name it */
        }
        if (e == ESRCH)
            snprintf(err, errlen, "--attach %d: no such process (it exited)", (int)pid);
        else if (e == EPERM || e == EACCES)
            refuse_permission(pid, e, err, errlen);
        else
            snprintf(err, errlen, "--attach %d: cannot trace the process: %s", (int)pid,
                     strerror(e));
        free(a->th);
        free(a->rows);
        free(a);
        return NULL;
    }
    a->attached = true;
    /* Architecture: the executable's ELF header (readable now that we may trace it). */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, a->exe, sizeof a->exe - 1);
    a->exe[n > 0 ? n : 0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        unsigned char h[20];
        if (read(fd, h, sizeof h) == (ssize_t)sizeof h && memcmp(h, ELFMAG, SELFMAG) == 0) {
            unsigned m = (unsigned)(h[18] | h[19] << 8);
            int cls = h[EI_CLASS];
            if (m != OSP_ATTACH_MACHINE || cls != ELFCLASS64) {
                snprintf(err, errlen,
                         "--attach %d: the process is a %s program and this osprey samples %s "
                         "programs only; use an osprey built for its architecture",
                         (int)pid, machine_name(m, cls),
                         machine_name(OSP_ATTACH_MACHINE, ELFCLASS64));
                close(fd);
                detach_all(a);
                osp_attach_close(a);
                return NULL;
            }
        }
        close(fd);
    }
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    a->proc_stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    scan_threads(a);
    read_images(a);
    return a;
}

/* ---- capture --------------------------------------------------------------------------------- */

static uint64_t next_random(osp_attach *a) {
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 7;
    a->rng ^= a->rng << 17;
    return a->rng;
}

static void progress_line(osp_attach *a, FILE *f, uint64_t elapsed_ns, bool last) {
    if (!f) return;
    size_t alive = 0;
    for (size_t i = 0; i < a->nth; i++) alive += !a->th[i].gone;
    if (last) {
        fputs("\r\033[K", f);
    } else {
        fprintf(f, "\r\033[Kosprey: attached to %d · %.1fs · %zu %s · %zu %s", (int)a->pid,
                (double)elapsed_ns / 1e9, a->nsamples, a->nsamples == 1 ? "sample" : "samples",
                alive, alive == 1 ? "thread" : "threads");
    }
    fflush(f);
}

osp_attach_end osp_attach_capture(osp_attach *a, const osp_attach_options *opts) {
    unsigned hz = opts->rate_hz;
    if (hz < OSP_ATTACH_MIN_HZ) hz = OSP_ATTACH_MIN_HZ;
    if (hz > OSP_ATTACH_MAX_HZ) hz = OSP_ATTACH_MAX_HZ;
    a->rate_hz = hz;
    uint64_t period_ns = 1000000000u / hz;
    a->rng = now_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15u;
    if (!a->rng) a->rng = 1;

    /* Tracee events wake the loop through a signalfd for SIGCHLD (blocked meanwhile): the
     * stops of one tick's samples coalesce into one pending signal, read once, instead of
     * a handler run per stop. Without it the loop polls at 20 Hz. */
    sigset_t chld, old_mask;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    bool masked = sigprocmask(SIG_BLOCK, &chld, &old_mask) == 0;
    int sfd = masked ? signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC) : -1;

    a->start_unix_ns = now_ns(CLOCK_REALTIME);
    a->start_mono_ns = now_ns(CLOCK_MONOTONIC);
    uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t deadline = a->start_mono_ns, last_tick = a->start_mono_ns;
    uint64_t last_maps = a->start_mono_ns, last_progress = 0, last_scan = a->start_mono_ns;
    osp_attach_end end = OSP_ATTACH_END_REQUESTED;
    for (;;) {
        reap_events(a);
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        if (opts->stop_requested && opts->stop_requested()) {
            end = OSP_ATTACH_END_REQUESTED;
            break;
        }
        if (opts->duration_ns && now - a->start_mono_ns >= opts->duration_ns) {
            end = OSP_ATTACH_END_DURATION;
            break;
        }
        if (now >= deadline) {
            /* One tick: follow threads, then sample each live one. */
            if (now - last_scan >= SCAN_NS || threads_changed(a)) {
                last_scan = now;
                if (scan_threads(a) == 0) {
                    end = OSP_ATTACH_END_EXITED;
                    break;
                }
            }
            a->ticks++;
            uint64_t tick_ns = now - last_tick > 0 ? now - last_tick : period_ns;
            if (a->ticks == 1) tick_ns = period_ns;
            last_tick = now;
            if (a->nth > a->cap_plans) {
                free(a->plans);
                a->cap_plans = a->cap_th;
                a->plans = calloc(a->cap_plans, sizeof *a->plans);
                if (!a->plans) a->cap_plans = 0;
            }
            for (size_t i = 0; i < a->nth && i < a->cap_plans; i++) {
                athread *t = &a->th[i];
                struct tick_plan *tp = &a->plans[i];
                tp->plan = t->gone || t->group_stopped
                               ? PLAN_NONE
                               : plan_thread(t, tp->syscall_line, sizeof tp->syscall_line, &tp->pc);
            }
            for (size_t i = 0; i < a->nth && i < a->cap_plans; i++)
                if (a->plans[i].plan != PLAN_NONE) a->thread_ns += tick_ns;
            capture_tick(a);
            for (size_t i = 0; i < a->nth && i < a->cap_plans; i++)
                finish_thread(a, &a->th[i], &a->plans[i], now - a->start_mono_ns, tick_ns);
            if (now - last_maps >= 1000000000u) { /* dlopen'd libraries appear */
                read_images(a);
                last_maps = now;
            }
            uint64_t jitter = period_ns * 7 / 10 + next_random(a) % (period_ns * 6 / 10 + 1);
            deadline += jitter;
            uint64_t after = now_ns(CLOCK_MONOTONIC);
            if (deadline <= after) {
                a->late_ticks++;
                deadline = after + jitter;
            }
            if (opts->progress && after - last_progress >= 250000000u) {
                progress_line(a, opts->progress, after - a->start_mono_ns, false);
                last_progress = after;
            }
            continue;
        }
        /* Sleep until the next tick, the duration's end, or a tracee event. */
        uint64_t wake = deadline;
        if (opts->duration_ns && a->start_mono_ns + opts->duration_ns < wake)
            wake = a->start_mono_ns + opts->duration_ns;
        uint64_t left = wake > now ? wake - now : 0;
        if (left > 50000000u) left = 50000000u; /* poll stop_requested at least at 20 Hz */
        struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
        struct pollfd p = {.fd = sfd, .events = POLLIN};
        if (sfd >= 0) {
            if (ppoll(&p, 1, &ts, NULL) > 0) {
                struct signalfd_siginfo si[8];
                while (read(sfd, si, sizeof si) > 0) {
                }
            }
        } else {
            nanosleep(&ts, NULL);
        }
    }
    a->elapsed_ns = now_ns(CLOCK_MONOTONIC) - a->start_mono_ns;
    if (end != OSP_ATTACH_END_EXITED) read_images(a); /* the process still exists */
    detach_all(a);
    a->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    a->end_unix_ns = now_ns(CLOCK_REALTIME);
    if (sfd >= 0) {
        struct signalfd_siginfo si[8];
        while (read(sfd, si, sizeof si) > 0) { /* our tracees' reports: nothing to deliver */
        }
        close(sfd);
    }
    if (masked) sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (opts->progress) progress_line(a, opts->progress, 0, true);
    return end;
}

void osp_attach_get_stats(const osp_attach *a, osp_attach_stats *out) {
    memset(out, 0, sizeof *out);
    out->samples = a->nsamples;
    out->ticks = a->ticks;
    out->late_ticks = a->late_ticks;
    out->dropped = a->drop_alloc + a->drop_no_answer + a->drop_store_full + a->drop_thread_gone;
    out->elapsed_ns = a->elapsed_ns;
    out->threads_seen = a->nrows;
    out->stopped_ns = a->stopped_ns;
    out->thread_ns = a->thread_ns;
    out->cpu_ns = a->cpu_ns;
    out->ended_stopped = a->ended_stopped;
}

pid_t osp_attach_pid(const osp_attach *a) {
    return a->pid;
}
const char *osp_attach_exe(const osp_attach *a) {
    return a->exe;
}

/* ---- raw writer ---------------------------------------------------------------------------- */

/* A JSON string: escapes, control characters as \u00XX, invalid UTF-8 as U+FFFD. */
static void json_string(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            p++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            p++;
        } else {
            size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
            size_t k = 1;
            while (len && k < len && (p[k] & 0xc0) == 0x80) k++;
            if (len && k == len) {
                fwrite(p, 1, len, f);
                p += len;
            } else {
                fputs("\xef\xbf\xbd", f);
                p++;
            }
        }
    }
    fputc('"', f);
}

/* `"<key>":` */
#define KEY(k) "\"" k "\":"

int osp_attach_write_raw(const osp_attach *a, const char *path, char *err, size_t errlen) {
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
        return -1;
    }
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    /* Keys in the order of docs/spec/profiler.md §(e), then the additional ones. */
    fprintf(f, "{" KEY(OSP_RAW_KEY_VERSION) "%d," KEY(OSP_RAW_KEY_PID) "%d," KEY(OSP_RAW_KEY_EXE),
            OSP_RAW_VERSION, (int)a->pid);
    json_string(f, a->exe);
    fprintf(f,
            "," KEY(OSP_RAW_KEY_RATE_HZ) "%u," KEY(OSP_RAW_KEY_PLATFORM) "\"%s\"," KEY(
                OSP_RAW_KEY_START_UNIX_NS) "%llu," KEY(OSP_RAW_KEY_END_UNIX_NS) "%llu",
            a->rate_hz, OSP_ATTACH_PLATFORM, (unsigned long long)a->start_unix_ns,
            (unsigned long long)a->end_unix_ns);
    fputs("," KEY(OSP_RAW_KEY_IMAGES) "[", f);
    for (size_t i = 0; i < a->nimages; i++) {
        const aimage *im = &a->images[i];
        fputs(i ? ",{" KEY(OSP_RAW_IMAGE_PATH) : "{" KEY(OSP_RAW_IMAGE_PATH), f);
        json_string(f, im->path);
        fprintf(
            f,
            "," KEY(OSP_RAW_IMAGE_BASE) "%llu," KEY(OSP_RAW_IMAGE_SLIDE) "%llu," KEY(
                OSP_RAW_IMAGE_TEXT) "%llu," KEY(OSP_RAW_IMAGE_TEXT_SIZE) "%llu," KEY(OSP_RAW_IMAGE_ARCH) "\"%s\"",
            (unsigned long long)im->base, (unsigned long long)im->slide,
            (unsigned long long)im->text, (unsigned long long)im->text_size,
            im->machine == EM_X86_64    ? "x86_64"
            : im->machine == EM_AARCH64 ? "arm64"
                                        : "");
        if (im->build_id[0]) fprintf(f, "," KEY(OSP_RAW_IMAGE_BUILD_ID) "\"%s\"", im->build_id);
        if (im->symbols_json) fprintf(f, "," KEY(OSP_RAW_IMAGE_SYMBOLS) "%s", im->symbols_json);
        fputc('}', f);
    }
    fputs("]," KEY(OSP_RAW_KEY_THREADS) "[", f);
    for (size_t i = 0; i < a->nrows; i++) {
        fprintf(f, "%s{" KEY(OSP_RAW_THREAD_FIBER) "%ld," KEY(OSP_RAW_THREAD_LABEL), i ? "," : "",
                a->rows[i].fiber);
        json_string(f, a->rows[i].label);
        fprintf(f, "," KEY(OSP_RAW_THREAD_TID) "%d}", (int)a->rows[i].tid);
    }
    fputs("]," KEY(OSP_RAW_KEY_STACKS) "[", f);
    for (size_t k = 0; k < a->nstacks; k++) {
        fputs(k ? ",[" : "[", f);
        for (uint32_t j = 0; j < a->stack_len[k]; j++)
            fprintf(f, j ? ",%llu" : "%llu", (unsigned long long)a->frames[a->stack_off[k] + j]);
        fputc(']', f);
    }
    fputs("]," KEY(OSP_RAW_KEY_SAMPLES) "[", f);
    for (size_t i = 0; i < a->nsamples; i++) {
        const struct asample *s = &a->samples[i];
        fprintf(f, "%s[%llu,%u,%u,%u]", i ? "," : "", (unsigned long long)s->t_ns, s->row, s->stack,
                s->state);
    }
    uint64_t drops[OSP_RAW_DROP_COUNT] = {0};
    drops[OSP_RAW_DROP_ALLOC] = a->drop_alloc;
    drops[OSP_RAW_DROP_NO_ANSWER] = a->drop_no_answer;
    drops[OSP_RAW_DROP_STORE_FULL] = a->drop_store_full;
    drops[OSP_RAW_DROP_THREAD_GONE] = a->drop_thread_gone;
    uint64_t dropped = 0;
    for (int d = 0; d < OSP_RAW_DROP_COUNT; d++) dropped += drops[d];
    fprintf(f, "]," KEY(OSP_RAW_KEY_DROPPED) "%llu," KEY(OSP_RAW_KEY_SAMPLE_WEIGHTS_NS) "[",
            (unsigned long long)dropped);
    for (size_t i = 0; i < a->nsamples; i++)
        fprintf(f, i ? ",%llu" : "%llu", (unsigned long long)a->samples[i].weight_ns);
    fprintf(f,
            "]," KEY(OSP_RAW_KEY_TICKS) "%llu," KEY(OSP_RAW_KEY_LATE_TICKS) "%llu," KEY(
                OSP_RAW_KEY_DROPPED_REASONS) "{",
            (unsigned long long)a->ticks, (unsigned long long)a->late_ticks);
    static const char *const drop_names[OSP_RAW_DROP_COUNT] = OSP_RAW_DROP_NAMES;
    for (int d = 0; d < OSP_RAW_DROP_COUNT; d++)
        fprintf(f, "%s\"%s\":%llu", d ? "," : "", drop_names[d], (unsigned long long)drops[d]);
    fputs("}," KEY(OSP_RAW_KEY_THREADS_OVER_LIMIT) "0," KEY(OSP_RAW_KEY_TRUNCATED_STACKS) "[", f);
    for (size_t i = 0; i < a->ntrunc; i++) fprintf(f, i ? ",%ld" : "%ld", a->truncated[i]);
    fputs("]," KEY(OSP_RAW_KEY_ENGINE) "\"" OSP_RAW_ENGINE_ATTACH "\"}\n", f);
    int e = ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) {
        unlink(tmp);
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
    }
    free(tmp);
    return e ? -1 : 0;
}

void osp_attach_close(osp_attach *a) {
    if (!a) return;
    detach_all(a);
    for (size_t i = 0; i < a->nth; i++) thread_close_fds(&a->th[i]);
    if (a->proc_stat_fd >= 0) close(a->proc_stat_fd);
    free(a->th);
    free(a->rows);
    free(a->frames);
    free(a->stack_off);
    free(a->stack_len);
    free(a->stack_hash_slots);
    free(a->truncated);
    free(a->samples);
    free(a->plans);
    free_images(a->images, a->nimages);
    free(a->data_maps);
    free(a->cfi_tables);
    free(a);
}

#else /* not Linux x86-64/arm64 */

struct osp_attach {
    int unused;
};

osp_attach *osp_attach_open(pid_t pid, char *err, size_t errlen) {
    snprintf(err, errlen,
             "--attach %d: attaching is supported on Linux (x86-64, arm64) only; "
             "profile the program with --record instead",
             (int)pid);
    return NULL;
}
osp_attach_end osp_attach_capture(osp_attach *a, const osp_attach_options *opts) {
    (void)a;
    (void)opts;
    return OSP_ATTACH_END_EXITED;
}
void osp_attach_get_stats(const osp_attach *a, osp_attach_stats *out) {
    (void)a;
    memset(out, 0, sizeof *out);
}
pid_t osp_attach_pid(const osp_attach *a) {
    (void)a;
    return 0;
}
const char *osp_attach_exe(const osp_attach *a) {
    (void)a;
    return "";
}
int osp_attach_write_raw(const osp_attach *a, const char *path, char *err, size_t errlen) {
    (void)a;
    snprintf(err, errlen, "cannot write %s: not supported", path);
    return -1;
}
void osp_attach_close(osp_attach *a) {
    (void)a;
}

#endif
