/*
 * prof_unwind.c — the frame-pointer walk, docs/spec/profiler.md §(c)
 * [PROF-COLLECT-UNWIND]. Called from the SIGPROF handler and from blocking-region hooks:
 * async-signal-safe, allocation-free, lock-free, and never reads outside [lo, hi).
 */
#define _GNU_SOURCE /* REG_RIP & co. in <ucontext.h> */
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

/* code_address, and not inside the stack being walked ([lo, hi)): a word of the stack
 * taken for a return address (a sample inside _Unwind_RaiseException while it installs
 * a handler's context, where neither the chain nor the CFI describes the frame) is not
 * a frame, and the walk ends there instead of naming a stack address. */
static inline bool code_addr_in(uintptr_t a, uintptr_t lo, uintptr_t hi) {
    return code_address(a) && a - lo >= hi - lo;
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
            if (!lr_pending && frame_ok(fp, lo, hi) &&
                code_addr_in(*(const uintptr_t *)(fp + 8), lo, hi))
                *truncated = true;
            break;
        }
        if (!frame_ok(fp, lo, hi)) break;
        uintptr_t next = *(const uintptr_t *)fp;
        uintptr_t ret = osp_prof__strip_pac(*(const uintptr_t *)(fp + 8));
        if (!code_addr_in(ret, lo, hi)) break;
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

/* ---- the hybrid walk: frame pointers + CFI, docs/spec/profiler.md §(l.1) ---------------- */

#if OSP_PROF_SAMPLER /* the hybrid walk reads Linux signal contexts and CFI tables */
#include "prof_cfi.h"

#include <stdatomic.h>
#include <stddef.h>
#include <ucontext.h>
#include "prof_own_text.h"

#if defined(__x86_64__)

/* How far above sp the frame record of a frame-pointer function is searched for when the
 * frame pointer's value is unknown (a thread blocked in the kernel, §(l.4)). */
#define FP_SEARCH_BYTES ((uintptr_t)16384)

/* One aligned stack word inside [lo, hi), read at its address + d (d: the offset of a copy
 * of the stack from the stack itself, 0 for the live stack). Every stack read of the walk
 * goes through d. */
#define RD(a)  (*(const uintptr_t *)((a) + (uintptr_t)d))
#define NO_SAN __attribute__((no_sanitize("address", "thread", "undefined")))

NO_SAN static inline bool stack_word(uintptr_t a, uintptr_t lo, uintptr_t hi, intptr_t d,
                                     uintptr_t *v) {
    if ((a & 7u) != 0 || a < lo || hi < 8 || a > hi - 8) return false;
    *v = *(const uintptr_t *)(a + (uintptr_t)d);
    return true;
}

struct ustate {
    uintptr_t pc, sp, fp;
    bool precise;  /* pc is an interrupted instruction, not a return address */
    bool fp_known; /* fp holds the frame's real rbp */
};

static inline size_t cache_slot(uintptr_t q) {
    return (size_t)((q * 0x9E3779B97F4A7C15ull) >> 52) & (OSP_CFI_CACHE_SIZE - 1);
}

/*
 * The row covering q, through the set's lookup cache: one 64-bit word per slot packs
 * (row index + 1) << 40 | image index << 32 | (q - image lo), so a reader sees a whole
 * entry or another whole entry, never a torn one, and checks that it names q. A hit costs
 * one load instead of two binary searches; a miss searches and stores. `*img_out` is the
 * image. NULL when no image's table covers q.
 */
