/*
 * attach.h — the out-of-process sampler behind `osprey --attach <pid>`
 * (docs/spec/profiler.md §(l.9); docs/profiler-runtime.md "Attaching to a running process").
 * Linux only (ptrace); elsewhere osp_attach_open refuses.
 *
 * Shape: osp_attach_open seizes every thread of the process (PTRACE_SEIZE, no options: in
 * particular never PTRACE_O_EXITKILL, so the target outlives osprey even under SIGKILL);
 * osp_attach_capture samples until a stop condition, following new and exiting threads, and
 * always ends detached; osp_attach_write_raw writes the samples in the raw format of §(e)
 * with "engine":"attach"; osp_attach_close frees (detaching first if still attached).
 *
 * One sample of a thread: its state from /proc/<pid>/task/<tid>/stat. A running thread
 * ('R') is stopped with PTRACE_INTERRUPT (the threads of one tick are interrupted together
 * and collected as their stops come), its registers read (PTRACE_GETREGSET), its stack
 * walked through process_vm_readv by frame pointers and the CFI of the process's images
 * (attach_unwind.h), and it is continued at once:
 * an on-CPU sample weighted by the CPU time it used since its previous on-CPU sample
 * (/proc/.../schedstat). A thread blocked in a system call ('S') is a waiting sample,
 * weighted by the wall time since the previous tick; its stack is captured the same way
 * only when its /proc/.../syscall line (number, arguments, stack pointer, PC) differs from
 * the one of its last capture, so a long wait is interrupted once, not every tick. A thread
 * in uninterruptible sleep ('D') is never stopped (a one-frame stack, its PC from the
 * syscall file). Signals that arrive for a traced thread are re-delivered at once, group
 * stops (SIGSTOP, Ctrl-Z) are kept (PTRACE_LISTEN), and threads stopped that way are not
 * sampled.
 *
 * Threads: the capture runs on the calling thread only; nothing here is thread-safe.
 */
#ifndef OSPREY_ATTACH_H
#define OSPREY_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Default and highest sampling rates of --attach, in Hz (§(l.9)); the lowest is 10. */
#define OSP_ATTACH_DEFAULT_HZ 99
#define OSP_ATTACH_MIN_HZ     10
#define OSP_ATTACH_MAX_HZ     1000

/* An attached process; opaque. */
typedef struct osp_attach osp_attach;

/*
 * Seize every thread of process `pid` (a thread id is taken as its process). Returns the
 * session, or NULL with one line in err[0..errlen) (no "osprey: error: " prefix, no newline)
 * naming the cause and the fix: no such process; osprey itself; already traced (by whom);
 * not permitted (Yama kernel.yama.ptrace_scope, another user without CAP_SYS_PTRACE, or
 * another reason the kernel gave); a process of another architecture. Nothing stays
 * attached after a refusal.
 */
osp_attach *osp_attach_open(pid_t pid, char *err, size_t errlen);

/* What osp_attach_capture does. */
typedef struct osp_attach_options {
    unsigned rate_hz;     /* ticks per second, OSP_ATTACH_MIN_HZ..OSP_ATTACH_MAX_HZ */
    uint64_t duration_ns; /* stop after this long; 0: no limit */
    /* Polled every tick; non-zero stops the capture (e.g. proc_capture_signal). May be NULL. */
    int (*stop_requested)(void);
    /* A progress line (elapsed, samples, threads), rewritten in place about 4 times a second,
     * and erased at the end; NULL: none. For a terminal only. */
    FILE *progress;
} osp_attach_options;

/* Why a capture ended. */
typedef enum osp_attach_end {
    OSP_ATTACH_END_DURATION,  /* the duration passed */
    OSP_ATTACH_END_REQUESTED, /* stop_requested returned non-zero */
    OSP_ATTACH_END_EXITED     /* the process exited (every thread is gone) */
} osp_attach_end;

/*
 * Sample until the duration passes, stop_requested() or the process exits, then detach
 * from every thread (each is left running, or stopped if a SIGSTOP had stopped it). Tick
 * periods are jittered uniformly over [0.7, 1.3) of 1/rate_hz. Returns why it ended.
 */
osp_attach_end osp_attach_capture(osp_attach *a, const osp_attach_options *opts);

/* Counters of a capture (valid after osp_attach_capture). */
typedef struct osp_attach_stats {
    uint64_t samples, ticks, late_ticks, dropped, elapsed_ns;
    size_t threads_seen; /* rows: every thread sampled or seized */
    /* What sampling cost the target: stopped_ns sums, over samples, the time from seeing a
     * thread's stop to continuing it (the stop itself takes effect when the thread next
     * runs, microseconds after PTRACE_INTERRUPT when it is on a CPU); thread_ns sums, over ticks, the tick's
     * length times the threads sampled in it. stopped_ns / thread_ns is the share of its
     * time a sampled thread spent stopped by osprey. */
    uint64_t stopped_ns, thread_ns;
    /* CPU time (user + system) the capturing thread used between the capture's start and its
     * detach: what sampling cost the machine besides the stops. */
    uint64_t cpu_ns;
    /* Whether every thread still followed was in a job-control stop (SIGSTOP, Ctrl-Z) when
     * the capture ended: a stopped process gives no sample. */
    bool ended_stopped;
} osp_attach_stats;
void osp_attach_get_stats(const osp_attach *a, osp_attach_stats *out);

/* The process id and its executable's absolute path (readlink of /proc/<pid>/exe at open;
 * "" if unreadable). Owned by the session. */
pid_t osp_attach_pid(const osp_attach *a);
const char *osp_attach_exe(const osp_attach *a);

/*
 * Write the captured profile to `path` as one line of raw JSON (docs/spec/profiler.md §(e),
 * with "engine":"attach"), through a temporary file in the same directory renamed into
 * place. Images are those of /proc/<pid>/maps as last read (at open, about once a second
 * while sampling, and at the end while the process still existed). Returns 0, or -1 with
 * "cannot write <path>: <error>" in err.
 */
int osp_attach_write_raw(const osp_attach *a, const char *path, char *err, size_t errlen);

/* Detach if still attached, then free the session. NULL: nothing. */
void osp_attach_close(osp_attach *a);

#endif
