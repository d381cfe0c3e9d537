/*
 * osprey_rt.h — the runtime ABI that generated Osprey code calls.
 *
 * Source: docs/spec/language.md §14 (runtime ABI), §8 (rendering), §11 (fibers,
 * sleep), §13 (testing). Codegen declares these functions with exactly these
 * signatures; change both sides together and update docs/spec/language.md §14 naming if a name
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

/* One boxed 64-bit value (docs/spec/language.md §14.3). */
typedef uint64_t osp_word;

/*
 * A Result value (docs/spec/language.md §4): Success { value } or Error { message }. Heap block
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
const char *osp_show_int(int64_t v);  /* decimal, e.g. "-42" */
const char *osp_show_float(double v); /* shortest %.10g..%.17g that round-trips, ".0" rule */
const char *osp_show_bool(bool v);    /* "true" / "false" */

/*
 * Render a Result: Error → "Error(<message>)" (or "Error" when message is NULL);
 * Success → "Success(<payload>)", or just `payload` when `bare` is true (the test
 * rendering of §13.1). `payload` is the rendering of r->value, computed by the caller
 * only when r is a Success (it may be NULL for an Error).
 */
const char *osp_show_result(const osp_result *r, const char *payload, bool bare);

/* ---- erased values: `any` (§4.1, §8) [T3] ----------------------------------------- */

/* What an erased value is (osp_shape.kind). */
enum {
    OSP_SHAPE_INT = 0,     /* int, fiber or channel handle: word is the int64_t */
    OSP_SHAPE_FLOAT = 1,   /* word is the double's bits */
    OSP_SHAPE_BOOL = 2,    /* word is 0 or 1 */
    OSP_SHAPE_STRING = 3,  /* word is the `const char *` (also an error type's message) */
    OSP_SHAPE_UNIT = 4,    /* word is 0 */
    OSP_SHAPE_SUCCESS = 5, /* a Result's Success: word is the erased payload (`osp_any *`) */
    OSP_SHAPE_ERROR = 6,   /* a Result's Error: word is the message, or 0 for none */
    OSP_SHAPE_RECORD = 7,  /* word is `osp_any *const *`, one erased value per field */
    OSP_SHAPE_VARIANT = 8, /* a union value: word as for a record (unused when nullary) */
    OSP_SHAPE_LIST = 9,    /* word is the list; renders `<list>` */
    OSP_SHAPE_MAP = 10,    /* word is the map; renders `<map>` */
    OSP_SHAPE_GPU = 11,    /* a GPU buffer; renders `<gpu>` */
    OSP_SHAPE_HANDLE = 12  /* anything else (functions, Ptr, HttpResponse); renders `<handle>` */
};

/*
 * The shape descriptor of an erased value: constant data that generated code emits once per
 * shape (records with the same field names share one).
 */
typedef struct osp_shape {
    int64_t kind;              /* OSP_SHAPE_* */
    int64_t nfields;           /* RECORD / VARIANT: number of fields (0 for a nullary variant) */
    const char *name;          /* VARIANT: the variant's name; else NULL */
    const char *const *fields; /* RECORD, named VARIANT: the field names in declaration order
                                * (`0`, `1`, … for a positional record); positional VARIANT:
                                * NULL */
} osp_shape;

/* An erased value (a value of type `any`): a heap box of its shape and one payload word. */
typedef struct osp_any {
    const osp_shape *shape;
    osp_word word; /* see OSP_SHAPE_* */
} osp_any;

/* Box `word` with `shape` into a new erased value. `shape` must outlive it (static data). */
osp_any *osp_any_new(const osp_shape *shape, osp_word word);

/*
 * The rendering of §8 for an erased value, as a new heap string: scalars, strings and Results
 * as in the table, a record `{ f: r, g: r }`, a union value `Eof`, `Num(4)` or
 * `Word { text: hi }`, `<list>`, `<map>`, `<gpu>`, else `<handle>`.
 */
const char *osp_any_show(const osp_any *v);

/* The test rendering (§13.1) of an erased value: as osp_any_show, but an erased Success
 * renders as its bare payload. */
const char *osp_any_show_test(const osp_any *v);

/* The number of fields of an erased record (§7.1), or -1 when `v` is not a record. */
int64_t osp_any_row_size(const osp_any *v);

/* Field `name` of an erased record, or NULL when `v` is not a record or has no such field. */
const osp_any *osp_any_field(const osp_any *v, const char *name);

/* Concatenate two strings into a new heap string. */
const char *osp_str_cat(const char *a, const char *b);

