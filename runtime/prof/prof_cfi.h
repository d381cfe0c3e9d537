/*
 * prof_cfi.h — DWARF call-frame information decoded into compact unwind tables, and the
 * hybrid (frame pointer + CFI) stack walk that reads them. docs/spec/profiler.md §(l.1),
 * §(l.4); docs/profiler-runtime.md "The unwinder".
 *
 * Two sides, never mixed:
 *  - building (prof_cfi.c): outside signal context only (session start, the sampler
 *    thread). Parses `.eh_frame` of every loaded image found through dl_iterate_phdr
 *    (PT_GNU_EH_FRAME, read from the loaded image's memory) and, where the image's file
 *    has one, its `.debug_frame` for the ranges `.eh_frame` does not cover; runs the
 *    CIE/FDE programs and keeps, per image, a sorted array of address ranges with the
 *    rules the walker needs: how to find the CFA (sp/fp + offset, or one of the two
 *    standard x86-64 PLT expressions), where the return address and the caller's frame
 *    pointer are saved; and a bitmap saying where the frame chain alone is right (the
 *    walk's fast path). Memory comes from mmap, so building never enters the program's
 *    allocator.
 *  - reading (prof_unwind.c): the walk, called from the SIGPROF handler, from blocking
 *    hooks and from the sampler. Async-signal-safe: no allocation, no locks, reads stack
 *    memory only inside [lo, hi) and code bytes only inside an image's executable segment.
 *
 * Not part of the runtime ABI; internal to runtime/prof and its tests.
 */
#ifndef OSP_PROF_CFI_H
#define OSP_PROF_CFI_H

#include <stdatomic.h>
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
    int16_t ra_off;  /* the return address is saved at CFA + ra_off; 0: it is still in the
                      * link register (arm64 x30, only meaningful for an interrupted frame) */
    int16_t fp_off;  /* with OSP_CFI_FP_OFFSET: the frame pointer is saved at CFA + fp_off */
    uint8_t kind;    /* enum osp_cfi_kind */
    uint8_t cfa_reg; /* enum osp_cfi_reg */
    uint8_t fp_rule; /* enum osp_cfi_fp_rule */
    uint8_t plt_min; /* with OSP_CFI_PLT: 10 or 11 (the two standard layouts) */
};

/* The architectures whose DWARF register numbers the builder knows (chosen at run time so
 * the decoder is tested on every host): x86-64 (rsp 7, rbp 6, return address column 16)
 * and AArch64 (sp 31, x29 29, return address column 30 = x30, the link register). */
enum osp_cfi_arch { OSP_CFI_ARCH_X86_64 = 0, OSP_CFI_ARCH_AARCH64 = 1 };
#if defined(__aarch64__)
#define OSP_CFI_ARCH_NATIVE OSP_CFI_ARCH_AARCH64
#else
#define OSP_CFI_ARCH_NATIVE OSP_CFI_ARCH_X86_64
#endif

/* The fast-path bitmap (fpmap): 2 bits per OSP_CFI_FP_CHUNK-byte chunk of [lo, hi), 32
 * chunks per word, chunk c at bits 2 * (c % 32) of word c / 32.
 *   OSP_CFI_FPMAP_RET  a return address (looked up at ret - 1) in this chunk lies in a
 *                      function whose call sites all keep the frame chain (its CFI is the
 *                      frame-pointer rule wherever it can call), or in code without CFI:
 *                      the frame chain is the right step, no row lookup needed;
 *   OSP_CFI_FPMAP_PC   every row overlapping the chunk is exactly the frame-pointer rule
 *                      (CFA = fp + 16, RA at CFA - 8, fp at CFA - 16) or has no CFI: the
 *                      same for an interrupted pc. */
#define OSP_CFI_FP_CHUNK_SHIFT 4
#define OSP_CFI_FP_CHUNK       ((uintptr_t)1 << OSP_CFI_FP_CHUNK_SHIFT)
#define OSP_CFI_FPMAP_RET      1u
#define OSP_CFI_FPMAP_PC       2u
/* Tables spanning more code than this have no fpmap (every frame takes a row lookup). */
#define OSP_CFI_FPMAP_MAX_SPAN ((uintptr_t)256 << 20)