static inline const struct osp_cfi_row *cached_lookup(const struct osp_cfi_set *set, uintptr_t q,
                                                      const struct osp_cfi_image **img_out) {
    size_t h = cache_slot(q);
    /* The set is immutable except for this cache (mapped writable). */
    _Atomic uint64_t *slot = (_Atomic uint64_t *)&((struct osp_cfi_set *)set)->cache[h];
    uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
    if (e != 0) {
        size_t ii = (size_t)((e >> 32) & 0xff), ri = (size_t)(e >> 40);
        if (ii < set->nimages) {
            const struct osp_cfi_image *img = &set->images[ii];
            if (img->lo + (uint32_t)e == q && ri >= 1 && ri <= img->table.nrows) {
                *img_out = img;
                return &img->table.rows[ri - 1];
            }
        }
    }
    const struct osp_cfi_image *img = osp_prof__cfi_find(set, q);
    *img_out = img;
    if (img == NULL) return NULL;
    const struct osp_cfi_row *r = osp_prof__cfi_lookup(&img->table, q);
    if (r == NULL) return NULL;
    size_t ii = (size_t)(img - set->images), ri = (size_t)(r - img->table.rows) + 1;
    if (ii < 256 && ri < ((size_t)1 << 24))
        atomic_store_explicit(slot,
                              (uint64_t)ri << 40 | (uint64_t)ii << 32 | (uint64_t)(q - img->lo),
                              memory_order_relaxed);
    return r;
}

/* The row is exactly the frame-pointer step. */
static inline bool fp_row(const struct osp_cfi_row *r) {
    return r->kind == OSP_CFI_STEP && r->cfa_reg == OSP_CFI_REG_FP && r->cfa_off == 16 &&
           r->ra_off == -8 && r->fp_rule == OSP_CFI_FP_OFFSET && r->fp_off == -16;
}

/* Whether [a, a + n) lies inside one executable segment of `img` (code) or one of its
 * other loaded segments (data): the only bytes the walk reads outside a stack. */
static bool in_segs(const uintptr_t (*segs)[2], size_t nsegs, uintptr_t a, size_t n) {
    for (size_t j = 0; j < nsegs; j++)
        if (a >= segs[j][0] && a < segs[j][1] && segs[j][1] - a >= n) return true;
    return false;
}

static inline int32_t rel32_at(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* If the code at `pc` (in `img`) is a jump stub, its destination into *to: `jmp rel32`
 * (sanitizer interceptors, thunks), or a PLT entry's `jmp *slot(%rip)` (optionally with a
 * bnd prefix), whose slot is read -- the function the dynamic linker bound the entry to, or
 * before binding the entry's own lazy path. Either optionally after endbr64. */
NO_SAN static bool jump_target(const struct osp_cfi_image *img, uintptr_t pc, uintptr_t *to) {
    uint8_t b[11]; /* endbr64 (4), bnd (1), jmp *slot(%rip) (6) */
    size_t n = 0;
    while (n < sizeof b && in_segs(img->segs, img->nsegs, pc, n + 1)) n++;
    if (n < 5 || !osp_prof__image_bytes(pc, b, n)) return false;
    size_t i = 0;
    if (n >= 9 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) i = 4;
    if (n - i >= 5 && b[i] == 0xe9) {
        *to = pc + i + 5 + (uintptr_t)(intptr_t)rel32_at(b + i + 1);
        return true;
    }
    if (n - i >= 7 && b[i] == 0xf2) i++;
    if (n - i < 6 || b[i] != 0xff || b[i + 1] != 0x25) return false;
    uintptr_t slot = pc + i + 6 + (uintptr_t)(intptr_t)rel32_at(b + i + 2);
    if (!in_segs(img->dsegs, img->ndsegs, slot, 8)) return false;
    return osp_prof__image_bytes(slot, to, sizeof *to); /* one read */
}

/* How well the instruction ending at `ret` (inside an executable segment of `img`) shows
 * a call that can have entered the function whose entry is `entry` (0: unknown):
 *   CALL_DIRECT    a direct call (e8 rel32) to that entry, possibly through up to two
 *                  jump stubs (jump_target: a PLT entry followed through its slot, or
 *                  `jmp rel32` as sanitizer interceptors and some thunks are);
 *   CALL_RESOLVED  a direct call into a PLT (a row of the PLT kind: its entry bound to
 *                  another function, which may reach this one by a tail call, or not bound
 *                  yet), to code without CFI, or any direct call when the entry is unknown;
 *   CALL_INDIRECT  an indirect call (ff /2 with a register, disp8, SIB or disp32 operand):
 *                  any function;
 *   CALL_NONE      not a call, or a direct call to another function of a known image.
 * Code bytes are read only inside the image's executable segments, a PLT slot only inside
 * its other loaded segments, and both through osp_prof__image_bytes: the words searched
 * are often stale, and an image of the set may have been dlclose'd since it was built. */
