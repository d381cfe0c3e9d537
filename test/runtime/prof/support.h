/*
 * support.h — helpers shared by the profiler runtime tests: a strict reader of raw profile
 * files (docs/spec/profiler.md §(e)) built on cJSON plus an exact integer scanner for addresses,
 * CPU-burning and naming helpers, and child-process plumbing.
 */
#ifndef PROF_TEST_SUPPORT_H
#define PROF_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "prof_internal.h"

/* 1 in a ThreadSanitizer build: it runs a signal handler at the thread's next
 * interceptor, not where the signal came, so checks of where samples land differ there. */
#ifdef OSP_PROF_UNDER_TSAN
#define RUNNING_UNDER_TSAN 1
#else
#define RUNNING_UNDER_TSAN 0
#endif

struct raw_thread {
    int64_t fiber;
    char label[64];
    int64_t tid;
};

struct raw_image {
    char path[4096];
    uint64_t base, slide, text, text_size;
    char arch[16];
    bool has_symbols;
    size_t nsymbols;
};

struct raw_sample {
    uint64_t t;
    uint32_t row, stack, state;
    uint64_t weight;
};

/* A parsed and validated raw profile. All arrays are owned; free with raw_free. */
struct raw {
    int64_t pid;
    char exe[4096];
    uint32_t rate_hz;
    char platform[32];
    char engine[16]; /* "perf_event", "cpu_timer" or "sampler" (§(l.3)) */
    uint64_t start_unix_ns, end_unix_ns;
    struct raw_image *images;
    size_t nimages;
    struct raw_thread *threads;
    size_t nthreads;
    uint64_t **stacks; /* exact addresses, leaf first */
    uint32_t *stack_len;
    size_t nstacks;
    struct raw_sample *samples;
    size_t nsamples;
    uint64_t dropped, ticks, late_ticks, threads_over_limit;
    uint64_t dropped_reasons[OSP_RAW_DROP_COUNT]; /* indexed by enum osp_raw_drop_reason */
    bool *truncated;                              /* per stack */
    /* "unwind": walks ended at chain_end, root, no_rule, bad_stack, cap; then blocked_reads
     * and blocked_skips */
    uint64_t unwind[OSP_RAW_UNWIND_COUNT + 2];
    /* "profiler_cpu_ns": the profiler's own CPU that no sample carries */
    uint64_t profiler_cpu_ns;
};

/* Load `path` and check every rule of §(e) that a writer must honour: one line, required
 * keys in order then the additional keys in order, types, non-empty stacks, sample rows
 * of exactly 4 integers with indices in range, weights of the same length, dropped =
 * sum of reasons. Fails the current cmocka test on any violation. */
void raw_load(struct raw *r, const char *path);
void raw_free(struct raw *r);

/* Print the engine and every non-zero drop reason of `r`, prefixed by `what`. */
void raw_print_dropped(const struct raw *r, const char *what);
/* Samples lost, not counting waiting ticks of threads blocked in foreign code that had no
 * stack to show because the engine never signals them (no_stack, §(l.3)) nor the CPU time
 * a sample of several periods stands for (cpu_unsampled). */
uint64_t raw_dropped_samples(const struct raw *r);

/* The on-CPU rate `r`'s engine can reach for a requested `hz`: `hz`, except for the
 * cpu_timer engine, whose timers expire at the kernel tick (assumed >= 60 Hz). */
double raw_engine_hz(const struct raw *r, double hz);

/* Waiting samples per second `r`'s engine records for a requested `hz`: `hz` under the
 * sampler engine, 100 (more above 3.2 kHz) beside a kernel timer (osp_prof__tick_ns). */
double raw_wait_hz(const struct raw *r, double hz);

/* Index of the main executable's image (path == exe), failing the test if absent. */
size_t raw_main_image(const struct raw *r);
/* Whether `addr` lies in [text, text + text_size) of image `i`. */
bool raw_in_text(const struct raw *r, size_t i, uint64_t addr);

/* The exported symbol containing `addr` ("" if none), via dladdr. Return addresses are
 * looked up at addr - 1 when `is_return` (every frame but the leaf). */
const char *sym_name(uint64_t addr, bool is_return);
/* Whether stack `k` has a frame that names `fn`. */
bool raw_stack_has(const struct raw *r, uint32_t k, const char *fn);
/* Row index with the given label and fiber id, or -1. */
long raw_row(const struct raw *r, const char *label, int64_t fiber);

/* Burn `seconds` of this thread's CPU time in `hot_loop` (exported, noinline), calling
 * clock_gettime regularly (which also lets ThreadSanitizer deliver signals). */
double burn_cpu(double seconds);
double hot_loop(long iterations);
double thread_cpu_seconds(void);
double mono_seconds(void);

/* A fresh scratch directory under $TMPDIR (or /tmp), removed by scratch_cleanup. */
void scratch_dir(char *out, size_t cap, const char *tag);
void scratch_cleanup(const char *dir);

/* Run `argv` with `env` (NULL-terminated "K=V" list replacing the environment) in `cwd`
 * (NULL: inherit), its stdout going to the file `out_path` (NULL: /dev/null) and its
 * stderr captured into `err` (cap bytes, NUL-terminated). Returns the wait status. */
int run_child(char *const argv[], char *const env[], const char *cwd, const char *out_path,
              char *err, size_t cap);

/* Read a whole small file into `buf` (NUL-terminated); returns its length or -1. */
long read_text(const char *path, char *buf, size_t cap);

/* Look up `name` in the ELF symbol tables of the file `path`: its address as the file
 * describes it (unslid) and size. Returns false if absent. */
bool elf_symbol(const char *path, const char *name, uint64_t *addr, uint64_t *size);

/* Number of threads of this process (entries of /proc/self/task). */
int thread_count(void);
/* Number of this process's threads named "osprey-sampler" (the profiler's sampler).
 * Sanitizer runtimes start threads of their own, so tests count this instead. */
int sampler_count(void);

/* A planted stack: `pages` usable pages [lo, hi) filled with 0xEE between two PROT_NONE
 * guard pages, for walks over hand-written frames (test_unwind, test_cfi). Fails the test
 * when the mapping cannot be made; release with unplant. */
struct planted {
    unsigned char *map;
    size_t map_len;
    uintptr_t lo, hi;
};
void plant(struct planted *p, size_t pages);
void unplant(struct planted *p);

#endif