/* Concatenate `n` strings (`parts[0..n)`) into one new heap string (interpolation). */
const char *osp_str_concat(int64_t n, const char *const *parts);

/* Byte-wise comparison: negative, 0 or positive, as strcmp. */
int64_t osp_str_cmp(const char *a, const char *b);

/*
 * A string accumulator of one activation of a tail-recursive function (docs/compiler.md,
 * "Updates in place"): the string it last built, that string's length and the bytes its
 * buffer holds before the NUL. Codegen zeroes one in the function's entry block for each
 * string parameter that is only read and passed on as `p + e` in self tail calls.
 */
typedef struct osp_str_acc {
    char *buf;
    int64_t len;
    int64_t cap;
} osp_str_acc;

/* `a + b` (as osp_str_cat) for such a parameter `a`: when `a` is the string `acc` last built,
 * which nothing else can read, `b` is appended in its buffer, growing it geometrically, so a
 * loop that appends to an accumulator is linear; otherwise a new buffer with room to spare. */
const char *osp_str_append_owned(const char *a, const char *b, osp_str_acc *acc);

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
 * prints `fatal: await of unknown fiber <id>` to stderr and exits 1; a fiber whose
 * computation a resuming effect handler abandoned (it performed into the handler and the
 * arm did not resume it) prints `fatal: fiber <id> was abandoned by an effect handler`.
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

/* ==== Tier 2 / Tier 3 ================================================================== */

/*
 * A Result returned in registers by the fallible built-ins (docs/spec/language.md §9): the same
 * two words generated code keeps a Result in. `tag` is OSP_RESULT_SUCCESS or
 * OSP_RESULT_ERROR; `word` is the boxed Success payload, or the Error message
 * (`const char *` as an integer). Returned by value (two registers on x86-64 and arm64).
 */
typedef struct osp_rres {
    int64_t tag;
    osp_word word;
} osp_rres;

/* ---- numeric and system built-ins (§9.2) ----------------------------------------------- */

/* abs(n): Error `integer overflow` for INT64_MIN (a Result<int, MathError>). */
osp_rres osp_int_abs(int64_t n);
/* checkedAdd / checkedSub / checkedMul: Error `integer overflow` on overflow. */
osp_rres osp_checked_add(int64_t a, int64_t b);
osp_rres osp_checked_sub(int64_t a, int64_t b);
osp_rres osp_checked_mul(int64_t a, int64_t b);
/*
 * input(): one line from stdin without its "\n" (a trailing "\r" is kept), "" at end of
 * input. Reads byte by byte from fd 0 so no input is buffered away from other readers.
 * Any line length; the result is a new heap string. A profiler blocking region.
 */
const char *osp_input(void);
/* random(): a non-negative int from the kernel's CSPRNG (getentropy). */
int64_t osp_random(void);
/* randomBelow(n): uniform in [0, n) without modulo bias; Error
 * `randomBelow: bound must be positive` when n <= 0. */
osp_rres osp_random_below(int64_t n);

/* ---- lists (§9.4) --------------------------------------------------------------------------- */

/*
 * An immutable list of boxed words. Opaque to generated code. Lists share storage: a
 * list is a view (offset, length) of a backing array; appending to the list that ends
 * at the array's high-water mark writes in place when there is room (no other list can
 * see that slot), so building a list by repeated appends is amortised O(1) per element.
 * Every function returns a new list or a shared one; none changes its arguments.
 * All lists live on the Osprey heap.
 */
typedef struct osp_list osp_list;

/*
 * The one part of a list generated code may read directly: the byte offsets of a view's
 * fields and of a backing array's words, for the inlinable bodies of osp_list_length,
 * osp_list_at, osp_list_get and osp_list_drop that codegen/inline_rt.c emits. list.c checks
 * them with static assertions; change both together.
 */
enum {
    OSP_LIST_BACKING_OFFSET = 0,  /* view: backing array (NULL for an empty list) */
    OSP_LIST_START_OFFSET = 8,    /* view: int64 index of its first word in the backing */
    OSP_LIST_LENGTH_OFFSET = 16,  /* view: int64 number of elements */
    OSP_LIST_VIEW_BYTES = 24,     /* size of a view */
    OSP_BACKING_WORDS_OFFSET = 40 /* backing: the words */
};

/* A list of the `n` words at `elems` (copied; `elems` may be NULL when n == 0). */
osp_list *osp_list_new(int64_t n, const osp_word *elems);
/*
 * The same for a list whose elements are never pointers (List<int>, List<float>,
 * List<bool>: codegen knows from the type; n == 0 gives such an empty list). Its backing
 * array, and the backing of every list made from it (listAppend, listPrepend, listConcat,
 * listReverse), is allocated pointer-free once it is large: the collector neither clears
 * nor scans it. Calling this for a list that will hold pointers would let the collector free
 * what they point to.
 */