/* Rows of one image: covers [lo, hi); rows[0].pc_off == 0, the last row is a GAP marker
 * at hi - lo. `starts` are the FDEs' start addresses (function entries) as offsets from
 * lo, ascending and distinct. `fpmap` has fpmap_words words (see OSP_CFI_FPMAP_RET); NULL
 * (0 words) when the table spans more than OSP_CFI_FPMAP_MAX_SPAN.
 * Rows, starts and fpmap live in one mmap'd block of map_bytes bytes owned by the table. */
struct osp_cfi_table {
    uintptr_t lo, hi;
    struct osp_cfi_row *rows;
    size_t nrows;
    const uint32_t *starts;
    size_t nstarts;
    uint64_t *fpmap;
    size_t fpmap_words;
    /* The longest run of chunks whose OSP_CFI_FPMAP_RET bit is set, [ret_run_lo,
     * ret_run_hi) (absolute; empty when lo == hi): the walk tests a return address
     * against it before reading the map. */
    uintptr_t ret_run_lo, ret_run_hi;
    size_t map_bytes;
};

/* Counters of one build, for tests and the fuzzer (nothing is reported to users). */
struct osp_cfi_build_stats {
    size_t cies, fdes;
    size_t fdes_skipped;      /* unparseable or unsupported encodings, or outside the 4 GiB
                               * window the table's offsets reach: their range has no row */
    size_t rows_none;         /* rows whose rules the table cannot express */
    size_t debug_fdes;        /* FDEs of .debug_frame used (ranges .eh_frame does not cover) */
    size_t debug_fdes_shadow; /* FDEs of .debug_frame left out: .eh_frame covers their range */
    size_t fdes_fp;           /* FDEs whose call sites keep the frame chain (fast path) */
};

/* One CFI section to build from. `addr` is the run-time address of bytes[0] (pc-relative
 * encodings are relative to it; unused for .debug_frame, whose addresses are absolute),
 * `bias` is added to absolute addresses (the image's load bias). `debug_frame`: the
 * section is `.debug_frame` (CIE id 0xffffffff / 0xffffffffffffffff in 32/64-bit DWARF,
 * CIE pointers are section offsets, CIE versions 1, 3 and 4, addresses of the target's
 * size) rather than `.eh_frame` (CIE id 0, CIE pointers relative, augmentation-encoded
 * addresses). */
struct osp_cfi_section {
    const uint8_t *bytes;
    size_t len;
    uintptr_t addr, bias;
    bool debug_frame;
    /* Optional (NULL when the code is not in this process): `ncode` readable executable
     * ranges [lo, hi) of this process holding the code the FDEs describe, read while the
     * table is built. An x86-64 function that never moves sp (every row CFA = sp + 8) takes
     * the fast path for return addresses only when its bytes, read here, hold no call
     * instruction; without them, never. */
    const uintptr_t (*code)[2];
    size_t ncode;
};

/*
 * Build one image's table from its `.eh_frame` (`eh`, may be NULL) and `.debug_frame`
 * (`dbg`, may be NULL) for architecture `arch`. An FDE of `dbg` is used only where no FDE
 * of `eh` overlaps its range (§(l.1): `.debug_frame` where `.eh_frame` has nothing).
 * Reads only inside each section; any length, encoding, offset or program that runs
 * outside it or that the table cannot express skips the FDE or marks its range
 * OSP_CFI_NONE: it never reads out of bounds, never loops forever, and never allocates
 * with malloc (mmap only). The walk of a section stops at a zero terminator or at its
 * end. On success returns true and fills `*out` (release it with
 * osp_prof__cfi_table_free); false when nothing usable was found or memory ran out
 * (`*out` is then empty and needs no release). `stats` may be NULL. Not
 * async-signal-safe. docs/spec/profiler.md §(l.1).
 */
