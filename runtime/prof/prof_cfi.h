/*
 * prof_cfi.h — DWARF call-frame information decoded into compact unwind tables, and the
 * hybrid (frame pointer + CFI) stack walk that reads them. docs/spec/profiler.md §(l.1),
 * §(l.4); docs/profiler-runtime.md "The unwinder".
 *
 * Two sides, never mixed:
 *  - building (prof_cfi.c): outside signal context only (session start, the sampler
 *    thread). Parses `.eh_frame` of every loaded image found through dl_iterate_phdr
 *    (PT_GNU_EH_FRAME, read from the loaded image's memory), runs the CIE/FDE programs and
 *    keeps, per image, a sorted array of address ranges with the rules the walker needs:
 *    how to find the CFA (rsp/rbp + offset, or one of the two standard PLT expressions),
 *    where the return address and the caller's rbp are saved. Memory comes from mmap, so
 *    building never enters the program's allocator.
 *  - reading (prof_unwind.c): the walk, called from the SIGPROF handler, from blocking
 *    hooks and from the sampler. Async-signal-safe: no allocation, no locks, reads stack
 *    memory only inside [lo, hi) and code bytes only inside an image's executable segment.
 *
 * Not part of the runtime ABI; internal to runtime/prof and its tests.
 */
#ifndef OSP_PROF_CFI_H
#define OSP_PROF_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof_internal.h"

/* What the walker does in an address range. */
enum osp_cfi_kind {
    OSP_CFI_NONE = 0, /* a rule the table cannot express: the walk ends there, counted */
    OSP_CFI_STEP,     /* CFA = reg + cfa_off; RA at CFA + ra_off; rbp per fp_rule */
    OSP_CFI_PLT,      /* a PLT stub: CFA = rsp + cfa_off + ((pc & 15) >= plt_min ? 8 : 0) */
    OSP_CFI_ROOT,     /* return address undefined: the outermost frame (_start, clone3) */
    OSP_CFI_SIGNAL,   /* a signal trampoline (CIE augmentation "S"): continue from ucontext */
    OSP_CFI_GAP,      /* no FDE covers the range: the walker uses the frame chain */
};

/* CFA base registers. */
enum osp_cfi_reg { OSP_CFI_REG_SP = 0, OSP_CFI_REG_FP = 1 };

/* How the caller's frame pointer (rbp / x29) is recovered. */
enum osp_cfi_fp_rule {
    OSP_CFI_FP_SAME = 0,   /* unchanged by this frame */
    OSP_CFI_FP_OFFSET = 1, /* saved at CFA + fp_off */
    OSP_CFI_FP_UNDEF = 2,  /* undefined: unknown in the caller */
};

/* One address range [start, next row's start) and its rules. 16 bytes. */
struct osp_cfi_row {
    uint32_t pc_off; /* start, as an offset from the table's lo */
    int32_t cfa_off; /* bytes added to the CFA base register */
    int16_t ra_off;  /* the return address is saved at CFA + ra_off */
    int16_t fp_off;  /* with OSP_CFI_FP_OFFSET: rbp is saved at CFA + fp_off */
    uint8_t kind;    /* enum osp_cfi_kind */
    uint8_t cfa_reg; /* enum osp_cfi_reg */
    uint8_t fp_rule; /* enum osp_cfi_fp_rule */
    uint8_t plt_min; /* with OSP_CFI_PLT: 10 or 11 (the two standard layouts) */
};

/* Rows of one image: covers [lo, hi); rows[0].pc_off == 0, the last row is a GAP marker
 * at hi - lo. `starts` are the FDEs' start addresses (function entries) as offsets from
 * lo, ascending and distinct. Rows and starts live in one mmap'd block of map_bytes bytes
 * owned by the table. */
struct osp_cfi_table {
    uintptr_t lo, hi;
    struct osp_cfi_row *rows;
    size_t nrows;
    const uint32_t *starts;
    size_t nstarts;
    size_t map_bytes;
};

/* Counters of one build, for tests and the fuzzer (nothing is reported to users). */
struct osp_cfi_build_stats {
    size_t cies, fdes;
    size_t fdes_skipped; /* unparseable or unsupported encodings: their range has no row */
    size_t rows_none;    /* rows whose rules the table cannot express */
};