osp_list *osp_list_new_scalar(int64_t n, const osp_word *elems);
/* Number of elements (listLength, length(xs)). */
int64_t osp_list_length(const osp_list *xs);
/* Element i, unchecked: 0 <= i < length (used by list patterns and forEachList). */
osp_word osp_list_at(const osp_list *xs, int64_t i);
/* listGet(xs, i) and xs[i]: Error `index out of bounds` unless 0 <= i < length. */
osp_rres osp_list_get(const osp_list *xs, int64_t i);
/* The list without its first `k` elements (0 <= k <= length; O(1), shares storage). */
osp_list *osp_list_drop(const osp_list *xs, int64_t k);
osp_list *osp_list_append(const osp_list *xs, osp_word x);         /* listAppend */
osp_list *osp_list_prepend(const osp_list *xs, osp_word x);        /* listPrepend */
osp_list *osp_list_concat(const osp_list *xs, const osp_list *ys); /* listConcat, xs + ys */
osp_list *osp_list_reverse(const osp_list *xs);                    /* listReverse */
/*
 * listContains: how elements compare is `kind`: OSP_EQ_WORD (ints, bools, handles, Unit,
 * and aggregates by identity), OSP_EQ_STRING (by content), OSP_EQ_FLOAT (as doubles:
 * NaN never equal, -0.0 == 0.0).
 */
enum { OSP_EQ_WORD = 0, OSP_EQ_STRING = 1, OSP_EQ_FLOAT = 2 };
bool osp_list_contains(const osp_list *xs, osp_word x, int64_t kind);
/*
 * `xs` will never be read again by anyone (codegen calls this only where it has proved so:
 * codegen/codegen_own.c). If no other view of its backing array was ever made, the array is
 * given back to the collector now (large arrays only) and `xs` becomes empty. Otherwise, and
 * for shared empty lists, nothing happens.
 */
void osp_list_release(osp_list *xs);

/* ---- maps (§9.5) ---------------------------------------------------------------------------- */

/*
 * An immutable map from strings (compared by bytes) to boxed words: a persistent hash array
 * mapped trie over the keys' 32-bit FNV-1a hashes (path copying), so set/get/remove visit
 * O(log32 n) nodes and a map shares structure with the maps it was made from. Keys iterate in
 * the trie's depth-first order (docs/spec/language.md §9.5): by the hash's 5-bit chunks from
 * the least significant end, equal hashes in insertion order among the keys present.
 */
typedef struct osp_map osp_map;

osp_map *osp_map_empty(void); /* Map() */
/* mapSet; {k: v}. A transient `m` (below) is updated in place and returned. */
osp_map *osp_map_set(osp_map *m, const char *key, osp_word v);
/* mapGet(m, k) and m[k]: Error `mapGet: key not found`. */
osp_rres osp_map_get(const osp_map *m, const char *key);
/* mapRemove. A transient `m` is updated in place and returned. */
osp_map *osp_map_remove(osp_map *m, const char *key);
/*
 * A transient copy of `m` (O(1); `m` is not changed): a map with the same entries that
 * osp_map_set and osp_map_remove update in place, reusing what earlier updates of it
 * allocated. Only for a value nothing else can observe between its updates: codegen makes one
 * for the accumulator of a fold whose step uses it linearly (codegen/codegen_own.c) and seals
 * it when the fold ends. Reading it (get, length, keys, ...) is like reading any map.
 */
osp_map *osp_map_transient(const osp_map *m);
/* `m` made persistent again (in place; O(1)): later updates copy as usual. Returns `m`. */
osp_map *osp_map_seal(osp_map *m);
osp_map *osp_map_merge(const osp_map *a, const osp_map *b); /* mapMerge, a + b: b wins */
bool osp_map_contains(const osp_map *m, const char *key);   /* mapContains */
int64_t osp_map_length(const osp_map *m);                   /* mapLength, length(m) */
osp_list *osp_map_keys(const osp_map *m);                   /* keys, in §9.5 order */
osp_list *osp_map_values(const osp_map *m);                 /* values, same order */

/* ---- strings (§9.3) --------------------------------------------------------------------------- */
/* All byte-based; every returned string is a new heap string, one of the arguments, or the
 * rest of one (drop). */

