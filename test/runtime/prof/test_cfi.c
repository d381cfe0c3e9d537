/*
 * test_cfi.c — the CFI table builder and the hybrid walk (docs/spec/profiler.md §(l.1)):
 * hand-assembled .eh_frame records (rules, PLT expressions, signal frames, every
 * truncation of a valid buffer read between guard pages), planted stacks, and real
 * unwinding through code without frame pointers (frameless.c, qsort callbacks, a signal
 * handler, a thread) against the process's own published tables.
 */
#define _GNU_SOURCE
#include "support.h"

#include "frameless.h"
#include "prof_blocked.h"
#include "prof_cfi.h"
#include "prof_session.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* The hand-assembled records use x86-64's DWARF registers, and the CFI steps and blocked
 * reads are x86-64's (arm64 keeps the frame-record walk): elsewhere those tests skip. */
#if defined(__x86_64__)
#define X86_64_ONLY() ((void)0)
#else
#define X86_64_ONLY() skip()
#endif

/* ---- hand-assembled .eh_frame ------------------------------------------------------- */

struct ebuf {
    uint8_t b[2048];
    size_t n;
};

static void put(struct ebuf *e, const void *p, size_t n) {
    if (n == 0) return;
    assert_true(e->n + n <= sizeof e->b);
    memcpy(e->b + e->n, p, n);
    e->n += n;
}
static void put1(struct ebuf *e, uint8_t v) {
    put(e, &v, 1);
}
static void put4(struct ebuf *e, uint32_t v) {
    put(e, &v, 4);
}
static void patch4(struct ebuf *e, size_t at, uint32_t v) {
    memcpy(e->b + at, &v, 4);
}

#define BASE ((uintptr_t)0x10000000u) /* run-time address of the buffer's first byte */

/* A CIE with augmentation `aug` ("zR" or "zRS"), code align 1, data align -8, RA column
 * 16, FDE encoding pcrel|sdata4, and initial rules CFA = rsp + 8, RA at CFA - 8. Returns
 * its offset. */
static size_t cie(struct ebuf *e, const char *aug) {
    size_t at = e->n;
    put4(e, 0); /* length, patched */
    put4(e, 0); /* CIE id */
    put1(e, 1);
    put(e, aug, strlen(aug) + 1);
    put1(e, 1);    /* code align */
    put1(e, 0x78); /* data align -8 */
    put1(e, 16);   /* RA column */
    put1(e, 1);    /* augmentation length */
    put1(e, 0x1b); /* pcrel | sdata4 */
    static const uint8_t init[] = {0x0c, 0x07, 0x08, 0x90, 0x01};
    put(e, init, sizeof init);
    while ((e->n - at) % 4) put1(e, 0);
    patch4(e, at, (uint32_t)(e->n - at - 4));
    return at;
}

/* An FDE for [pc, pc + len) under the CIE at `cie_at` with program `ins`. */
static void fde(struct ebuf *e, size_t cie_at, uintptr_t pc, uint32_t len, const uint8_t *ins,
                size_t nins) {
    size_t at = e->n;
    put4(e, 0);
    put4(e, (uint32_t)(e->n - cie_at)); /* back to the CIE, from this field */
    int32_t rel = (int32_t)(int64_t)(pc - (BASE + e->n));
    put(e, &rel, 4);
    put4(e, len);
    put1(e, 0); /* augmentation length */
    put(e, ins, nins);
    while ((e->n - at) % 4) put1(e, 0);
    patch4(e, at, (uint32_t)(e->n - at - 4));
}

static bool build(const struct ebuf *e, struct osp_cfi_table *t) {
    return osp_prof__cfi_build(e->b, e->n, BASE, 0, t, NULL);
}

/* A typical prologue/body/epilogue: push rbp; mov rsp,rbp; ...; pop rbp; ret. */
static const uint8_t fp_prog[] = {0x41,       /* advance 1 */
                                  0x0e, 0x10, /* def_cfa_offset 16 */
                                  0x86, 0x02, /* rbp at CFA - 16 */
                                  0x43,       /* advance 3 */
                                  0x0d, 0x06, /* def_cfa_register rbp */
                                  0x60,       /* advance 0x20 */
                                  0x0c, 0x07, 0x08 /* def_cfa rsp + 8 */};

static void test_rules(void **state) {
    (void)state;
    X86_64_ONLY();
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    fde(&e, c, 0x401000, 0x30, fp_prog, sizeof fp_prog);
    static const uint8_t frameless[] = {0x44, 0x0e, 0x30}; /* advance 4, CFA = rsp + 48 */
    fde(&e, c, 0x401100, 0x40, frameless, sizeof frameless);
    put4(&e, 0); /* terminator */
    struct osp_cfi_table t;
    struct osp_cfi_build_stats st;
    assert_true(osp_prof__cfi_build(e.b, e.n, BASE, 0, &t, &st));
    assert_int_equal(st.cies, 1);
    assert_int_equal(st.fdes, 2);
    assert_int_equal(t.lo, 0x401000);
    assert_int_equal(t.hi, 0x401140);
    const struct osp_cfi_row *r = osp_prof__cfi_lookup(&t, 0x401000);
    assert_int_equal(r->kind, OSP_CFI_STEP);
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_SP);
    assert_int_equal(r->cfa_off, 8);
    assert_int_equal(r->ra_off, -8);
    assert_int_equal(r->fp_rule, OSP_CFI_FP_SAME);
    r = osp_prof__cfi_lookup(&t, 0x401001);
    assert_int_equal(r->cfa_off, 16);
    assert_int_equal(r->fp_rule, OSP_CFI_FP_OFFSET);
    assert_int_equal(r->fp_off, -16);
    r = osp_prof__cfi_lookup(&t, 0x401010); /* body */
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_FP);
    assert_int_equal(r->cfa_off, 16);
    r = osp_prof__cfi_lookup(&t, 0x401024); /* after the epilogue's def_cfa */
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_SP);
    assert_int_equal(r->cfa_off, 8);
    /* The gap between the two functions cannot be unwound. */
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x401050)->kind, OSP_CFI_GAP);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x401103)->cfa_off, 8);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x401104)->cfa_off, 48);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x40113f)->cfa_off, 48);
    assert_null(osp_prof__cfi_lookup(&t, 0x401140));
    assert_null(osp_prof__cfi_lookup(&t, 0x400fff));
    /* Function entries: the FDE starts. */
    uintptr_t entry = 0;
    assert_int_equal(t.nstarts, 2);
    assert_true(osp_prof__cfi_function_entry(&t, 0x401024, &entry));
    assert_int_equal(entry, 0x401000);
    assert_true(osp_prof__cfi_function_entry(&t, 0x401100, &entry));
    assert_int_equal(entry, 0x401100);
    assert_true(osp_prof__cfi_function_entry(&t, 0x40113f, &entry));
    assert_int_equal(entry, 0x401100);
    assert_false(osp_prof__cfi_function_entry(&t, 0x401140, &entry));
    osp_prof__cfi_table_free(&t);
}

/* The FDEs of .eh_frame may come in any address order and share CIEs in any pattern: the
 * table built is the same as from the FDEs in address order. Adjacent functions (one
 * starting where the previous ends: its first row wins over the end marker), a gap, and
 * FDEs of two different CIEs interleaved. */
static void eh_frame_in_order(struct ebuf *e, const int *order, size_t n) {
    static const uint8_t frameless[] = {0x44, 0x0e, 0x30}; /* advance 4, CFA = rsp + 48 */
    size_t c1 = cie(e, "zR"), c2 = cie(e, "zRS");
    for (size_t i = 0; i < n; i++) {
        int k = order[i];
        uintptr_t pc = 0x401000 + (uintptr_t)k * 0x40 + (k >= 4 ? 0x100 : 0);
        if (k % 2)
            fde(e, k % 3 ? c1 : c2, pc, 0x40, frameless, sizeof frameless);
        else
            fde(e, k % 3 ? c1 : c2, pc, 0x40, fp_prog, sizeof fp_prog);
    }
    put4(e, 0);
}

/* Tables `t` and `u` are the same, field for field and byte for byte. */
static void assert_same_table(const struct osp_cfi_table *t, const struct osp_cfi_table *u) {
    assert_int_equal(t->lo, u->lo);
    assert_int_equal(t->hi, u->hi);
    assert_int_equal(t->nrows, u->nrows);
    assert_memory_equal(t->rows, u->rows, u->nrows * sizeof *u->rows);
    assert_int_equal(t->nstarts, u->nstarts);
    assert_memory_equal(t->starts, u->starts, u->nstarts * sizeof *u->starts);
    assert_int_equal(t->fpmap_words, u->fpmap_words);
    if (u->fpmap_words) assert_memory_equal(t->fpmap, u->fpmap, u->fpmap_words * sizeof *u->fpmap);
    assert_int_equal(t->ret_run_lo, u->ret_run_lo);
    assert_int_equal(t->ret_run_hi, u->ret_run_hi);
}

static void test_fde_order(void **state) {
    (void)state;
    X86_64_ONLY();
    static const int sorted[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int shuffled[] = {5, 2, 7, 0, 3, 6, 1, 4};
    static const int reversed[] = {7, 6, 5, 4, 3, 2, 1, 0};
    struct ebuf a = {.n = 0}, b = {.n = 0}, c = {.n = 0};
    eh_frame_in_order(&a, sorted, 8);
    eh_frame_in_order(&b, shuffled, 8);
    eh_frame_in_order(&c, reversed, 8);
    struct osp_cfi_table ta, tb, tc;
    assert_true(build(&a, &ta));
    assert_true(build(&b, &tb));
    assert_true(build(&c, &tc));
    /* Functions 0 and 1 are adjacent: 0x401040 is function 1's entry (CFA = rsp + 8, not a
     * gap); the gap after function 3 cannot be unwound; function 3 (second CIE) is a
     * signal frame. */
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x401040)->kind, OSP_CFI_STEP);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x401040)->cfa_off, 8);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x401044)->cfa_off, 48);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x4010c0)->kind, OSP_CFI_SIGNAL);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x401180)->kind, OSP_CFI_GAP);
    assert_int_equal(ta.nstarts, 8);
    assert_same_table(&tb, &ta);
    assert_same_table(&tc, &ta);
    osp_prof__cfi_table_free(&ta);
    osp_prof__cfi_table_free(&tb);
    osp_prof__cfi_table_free(&tc);
}

