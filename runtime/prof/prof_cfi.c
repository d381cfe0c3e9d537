/*
 * prof_cfi.c — DWARF CFI (.eh_frame) decoded into compact per-image unwind tables, and
 * the published set of them. docs/spec/profiler.md §(l.1); docs/profiler-runtime.md
 * "The unwinder".
 *
 * Threads: everything here except osp_prof__cfi_lookup, osp_prof__cfi_find,
 * osp_prof__cfi_acquire/release and osp_prof__is_sigreturn runs outside signal context,
 * on one thread at a time (the session owner at start, then the sampler thread), and
 * takes no lock of the profiler; dl_iterate_phdr takes the dynamic loader's lock. Memory
 * comes from mmap only, never from the program's allocator.
 *
 * The input is untrusted (a loaded image's bytes may be corrupt or truncated): every read
 * goes through a cursor bounded by the buffer, every length and offset is checked before
 * use, and a program the table cannot express marks its range OSP_CFI_NONE.
 */
#ifndef _GNU_SOURCE /* also compiled into the driver (driver/CMakeLists.txt), which sets it */
#define _GNU_SOURCE
#endif
#include "prof_cfi.h"

#if OSP_PROF_SAMPLER /* Linux only; other targets use prof_stub.c */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "prof_own_text.h"

/* DWARF register numbers of the CFA base registers and the return address column, per
 * architecture (enum osp_cfi_arch). */
struct arch {
    uint8_t sp, fp, ra; /* DWARF numbers */
    bool x86_64;        /* PLT expressions; DW_CFA 0x2d is not AArch64's negate_ra_state */
    bool ra_in_lr;      /* the return address starts in a register (arm64 x30), not saved */
};
static const struct arch k_arch[] = {
    [OSP_CFI_ARCH_X86_64] = {.sp = 7, .fp = 6, .ra = 16, .x86_64 = true, .ra_in_lr = false},
    [OSP_CFI_ARCH_AARCH64] = {.sp = 31, .fp = 29, .ra = 30, .x86_64 = false, .ra_in_lr = true},
};

/* Rows of one build are bounded (a corrupt image cannot exhaust memory). */
#define MAX_ROWS       (1u << 22)
#define MAX_STATE_SAVE 16 /* DW_CFA_remember_state depth */

/* ---- bounded reads ------------------------------------------------------------------- */

struct cur {
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t rd_u(struct cur *c, size_t n) {
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

static uint64_t rd_uleb(struct cur *c) {
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (c->bad || c->p >= c->end) {
            c->bad = true;
            return 0;
        }
        uint8_t b = *c->p++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) return v;
        if (shift > 70) { /* longer than any 64-bit value */
            c->bad = true;
            return 0;
        }
    }
}

static int64_t rd_sleb(struct cur *c) {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    for (;;) {
        if (c->bad || c->p >= c->end) {
            c->bad = true;
            return 0;
        }
        b = *c->p++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) break;
        if (shift > 70) {
            c->bad = true;
            return 0;
        }
    }
    if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* DW_EH_PE_* */
enum {
    PE_ABSPTR = 0x00,
    PE_ULEB = 0x01,
    PE_UDATA2 = 0x02,
    PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04,
    PE_SLEB = 0x09,
    PE_SDATA2 = 0x0a,
    PE_SDATA4 = 0x0b,
    PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10,
    PE_INDIRECT = 0x80,
    PE_OMIT = 0xff,
};

/* Read an encoded pointer. `base_addr` is the run-time address of the buffer's first
 * byte (for pc-relative values); `bias` is added to absolute ones. Only absptr and pcrel
 * applications are supported (the only ones .eh_frame FDE addresses use on Linux);
 * others and indirect values set *unsupported. `value_only`: the pc_range form (format
 * only, no application). */
static uint64_t rd_encoded(struct cur *c, uint8_t enc, const uint8_t *buf, uintptr_t base_addr,
                           uintptr_t bias, bool value_only, bool *unsupported) {
    if (enc == PE_OMIT) return 0;
    const uint8_t *at = c->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case PE_ABSPTR: v = rd_u(c, sizeof(uintptr_t)); break;
    case PE_ULEB: v = rd_uleb(c); break;
    case PE_UDATA2: v = rd_u(c, 2); break;
    case PE_UDATA4: v = rd_u(c, 4); break;
    case PE_UDATA8: v = rd_u(c, 8); break;
    case PE_SLEB: v = (uint64_t)rd_sleb(c); break;
    case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)rd_u(c, 2); break;
    case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)rd_u(c, 4); break;
    case PE_SDATA8: v = rd_u(c, 8); break;
    default: *unsupported = true; return 0;
    }
    if (value_only) return v;
    if (enc & PE_INDIRECT) {
        *unsupported = true; /* never dereferenced: untrusted */
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00: return v + bias;
    case PE_PCREL: return v + (uint64_t)(base_addr + (uintptr_t)(at - buf));
    default: *unsupported = true; return 0;
    }
}

/* ---- growable mmap buffer ---------------------------------------------------------------- */

struct mbuf {
    void *p;
    size_t len, cap; /* bytes */
};