int64_t osp_str_length(const char *s);      /* length, byteLength */
int64_t osp_str_length_long(const char *s); /* the same, remembered per thread for a long s */
bool osp_str_contains(const char *s, const char *needle); /* "" -> true */
bool osp_str_starts_with(const char *s, const char *prefix);
bool osp_str_ends_with(const char *s, const char *suffix);
const char *osp_str_take(const char *s, int64_t n); /* first n bytes, n clamped to [0, len] */
const char *osp_str_drop(const char *s, int64_t n); /* all but the first n bytes, clamped */
const char *osp_str_join(const osp_list *parts, const char *sep); /* parts: List<string> */
osp_list *osp_str_lines(const char *s);   /* split on "\n"; no trailing empty element */
osp_list *osp_str_words(const char *s);   /* runs of ASCII whitespace separate words */
const char *osp_str_upper(const char *s); /* ASCII only */
const char *osp_str_lower(const char *s);
const char *osp_str_trim(const char *s); /* ASCII whitespace: space \t \n \v \f \r */
const char *osp_str_trim_start(const char *s);
const char *osp_str_trim_end(const char *s);
const char *osp_str_reverse(const char *s); /* bytes */
/* Fallible ones; messages as docs/spec/language.md §9.3. */
osp_rres osp_str_index_of(const char *s, const char *needle);          /* Result<int, Error> */
osp_rres osp_str_substring(const char *s, int64_t start, int64_t end); /* Result<string, Error> */
osp_rres osp_str_split(const char *s, const char *sep); /* Result<List<string>, Error> */
osp_rres osp_str_replace(const char *s, const char *needle, const char *rep); /* every occurrence */
osp_rres osp_str_repeat(const char *s, int64_t n);
osp_rres osp_str_pad_start(const char *s, int64_t len, const char *fill);
osp_rres osp_str_pad_end(const char *s, int64_t len, const char *fill);
osp_rres osp_str_parse_int(const char *s); /* [+-]?[0-9]+ that fits an int */
osp_rres osp_str_parse_float(
    const char
        *s); /* decimal with optional fraction/exponent, inf, nan; payload is the double's bits */
osp_rres osp_str_byte_at(const char *s, int64_t i);       /* the byte 0..255 */
osp_rres osp_str_code_point_at(const char *s, int64_t i); /* UTF-8 sequence starting at byte i */
osp_rres osp_code_point_width(int64_t cp);                /* terminal columns: 0, 1 or 2 */
osp_rres osp_from_code_point(int64_t cp);                 /* UTF-8 encoding as a string */
osp_rres osp_str_index(const char *s, int64_t i);         /* s[i]: the byte as a one-byte string */

/* ---- channels (§11.3) --------------------------------------------------------------------------- */

/*
 * Channel(cap): a buffered FIFO of boxed words with room for `cap` values; its id comes
 * from the counter shared with fibers. cap <= 0 prints
 * `fatal: Channel capacity must be positive (got <cap>)` and exits 1.
 */
int64_t osp_chan_new(int64_t cap);
/* send: blocks (a profiler blocking region) while the channel is full. An id that is not
 * a channel prints `fatal: send on unknown channel <id>` and exits 1. */
void osp_chan_put(int64_t id, osp_word v);
/* recv: blocks (a profiler blocking region) while the channel is empty; FIFO order.
 * Unknown id: `fatal: recv on unknown channel <id>`. */
osp_word osp_chan_take(int64_t id);

/* ---- effect handlers (§12, §14.4, §14.6) ----------------------------------------------------------- */

typedef struct osp_cont osp_cont;

/*
 * One entry of a thread's effect-handler stack: the arm of one `handle` for one
 * (effect, operation). Entries are immutable and shared: pushing makes a new entry on
 * top, so copying a stack (spawn) is copying one pointer. The layout is part of the
 * ABI: generated code reads `fn` and `env` of the entry osp_eff_find returns.
 *   - a plain (non-resuming) arm has `fn` = the arm function, called by the performing
 *     thread as `ret fn(void *env, params...)` with the operation's native types;
 *   - a resuming arm has `fn` = NULL, `cont` = its handle and `arm` = its index in the
 *     handle's arm table (the performing thread calls osp_cont_suspend).
 * `effect` is the effect's key: its name, with the type arguments of a generic effect
 * (`Stash<int>`); `op` the operation's name.
 */
typedef struct osp_eff_entry {
    const char *effect;
    const char *op;
    void *fn;
    void *env;
    osp_cont *cont;
    int64_t arm;
    struct osp_eff_entry *below; /* the stack as it was when the handle was entered */
    struct osp_eff_entry *next;  /* the next entry down */
} osp_eff_entry;