/* Overlapping FDEs (corrupt input) give the same table whatever order they are read in:
 * at an address both describe, the rule of the one starting lower wins. */
static void test_overlapping_fdes(void **state) {
    (void)state;
    X86_64_ONLY();
    static const uint8_t at4[] = {0x44, 0x0e, 0x30}; /* advance 4, CFA = rsp + 48 */
    static const uint8_t at8[] = {0x48, 0x0e, 0x20}; /* advance 8, CFA = rsp + 32 */
    struct ebuf a = {.n = 0}, b = {.n = 0};
    size_t ca = cie(&a, "zR"), cb = cie(&b, "zR");
    fde(&a, ca, 0x401000, 0x40, at4, sizeof at4); /* rules from 0x401000 and 0x401004 */
    fde(&a, ca, 0x400ffc, 0x44, at8, sizeof at8); /* from 0x400ffc and 0x401004 */
    put4(&a, 0);
    fde(&b, cb, 0x400ffc, 0x44, at8, sizeof at8);
    fde(&b, cb, 0x401000, 0x40, at4, sizeof at4);
    put4(&b, 0);
    struct osp_cfi_table ta, tb;
    assert_true(build(&a, &ta));
    assert_true(build(&b, &tb));
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x400ffc)->cfa_off, 8);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x401000)->cfa_off, 8);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x401004)->cfa_off, 32);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x40103f)->cfa_off, 32);
    assert_same_table(&tb, &ta);
    osp_prof__cfi_table_free(&ta);
    osp_prof__cfi_table_free(&tb);
}

/* A program whose last advance lands exactly on its FDE's end and then changes a rule
 * describes nothing of its own (the end belongs to the next function): the next
 * function's entry keeps its own rule, whatever order the two FDEs are read in. */
static void test_rule_at_fde_end(void **state) {
    (void)state;
    X86_64_ONLY();
    static const uint8_t to_end[] = {0x50, 0x0e, 0x10}; /* advance 16, CFA = rsp + 16 */
    static const uint8_t nop[] = {0x00};
    struct ebuf a = {.n = 0}, b = {.n = 0};
    size_t ca = cie(&a, "zR"), cb = cie(&b, "zR");
    fde(&a, ca, 0x401000, 0x10, to_end, sizeof to_end);
    fde(&a, ca, 0x401010, 0x10, nop, sizeof nop);
    put4(&a, 0);
    fde(&b, cb, 0x401010, 0x10, nop, sizeof nop);
    fde(&b, cb, 0x401000, 0x10, to_end, sizeof to_end);
    put4(&b, 0);
    struct osp_cfi_table ta, tb;
    assert_true(build(&a, &ta));
    assert_true(build(&b, &tb));
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x40100f)->cfa_off, 8);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x401010)->cfa_off, 8);
    assert_int_equal(osp_prof__cfi_lookup(&ta, 0x40101f)->cfa_off, 8);
    assert_same_table(&tb, &ta);
    osp_prof__cfi_table_free(&ta);
    osp_prof__cfi_table_free(&tb);
}

static void test_remember_restore_and_root(void **state) {
    (void)state;
    X86_64_ONLY();
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    static const uint8_t prog[] = {
        0x41, 0x0e, 0x20, /* advance 1; CFA = rsp + 32 */
        0x0a,             /* remember */
        0x41, 0x0e, 0x08, /* advance 1; CFA = rsp + 8 (an early return) */
        0x41, 0x0b,       /* advance 1; restore: rsp + 32 again */
        0x41, 0x07, 0x10 /* advance 1; RA undefined: outermost */};
    fde(&e, c, 0x500000, 0x10, prog, sizeof prog);
    put4(&e, 0);
    struct osp_cfi_table t;
    assert_true(build(&e, &t));
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x500001)->cfa_off, 32);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x500002)->cfa_off, 8);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x500003)->cfa_off, 32);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x500004)->kind, OSP_CFI_ROOT);
    osp_prof__cfi_table_free(&t);
}

static void test_plt_and_expressions(void **state) {
    (void)state;
    X86_64_ONLY();
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    /* GNU ld's .plt: CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0). */
    static const uint8_t plt[] = {0x0e, 0x10, 0x46, 0x0e, 0x18, 0x4a, 0x0f, 0x0b, 0x77, 0x08,
                                  0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
    fde(&e, c, 0x600000, 0x40, plt, sizeof plt);
    /* The IBT form (lit10). */
    static const uint8_t plt10[] = {0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f,
                                    0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22};
    fde(&e, c, 0x600100, 0x40, plt10, sizeof plt10);
    /* Any other expression: cannot unwind. */
    static const uint8_t other[] = {0x44, 0x0f, 0x03, 0x77, 0xa0, 0x01, 0x06 /* deref */};
    fde(&e, c, 0x600200, 0x40, other, sizeof other);
    /* A register rule for RA (the value lives in a register): cannot unwind. */
    static const uint8_t reg_ra[] = {0x42, 0x09, 0x10, 0x00};
    fde(&e, c, 0x600300, 0x10, reg_ra, sizeof reg_ra);
    /* An unknown opcode: from there on, cannot unwind. */
    static const uint8_t bad_op[] = {0x42, 0x0e, 0x10, 0x42, 0x3c, 0x0e, 0x20};
    fde(&e, c, 0x600400, 0x10, bad_op, sizeof bad_op);
    put4(&e, 0);
    struct osp_cfi_table t;
    assert_true(build(&e, &t));
    const struct osp_cfi_row *r = osp_prof__cfi_lookup(&t, 0x600010);
    assert_int_equal(r->kind, OSP_CFI_PLT);
    assert_int_equal(r->cfa_off, 8);
    assert_int_equal(r->plt_min, 11);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600006)->cfa_off, 24);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600110)->plt_min, 10);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600201)->kind, OSP_CFI_STEP);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600204)->kind, OSP_CFI_NONE);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600301)->kind, OSP_CFI_STEP);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600302)->kind, OSP_CFI_NONE);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600402)->cfa_off, 16);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x600404)->kind, OSP_CFI_NONE);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x60040f)->kind, OSP_CFI_NONE);
    osp_prof__cfi_table_free(&t);
}

static void test_signal_cie(void **state) {
    (void)state;
    X86_64_ONLY();
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zRS");
    static const uint8_t prog[] = {0x0f, 0x03, 0x77, 0xa0, 0x01, 0x06};
    fde(&e, c, 0x700000, 0x10, prog, sizeof prog);
    put4(&e, 0);
    struct osp_cfi_table t;
    assert_true(build(&e, &t));
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x700001)->kind, OSP_CFI_SIGNAL);
    osp_prof__cfi_table_free(&t);
}

/* The fast-path map (OSP_CFI_FPMAP_*): return addresses into a frame-pointer function and
 * into code without CFI take the frame chain; into a frameless function that moves sp,
 * not; interrupted pcs only in frame-pointer rows. */
static unsigned fpmap_bits(const struct osp_cfi_table *t, uintptr_t pc) {
    uintptr_t base = t->lo & ~(OSP_CFI_FP_CHUNK - 1);
    size_t c = (size_t)((pc - base) >> OSP_CFI_FP_CHUNK_SHIFT);
    assert_true(c / 32 < t->fpmap_words);
    return (unsigned)(t->fpmap[c / 32] >> (2 * (c % 32))) & 3u;
}

static void test_fast_path_map(void **state) {
    (void)state;
    X86_64_ONLY();
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    fde(&e, c, 0x401000, 0x30, fp_prog, sizeof fp_prog);   /* push; mov; body; epilogue */
    static const uint8_t frameless[] = {0x44, 0x0e, 0x30}; /* advance 4, CFA = rsp + 48 */
    fde(&e, c, 0x401100, 0x40, frameless, sizeof frameless);
    fde(&e, c, 0x401200, 0x20, NULL, 0); /* a leaf: CFA = rsp + 8 throughout */
    put4(&e, 0);
    struct osp_cfi_table t;
    struct osp_cfi_build_stats st;
    assert_true(osp_prof__cfi_build(e.b, e.n, BASE, 0, &t, &st));
    assert_int_equal(st.fdes_fp, 1); /* the frame-pointer function only */
    /* Return addresses: anywhere in the frame-pointer function. */
    assert_true(fpmap_bits(&t, 0x401000) & OSP_CFI_FPMAP_RET);
    assert_true(fpmap_bits(&t, 0x401015) & OSP_CFI_FPMAP_RET);
    assert_true(fpmap_bits(&t, 0x40102f) & OSP_CFI_FPMAP_RET);
    /* Interrupted pcs: the chunk of the prologue and the one of the epilogue, not. */
    assert_false(fpmap_bits(&t, 0x401001) & OSP_CFI_FPMAP_PC);
    assert_true(fpmap_bits(&t, 0x401010) & OSP_CFI_FPMAP_PC);
    assert_false(fpmap_bits(&t, 0x401024) & OSP_CFI_FPMAP_PC);
    /* The gap between functions: no CFI, the frame chain as without tables. */
    assert_int_equal(fpmap_bits(&t, 0x401080), OSP_CFI_FPMAP_RET | OSP_CFI_FPMAP_PC);
    /* The frameless function: neither. */
    assert_int_equal(fpmap_bits(&t, 0x401100), 0);
    assert_int_equal(fpmap_bits(&t, 0x401130), 0);
    /* A function that never moves sp: neither. It may still call (GCC calls a callee that
     * needs no alignment from such a function), and the frame chain would skip its caller. */
    assert_int_equal(fpmap_bits(&t, 0x401210), 0);
    /* The longest safe run: from the first function through the gap, up to the frameless
     * one. */
    assert_int_equal(t.ret_run_lo, 0x401000);
    assert_int_equal(t.ret_run_hi, 0x401100);
    osp_prof__cfi_table_free(&t);
}