static void *map_bytes(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* map_bytes with the pages faulted in by the kernel at once (MAP_POPULATE), for
 * buffers written whole right away: one system call instead of a fault per page. */
static void *map_filled(size_t n) {
    void *p =
        mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t page_round(size_t n) {
    size_t pg = 4096;
    return (n + pg - 1) & ~(pg - 1);
}

static bool mbuf_push(struct mbuf *b, const void *x, size_t n) {
    if (b->cap - b->len < n) {
        size_t nc = b->cap ? b->cap * 2 : 1 << 16;
        while (nc - b->len < n) nc *= 2;
        /* Grown by remapping the same pages (no copy, no new faults for what is there). */
        void *q = b->p ? mremap(b->p, b->cap, nc, MREMAP_MAYMOVE) : map_bytes(nc);
        if (q == MAP_FAILED || q == NULL) return false;
        b->p = q;
        b->cap = nc;
    }
    memcpy((char *)b->p + b->len, x, n);
    b->len += n;
    return true;
}

static void mbuf_free(struct mbuf *b) {
    if (b->p) munmap(b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- the CFA program interpreter ----------------------------------------------------- */

enum { CFA_REG, CFA_PLT, CFA_BAD };
enum { R_SAME, R_OFFSET, R_UNDEF, R_BAD };

struct rules {
    uint8_t cfa_kind, cfa_reg_dw; /* DWARF register number for CFA_REG */
    uint8_t plt_min;
    int64_t cfa_off;
    uint8_t ra_rule, fp_rule;
    int64_t ra_off, fp_off;
};

struct cie {
    const struct arch *a;
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool has_z, signal;
    const uint8_t *insns, *insns_end;
};

/* The builder's rows are the table's own struct osp_cfi_row, so the buffer they are
 * emitted into becomes the table (no second copy, half the memory of a row with a full
 * address): pc_off is the address less the builder's `base` until the table is laid out,
 * and ROW_FP_FDE in plt_min (whose values are 0, 10 and 11) marks a row of an FDE whose
 * call sites all keep the frame chain (fde_keeps_chain). */
#define ROW_FP_FDE 0x80u
/* `base` lies this far below the .eh_frame section (or the first FDE of a table without
 * one): an image's code lies within 2 GiB of its .eh_frame, so 32 bits reach all of it. An
 * FDE outside [base, base + 4 GiB) (corrupt) is skipped. */
#define BASE_BELOW ((uintptr_t)1 << 31)

/* The rows one FDE emitted, end marker included: rows [first, first + n), in address
 * order as its program produced them; `lo` is the first one's pc_off. */
struct fde_block {
    uint32_t lo, first, n;
};

struct builder {
    struct mbuf rows; /* struct osp_cfi_row, pc_off relative to `base` */
    size_t nrows;
    uintptr_t base;
    bool based;
    struct mbuf blocks; /* struct fde_block, in the order the FDEs were read */
    size_t nblocks;
    struct mbuf starts; /* uintptr_t: each FDE's start */
    size_t nstarts;
    struct mbuf eh; /* uintptr_t pairs [lo, hi): the .eh_frame FDEs' ranges */
    size_t neh;
    uintptr_t *eh_maxend; /* after the .eh_frame pass: running maximum of the sorted ends */
    bool oom;
    struct osp_cfi_build_stats *st;
};

static struct osp_cfi_row to_row(const struct rules *s, bool signal, const struct arch *a) {
    struct osp_cfi_row r;
    memset(&r, 0, sizeof r);
    r.kind = OSP_CFI_NONE;
    if (signal) {
        r.kind = OSP_CFI_SIGNAL;
        return r;
    }
    if (s->ra_rule == R_UNDEF) {
        r.kind = OSP_CFI_ROOT;
        return r;
    }
    /* The return address saved at CFA + offset, or (arm64) still in the link register:
     * offset 0 in the row, which is therefore refused as a save slot. */
    bool ra_lr = s->ra_rule == R_SAME && a->ra_in_lr;
    if ((s->ra_rule != R_OFFSET && !ra_lr) || s->fp_rule == R_BAD || s->cfa_kind == CFA_BAD)
        return r;
    if (s->ra_rule == R_OFFSET &&
        (s->ra_off < INT16_MIN || s->ra_off > INT16_MAX || s->ra_off == 0))
        return r;
    if (s->fp_rule == R_OFFSET && (s->fp_off < INT16_MIN || s->fp_off > INT16_MAX)) return r;
    if (s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX) return r;
    if (s->cfa_kind == CFA_REG) {
        if (s->cfa_reg_dw == a->sp)
            r.cfa_reg = OSP_CFI_REG_SP;
        else if (s->cfa_reg_dw == a->fp)
            r.cfa_reg = OSP_CFI_REG_FP;
        else
            return r; /* CFA from another register: not known after the first frame */
        r.kind = OSP_CFI_STEP;
    } else {
        r.kind = OSP_CFI_PLT;
        r.cfa_reg = OSP_CFI_REG_SP;
        r.plt_min = s->plt_min;
    }
    r.cfa_off = (int32_t)s->cfa_off;
    r.ra_off = ra_lr ? 0 : (int16_t)s->ra_off;
    r.fp_rule = s->fp_rule == R_OFFSET  ? OSP_CFI_FP_OFFSET
                : s->fp_rule == R_UNDEF ? OSP_CFI_FP_UNDEF
                                        : OSP_CFI_FP_SAME;
    r.fp_off = s->fp_rule == R_OFFSET ? (int16_t)s->fp_off : 0;
    return r;
}

static void emit(struct builder *b, uintptr_t pc, struct osp_cfi_row r) {
    if (b->oom) return;
    if (b->nrows >= MAX_ROWS) {
        b->oom = true;
        return;
    }
    if (r.kind == OSP_CFI_NONE && b->st) b->st->rows_none++;
    r.pc_off = (uint32_t)(pc - b->base); /* feed keeps every FDE inside the window */
    if (!mbuf_push(&b->rows, &r, sizeof r)) {
        b->oom = true;
        return;
    }
    b->nrows++;
}

/* The x86-64 PLT CFA expressions (GNU ld's .plt, lazy binding):
 *   DW_OP_breg7 (rsp) N; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11 (or
 *   DW_OP_lit10 with IBT/.plt.sec); DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + N + ((rip & 15) >= 11 ? 8 : 0). Any other expression is refused. */
static bool match_plt(const struct arch *a, const uint8_t *e, size_t n, int64_t *off,
                      uint8_t *min) {
    if (!a->x86_64) return false;
    struct cur c = {e, e + n, false};
    if (rd_u(&c, 1) != 0x77) return false; /* DW_OP_breg7 */
    int64_t o = rd_sleb(&c);
    if (rd_u(&c, 1) != 0x80) return false; /* DW_OP_breg16 */
    if (rd_sleb(&c) != 0) return false;
    if (rd_u(&c, 1) != 0x3f || rd_u(&c, 1) != 0x1a) return false; /* lit15, and */
    uint64_t lit = rd_u(&c, 1);
    if (lit != 0x3a && lit != 0x3b) return false; /* lit10 / lit11 */
    if (rd_u(&c, 1) != 0x2a || rd_u(&c, 1) != 0x33 || rd_u(&c, 1) != 0x24 || rd_u(&c, 1) != 0x22)
        return false; /* ge, lit3, shl, plus */
    if (c.bad || c.p != c.end) return false;
    *off = o;
    *min = (uint8_t)(lit - 0x30);
    return true;
}

/* v * f, or INT64_MAX (an offset every later range check refuses) on overflow. */
static int64_t scale_s(int64_t v, int64_t f) {
    int64_t r;
    return __builtin_mul_overflow(v, f, &r) ? INT64_MAX : r;
}
static int64_t scale_u(uint64_t v, int64_t f) {
    if (v > (uint64_t)INT64_MAX) return INT64_MAX;
    return scale_s((int64_t)v, f);
}

static void set_reg_rule(struct rules *s, const struct arch *a, uint64_t reg, uint8_t rule,
                         int64_t off) {
    if (reg == a->ra) {
        s->ra_rule = rule;
        s->ra_off = off;
    } else if (reg == a->fp) {
        s->fp_rule = rule;
        s->fp_off = off;
    }
}

static void restore_reg_rule(struct rules *s, const struct arch *a, const struct rules *init,
                             uint64_t reg) {
    if (reg == a->ra) {
        s->ra_rule = init->ra_rule;
        s->ra_off = init->ra_off;
    } else if (reg == a->fp) {
        s->fp_rule = init->fp_rule;
        s->fp_off = init->fp_off;
    }
}

/*
 * Run a CFA program. With `b` NULL (a CIE's initial instructions) no rows are emitted and
 * location advances are ignored. Otherwise rows are emitted for [start, end): one at each
 * location change whose rules differ from the previous row's. Returns false when the
 * program is malformed (the caller marks the range NONE from the current location on).
 */
static bool run_program(struct builder *b, const struct cie *ci, struct cur *c, struct rules *s,
                        const struct rules *init, uintptr_t start, uintptr_t end, bool *emitted,
                        uintptr_t *loc_out) {
    struct rules saved[MAX_STATE_SAVE];
    size_t nsaved = 0;
    uintptr_t loc = start;
    struct osp_cfi_row last;
    bool have_last = false;
#define FAIL            \
    do {                \
        *loc_out = loc; \
        return false;   \
    } while (0)
#define ROW_AT(L)                                                   \
    do {                                                            \
        if (b) {                                                    \
            struct osp_cfi_row r_ = to_row(s, ci->signal, ci->a);   \
            if (!have_last || memcmp(&r_, &last, sizeof r_) != 0) { \
                emit(b, (L), r_);                                   \
                last = r_;                                          \
                have_last = true;                                   \
                *emitted = true;                                    \
            }                                                       \
        }                                                           \
    } while (0)
#define ADVANCE(D)                                                               \
    do {                                                                         \
        uint64_t d_ = (D);                                                       \
        if (c->bad) FAIL;                                                        \
        if (b) {                                                                 \
            ROW_AT(loc);                                                         \
            if (ci->code_align != 0 && d_ > (UINT64_MAX / ci->code_align)) FAIL; \
            d_ *= ci->code_align;                                                \
            if (d_ >= end - loc) { /* at or past the FDE's end: nothing more */  \
                loc = end;                                                       \
                *loc_out = loc;                                                  \
                return true;                                                     \
            }                                                                    \
            loc += (uintptr_t)d_;                                                \
        }                                                                        \
    } while (0)

    while (c->p < c->end && !c->bad) {
        uint8_t op = (uint8_t)rd_u(c, 1);
        uint8_t hi2 = op & 0xc0, low = op & 0x3f;
        if (hi2 == 0x40) { /* DW_CFA_advance_loc */
            ADVANCE(low);
            continue;
        }
        if (hi2 == 0x80) { /* DW_CFA_offset */
            int64_t off = scale_u(rd_uleb(c), ci->data_align);
            set_reg_rule(s, ci->a, low, R_OFFSET, off);
            continue;
        }
        if (hi2 == 0xc0) { /* DW_CFA_restore */
            restore_reg_rule(s, ci->a, init, low);
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: FAIL;  /* set_loc: rare and encoding-dependent, refused */
        case 0x02: ADVANCE(rd_u(c, 1)); break;
        case 0x03: ADVANCE(rd_u(c, 2)); break;
        case 0x04: ADVANCE(rd_u(c, 4)); break;
        case 0x05: { /* offset_extended */
            uint64_t reg = rd_uleb(c);
            set_reg_rule(s, ci->a, reg, R_OFFSET, scale_u(rd_uleb(c), ci->data_align));
            break;
        }
        case 0x06: restore_reg_rule(s, ci->a, init, rd_uleb(c)); break; /* restore_extended */
        case 0x07: set_reg_rule(s, ci->a, rd_uleb(c), R_UNDEF, 0); break;
        case 0x08: set_reg_rule(s, ci->a, rd_uleb(c), R_SAME, 0); break;
        case 0x09: { /* register: the value lives in another register */
            uint64_t reg = rd_uleb(c);
            (void)rd_uleb(c);
            set_reg_rule(s, ci->a, reg, R_BAD, 0);
            break;
        }
        case 0x0a: /* remember_state */
            if (nsaved >= MAX_STATE_SAVE) FAIL;
            saved[nsaved++] = *s;
            break;
        case 0x0b: /* restore_state */
            if (nsaved == 0) FAIL;
            *s = saved[--nsaved];
            break;
        case 0x0c: /* def_cfa */
            s->cfa_reg_dw = (uint8_t)(rd_uleb(c) & 0xff);
            s->cfa_off = scale_u(rd_uleb(c), 1);
            s->cfa_kind = CFA_REG;
            break;
        case 0x0d: { /* def_cfa_register */
            uint64_t reg = rd_uleb(c);
            s->cfa_reg_dw = (uint8_t)(reg > 255 ? 255 : reg);
            if (s->cfa_kind == CFA_PLT) s->cfa_kind = CFA_BAD;
            break;
        }
        case 0x0e: s->cfa_off = scale_u(rd_uleb(c), 1); break; /* def_cfa_offset */
        case 0x0f: {                                           /* def_cfa_expression */
            uint64_t n = rd_uleb(c);
            if (c->bad || n > (uint64_t)(c->end - c->p)) FAIL;
            int64_t off;
            uint8_t min;
            if (match_plt(ci->a, c->p, (size_t)n, &off, &min)) {
                s->cfa_kind = CFA_PLT;
                s->cfa_off = off;
                s->plt_min = min;
            } else {
                s->cfa_kind = CFA_BAD;
            }
            c->p += n;
            break;
        }
        case 0x10:   /* expression */
        case 0x16: { /* val_expression */
            uint64_t reg = rd_uleb(c);
            uint64_t n = rd_uleb(c);
            if (c->bad || n > (uint64_t)(c->end - c->p)) FAIL;
            c->p += n;
            set_reg_rule(s, ci->a, reg, R_BAD, 0);
            break;
        }
        case 0x11: { /* offset_extended_sf */
            uint64_t reg = rd_uleb(c);
            set_reg_rule(s, ci->a, reg, R_OFFSET, scale_s(rd_sleb(c), ci->data_align));
            break;
        }
        case 0x12: /* def_cfa_sf */
            s->cfa_reg_dw = (uint8_t)(rd_uleb(c) & 0xff);
            s->cfa_off = scale_s(rd_sleb(c), ci->data_align);
            s->cfa_kind = CFA_REG;
            break;
        case 0x13: s->cfa_off = scale_s(rd_sleb(c), ci->data_align); break; /* def_cfa_offset_sf */
        case 0x14:                                                          /* val_offset */
        case 0x15: {                                                        /* val_offset_sf */
            uint64_t reg = rd_uleb(c);
            if (op == 0x14)
                (void)rd_uleb(c);
            else
                (void)rd_sleb(c);
            set_reg_rule(s, ci->a, reg, R_BAD, 0);
            break;
        }
        case 0x2d: /* GNU_window_save (SPARC) / AARCH64_negate_ra_state */
            if (ci->a->x86_64) FAIL;
            break; /* arm64: the saved return address is signed; the walker strips it */
        case 0x2e: (void)rd_uleb(c); break; /* GNU_args_size */
        case 0x2f: {                        /* GNU_negative_offset_extended */
            uint64_t reg = rd_uleb(c);
            int64_t off = scale_u(rd_uleb(c), ci->data_align);
            set_reg_rule(s, ci->a, reg, R_OFFSET, off == INT64_MAX ? INT64_MAX : -off);
            break;
        }
        default: FAIL; /* unknown opcode: its operands cannot be skipped */
        }
        /* Offsets far outside any real frame are refused rather than overflow later. */
        if (s->cfa_off > INT32_MAX || s->cfa_off < INT32_MIN) s->cfa_kind = CFA_BAD;
    }
    if (c->bad) FAIL;
    ROW_AT(loc);
    *loc_out = loc;
    return true;
#undef ADVANCE
#undef FAIL
#undef ROW_AT
}

/* ---- CIE and FDE records ------------------------------------------------------------- */

/* Read a record header at p: length (32 bit, or 0xffffffff and 64 bit: the 64-bit DWARF
 * format). On success `*body` is the record's contents (after the length), `*next` the
 * following record and `*is64` the format. */
static bool record(const uint8_t *p, const uint8_t *end, const uint8_t **body, const uint8_t **next,
                   bool *terminator, bool *is64) {
    struct cur c = {p, end, false};
    uint64_t len = rd_u(&c, 4);
    *terminator = false;
    *is64 = false;
    if (c.bad) return false;
    if (len == 0) {
        *terminator = true;
        return false;
    }
    if (len == 0xffffffffu) {
        len = rd_u(&c, 8);
        *is64 = true;
        if (c.bad) return false;
    }
    if (len > (uint64_t)(end - c.p)) return false;
    *body = c.p;
    *next = c.p + len;
    return true;
}

/* One section being read (struct osp_cfi_section, bounds as pointers). */
struct sec {
    const uint8_t *buf, *end;
    uintptr_t addr, bias;
    bool debug;
    const uintptr_t (*code)[2]; /* osp_cfi_section's code view, or NULL */
    size_t ncode;
};

/* The CIE id field of a record in `x` (4 bytes in .eh_frame; 4 or 8 in .debug_frame by
 * format) and whether it marks a CIE. */
static bool is_cie_id(const struct sec *x, bool is64, uint64_t id) {
    if (!x->debug) return id == 0;
    return is64 ? id == UINT64_MAX : id == 0xffffffffu;
}

/* Parse the CIE whose record starts at `p`. */
static bool parse_cie(const struct sec *x, const struct arch *a, const uint8_t *p, struct cie *ci) {
    const uint8_t *body, *next;
    bool term, is64;
    if (!record(p, x->end, &body, &next, &term, &is64)) return false;
    struct cur c = {body, next, false};
    uint64_t id = rd_u(&c, x->debug && is64 ? 8 : 4);
    if (c.bad || !is_cie_id(x, is64, id)) return false;
    uint64_t version = rd_u(&c, 1);
    /* .eh_frame: 1 (and 3 from some compilers); .debug_frame: 1 (DWARF 2), 3, 4. */
    if (version != 1 && version != 3 && !(x->debug && version == 4)) return false;
    const uint8_t *aug = c.p;
    while (c.p < c.end && *c.p) c.p++;
    if (c.p >= c.end) return false;
    size_t aug_len = (size_t)(c.p - aug);
    c.p++; /* NUL */
    memset(ci, 0, sizeof *ci);
    ci->a = a;
    ci->fde_enc = PE_ABSPTR;
    size_t ai = 0;
    if (aug_len >= 2 && aug[0] == 'e' && aug[1] == 'h') {
        (void)rd_u(&c, sizeof(uintptr_t)); /* old GCC's eh_ptr */
        ai = 2;
    }
    if (version == 4) {
        /* address_size, segment_selector_size: only the target's own addresses, flat. */
        uint64_t asz = rd_u(&c, 1), ssz = rd_u(&c, 1);
        if (c.bad || asz != sizeof(uintptr_t) || ssz != 0) return false;
    }
    ci->code_align = rd_uleb(&c);
    ci->data_align = rd_sleb(&c);
    ci->ra_reg = version == 1 ? rd_u(&c, 1) : rd_uleb(&c);
    if (c.bad) return false;
    if (ai < aug_len && aug[ai] == 'z') {
        ci->has_z = true;
        uint64_t zlen = rd_uleb(&c);
        if (c.bad || zlen > (uint64_t)(c.end - c.p)) return false;
        struct cur z = {c.p, c.p + zlen, false};
        c.p += zlen;
        for (size_t i = ai + 1; i < aug_len; i++) {
            switch (aug[i]) {
            case 'L': (void)rd_u(&z, 1); break;
            case 'R': ci->fde_enc = (uint8_t)rd_u(&z, 1); break;
            case 'S': ci->signal = true; break;
            case 'P': {
                uint8_t enc = (uint8_t)rd_u(&z, 1);
                bool unsup = false;
                (void)rd_encoded(&z, enc & 0x7f, x->buf, 0, 0, true, &unsup);
                if (unsup) i = aug_len; /* cannot size it; the rest is skipped by zlen */
                break;
            }
            case 'B':
            case 'G': break; /* aarch64 BTI, MTE: no data */
            default: i = aug_len; break;
            }
            if (z.bad) return false;
        }
    } else if (ai < aug_len) {
        return false; /* an augmentation we cannot skip */
    }
    if (ci->ra_reg != a->ra) return false; /* only the architecture's return-address column */
    /* .debug_frame addresses are not relative to where the section happens to be read. */
    if (x->debug && (ci->fde_enc & 0x70) == PE_PCREL) return false;
    ci->insns = c.p;
    ci->insns_end = next;
    return true;
}

static void initial_rules(struct rules *s, const struct arch *a) {
    memset(s, 0, sizeof *s);
    s->cfa_kind = CFA_BAD; /* until the CIE defines it */
    /* x86-64: the CIE says where the return address is. AArch64: it starts in x30 (the
     * rule of a register the CIE leaves unspecified is "same value"). */
    s->ra_rule = a->ra_in_lr ? R_SAME : R_BAD;
    s->fp_rule = R_SAME;
}

/* Clip [*lo, *hi) to the run-time address space; false if empty. */
static bool sane_range(uint64_t begin, uint64_t range, uintptr_t *lo, uintptr_t *hi) {
    if (range == 0 || begin == 0) return false;
    if (begin > UINTPTR_MAX || range > UINTPTR_MAX - begin) return false;
    if (range > ((uint64_t)1 << 32)) return false; /* no function spans 4 GiB */
    *lo = (uintptr_t)begin;
    *hi = (uintptr_t)(begin + range);
    return true;
}

static int start_cmp(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

static int pair_cmp(const void *a, const void *b) {
    return start_cmp(a, b); /* by the pair's first word */
}

#define RADIX_BITS   11
#define ROW_IDX_BITS 22 /* MAX_ROWS */
_Static_assert(MAX_ROWS <= (1u << ROW_IDX_BITS), "a row index fits below the sort key");

/* Number of bits needed to hold v. */
static unsigned bit_len(uint64_t v) {
    unsigned n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

/*
 * Stable LSD radix sort of v[0, n) by bits [lo_bit, lo_bit + nbits) of each value,
 * RADIX_BITS a pass; the bits below lo_bit ride along, so values with equal keys keep
 * their order. `tmp` holds n values plus 2^RADIX_BITS counters (uint32_t), n < 2^32.
 * The result is in v. Linear in n: the build's sorts cost a few passes over the rows
 * instead of qsort's n log n indirect comparisons and copies.
 */
static void radix_sort(uint64_t *v, uint64_t *tmp, size_t n, unsigned lo_bit, unsigned nbits) {
    uint32_t *cnt = (uint32_t *)(void *)(tmp + n);
    uint64_t *src = v, *dst = tmp;
    for (unsigned sh = lo_bit; sh < lo_bit + nbits; sh += RADIX_BITS) {
        const uint64_t mask = ((uint64_t)1 << RADIX_BITS) - 1;
        memset(cnt, 0, sizeof(uint32_t) << RADIX_BITS);
        for (size_t i = 0; i < n; i++) cnt[(src[i] >> sh) & mask]++;
        uint32_t sum = 0;
        for (size_t d = 0; d < ((size_t)1 << RADIX_BITS); d++) {
            uint32_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) dst[cnt[(src[i] >> sh) & mask]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
}

/* Bytes of radix_sort's `tmp` for n values, page-rounded. */
static size_t radix_tmp_bytes(size_t n) {
    return page_round(n * sizeof(uint64_t) + (sizeof(uint32_t) << RADIX_BITS));
}

/* The rows' sort key: the address, then (at one address) an FDE's first row before the
 * previous FDE's end marker. Fits 33 bits. */
static uint64_t row_key(const struct osp_cfi_row *w) {
    return ((uint64_t)w->pc_off << 1) | (w->kind == OSP_CFI_GAP);
}

/*
 * Put the FDEs' row blocks in order of their first address, stably (blocks starting at
 * one address keep the order they were read in), by copying the rows into a new buffer
 * block by block. A section lists FDEs per object file, not per address (the C library:
 * 3,713 FDEs in 200 ascending runs; libLLVM: 118,004), and each block is in address order
 * already, so the rows come out sorted but for the end marker at each boundary between
 * two adjacent functions. Sorting the blocks costs a radix sort of one word per FDE and a
 * copy that reads each block in one piece; sorting the rows themselves applied a
 * permutation that jumps across the whole array, a third of the build's time for
 * libLLVM (32 MiB of rows). Blocks already in order, or that do not tile the rows, are
 * left as they are. False when memory ran out.
 */
static bool order_blocks(struct builder *b, uint32_t bottom, uint32_t top) {
    const struct fde_block *bl = b->blocks.p;
    size_t nb = b->nblocks, covered = 0;
    bool sorted = true;
    for (size_t i = 0; i < nb; i++) {
        if (bl[i].first != covered) return true;
        covered += bl[i].n;
        if (i > 0 && bl[i - 1].lo > bl[i].lo) sorted = false;
    }
    if (sorted || covered != b->nrows) return true;
    size_t vbytes = page_round(nb * sizeof(uint64_t)), tbytes = radix_tmp_bytes(nb);
    size_t rbytes = page_round(b->nrows * sizeof(struct osp_cfi_row));
    uint64_t *v = map_filled(vbytes), *tmp = map_bytes(tbytes);
    struct osp_cfi_row *out = v && tmp ? map_filled(rbytes) : NULL;
    if (out != NULL) {
        for (size_t i = 0; i < nb; i++) v[i] = ((uint64_t)(bl[i].lo - bottom) << ROW_IDX_BITS) | i;
        radix_sort(v, tmp, nb, ROW_IDX_BITS, bit_len(top - bottom));
        const struct osp_cfi_row *w = b->rows.p;
        const uint64_t idx_mask = ((uint64_t)1 << ROW_IDX_BITS) - 1;
        size_t k = 0;
        for (size_t i = 0; i < nb; i++) {
            const struct fde_block *x = &bl[v[i] & idx_mask];
            memcpy(out + k, w + x->first, x->n * sizeof *w);
            k += x->n;
        }
        mbuf_free(&b->rows);
        b->rows.p = out;
        b->rows.len = b->nrows * sizeof *out;
        b->rows.cap = rbytes;
    }
    if (v) munmap(v, vbytes);
    if (tmp) munmap(tmp, tbytes);
    return out != NULL;
}

/*
 * Sort the builder's rows by row_key, stably. Rows at one address from different FDEs
 * (overlapping FDEs: corrupt input) come in the order of their FDEs' starts, then of the
 * order the FDEs were read in; the first one wins in the compaction. Each FDE's rows come
 * out of its program already in address order and order_blocks puts the FDEs in address
 * order, so the rows are nearly sorted: an insertion sort with a budget of n moves, then
 * (over budget) a radix sort of (key, index) words and the permutation applied in place.
 * False when memory ran out.
 */
static bool sort_rows(struct builder *b, uint32_t bottom, uint32_t top) {
    if (!order_blocks(b, bottom, top)) return false;
    struct osp_cfi_row *w = b->rows.p;
    size_t n = b->nrows;
    /* Insertion sort while it stays cheap (stable, no memory): the usual disorder is
     * local -- a function starting where the previous one ends puts its first row after
     * that one's end marker at the same address -- so it costs about one move per FDE. */
    size_t moves = 0, budget = n;
    for (size_t i = 1; i < n; i++) {
        uint64_t k = row_key(&w[i]);
        if (row_key(&w[i - 1]) <= k) continue;
        struct osp_cfi_row x = w[i];
        size_t j = i;
        while (j > 0 && row_key(&w[j - 1]) > k && moves < budget) {
            w[j] = w[j - 1];
            j--;
            moves++;
        }
        w[j] = x;
        if (moves >= budget) break; /* far from sorted: radix sort the rest */
    }
    if (moves < budget) return true;
    size_t vbytes = page_round(n * sizeof(uint64_t)), tbytes = radix_tmp_bytes(n);
    uint64_t *v = map_filled(vbytes), *tmp = map_filled(tbytes);
    bool ok = v != NULL && tmp != NULL;
    if (ok) {
        const uint64_t k0 = (uint64_t)bottom << 1; /* keys from the lowest row's */
        for (size_t i = 0; i < n; i++) v[i] = ((row_key(&w[i]) - k0) << ROW_IDX_BITS) | i;
        radix_sort(v, tmp, n, ROW_IDX_BITS, bit_len((((uint64_t)top << 1) | 1) - k0));
        /* Position j takes row v[j]'s index: applied in place, cycle by cycle (a done
         * position is marked UINT64_MAX, above any key). */
        const uint64_t idx_mask = ((uint64_t)1 << ROW_IDX_BITS) - 1;
        for (size_t i = 0; i < n; i++) {
            if (v[i] == UINT64_MAX) continue;
            struct osp_cfi_row x = w[i];
            size_t j = i;
            for (;;) {
                size_t src = (size_t)(v[j] & idx_mask);
                v[j] = UINT64_MAX;
                if (src == i) {
                    w[j] = x;
                    break;
                }
                w[j] = w[src];
                j = src;
            }
        }
    }
    if (v) munmap(v, vbytes);
    if (tmp) munmap(tmp, tbytes);
    return ok;
}

/* Sort st[0, n) (values below 2^32) ascending. False when memory ran out. */
static bool sort_starts(uintptr_t *st, size_t n) {
    bool sorted = true;
    uintptr_t max = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && st[i - 1] > st[i]) sorted = false;
        if (st[i] > max) max = st[i];
    }
    if (sorted) return true;
    size_t tbytes = radix_tmp_bytes(n);
    uint64_t *tmp = map_bytes(tbytes);
    if (tmp == NULL) return false;
    _Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "64-bit targets only");
    radix_sort((uint64_t *)st, tmp, n, 0, bit_len(max));
    munmap(tmp, tbytes);
    return true;
}

/* Exactly the frame-pointer rule: CFA = fp + 16, RA at CFA - 8, fp at CFA - 16. */
static bool row_is_fp(const struct osp_cfi_row *r) {
    return r->kind == OSP_CFI_STEP && r->cfa_reg == OSP_CFI_REG_FP && r->cfa_off == 16 &&
           r->ra_off == -8 && r->fp_rule == OSP_CFI_FP_OFFSET && r->fp_off == -16;
}

/*
 * Whether every call site of the function whose rows are `w[0, n)` keeps the frame chain,
 * so that a return address into it is unwound by the frame chain exactly as by its CFI:
 * a frame-pointer function, whose rows are the frame-pointer rule (the body) and the
 * prologue/epilogue shapes around it (CFA = sp + 8 at entry and after the epilogue's pop,
 * sp + 16 between push and mov), with at least one frame-pointer row. Calls are only made
 * from the body (a return address lies after the prologue and before the epilogue's pop).
 * Or an x86-64 function that never moves sp (every row CFA = sp + 8, fp unchanged) whose
 * code `leaf_ok` found without a call instruction: no return address lies in it. Without
 * that check such a function is not taken: most are leaves, but GCC calls a callee it
 * knows needs no stack alignment without aligning sp (`middle: call burn; ...; ret`), and
 * following the frame chain from a return address there skips its caller (the chain's rbp
 * is still the caller's).
 * Anything else is not: a frameless function that calls, a CFA from another register,
 * rules the table cannot express, PLT stubs, signal trampolines, the outermost frame.
 */
static bool fde_keeps_chain(const struct osp_cfi_row *w, size_t n, bool leaf_ok) {
    bool any_fp = false, all_leaf = true;
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        const struct osp_cfi_row *r = &w[i];
        if (row_is_fp(r)) {
            any_fp = true;
            all_leaf = false;
            continue;
        }
        if (r->kind != OSP_CFI_STEP || r->cfa_reg != OSP_CFI_REG_SP || r->ra_off != -8)
            return false;
        bool saved = r->fp_rule == OSP_CFI_FP_OFFSET && r->fp_off == -16;
        if (r->cfa_off == 8 && r->fp_rule == OSP_CFI_FP_SAME) continue; /* entry, leaf */
        all_leaf = false;
        if ((r->cfa_off == 8 || r->cfa_off == 16) && saved) continue; /* around push/pop */
        return false;
    }
    return any_fp || (all_leaf && leaf_ok);
}

/* Functions longer than this are not scanned for calls (not taken for leaves). */
#define LEAF_SCAN_MAX 4096

/* Whether the x86-64 code of [lo, hi), read through `x`'s code view, certainly holds no
 * call instruction: no byte 0xe8 (call rel32) and no byte 0xff followed by a ModRM byte
 * whose reg field is 2 or 3 (call, far call through a register or memory). Every call
 * instruction holds one of those two patterns whatever the instruction boundaries, so a
 * byte that only looks like one (inside an immediate) can only make the answer "may
 * call", never the reverse. False without a code view, for a range outside it or longer
 * than LEAF_SCAN_MAX. */
static bool leaf_without_calls(const struct sec *x, uintptr_t lo, uintptr_t hi) {
    if (x->code == NULL || hi <= lo || hi - lo > LEAF_SCAN_MAX) return false;
    for (size_t i = 0; i < x->ncode; i++) {
        if (lo < x->code[i][0] || hi > x->code[i][1]) continue;
        const uint8_t *p = (const uint8_t *)lo;
        size_t n = hi - lo;
        for (size_t j = 0; j < n; j++) {
            if (p[j] == 0xe8) return false;
            if (p[j] == 0xff && j + 1 < n && ((p[j + 1] >> 3) & 7u) - 2u < 2u) return false;
        }
        return true;
    }
    return false;
}

/* Whether FDE range [lo, hi) of .debug_frame overlaps one of .eh_frame's (sorted, with
 * b->eh_maxend the running maximum of their ends). */
static bool eh_covers(const struct builder *b, uintptr_t lo, uintptr_t hi) {
    const uintptr_t *r = b->eh.p;
    size_t a = 0, z = b->neh; /* the number of ranges starting below hi */
    while (a < z) {
        size_t m = a + (z - a) / 2;
        if (r[2 * m] < hi)
            a = m + 1;
        else
            z = m;
    }
    return a > 0 && b->eh_maxend[a - 1] > lo;
}

/* Read every FDE of one section into the builder. */
static void feed(struct builder *b, const struct sec *x, const struct arch *a) {
    struct osp_cfi_build_stats *stats = b->st;
    const uint8_t *p = x->buf;
    /* The last CIE used, parsed and with its initial instructions run: FDEs share a few
     * CIEs (usually one), and neither result depends on the FDE. */
    const uint8_t *last_cie = NULL;
    bool last_ok = false, last_init_ok = false;
    struct cie last_ci;
    struct rules last_init;
    while (p < x->end && !b->oom) {
        const uint8_t *body, *next;
        bool term, is64;
        if (!record(p, x->end, &body, &next, &term, &is64)) break; /* terminator or truncated */
        struct cur c = {body, next, false};
        uint64_t id = rd_u(&c, x->debug && is64 ? 8 : 4);
        if (c.bad) break;
        if (is_cie_id(x, is64, id)) {
            stats->cies++;
            p = next;
            continue;
        }
        stats->fdes++;
        /* The CIE pointer: .eh_frame, the distance back from this field to the CIE;
         * .debug_frame, the CIE's offset in the section. */
        size_t field = (size_t)(body - x->buf);
        const uint8_t *cie_at;
        if (!x->debug)
            cie_at = id > field ? NULL : body - id;
        else
            cie_at = id >= (uint64_t)(x->end - x->buf) ? NULL : x->buf + id;
        if (cie_at != NULL && cie_at != last_cie) {
            last_cie = cie_at;
            last_ok = parse_cie(x, a, cie_at, &last_ci);
            if (last_ok) {
                initial_rules(&last_init, a);
                struct cur ic = {last_ci.insns, last_ci.insns_end, false};
                bool dummy_emitted = false;
                uintptr_t dummy_loc;
                last_init_ok = run_program(NULL, &last_ci, &ic, &last_init, &last_init, 0, 0,
                                           &dummy_emitted, &dummy_loc);
            }
        }
        if (cie_at == NULL || !last_ok) {
            stats->fdes_skipped++;
            p = next;
            continue;
        }
        const struct cie ci = last_ci;
        bool unsup = false;
        uint64_t begin, range;
        if (x->debug && !ci.has_z) {
            begin = rd_u(&c, sizeof(uintptr_t)) + x->bias; /* target addresses */
            range = rd_u(&c, sizeof(uintptr_t));
        } else {
            begin = rd_encoded(&c, ci.fde_enc, x->buf, x->addr, x->bias, false, &unsup);
            range = rd_encoded(&c, ci.fde_enc & 0x0f, x->buf, x->addr, x->bias, true, &unsup);
        }
        uintptr_t lo, hi;
        if (c.bad || unsup || !sane_range(begin, range, &lo, &hi)) {
            stats->fdes_skipped++;
            p = next;
            continue;
        }
        if (!b->based) {
            b->base = lo > BASE_BELOW ? lo - BASE_BELOW : 0;
            b->based = true;
        }
        if (lo < b->base || hi - b->base > UINT32_MAX) { /* no image spans 4 GiB of code */
            stats->fdes_skipped++;
            p = next;
            continue;
        }
        if (ci.has_z) {
            uint64_t zlen = rd_uleb(&c);
            if (c.bad || zlen > (uint64_t)(c.end - c.p)) {
                stats->fdes_skipped++;
                p = next;
                continue;
            }
            c.p += zlen;
        }
        if (x->debug) {
            if (eh_covers(b, lo, hi)) { /* .eh_frame describes this code: it wins */
                stats->debug_fdes_shadow++;
                p = next;
                continue;
            }
            stats->debug_fdes++;
        } else {
            uintptr_t pair[2] = {lo, hi};
            if (mbuf_push(&b->eh, pair, sizeof pair))
                b->neh++;
            else
                b->oom = true;
        }
        if (!b->oom && b->nstarts < MAX_ROWS) {
            if (mbuf_push(&b->starts, &lo, sizeof lo))
                b->nstarts++;
            else
                b->oom = true;
        }
        struct rules init = last_init, s;
        if (!last_init_ok) {
            /* A CIE we cannot run: the whole range cannot be unwound. */
            initial_rules(&init, a);
            init.cfa_kind = CFA_BAD;
        }
        s = init;
        bool emitted = false;
        uintptr_t loc = lo;
        size_t first = b->nrows;
        if (!run_program(b, &ci, &c, &s, &init, lo, hi, &emitted, &loc)) {
            struct osp_cfi_row none;
            memset(&none, 0, sizeof none);
            if (loc < hi)
                emit(b, loc, none); /* from here on: cannot unwind */
            else if (!emitted)
                emit(b, lo, none);
        }
        if (!b->oom) {
            struct osp_cfi_row *w = b->rows.p;
            if (fde_keeps_chain(w + first, b->nrows - first,
                                a->x86_64 && leaf_without_calls(x, lo, hi))) {
                for (size_t i = first; i < b->nrows; i++) w[i].plt_min |= ROW_FP_FDE;
                stats->fdes_fp++;
            }
        }
        struct osp_cfi_row gap;
        memset(&gap, 0, sizeof gap);
        gap.kind = OSP_CFI_GAP;
        emit(b, hi, gap); /* end marker; replaced by a following FDE's first row */
        if (!b->oom && b->nrows > first) {
            const struct osp_cfi_row *w = b->rows.p;
            struct fde_block blk = {w[first].pc_off, (uint32_t)first, (uint32_t)(b->nrows - first)};
            if (mbuf_push(&b->blocks, &blk, sizeof blk))
                b->nblocks++;
            else
                b->oom = true;
        }
        p = next;
    }
}

/* Sort the .eh_frame ranges and their running maximum end, for eh_covers. */
static void index_eh(struct builder *b) {
    if (b->neh == 0 || b->oom) return;
    uintptr_t *r = b->eh.p;
    qsort(r, b->neh, 2 * sizeof *r, pair_cmp);
    b->eh_maxend = map_bytes(page_round(b->neh * sizeof(uintptr_t)));
    if (b->eh_maxend == NULL) {
        b->oom = true;
        return;
    }
    uintptr_t m = 0;
    for (size_t i = 0; i < b->neh; i++) {
        if (r[2 * i + 1] > m) m = r[2 * i + 1];
        b->eh_maxend[i] = m;
    }
}

static void builder_free(struct builder *b) {
    mbuf_free(&b->rows);
    mbuf_free(&b->blocks);
    mbuf_free(&b->starts);
    mbuf_free(&b->eh);
    if (b->eh_maxend) munmap(b->eh_maxend, page_round(b->neh * sizeof(uintptr_t)));
    b->eh_maxend = NULL;
}

/* Set `bits` of every chunk of the fpmap overlapping [a, z) (offsets from the map's base)
 * to zero. */
static void fpmap_clear(uint64_t *map, uintptr_t a, uintptr_t z, unsigned bits) {
    if (z <= a) return;
    size_t c0 = a >> OSP_CFI_FP_CHUNK_SHIFT, c1 = (z - 1) >> OSP_CFI_FP_CHUNK_SHIFT;
    /* Whole words at once between the partial ones at either end. */
    uint64_t all = 0;
    for (int i = 0; i < 32; i++) all |= (uint64_t)bits << (2 * i);
    size_t c = c0;
    for (; c <= c1 && c % 32 != 0; c++) map[c / 32] &= ~((uint64_t)bits << (2 * (c % 32)));
    for (; c + 31 <= c1; c += 32) map[c / 32] &= ~all;
    for (; c <= c1; c++) map[c / 32] &= ~((uint64_t)bits << (2 * (c % 32)));
}

/* Recompute a table's longest run of return-address-safe chunks (after the map changed).
 * Word by word where a word is all safe or all not. */
static void fpmap_run(struct osp_cfi_table *t) {
    t->ret_run_lo = t->ret_run_hi = t->lo;
    if (t->fpmap == NULL) return;
    uintptr_t base = t->lo & ~(OSP_CFI_FP_CHUNK - 1);
    size_t nchunks = (size_t)((t->hi - base + OSP_CFI_FP_CHUNK - 1) >> OSP_CFI_FP_CHUNK_SHIFT);
    size_t best_lo = 0, best_n = 0, cur_lo = 0, cur_n = 0;
    const uint64_t ret_bits = 0x5555555555555555ull; /* OSP_CFI_FPMAP_RET of 32 chunks */
    for (size_t c = 0; c < nchunks; c++) {
        if (c % 32 == 0 && nchunks - c >= 32) {
            uint64_t w = t->fpmap[c / 32] & ret_bits;
            if (w == ret_bits) {
                if (cur_n == 0) cur_lo = c;
                cur_n += 32;
                if (cur_n > best_n) {
                    best_n = cur_n;
                    best_lo = cur_lo;
                }
                c += 31;
                continue;
            }
            if (w == 0) {
                cur_n = 0;
                c += 31;
                continue;
            }
        }
        if ((t->fpmap[c / 32] >> (2 * (c % 32))) & OSP_CFI_FPMAP_RET) {
            if (cur_n++ == 0) cur_lo = c;
            if (cur_n > best_n) {
                best_n = cur_n;
                best_lo = cur_lo;
            }
        } else {
            cur_n = 0;
        }
    }
    /* Chunks are aligned; the run is clipped to [lo, hi). */
    uintptr_t a = base + (best_lo << OSP_CFI_FP_CHUNK_SHIFT);
    uintptr_t z = a + (best_n << OSP_CFI_FP_CHUNK_SHIFT);
    if (a < t->lo) a = t->lo;
    if (z > t->hi) z = t->hi;
    t->ret_run_lo = a;
    t->ret_run_hi = z > a ? z : a;
}

bool osp_prof__cfi_build_sections(const struct osp_cfi_section *eh,
                                  const struct osp_cfi_section *dbg, enum osp_cfi_arch arch,
                                  struct osp_cfi_table *out, struct osp_cfi_build_stats *stats) {
    memset(out, 0, sizeof *out);
    struct osp_cfi_build_stats dummy;
    if (stats == NULL) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    if ((unsigned)arch >= sizeof k_arch / sizeof k_arch[0]) return false;
    const struct arch *a = &k_arch[arch];
    struct builder b = {.st = stats};
    if (eh != NULL && eh->bytes != NULL && eh->len > 0) {
        b.base = eh->addr > BASE_BELOW ? eh->addr - BASE_BELOW : 0;
        b.based = true;
        struct sec x = {eh->bytes, eh->bytes + eh->len, eh->addr,
                        eh->bias,  eh->debug_frame,     eh->code,
                        eh->ncode};
        feed(&b, &x, a);
    }
    if (dbg != NULL && dbg->bytes != NULL && dbg->len > 0) {
        index_eh(&b);
        struct sec x = {dbg->bytes, dbg->bytes + dbg->len, dbg->addr,
                        dbg->bias,  dbg->debug_frame,      dbg->code,
                        dbg->ncode};
        if (!b.oom) feed(&b, &x, a);
    }
    if (b.oom || b.nrows == 0) {
        builder_free(&b);
        return false;
    }
    struct osp_cfi_row *w = b.rows.p;
    uint32_t tlo_off = w[0].pc_off, thi_off = w[0].pc_off;
    for (size_t i = 1; i < b.nrows; i++) {
        if (w[i].pc_off < tlo_off) tlo_off = w[i].pc_off;
        if (w[i].pc_off > thi_off) thi_off = w[i].pc_off;
    }
    if (thi_off == tlo_off || !sort_rows(&b, tlo_off, thi_off)) {
        builder_free(&b);
        return false;
    }
    w = b.rows.p;
    uintptr_t tlo = b.base + tlo_off, thi = b.base + thi_off;
    /* Compact: one row per address (the first after sorting: a function's first row
     * before the previous one's end marker there), identical neighbours merged
     * (ROW_FP_FDE included). The other rows at an address are dropped -- also when its
     * first row was merged into the row before it: the end marker behind it must not
     * take its place (a function starting with the rules the previous one ended with
     * would begin with a gap). The last row (the highest FDE end) is kept as the table's
     * end marker. */
    const size_t rules_at = offsetof(struct osp_cfi_row, cfa_off);
    size_t k = 0;
    for (size_t i = 0; i + 1 < b.nrows; i++) {
        if (i > 0 && w[i].pc_off == w[i - 1].pc_off) continue; /* not the first there */
        if (k > 0 && memcmp((const char *)&w[i] + rules_at, (const char *)&w[k - 1] + rules_at,
                            sizeof w[i] - rules_at) == 0)
            continue;
        w[k++] = w[i];
    }
    if (k > 0 && w[k - 1].pc_off == thi_off) k--;
    memset(&w[k], 0, sizeof w[k]);
    w[k].pc_off = thi_off;
    w[k].kind = OSP_CFI_GAP;
    k++;
    if (k < 2) {
        builder_free(&b);
        return false;
    }
    /* Function entries: the FDE starts as offsets, sorted and distinct. */
    uintptr_t *st = b.starts.p;
    size_t ns = 0;
    for (size_t i = 0; i < b.nstarts; i++)
        if (st[i] >= tlo && st[i] < thi) st[ns++] = st[i] - tlo;
    if (!sort_starts(st, ns)) {
        builder_free(&b);
        return false;
    }
    size_t nu = 0;
    for (size_t i = 0; i < ns; i++)
        if (nu == 0 || st[i] != st[nu - 1]) st[nu++] = st[i];
    /* The fast-path map covers [tlo rounded down to a chunk, thi). */
    uintptr_t mbase = tlo & ~(OSP_CFI_FP_CHUNK - 1);
    size_t nchunks = (size_t)((thi - mbase + OSP_CFI_FP_CHUNK - 1) >> OSP_CFI_FP_CHUNK_SHIFT);
    /* No map (no fast path, every frame looked up) for a table spanning more code than any
     * real image has: a corrupt one cannot make the build slow or large. */
    size_t nwords = thi - mbase <= OSP_CFI_FPMAP_MAX_SPAN ? (nchunks + 31) / 32 : 0;
    size_t starts_off = k * sizeof(struct osp_cfi_row);
    size_t map_off = (starts_off + nu * sizeof(uint32_t) + 7) & ~(size_t)7;
    size_t bytes_out = page_round(map_off + nwords * sizeof(uint64_t));
    /* The table is the rows' own buffer, resized in place where the kernel can: rows, then
     * starts, then the map (pages past the old end come zero-filled). */
    void *block = mremap(b.rows.p, b.rows.cap, bytes_out, MREMAP_MAYMOVE);
    if (block == MAP_FAILED) {
        builder_free(&b);
        return false;
    }
    b.rows.p = NULL; /* the table's now */
    b.rows.len = b.rows.cap = 0;
    struct osp_cfi_row *rows = block;
    uint32_t *starts = (uint32_t *)(void *)((char *)block + starts_off);
    for (size_t i = 0; i < nu; i++) starts[i] = (uint32_t)st[i];
    memset(starts + nu, 0, map_off - (starts_off + nu * sizeof(uint32_t)));
    uint64_t *map = nwords ? (uint64_t *)(void *)((char *)block + map_off) : NULL;
    if (map) memset(map, 0xff, nwords * sizeof *map);
    /* What follows (under a page) still holds rows from before the compaction: zeroed, as
     * a fresh mapping would be. */
    size_t used = map_off + nwords * sizeof(uint64_t);
    memset((char *)block + used, 0, bytes_out - used);
    for (size_t i = 0; map && i + 1 < k; i++) {
        if (rows[i].kind == OSP_CFI_GAP) continue; /* no CFI: the frame chain anyway */
        uintptr_t za = b.base + rows[i].pc_off - mbase, zz = b.base + rows[i + 1].pc_off - mbase;
        unsigned clear = 0;
        if (!(rows[i].plt_min & ROW_FP_FDE)) clear |= OSP_CFI_FPMAP_RET;
        if (!row_is_fp(&rows[i])) clear |= OSP_CFI_FPMAP_PC;
        fpmap_clear(map, za, zz, clear);
        /* A signal trampoline is entered by the kernel, not called: the "return address"
         * a handler's frame record holds is the trampoline's first byte, looked up at the
         * byte before it. glibc's FDE starts one nop early for that; a trampoline whose
         * FDE starts at its first byte would be looked up in the gap or function before
         * it, and the frame chain followed from there skips the interrupted frame. */
        if (rows[i].kind == OSP_CFI_SIGNAL && za > 0)
            fpmap_clear(map, za - 1, za, OSP_CFI_FPMAP_RET);
    }
    for (size_t i = 0; i < k; i++) {
        rows[i].pc_off -= tlo_off;
        rows[i].plt_min &= (uint8_t)~ROW_FP_FDE;
    }
    out->lo = tlo;
    out->hi = thi;
    out->rows = rows;
    out->nrows = k;
    out->starts = starts;
    out->nstarts = nu;
    out->fpmap = map;
    out->fpmap_words = nwords;
    out->map_bytes = bytes_out;
    fpmap_run(out);
    builder_free(&b);
    return true;
}

bool osp_prof__cfi_build(const uint8_t *bytes, size_t len, uintptr_t addr, uintptr_t bias,
                         struct osp_cfi_table *out, struct osp_cfi_build_stats *stats) {
    struct osp_cfi_section eh = {bytes, len, addr, bias, false, NULL, 0};
    return osp_prof__cfi_build_sections(&eh, NULL, OSP_CFI_ARCH_NATIVE, out, stats);
}

void osp_prof__cfi_table_free(struct osp_cfi_table *t) {
    if (t == NULL) return;
    if (t->rows) munmap(t->rows, t->map_bytes);
    memset(t, 0, sizeof *t);
}

const struct osp_cfi_row *osp_prof__cfi_lookup(const struct osp_cfi_table *t, uintptr_t pc) {
    if (t->nrows == 0 || pc < t->lo || pc >= t->hi) return NULL;
    uint32_t off = (uint32_t)(pc - t->lo);
    size_t a = 0, z = t->nrows - 1; /* rows[a].pc_off <= off < rows[z].pc_off */
    while (z - a > 1) {
        size_t m = a + (z - a) / 2;
        if (t->rows[m].pc_off <= off)
            a = m;
        else
            z = m;
    }
    return &t->rows[a];
}

bool osp_prof__cfi_function_entry(const struct osp_cfi_table *t, uintptr_t pc, uintptr_t *entry) {
    if (t->nstarts == 0 || pc < t->lo || pc >= t->hi) return false;
    uint32_t off = (uint32_t)(pc - t->lo);
    if (t->starts[0] > off) return false;
    size_t a = 0, z = t->nstarts; /* starts[a] <= off; starts[z] > off or z == nstarts */
    while (z - a > 1) {
        size_t m = a + (z - a) / 2;
        if (t->starts[m] <= off)
            a = m;
        else
            z = m;
    }
    *entry = t->lo + t->starts[a];
    return true;
}

/* Clip a table's rows to the image's executable segments: a range outside them (a
 * corrupt FDE) becomes NONE, so every looked-up pc is in mapped code. */
static void clip_to_segments(struct osp_cfi_image *img) {
    struct osp_cfi_table *t = &img->table;
    for (size_t i = 0; i + 1 < t->nrows; i++) {
        uintptr_t a = t->lo + t->rows[i].pc_off, z = t->lo + t->rows[i + 1].pc_off;
        bool inside = false;
        for (size_t j = 0; j < img->nsegs; j++)
            if (a >= img->segs[j][0] && z <= img->segs[j][1]) inside = true;
        if (!inside) {
            t->rows[i].kind = OSP_CFI_NONE;
            uintptr_t base = t->lo & ~(OSP_CFI_FP_CHUNK - 1);
            if (t->fpmap)
                fpmap_clear(t->fpmap, a - base, z - base, OSP_CFI_FPMAP_RET | OSP_CFI_FPMAP_PC);
        }
    }
    fpmap_run(t);
}

/* ---- sets ------------------------------------------------------------------------------- */

const struct osp_cfi_image *osp_prof__cfi_find(const struct osp_cfi_set *set, uintptr_t pc) {
    size_t a = 0, z = set->nimages;
    const struct osp_cfi_fast *f = set->fast; /* compact: a few cache lines for all images */
    if (z <= 32) {
        size_t i = osp_prof__cfi_find_index(set, pc); /* a scan, see there */
        return i < z ? &set->images[i] : NULL;
    }
    while (a < z) {
        size_t m = a + (z - a) / 2;
        if (pc < f[m].lo)
            z = m;
        else if (pc >= f[m].hi)
            a = m + 1;
        else
            return &set->images[m];
    }
    return NULL;
}

static int image_cmp(const void *a, const void *b) {
    const struct osp_cfi_image *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

struct osp_cfi_set *osp_prof__cfi_set_new(const struct osp_cfi_image *images, size_t n) {
    /* Layout: the header and `fast` (what every walk reads, first), then the images, then
     * the lookup cache. */
    size_t img_off =
        (sizeof(struct osp_cfi_set) + n * sizeof(struct osp_cfi_fast) + 63) & ~(size_t)63;
    size_t cache_off = (img_off + n * sizeof(struct osp_cfi_image) + 63) & ~(size_t)63;
    size_t bytes = page_round(cache_off + OSP_CFI_CACHE_SIZE * sizeof(uint64_t));
    struct osp_cfi_set *set = map_bytes(bytes); /* zero-filled: an empty cache */
    if (set == NULL) return NULL;
    set->map_bytes = bytes;
    set->images = (struct osp_cfi_image *)(void *)((char *)set + img_off);
    set->cache = (_Atomic uint64_t *)(void *)((char *)set + cache_off);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (images[i].table.nrows > 0) set->images[k++] = images[i];
    qsort(set->images, k, sizeof set->images[0], image_cmp);
    /* Overlapping images (impossible for real ones): the later loses its table. */
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && set->images[i].lo < set->images[m - 1].hi) {
            osp_prof__cfi_table_free(&set->images[i].table);
            continue;
        }
        set->images[m++] = set->images[i];
    }
    set->nimages = m;
    for (size_t i = 0; i < m; i++) {
        const struct osp_cfi_table *t = &set->images[i].table;
        uintptr_t lo = set->images[i].lo, rlo = t->ret_run_lo, rhi = t->ret_run_hi;
        bool run = t->fpmap != NULL && rlo >= lo && rhi > rlo && rhi - lo <= UINT32_MAX;
        set->fast[i] =
            (struct osp_cfi_fast){lo, set->images[i].hi, t->fpmap, run ? (uint32_t)(rlo - lo) : 0,
                                  run ? (uint32_t)(rhi - rlo) : 0};
    }
    return set;
}

void osp_prof__cfi_set_free(struct osp_cfi_set *set) {
    if (set == NULL) return;
    for (size_t i = 0; i < set->nimages; i++) osp_prof__cfi_table_free(&set->images[i].table);
    munmap(set, set->map_bytes);
}

/* The calling thread's probe pipe (osp_prof__image_probe_set), -1 where it has none. */
static __thread int t_probe_r __attribute__((tls_model("initial-exec"))) = -1;
static __thread int t_probe_w __attribute__((tls_model("initial-exec"))) = -1;

/* Bytes already copied through the probe, by address (only the one thread that owns a
 * probe, the sampler thread, reads or writes this): the frame-record search meets the
 * same stale return addresses again and again (a deep recursion's records under a
 * wait). Emptied whenever the published set changes (an image loaded or unloaded).
 * Bytes of an image unloaded since they were copied are harmless: they were its code. */
#define PROBE_CACHE 256
static struct {
    uintptr_t a;
    uint8_t n, b[16];
} g_probe_cache[PROBE_CACHE];
static const struct osp_cfi_set *g_probe_cache_set;

void osp_prof__image_probe_set(int rfd, int wfd) {
    t_probe_r = rfd;
    t_probe_w = wfd;
    g_probe_cache_set = NULL;
    memset(g_probe_cache, 0, sizeof g_probe_cache);
}

/* Copy through the probe pipe: the kernel reads the bytes for write(2), and an unmapped
 * page is EFAULT there, never a fault of ours. False (nothing left in the pipe) when any
 * byte could not be read. */
static bool probe_copy(uintptr_t a, void *dst, size_t n) {
    long w = syscall(SYS_write, t_probe_w, (const void *)a, n);
    if (w <= 0) return false;
    long r = syscall(SYS_read, t_probe_r, dst, (size_t)w);
    if (r != w) {
        /* Not expected of a pipe; whatever is left would shift every later copy. */
        uint8_t junk[64];
        while (syscall(SYS_read, t_probe_r, junk, sizeof junk) > 0) {
        }
        return false;
    }
    return w == (long)n;
}

bool osp_prof__image_bytes(uintptr_t a, void *dst, size_t n) {
    if (n == 0) return true;
    if (t_probe_w < 0) {
        memcpy(dst, (const void *)a, n);
        return true;
    }
    const struct osp_cfi_set *set =
        atomic_load_explicit(&osp_prof__cfi_pub.set, memory_order_relaxed);
    if (set != g_probe_cache_set) {
        memset(g_probe_cache, 0, sizeof g_probe_cache);
        g_probe_cache_set = set;
    }
    size_t k = (size_t)((a >> 2) ^ (a >> 11)) % PROBE_CACHE;
    if (n <= sizeof g_probe_cache[k].b && g_probe_cache[k].a == a && g_probe_cache[k].n == n) {
        memcpy(dst, g_probe_cache[k].b, n);
        return true;
    }
    int saved = errno; /* the caller's errno is kept */
    bool ok = probe_copy(a, dst, n);
    errno = saved;
    if (ok && n <= sizeof g_probe_cache[k].b) {
        g_probe_cache[k].a = a;
        g_probe_cache[k].n = (uint8_t)n;
        memcpy(g_probe_cache[k].b, dst, n);
    }
    return ok;
}

bool osp_prof__is_sigreturn(const struct osp_cfi_image *img, uintptr_t pc) {
#if defined(__x86_64__)
    /* mov $15,%rax (48 c7 c0 0f 00 00 00) or mov $15,%eax (b8 0f 00 00 00); syscall. */
    static const uint8_t a[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    static const uint8_t b[] = {0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    for (size_t j = 0; j < img->nsegs; j++) {
        uintptr_t lo = img->segs[j][0], hi = img->segs[j][1];
        if (pc < lo || pc >= hi) continue;
        uint8_t code[sizeof a];
        size_t n = hi - pc >= sizeof a ? sizeof a : hi - pc;
        if (n < sizeof b || !osp_prof__image_bytes(pc, code, n)) return false;
        if (n >= sizeof a && memcmp(code, a, sizeof a) == 0) return true;
        return memcmp(code, b, sizeof b) == 0;
    }
    return false;
#else
    (void)img, (void)pc;
    return false;
#endif
}

/* ---- the published set ------------------------------------------------------------------ */

struct osp_cfi_pub osp_prof__cfi_pub __attribute__((aligned(64)));
static _Atomic unsigned long g_walkers; /* walks in progress through acquire (any thread) */
static unsigned long long g_seen_adds, g_seen_subs;
static bool g_scanned;
struct osp_cfi_walker osp_prof__cfi_walkers[OSP_CFI_WALKERS] __attribute__((aligned(64)));

/*
 * Reclamation (docs/profiler-runtime.md "The unwinder"). Walks through acquire count
 * themselves in a shared counter (seq_cst) before loading the set. Walks through
 * osp_prof__cfi_enter announce themselves with a plain store to their own word, then
 * load the set; with membarrier registered nothing orders that store before the load on
 * the walker's side (x86-64 may delay the store), so the refresh side does it instead (an
 * asymmetric fence): after unpublishing a set it calls membarrier(PRIVATE_EXPEDITED),
 * which runs a full memory barrier on every CPU running a thread of the process, and only
 * then reads the words. A walker whose store was not visible by then loads the set after
 * that barrier, so it sees the new one; a walker counted in keeps every pending set
 * alive. Without membarrier the walker issues the fence itself (still no shared line).
 */
const struct osp_cfi_set *osp_prof__cfi_acquire(void) {
    atomic_fetch_add_explicit(&g_walkers, 1, memory_order_seq_cst);
    return atomic_load_explicit(&osp_prof__cfi_pub.set, memory_order_seq_cst);
}

void osp_prof__cfi_release(void) {
    atomic_fetch_sub_explicit(&g_walkers, 1, memory_order_release);
}

/* Register this process for membarrier(PRIVATE_EXPEDITED); false where the kernel (or a
 * sandbox) refuses it. */
static bool membarrier_register(void) {
#if defined(SYS_membarrier)
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
}

/* Whether no walk of any kind is running now (see osp_prof__cfi_enter). */
static bool no_walkers(void) {
    if (atomic_load_explicit(&osp_prof__cfi_pub.membarrier, memory_order_relaxed)) {
#if defined(SYS_membarrier)
        if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) return false;
#endif
    }
    atomic_thread_fence(memory_order_seq_cst);
    for (size_t i = 0; i < OSP_CFI_WALKERS; i++)
        if (atomic_load_explicit(&osp_prof__cfi_walkers[i].depth, memory_order_acquire) != 0)
            return false;
    return atomic_load_explicit(&g_walkers, memory_order_seq_cst) == 0;
}

/* Replaced sets wait here until no walk can still read them. A walk counts itself in
 * (g_walkers) before it loads the published pointer, so once g_walkers is seen at 0 after
 * a set was unpublished, no walk holds it: every pending set is then unmapped, with each
 * of its tables that the published set does not use (a table shared by several pending
 * sets once). Nothing here blocks the sampler. Owned by the one refresh caller. */
#define MAX_PENDING 32
static struct osp_cfi_set *g_pending[MAX_PENDING];
static size_t g_npending;

static bool table_in(const struct osp_cfi_set *set, const struct osp_cfi_row *rows) {
    if (set == NULL) return false;
    for (size_t k = 0; k < set->nimages; k++)
        if (set->images[k].table.rows == rows) return true;
    return false;
}

/* Free every pending set if no walk is running now. `current` is the published set. */
static void free_pending(const struct osp_cfi_set *current) {
    if (g_npending == 0) return;
    if (!no_walkers()) return;
    for (size_t i = 0; i < g_npending; i++) {
        struct osp_cfi_set *old = g_pending[i];
        for (size_t j = 0; j < old->nimages; j++) {
            const struct osp_cfi_row *rows = old->images[j].table.rows;
            bool keep = table_in(current, rows);
            for (size_t e = 0; e < i && !keep; e++) keep = table_in(g_pending[e], rows);
            if (!keep) osp_prof__cfi_table_free(&old->images[j].table);
        }
    }
    for (size_t i = 0; i < g_npending; i++) munmap(g_pending[i], g_pending[i]->map_bytes);
    g_npending = 0;
}

/* Queue a replaced set (the caller made sure there is room) and free what it can. */
static void retire(struct osp_cfi_set *old, const struct osp_cfi_set *current) {
    if (old == NULL) return;
    if (g_npending == MAX_PENDING) return; /* not reached: refresh waits for room */
    g_pending[g_npending++] = old;
    free_pending(current);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct scan {
    struct osp_cfi_image *imgs;
    size_t n, cap;
    const struct osp_cfi_set *prev;
    bool oom;
};

/* The `.eh_frame` of a loaded image, from its PT_GNU_EH_FRAME header (`.eh_frame_hdr`:
 * version, eh_frame_ptr encoding, fde_count encoding, table encoding, then the encoded
 * pointer to `.eh_frame`), bounded by the readable PT_LOAD segments holding them. Leaves
 * `*out` empty when the header is unusable. */
static void eh_frame_of(const struct dl_phdr_info *info, const ElfW(Phdr) * eh,
                        struct osp_cfi_section *out) {
    uintptr_t hdr = info->dlpi_addr + eh->p_vaddr;
    uintptr_t hdr_end = 0, ef_seg_end = 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, z = a + ph->p_filesz;
        if (hdr >= a && hdr < z) hdr_end = z;
    }
    if (hdr_end == 0 || hdr_end - hdr < 4) return;
    const uint8_t *h = (const uint8_t *)hdr;
    if (h[0] != 1) return;
    struct cur c = {h + 4, (const uint8_t *)hdr_end, false};
    bool unsup = false;
    uint64_t ef = rd_encoded(&c, h[1], h, hdr, info->dlpi_addr, false, &unsup);
    if (c.bad || unsup || ef == 0) return;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, z = a + ph->p_filesz;
        if (ef >= a && ef < z) ef_seg_end = z;
    }
    if (ef_seg_end == 0) return;
    out->bytes = (const uint8_t *)(uintptr_t)ef;
    out->len = ef_seg_end - (uintptr_t)ef;
    out->addr = (uintptr_t)ef;
    out->bias = info->dlpi_addr;
}

/* Read exactly n bytes at offset off; false on a short read or error. */
static bool pread_all(int fd, void *buf, size_t n, off_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got += (size_t)r;
    }
    return true;
}

#define MAX_SHNUM       4096                /* sections of an image file we look through */
#define MAX_SHSTRTAB    ((size_t)1 << 20)   /* bytes of section names */
#define MAX_DEBUG_FRAME ((size_t)256 << 20) /* bytes of .debug_frame */

/*
 * The `.debug_frame` section of a loaded image's file (not loaded into memory: it is not
 * in any PT_LOAD segment), read into an anonymous mapping of *map_len bytes, its size in
 * *len; NULL when the image has none, it is compressed, or the file on disk is not the
 * one loaded (its PT_LOAD headers differ from the loaded image's). The main program's
 * file is /proc/self/exe. The file is untrusted: every size and offset is checked
 * against the file's size and the limits above. Outside signal context; mmap only.
 */
static uint8_t *read_debug_frame(const struct dl_phdr_info *info, size_t *len, size_t *map_len) {
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
    *len = *map_len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    uint8_t *out = NULL;
    void *scratch = NULL;
    size_t scratch_len = 0;
    struct stat st;
    ElfW(Ehdr) eh;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !pread_all(fd, &eh, sizeof eh, 0)) goto done;
    uint64_t fsize = (uint64_t)st.st_size;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_shentsize != sizeof(ElfW(Shdr)) ||
        eh.e_phnum != info->dlpi_phnum || eh.e_shnum == 0 || eh.e_shnum > MAX_SHNUM ||
        eh.e_shstrndx >= eh.e_shnum)
        goto done;
    size_t ph_bytes = (size_t)eh.e_phnum * sizeof(ElfW(Phdr));
    size_t sh_bytes = (size_t)eh.e_shnum * sizeof(ElfW(Shdr));
    if (eh.e_phoff > fsize || ph_bytes > fsize - eh.e_phoff || eh.e_shoff > fsize ||
        sh_bytes > fsize - eh.e_shoff)
        goto done;
    scratch_len = page_round(ph_bytes + sh_bytes + MAX_SHSTRTAB);
    scratch = map_bytes(scratch_len);
    if (scratch == NULL) goto done;
    ElfW(Phdr) *ph = scratch;
    ElfW(Shdr) *sh = (ElfW(Shdr) *)(void *)((char *)scratch + ph_bytes);
    char *names = (char *)sh + sh_bytes;
    if (!pread_all(fd, ph, ph_bytes, (off_t)eh.e_phoff) ||
        !pread_all(fd, sh, sh_bytes, (off_t)eh.e_shoff))
        goto done;
    /* The file is the loaded image: the same loadable segments. */
    for (size_t i = 0; i < eh.e_phnum; i++) {
        const ElfW(Phdr) *m = &info->dlpi_phdr[i];
        if (ph[i].p_type != m->p_type) goto done;
        if (m->p_type == PT_LOAD && (ph[i].p_vaddr != m->p_vaddr || ph[i].p_memsz != m->p_memsz ||
                                     ph[i].p_filesz != m->p_filesz ||
                                     ph[i].p_offset != m->p_offset || ph[i].p_flags != m->p_flags))
            goto done;
    }
    const ElfW(Shdr) *ns = &sh[eh.e_shstrndx];
    if (ns->sh_size == 0 || ns->sh_size > MAX_SHSTRTAB || ns->sh_offset > fsize ||
        ns->sh_size > fsize - ns->sh_offset)
        goto done;
    if (!pread_all(fd, names, (size_t)ns->sh_size, (off_t)ns->sh_offset)) goto done;
    static const char want[] = ".debug_frame";
    for (size_t i = 0; i < eh.e_shnum; i++) {
        const ElfW(Shdr) *x = &sh[i];
        if (x->sh_type != SHT_PROGBITS || x->sh_name >= ns->sh_size ||
            ns->sh_size - x->sh_name < sizeof want ||
            memcmp(names + x->sh_name, want, sizeof want) != 0)
            continue;
        if ((x->sh_flags & SHF_COMPRESSED) || x->sh_size == 0 || x->sh_size > MAX_DEBUG_FRAME ||
            x->sh_offset > fsize || x->sh_size > fsize - x->sh_offset)
            break;
        size_t n = (size_t)x->sh_size;
        out = map_bytes(page_round(n));
        if (out == NULL) break;
        if (!pread_all(fd, out, n, (off_t)x->sh_offset)) {
            munmap(out, page_round(n));
            out = NULL;
            break;
        }
        *len = n;
        *map_len = page_round(n);
        break;
    }
done:
    if (scratch) munmap(scratch, scratch_len);
    close(fd);
    return out;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct scan *sc = arg;
    if (sc->n == sc->cap) {
        size_t nc = sc->cap ? sc->cap * 2 : 64;
        struct osp_cfi_image *q = map_bytes(page_round(nc * sizeof *q));
        if (q == NULL) {
            sc->oom = true;
            return 1;
        }
        if (sc->imgs) {
            memcpy(q, sc->imgs, sc->n * sizeof *q);
            munmap(sc->imgs, page_round(sc->cap * sizeof *q));
        }
        sc->imgs = q;
        sc->cap = nc;
    }
    struct osp_cfi_image img;
    memset(&img, 0, sizeof img);
    img.load_bias = info->dlpi_addr;
    const ElfW(Phdr) *eh = NULL;
    bool first_load = true;
    /* The readable executable segments: the builder reads frameless functions' code there
     * (leaf_without_calls). The loader's lock, held during this callback, keeps them
     * mapped. */
    uintptr_t code[OSP_CFI_MAX_SEGS][2];
    size_t ncode = 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME) eh = ph;
        if (ph->p_type != PT_LOAD) continue;
        if (first_load) {
            img.key = info->dlpi_addr + ph->p_vaddr;
            first_load = false;
        }
        if ((ph->p_flags & (PF_X | PF_R)) == (PF_X | PF_R) && ncode < OSP_CFI_MAX_SEGS) {
            code[ncode][0] = info->dlpi_addr + ph->p_vaddr;
            code[ncode][1] = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
            ncode++;
        }
        if ((ph->p_flags & PF_X) && img.nsegs < OSP_CFI_MAX_SEGS) {
            img.segs[img.nsegs][0] = info->dlpi_addr + ph->p_vaddr;
            img.segs[img.nsegs][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
            img.nsegs++;
        } else if (!(ph->p_flags & PF_X) && (ph->p_flags & PF_R) && img.ndsegs < OSP_CFI_MAX_SEGS) {
            img.dsegs[img.ndsegs][0] = info->dlpi_addr + ph->p_vaddr;
            img.dsegs[img.ndsegs][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
            img.ndsegs++;
        }
    }
    if (img.nsegs == 0) return 0;
    /* An image still loaded keeps its table. */
    if (sc->prev)
        for (size_t j = 0; j < sc->prev->nimages; j++)
            if (sc->prev->images[j].key == img.key &&
                sc->prev->images[j].load_bias == img.load_bias) {
                sc->imgs[sc->n++] = sc->prev->images[j];
                return 0;
            }
    struct osp_cfi_section ehs = {NULL, 0, 0, 0, false, code, ncode};
    struct osp_cfi_section dbs = {NULL, 0, 0, 0, true, code, ncode};
    if (eh != NULL) eh_frame_of(info, eh, &ehs);
    size_t dbg_map = 0;
    uint8_t *dbg = read_debug_frame(info, &dbs.len, &dbg_map);
    dbs.bytes = dbg;
    dbs.bias = info->dlpi_addr;
    bool built = (ehs.bytes != NULL || dbg != NULL) &&
                 osp_prof__cfi_build_sections(&ehs, &dbs, OSP_CFI_ARCH_NATIVE, &img.table, NULL);
    if (dbg != NULL) munmap(dbg, dbg_map);
    if (!built) return 0;
    clip_to_segments(&img);
    img.lo = img.table.lo;
    img.hi = img.table.hi;
    sc->imgs[sc->n++] = img;
    return 0;
}