/* Push one entry on the calling thread's handler stack (entering `handle`). `below` of
 * every entry pushed by one handle must be the stack before the first push: pass the
 * value osp_eff_top() returned before pushing. */
void osp_eff_push(const char *effect, const char *op, void *fn, void *env, osp_cont *cont,
                  int64_t arm, osp_eff_entry *below);
/* The calling thread's current top entry (NULL when no handler is active). */
osp_eff_entry *osp_eff_top(void);
/* Pop `count` entries (leaving `handle`). */
void osp_eff_pop(int64_t count);
/*
 * The innermost entry for (effect, op) on the calling thread's stack. Keys compare by
 * content. When there is none, prints `unhandled effect: <effect>.<op>` to stdout
 * (docs/spec/language.md §2) and exits 1: it never returns NULL.
 */
osp_eff_entry *osp_eff_find(const char *effect, const char *op);
/*
 * Around a call of a plain arm: while an arm runs, the handler stack is the one outside
 * its handle (`e->below`), so a perform inside the arm reaches the enclosing handlers.
 * osp_eff_arm_enter returns the stack to restore with osp_eff_arm_leave.
 */
osp_eff_entry *osp_eff_arm_enter(const osp_eff_entry *e);
void osp_eff_arm_leave(osp_eff_entry *saved);
/* A snapshot of the calling thread's stack (for spawn), and adopting one as the
 * calling thread's stack (fiber and continuation threads, before their body). */
osp_eff_entry *osp_eff_copy(void);
void osp_eff_adopt(osp_eff_entry *stack);

/* ---- effect continuations (§12.3, §14.6) ------------------------------------------------------------- */

/* One suspended `perform` handed to a resuming arm: the arm's continuation. Lives on
 * the driving thread's stack for the duration of the arm. */
typedef struct osp_cont_k osp_cont_k;

/* A resuming arm: reads its arguments with osp_cont_arg, returns the handle's value
 * (boxed). */
typedef osp_word (*osp_arm_fn)(void *env, osp_cont_k *k);

/*
 * A `handle` with at least one resuming arm, in generated code:
 *     c = osp_cont_new(env, arms, narms);
 *     below = osp_eff_top(); osp_eff_push(...) for every arm (resuming ones with c);
 *     osp_cont_begin(c, body, env);   // the body runs on a new thread with that stack
 *     osp_eff_pop(narms_pushed);
 *     value = osp_cont_drive(c);
 * `arms[i]` is the arm function for arm index i (NULL for plain arms); the table must
 * stay valid while the handle runs (generated code passes a constant).
 */
osp_cont *osp_cont_new(void *env, osp_arm_fn const *arms, int64_t narms);
/*
 * Start the effect-continuation thread: a joinable collector-registered OS thread that
 * adopts the calling thread's current handler stack, registers with the profiler as
 * (-1, "effect"), runs body(env), unregisters, and hands the value to the driver.
 * On thread-creation failure prints `fatal: cannot start effect continuation: <error>`.
 */
void osp_cont_begin(osp_cont *c, osp_thunk_fn body, void *env);
/*
 * The drive loop, on the thread that entered `handle`: wait (a profiler blocking
 * region) for the body to perform a resuming operation of this handle or to finish; run
 * the arm for a perform (osp_arm_fn); if the arm returns without resuming, abandon the
 * suspended body (its thread exits from its blocked perform, unregistering, and is
 * joined) and take the arm's value. Returns the value of the whole `handle`: the body's
 * value, or the outermost arm's. When it returns, the body thread has been joined and
 * the handle is closed (a later perform into it from a fiber skips it).
 */
osp_word osp_cont_drive(osp_cont *c);
/* Argument i (0-based) of the perform `k` stands for. */
osp_word osp_cont_arg(osp_cont_k *k, int64_t i);
/*
 * resume(v): the suspended perform returns `v`; the body runs until it performs again
 * (handled here, nested, by the same handle: handlers are deep) or finishes; returns the
 * body's final value (or the value of a nested arm that abandoned it). A second resume
 * of the same `k` prints `fatal: continuation already resumed (multi-shot resume is not
 * supported)` to stderr and exits 1.
 */
osp_word osp_cont_resume(osp_cont_k *k, osp_word v);
/*
 * resume(v) as the arm's last action (tail position): same result as osp_cont_resume,
 * but the wait for the body's next perform happens in the drive loop the arm returns to,
 * so a body that performs many times does not deepen the driver's stack. The arm must
 * return this function's result immediately.
 */