OSP_PROF_HIDDEN bool osp_prof__cfi_build_sections(const struct osp_cfi_section *eh,
                                                  const struct osp_cfi_section *dbg,
                                                  enum osp_cfi_arch arch, struct osp_cfi_table *out,
                                                  struct osp_cfi_build_stats *stats);

/*
 * osp_prof__cfi_build_sections for one `.eh_frame` of `len` bytes at `bytes` (run-time
 * address `addr`, bias `bias`) of the host's architecture. Same rules and results.
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
    /* The read-only and writable PT_LOAD segments (the GOT is in one of them), read when a
     * PLT stub's slot is followed; a segment past OSP_CFI_MAX_SEGS is never read. */
    uintptr_t dsegs[OSP_CFI_MAX_SEGS][2];
    size_t ndsegs;
    uintptr_t load_bias; /* dlpi_addr */
    uintptr_t key;       /* identity across rescans: load bias + first PT_LOAD vaddr */
    struct osp_cfi_table table;
};

/*
 * An immutable snapshot published to the walker: images sorted by lo, not overlapping.
 * `cache` remembers recent row lookups of the walk's slow path (address -> image and
 * row, packed in one word, see prof_unwind.c), so a frame that is not on the fast path
 * costs no table search after the first time its address is seen; slots are written
 * with relaxed atomic stores by any walker (a lost race only costs a search). 0 = empty;
 * the set is mapped zero-filled.
 */
/* What the walk's fast path needs of one image, packed in 32 bytes (the set's `fast`, in
 * the order of `images`): the table's range, its fast-path map and longest safe run, as
 * an offset from lo and a length (tables with a map span at most OSP_CFI_FPMAP_MAX_SPAN;
 * without one the run is empty). The set's header and fast[0] share one cache line. */
struct osp_cfi_fast {
    uintptr_t lo, hi;
    const uint64_t *fpmap;
    uint32_t run_off, run_len;
};

struct osp_cfi_set {
    size_t nimages;
    size_t map_bytes;             /* of this block (the tables are mapped separately) */
    struct osp_cfi_image *images; /* nimages, in this block after `fast` */
    _Atomic uint64_t *cache;      /* OSP_CFI_CACHE_SIZE slots, in this block after `images` */
    struct osp_cfi_fast fast[];   /* nimages: fast[0] in the header's cache line */
};
_Static_assert(UINTPTR_MAX != UINT64_MAX ||
                   (sizeof(struct osp_cfi_fast) == 32 && sizeof(struct osp_cfi_set) == 32),
               "a set's header and its first image's fast-path entry fill one cache line");

/* The image whose table covers `pc`, or NULL. Async-signal-safe. */
OSP_PROF_HIDDEN const struct osp_cfi_image *osp_prof__cfi_find(const struct osp_cfi_set *set,
                                                               uintptr_t pc);

/* As osp_prof__cfi_find, as an index into the set's `images` and `fast` (`set->nimages`
 * when no image covers `pc`), inline for the walk's fast path. A typical process's few
 * images are scanned in address order: the first whose end lies above pc is the only
 * candidate, and the program's own image usually comes first, so its frames read one
 * entry (a binary search reads several, and its branches mispredict half the time).
 * Async-signal-safe. */
static inline size_t osp_prof__cfi_find_index(const struct osp_cfi_set *set, uintptr_t pc) {
    size_t z = set->nimages;
    if (z > 32) {
        const struct osp_cfi_image *img = osp_prof__cfi_find(set, pc);
        return img != NULL ? (size_t)(img - set->images) : z;
    }
    for (size_t i = 0; i < z; i++)
        if (pc < set->fast[i].hi) return pc >= set->fast[i].lo ? i : z;
    return z;
}

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
/* The dynamic loader's image counters, glibc's dlpi_adds and dlpi_subs (out[0], out[1]):
 * they move whenever an image is loaded or unloaded, so equal readings mean the same
 * images. Both ~0 where the loader does not report them (then every reading must be taken
 * as a change). One dl_iterate_phdr callback (the loader's lock, the first image only).
 * Not async-signal-safe. The one change detector of the CFI refresh and of the image list
 * (prof_images.c, osp_prof__images_note). */