/* A signal trampoline's "return address" (where a handler returns to) is its first byte,
 * looked up at the byte before it: the map must not vouch for it whatever lies before the
 * trampoline's FDE -- a gap, a frame-pointer function, or (glibc's layout) the FDE's own
 * leading nop. Before the builder cleared the byte before a signal FDE, the first two were
 * vouched for (the frame chain from there skips the interrupted frame). */
static void test_signal_trampoline_not_fast(void **state) {
    (void)state;
    X86_64_ONLY();
    static const uint8_t sig_prog[] = {0x0f, 0x03, 0x77, 0xa0, 0x01, 0x06}; /* CFA expression */
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    size_t cs = cie(&e, "zRS");
    fde(&e, c, 0x402000, 0x30, fp_prog, sizeof fp_prog);
    fde(&e, cs, 0x402040, 0x10, sig_prog, sizeof sig_prog); /* after a gap */
    fde(&e, c, 0x402100, 0x40, fp_prog, sizeof fp_prog);
    fde(&e, cs, 0x402140, 0x10, sig_prog, sizeof sig_prog); /* right after fp code */
    fde(&e, c, 0x402200, 0x4f, fp_prog, sizeof fp_prog);
    fde(&e, cs, 0x40224f, 0x0a, sig_prog, sizeof sig_prog); /* glibc's: one nop early */
    put4(&e, 0);
    struct osp_cfi_table t;
    assert_true(build(&e, &t));
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x402040)->kind, OSP_CFI_SIGNAL);
    const uintptr_t tramp[] = {0x402040, 0x402140, 0x402250};
    unsigned bits[3];
    for (size_t i = 0; i < 3; i++) {
        bits[i] = fpmap_bits(&t, tramp[i] - 1) & OSP_CFI_FPMAP_RET;
        printf("# trampoline %#lx: RET bit at ret - 1: %u\n", (unsigned long)tramp[i], bits[i]);
    }
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(bits[i], 0);
        for (uintptr_t q = tramp[i]; q < tramp[i] + 9; q++)
            assert_int_equal(fpmap_bits(&t, q) & OSP_CFI_FPMAP_RET, 0);
    }
    /* The frame-pointer functions keep the bit away from the trampolines. */
    assert_true(fpmap_bits(&t, 0x402010) & OSP_CFI_FPMAP_RET);
    assert_true(fpmap_bits(&t, 0x402120) & OSP_CFI_FPMAP_RET);
    assert_true(fpmap_bits(&t, 0x402230) & OSP_CFI_FPMAP_RET);
    osp_prof__cfi_table_free(&t);
}

/* Functions that never move sp (every row CFA = rsp + 8) take the fast path for return
 * addresses only when their code, read through the section's code view, holds no call:
 * GCC calls from such functions when the callee needs no stack alignment. */
static _Alignas(16) const uint8_t k_frameless_code[48] = {
    /* [0, 16): mov rax, rdi; ret -- a leaf */
    0x48, 0x89, 0xf8, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
    /* [16, 32): call rel32; ret */
    0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
    /* [32, 48): call rax; ret */
    0xff, 0xd0, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};

static void test_frameless_callers_not_fast(void **state) {
    (void)state;
    X86_64_ONLY();
    uintptr_t code = (uintptr_t)k_frameless_code;
    uintptr_t base = code - 0x1000; /* where the section's first byte "lies" */
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    for (uintptr_t i = 0; i < 3; i++) {
        size_t at = e.n;
        put4(&e, 0);
        put4(&e, (uint32_t)(e.n - c));
        int32_t rel = (int32_t)(int64_t)(code + 16 * i - (base + e.n));
        put(&e, &rel, 4);
        put4(&e, 16);
        put1(&e, 0);
        while ((e.n - at) % 4) put1(&e, 0);
        patch4(&e, at, (uint32_t)(e.n - at - 4));
    }
    put4(&e, 0);
    const uintptr_t view[1][2] = {{code, code + sizeof k_frameless_code}};
    for (int with_view = 0; with_view < 2; with_view++) {
        struct osp_cfi_section eh = {e.b, e.n, base, 0, false, with_view ? view : NULL, 1};
        struct osp_cfi_table t;
        struct osp_cfi_build_stats st;
        assert_true(osp_prof__cfi_build_sections(&eh, NULL, OSP_CFI_ARCH_X86_64, &t, &st));
        assert_int_equal(st.fdes_fp, with_view ? 1 : 0);
        assert_int_equal(fpmap_bits(&t, code + 4) & OSP_CFI_FPMAP_RET,
                         with_view ? OSP_CFI_FPMAP_RET : 0);
        assert_int_equal(fpmap_bits(&t, code + 16 + 4) & OSP_CFI_FPMAP_RET, 0);
        assert_int_equal(fpmap_bits(&t, code + 32 + 4) & OSP_CFI_FPMAP_RET, 0);
        osp_prof__cfi_table_free(&t);
    }
}

/* ---- hand-assembled .debug_frame (32- and 64-bit DWARF, CIE versions 1, 3, 4) -------- */

static void put8(struct ebuf *e, uint64_t v) {
    put(e, &v, 8);
}

/* A .debug_frame CIE: code align 1, data align -8, RA 16, CFA = rsp + 8, RA at CFA - 8.
 * `is64`: the 64-bit DWARF format. Returns its offset. */
static size_t dcie(struct ebuf *e, bool is64, int version, uint8_t addr_size) {
    size_t at = e->n;
    if (is64) {
        put4(e, 0xffffffffu);
        put8(e, 0); /* length, patched */
        put8(e, UINT64_MAX);
    } else {
        put4(e, 0);
        put4(e, 0xffffffffu);
    }
    put1(e, (uint8_t)version);
    put1(e, 0); /* augmentation "" */
    if (version == 4) {
        put1(e, addr_size);
        put1(e, 0); /* segment selector size */
    }
    put1(e, 1);
    put1(e, 0x78);
    put1(e, 16); /* RA column: a byte in version 1, ULEB128 after (the same byte here) */
    static const uint8_t init[] = {0x0c, 0x07, 0x08, 0x90, 0x01};
    put(e, init, sizeof init);
    while ((e->n - at) % 4) put1(e, 0);
    size_t len = e->n - at - (is64 ? 12 : 4);
    if (is64) {
        uint64_t l = len;
        memcpy(e->b + at + 4, &l, 8);
    } else {
        patch4(e, at, (uint32_t)len);
    }
    return at;
}

/* A .debug_frame FDE for [pc, pc + len) (link-time addresses) under the CIE at `cie_at`. */
static void dfde(struct ebuf *e, bool is64, size_t cie_at, uint64_t pc, uint64_t len,
                 const uint8_t *ins, size_t nins) {
    size_t at = e->n;
    if (is64) {
        put4(e, 0xffffffffu);
        put8(e, 0);
        put8(e, cie_at); /* the CIE's section offset */
    } else {
        put4(e, 0);
        put4(e, (uint32_t)cie_at);
    }
    put8(e, pc);
    put8(e, len);
    put(e, ins, nins);
    while ((e->n - at) % 4) put1(e, 0);
    size_t l = e->n - at - (is64 ? 12 : 4);
    if (is64) {
        uint64_t v = l;
        memcpy(e->b + at + 4, &v, 8);
    } else {
        patch4(e, at, (uint32_t)l);
    }
}

static void test_debug_frame_formats(void **state) {
    (void)state;
    X86_64_ONLY();
    static const uint8_t frameless[] = {0x44, 0x0e, 0x30}; /* advance 4, CFA = rsp + 48 */
    const uintptr_t bias = 0x7f0000000000;
    for (int variant = 0; variant < 4; variant++) {
        bool is64 = variant >= 2;
        int version = variant == 0 ? 1 : variant == 1 ? 4 : variant == 2 ? 3 : 4;
        struct ebuf d = {.n = 0};
        size_t c = dcie(&d, is64, version, 8);
        dfde(&d, is64, c, 0x1100, 0x40, frameless, sizeof frameless);
        dfde(&d, is64, c, 0x1200, 0x30, fp_prog, sizeof fp_prog);
        /* A version-4 CIE with 4-byte addresses (not this process's): refused. */
        size_t c4 = dcie(&d, is64, 4, 4);
        dfde(&d, is64, c4, 0x1300, 0x10, frameless, sizeof frameless);
        struct osp_cfi_section dbg = {d.b, d.n, 0, bias, true, NULL, 0};
        struct osp_cfi_table t;
        struct osp_cfi_build_stats st;
        assert_true(osp_prof__cfi_build_sections(NULL, &dbg, OSP_CFI_ARCH_X86_64, &t, &st));
        assert_int_equal(st.cies, 2);
        assert_int_equal(st.debug_fdes, 2);
        assert_int_equal(st.fdes_skipped, 1);
        assert_int_equal(t.lo, bias + 0x1100);
        assert_int_equal(t.hi, bias + 0x1230);
        const struct osp_cfi_row *r = osp_prof__cfi_lookup(&t, bias + 0x1110);
        assert_int_equal(r->kind, OSP_CFI_STEP);
        assert_int_equal(r->cfa_reg, OSP_CFI_REG_SP);
        assert_int_equal(r->cfa_off, 48);
        r = osp_prof__cfi_lookup(&t, bias + 0x1210);
        assert_int_equal(r->cfa_reg, OSP_CFI_REG_FP);
        assert_int_equal(r->cfa_off, 16);
        assert_int_equal(osp_prof__cfi_lookup(&t, bias + 0x1180)->kind, OSP_CFI_GAP);
        osp_prof__cfi_table_free(&t);
        /* Read as .eh_frame, the same bytes are not CIEs (their id is not 0). */
        assert_false(osp_prof__cfi_build(d.b, d.n, BASE, bias, &t, &st));
    }
}

