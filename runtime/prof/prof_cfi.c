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
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* DWARF register numbers of the CFA base registers and the return address column. */
#if defined(__aarch64__)
#define DW_REG_SP 31
#define DW_REG_FP 29
#define DW_REG_RA 30
#else
#define DW_REG_SP 7
#define DW_REG_FP 6
#define DW_REG_RA 16
#endif

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

static size_t page_round(size_t n) {
    size_t pg = 4096;
    return (n + pg - 1) & ~(pg - 1);
}

static bool mbuf_push(struct mbuf *b, const void *x, size_t n) {
    if (b->cap - b->len < n) {
        size_t nc = b->cap ? b->cap * 2 : 1 << 16;
        while (nc - b->len < n) nc *= 2;
        void *q = map_bytes(nc);
        if (q == NULL) return false;
        if (b->p) {
            memcpy(q, b->p, b->len);
            munmap(b->p, b->cap);
        }
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
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool has_z, signal;
    const uint8_t *insns, *insns_end;
};

/* A row before compaction: absolute start address. */
struct wide_row {
    uintptr_t pc;
    struct osp_cfi_row r;
};

struct builder {
    struct mbuf rows; /* struct wide_row */
    size_t nrows;
    struct mbuf starts; /* uintptr_t: each FDE's start */
    size_t nstarts;
    bool oom;
    struct osp_cfi_build_stats *st;
};

static struct osp_cfi_row to_row(const struct rules *s, bool signal) {
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
    if (s->ra_rule != R_OFFSET || s->fp_rule == R_BAD || s->cfa_kind == CFA_BAD) return r;
    if (s->ra_off < INT16_MIN || s->ra_off > INT16_MAX) return r;
    if (s->fp_rule == R_OFFSET && (s->fp_off < INT16_MIN || s->fp_off > INT16_MAX)) return r;
    if (s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX) return r;
    if (s->cfa_kind == CFA_REG) {
        if (s->cfa_reg_dw == DW_REG_SP)
            r.cfa_reg = OSP_CFI_REG_SP;
        else if (s->cfa_reg_dw == DW_REG_FP)
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
    r.ra_off = (int16_t)s->ra_off;
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
    struct wide_row w = {pc, r};
    if (!mbuf_push(&b->rows, &w, sizeof w)) {
        b->oom = true;
        return;
    }
    b->nrows++;
}

/* The x86-64 PLT CFA expressions (GNU ld's .plt, lazy binding):
 *   DW_OP_breg7 (rsp) N; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11 (or
 *   DW_OP_lit10 with IBT/.plt.sec); DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + N + ((rip & 15) >= 11 ? 8 : 0). Any other expression is refused. */
static bool match_plt(const uint8_t *e, size_t n, int64_t *off, uint8_t *min) {
#if defined(__x86_64__)
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
#else
    (void)e, (void)n, (void)off, (void)min;
    return false;
#endif
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

static void set_reg_rule(struct rules *s, uint64_t reg, uint8_t rule, int64_t off) {
    if (reg == DW_REG_RA) {
        s->ra_rule = rule;
        s->ra_off = off;
    } else if (reg == DW_REG_FP) {
        s->fp_rule = rule;
        s->fp_off = off;
    }
}

static void restore_reg_rule(struct rules *s, const struct rules *init, uint64_t reg) {
    if (reg == DW_REG_RA) {
        s->ra_rule = init->ra_rule;
        s->ra_off = init->ra_off;
    } else if (reg == DW_REG_FP) {
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
            struct osp_cfi_row r_ = to_row(s, ci->signal);          \
            if (!have_last || memcmp(&r_, &last, sizeof r_) != 0) { \
                emit(b, (L), r_);                                   \
                last = r_;                                          \
                have_last = true;                                   \
                *emitted = true;                                    \
            }                                                       \
        }                                                           \
    } while (0)
#define ADVANCE(D)                                                                   \
    do {                                                                             \
        uint64_t d_ = (D);                                                           \
        if (c->bad) FAIL;                                                            \
        if (b) {                                                                     \
            ROW_AT(loc);                                                             \
            if (ci->code_align != 0 && d_ > (UINT64_MAX / ci->code_align)) FAIL;     \
            d_ *= ci->code_align;                                                    \
            if (d_ > end - loc) { /* past the FDE's end: the rest does not matter */ \
                loc = end;                                                           \
                *loc_out = loc;                                                      \
                return true;                                                         \
            }                                                                        \
            loc += (uintptr_t)d_;                                                    \
        }                                                                            \
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
            set_reg_rule(s, low, R_OFFSET, off);
            continue;
        }
        if (hi2 == 0xc0) { /* DW_CFA_restore */
            restore_reg_rule(s, init, low);
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
            set_reg_rule(s, reg, R_OFFSET, scale_u(rd_uleb(c), ci->data_align));
            break;
        }
        case 0x06: restore_reg_rule(s, init, rd_uleb(c)); break; /* restore_extended */
        case 0x07: set_reg_rule(s, rd_uleb(c), R_UNDEF, 0); break;
        case 0x08: set_reg_rule(s, rd_uleb(c), R_SAME, 0); break;
        case 0x09: { /* register: the value lives in another register */
            uint64_t reg = rd_uleb(c);
            (void)rd_uleb(c);
            set_reg_rule(s, reg, R_BAD, 0);
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
            if (match_plt(c->p, (size_t)n, &off, &min)) {
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
            set_reg_rule(s, reg, R_BAD, 0);
            break;
        }
        case 0x11: { /* offset_extended_sf */
            uint64_t reg = rd_uleb(c);
            set_reg_rule(s, reg, R_OFFSET, scale_s(rd_sleb(c), ci->data_align));
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
            set_reg_rule(s, reg, R_BAD, 0);
            break;
        }
        case 0x2d: /* GNU_window_save / AARCH64_negate_ra_state */
#if defined(__aarch64__)
            break; /* the return address is signed: the walker strips nothing, see below */
#else
            FAIL;
#endif
        case 0x2e: (void)rd_uleb(c); break; /* GNU_args_size */
        case 0x2f: {                        /* GNU_negative_offset_extended */
            uint64_t reg = rd_uleb(c);
            int64_t off = scale_u(rd_uleb(c), ci->data_align);
            set_reg_rule(s, reg, R_OFFSET, off == INT64_MAX ? INT64_MAX : -off);
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

/* Read a record header at c->p: length (32 or 64 bit). On success `*body` is the record's
 * contents (after the length) and `*next` the following record. */
static bool record(const uint8_t *p, const uint8_t *end, const uint8_t **body, const uint8_t **next,
                   bool *terminator) {
    struct cur c = {p, end, false};
    uint64_t len = rd_u(&c, 4);
    *terminator = false;
    if (c.bad) return false;
    if (len == 0) {
        *terminator = true;
        return false;
    }
    if (len == 0xffffffffu) {
        len = rd_u(&c, 8);
        if (c.bad) return false;
    }
    if (len > (uint64_t)(end - c.p)) return false;
    *body = c.p;
    *next = c.p + len;
    return true;
}

/* Parse the CIE whose record starts at `p`. */
static bool parse_cie(const uint8_t *p, const uint8_t *buf, const uint8_t *end, struct cie *ci) {
    const uint8_t *body, *next;
    bool term;
    if (!record(p, end, &body, &next, &term)) return false;
    struct cur c = {body, next, false};
    if (rd_u(&c, 4) != 0) return false; /* CIE id in .eh_frame */
    uint64_t version = rd_u(&c, 1);
    if (version != 1 && version != 3) return false;
    const uint8_t *aug = c.p;
    while (c.p < c.end && *c.p) c.p++;
    if (c.p >= c.end) return false;
    size_t aug_len = (size_t)(c.p - aug);
    c.p++; /* NUL */
    memset(ci, 0, sizeof *ci);
    ci->fde_enc = PE_ABSPTR;
    size_t ai = 0;
    if (aug_len >= 2 && aug[0] == 'e' && aug[1] == 'h') {
        (void)rd_u(&c, sizeof(uintptr_t)); /* old GCC's eh_ptr */
        ai = 2;
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
                (void)rd_encoded(&z, enc & 0x7f, buf, 0, 0, true, &unsup);
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
    if (ci->ra_reg != DW_REG_RA) return false; /* only the native return-address column */
    ci->insns = c.p;
    ci->insns_end = next;
    return true;
}

static void initial_rules(struct rules *s) {
    memset(s, 0, sizeof *s);
    s->cfa_kind = CFA_BAD; /* until the CIE defines it */
    s->ra_rule = R_BAD;
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

static int wide_cmp(const void *a, const void *b) {
    const struct wide_row *x = a, *y = b;
    if (x->pc != y->pc) return x->pc < y->pc ? -1 : 1;
    /* At one address, an FDE's first row wins over the previous FDE's end marker. */
    int kx = x->r.kind == OSP_CFI_GAP, ky = y->r.kind == OSP_CFI_GAP;
    return kx - ky;
}

bool osp_prof__cfi_build(const uint8_t *bytes, size_t len, uintptr_t addr, uintptr_t bias,
                         struct osp_cfi_table *out, struct osp_cfi_build_stats *stats) {
    memset(out, 0, sizeof *out);
    struct osp_cfi_build_stats dummy;
    if (stats == NULL) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    if (bytes == NULL || len == 0) return false;
    struct builder b = {.st = stats};
    const uint8_t *end = bytes + len;
    const uint8_t *p = bytes;
    while (p < end && !b.oom) {
        const uint8_t *body, *next;
        bool term;
        if (!record(p, end, &body, &next, &term)) break; /* terminator or truncated */
        struct cur c = {body, next, false};
        uint32_t id = (uint32_t)rd_u(&c, 4);
        if (c.bad) break;
        if (id == 0) {
            stats->cies++;
            p = next;
            continue;
        }
        stats->fdes++;
        /* The CIE pointer is the distance back from this field to the CIE. */
        size_t field = (size_t)(body - bytes);
        struct cie ci;
        if ((size_t)id > field || !parse_cie(body - id, bytes, end, &ci)) {
            stats->fdes_skipped++;
            p = next;
            continue;
        }
        bool unsup = false;
        uint64_t begin = rd_encoded(&c, ci.fde_enc, bytes, addr, bias, false, &unsup);
        uint64_t range = rd_encoded(&c, ci.fde_enc & 0x0f, bytes, addr, bias, true, &unsup);
        uintptr_t lo, hi;
        if (c.bad || unsup || !sane_range(begin, range, &lo, &hi)) {
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
        if (!b.oom && b.nstarts < MAX_ROWS) {
            if (mbuf_push(&b.starts, &lo, sizeof lo))
                b.nstarts++;
            else
                b.oom = true;
        }
        struct rules init, s;
        initial_rules(&init);
        struct cur ic = {ci.insns, ci.insns_end, false};
        bool dummy_emitted = false;
        uintptr_t dummy_loc;
        if (!run_program(NULL, &ci, &ic, &init, &init, lo, hi, &dummy_emitted, &dummy_loc)) {
            /* A CIE we cannot run: the whole range cannot be unwound. */
            initial_rules(&init);
            init.cfa_kind = CFA_BAD;
        }
        s = init;
        bool emitted = false;
        uintptr_t loc = lo;
        if (!run_program(&b, &ci, &c, &s, &init, lo, hi, &emitted, &loc)) {
            struct osp_cfi_row none;
            memset(&none, 0, sizeof none);
            if (loc < hi)
                emit(&b, loc, none); /* from here on: cannot unwind */
            else if (!emitted)
                emit(&b, lo, none);
        }
        struct osp_cfi_row gap;
        memset(&gap, 0, sizeof gap);
        gap.kind = OSP_CFI_GAP;
        emit(&b, hi, gap); /* end marker; replaced by a following FDE's first row */
        p = next;
    }
    if (b.oom || b.nrows == 0) {
        mbuf_free(&b.rows);
        mbuf_free(&b.starts);
        return false;
    }
    struct wide_row *w = b.rows.p;
    qsort(w, b.nrows, sizeof *w, wide_cmp);
    /* Compact: one row per address (the first after sorting), identical neighbours merged.
     * A later row at the same address from an overlapping (corrupt) FDE is dropped. The
     * last row (the highest FDE end) is kept as the table's end marker. */
    uintptr_t tlo = w[0].pc, thi = w[b.nrows - 1].pc;
    if (thi - tlo > UINT32_MAX || thi == tlo) { /* no image spans 4 GiB of code */
        mbuf_free(&b.rows);
        mbuf_free(&b.starts);
        return false;
    }
    size_t k = 0;
    for (size_t i = 0; i + 1 < b.nrows; i++) {
        if (k > 0 && w[i].pc == w[k - 1].pc) continue;
        if (k > 0 && memcmp(&w[i].r, &w[k - 1].r, sizeof w[i].r) == 0) continue;
        w[k++] = w[i];
    }
    if (k > 0 && w[k - 1].pc == thi) k--;
    w[k].pc = thi;
    memset(&w[k].r, 0, sizeof w[k].r);
    w[k].r.kind = OSP_CFI_GAP;
    k++;
    if (k < 2) {
        mbuf_free(&b.rows);
        mbuf_free(&b.starts);
        return false;
    }
    /* Function entries: the FDE starts as offsets, sorted and distinct. */
    uintptr_t *st = b.starts.p;
    size_t ns = 0;
    for (size_t i = 0; i < b.nstarts; i++)
        if (st[i] >= tlo && st[i] < thi) st[ns++] = st[i] - tlo;
    qsort(st, ns, sizeof *st, start_cmp);
    size_t nu = 0;
    for (size_t i = 0; i < ns; i++)
        if (nu == 0 || st[i] != st[nu - 1]) st[nu++] = st[i];
    size_t bytes_out = page_round(k * sizeof(struct osp_cfi_row) + nu * sizeof(uint32_t));
    struct osp_cfi_row *rows = map_bytes(bytes_out);
    if (rows == NULL) {
        mbuf_free(&b.rows);
        mbuf_free(&b.starts);
        return false;
    }
    for (size_t i = 0; i < k; i++) {
        rows[i] = w[i].r;
        rows[i].pc_off = (uint32_t)(w[i].pc - tlo);
    }
    uint32_t *starts = (uint32_t *)(void *)(rows + k);
    for (size_t i = 0; i < nu; i++) starts[i] = (uint32_t)st[i];
    out->lo = tlo;
    out->hi = w[k - 1].pc;
    out->rows = rows;
    out->nrows = k;
    out->starts = starts;
    out->nstarts = nu;
    out->map_bytes = bytes_out;
    mbuf_free(&b.rows);
    mbuf_free(&b.starts);
    return true;
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
        if (!inside) t->rows[i].kind = OSP_CFI_NONE;
    }
}

/* ---- sets ------------------------------------------------------------------------------- */

const struct osp_cfi_image *osp_prof__cfi_find(const struct osp_cfi_set *set, uintptr_t pc) {
    size_t a = 0, z = set->nimages;
    while (a < z) {
        size_t m = a + (z - a) / 2;
        const struct osp_cfi_image *img = &set->images[m];
        if (pc < img->lo)
            z = m;
        else if (pc >= img->hi)
            a = m + 1;
        else
            return img;
    }
    return NULL;
}

static int image_cmp(const void *a, const void *b) {
    const struct osp_cfi_image *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

struct osp_cfi_set *osp_prof__cfi_set_new(const struct osp_cfi_image *images, size_t n) {
    size_t bytes = page_round(sizeof(struct osp_cfi_set) + n * sizeof(struct osp_cfi_image));
    struct osp_cfi_set *set = map_bytes(bytes); /* zero-filled: an empty cache */
    if (set == NULL) return NULL;
    set->map_bytes = bytes;
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
    return set;
}

void osp_prof__cfi_set_free(struct osp_cfi_set *set) {
    if (set == NULL) return;
    for (size_t i = 0; i < set->nimages; i++) osp_prof__cfi_table_free(&set->images[i].table);
    munmap(set, set->map_bytes);
}

bool osp_prof__is_sigreturn(const struct osp_cfi_image *img, uintptr_t pc) {
#if defined(__x86_64__)
    /* mov $15,%rax (48 c7 c0 0f 00 00 00) or mov $15,%eax (b8 0f 00 00 00); syscall. */
    static const uint8_t a[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    static const uint8_t b[] = {0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    for (size_t j = 0; j < img->nsegs; j++) {
        uintptr_t lo = img->segs[j][0], hi = img->segs[j][1];
        if (pc < lo || pc >= hi) continue;
        const uint8_t *p = (const uint8_t *)pc;
        if (hi - pc >= sizeof a && memcmp(p, a, sizeof a) == 0) return true;
        if (hi - pc >= sizeof b && memcmp(p, b, sizeof b) == 0) return true;
        return false;
    }
    return false;
#else
    (void)img, (void)pc;
    return false;
#endif
}

/* ---- the published set ------------------------------------------------------------------ */

static _Atomic(struct osp_cfi_set *) g_set;
static _Atomic unsigned long g_walkers; /* walks in progress (any thread, any set) */
static unsigned long long g_seen_adds, g_seen_subs;
static bool g_scanned;

const struct osp_cfi_set *osp_prof__cfi_acquire(void) {
    atomic_fetch_add_explicit(&g_walkers, 1, memory_order_seq_cst);
    return atomic_load_explicit(&g_set, memory_order_seq_cst);
}

void osp_prof__cfi_release(void) {
    atomic_fetch_sub_explicit(&g_walkers, 1, memory_order_release);
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
    if (atomic_load_explicit(&g_walkers, memory_order_seq_cst) != 0) return;
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
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME) eh = ph;
        if (ph->p_type != PT_LOAD) continue;
        if (first_load) {
            img.key = info->dlpi_addr + ph->p_vaddr;
            first_load = false;
        }
        if ((ph->p_flags & PF_X) && img.nsegs < OSP_CFI_MAX_SEGS) {
            img.segs[img.nsegs][0] = info->dlpi_addr + ph->p_vaddr;
            img.segs[img.nsegs][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
            img.nsegs++;
        }
    }
    if (eh == NULL || img.nsegs == 0) return 0;
    /* An image still loaded keeps its table. */
    if (sc->prev)
        for (size_t j = 0; j < sc->prev->nimages; j++)
            if (sc->prev->images[j].key == img.key &&
                sc->prev->images[j].load_bias == img.load_bias) {
                sc->imgs[sc->n++] = sc->prev->images[j];
                return 0;
            }
    /* .eh_frame_hdr: version, eh_frame_ptr encoding, fde_count encoding, table encoding,
     * then the encoded pointer to .eh_frame. Bounded by the readable PT_LOAD holding it. */
    uintptr_t hdr = info->dlpi_addr + eh->p_vaddr;
    uintptr_t hdr_end = 0, ef_seg_end = 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, z = a + ph->p_filesz;
        if (hdr >= a && hdr < z) hdr_end = z;
    }
    if (hdr_end == 0 || hdr_end - hdr < 4) return 0;
    const uint8_t *h = (const uint8_t *)hdr;
    if (h[0] != 1) return 0;
    struct cur c = {h + 4, (const uint8_t *)hdr_end, false};
    bool unsup = false;
    uint64_t ef = rd_encoded(&c, h[1], h, hdr, info->dlpi_addr, false, &unsup);
    if (c.bad || unsup || ef == 0) return 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, z = a + ph->p_filesz;
        if (ef >= a && ef < z) ef_seg_end = z;
    }
    if (ef_seg_end == 0) return 0;
    if (!osp_prof__cfi_build((const uint8_t *)(uintptr_t)ef, ef_seg_end - (uintptr_t)ef,
                             (uintptr_t)ef, info->dlpi_addr, &img.table, NULL))
        return 0;
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

bool osp_prof__cfi_refresh(void) {
    free_pending(atomic_load_explicit(&g_set, memory_order_acquire));
    /* With the queue of replaced sets full (walks kept running, e.g. threads preempted
     * inside one on a loaded machine), nothing new is published until it drains: new
     * images are walked by frame pointers meanwhile, and the next tick tries again. The
     * sampler never waits here. */
    if (g_npending == MAX_PENDING) return false;
    unsigned long long v[2] = {0, 0};
    dl_iterate_phdr(count_one, v);
    if (g_scanned && v[0] != ~0ull && v[0] == g_seen_adds && v[1] == g_seen_subs) return false;
    struct osp_cfi_set *prev = atomic_load_explicit(&g_set, memory_order_acquire);
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
    atomic_store_explicit(&g_set, set, memory_order_seq_cst);
    retire(prev, set);
    return true;
}

void osp_prof__cfi_reset(void) {
    struct osp_cfi_set *prev = atomic_exchange_explicit(&g_set, NULL, memory_order_seq_cst);
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
