/*
 * prof_blocked.c — the stack of a thread blocked in the kernel, taken without signalling
 * it: docs/spec/profiler.md §(l.4). The kernel reports the user stack pointer and program
 * counter of a thread inside a system call in /proc/self/task/<tid>/syscall; the hybrid
 * walk (prof_unwind.c) unwinds from them with the published CFI tables, rbp unknown.
 *
 * Threads: the sampler thread only, holding the registry mutex (so the blocked thread
 * cannot unregister, and its stack cannot be freed, during the walk). The walk reads the
 * blocked thread's stack only inside its registered bounds; if the thread runs while we
 * read (its CPU clock moves), the result is discarded by the caller.
 */
#define _GNU_SOURCE
#include "prof_blocked.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prof_own_text.h"

#if OSP_PROF_SAMPLER

/* Parse one hexadecimal ("0x...") or decimal field; advances *p past it and one space. */
static bool field(const char **p, const char *end, uint64_t *v, bool *negative) {
    const char *s = *p;
    *negative = false;
    if (s < end && *s == '-') {
        *negative = true;
        s++;
    }
    int base = 10;
    if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    uint64_t x = 0;
    const char *d0 = s;
    while (s < end) {
        int c = (unsigned char)*s, dv;
        if (c >= '0' && c <= '9')
            dv = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f')
            dv = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F')
            dv = c - 'A' + 10;
        else
            break;
        if (x > (UINT64_MAX - (uint64_t)dv) / (uint64_t)base) return false;
        x = x * (uint64_t)base + (uint64_t)dv;
        s++;
    }
    if (s == d0) return false;
    while (s < end && (*s == ' ' || *s == '\n')) s++;
    *p = s;
    *v = x;
    return true;
}

bool osp_prof__parse_task_syscall(const char *text, size_t len, uintptr_t *sp, uintptr_t *pc) {
    const char *p = text, *end = text + len;
    uint64_t v[9];
    size_t n = 0;
    bool neg;
    while (n < 9 && p < end && field(&p, end, &v[n], &neg)) {
        if (n == 0 && neg) {
            /* "-1 sp pc": blocked outside a system call (stopped) — still a user sp and pc. */
            uint64_t a, b;
            if (!field(&p, end, &a, &neg) || neg || !field(&p, end, &b, &neg) || neg) return false;
            *sp = (uintptr_t)a;
            *pc = (uintptr_t)b;
            return p == end;
        }
        if (neg) return false;
        n++;
    }
    if (n != 9 || p != end) return false; /* "running", or not the expected shape */
    *sp = (uintptr_t)v[7];
    *pc = (uintptr_t)v[8];
    return true;
}

void osp_prof__task_path(char out[OSP_PROF_TASK_PATH_MAX], pid_t tid, const char *leaf) {
    static const char dir[] = "/proc/self/task/";
    memcpy(out, dir, sizeof dir - 1);
    size_t k = sizeof dir - 1;
    char tmp[12];
    size_t n = 0;
    unsigned u = (unsigned)tid;
    do tmp[n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    while (n > 0) out[k++] = tmp[--n];
    out[k++] = '/';
    size_t ll = strlen(leaf);
    if (ll > OSP_PROF_TASK_PATH_MAX - 1 - k) ll = OSP_PROF_TASK_PATH_MAX - 1 - k;
    memcpy(out + k, leaf, ll);
    out[k + ll] = '\0';
}

bool osp_prof__task_syscall_regs(pid_t tid, uintptr_t *sp, uintptr_t *pc) {
    char path[OSP_PROF_TASK_PATH_MAX];
    osp_prof__task_path(path, tid, "syscall");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[256];
    ssize_t n;
    do n = read(fd, buf, sizeof buf - 1);
    while (n < 0 && errno == EINTR);
    close(fd); /* opened and closed per read: no descriptor stays with the program */
    if (n <= 0) return false;
    return osp_prof__parse_task_syscall(buf, (size_t)n, sp, pc);
}

size_t osp_prof__blocked_stack(pid_t tid, uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t cap,
                               bool *truncated, struct osp_unwind_info *info) {
    uintptr_t sp, pc;
    *truncated = false;
    if (!osp_prof__task_syscall_regs(tid, &sp, &pc)) return 0;
    if (pc < 4096 || sp == 0) return 0;
    if (lo != hi && (sp < lo || sp >= hi)) return 0; /* on another stack (sigaltstack) */
    struct osp_unwind_regs r = {.pc = pc, .sp = sp, .fp = 0, .fp_known = false};
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    size_t n = osp_prof__hybrid_walk(set, &r, sp > lo ? sp : lo, hi, out, cap, truncated, info);
    osp_prof__cfi_release();
    return n;
}

#endif /* OSP_PROF_SAMPLER */
