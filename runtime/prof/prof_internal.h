/*
 * prof_internal.h — internal interfaces of the sampling profiler runtime, shared by its
 * source files and by its unit tests (test/runtime/prof). Not installed, not part of the
 * runtime ABI: names and shapes may change without notice.
 *
 * Source: docs/spec/profiler.md §(a)–(e), (k); [PROF-COLLECT-*],
 * [PROF-RAW-FORMAT].
 */
#ifndef OSP_PROF_INTERNAL_H
#define OSP_PROF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osp_prof.h"
#include "osp_raw_format.h"

/* 1 where this runtime has a sampler (Linux on x86-64 and arm64), 0 elsewhere: there the
 * inactive stub (prof_stub.c) provides the hooks. docs/spec/profiler.md §(a) "Platforms". */
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define OSP_PROF_SAMPLER 1
#else
#define OSP_PROF_SAMPLER 0
#endif

/* Sanitizer builds (clang's __has_feature, gcc's __SANITIZE_*__): OSP_PROF_UNDER_ASAN and
 * OSP_PROF_UNDER_TSAN are defined to 1 in AddressSanitizer and ThreadSanitizer builds. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OSP_PROF_UNDER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define OSP_PROF_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(OSP_PROF_UNDER_ASAN)
#define OSP_PROF_UNDER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(OSP_PROF_UNDER_TSAN)
#define OSP_PROF_UNDER_TSAN 1
#endif

/* Internal symbols stay out of the dynamic symbol table of libosprey_prof.so. */
#define OSP_PROF_HIDDEN __attribute__((visibility("hidden")))
#define OSP_PROF_PUBLIC __attribute__((visibility("default")))

/* Maximum frames per stack, docs/spec/profiler.md §(c) "depth cap 128". */
#define OSP_PROF_MAX_FRAMES 128
/* Rate limits and default, docs/spec/profiler.md §(a). */
#define OSP_PROF_HZ_MIN     10u
#define OSP_PROF_HZ_MAX     10000u
#define OSP_PROF_HZ_DEFAULT 997u
/* Longest usable absolute output path (bytes, without the NUL), docs/spec/profiler.md §(a). */
#define OSP_PROF_PATH_MAX   4095
/* Label bytes kept per thread row, docs/spec/profiler.md §(d). */
#define OSP_PROF_LABEL_MAX  15

/* ---- frame-pointer walk (prof_unwind.c), docs/spec/profiler.md §(c) ---------------------------- */

/*
 * Walk a frame-pointer chain. `pc` is the precise program counter (frame 0, always
 * recorded), `fp` the frame pointer of the frame executing `pc`, `lr` the link register
 * (arm64; pass 0 on x86-64), `[lo, hi)` the thread's stack bounds (lo = hi = 0: unknown,
 * only pc and lr are recorded). Writes at most `cap` leaf-first addresses to `out`
 * (caller-owned, `cap` >= 1, at most OSP_PROF_MAX_FRAMES is meaningful) and returns how
 * many. `*truncated` is set when the walk stopped only because `cap` frames were recorded
 * while the chain was still valid (§(c) item 5). Never reads outside [lo, hi), never
 * faults, allocates nothing, takes no lock: async-signal-safe.
 */
OSP_PROF_HIDDEN size_t osp_prof__fp_walk(uintptr_t pc, uintptr_t fp, uintptr_t lr, uintptr_t lo,
                                         uintptr_t hi, uintptr_t *out, size_t cap, bool *truncated);

/* Remove pointer-authentication bits: only on Apple arm64 (§(b.4), (k) item 12). */
static inline uintptr_t osp_prof__strip_pac(uintptr_t a) {
#if defined(__APPLE__) && defined(__aarch64__)
    return a & (uintptr_t)0x00007FFFFFFFFFFFull;
#else
    return a;
#endif
}

/* ---- activation (prof_util.c), docs/spec/profiler.md §(a) --------------------------------------- */

/*
 * Called by the _exit interposer of libosprey_prof.so before the real _exit: if this
 * process's session is running, have the sampler thread stop it and write the raw file,
 * and wait for that (at most a few seconds). Returns at once in a forked child, on the
 * sampler thread, or when no session runs. Not async-signal-safe in the waiting, which
 * only sleeps; the write happens on the sampler thread.
 */
OSP_PROF_HIDDEN void osp_prof__exit_now(void);

/*
 * For an exec by this process (the exec interposers of libosprey_prof.so): when its
 * session runs, write "OSPREY_PROFILE=<path>" into `prof` and "OSPREY_PROFILE_HZ=<rate>"
 * into `hz` (`pcap`, `hcap` bytes) and return true, so the program it becomes profiles
 * into the same file; false in a forked child (whose exec is never followed) or without
 * a session.
 */