/* .debug_frame only where .eh_frame has no FDE: an overlapping FDE is left out. */
static void test_debug_frame_behind_eh_frame(void **state) {
    (void)state;
    X86_64_ONLY();
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    fde(&e, c, 0x401000, 0x30, fp_prog, sizeof fp_prog);
    put4(&e, 0);
    static const uint8_t frameless[] = {0x44, 0x0e, 0x30};
    struct ebuf d = {.n = 0};
    size_t dc = dcie(&d, false, 1, 8);
    dfde(&d, false, dc, 0x401010, 0x10, frameless, sizeof frameless); /* inside eh's FDE */
    dfde(&d, false, dc, 0x401100, 0x40, frameless, sizeof frameless); /* nothing in eh */
    struct osp_cfi_section eh = {e.b, e.n, BASE, 0, false, NULL, 0},
                           dbg = {d.b, d.n, 0, 0, true, NULL, 0};
    struct osp_cfi_table t;
    struct osp_cfi_build_stats st;
    assert_true(osp_prof__cfi_build_sections(&eh, &dbg, OSP_CFI_ARCH_X86_64, &t, &st));
    assert_int_equal(st.fdes, 3);
    assert_int_equal(st.debug_fdes, 1);
    assert_int_equal(st.debug_fdes_shadow, 1);
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x401018)->cfa_reg, OSP_CFI_REG_FP); /* eh's */
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x401120)->cfa_off, 48);             /* dbg's */
    uintptr_t entry;
    assert_true(osp_prof__cfi_function_entry(&t, 0x401120, &entry));
    assert_int_equal(entry, 0x401100);
    osp_prof__cfi_table_free(&t);
}

/* ---- AArch64 CFI (hand-assembled; decoded on any host) ---------------------------------- */

/* An AArch64 .eh_frame CIE as GCC and clang emit it: "zR", code align 4, data align -8,
 * RA column 30 (x30), CFA = sp + 0; x30 unspecified (the return address is in the link
 * register). */
static size_t cie_a64(struct ebuf *e) {
    size_t at = e->n;
    put4(e, 0);
    put4(e, 0);
    put1(e, 1);
    put(e, "zR", 3);
    put1(e, 4);    /* code align */
    put1(e, 0x78); /* data align -8 */
    put1(e, 30);   /* RA column */
    put1(e, 1);
    put1(e, 0x1b);
    static const uint8_t init[] = {0x0c, 0x1f, 0x00}; /* def_cfa sp (31), 0 */
    put(e, init, sizeof init);
    while ((e->n - at) % 4) put1(e, 0);
    patch4(e, at, (uint32_t)(e->n - at - 4));
    return at;
}

static void test_aarch64_rules(void **state) {
    (void)state;
    struct ebuf e = {.n = 0};
    size_t c = cie_a64(&e);
    /* clang: stp x29, x30, [sp, #-16]!; mov x29, sp; ...; ldp; ret
     *   advance 1 (4 bytes): def_cfa_offset 16; x29 at CFA - 16; x30 at CFA - 8
     *   advance 1: def_cfa_register x29
     *   advance 8: def_cfa sp + 0; restore x29, x30 */
    static const uint8_t fp_a64[] = {0x41, 0x0e, 0x10, 0x9d, 0x02, 0x9e, 0x01, 0x41,
                                     0x0d, 0x1d, 0x48, 0x0c, 0x1f, 0x00, 0xdd, 0xde};
    fde(&e, c, 0x410000, 0x40, fp_a64, sizeof fp_a64);
    /* A leaf: nothing saved, the return address stays in x30. */
    fde(&e, c, 0x410100, 0x20, NULL, 0);
    /* Signed return addresses (pointer authentication): negate_ra_state is accepted. */
    static const uint8_t pac[] = {0x41, 0x2d, 0x41, 0x0e, 0x10, 0x9e, 0x01};
    fde(&e, c, 0x410200, 0x20, pac, sizeof pac);
    put4(&e, 0);
    struct osp_cfi_section eh = {e.b, e.n, BASE, 0, false, NULL, 0};
    struct osp_cfi_table t;
    struct osp_cfi_build_stats st;
    assert_true(osp_prof__cfi_build_sections(&eh, NULL, OSP_CFI_ARCH_AARCH64, &t, &st));
    assert_int_equal(st.fdes, 3);
    assert_int_equal(st.fdes_skipped, 0);
    const struct osp_cfi_row *r = osp_prof__cfi_lookup(&t, 0x410000); /* entry */
    assert_int_equal(r->kind, OSP_CFI_STEP);
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_SP);
    assert_int_equal(r->cfa_off, 0);
    assert_int_equal(r->ra_off, 0); /* in the link register */
    assert_int_equal(r->fp_rule, OSP_CFI_FP_SAME);
    r = osp_prof__cfi_lookup(&t, 0x410004); /* after stp */
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_SP);
    assert_int_equal(r->cfa_off, 16);
    assert_int_equal(r->ra_off, -8);
    assert_int_equal(r->fp_rule, OSP_CFI_FP_OFFSET);
    assert_int_equal(r->fp_off, -16);
    r = osp_prof__cfi_lookup(&t, 0x410008); /* after mov x29, sp: the frame record rule */
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_FP);
    assert_int_equal(r->cfa_off, 16);
    assert_int_equal(r->ra_off, -8);
    assert_int_equal(r->fp_off, -16);
    r = osp_prof__cfi_lookup(&t, 0x410028); /* epilogue: restored */
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_SP);
    assert_int_equal(r->cfa_off, 0);
    assert_int_equal(r->ra_off, 0);
    assert_int_equal(r->fp_rule, OSP_CFI_FP_SAME);
    r = osp_prof__cfi_lookup(&t, 0x410110); /* the leaf */
    assert_int_equal(r->kind, OSP_CFI_STEP);
    assert_int_equal(r->ra_off, 0);
    r = osp_prof__cfi_lookup(&t, 0x410208); /* after the PAC prologue */
    assert_int_equal(r->kind, OSP_CFI_STEP);
    assert_int_equal(r->cfa_off, 16);
    assert_int_equal(r->ra_off, -8);
    assert_true(fpmap_bits(&t, 0x410010) & OSP_CFI_FPMAP_PC);
    osp_prof__cfi_table_free(&t);
    /* The same bytes for x86-64: RA column 30 is not x86-64's (16): every FDE refused. */
    assert_false(osp_prof__cfi_build_sections(&eh, NULL, OSP_CFI_ARCH_X86_64, &t, &st));
    assert_int_equal(st.fdes_skipped, 3);
    /* And x86-64 CFI read as AArch64's: RA column 16 refused likewise. */
    struct ebuf x = {.n = 0};
    size_t xc = cie(&x, "zR");
    fde(&x, xc, 0x401000, 0x30, fp_prog, sizeof fp_prog);
    put4(&x, 0);
    struct osp_cfi_section xe = {x.b, x.n, BASE, 0, false, NULL, 0};
    assert_false(osp_prof__cfi_build_sections(&xe, NULL, OSP_CFI_ARCH_AARCH64, &t, &st));
    /* DW_CFA 0x2d on x86-64 is GNU_window_save (SPARC): cannot unwind from there. */
    struct ebuf w = {.n = 0};
    size_t wc = cie(&w, "zR");
    static const uint8_t win[] = {0x41, 0x2d};
    fde(&w, wc, 0x402000, 0x10, win, sizeof win);
    put4(&w, 0);
    assert_true(build(&w, &t));
    assert_int_equal(osp_prof__cfi_lookup(&t, 0x402004)->kind, OSP_CFI_NONE);
    osp_prof__cfi_table_free(&t);
}

/* Every prefix of a valid buffer, and every single-byte corruption of it, placed so that
 * its last byte is the last before a PROT_NONE page: a read past the end would fault. */
static void test_truncated_and_corrupt(void **state) {
    (void)state;
    X86_64_ONLY();
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    fde(&e, c, 0x401000, 0x30, fp_prog, sizeof fp_prog);
    size_t c2 = cie(&e, "zRS");
    static const uint8_t prog[] = {0x0f, 0x03, 0x77, 0xa0, 0x01, 0x06};
    fde(&e, c2, 0x402000, 0x10, prog, sizeof prog);
    put4(&e, 0);
    size_t pg = (size_t)getpagesize();
    uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m + pg, pg, PROT_NONE), 0);
    size_t built = 0;
    for (size_t len = 0; len <= e.n; len++) {
        uint8_t *p = m + pg - len;
        memcpy(p, e.b, len);
        struct osp_cfi_table t;
        if (osp_prof__cfi_build(p, len, BASE + e.n - len, 0, &t, NULL)) {
            built++;
            osp_prof__cfi_table_free(&t);
        }
    }
    assert_true(built > 0); /* the full buffer (and prefixes with whole FDEs) build */
    for (size_t i = 0; i < e.n; i++)
        for (int bit = 0; bit < 8; bit++) {
            uint8_t *p = m + pg - e.n;
            memcpy(p, e.b, e.n);
            p[i] ^= (uint8_t)(1u << bit);
            struct osp_cfi_table t;
            if (osp_prof__cfi_build(p, e.n, BASE, 0, &t, NULL)) {
                assert_true(t.nrows >= 2);
                assert_true(t.rows[t.nrows - 1].kind == OSP_CFI_GAP);
                osp_prof__cfi_table_free(&t);
            }
        }
    munmap(m, 2 * pg);
}

/* ---- planted stacks ------------------------------------------------------------------- */

static void word(uintptr_t a, uintptr_t v) {
    *(uintptr_t *)a = v;
}

