/*
 * osprey_rt.h — the runtime ABI that generated Osprey code calls.
 *
 * Source: ../shared/spec/LANGUAGE.md §14 (runtime ABI), §8 (rendering), §11 (fibers,
 * sleep), §13 (testing). Codegen declares these functions with exactly these
 * signatures; change both sides together and update LANGUAGE.md §14 naming if a name
 * changes.
 *
 * Memory: every `const char *` or pointer returned by the runtime lives on the Osprey
 * heap (osp_gc_alloc) and is never freed by the caller. Strings are NUL-terminated
 * UTF-8 byte strings; lengths count bytes.
 *
 * Linking: a program links `libosprey_rt.a -lgc -lpthread -lm` (in that order; -lgc is
 * Boehm GC, the Osprey heap). See docs/runtime.md.
 *
 * Values: int is int64_t, float is double, bool is bool (i1 in IR), string is
 * `const char *`, Unit is the word 0, fiber/channel handles are int64_t ids, every
 * other value is a pointer to a heap block. Values crossing threads are boxed into one
 * osp_word (pointers as integers, doubles bit-cast, bools 0/1).
 */
#ifndef OSPREY_RT_H
#define OSPREY_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One boxed 64-bit value (LANGUAGE.md §14.3). */
typedef uint64_t osp_word;

/*
 * A Result value (LANGUAGE.md §4): Success { value } or Error { message }. Heap block
 * created by osp_result_ok / osp_result_err; immutable after creation.
 */
typedef struct osp_result {
    int64_t tag;         /* 0 = Success, 1 = Error */
    osp_word value;      /* Success payload, boxed; 0 for Error */
    const char *message; /* Error message; NULL renders as bare `Error` */
} osp_result;

enum { OSP_RESULT_SUCCESS = 0, OSP_RESULT_ERROR = 1 };

/* ---- program start (§14.1) ------------------------------------------------------- */

/*
 * Initialise the runtime (heap, stdout stream, fiber table) and boot the profiler
 * (osp_prof_boot). Called first by the generated C entry point `main`. Idempotent.
 */
void osp_rt_start(int argc, char **argv);

/* ---- heap (§14.3) ------------------------------------------------------------------ */

/*
 * Allocate `size` bytes of zeroed Osprey heap memory, aligned to 16 bytes. Never
 * returns NULL: on exhaustion prints `fatal: out of memory` to stderr and exits 1.
 * The memory is never freed by the caller.
 */
void *osp_gc_alloc(size_t size);

/* ---- printing and rendering (§8) ----------------------------------------------------- */

/*
 * Write `s` followed by "\n" to the program's one buffered stdout stream, as a single
 * unit (lines from concurrent fibers never interleave within a line). Flushed at exit.
 */
void osp_print_line(const char *s);

/*
 * Write out everything buffered in the stdout stream now (added by the runtime; not
 * needed by generated code, which relies on the flush at exit). Use it before handing
 * fd 1 to other code: fork, exec, a foreign call that writes to fd 1 [T3].
 */
void osp_stdout_flush(void);

/* Renderings of §8. Each returns a new heap string. */
const char *osp_show_int(int64_t v);   /* decimal, e.g. "-42" */
const char *osp_show_float(double v);  /* shortest %.10g..%.17g that round-trips, ".0" rule */
const char *osp_show_bool(bool v);     /* "true" / "false" */

/*
 * Render a Result: Error → "Error(<message>)" (or "Error" when message is NULL);
 * Success → "Success(<payload>)", or just `payload` when `bare` is true (the test
 * rendering of §13.1). `payload` is the rendering of r->value, computed by the caller
 * only when r is a Success (it may be NULL for an Error).
 */
const char *osp_show_result(const osp_result *r, const char *payload, bool bare);

/* Concatenate two strings into a new heap string. */
const char *osp_str_cat(const char *a, const char *b);

/* Concatenate `n` strings (`parts[0..n)`) into one new heap string (interpolation). */
const char *osp_str_concat(int64_t n, const char *const *parts);

/* Byte-wise comparison: negative, 0 or positive, as strcmp. */
int64_t osp_str_cmp(const char *a, const char *b);

/* ---- results (§6) -------------------------------------------------------------------- */

/* New Success holding the boxed `value`. */
osp_result *osp_result_ok(osp_word value);

/* New Error with `message` (not copied; must be a heap or static string). */
osp_result *osp_result_err(const char *message);

/* ---- fibers and sleep (§11, §14.5) --------------------------------------------------- */

/* Signature of a generated fiber thunk: evaluates the spawned expression, boxed. */
typedef osp_word (*osp_thunk_fn)(void *env);

/*
 * Start a fiber: one new OS thread that registers with the profiler as
 * (id, "fiber"), copies the spawner's effect-handler stack, runs `thunk(env)`,
 * unregisters, then publishes the result. Returns the fiber id (ids start at 1 and are
 * shared with channels; never reused). `env` is owned by the fiber from now on.
 * On thread-creation failure prints `fatal: cannot start fiber: <error>` and exits 1.
 */
int64_t osp_fiber_spawn(osp_thunk_fn thunk, void *env);

/*
 * Block until fiber `id` finishes and return its boxed result (the same value on
 * every call). The wait is a profiler blocking region. An id that is not a fiber
 * prints `fatal: await of unknown fiber <id>` to stderr and exits 1.
 */
osp_word osp_fiber_wait(int64_t id);

/* fiberDone: 1 finished, 0 still running, -1 unknown id. Never blocks. */
int64_t osp_fiber_state(int64_t id);

/* Offer the processor to other threads (sched_yield). */
void osp_fiber_yield(void);

/*
 * Sleep at least `ms` milliseconds to an absolute CLOCK_MONOTONIC deadline, resuming
 * after EINTR; ms <= 0 returns at once. A profiler blocking region.
 */
void osp_sleep_ms(int64_t ms);

/* ---- runtime failures (§2) ------------------------------------------------------------ */

/* Print `fatal: no match arm matched (<file>:<line>)` to stderr and exit 1. */
_Noreturn void osp_fatal_no_match(const char *file, int64_t line);

/* ---- testing framework (§13) ---------------------------------------------------------- */

/*
 * Begin test case `name`. Returns 1 if the body should run now; 0 if it must not run:
 * filtered out by OSPREY_TEST_FILTER (prints nothing, not numbered) or nested inside a
 * running case (prints the `# nested test '<name>' skipped: ...` line and fails the
 * outer case).
 */
int osp_tap_case_begin(const char *name);

/*
 * One assertion. `label` NULL means an expect-style assertion. On failure prints
 * `# check '<label>' failed: expected <E>, got <A>` or `# expect failed: expected <E>,
 * got <A>` at once and fails the running case (or, outside any case, marks the run
 * as failed without changing counts). `expected`/`actual` are test renderings.
 */
void osp_tap_check(const char *label, bool ok, const char *expected, const char *actual);

/* Verdict returned by the case body [T2]: 0 Pass, 1 Fail(reason), 2 Skip(reason). */
enum { OSP_VERDICT_PASS = 0, OSP_VERDICT_FAIL = 1, OSP_VERDICT_SKIP = 2 };
void osp_tap_verdict(int64_t kind, const char *reason);

/* End the running case: prints its `ok` / `not ok` line (with `# SKIP` when skipped). */
void osp_tap_case_end(void);

/*
 * Print the plan `1..<N>` and `# tests=.. passed=.. failed=.. skipped=..` and return
 * the exit status: 1 if any case or any assertion outside a case failed, else 0.
 */
int osp_tap_finish(void);

#ifdef __cplusplus
}
#endif

#endif /* OSPREY_RT_H */