OSP_PROF_HIDDEN bool osp_prof__exec_follow(char *prof, size_t pcap, char *hz, size_t hcap);

/*
 * Parse OSPREY_PROFILE_HZ. `s` may be NULL (unset). Returns the clamped rate in Hz.
 * Unset or empty: 997. An optional sign followed by decimal digits and nothing else is
 * clamped to [10, 10000] (overflow clamps by sign), and `*clamped` says whether it was.
 * Anything else: 997 and `*invalid` is set. The caller prints the warning for either.
 * Pure function.
 */
OSP_PROF_HIDDEN uint32_t osp_prof__parse_hz(const char *s, bool *invalid, bool *clamped);

/*
 * Write the warning for an invalid OSPREY_PROFILE_HZ value to fd `fd`, exactly
 * `osprey profiler: OSPREY_PROFILE_HZ="<value>" is not an integer; using 997` plus a
 * newline; bytes of `value` that would break the line (control bytes, `"`, `\`) are
 * written as escapes. One write(2) call.
 */
OSP_PROF_HIDDEN void osp_prof__warn_bad_hz(int fd, const char *value);

/*
 * Write the warning for an OSPREY_PROFILE_HZ value outside 10..10000 to fd `fd`, exactly
 * `osprey profiler: OSPREY_PROFILE_HZ="<value>" is out of range 10..10000; using <used>`
 * plus a newline, escaped as osp_prof__warn_bad_hz does. One write(2) call.
 */
OSP_PROF_HIDDEN void osp_prof__warn_hz_range(int fd, const char *value, uint32_t used);

/*
 * Resolve `path` against the current working directory into `out` (`cap` bytes).
 * Returns 0 on success; ENAMETOOLONG when the result needs OSP_PROF_PATH_MAX + 1 bytes or
 * more (§(a): 4096 bytes or more disables profiling); another errno value when the
 * working directory cannot be read.
 */
OSP_PROF_HIDDEN int osp_prof__absolute_path(const char *path, char *out, size_t cap);

/*
 * Copy `label` (NULL means "") into `out` (at least OSP_PROF_LABEL_MAX + 1 bytes), cut to
 * at most 15 bytes without splitting a UTF-8 sequence; NUL-terminated. Returns the length.
 */
OSP_PROF_HIDDEN size_t osp_prof__cut_label(const char *label, char *out);

/* ---- JSON output (prof_util.c), docs/spec/profiler.md §(e) -------------------------------------- */

/*
 * Buffered writer to a file descriptor. Every write(2) is checked; the first failure is
 * kept in `err` (an errno value) and later calls do nothing. `buf` is caller-owned with
 * `cap` bytes. With fd < 0 the writer appends to `buf` only and fails with ENOSPC when
 * it is full (used by tests).
 */
struct osp_prof_out {
    int fd;
    char *buf;
    size_t cap, len;
    int err;
};
OSP_PROF_HIDDEN void osp_prof__out_bytes(struct osp_prof_out *o, const void *p, size_t n);
OSP_PROF_HIDDEN void osp_prof__out_str(struct osp_prof_out *o, const char *s);
OSP_PROF_HIDDEN void osp_prof__out_u64(struct osp_prof_out *o, uint64_t v);
OSP_PROF_HIDDEN void osp_prof__out_i64(struct osp_prof_out *o, int64_t v);
/* A JSON string literal with quotes: `"` `\` escaped, control bytes as \u00XX, bytes that
 * are not valid UTF-8 replaced by U+FFFD. `n` bytes from `s`. */
OSP_PROF_HIDDEN void osp_prof__out_json_string(struct osp_prof_out *o, const char *s, size_t n);
/* Flush the buffer to the fd. Returns 0 or the first error (errno value). */
OSP_PROF_HIDDEN int osp_prof__out_flush(struct osp_prof_out *o);

/* ---- sample store (prof_store.c), docs/spec/profiler.md §(b.5) ---------------------------------- */

/* Reasons a sample is lost, docs/spec/profiler.md §(b.5); the order is the JSON key order
 * (the raw format's enum osp_raw_drop_reason, osp_raw_format.h). */
enum osp_prof_drop {
    OSP_DROP_ALLOC = OSP_RAW_DROP_ALLOC,
    OSP_DROP_NO_ANSWER = OSP_RAW_DROP_NO_ANSWER,
    OSP_DROP_RING_FULL = OSP_RAW_DROP_RING_FULL,
    OSP_DROP_STORE_FULL = OSP_RAW_DROP_STORE_FULL,
    OSP_DROP_THREAD_GONE = OSP_RAW_DROP_THREAD_GONE,
    OSP_DROP_CPU_UNSAMPLED = OSP_RAW_DROP_CPU_UNSAMPLED,
    OSP_DROP_HANDLER_REPLACED = OSP_RAW_DROP_HANDLER_REPLACED,
    OSP_DROP_NO_STACK = OSP_RAW_DROP_NO_STACK,
    OSP_DROP_COUNT = OSP_RAW_DROP_COUNT
};

