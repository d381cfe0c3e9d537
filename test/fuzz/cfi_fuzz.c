/*
 * cfi_fuzz.c — libFuzzer target for the CFI table builder (runtime/prof/prof_cfi.c,
 * docs/spec/profiler.md §(l.1)) and the walk over what it builds: any bytes are taken as
 * an image's .eh_frame, as its .debug_frame, as both (split in two), and as AArch64
 * .eh_frame. The builder must never read outside the input, never loop, and either refuse
 * it or produce a well-formed table (rows strictly ascending, a GAP end marker, every row
 * found by its own start address, a fast-path map and safe run inside the table); the
 * hybrid walk over that table and a stack made of the input's words must stay inside the
 * stack it is given.
 *
 * Built two ways:
 *  - with -fsanitize=fuzzer,address,undefined by test/fuzz/cfi_fuzz.sh (the fuzzing run);
 *  - linked with replay_main.c (ctest "runtime_prof_cfi_fuzz_corpus"), which replays the
 *    kept corpus test/fuzz/cfi_corpus in every build, sanitizers included.
 */
#define _GNU_SOURCE
#include "prof_cfi.h"
#include "replay_main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_BASE ((uintptr_t)0x40000000) /* run-time address given to the input's first byte */

static void check_table(const struct osp_cfi_table *t) {
    if (t->nrows < 2 || t->rows[0].pc_off != 0) abort();
    if (t->rows[t->nrows - 1].kind != OSP_CFI_GAP) abort();
    if (t->hi - t->lo != t->rows[t->nrows - 1].pc_off) abort();
    for (size_t i = 0; i + 1 < t->nrows; i++) {
        if (t->rows[i].pc_off >= t->rows[i + 1].pc_off) abort();
        if (t->rows[i].kind > OSP_CFI_GAP) abort();
        /* No builder flag is left in a row (plt_min is 0, 10 or 11). */
        if (t->rows[i].plt_min != 0 && t->rows[i].plt_min != 10 && t->rows[i].plt_min != 11)
            abort();
        if (osp_prof__cfi_lookup(t, t->lo + t->rows[i].pc_off) != &t->rows[i]) abort();
    }
    if (osp_prof__cfi_lookup(t, t->hi) != NULL) abort();
    for (size_t i = 0; i < t->nstarts; i++) {
        if (i > 0 && t->starts[i - 1] >= t->starts[i]) abort();
        uintptr_t e;
        if (!osp_prof__cfi_function_entry(t, t->lo + t->starts[i], &e) || e != t->lo + t->starts[i])
            abort();
        /* A function begins with a rule of its own (or an overlapping one's), never the
         * end marker of the function before it. */
        const struct osp_cfi_row *r = osp_prof__cfi_lookup(t, t->lo + t->starts[i]);
        if (r == NULL || r->kind == OSP_CFI_GAP) abort();
    }
    if (t->lo > 0 && osp_prof__cfi_lookup(t, t->lo - 1) != NULL) abort();
    uintptr_t base = t->lo & ~(OSP_CFI_FP_CHUNK - 1);
    if (t->ret_run_lo > t->ret_run_hi || t->ret_run_lo < t->lo || t->ret_run_hi > t->hi) abort();
    if (t->hi - base > OSP_CFI_FPMAP_MAX_SPAN) {
        if (t->fpmap != NULL || t->ret_run_lo != t->ret_run_hi) abort();
        return;
    }
    if (t->fpmap == NULL || t->fpmap_words * 32 * OSP_CFI_FP_CHUNK < t->hi - base) abort();
    /* The safe run's first and last chunks (all of it when short) have the bit. */
    size_t nrun =
        (size_t)((t->ret_run_hi - t->ret_run_lo + OSP_CFI_FP_CHUNK - 1) >> OSP_CFI_FP_CHUNK_SHIFT);
    for (size_t i = 0; i < nrun; i++) {
        if (i == 256 && nrun > 512) i = nrun - 256;
        size_t c =
            (size_t)((t->ret_run_lo + i * OSP_CFI_FP_CHUNK - base) >> OSP_CFI_FP_CHUNK_SHIFT);
        if (!((t->fpmap[c / 32] >> (2 * (c % 32))) & OSP_CFI_FPMAP_RET)) abort();
    }
}

