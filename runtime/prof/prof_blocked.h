/*
 * prof_blocked.h — stacks of threads blocked in the kernel, without signals
 * (docs/spec/profiler.md §(l.4)); implemented in prof_blocked.c. Sampler thread only.
 */
#ifndef OSP_PROF_BLOCKED_H
#define OSP_PROF_BLOCKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "prof_cfi.h"

/*
 * Parse the contents of /proc/<pid>/task/<tid>/syscall (`len` bytes at `text`, not
 * necessarily NUL-terminated): "nr a1 a2 a3 a4 a5 a6 sp pc" (a thread inside a system
 * call) or "-1 sp pc" (blocked outside one). Sets *sp and *pc and returns true; false for
 * "running" or anything else. Pure function.
 */
OSP_PROF_HIDDEN bool osp_prof__parse_task_syscall(const char *text, size_t len, uintptr_t *sp,
                                                  uintptr_t *pc);

/* Read thread `tid`'s (this process) user sp and pc from /proc/self/task/<tid>/syscall.
 * Opens and closes the file each time. False when the thread is running, gone, or the
 * file cannot be read. Not async-signal-safe (sampler thread). */
OSP_PROF_HIDDEN bool osp_prof__task_syscall_regs(pid_t tid, uintptr_t *sp, uintptr_t *pc);

/* Room for "/proc/self/task/<tid>/<leaf>" with the leaves the profiler reads. */
#define OSP_PROF_TASK_PATH_MAX 64
/* Write "/proc/self/task/<tid>/<leaf>" into `out` (NUL-terminated, a leaf too long for
 * OSP_PROF_TASK_PATH_MAX is cut). No allocation, no locale: async-signal-safe. */
OSP_PROF_HIDDEN void osp_prof__task_path(char out[OSP_PROF_TASK_PATH_MAX], pid_t tid,
                                         const char *leaf);

/*
 * The blocking stack of thread `tid`, whose stack bounds are [lo, hi) (lo = hi = 0:
 * unknown, then the walk reads nothing beyond pc): unwinds from the kernel-reported sp
 * and pc with the published CFI tables (rbp unknown, §(l.4)). Writes at most `cap`
 * leaf-first addresses into `out` and returns how many, 0 when the registers could not be
 * read or sp is outside [lo, hi). The caller holds the registry mutex (the thread cannot
 * unregister meanwhile) and discards the result if the thread's CPU clock moved while it
 * ran. `info` may be NULL.
 */
OSP_PROF_HIDDEN size_t osp_prof__blocked_stack(pid_t tid, uintptr_t lo, uintptr_t hi,
                                               uintptr_t *out, size_t cap, bool *truncated,
                                               struct osp_unwind_info *info);

#endif /* OSP_PROF_BLOCKED_H */