/* Without tables the hybrid walk is the frame-pointer walk, address for address. */
static void test_no_tables_is_fp_walk(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t f[6];
    for (int i = 0; i < 6; i++) f[i] = p.lo + 0x80 + 0x90 * (uintptr_t)i;
    for (int i = 0; i < 5; i++) {
        word(f[i], f[i + 1]);
        word(f[i] + 8, 0x500000 + 0x10 * (uintptr_t)i);
    }
    word(f[5], 0);
    word(f[5] + 8, 0x500100);
    uintptr_t a[OSP_PROF_MAX_FRAMES], b[OSP_PROF_MAX_FRAMES];
    bool ta, tb;
    for (size_t cap = 1; cap <= 8; cap++) {
        size_t na = osp_prof__fp_walk(0x400100, f[0], 0, p.lo, p.hi, a, cap, &ta);
        struct osp_unwind_regs r = {.pc = 0x400100, .sp = p.lo, .fp = f[0], .fp_known = true};
        size_t nb = osp_prof__hybrid_walk(NULL, &r, p.lo, p.hi, b, cap, &tb, NULL);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na * sizeof *a);
        assert_int_equal(ta, tb);
    }
    /* Outside the bounds: only pc. */
    struct osp_unwind_regs r = {.pc = 0x400100, .sp = p.lo, .fp = p.hi + 64, .fp_known = true};
    assert_int_equal(osp_prof__hybrid_walk(NULL, &r, p.lo, p.hi, b, 8, &tb, NULL), 1);
    unplant(&p);
}

/* A set with one synthetic image: [0x401000, 0x401030) a frame-pointer function,
 * [0x401100, 0x401140) a frameless one (CFA = rsp + 48 from +4), [0x402000, 0x402010) a
 * root, [0x403000, 0x403010) an expression from +4. Its "executable segment" is a real buffer so no code byte is ever read outside
 * memory we own (the walk reads code bytes only for signal frames and call checks). */
static struct osp_cfi_set *synthetic_set(void) {
    struct ebuf e = {.n = 0};
    size_t c = cie(&e, "zR");
    fde(&e, c, 0x401000, 0x30, fp_prog, sizeof fp_prog);
    static const uint8_t frameless[] = {0x44, 0x0e, 0x30};
    fde(&e, c, 0x401100, 0x40, frameless, sizeof frameless);
    static const uint8_t root[] = {0x07, 0x10};
    fde(&e, c, 0x402000, 0x10, root, sizeof root);
    static const uint8_t expr[] = {0x44, 0x0f, 0x02, 0x77, 0x08}; /* CFA = rsp + 8 as DWARF */
    fde(&e, c, 0x403000, 0x10, expr, sizeof expr);
    put4(&e, 0);
    struct osp_cfi_image img;
    memset(&img, 0, sizeof img);
    assert_true(build(&e, &img.table));
    img.lo = img.table.lo;
    img.hi = img.table.hi;
    img.nsegs = 0; /* no readable code: signal and call checks fail safely */
    struct osp_cfi_set *set = osp_prof__cfi_set_new(&img, 1);
    assert_non_null(set);
    return set;
}

static void test_planted_cfi_steps(void **state) {
    (void)state;
    X86_64_ONLY();
    struct osp_cfi_set *set = synthetic_set();
    struct planted p;
    plant(&p, 1);
    /* Leaf in the frameless function at +8 (CFA = sp + 48): its RA at sp + 40 returns into
     * the frame-pointer function's body (0x401010), whose record is at fp; that record's RA
     * is the root function. */
    uintptr_t sp = p.lo + 0x100;
    uintptr_t fp = sp + 0x100;
    word(sp + 40, 0x401011);
    word(fp, fp + 0x80);
    word(fp + 8, 0x402005);
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool tr;
    struct osp_unwind_info info;
    struct osp_unwind_regs r = {.pc = 0x401108, .sp = sp, .fp = fp, .fp_known = true};
    size_t n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 0x401108);
    assert_int_equal(out[1], 0x401011);
    assert_int_equal(out[2], 0x402005);
    assert_int_equal(info.end, OSP_UNWIND_ROOT);
    assert_int_equal(info.cfi_steps, 1);
    assert_false(tr);
    /* The frame-pointer walk loses the frame-pointer function (it reads [fp + 8] first). */
    n = osp_prof__fp_walk(0x401108, fp, 0, sp, p.hi, out, OSP_PROF_MAX_FRAMES, &tr);
    assert_int_equal(n, 2);
    assert_int_equal(out[1], 0x402005);
    /* A saved RA outside the stack ends the walk without reading it. */
    r.sp = p.hi - 16; /* CFA = hi + 32: outside */
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 1);
    assert_int_equal(info.end, OSP_UNWIND_BAD_STACK);
    /* A pc in the gap between functions (no FDE): the frame chain, as without tables. */
    r.sp = sp;
    r.pc = 0x401050;
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 2);
    assert_int_equal(out[1], 0x402005);
    assert_int_equal(info.end, OSP_UNWIND_ROOT);
    /* A pc whose rule cannot be expressed: the walk ends there, counted. */
    r.pc = 0x403004;
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 1);
    assert_int_equal(info.end, OSP_UNWIND_NO_RULE);
    /* The cap: truncated only because the next step would have worked. */
    r.pc = 0x401108;
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, 2, &tr, &info);
    assert_int_equal(n, 2);
    assert_true(tr);
    assert_int_equal(info.end, OSP_UNWIND_CAP);
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, 3, &tr, &info);
    assert_int_equal(n, 3);
    assert_false(tr);
    unplant(&p);
    osp_prof__cfi_set_free(set);
}

/* The walk's optimistic opening pass (prof_unwind.c chain_first) follows the frame chain
 * first and checks the frames afterwards. Here the chain is plausible all the way but
 * passes a return address into the frameless function: the pass must keep the frames up
 * to that one and go on with its CFI step (which finds a frame the chain skips), at every
 * frame cap. */
static void test_planted_chain_through_frameless(void **state) {
    (void)state;
    X86_64_ONLY();
    struct osp_cfi_set *set = synthetic_set();
    struct planted p;
    plant(&p, 1);
    uintptr_t f0 = p.lo + 0x100, f1 = f0 + 0x40, f2 = f1 + 0x80;
    word(f0, f1);
    word(f0 + 8, 0x401011); /* into the frame-pointer function */
    word(f1, f2);
    word(f1 + 8, 0x401121);       /* into the frameless one (CFA = rsp + 48) */
    word(f1 + 16 + 40, 0x401016); /* its return address, at CFA - 8 */
    word(f2, 0);
    word(f2 + 8, 0x402005); /* the root */
    const uintptr_t want[] = {0x401010, 0x401011, 0x401121, 0x401016, 0x402005};
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool tr;
    struct osp_unwind_info info;
    struct osp_unwind_regs r = {.pc = 0x401010, .sp = f0 - 32, .fp = f0, .fp_known = true};
    size_t n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 5);
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(info.end, OSP_UNWIND_ROOT);
    assert_int_equal(info.cfi_steps, 1);
    assert_false(tr);
    for (size_t cap = 1; cap < 5; cap++) {
        n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, cap, &tr, &info);
        assert_int_equal(n, cap);
        assert_memory_equal(out, want, cap * sizeof *out);
        assert_true(tr);
        assert_int_equal(info.end, OSP_UNWIND_CAP);
    }
    /* The frame chain alone skips the frameless function's caller. */
    n = osp_prof__fp_walk(0x401010, f0, 0, f0 - 32, p.hi, out, OSP_PROF_MAX_FRAMES, &tr);
    assert_int_equal(n, 4);
    assert_int_equal(out[3], 0x402005);
    /* A chain of frame-pointer frames only ends where its records stop, unchanged. */
    word(f1 + 8, 0x401016);
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 4);
    assert_int_equal(out[2], 0x401016);
    assert_int_equal(out[3], 0x402005);
    assert_int_equal(info.end, OSP_UNWIND_ROOT);
    /* A return address that is not code ends the chain after the frame before it. */
    word(f1 + 8, 0x10);
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 2);
    assert_int_equal(info.end, OSP_UNWIND_CHAIN_END);
    assert_false(tr);
    unplant(&p);
    osp_prof__cfi_set_free(set);
}

/* An image the published set still lists after its code was unmapped (a dlclose between
 * two refreshes of the set, or during a walk) is never read: the frame-record search of a
 * blocked thread's walk (rbp unknown) checks the bytes before each candidate return
 * address, and the signal-frame check the bytes at pc, both through
 * osp_prof__image_bytes, through the sampler thread's probe pipe. Here a real page holds a
 * call into a frame-pointer function; with the page mapped the search finds the record
 * after that call, unmapped it finds nothing and the walk ends (it read the page directly
 * before, and the sampler thread took a SIGSEGV under the registry lock:
 * test_handler_malloc hung). */