OSP_PROF_HIDDEN void osp_prof__loader_counts(unsigned long long out[2]);
/* Unpublish and unmap everything (session end, tests). Same rules as refresh. */
OSP_PROF_HIDDEN void osp_prof__cfi_reset(void);

/* Enter a walk: the published set (NULL when none), kept alive until the matching
 * osp_prof__cfi_release. Any thread; async-signal-safe (two atomic read-modify-writes on
 * one shared counter), may nest. */
OSP_PROF_HIDDEN const struct osp_cfi_set *osp_prof__cfi_acquire(void);
OSP_PROF_HIDDEN void osp_prof__cfi_release(void);

/* Walker identities for osp_prof__cfi_enter: one per registered thread slot. */
#define OSP_CFI_WALKERS 1024 /* == OSP_PROF_NSLOTS, checked in prof_handler.c */

/* The published set and whether membarrier(2) is registered (prof_cfi.c): one cache
 * line, read by every walk. Internal to osp_prof__cfi_enter/leave and prof_cfi.c. */
struct osp_cfi_pub {
    _Atomic(struct osp_cfi_set *) set;
    _Atomic bool membarrier;
};
OSP_PROF_HIDDEN extern struct osp_cfi_pub osp_prof__cfi_pub;
/* Walks in progress per walker id, one cache line each (no two threads write a line). */
struct osp_cfi_walker {
    _Atomic unsigned long depth;
    char pad[64 - sizeof(unsigned long)];
};
OSP_PROF_HIDDEN extern struct osp_cfi_walker osp_prof__cfi_walkers[OSP_CFI_WALKERS];

/*
 * The sampling handler's way in (docs/profiler-runtime.md "The unwinder"): as
 * osp_prof__cfi_acquire, for a walker id `walker` < OSP_CFI_WALKERS that only the calling
 * thread uses (its registry slot index; a signal handler interrupting a walk of the same
 * thread with the same id is fine). Costs one acquire load of the published set and a
 * plain store to the walker's own cache line, no read-modify-write and no shared line
 * written: the refresh side pairs it with membarrier(2) (see prof_cfi.c). Where the
 * kernel has no MEMBARRIER_CMD_PRIVATE_EXPEDITED the walker fences itself (still no
 * shared line). Inline, async-signal-safe; leave with osp_prof__cfi_leave(walker). An id
 * out of range falls back to osp_prof__cfi_acquire/release.
 *
 * The increment is a load and a store, not a read-modify-write: the word is this
 * thread's, and a signal handler that interrupts between the two leaves it as it found
 * it.
 */