enum { CALL_NONE = 0, CALL_INDIRECT, CALL_RESOLVED, CALL_DIRECT };

NO_SAN static int call_into(const struct osp_cfi_set *set, const struct osp_cfi_image *img,
                            uintptr_t ret, uintptr_t entry) {
    for (size_t j = 0; j < img->nsegs; j++) {
        uintptr_t lo = img->segs[j][0], hi = img->segs[j][1];
        if (ret < lo + 7 || ret > hi) continue;
        uint8_t b[7]; /* the 7 code bytes before ret: p[-k] is b[7 - k] */
        if (!osp_prof__image_bytes(ret - 7, b, sizeof b)) return CALL_NONE; /* unmapped now */
        const uint8_t *p = b + 7;
        if (p[-5] == 0xe8) {
            uintptr_t target = ret + (uintptr_t)(intptr_t)rel32_at(p - 4);
            /* What the call shows when it does not lead to the entry: a call into a PLT
             * (a row of the PLT kind) may reach it by a tail call of the function bound
             * there, or not be bound yet; a call to another function, directly or through
             * a jump stub without such a row, is a stale record's. */
            int otherwise = CALL_NONE;
            for (int hop = 0; hop < 3; hop++) {
                if (entry == 0) return CALL_RESOLVED;
                if (target == entry) return CALL_DIRECT;
                const struct osp_cfi_image *ti = osp_prof__cfi_find(set, target);
                const struct osp_cfi_row *tr = ti ? osp_prof__cfi_lookup(&ti->table, target) : NULL;
                if (tr == NULL || tr->kind == OSP_CFI_GAP) return CALL_RESOLVED;
                if (tr->kind == OSP_CFI_PLT) otherwise = CALL_RESOLVED;
                if (!jump_target(ti, target, &target)) return otherwise;
            }
            return otherwise;
        }
        static const int lens[] = {2, 3, 4, 6, 7};
        for (size_t k = 0; k < sizeof lens / sizeof *lens; k++)
            if (p[-lens[k]] == 0xff && (p[-lens[k] + 1] & 0x38) == 0x10) return CALL_INDIRECT;
        return CALL_NONE;
    }
    return CALL_NONE;
}

/*
 * The frame pointer of a frame-pointer function whose rbp is unknown (§(l.4): the kernel
 * reports sp and pc of a blocked thread, not rbp). Every frame below it left rbp alone
 * (a frame that changes rbp saves it, and its CFI says where, which would have made rbp
 * known), so rbp is still this function's frame record, which lies above sp. The first
 * word pair {next, ret} above sp where ret is a return address after a direct call that
 * can have entered this function (or, failing any within FP_SEARCH_BYTES, after an
 * indirect call) in a known image, next is 0 or a frame record above it, and the walk
 * from it reaches the thread's root, is taken; nothing else on the way is recorded, so a
 * wrong guess can at worst end the walk early or (when a local variable looks exactly
 * like a frame record) skip that function's own caller.
 */
NO_SAN static bool hybrid_step(const struct osp_cfi_set *set, struct ustate *u, uintptr_t lo,
                               uintptr_t hi, intptr_t d, uint8_t *end, struct osp_unwind_info *info,
                               bool search);

/* Whether the walk from the frame record at `a` ({next, ret}) reaches the thread's root,
 * or is still going after as many steps as a stack may keep: a stack deeper than that is
 * cut there anyway (§(c) item 5), and refusing the real record of such a stack took a
 * higher one, within that many frames of the root, and lost the frames in between. */
NO_SAN static bool walk_from_record(const struct osp_cfi_set *set, uintptr_t a, uintptr_t next,
                                    uintptr_t ret, uintptr_t lo, uintptr_t hi, intptr_t d) {
    struct ustate t = {ret, a + 16, next, false, true};
    uint8_t end = OSP_UNWIND_CHAIN_END;
    int steps = 0;
    while (steps < OSP_PROF_MAX_FRAMES) {
        if (!hybrid_step(set, &t, lo, hi, d, &end, NULL, false)) return end == OSP_UNWIND_ROOT;
        steps++;
    }
    return true;
}