static void test_unmapped_image_code(void **state) {
    (void)state;
    X86_64_ONLY();
    const uintptr_t code = BASE + 0x200000; /* within reach of the FDEs' pc-relative fields */
    void *m = mmap((void *)code, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m != (void *)code) {
        if (m != MAP_FAILED) munmap(m, 4096);
        skip();
    }
    /* f at +0x100 (frame-pointer function); the root at +0x200 calls it: e8 rel32 at
     * +0x210, returning to +0x215. */
    uint8_t *c = m;
    c[0x210] = 0xe8;
    int32_t rel = (int32_t)(0x100 - 0x215);
    memcpy(c + 0x211, &rel, 4);
    struct ebuf e = {.n = 0};
    size_t ci = cie(&e, "zR");
    fde(&e, ci, code + 0x100, 0x40, fp_prog, sizeof fp_prog);
    static const uint8_t root[] = {0x07, 0x10};
    fde(&e, ci, code + 0x200, 0x40, root, sizeof root);
    put4(&e, 0);
    struct osp_cfi_image img;
    memset(&img, 0, sizeof img);
    assert_true(build(&e, &img.table));
    img.lo = img.table.lo;
    img.hi = img.table.hi;
    img.segs[0][0] = code;
    img.segs[0][1] = code + 4096;
    img.nsegs = 1;
    struct osp_cfi_set *set = osp_prof__cfi_set_new(&img, 1);
    assert_non_null(set);
    /* The sampler thread's probe pipe, on this thread: the walk copies image bytes
     * through it (osp_prof__image_bytes). */
    int probe[2];
    assert_int_equal(pipe2(probe, O_CLOEXEC | O_NONBLOCK), 0);
    osp_prof__image_probe_set(probe[0], probe[1]);
    struct planted p;
    plant(&p, 1);
    uintptr_t sp = p.lo + 0x100, rec = sp + 0x40;
    word(rec, 0);
    word(rec + 8, code + 0x215);
    /* Blocked in f after its prologue (CFA = rbp + 16), rbp unknown. */
    struct osp_unwind_regs r = {.pc = code + 0x108, .sp = sp, .fp = 0, .fp_known = false};
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool tr;
    struct osp_unwind_info info;
    size_t n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 2);
    assert_int_equal(out[1], code + 0x215);
    assert_int_equal(info.end, OSP_UNWIND_ROOT);
    uint8_t b[5];
    assert_true(osp_prof__image_bytes(code + 0x210, b, sizeof b));
    assert_memory_equal(b, c + 0x210, sizeof b);
    assert_int_equal(munmap(m, 4096), 0);
    /* Copies are cached by address until the published set changes (the bytes of an
     * image unloaded since are harmless); setting the probe again empties the cache, as
     * the set that drops the image would. */
    assert_true(osp_prof__image_bytes(code + 0x210, b, sizeof b));
    osp_prof__image_probe_set(probe[0], probe[1]);
    assert_false(osp_prof__image_bytes(code + 0x210, b, sizeof b));
    assert_false(osp_prof__is_sigreturn(&set->images[0], code + 0x100));
    n = osp_prof__hybrid_walk(set, &r, p.lo, p.hi, out, OSP_PROF_MAX_FRAMES, &tr, &info);
    assert_int_equal(n, 1);
    assert_int_equal(info.end, OSP_UNWIND_NO_RULE);
    /* A copy that faults part-way leaves nothing in the pipe: the next one is whole. */
    uint8_t two[16];
    assert_false(osp_prof__image_bytes(p.lo - 8, two, 16)); /* guard page, then the stack */
    word(p.lo, 0x1122334455667788ull);
    assert_true(osp_prof__image_bytes(p.lo, two, 8));
    assert_memory_equal(two, (const void *)p.lo, 8);
    osp_prof__image_probe_set(-1, -1);
    close(probe[0]);
    close(probe[1]);
    unplant(&p);
    osp_prof__cfi_set_free(set);
}

/* The SIGPROF handler does not disable cancellation around its walk: a thread cancelled
 * asynchronously inside one leaves its walker word entered, and releasing its registry
 * slot (its exit: the slot's destructor) resets the word, before the slot and its walker
 * id can pass to another thread. Simulated: a walk entered and never left. */
static void test_walker_word_reset_on_release(void **state) {
    (void)state;
    char path[] = "/tmp/osp_cfi_walker_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_true(osp_prof_session_begin(path, 100));
    struct osp_prof_slot *s = osp_prof__t_slot;
    assert_non_null(s);
    size_t w = (size_t)(s - osp_prof__session.slots);
    (void)osp_prof__cfi_enter(w); /* cancelled here: never left */
    assert_int_equal(atomic_load(&osp_prof__cfi_walkers[w].depth), 1);
    osp_prof_thread_unregister();
    assert_null(osp_prof__t_slot);
    assert_int_equal(atomic_load(&osp_prof__cfi_walkers[w].depth), 0);
    assert_true(osp_prof_session_end());
    unlink(path);
}

/* ---- real code: the process's own tables ------------------------------------------------ */

static const char *name_of(uintptr_t pc) {
    Dl_info di;
    if (dladdr((void *)pc, &di) && di.dli_sname) return di.dli_sname;
    return "?";
}

static bool has_frame(const uintptr_t *pcs, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(name_of(pcs[i]), name) == 0) return true;
    return false;
}

static void stack_of_self(uintptr_t *lo, uintptr_t *hi) {
    pthread_attr_t a;
    assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
    void *addr;
    size_t size;
    assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
    pthread_attr_destroy(&a);
    *lo = (uintptr_t)addr;
    *hi = (uintptr_t)addr + size;
}

struct walk_result {
    uintptr_t pcs[OSP_PROF_MAX_FRAMES];
    size_t n;
    struct osp_unwind_info info;
    bool fp_unknown; /* walk as if rbp were unknown (§(l.4)) */
};

/* With CFI_DEBUG set in the environment, print a walk's frames (to read a failure). */
static void print_walk(const char *what, const struct walk_result *w);

static void print_walk(const char *what, const struct walk_result *w) {
    if (getenv("CFI_DEBUG") == NULL) return;
    fprintf(stderr, "%s: %zu frames, end %d, %u CFI steps\n", what, w->n, w->info.end,
            (unsigned)w->info.cfi_steps);
    for (size_t i = 0; i < w->n; i++)
        fprintf(stderr, "  #%zu %#lx %s\n", i, (unsigned long)w->pcs[i], name_of(w->pcs[i]));
}

/* Walk from `uc` within [lo, hi) (this thread's stack). */
static void walk_context_in(const ucontext_t *uc, struct walk_result *w, uintptr_t lo,
                            uintptr_t hi) {
#if defined(__x86_64__)
    struct osp_unwind_regs r = {
        .pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP],
        .sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP],
        .fp = w->fp_unknown ? 0 : (uintptr_t)uc->uc_mcontext.gregs[REG_RBP],
        .fp_known = !w->fp_unknown,
    };
#else
    struct osp_unwind_regs r = {
        .pc = (uintptr_t)uc->uc_mcontext.pc,
        .sp = (uintptr_t)uc->uc_mcontext.sp,
        .fp = w->fp_unknown ? 0 : (uintptr_t)uc->uc_mcontext.regs[29],
        .lr = (uintptr_t)uc->uc_mcontext.regs[30],
        .fp_known = !w->fp_unknown,
    };
#endif
    if (r.sp > lo) lo = r.sp;
    bool tr;
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    w->n = osp_prof__hybrid_walk(set, &r, lo, hi, w->pcs, OSP_PROF_MAX_FRAMES, &tr, &w->info);
    osp_prof__cfi_release();
}

static void walk_context(const ucontext_t *uc, struct walk_result *w) {
    uintptr_t lo, hi;
    stack_of_self(&lo, &hi);
    walk_context_in(uc, w, lo, hi);
}

__attribute__((noinline)) void cfi_test_leaf_capture(void *arg) {
    ucontext_t uc;
    osp_test_frameless_capture(&uc);
    walk_context(&uc, arg);
}

__attribute__((noinline)) void cfi_test_caller_of_frameless(struct walk_result *w) {
    osp_test_frameless_nested(cfi_test_leaf_capture, w);
    __asm__ volatile("" ::: "memory");
}

static void test_real_frameless(void **state) {
    (void)state;
    X86_64_ONLY();
    osp_prof__cfi_refresh();
    struct walk_result w = {.fp_unknown = false};
    cfi_test_caller_of_frameless(&w);
    assert_true(w.n >= 6);
    assert_string_equal(name_of(w.pcs[0]), "osp_test_frameless_capture");
    assert_string_equal(name_of(w.pcs[1]), "cfi_test_leaf_capture");
    assert_string_equal(name_of(w.pcs[2]), "osp_test_frameless_call");
    assert_string_equal(name_of(w.pcs[3]), "osp_test_frameless_nested");
    assert_string_equal(name_of(w.pcs[4]), "cfi_test_caller_of_frameless");
    assert_true(has_frame(w.pcs, w.n, "main"));
    assert_int_equal(w.info.end, OSP_UNWIND_ROOT); /* _start marks RA undefined */
    assert_true(w.info.cfi_steps >= 3);
    /* The same walk without rbp (a thread blocked in the kernel, §(l.4)) finds the same
     * frames: rbp is recovered from the first frame that saved it or located above sp. */
    struct walk_result u = {.fp_unknown = true};
    cfi_test_caller_of_frameless(&u);
    print_walk("with rbp", &w);
    print_walk("without rbp", &u);
    assert_int_equal(u.n, w.n);
    for (size_t i = 1; i < w.n; i++) assert_string_equal(name_of(u.pcs[i]), name_of(w.pcs[i]));
    assert_int_equal(u.info.end, OSP_UNWIND_ROOT);
}

/* A library whose only CFI is .debug_frame (debug_frame_lib.c, 32- and 64-bit DWARF):
 * the refresh reads the section from the library's file, and the walk from a callback
 * under two of its frameless functions finds both and their caller. */
__attribute__((noinline)) void cfi_test_dbgframe_caller(int (*nested)(void (*)(void *), void *),
                                                        struct walk_result *w) {
    nested(cfi_test_leaf_capture, w);
    __asm__ volatile("" ::: "memory");
}

static void check_debug_frame_lib(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int (*nested)(void (*)(void *), void *) =
        (int (*)(void (*)(void *), void *))dlsym(h, "osp_test_dbgframe_nested");
    void *call = dlsym(h, "osp_test_dbgframe_call");
    assert_non_null(nested);
    assert_non_null(call);
    assert_true(osp_prof__cfi_refresh());
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    const struct osp_cfi_image *img = osp_prof__cfi_find(set, (uintptr_t)call + 8);
    assert_non_null(img); /* a table, from .debug_frame alone */
    const struct osp_cfi_row *r = osp_prof__cfi_lookup(&img->table, (uintptr_t)call + 16);
    assert_non_null(r);
    assert_int_equal(r->kind, OSP_CFI_STEP);
    assert_int_equal(r->cfa_reg, OSP_CFI_REG_SP);
    assert_true(r->cfa_off >= 16); /* a frameless frame: CFA = rsp + its size */
    osp_prof__cfi_release();
    struct walk_result w = {.fp_unknown = false};
    cfi_test_dbgframe_caller(nested, &w);
    print_walk(path, &w);
    assert_true(has_frame(w.pcs, w.n, "cfi_test_leaf_capture"));
    assert_true(has_frame(w.pcs, w.n, "osp_test_dbgframe_call"));
    assert_true(has_frame(w.pcs, w.n, "osp_test_dbgframe_nested"));
    assert_true(has_frame(w.pcs, w.n, "cfi_test_dbgframe_caller"));
    assert_true(has_frame(w.pcs, w.n, "main"));
    assert_int_equal(w.info.end, OSP_UNWIND_ROOT);
    dlclose(h);
    osp_prof__cfi_refresh();
}