static inline const struct osp_cfi_set *osp_prof__cfi_enter(size_t walker) {
    if (walker >= OSP_CFI_WALKERS) return osp_prof__cfi_acquire();
    _Atomic unsigned long *d = &osp_prof__cfi_walkers[walker].depth;
    atomic_store_explicit(d, atomic_load_explicit(d, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (atomic_load_explicit(&osp_prof__cfi_pub.membarrier, memory_order_relaxed))
        atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the order */
    else
        atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(&osp_prof__cfi_pub.set, memory_order_acquire);
}

static inline void osp_prof__cfi_leave(size_t walker) {
    if (walker >= OSP_CFI_WALKERS) {
        osp_prof__cfi_release();
        return;
    }
    _Atomic unsigned long *d = &osp_prof__cfi_walkers[walker].depth;
    /* release: the walk's reads of the set happen before the refresh side sees 0 */
    atomic_store_explicit(d, atomic_load_explicit(d, memory_order_relaxed) - 1,
                          memory_order_release);
}

/* Forget walks of walker `walker` left entered: a thread cancelled asynchronously inside
 * one (the SIGPROF handler does not disable cancellation: two calls into the C library
 * per sample) never left it. Called by the walker's own thread when it releases its
 * registry slot, with SIGPROF blocked (no walk of it can be running), before the slot
 * (and so the id) can pass to another thread. */
static inline void osp_prof__cfi_walker_reset(size_t walker) {
    if (walker < OSP_CFI_WALKERS)
        atomic_store_explicit(&osp_prof__cfi_walkers[walker].depth, 0, memory_order_release);
}

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

#if defined(__x86_64__)
/* Whether `ret`, a return address, lies where the set's fast-path map vouches that the
 * calling function keeps the frame chain at its calls (OSP_CFI_FPMAP_RET): its frame
 * record is then its own, and the record's return address names its caller for certain.
 * False without a set or a map for the image. x86-64; async-signal-safe. */
OSP_PROF_HIDDEN bool osp_prof__keeps_chain(const struct osp_cfi_set *set, uintptr_t ret);

/*
 * osp_prof__hybrid_walk over a copy of the stack (the perf_event engine's ring delivery,
 * docs/profiler-runtime.md "Sampling engines"): the walk is that of osp_prof__hybrid_walk
 * for a stack whose bytes [lo, hi) are readable at [lo + d, hi + d) instead (a buffer the
 * kernel filled with the thread's stack at the sample; `d` = buffer - lo). Registers,
 * bounds and frames are the stack's own addresses; code is read where it is mapped (only
 * for a signal trampoline's check). Same result as osp_prof__hybrid_walk; d = 0 is it.
 */
OSP_PROF_HIDDEN size_t osp_prof__hybrid_walk_copy(const struct osp_cfi_set *set,
                                                  const struct osp_unwind_regs *r, uintptr_t lo,
                                                  uintptr_t hi, intptr_t d, uintptr_t *out,
                                                  size_t cap, bool *truncated,
                                                  struct osp_unwind_info *info);
#endif

/*
 * The SIGPROF handler's walk, as prof_handler.c takes it for a sample (and as
 * bench/unwind_cost.c measures it): enter the published set as walker `walker` (the
 * thread's registry slot index, see osp_prof__cfi_enter), osp_prof__hybrid_walk, leave.
 * Same arguments and result as osp_prof__hybrid_walk. Async-signal-safe.
 */
static inline size_t osp_prof__sample_walk(size_t walker, const struct osp_unwind_regs *r,
                                           uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t cap,
                                           bool *truncated, struct osp_unwind_info *info) {
    const struct osp_cfi_set *set = osp_prof__cfi_enter(walker);
    size_t n = osp_prof__hybrid_walk(set, r, lo, hi, out, cap, truncated, info);
    osp_prof__cfi_leave(walker);
    return n;
}

/* Copies the n bytes at address `a` of this process (code or data of a loaded image) into
 * `dst`. On a thread with a probe pipe (osp_prof__image_probe_set: the sampler thread,
 * which walks blocked threads' stacks and ring samples' copies, where stale words name
 * images that may have been dlclose'd since the published set was built) the bytes go
 * through the pipe: write(2) reads them in the kernel, an unmapped page is EFAULT there,
 * and the answer is false (`dst` unspecified) instead of a SIGSEGV; copies are cached by
 * address until the published set changes. Elsewhere (a signal handler walking its own
 * thread) the bytes are read directly. Async-signal-safe; keeps errno. */
OSP_PROF_HIDDEN bool osp_prof__image_bytes(uintptr_t a, void *dst, size_t n);

/* Gives the calling thread the probe pipe osp_prof__image_bytes copies through: the read
 * and write ends of a pipe the caller made (non-blocking, close-on-exec), or -1, -1 to
 * take it away (the caller closes the descriptors). Also empties the copy cache. */
OSP_PROF_HIDDEN void osp_prof__image_probe_set(int rfd, int wfd);

/* Whether the bytes at `pc` are the x86-64 sigreturn trampoline (`mov $15,%eax; syscall`
 * in either encoding glibc and musl use). `pc` points into an executable segment of `img`
 * (as the set knows it; read with osp_prof__image_bytes, so an unmapped one is "no"); the
 * check stays inside that segment. Async-signal-safe. */
OSP_PROF_HIDDEN bool osp_prof__is_sigreturn(const struct osp_cfi_image *img, uintptr_t pc);

#endif /* OSP_PROF_CFI_H */