struct osp_prof_sample {
    uint64_t t_rel_ns; /* time since the session's monotonic start */
    uint64_t weight_ns;
    uint32_t row;
    uint32_t stack; /* index into the interned stacks */
    uint32_t state; /* 0 on-CPU, 1 waiting */
};

struct osp_prof_stack_ref {
    uint64_t off; /* first address in the address arena */
    uint32_t n;   /* number of addresses, >= 1 */
    uint32_t truncated;
};

/* The sampler's store: written by the sampler thread only, read by the writer after the
 * sampler has been joined. Zero-initialise before first use. */
struct osp_prof_store {
    struct osp_prof_sample *samples;
    size_t nsamples, samples_cap, samples_limit; /* limit: the store_full cap */
    struct osp_prof_stack_ref *stacks;
    size_t nstacks, stacks_cap;
    uintptr_t *addrs; /* arena of stack addresses */
    size_t naddrs, addrs_cap;
    uint32_t *table;  /* open addressing: stack index + 1 */
    size_t table_cap; /* power of two, or 0 */
    uint64_t dropped[OSP_DROP_COUNT];
};

/* Default cap on stored samples (at least 4,000,000, §(b.5)). */
#define OSP_PROF_SAMPLES_LIMIT (UINT64_C(1) << 22)

/*
 * Intern a stack of `n` >= 1 addresses (leaf first). Frames after the leaf whose return
 * address lies in the profiler's own code (osp_prof__own_pc: the preload library's
 * thread-start trampoline and wrappers) are left out first, as the stack would be
 * unprofiled. Returns its index, or -1 when memory ran out (nothing recorded; the caller
 * counts `alloc`). `truncated` is ORed into the stack's flag.
 */
OSP_PROF_HIDDEN int64_t osp_prof__store_intern(struct osp_prof_store *s, const uintptr_t *pcs,
                                               uint32_t n, bool truncated);
/*
 * Append a sample. Counts `store_full` or `alloc` itself on failure and returns false.
 */
OSP_PROF_HIDDEN bool osp_prof__store_add(struct osp_prof_store *s, uint64_t t_rel_ns, uint32_t row,
                                         uint32_t stack, uint32_t state, uint64_t weight_ns);
/* Intern and append in one step; counts a loss under exactly one reason on failure. */
OSP_PROF_HIDDEN bool osp_prof__store_record(struct osp_prof_store *s, uint64_t t_rel_ns,
                                            uint32_t row, const uintptr_t *pcs, uint32_t n,
                                            bool truncated, uint32_t state, uint64_t weight_ns);
/* Sort samples by (time, row) for the writer. Allocation-free. */
OSP_PROF_HIDDEN void osp_prof__store_sort(struct osp_prof_store *s);
/* Free everything and zero the store (the cap is kept). */
OSP_PROF_HIDDEN void osp_prof__store_free(struct osp_prof_store *s);

/* ---- images (prof_images.c), docs/spec/profiler.md §(e) "Images" -------------------------------- */

/*
 * Write the JSON array of loaded images (`[...]`, with brackets) to `o`: the main
 * executable under `exe_path`, every shared object, the dynamic loader and the vDSO
 * (`[vdso]`, with its dynamic symbols). Enumerated now, with dl_iterate_phdr; then every
 * image osp_prof__images_note saw during the session that is gone now (dlclose'd) and
 * whose executable range no image written before overlaps. Forgets the noted images.
 */
OSP_PROF_HIDDEN void osp_prof__write_images(struct osp_prof_out *o, const char *exe_path);

/*
 * Remember the images loaded now, if the dynamic linker's list changed since the last
 * call, so that one unloaded before the file is written still names its samples. Called
 * by the sampler thread each tick, at session start and (libosprey_prof.so) before each
 * dlclose. Not async-signal-safe: allocates and takes the loader's lock.
 */
OSP_PROF_HIDDEN void osp_prof__images_note(void);

/* "linux-x86_64" / "linux-arm64" / "" and "x86_64" / "arm64" / "" for this build. */
OSP_PROF_HIDDEN const char *osp_prof__platform(void);
OSP_PROF_HIDDEN const char *osp_prof__arch_of_machine(unsigned machine);

/* ---- session internals exposed to tests (prof_session.c) ------------------------------ */

/* CLOCK_MONOTONIC in ns at the start of the current (or last) session: samples' t_rel_ns
 * are relative to it. 0 before the first session. */