NO_SAN static bool find_frame_record(const struct osp_cfi_set *set, uintptr_t q, uintptr_t sp,
                                     uintptr_t lo, uintptr_t hi, intptr_t d, uintptr_t *fp_out) {
    /* The entry of the function the record belongs to (the frame at lookup address q). */
    uintptr_t entry = 0;
    const struct osp_cfi_image *fimg = osp_prof__cfi_find(set, q);
    if (fimg == NULL || !osp_prof__cfi_function_entry(&fimg->table, q, &entry)) entry = 0;
    uintptr_t a = (sp + 7) & ~(uintptr_t)7;
    uintptr_t stop = hi - a > FP_SEARCH_BYTES ? a + FP_SEARCH_BYTES : hi;
    /* The lowest candidate after a direct call (to this function, a PLT stub or code
     * without CFI) wins; failing that, the lowest after an indirect call. A stale record
     * left in a function's uninitialised locals by an earlier call (a copy of a thread
     * start's indirect call, say) can look like a frame record that reaches the root;
     * one that follows a direct call into this very function is far rarer. */
    int best = CALL_NONE;
    uintptr_t best_at = 0;
    for (; a + 16 <= stop && best < CALL_RESOLVED; a += 8) {
        uintptr_t next, ret;
        if (!stack_word(a + 8, lo, hi, d, &ret) || !code_addr_in(ret, lo, hi)) continue;
        const struct osp_cfi_image *img = osp_prof__cfi_find(set, ret - 1);
        if (img == NULL) continue;
        int how = call_into(set, img, ret, entry);
        if (how == CALL_DIRECT) how = CALL_RESOLVED; /* equally good evidence */
        if (how <= best) continue;
        if (!stack_word(a, lo, hi, d, &next)) continue;
        if (next != 0 && (next <= a || (next & 7u) != 0 || next > hi - 16)) continue;
        /* Stale frame records of earlier, deeper calls lie in uninitialised locals: a
         * candidate counts only if the walk from it reaches the thread's root. */
        if (!walk_from_record(set, a, next, ret, lo, hi, d)) continue;
        best = how;
        best_at = a;
    }
    if (best == CALL_NONE) return false;
    *fp_out = best_at;
    return true;
}

/* One step to the caller. Returns true with `u` updated, or false with `*end` set.
 * `search`: an unknown rbp may be located with find_frame_record (not inside one). */
