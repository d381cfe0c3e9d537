/* attach_unwind.c — see attach_unwind.h. */
#include "attach_unwind.h"

size_t osp_unwind_walk(const osp_unwinder *u, const osp_unwind_regs *regs, uint64_t *frames,
                       size_t max, bool *truncated) {
    if (truncated) *truncated = false;
    if (max == 0) return 0;
    osp_unwind_regs r = *regs;
    size_t n = 0;
    frames[n++] = r.pc;
    bool leaf = true;
    while (n < max) {
        if (u->step) {
            osp_unwind_regs caller = r;
            int s = u->step(u->step_ctx, &caller, leaf);
            if (s < 0) return n; /* the CFI says the walk ends here (or cannot go on) */
            if (s > 0) {
                if (caller.pc == 0) return n; /* the outermost frame */
                frames[n++] = caller.pc;
                r = caller;
                leaf = false;
                continue;
            }
        }
        /* Frame-pointer rule. Stop conditions: */
        if (r.fp == 0) return n;   /* the chain's end (thread entry clears it) */
        if (r.fp & 7) return n;    /* not a frame record: fp is a plain register */
        if (r.fp < r.sp) return n; /* records live above the stack pointer */
        uint64_t rec[2];           /* [0]: caller's fp, [1]: return address */
        if (u->read(u->read_ctx, r.fp, rec, sizeof rec) != 0) return n; /* unmapped */
        if (rec[1] == 0) return n; /* a zero return address ends the chain */
        frames[n++] = rec[1];
        if (rec[0] != 0 && rec[0] <= r.fp) return n; /* must move toward the stack base */
        r.sp = r.fp + 16;
        r.fp = rec[0];
        r.pc = rec[1];
        r.lr = 0;
        leaf = false;
    }
    /* `max` reached: truncated only if a further record exists. */
    if (truncated && r.fp != 0 && !(r.fp & 7) && r.fp >= r.sp) {
        uint64_t rec[2];
        if (u->read(u->read_ctx, r.fp, rec, sizeof rec) == 0 && rec[1] != 0) *truncated = true;
    }
    return n;
}
