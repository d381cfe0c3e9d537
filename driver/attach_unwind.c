/* attach_unwind.c — see attach_unwind.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* REG_RIP & co. in <ucontext.h> */
#endif
#include "attach_unwind.h"

#include <string.h>

#if defined(__linux__) && defined(__x86_64__)
#include "prof_cfi.h"

#include <ucontext.h>
#define OSP_UNWIND_HAVE_CFI 1
#else
#define OSP_UNWIND_HAVE_CFI 0
#endif

/* Return addresses below the first page are not code (§(c) item 2). */
#define MIN_CODE_ADDR ((uint64_t)4096)

/* `a` can be a return address: above the first page and not in the stack being walked. */
static bool code_addr(const osp_unwinder *u, uint64_t a) {
    if (a < MIN_CODE_ADDR) return false;
    return u->stack_hi <= u->stack_lo || a - u->stack_lo >= u->stack_hi - u->stack_lo;
}

size_t osp_unwind_walk(const osp_unwinder *u, const osp_remote_regs *regs, uint64_t *frames,
                       size_t max, bool *truncated) {
    if (truncated) *truncated = false;
    if (max == 0) return 0;
    osp_remote_regs r = *regs;
    r.precise = true; /* frame 0: where the thread was stopped */
    size_t n = 0;
    frames[n++] = r.pc;
    while (n < max) {
        if (u->step) {
            osp_remote_regs caller = r;
            int s = u->step(u->step_ctx, &caller);
            if (s == OSP_STEP_ROOT) return n; /* the outermost frame is recorded */
            if (s == OSP_STEP_FAIL) {
                if (truncated) *truncated = true; /* the root end is missing */
                return n;
            }
            if (s == OSP_STEP_CALLER) {
                if (caller.pc == 0) return n; /* the outermost frame */
                if (!code_addr(u, caller.pc)) {
                    /* a stack word, not a caller: the chain ends here; a signal frame's
                     * interrupted pc (precise) leaves the frames below the handler out */
                    if (caller.precise && truncated) *truncated = true;
                    return n;
                }
                frames[n++] = caller.pc;
                r = caller;
                continue;
            }
        }
        /* Frame-pointer rule. Stop conditions: */
        if (r.fp == 0) return n;   /* the chain's end (thread entry clears it) */
        if (r.fp & 7) return n;    /* not a frame record: fp is a plain register */
        if (r.fp < r.sp) return n; /* records live above the stack pointer */
        uint64_t rec[2];           /* [0]: caller's fp, [1]: return address */
        if (u->read(u->read_ctx, r.fp, rec, sizeof rec) != 0) return n; /* unmapped */
        if (!code_addr(u, rec[1])) return n; /* zero, low or a stack word: the chain's end */
        frames[n++] = rec[1];
        /* The caller's fp is checked when its own frame is walked (fp >= sp = this fp + 16:
         * the chain moves toward the stack base), not here: a caller with CFI may keep no
         * chain (its fp any value) and still be stepped by its rules. */
        r.sp = r.fp + 16;
        r.fp = rec[0];
        r.pc = rec[1];
        r.lr = 0;
        r.precise = false;
    }
    /* `max` reached: truncated only if a further frame exists. */
    if (truncated) {
        if (u->step) {
            osp_remote_regs caller = r;
            int s = u->step(u->step_ctx, &caller);
            if ((s == OSP_STEP_CALLER && code_addr(u, caller.pc)) || s == OSP_STEP_FAIL) {
                *truncated = true;
                return n;
            }
            if (s == OSP_STEP_ROOT) return n;
        }
        if (r.fp != 0 && !(r.fp & 7) && r.fp >= r.sp) {
            uint64_t rec[2];
            if (u->read(u->read_ctx, r.fp, rec, sizeof rec) == 0 && code_addr(u, rec[1]))
                *truncated = true;
        }
    }
    return n;
}

#if OSP_UNWIND_HAVE_CFI

/* The table whose range covers `q`, or NULL. */
static const struct osp_cfi_table *find_table(osp_unwind_cfi *c, uint64_t q) {
    if (c->last < c->ntables) {
        const struct osp_cfi_table *t = c->tables[c->last];
        if (q >= t->lo && q < t->hi) return t;
    }
    size_t a = 0, z = c->ntables;
    while (a < z) {
        size_t m = a + (z - a) / 2;
        const struct osp_cfi_table *t = c->tables[m];
        if (q < t->lo) {
            z = m;
        } else if (q >= t->hi) {
            a = m + 1;
        } else {
            c->last = m;
            return t;
        }
    }
    return NULL;
}

static bool read_word(osp_unwind_cfi *c, uint64_t addr, uint64_t *v) {
    if (addr & 7) return false; /* every slot a rule names is an aligned stack word */
    return c->read(c->read_ctx, addr, v, sizeof *v) == 0;
}