NO_SAN static bool hybrid_step(const struct osp_cfi_set *set, struct ustate *u, uintptr_t lo,
                               uintptr_t hi, intptr_t d, uint8_t *end, struct osp_unwind_info *info,
                               bool search) {
    uintptr_t q = u->precise ? u->pc : u->pc - 1;
    if (set != NULL) {
        const struct osp_cfi_image *img;
        const struct osp_cfi_row *r = cached_lookup(set, q, &img);
        if (r != NULL) {
            switch (r->kind) {
            case OSP_CFI_ROOT: *end = OSP_UNWIND_ROOT; return false;
            case OSP_CFI_NONE: *end = OSP_UNWIND_NO_RULE; return false;
            case OSP_CFI_GAP: goto fp_step; /* no FDE here: the frame chain, as without CFI */
            case OSP_CFI_SIGNAL: {
                if (!osp_prof__is_sigreturn(img, u->pc)) {
                    *end = OSP_UNWIND_NO_RULE;
                    return false;
                }
                /* The kernel's rt_sigframe: after the handler returned into the trampoline,
                 * sp points at the ucontext (§(l.1) "signal frames"). */
                uintptr_t g = u->sp + offsetof(ucontext_t, uc_mcontext.gregs);
                uintptr_t pc, sp, fp;
                if (!stack_word(g + 8 * REG_RIP, lo, hi, d, &pc) ||
                    !stack_word(g + 8 * REG_RSP, lo, hi, d, &sp) ||
                    !stack_word(g + 8 * REG_RBP, lo, hi, d, &fp)) {
                    *end = OSP_UNWIND_BAD_STACK;
                    return false;
                }
                if (!code_addr_in(pc, lo, hi) || sp <= u->sp || sp > hi) {
                    *end = OSP_UNWIND_BAD_STACK;
                    return false;
                }
                u->pc = pc;
                u->sp = sp;
                u->fp = fp;
                u->precise = true;
                u->fp_known = true;
                if (info) info->signal_frames++;
                return true;
            }
            default: break;
            }
            if (fp_row(r)) goto fp_step;
            uintptr_t base;
            if (r->cfa_reg == OSP_CFI_REG_SP) {
                base = u->sp;
            } else {
                if (!u->fp_known) {
                    if (!search || !find_frame_record(set, q, u->sp, lo, hi, d, &u->fp)) {
                        *end = OSP_UNWIND_NO_RULE;
                        return false;
                    }
                    u->fp_known = true;
                }
                base = u->fp;
            }
            uintptr_t cfa = base + (uintptr_t)(intptr_t)r->cfa_off;
            if (r->kind == OSP_CFI_PLT && (u->pc & 15u) >= r->plt_min) cfa += 8;
            uintptr_t ra, fp = u->fp;
            if (cfa <= u->sp || cfa > hi ||
                !stack_word(cfa + (uintptr_t)(intptr_t)r->ra_off, lo, hi, d, &ra)) {
                *end = OSP_UNWIND_BAD_STACK;
                return false;
            }
            bool fp_known = u->fp_known;
            uintptr_t fp_slot = cfa + (uintptr_t)(intptr_t)r->fp_off;
            if (r->fp_rule == OSP_CFI_FP_OFFSET && fp_slot < u->sp) {
                /* An epilogue already popped rbp (compilers keep the save rule until the
                 * function's end): the slot is below sp, the register holds the caller's
                 * value. Only an interrupted frame can be here. */
            } else if (r->fp_rule == OSP_CFI_FP_OFFSET) {
                if (!stack_word(fp_slot, lo, hi, d, &fp)) {
                    *end = OSP_UNWIND_BAD_STACK;
                    return false;
                }
                fp_known = true;
            } else if (r->fp_rule == OSP_CFI_FP_UNDEF) {
                fp_known = false;
            }
            if (!code_addr_in(ra, lo, hi)) {
                *end = OSP_UNWIND_CHAIN_END;
                return false;
            }
            u->pc = ra;
            u->sp = cfa;
            u->fp = fp;
            u->fp_known = fp_known;
            u->precise = false;
            if (info) info->cfi_steps++;
            return true;
        }
    }
fp_step:
    /* The frame chain (§(c) item 2): a frame without a table, or one whose CFI is the
     * frame-pointer rule. sp only moves up, which bounds the walk. */
    if (!u->fp_known) {
        if (set == NULL || !search || !find_frame_record(set, q, u->sp, lo, hi, d, &u->fp)) {
            *end = OSP_UNWIND_NO_RULE;
            return false;
        }
        u->fp_known = true;
    }
    if (!frame_ok(u->fp, lo, hi) || u->fp + 16 <= u->sp ||
        u->fp - u->sp > OSP_PROF_MAX_FRAME_BYTES) {
        *end = OSP_UNWIND_CHAIN_END;
        return false;
    }
    uintptr_t next = RD(u->fp);
    uintptr_t ret = RD(u->fp + 8);
    if (!code_addr_in(ret, lo, hi)) {
        *end = OSP_UNWIND_CHAIN_END;
        return false;
    }
    u->sp = u->fp + 16;
    u->pc = ret;
    u->fp = next;
    u->precise = false;
    return true;
}

/* The image the walk's fast path last used: its table's range, fast-path map and longest
 * run of return-address-safe code, kept in registers across frames (most frames of a
 * stack lie in one or two images, and most of those in the run). */
struct fast_img {
    uintptr_t base, span; /* the map covers [base, base + span); span 0: none */
    uintptr_t run_lo, run_len;
    const uint64_t *map;
};

/* The fast-path bits (OSP_CFI_FPMAP_*) of lookup address q, switching `f` to q's image
 * when q is outside the current one (a binary search over the set's few images). */