static int count_one(struct dl_phdr_info *info, size_t size, void *arg) {
    unsigned long long *v = arg;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        v[0] = v[1] = ~0ull; /* no counters: always rescan */
        return 1;
    }
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1;
}

void osp_prof__loader_counts(unsigned long long out[2]) {
    out[0] = out[1] = ~0ull;
    dl_iterate_phdr(count_one, out);
}

bool osp_prof__cfi_refresh(void) {
    /* Once per process, before anything is published: a kernel without the command (or a
     * sandbox refusing it) leaves every walk on the shared counter. */
    static bool tried;
    if (!tried) {
        tried = true;
        if (membarrier_register())
            atomic_store_explicit(&osp_prof__cfi_pub.membarrier, true, memory_order_relaxed);
    }
    free_pending(atomic_load_explicit(&osp_prof__cfi_pub.set, memory_order_acquire));
    /* With the queue of replaced sets full (walks kept running, e.g. threads preempted
     * inside one on a loaded machine), nothing new is published until it drains: new
     * images are walked by frame pointers meanwhile, and the next tick tries again. The
     * sampler never waits here. */
    if (g_npending == MAX_PENDING) return false;
    unsigned long long v[2];
    osp_prof__loader_counts(v);
    if (g_scanned && v[0] != ~0ull && v[0] == g_seen_adds && v[1] == g_seen_subs) return false;
    struct osp_cfi_set *prev = atomic_load_explicit(&osp_prof__cfi_pub.set, memory_order_acquire);
    struct scan sc = {.prev = prev};
    dl_iterate_phdr(scan_one, &sc);
    if (sc.oom) {
        /* Tables built in this scan that the previous set does not own are released. */
        for (size_t i = 0; i < sc.n; i++) {
            bool shared = false;
            if (prev)
                for (size_t j = 0; j < prev->nimages; j++)
                    if (prev->images[j].table.rows == sc.imgs[i].table.rows) shared = true;
            if (!shared) osp_prof__cfi_table_free(&sc.imgs[i].table);
        }
        if (sc.imgs) munmap(sc.imgs, page_round(sc.cap * sizeof *sc.imgs));
        return false;
    }
    struct osp_cfi_set *set = osp_prof__cfi_set_new(sc.imgs, sc.n);
    if (sc.imgs) munmap(sc.imgs, page_round(sc.cap * sizeof *sc.imgs));
    if (set == NULL) return false;
    g_scanned = true;
    g_seen_adds = v[0];
    g_seen_subs = v[1];
    atomic_store_explicit(&osp_prof__cfi_pub.set, set, memory_order_seq_cst);
    retire(prev, set);
    return true;
}

void osp_prof__cfi_reset(void) {
    struct osp_cfi_set *prev =
        atomic_exchange_explicit(&osp_prof__cfi_pub.set, NULL, memory_order_seq_cst);
    retire(prev, NULL);
    /* Walks are microseconds long: wait up to about a second for the last ones; a set a
     * stopped thread still reads stays pending (freed by a later refresh or reset). */
    uint64_t deadline = now_ns() + 1000000000ull;
    while (g_npending > 0 && now_ns() < deadline) {
        free_pending(NULL);
        struct timespec ts = {0, 100000};
        if (g_npending > 0) nanosleep(&ts, NULL);
    }
    g_scanned = false;
}

#endif /* OSP_PROF_SAMPLER */