/* The kernel's rt_sigframe: after a handler returned into the trampoline, sp points at the
 * ucontext (§(l.1) "signal frames"); the interrupted pc, sp and rbp are in its gregs. */
static int signal_step(osp_unwind_cfi *c, osp_remote_regs *regs) {
    /* The trampoline's bytes, checked by the runtime's own test over a local copy. */
    uint8_t code[16];
    if (c->read(c->read_ctx, regs->pc, code, sizeof code) != 0) return OSP_STEP_FAIL;
    struct osp_cfi_image img;
    memset(&img, 0, sizeof img);
    img.segs[0][0] = (uintptr_t)code;
    img.segs[0][1] = (uintptr_t)code + sizeof code;
    img.nsegs = 1;
    if (!osp_prof__is_sigreturn(&img, (uintptr_t)code)) return OSP_STEP_FAIL;
    uint64_t g = regs->sp + offsetof(ucontext_t, uc_mcontext.gregs);
    uint64_t pc, sp, fp;
    if (!read_word(c, g + 8 * REG_RIP, &pc) || !read_word(c, g + 8 * REG_RSP, &sp) ||
        !read_word(c, g + 8 * REG_RBP, &fp))
        return OSP_STEP_FAIL;
    if (pc < MIN_CODE_ADDR || sp <= regs->sp) return OSP_STEP_FAIL;
    regs->pc = pc;
    regs->sp = sp;
    regs->fp = fp;
    regs->precise = true;
    return OSP_STEP_CALLER;
}

int osp_unwind_cfi_step(void *ctx, osp_remote_regs *regs) {
    osp_unwind_cfi *c = ctx;
    uint64_t q = regs->precise ? regs->pc : regs->pc - 1;
    const struct osp_cfi_table *t = find_table(c, q);
    if (t == NULL) return OSP_STEP_FP; /* no CFI for this code: its frame chain */
    const struct osp_cfi_row *r = osp_prof__cfi_lookup(t, (uintptr_t)q);
    if (r == NULL) return OSP_STEP_FP;
    switch (r->kind) {
    case OSP_CFI_ROOT: return OSP_STEP_ROOT;
    case OSP_CFI_NONE: return OSP_STEP_FAIL;
    case OSP_CFI_GAP: return OSP_STEP_FP;
    case OSP_CFI_SIGNAL: return signal_step(c, regs);
    case OSP_CFI_STEP:
    case OSP_CFI_PLT: break;
    default: return OSP_STEP_FAIL;
    }
    /* The frame-pointer rule exactly (CFA = rbp + 16, RA at CFA − 8, rbp at CFA − 16):
     * the walker's own chain step reads the same two words. */
    if (r->kind == OSP_CFI_STEP && r->cfa_reg == OSP_CFI_REG_FP && r->cfa_off == 16 &&
        r->ra_off == -8 && r->fp_rule == OSP_CFI_FP_OFFSET && r->fp_off == -16)
        return OSP_STEP_FP;
    uint64_t base = r->cfa_reg == OSP_CFI_REG_SP ? regs->sp : regs->fp;
    uint64_t cfa = base + (uint64_t)(int64_t)r->cfa_off;
    if (r->kind == OSP_CFI_PLT && (regs->pc & 15u) >= r->plt_min) cfa += 8;
    if (cfa <= regs->sp) return OSP_STEP_FAIL; /* the stack grows down: callers lie above */
    uint64_t ra, fp = regs->fp;
    if (!read_word(c, cfa + (uint64_t)(int64_t)r->ra_off, &ra)) return OSP_STEP_FAIL;
    if (r->fp_rule == OSP_CFI_FP_OFFSET) {
        uint64_t slot = cfa + (uint64_t)(int64_t)r->fp_off;
        /* Below sp: an epilogue already popped rbp (compilers keep the save rule until the
         * function's end), so the register holds the caller's value. */
        if (slot >= regs->sp && !read_word(c, slot, &fp)) return OSP_STEP_FAIL;
    } else if (r->fp_rule == OSP_CFI_FP_UNDEF) {
        fp = 0; /* unknown in the caller: a frame-pointer step there ends the walk */
    }
    if (ra < MIN_CODE_ADDR) return OSP_STEP_ROOT; /* no caller: the thread's first frame */
    regs->pc = ra;
    regs->sp = cfa;
    regs->fp = fp;
    regs->lr = 0;
    regs->precise = false;
    return OSP_STEP_CALLER;
}

#else

int osp_unwind_cfi_step(void *ctx, osp_remote_regs *regs) {
    (void)ctx;
    (void)regs;
    return OSP_STEP_FP;
}

#endif