static inline unsigned fast_bits(const struct osp_cfi_set *set, struct fast_img *f, uintptr_t q) {
    if (q - f->base >= f->span) {
        size_t i = osp_prof__cfi_find_index(set, q);
        if (i >= set->nimages) {
            f->span = f->run_len = 0;
            return 0;
        }
        const struct osp_cfi_fast *x = &set->fast[i];
        f->base = x->lo & ~(OSP_CFI_FP_CHUNK - 1);
        f->span = x->hi - f->base;
        f->map = x->fpmap;
        f->run_lo = x->lo + x->run_off;
        f->run_len = x->run_len;
    }
    if (f->map == NULL) return 0; /* a table without a map: every frame looked up */
    size_t c = (size_t)((q - f->base) >> OSP_CFI_FP_CHUNK_SHIFT);
    return (unsigned)(f->map[c / 32] >> (2 * (c % 32))) & 3u;
}

bool osp_prof__keeps_chain(const struct osp_cfi_set *set, uintptr_t ret) {
    if (set == NULL || !code_address(ret)) return false;
    struct fast_img f = {0, 0, 0, 0, NULL};
    return (fast_bits(set, &f, ret - 1) & OSP_CFI_FPMAP_RET) != 0;
}

/* Whether the frame record at fp may be the next one above a frame whose stack pointer
 * is sp: the fast path's checks (those of osp_prof__fp_walk): aligned, [fp, fp + 16)
 * inside [lo, hi16 + 16), above sp and at most OSP_PROF_MAX_FRAME_BYTES above it. */
static inline bool chain_record(uintptr_t fp, uintptr_t sp, uintptr_t lo, uintptr_t hi16) {
    return (fp & 7u) == 0 && fp - lo <= hi16 - lo &&
           fp + 15 - sp < OSP_PROF_MAX_FRAME_BYTES + 16; /* sp < fp + 16 */
}

/* chain_open's frame-by-frame check, for a chain that left the image's safe run or met
 * the frame cap. `u` is the first frame's state, frames out[*np..n) were appended by
 * following the chain, `broke` says the chain ended (else the cap), (sp, fp) are the last
 * frame's registers. The frames up to the first one the map does not vouch for are kept
 * and `u` becomes that frame's state (its registers recovered by following the chain
 * again). Returns true when the walk is over (CHAIN_END: the chain ended in a frame whose
 * step is the chain, as hybrid_step would end it there). */
NO_SAN static bool chain_settle(const struct osp_cfi_set *set, struct fast_img *f, struct ustate *u,
                                uintptr_t lo, uintptr_t hi16, intptr_t d, uintptr_t *out,
                                size_t *np, size_t n, bool broke, uintptr_t sp, uintptr_t fp) {
    size_t n0 = *np, i = n0;
    for (; i < n; i++) {
        uintptr_t q = out[i] - 1;
        if (q - f->run_lo < f->run_len) continue;
        if (!code_addr_in(out[i], lo, hi16 + 16) || !(fast_bits(set, f, q) & OSP_CFI_FPMAP_RET))
            break;
    }
    if (i == n) {
        *np = n;
        if (broke) return true;
        if (n > n0) *u = (struct ustate){out[n - 1], sp, fp, false, true};
        return false;
    }
    if (!code_addr_in(out[i], lo, hi16 + 16)) {
        /* The chain broke above frame i - 1, whose step is the chain: the walk ends. */
        *np = i;
        return true;
    }
    /* Frame i's step may not be the chain: keep frames up to it and recover its registers
     * (stack memory is read again, so checked again). */
    sp = u->sp;
    fp = u->fp;
    for (size_t k = n0; k <= i; k++) {
        if (!chain_record(fp, sp, lo, hi16) || RD(fp + 8) != out[k]) {
            *np = k;
            return true;
        }
        sp = fp + 16;
        fp = RD(fp);
    }
    *np = i + 1;
    *u = (struct ustate){out[i], sp, fp, false, true};
    return false;
}

/* The walk after its opening pass: the per-frame fast path and hybrid_step, from frame
 * out[n - 1] in state `u` (out of line: the opening pass keeps few registers live). */