osp_word osp_cont_resume_tail(osp_cont_k *k, osp_word v);
/*
 * Abandon the perform `k` stands for (what osp_cont_drive does when an arm returns
 * without resuming): its thread leaves the computation and, if it belongs to the
 * handled body, is joined. Idempotent; a no-op after a resume.
 */
void osp_cont_abandon(osp_cont_k *k);
/*
 * Body side of a perform that found a resuming entry `e`: hand `n` boxed arguments to
 * e's handle (performs from several threads are queued and served one at a time) and
 * block (a profiler blocking region) until an arm resumes this perform. Returns NULL
 * and stores the resumed value in *out. If the handle has already finished (a fiber
 * outliving it), returns the next entry for the same (effect, op) further down the
 * stack (never NULL: see osp_eff_find), on which the caller must retry. If the arm
 * abandons the perform, the calling thread leaves the computation: a continuation
 * thread ends (unregistering) and a fiber ends as abandoned; this call does not return.
 * `args` (n words) and `out` (one word) belong to the caller and must stay valid until this
 * returns; generated code puts both in one osp_gc_alloc block rather than in its own
 * frame, so that the performing function can still make tail calls.
 */
osp_eff_entry *osp_cont_suspend(osp_eff_entry *e, const osp_word *args, int64_t n, osp_word *out);

/* ---- files (docs/spec/language.md §9.6) ------------------------------------------------------ */

/* readFile(path): the whole file, up to its first NUL byte. Error message
 * `readFile: <path>: <strerror(errno)>` (e.g. `No such file or directory`, `Is a directory`). */
osp_rres osp_read_file(const char *path);
/* writeFile(path, text): create or truncate (mode 0666 before the umask) and write every byte;
 * Success(bytes written) only if all were written and close succeeded, else
 * `writeFile: <path>: <strerror(errno)>`. */
osp_rres osp_write_file(const char *path, const char *text);

/* ---- processes (docs/spec/language.md §9.6, §16.8) ------------------------------------------- */

/*
 * The callback of spawnProcess: a closure (word 0 its code pointer) of the Osprey type
 * (int, int, string) -> Unit, called as code(closure, id, kind, text) on the process's
 * monitor thread. kind 1 stdout chunk, 2 stderr chunk, 3 exit (text: the status in decimal).
 */
typedef void *osp_closure;
/*
 * spawnProcess(command, onEvent): run `/bin/sh -c command` (stdin inherited, stdout and stderr
 * piped) with a monitor thread that reads both pipes (chunks of at most 1023 bytes, stdout
 * first when both have data), waits for the exit and calls onEvent for each chunk and then
 * once for the exit. Callbacks are delivered only while the spawning thread is blocked in
 * the runtime (awaitProcess, await, sleep, a channel) or after it has finished (§16.8). The
 * monitor registers with the profiler as fiber -2, label `process`. Success(id) with ids from
 * 1 (their own counter); the 1000th spawn, or a pipe/fork/thread failure, is an Error with no
 * message.
 */
osp_rres osp_process_spawn(const char *command, osp_closure on_event);
/* awaitProcess(id): block (a profiler blocking region) until the process has exited and every
 * callback has returned; its exit status, -1 if a signal killed it, -1 for an unknown or
 * cleaned-up id. Awaiting again gives the same value. */
int64_t osp_process_await(int64_t id);
/* cleanupProcess(id): forget the process without killing it (unknown ids are ignored). */
void osp_process_cleanup(int64_t id);

/* ---- HTTP (docs/spec/language.md §9.7; runtime/core/http.c) ---------------------------------- */

/*
 * The built-in record HttpResponse as generated code lays it out: one 64-bit word per field
 * in declaration order (frontend/builtin_types.c declares the record with exactly these
 * fields): `{ status: int, headers: string, contentType: string, streamFd: int,
 * isComplete: bool, partialBody: string }`. Only status, headers and partialBody are used.
 */
typedef struct osp_http_response {
    int64_t status;
    const char *headers;      /* sent verbatim: each line ends with "\r\n" */
    const char *content_type; /* ignored */
    int64_t stream_fd;        /* ignored */
    osp_word is_complete;     /* ignored (a boxed bool) */
    const char *partial_body; /* the body */
} osp_http_response;

/*
 * httpCreateServer(port, address): a server id (servers and clients share one counter from
 * 1; servers must be below 100). Nothing is bound yet. -1 port not in 1–65535, -3 no room.
 */