static size_t g_built; /* inputs that produced a table (reported by the replay) */

/* One interpretation of the input: its bytes as the sections named by `mode`. */
enum { AS_EH, AS_DEBUG, AS_BOTH, AS_EH_A64, NMODES };

static void fuzz_one(const uint8_t *data, size_t size, const uint8_t *buf, int mode) {
    struct osp_cfi_image img;
    memset(&img, 0, sizeof img);
    struct osp_cfi_build_stats st;
    size_t half = size / 2;
    /* The input itself is the code view: FDEs that point into it are scanned for calls. */
    const uintptr_t view[1][2] = {{(uintptr_t)buf, (uintptr_t)buf + size}};
    struct osp_cfi_section eh = {buf, size, FUZZ_BASE, 0, false, view, 1};
    struct osp_cfi_section dbg = {buf, size, 0, FUZZ_BASE, true, view, 1};
    if (mode == AS_BOTH) {
        eh.len = half;
        dbg.bytes = buf + half;
        dbg.len = size - half;
    }
    bool ok = osp_prof__cfi_build_sections(
        mode == AS_DEBUG ? NULL : &eh, mode == AS_DEBUG || mode == AS_BOTH ? &dbg : NULL,
        mode == AS_EH_A64 ? OSP_CFI_ARCH_AARCH64 : OSP_CFI_ARCH_X86_64, &img.table, &st);
    if (!ok) return;
    g_built++;
    check_table(&img.table);
    if (mode == AS_EH_A64) { /* the walk reads rules as the host's */
        osp_prof__cfi_table_free(&img.table);
        return;
    }
    img.lo = img.table.lo;
    img.hi = img.table.hi;
    struct osp_cfi_set *set = osp_prof__cfi_set_new(&img, 1);
    if (set == NULL) {
        osp_prof__cfi_table_free(&img.table);
        return;
    }
    /* A stack made of the input's words, pointing into itself and into the table. */
    uintptr_t stack[64];
    for (size_t i = 0; i < 64; i++) {
        uintptr_t w = 0;
        for (size_t k = 0; k < 8 && size > 0; k++) w = (w << 8) | data[(i * 8 + k) % size];
        stack[i] = (w & 1) ? (uintptr_t)&stack[(w >> 1) % 64]
                           : img.table.lo + (w >> 1) % (img.table.hi - img.table.lo + 1);
    }
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool tr;
    for (size_t i = 0; i < img.table.nrows && i < 32; i++) {
        struct osp_unwind_regs r = {.pc = img.table.lo + img.table.rows[i].pc_off,
                                    .sp = (uintptr_t)&stack[i % 8],
                                    .fp = stack[(i + 3) % 64],
                                    .fp_known = (i & 1) != 0,
                                    .pc_is_return = (i & 2) != 0};
        size_t n = osp_prof__hybrid_walk(set, &r, (uintptr_t)stack, (uintptr_t)(stack + 64), out,
                                         32, &tr, NULL);
        if (n < 1 || n > 32) abort();
    }
    osp_prof__cfi_set_free(set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* An exact-size copy, so ASan sees any read past the input. */
    uint8_t *buf = malloc(size ? size : 1);
    if (buf == NULL) return 0;
    memcpy(buf, data, size);
    for (int mode = 0; mode < NMODES; mode++) fuzz_one(data, size, buf, mode);
    free(buf);
    return 0;
}

/* The replay's summary: how many inputs produced a table. */
int fuzz_replay_finish(FILE *out) {
    fprintf(out, ", %zu built a table", g_built);
    return 0;
}