/*
 * Build a table from `len` bytes of `.eh_frame` at `bytes`. `addr` is the run-time
 * address of bytes[0] (pc-relative encodings are relative to it), `bias` is added to
 * absolute (DW_EH_PE_absptr) addresses. Reads only bytes[0, len); any length, encoding,
 * offset or program that runs outside that range or that the table cannot express
 * skips the FDE or marks its range OSP_CFI_NONE: it never reads out of bounds, never
 * loops forever, and never allocates with malloc (mmap only). The walk of `.eh_frame`
 * stops at a zero terminator or at `len`. On success returns true and fills `*out`
 * (release it with osp_prof__cfi_table_free); false when nothing usable was found or
 * memory ran out (`*out` is then empty and needs no release). `stats` may be NULL.
 * Not async-signal-safe. docs/spec/profiler.md §(l.1).
 */
OSP_PROF_HIDDEN bool osp_prof__cfi_build(const uint8_t *bytes, size_t len, uintptr_t addr,
                                         uintptr_t bias, struct osp_cfi_table *out,
                                         struct osp_cfi_build_stats *stats);

/* Release a table built by osp_prof__cfi_build (munmap) and zero it. NULL-safe. */
OSP_PROF_HIDDEN void osp_prof__cfi_table_free(struct osp_cfi_table *t);

/* The row covering `pc`, or NULL when `pc` is outside [t->lo, t->hi). Binary search;
 * async-signal-safe. */
OSP_PROF_HIDDEN const struct osp_cfi_row *osp_prof__cfi_lookup(const struct osp_cfi_table *t,
                                                               uintptr_t pc);

/* The entry of the function (FDE) containing `pc`: the greatest FDE start <= pc, into
 * *entry. False when `pc` is outside the table. Binary search; async-signal-safe. */
OSP_PROF_HIDDEN bool osp_prof__cfi_function_entry(const struct osp_cfi_table *t, uintptr_t pc,
                                                  uintptr_t *entry);

/* ---- the set of images the walker sees ------------------------------------------------ */

#define OSP_CFI_MAX_SEGS   8    /* executable PT_LOAD segments kept per image */
#define OSP_CFI_CACHE_SIZE 4096 /* entries of a set's lookup cache (a power of 2) */

/* One loaded image. `segs` are its executable PT_LOAD ranges [lo, hi); the table's rows
 * were clipped to them when it was built, so code bytes at a looked-up pc are mapped. */
struct osp_cfi_image {
    uintptr_t lo, hi; /* the table's range, for the image search */
    uintptr_t segs[OSP_CFI_MAX_SEGS][2];
    size_t nsegs;
    uintptr_t load_bias; /* dlpi_addr */
    uintptr_t key;       /* identity across rescans: load bias + first PT_LOAD vaddr */
    struct osp_cfi_table table;
};

/*
 * An immutable snapshot published to the walker: images sorted by lo, not overlapping.
 * `cache` remembers recent lookups (address -> image and row, packed in one word, see
 * prof_unwind.c), so a frame costs no table search after the first time its address is
 * seen; slots are written with relaxed atomic stores by any walker (a lost race only costs
 * a search). 0 = empty; the set is mapped zero-filled.
 */
struct osp_cfi_set {
    size_t nimages;
    size_t map_bytes; /* of this block (the images' tables are mapped separately) */
    _Atomic uint64_t cache[OSP_CFI_CACHE_SIZE];
    /* Lookup addresses whose rule is exactly the frame-pointer step (CFA = rbp + 16, RA at
     * CFA - 8, rbp at CFA - 16): the walk's inline fast path. 0 = empty. */
    _Atomic uintptr_t fp_cache[OSP_CFI_CACHE_SIZE];
    struct osp_cfi_image images[];
};

/* The image whose table covers `pc`, or NULL. Async-signal-safe. */
OSP_PROF_HIDDEN const struct osp_cfi_image *osp_prof__cfi_find(const struct osp_cfi_set *set,
                                                               uintptr_t pc);

/*
 * Build a set from `n` images (their tables and segments filled; ownership of the tables
 * moves to the set) in an mmap'd block. Returns NULL when memory runs out (the tables are
 * then still the caller's). Not async-signal-safe.
 */
OSP_PROF_HIDDEN struct osp_cfi_set *osp_prof__cfi_set_new(const struct osp_cfi_image *images,
                                                          size_t n);
/* Unmap a set and every table it owns. NULL-safe. Not async-signal-safe. */
OSP_PROF_HIDDEN void osp_prof__cfi_set_free(struct osp_cfi_set *set);