int64_t osp_http_create_server(int64_t port, const char *address);
/*
 * httpListen(server, handler): bind address:port (dotted IPv4, SO_REUSEADDR), listen and
 * serve in the background on a new fiber (the next fiber/channel id; registered with the
 * profiler as that fiber, label `fiber`; the caller's effect handlers copied). `handler` is a
 * closure (word 0 its code pointer) of the Osprey type (string, string, string, string) ->
 * HttpResponse, called as code(closure, method, target, headers, body) on the server's
 * thread, one request at a time. Bad requests never reach it: 400 (malformed, or any
 * Transfer-Encoding), 413 (head over 32 KiB or request over 1 MiB), 408 (not all there
 * within 5 s), each with a JSON body. Returns 0; -1 unknown server, -7 already listening,
 * -2 socket(), -3 socket option or an address that is not dotted IPv4, -4 bind (port in
 * use), -5 listen, -6 the server thread could not start.
 */
int64_t osp_http_listen(int64_t server, osp_closure handler);
/*
 * httpStopServer(server): stop accepting, let the request in hand finish and wait (a
 * profiler blocking region) for the server's fiber to end; its socket is closed. 0, also for
 * an id in 1–99 that is no listening server; -1 outside 1–99. From the server's own handler:
 * 0 at once, and the server ends after that reply.
 */
int64_t osp_http_stop_server(int64_t server);
/*
 * httpCreateClient(baseUrl, timeoutMs): a client id. `http://host[:port][/...]` (port 80) or
 * `https://` (port 443); only host and port are kept. -2 negative timeout, -4 bad URL.
 * timeoutMs bounds connecting and each wait for data; 0 means no limit.
 */
int64_t osp_http_create_client(const char *base_url, int64_t timeout_ms);
/* httpCloseClient(c): forget the client; 0 (also for an unknown id). */
int64_t osp_http_close_client(int64_t client);
/*
 * httpGet/httpDelete(c, path, headers), httpPost/httpPut(c, path, body, headers): one request
 * on a new connection, in the format of §9.7 (`headers` lines joined by "\r\n", without the
 * last one; a Content-Length only when body is not ""), the reply read until the server
 * closes or the timeout passes without data. The status code, or -1 unknown client,
 * -4 unknown host, -5 cannot connect, -6 send failed, -7 empty reply, -8 no `HTTP/1.x`
 * status line, -11 an https:// client (this runtime has no TLS). Waits are profiler
 * blocking regions.
 */
int64_t osp_http_get(int64_t c, const char *path, const char *headers);
int64_t osp_http_delete(int64_t c, const char *path, const char *headers);
int64_t osp_http_post(int64_t c, const char *path, const char *body, const char *headers);
int64_t osp_http_put(int64_t c, const char *path, const char *body, const char *headers);
/* httpGetResponse(c, path, headers): a GET whose reply is kept: Success(id), the lowest free
 * id in 1–1023 (reused after httpResponseFree); Error (no message) if the request failed
 * (any negative result above) or every id is in use. */
osp_rres osp_http_get_response(int64_t c, const char *path, const char *headers);
/* httpResponseStatus(r): the kept reply's status; -1 for an unknown id. */
int64_t osp_http_response_status(int64_t r);
/* httpResponseBody(r): Success(the bytes after the blank line, `Transfer-Encoding: chunked`
 * decoded); Error for an unknown id, a reply whose head never ended, or a bad chunk size. */
osp_rres osp_http_response_body(int64_t r);
/* httpResponseHeader(r, name): Success(value of the first header line whose name equals
 * `name` ignoring ASCII case, leading blanks dropped); Error if none or an unknown id. */
osp_rres osp_http_response_header(int64_t r, const char *name);
/* httpResponseFree(r): Success(0); Error if unknown or already freed. */
osp_rres osp_http_response_free(int64_t r);

/* ---- JSON (docs/spec/language.md §9.8; runtime/core/json.c) ---------------------------------- */

/* jsonParse(text): Success(document id), the lowest free id in 1–1023, when `text` is exactly
 * one JSON value with only space, tab, CR, LF around it; Error (no message) otherwise or when
 * every id is in use. Nesting deeper than 1000 levels is refused. */
osp_rres osp_json_parse(const char *text);
/* jsonGet(doc, path): Success(the scalar at `path` as text: a string decoded, a number token
 * exactly as written, `true`, `false`, `null`); Error for an array, an object, a missing path
 * or an unknown document. Paths: "" the root, `.` between keys, `[n]` an array index. */
osp_rres osp_json_get(int64_t doc, const char *path);
/* jsonLength(doc, path): elements of an array, members of an object; -1 otherwise. */
int64_t osp_json_length(int64_t doc, const char *path);
/* jsonFree(doc): Success(0); Error if unknown or already freed. */
osp_rres osp_json_free(int64_t doc);