OSP_PROF_HIDDEN uint64_t osp_prof__session_start_mono_ns(void);
/* CLOCK_MONOTONIC now, in ns. */
OSP_PROF_HIDDEN uint64_t osp_prof__mono_ns(void);
/* Whether a session is running (hooks act). */
OSP_PROF_HIDDEN bool osp_prof__active(void);
/* Whether the program has a SIGPROF action of its own: one the session found installed
 * when it started (and chains to), or one it installed since (the handler was replaced).
 * Its threads' SIGPROF mask is then the program's business (§(l.3)). */
OSP_PROF_HIDDEN bool osp_prof__program_takes_sigprof(void);

/* ---- the profiler's own code ------------------------------------------------------------ */

#if OSP_PROF_SAMPLER && defined(__clang__) && defined(__ELF__)
/* The bounds of sections `osp_prof_text` (the profiler's work) and `osp_prof_wrap` (its
 * wrappers of program calls), which hold every function of the profiler's own files
 * (they include prof_own_text.h last), from the linker. */
extern const char __start_osp_prof_text[] __attribute__((weak, visibility("hidden")));
extern const char __stop_osp_prof_text[] __attribute__((weak, visibility("hidden")));
extern const char __start_osp_prof_wrap[] __attribute__((weak, visibility("hidden")));
extern const char __stop_osp_prof_wrap[] __attribute__((weak, visibility("hidden")));
#define OSP_PROF_OWN_TEXT 1
/* A function of a work file that calls the program's code (a chained signal handler):
 * its frame stays under that code's (no tail call), so the time there is the program's. */
#define OSP_PROF_WRAPPER  __attribute__((section("osp_prof_wrap"), noinline, disable_tail_calls))
#else
#define OSP_PROF_OWN_TEXT 0
#define OSP_PROF_WRAPPER
#endif

/* Whether `pc` lies in [lo, hi) (a section's bounds; lo 0: the section is not there). */
static inline bool osp_prof__in_section(const char *lo, const char *hi, uintptr_t pc) {
    uintptr_t a = (uintptr_t)lo, z = (uintptr_t)hi;
    return a != 0 && pc - a < z - a;
}

/* Whether `pc` lies in the profiler's work (section osp_prof_text); false where the
 * section is not made (other compilers and platforms). Async-signal-safe. */
static inline bool osp_prof__work_pc(uintptr_t pc) {
#if OSP_PROF_OWN_TEXT
    return osp_prof__in_section(__start_osp_prof_text, __stop_osp_prof_text, pc);
#else
    (void)pc;
    return false;
#endif
}

/* Whether `pc` lies in one of the profiler's wrappers of program calls (section
 * osp_prof_wrap). Async-signal-safe. */
static inline bool osp_prof__wrap_pc(uintptr_t pc) {
#if OSP_PROF_OWN_TEXT
    return osp_prof__in_section(__start_osp_prof_wrap, __stop_osp_prof_wrap, pc);
#else
    (void)pc;
    return false;
#endif
}

/* Whether `pc` lies in the profiler's own code, work or wrapper. Async-signal-safe. */
static inline bool osp_prof__own_pc(uintptr_t pc) {
    return osp_prof__work_pc(pc) || osp_prof__wrap_pc(pc);
}

/* Whether an on-CPU stack `pcs[0..n)` (leaf first, callers' return addresses after it)
 * is the profiler's own work, whose time is the profiler's ("profiler_cpu_ns") and not a
 * sample of the program: its leaf is in the profiler's code, or the innermost of its
 * frames in that code, among the OSP_PROF_OWN_DEPTH nearest the leaf, is work rather than
 * a wrapper -- the C library's getrusage or
 * clock_gettime under a blocking region's bookkeeping, sched_yield under a region's wait
 * for a sample request (in a tight channel ping-pong those were 15-20 % of the program's
 * on-CPU samples). Below a wrapper (a wait, pthread_create, the program's own SIGPROF
 * handler chained to) the time is the program's. Async-signal-safe. */
#define OSP_PROF_OWN_DEPTH 5
static inline bool osp_prof__own_stack(const uintptr_t *pcs, uint32_t n) {
    if (n == 0) return false;
    if (osp_prof__own_pc(pcs[0])) return true;
    /* The profiler's work calls the C library directly: its frame is within a few of the
     * leaf. Looking no further keeps a walk's wrong outer frames (through code without
     * frame records) from making a program sample the profiler's. */
    uint32_t depth = n < OSP_PROF_OWN_DEPTH ? n : OSP_PROF_OWN_DEPTH;
    for (uint32_t i = 1; i < depth; i++) {
        uintptr_t q = pcs[i] - 1; /* the call */
        if (osp_prof__wrap_pc(q)) return false;
        if (osp_prof__work_pc(q)) return true;
    }
    return false;
}

#endif /* OSP_PROF_INTERNAL_H */