/* In the process's own tables (the C library's 3,713 functions among them) every
 * function entry has its function's own rule, never the gap marker of the function that
 * ends there. The builder before gave a gap to 35,518 of 2,107,938 entries (this
 * machine's 1,072 shared libraries loaded in 18 groups) when a function began with the
 * rules its predecessor ended with (the merged first row let the end marker behind it
 * take its place). */
static void test_real_entries_not_gaps(void **state) {
    (void)state;
    osp_prof__cfi_refresh();
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    assert_non_null(set);
    size_t entries = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        const struct osp_cfi_table *t = &set->images[i].table;
        for (size_t j = 0; j < t->nstarts; j++) {
            const struct osp_cfi_row *r = osp_prof__cfi_lookup(t, t->lo + t->starts[j]);
            assert_non_null(r);
            if (r->kind == OSP_CFI_GAP)
                fail_msg("image %zu: the function at %#lx starts in a gap row", i,
                         (unsigned long)(t->lo + t->starts[j]));
            entries++;
        }
    }
    osp_prof__cfi_release();
    assert_true(entries > 1000); /* the C library's at least */
}

static void test_real_debug_frame(void **state) {
    (void)state;
    X86_64_ONLY();
    check_debug_frame_lib(DBGFRAME32_LIB);
    check_debug_frame_lib(DBGFRAME64_LIB);
}

/* qsort's merge sort (libc, no frame pointers) calls back into frame-pointer code. */
static struct walk_result g_qsort_walk;
static int g_qsort_walked;

__attribute__((noinline)) int cfi_test_compare(const void *a, const void *b) {
    if (!g_qsort_walked) {
        g_qsort_walked = 1;
        ucontext_t uc;
        getcontext(&uc);
        walk_context(&uc, &g_qsort_walk);
    }
    return strcmp(*(char *const *)a, *(char *const *)b);
}

__attribute__((noinline)) void cfi_test_sort_strings(void) {
    static char buf[64][8];
    char *v[64];
    for (int i = 0; i < 64; i++) {
        snprintf(buf[i], sizeof buf[i], "s%03d", (i * 37) % 64);
        v[i] = buf[i];
    }
    qsort(v, 64, sizeof v[0], cfi_test_compare);
    __asm__ volatile("" ::: "memory");
}

static void test_real_qsort(void **state) {
    (void)state;
    X86_64_ONLY();
    osp_prof__cfi_refresh();
    g_qsort_walked = 0;
    cfi_test_sort_strings();
    struct walk_result *w = &g_qsort_walk;
    assert_true(has_frame(w->pcs, w->n, "cfi_test_compare"));
    assert_true(has_frame(w->pcs, w->n, "cfi_test_sort_strings"));
    assert_true(has_frame(w->pcs, w->n, "main"));
    assert_int_equal(w->info.end, OSP_UNWIND_ROOT);
}

/* A signal handler: the walk crosses the kernel's signal frame (__restore_rt) into the
 * interrupted code and on to main. */
static struct walk_result g_sig_walk;
static uintptr_t g_sig_lo, g_sig_hi; /* taken before the signal: the handler calls no libc */

static void cfi_test_handler(int sig) {
    (void)sig;
    ucontext_t uc;
    getcontext(&uc);
    walk_context_in(&uc, &g_sig_walk, g_sig_lo, g_sig_hi);
}

__attribute__((noinline)) void cfi_test_raise_from_frameless(void *arg) {
    (void)arg;
    raise(SIGUSR1);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void cfi_test_signal_caller(void) {
    osp_test_frameless_call(cfi_test_raise_from_frameless, NULL);
    __asm__ volatile("" ::: "memory");
}

static void test_real_signal_frame(void **state) {
    (void)state;
    X86_64_ONLY();
    osp_prof__cfi_refresh();
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cfi_test_handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    memset(&g_sig_walk, 0, sizeof g_sig_walk);
    stack_of_self(&g_sig_lo, &g_sig_hi);
    cfi_test_signal_caller();
    sigaction(SIGUSR1, &old, NULL);
    struct walk_result *w = &g_sig_walk;
    print_walk("signal", w);
    /* ThreadSanitizer defers handlers: it calls them from its interceptors, not through
     * the kernel's signal frame, so there is no trampoline to cross. */
    if (!RUNNING_UNDER_TSAN) assert_true(w->info.signal_frames == 1);
    assert_true(has_frame(w->pcs, w->n, "cfi_test_raise_from_frameless"));
    assert_true(has_frame(w->pcs, w->n, "osp_test_frameless_call"));
    assert_true(has_frame(w->pcs, w->n, "cfi_test_signal_caller"));
    assert_true(has_frame(w->pcs, w->n, "main"));
    assert_int_equal(w->info.end, OSP_UNWIND_ROOT);
}

/* The C library's signal trampoline (__restore_rt: the return address the kernel gives a
 * handler) is never vouched for as keeping the frame chain. The kernel's frame-pointer
 * chain through a handler reads __restore_rt as the handler's return address and then the
 * interrupted function's frame record, skipping the interrupted pc: the ring engine takes
 * such a chain whole only when osp_prof__keeps_chain vouches for every return address in
 * it (perf_stack). The trampoline's FDE (augmentation "S") starts one nop before it, so a
 * lookup at ret - 1 lands in it; every return address whose ret - 1 lies in that FDE, and
 * the chunks around it, must not have OSP_CFI_FPMAP_RET. The restorer is read back from
 * the kernel (rt_sigaction, past any sanitizer's interceptor) after installing a handler
 * through the C library, which supplies it. */
static void cfi_test_noop_handler(int sig) {
    (void)sig;
}

static void test_real_restorer_not_chain(void **state) {
    (void)state;
#if defined(__x86_64__)
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cfi_test_noop_handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } k;
    memset(&k, 0, sizeof k);
    assert_int_equal(syscall(SYS_rt_sigaction, SIGUSR2, NULL, &k, sizeof k.mask), 0);
    sigaction(SIGUSR2, &old, NULL);
    uintptr_t restorer = (uintptr_t)k.restorer;
    assert_true(k.flags & 0x04000000ul); /* SA_RESTORER: the C library's trampoline */
    assert_true(restorer != 0);
    Dl_info di;
    assert_true(dladdr((void *)restorer, &di) != 0);
    printf("# restorer %#lx in %s\n", (unsigned long)restorer, di.dli_fname);
    assert_non_null(strstr(di.dli_fname, "libc.so"));
    osp_prof__cfi_refresh();
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    assert_non_null(set);
    const struct osp_cfi_image *img = osp_prof__cfi_find(set, restorer);
    assert_non_null(img);
    const struct osp_cfi_table *t = &img->table;
    /* The trampoline's FDE: a signal row at the restorer and at the nop before it. */
    assert_int_equal(osp_prof__cfi_lookup(t, restorer)->kind, OSP_CFI_SIGNAL);
    assert_int_equal(osp_prof__cfi_lookup(t, restorer - 1)->kind, OSP_CFI_SIGNAL);
    uintptr_t fde_lo = restorer - 1, fde_hi = restorer;
    while (fde_lo > t->lo && osp_prof__cfi_lookup(t, fde_lo - 1)->kind == OSP_CFI_SIGNAL) fde_lo--;
    while (fde_hi < t->hi && osp_prof__cfi_lookup(t, fde_hi)->kind == OSP_CFI_SIGNAL) fde_hi++;
    printf("# signal FDE [%#lx, %#lx), %zu bytes\n", (unsigned long)fde_lo, (unsigned long)fde_hi,
           (size_t)(fde_hi - fde_lo));
    /* Every return address whose ret - 1 lies in the signal FDE's chunks. */
    uintptr_t c_lo = fde_lo & ~(OSP_CFI_FP_CHUNK - 1);
    uintptr_t c_hi = (fde_hi + OSP_CFI_FP_CHUNK - 1) & ~(OSP_CFI_FP_CHUNK - 1);
    size_t vouched = 0;
    for (uintptr_t ret = c_lo + 1; ret <= c_hi; ret++) {
        if (osp_prof__keeps_chain(set, ret)) {
            printf("# keeps_chain(%#lx) (restorer %+ld) is true\n", (unsigned long)ret,
                   (long)(ret - restorer));
            vouched++;
        }
    }
    printf("# return addresses vouched for in the trampoline's chunks: %zu of %zu\n", vouched,
           (size_t)(c_hi - c_lo));
    bool at_restorer = osp_prof__keeps_chain(set, restorer);
    osp_prof__cfi_release();
    assert_false(at_restorer);
    assert_int_equal(vouched, 0);
#else
    (void)cfi_test_noop_handler;
    skip(); /* osp_prof__keeps_chain is x86-64's (the ring engine's) */
#endif
}

/* A thread's walk ends at its root (clone3 / clone mark RA undefined). */
static void *thread_body(void *arg) {
    osp_test_frameless_call(cfi_test_leaf_capture, arg);
    return NULL;
}

static void test_real_thread_root(void **state) {
    (void)state;
    X86_64_ONLY();
    osp_prof__cfi_refresh();
    struct walk_result w = {.fp_unknown = false};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_body, &w), 0);
    pthread_join(t, NULL);
    assert_true(has_frame(w.pcs, w.n, "osp_test_frameless_call"));
    assert_int_equal(w.info.end, OSP_UNWIND_ROOT);
}

/* Refresh: a second call with no new image publishes nothing; dlopen of a new image
 * publishes a set that covers it; the tables of the old set are reused. */