/* ---- GPU buffers, run on the host (docs/spec/language.md §9.9) ------------------------------ */

/*
 * An immutable dense array of words, each an int, a float's bits or a bool (0/1): never a
 * pointer. A new buffer's words are pointer-free heap the collector does not scan; toGpu of
 * a list shares the list's words. Opaque to generated code, which reaches the words through
 * osp_gpu_data. Lives on the Osprey heap.
 */
typedef struct osp_gpu osp_gpu;

/* A new buffer of `n` words (n <= 0: empty), uninitialised: the caller fills every word with
 * osp_gpu_data before the buffer is handed to the program, and may shorten it first with
 * osp_gpu_truncate. Out of memory is fatal. */
osp_gpu *osp_gpu_alloc(int64_t n);
/* The first word of `b` (valid for osp_gpu_length(b) words; never NULL). */
osp_word *osp_gpu_data(osp_gpu *b);
/* Shorten a buffer that is still being built to `n` words (0 <= n <= its length). */
void osp_gpu_truncate(osp_gpu *b, int64_t n);
/* gpuLength(b). */
int64_t osp_gpu_length(const osp_gpu *b);
/* gpuGet(b, i): Success(word i), else Error `gpuGet: index out of bounds`. */
osp_rres osp_gpu_get(const osp_gpu *b, int64_t i);
/* gpuIota(n): 0, 1, ..., n-1; empty for n <= 0. */
osp_gpu *osp_gpu_iota(int64_t n);
/* toGpu(xs) of a List<int>, List<float> or List<bool>: its words in order, shared with the
 * list (no copy: a list's words never change). */
osp_gpu *osp_gpu_from_list(const osp_list *xs);
/* fromGpu(b): a new List of the words in order (a scalar list, see osp_list_new_scalar). */
osp_list *osp_gpu_to_list(const osp_gpu *b);
/* gpuDevice(): "host". */
const char *osp_gpu_device(void);
/* The buffer of the words of `b` whose flag (a word of `flags`, 0 or 1, one per word of
 * `b`) is 1, in order: gpuFilter after its predicate ran. */
osp_gpu *osp_gpu_compact(const osp_gpu *b, const osp_word *flags);

/* One chunk of a GPU combinator: run the kernel on elements [lo, hi) (generated code). */
typedef void (*osp_gpu_chunk_fn)(void *ctx, int64_t lo, int64_t hi);
/*
 * Run `fn(ctx, lo, hi)` over [0, n) in chunks. With `parallel` non-zero and n large enough
 * the chunks run on the calling thread and the runtime's GPU worker threads together (made
 * on first use, one fewer than the online CPUs, at most 15; registered with the profiler as
 * fiber -3 "gpu"); otherwise, and on a worker or while another parallel run is under way,
 * as one call fn(ctx, 0, n) on the calling thread. Returns when every chunk has run.
 * Chunks must be independent: codegen passes `parallel` only for kernels that perform no
 * effect and no I/O (codegen_gpu.c).
 */
void osp_gpu_run(int64_t n, osp_gpu_chunk_fn fn, void *ctx, int64_t parallel);

/* ---- FFI (docs/spec/language.md §3.5, §11.4): C functions under exactly these names ------- */

/* A string returned by an extern, copied at once onto the Osprey heap; NULL gives "". */
const char *osp_str_from_c(const char *s);
/* A new zeroed pointer-sized cell (for C out-parameters `T **`); free it with osprey_ffi_free. */
void *osprey_ffi_cell(void);
/* The pointer stored in `cell`; NULL for a NULL cell. */
void *osprey_ffi_deref(void *cell);
/* Free a cell from osprey_ffi_cell (NULL is ignored); returns 0. */
int64_t osprey_ffi_free(void *cell);
/* NULL. */
void *osprey_ffi_null(void);
/* (void *)-1, SQLite's SQLITE_TRANSIENT. */
void *osprey_ffi_transient(void);
/* 1 for NULL, else 0. */
int64_t osprey_ffi_is_null(void *p);
/*
 * Deterministic fiber mode (§11.4): while on, spawn only queues a fiber and await runs the
 * queued fibers in spawn order on the awaiting thread, up to and including the awaited one;
 * yield does not switch and fiberDone is 1 for every known fiber. Turn it on before the first
 * spawn. Returns 0.
 */
int64_t fiber_set_deterministic_mode(bool enabled);

#ifdef __cplusplus
}
#endif

#endif /* OSPREY_RT_H */