NO_SAN static __attribute__((noinline)) size_t walk_on(const struct osp_cfi_set *set,
                                                       struct ustate u, struct fast_img f,
                                                       uintptr_t lo, uintptr_t hi, intptr_t d,
                                                       uintptr_t *out, size_t n, size_t cap,
                                                       bool *truncated,
                                                       struct osp_unwind_info *info) {
    uint8_t end = OSP_UNWIND_CHAIN_END;
    /* The fast path's bound: a frame record [fp, fp + 16) must lie inside [lo, hi). */
    bool fast = set != NULL && hi >= lo && hi - lo >= 16;
    uintptr_t hi16 = hi - 16;
    for (;;) {
        /* Fast path (§(l.1) "frame pointers stay the fast path"): while the fpmap says the
         * frame chain is the frame's right step — a return address into a function whose
         * call sites keep the chain, or an interrupted pc in a frame-pointer row — and the
         * chain is plausible (the checks of osp_prof__fp_walk: an aligned record inside the
         * stack, above sp, at most OSP_PROF_MAX_FRAME_BYTES up, a code address), step by
         * the chain with no row lookup, in registers. Anything else (a chain that looks
         * broken here included) takes hybrid_step, which decides from the frame's row. */
        if (fast && u.fp_known) {
            uintptr_t pc = u.pc, sp = u.sp, fp = u.fp;
            unsigned need = u.precise ? OSP_CFI_FPMAP_PC : OSP_CFI_FPMAP_RET;
            uintptr_t q = u.precise ? pc : pc - 1;
            bool moved = false;
            bool chain_end = false;
            for (;;) {
                /* Inside the image's run of safe code a return address needs no map read. */
                if (!(need == OSP_CFI_FPMAP_RET && q - f.run_lo < f.run_len) &&
                    !(fast_bits(set, &f, q) & need))
                    break;
                uintptr_t next = 0, ret = 0;
                bool ok = (fp & 7u) == 0 && fp - lo <= hi16 - lo &&
                          fp + 15 - sp < OSP_PROF_MAX_FRAME_BYTES + 16; /* sp < fp + 16 */
                if (ok) {
                    next = RD(fp);
                    ret = RD(fp + 8);
                    ok = code_addr_in(ret, lo, hi);
                }
                if (!ok) {
                    /* The map says this frame's step is the frame chain (its row is the
                     * frame-pointer rule, or a return address cannot lie in the rows
                     * that are not), so hybrid_step would end the walk here too. */
                    chain_end = true;
                    break;
                }
                sp = fp + 16;
                pc = ret;
                fp = next;
                if (n >= cap) {
                    *truncated = true;
                    if (info) info->end = OSP_UNWIND_CAP;
                    return n;
                }
                out[n++] = pc;
                moved = true;
                need = OSP_CFI_FPMAP_RET;
                q = pc - 1;
            }
            if (chain_end) {
                end = OSP_UNWIND_CHAIN_END;
                break;
            }
            if (moved) {
                u.pc = pc;
                u.sp = sp;
                u.fp = fp;
                u.precise = false;
            }
        }
        if (!hybrid_step(set, &u, lo, hi, d, &end, info, true)) break;
        if (n >= cap) {
            *truncated = true;
            end = OSP_UNWIND_CAP;
            break;
        }
        out[n++] = u.pc;
    }
    if (info) info->end = end;
    return n;
}

/* The walk from its first frame's registers, without the opening pass (or after it,
 * from chain_settle's frame). */
NO_SAN static __attribute__((noinline)) size_t
walk_from(const struct osp_cfi_set *set, const struct osp_unwind_regs *r, uintptr_t lo,
          uintptr_t hi, intptr_t d, uintptr_t *out, size_t n, size_t cap, bool *truncated,
          struct osp_unwind_info *info, bool opened, bool broke, uintptr_t sp, uintptr_t fp) {
    struct ustate u = {r->pc, r->sp, r->fp, !r->pc_is_return, r->fp_known};
    struct fast_img f = {0, 0, 0, 0, NULL};
    if (opened) {
        /* Frames out[1..n) came from following the chain from frame 0. */
        size_t kept = 1;
        if (chain_settle(set, &f, &u, lo, hi - 16, d, out, &kept, n, broke, sp, fp))
            return kept; /* info->end: CHAIN_END */
        n = kept;
    }
    return walk_on(set, u, f, lo, hi, d, out, n, cap, truncated, info);
}