static void test_refresh_dlopen(void **state) {
    (void)state;
    X86_64_ONLY();
    osp_prof__cfi_refresh();
    assert_false(osp_prof__cfi_refresh());
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) skip();
    void *fn = dlsym(h, "crc32");
    assert_non_null(fn);
    assert_true(osp_prof__cfi_refresh());
    const struct osp_cfi_set *set = osp_prof__cfi_acquire();
    assert_non_null(set);
    const struct osp_cfi_image *img = osp_prof__cfi_find(set, (uintptr_t)fn);
    assert_non_null(img);
    const struct osp_cfi_row *r = osp_prof__cfi_lookup(&img->table, (uintptr_t)fn);
    assert_non_null(r);
    assert_int_not_equal(r->kind, OSP_CFI_NONE);
    assert_non_null(osp_prof__cfi_find(set, (uintptr_t)strcmp));
    osp_prof__cfi_release();
    dlclose(h);
    osp_prof__cfi_refresh();
}

/* ---- blocked threads, unwound from /proc/self/task/<tid>/syscall (§(l.4)) --------------- */

static void test_parse_task_syscall(void **state) {
    (void)state;
    uintptr_t sp = 0, pc = 0;
    const char *in = "202 0x55d0 0x80 0x0 0x0 0x0 0x0 0x7ffc1230 0x7f5a4567\n";
    assert_true(osp_prof__parse_task_syscall(in, strlen(in), &sp, &pc));
    assert_int_equal(sp, 0x7ffc1230);
    assert_int_equal(pc, 0x7f5a4567);
    const char *stopped = "-1 0x7ffc0008 0x401000\n";
    assert_true(osp_prof__parse_task_syscall(stopped, strlen(stopped), &sp, &pc));
    assert_int_equal(sp, 0x7ffc0008);
    assert_int_equal(pc, 0x401000);
    const char *bad[] = {"running\n",
                         "",
                         "202 0x1 0x2",
                         "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9",
                         "-1 0x7 \n",
                         "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 zz\n",
                         "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0xfffffffffffffffff\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(osp_prof__parse_task_syscall(bad[i], strlen(bad[i]), &sp, &pc));
    /* Not NUL-terminated: only `len` bytes are read. */
    char exact[] = {'-', '1', ' ', '0', 'x', '9', ' ', '0', 'x', '8'};
    assert_true(osp_prof__parse_task_syscall(exact, sizeof exact, &sp, &pc));
    assert_int_equal(pc, 8);
}

enum block_kind { BLOCK_COND, BLOCK_READ, BLOCK_SEM, BLOCK_JOIN, BLOCK_FRAMELESS_READ };

struct blocker {
    enum block_kind kind;
    pid_t tid;
    uintptr_t lo, hi;
    _Atomic int ready;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
    int pipe_fd[2];
    sem_t sem;
    pthread_t joined;
};

__attribute__((noinline)) void cfi_block_in_cond(struct blocker *b) {
    pthread_mutex_lock(&b->mu);
    atomic_store(&b->ready, 1);
    while (!b->go) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void cfi_block_in_read(void *arg) {
    struct blocker *b = arg;
    char c;
    atomic_store(&b->ready, 1);
    while (read(b->pipe_fd[0], &c, 1) < 0) {
    }
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void cfi_block_in_sem(struct blocker *b) {
    atomic_store(&b->ready, 1);
    while (sem_wait(&b->sem) != 0) {
    }
    __asm__ volatile("" ::: "memory");
}

static void *joined_body(void *arg) {
    struct blocker *b = arg;
    while (sem_wait(&b->sem) != 0) {
    }
    return NULL;
}

__attribute__((noinline)) void cfi_block_in_join(struct blocker *b) {
    assert_int_equal(pthread_create(&b->joined, NULL, joined_body, b), 0);
    atomic_store(&b->ready, 1);
    pthread_join(b->joined, NULL);
    __asm__ volatile("" ::: "memory");
}

static void *blocker_body(void *arg) {
    struct blocker *b = arg;
    b->tid = (pid_t)syscall(SYS_gettid);
    stack_of_self(&b->lo, &b->hi);
    switch (b->kind) {
    case BLOCK_COND: cfi_block_in_cond(b); break;
    case BLOCK_READ: cfi_block_in_read(b); break;
    case BLOCK_SEM: cfi_block_in_sem(b); break;
    case BLOCK_JOIN: cfi_block_in_join(b); break;
    case BLOCK_FRAMELESS_READ: osp_test_frameless_call(cfi_block_in_read, b); break;
    }
    return NULL;
}

/* Whether thread `tid` is asleep (state S) in the kernel. */
static bool asleep(pid_t tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] == 'S';
}

static void check_blocked(enum block_kind kind, const char *caller) {
    X86_64_ONLY();
    osp_prof__cfi_refresh();
    struct blocker b;
    memset(&b, 0, sizeof b);
    b.kind = kind;
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    assert_int_equal(pipe(b.pipe_fd), 0);
    sem_init(&b.sem, 0, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, blocker_body, &b), 0);
    while (!atomic_load(&b.ready)) sched_yield();
    struct walk_result w;
    memset(&w, 0, sizeof w);
    bool tr;
    for (int tries = 0; tries < 2000; tries++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        if (!asleep(b.tid)) continue;
        w.n = osp_prof__blocked_stack(b.tid, b.lo, b.hi, w.pcs, OSP_PROF_MAX_FRAMES, &tr, &w.info);
        if (w.n > 0 && asleep(b.tid) && w.info.end == OSP_UNWIND_ROOT) break;
    }
    print_walk(caller, &w);
    assert_true(w.n > 2);
    assert_true(has_frame(w.pcs, w.n, caller));
    assert_int_equal(w.info.end, OSP_UNWIND_ROOT);
    /* Wake it. */
    pthread_mutex_lock(&b.mu);
    b.go = 1;
    pthread_cond_signal(&b.cv);
    pthread_mutex_unlock(&b.mu);
    assert_int_equal(write(b.pipe_fd[1], "x", 1), 1);
    sem_post(&b.sem);
    pthread_join(t, NULL);
    close(b.pipe_fd[0]);
    close(b.pipe_fd[1]);
    sem_destroy(&b.sem);
}

static void test_blocked_cond(void **state) {
    (void)state;
    check_blocked(BLOCK_COND, "cfi_block_in_cond");
}
static void test_blocked_read(void **state) {
    (void)state;
    check_blocked(BLOCK_READ, "cfi_block_in_read");
}
static void test_blocked_sem(void **state) {
    (void)state;
    check_blocked(BLOCK_SEM, "cfi_block_in_sem");
}
static void test_blocked_join(void **state) {
    (void)state;
    check_blocked(BLOCK_JOIN, "cfi_block_in_join");
}
static void test_blocked_read_under_frameless(void **state) {
    (void)state;
    check_blocked(BLOCK_FRAMELESS_READ, "osp_test_frameless_call");
}

/* A thread that is running (spinning): the kernel says "running", nothing is walked. A
 * thread that does not exist: nothing. */
static _Atomic int g_spin_stop;
static _Atomic pid_t g_spin_tid;

static void *spin_body(void *arg) {
    (void)arg;
    atomic_store(&g_spin_tid, (pid_t)syscall(SYS_gettid));
    while (!atomic_load_explicit(&g_spin_stop, memory_order_relaxed)) {
    }
    return NULL;
}

static void test_blocked_not_blocked(void **state) {
    (void)state;
    uintptr_t lo, hi, out[8];
    bool tr;
    stack_of_self(&lo, &hi);
    atomic_store(&g_spin_stop, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, spin_body, NULL), 0);
    while (atomic_load(&g_spin_tid) == 0) sched_yield();
    uintptr_t sp, pc;
    int running = 0;
    for (int i = 0; i < 50; i++)
        if (!osp_prof__task_syscall_regs(atomic_load(&g_spin_tid), &sp, &pc)) running++;
    atomic_store(&g_spin_stop, 1);
    pthread_join(t, NULL);
    assert_true(running > 0); /* preempted spinners may show as not running at times */
    assert_int_equal(osp_prof__blocked_stack(0x7ffffff0, lo, hi, out, 8, &tr, NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_fde_order),
        cmocka_unit_test(test_overlapping_fdes),
        cmocka_unit_test(test_rule_at_fde_end),
        cmocka_unit_test(test_real_entries_not_gaps),
        cmocka_unit_test(test_remember_restore_and_root),
        cmocka_unit_test(test_plt_and_expressions),
        cmocka_unit_test(test_signal_cie),
        cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_fast_path_map),
        cmocka_unit_test(test_signal_trampoline_not_fast),
        cmocka_unit_test(test_frameless_callers_not_fast),
        cmocka_unit_test(test_debug_frame_formats),
        cmocka_unit_test(test_debug_frame_behind_eh_frame),
        cmocka_unit_test(test_aarch64_rules),
        cmocka_unit_test(test_no_tables_is_fp_walk),
        cmocka_unit_test(test_planted_cfi_steps),
        cmocka_unit_test(test_planted_chain_through_frameless),
        cmocka_unit_test(test_unmapped_image_code),
        cmocka_unit_test(test_walker_word_reset_on_release),
        cmocka_unit_test(test_real_frameless),
        cmocka_unit_test(test_real_qsort),
        cmocka_unit_test(test_real_debug_frame),
        cmocka_unit_test(test_real_signal_frame),
        cmocka_unit_test(test_real_restorer_not_chain),
        cmocka_unit_test(test_real_thread_root),
        cmocka_unit_test(test_refresh_dlopen),
        cmocka_unit_test(test_parse_task_syscall),
        cmocka_unit_test(test_blocked_cond),
        cmocka_unit_test(test_blocked_read),
        cmocka_unit_test(test_blocked_sem),
        cmocka_unit_test(test_blocked_join),
        cmocka_unit_test(test_blocked_read_under_frameless),
        cmocka_unit_test(test_blocked_not_blocked),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    osp_prof__cfi_reset();
    return rc;
}