/*
 * The process-wide published set (docs/profiler-runtime.md "The unwinder").
 * osp_prof__cfi_refresh rescans dl_iterate_phdr when images were added or removed since
 * the last scan (glibc's dlpi_adds / dlpi_subs counters; the first call always scans),
 * builds tables for new images (reusing those of images still loaded) and publishes the
 * new set with a release store. A replaced set is unmapped only once no walk that could
 * have seen it is still running (osp_prof__cfi_acquire counts walks). Returns true when a
 * new set was published. Outside signal context only; not reentrant (one caller at a
 * time: the session owner at start, then the sampler thread).
 */
OSP_PROF_HIDDEN bool osp_prof__cfi_refresh(void);
/* Unpublish and unmap everything (session end, tests). Same rules as refresh. */
OSP_PROF_HIDDEN void osp_prof__cfi_reset(void);

/* Enter a walk: the published set (NULL when none), kept alive until the matching
 * osp_prof__cfi_release. Async-signal-safe (two atomic operations), may nest. */
OSP_PROF_HIDDEN const struct osp_cfi_set *osp_prof__cfi_acquire(void);
OSP_PROF_HIDDEN void osp_prof__cfi_release(void);

/* ---- the hybrid walk (prof_unwind.c) --------------------------------------------------- */

/* Why a walk ended. */
enum osp_unwind_end {
    OSP_UNWIND_CHAIN_END = 0, /* the frame chain ended (fp outside the stack, ret < 4096) */
    OSP_UNWIND_ROOT,          /* a frame whose CFI marks it outermost (_start, clone3) */
    OSP_UNWIND_NO_RULE,       /* a range the table cannot express, or rbp unknown */
    OSP_UNWIND_BAD_STACK,     /* a rule pointed outside [lo, hi) or did not move up */
    OSP_UNWIND_CAP,           /* the frame cap was reached */
};

/* Registers a walk starts from. `pc_is_return`: pc is a return address (a call site + 1:
 * looked up at pc - 1), not the precise pc of an interrupted instruction. `fp_known` false:
 * the frame pointer's value is unknown (a thread blocked in the kernel, §(l.4)); it is
 * recovered from the first frame that saved it, and a frame-pointer frame met before that
 * is located from sp (see prof_unwind.c). */
struct osp_unwind_regs {
    uintptr_t pc, sp, fp, lr;
    bool pc_is_return;
    bool fp_known;
};

/* What one walk did, for the caller's counters. */
struct osp_unwind_info {
    uint8_t end;        /* enum osp_unwind_end */
    uint16_t cfi_steps; /* frames stepped with a CFI rule rather than the frame chain */
    uint16_t signal_frames;
};

/*
 * Walk the stack from `r`: frame 0 is r->pc (r->pc - 1 when r->pc_is_return), then one
 * return address per frame, leaf first, at most `cap` (>= 1) into `out` (caller-owned).
 * Frame-pointer frames take the frame chain; frames whose CFI in `set` says otherwise
 * take a CFI step; a signal trampoline continues from the saved ucontext; a frame with
 * no table falls back to the frame chain. `set` NULL: frame pointers only (the same
 * addresses as osp_prof__fp_walk). `*truncated` is set when `cap` frames were recorded
 * and the next step would have succeeded (§(c) item 5). `info` may be NULL. Reads stack
 * memory only inside [lo, hi) (a sigcontext outside it ends the walk), never faults,
 * allocates nothing, takes no lock: async-signal-safe. docs/spec/profiler.md §(l.1).
 */
OSP_PROF_HIDDEN size_t osp_prof__hybrid_walk(const struct osp_cfi_set *set,
                                             const struct osp_unwind_regs *r, uintptr_t lo,
                                             uintptr_t hi, uintptr_t *out, size_t cap,
                                             bool *truncated, struct osp_unwind_info *info);

/* Whether the bytes at `pc` are the x86-64 sigreturn trampoline (`mov $15,%eax; syscall`
 * in either encoding glibc and musl use). `pc` must point into mapped code of `img`; the
 * check stays inside the image's executable segment. Async-signal-safe. */
OSP_PROF_HIDDEN bool osp_prof__is_sigreturn(const struct osp_cfi_image *img, uintptr_t pc);

#endif /* OSP_PROF_CFI_H */