/*
 * The walk's opening, optimistic pass (frame-pointer stacks are the common case). When
 * the first frame's step is the frame chain (its bit in its image's fast-path map), the
 * chain is followed as far as its records are plausible, with the checks of
 * osp_prof__fp_walk except its code-address test, which is replaced by one running
 * maximum of (return address - 1 - the image's safe run's start): when that ends below
 * the run's length, every return address lies in the run (so is code, and its frame's
 * step was the chain) and the loop's work is the whole walk: the frame-pointer walk's
 * cost, in registers, plus one subtraction and one conditional move per frame. Otherwise
 * chain_settle checks the frames one by one and the walk goes on from the first one the
 * map does not vouch for (walk_on: the per-frame fast path and hybrid_step).
 */
NO_SAN size_t osp_prof__hybrid_walk_copy(const struct osp_cfi_set *set,
                                         const struct osp_unwind_regs *r, uintptr_t lo,
                                         uintptr_t hi, intptr_t d, uintptr_t *out, size_t cap,
                                         bool *truncated, struct osp_unwind_info *info) {
    *truncated = false;
    if (info) {
        info->end = OSP_UNWIND_CHAIN_END;
        info->cfi_steps = info->signal_frames = 0;
    }
    if (cap == 0) return 0;
    uintptr_t q = r->pc_is_return ? r->pc - 1 : r->pc;
    out[0] = q;
    if (set == NULL || !r->fp_known || hi < lo || hi - lo < 16)
        return walk_from(set, r, lo, hi, d, out, 1, cap, truncated, info, false, false, 0, 0);
    size_t i = osp_prof__cfi_find_index(set, q);
    if (i >= set->nimages || set->fast[i].fpmap == NULL)
        return walk_from(set, r, lo, hi, d, out, 1, cap, truncated, info, false, false, 0, 0);
    const struct osp_cfi_fast *x = &set->fast[i];
    size_t c = (size_t)((q - (x->lo & ~(OSP_CFI_FP_CHUNK - 1))) >> OSP_CFI_FP_CHUNK_SHIFT);
    unsigned need = r->pc_is_return ? OSP_CFI_FPMAP_RET : OSP_CFI_FPMAP_PC;
    if (!((x->fpmap[c / 32] >> (2 * (c % 32))) & need))
        return walk_from(set, r, lo, hi, d, out, 1, cap, truncated, info, false, false, 0, 0);
    uintptr_t hi16 = hi - 16, sp = r->sp, fp = r->fp;
    uintptr_t base = x->lo + x->run_off + 1, far = 0;
    size_t n = 1;
    for (;;) {
        if (!chain_record(fp, sp, lo, hi16)) {
            if (far >= x->run_len) break;
            return n; /* every frame in the run: the chain's end is the walk's (CHAIN_END) */
        }
        if (n >= cap) /* the per-frame loop takes this step again and finds no room */
            return walk_from(set, r, lo, hi, d, out, n, cap, truncated, info, true, false, sp, fp);
        uintptr_t next = RD(fp), ret = RD(fp + 8);
        out[n++] = ret;
        uintptr_t dist = ret - base;
        far = dist > far ? dist : far;
        sp = fp + 16;
        fp = next;
    }
    return walk_from(set, r, lo, hi, d, out, n, cap, truncated, info, true, true, sp, fp);
}

size_t osp_prof__hybrid_walk(const struct osp_cfi_set *set, const struct osp_unwind_regs *r,
                             uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t cap,
                             bool *truncated, struct osp_unwind_info *info) {
    return osp_prof__hybrid_walk_copy(set, r, lo, hi, 0, out, cap, truncated, info);
}

#else /* arm64: frame records are kept by the ABI's common practice; the chain walk */

size_t osp_prof__hybrid_walk(const struct osp_cfi_set *set, const struct osp_unwind_regs *r,
                             uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t cap,
                             bool *truncated, struct osp_unwind_info *info) {
    (void)set;
    if (info) {
        info->end = OSP_UNWIND_CHAIN_END;
        info->cfi_steps = info->signal_frames = 0;
    }
    uintptr_t pc = r->pc_is_return ? r->pc - 1 : r->pc;
    return osp_prof__fp_walk(pc, r->fp_known ? r->fp : 0, r->lr, lo, hi, out, cap, truncated);
}

#endif
#endif /* OSP_PROF_SAMPLER */
