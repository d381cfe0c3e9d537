/*
 * prof_unwind.c — the frame-pointer walk, docs/spec/profiler.md §(c)
 * [PROF-COLLECT-UNWIND]. Called from the SIGPROF handler and from blocking-region hooks:
 * async-signal-safe, allocation-free, lock-free, and never reads outside [lo, hi).
 */
#include "prof_internal.h"

/* A frame larger than this ends the walk ("bounded frame size", §(c) item 2). */
#define OSP_PROF_MAX_FRAME_BYTES ((uintptr_t)1 << 20)
/* Return addresses below the first page are not code (§(c) item 2). */
#define OSP_PROF_MIN_CODE_ADDR   ((uintptr_t)4096)

/* Highest user-space address + 1 where that is fixed by the architecture: x86-64 user
 * addresses lie below 2^47 (2^56 with 5-level paging) and return addresses are never
 * tagged. A larger "return address" is a stack word read through a frame that had no
 * frame record (code built without frame pointers, such as a C library's thread start
 * routine): the walk ends there instead of recording garbage at the root of the stack.
 * This is the one check beyond docs/spec/profiler.md §(c); arm64 has none (pointer authentication
 * may set high bits of saved return addresses on Linux too). */
#if defined(__x86_64__)
#define OSP_PROF_USER_LIMIT ((uintptr_t)1 << 56)
#else
#define OSP_PROF_USER_LIMIT ((uintptr_t)0)
#endif

static inline bool code_address(uintptr_t a) {
    if (a < OSP_PROF_MIN_CODE_ADDR) return false;
    return OSP_PROF_USER_LIMIT == 0 || a < OSP_PROF_USER_LIMIT;
}

/* True when a frame record [fp, fp + 16) lies inside [lo, hi) and fp is 8-byte aligned.
 * Written so that nothing overflows: hi - 16 is only formed when hi >= lo + 16. */
static inline bool frame_ok(uintptr_t fp, uintptr_t lo, uintptr_t hi) {
    if ((fp & 7u) != 0) return false;
    if (hi < lo || hi - lo < 16) return false;
    return fp >= lo && fp <= hi - 16;
}

/*
 * The walker reads stack words of the interrupted thread. Those reads are validated
 * against the thread's stack bounds, but a garbage frame pointer inside the bounds may
 * still point at a sanitizer redzone (ASan) or at a word the sanitizer considers racy
 * (TSan); neither is a bug here, so the walker is not instrumented. Its bounds checks are
 * tested with guard pages instead (test/runtime/prof/test_unwind.c).
 */
__attribute__((no_sanitize("address", "thread", "undefined"))) size_t
osp_prof__fp_walk(uintptr_t pc, uintptr_t fp, uintptr_t lr, uintptr_t lo, uintptr_t hi,
                  uintptr_t *out, size_t cap, bool *truncated) {
    size_t n = 0;
    *truncated = false;
    if (cap == 0) return 0;
    out[n++] = osp_prof__strip_pac(pc);

    /* arm64: lr goes in as frame 1 unless it repeats pc or the first chained return
     * address (§(c) item 3). On x86-64 callers pass lr = 0. */
    uintptr_t lr_s = osp_prof__strip_pac(lr);
    bool lr_pending = code_address(lr_s) && lr_s != out[0];
    bool first = true;

    for (;;) {
        if (n >= cap) {
            /* Stopped by the cap: truncated only if the chain would have continued. */
            if (!lr_pending && frame_ok(fp, lo, hi) && code_address(*(const uintptr_t *)(fp + 8)))
                *truncated = true;
            break;
        }
        if (!frame_ok(fp, lo, hi)) break;
        uintptr_t next = *(const uintptr_t *)fp;
        uintptr_t ret = osp_prof__strip_pac(*(const uintptr_t *)(fp + 8));
        if (!code_address(ret)) break;
        if (first) {
            first = false;
            if (lr_pending) {
                lr_pending = false;
                if (lr_s != ret) {
                    out[n++] = lr_s;
                    if (n >= cap) {
                        *truncated = true; /* ret was valid and did not fit */
                        break;
                    }
                }
            }
        }
        out[n++] = ret;
        if (next <= fp) break;                           /* strict growth, self-loops */
        if (next - fp > OSP_PROF_MAX_FRAME_BYTES) break; /* bounded frame size */
        fp = next;
    }
    if (lr_pending && n < cap) out[n++] = lr_s; /* no chained frame to compare with */
    return n;
}
