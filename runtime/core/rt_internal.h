/*
 * rt_internal.h — declarations shared by the runtime/core sources (not part of the ABI
 * that generated code calls; see osprey_rt.h for that). Unit tests in test/runtime/core
 * include it to reach the stream and the handle table directly.
 *
 * Source: docs/spec/language.md §8 (one stdout stream), §11 (shared id counter),
 * §2 and §14 (runtime failures); docs/runtime.md describes the behaviour.
 *
 * Start-up layering, one way only: stream.c (the stdout stream, last words on stderr,
 * the serialised process exit) calls nothing in crash.c or start.c; crash.c (fatal
 * signals) calls only the stream; start.c (program start, heap, fatal exits) calls both.
 */
#ifndef OSP_RT_INTERNAL_H
#define OSP_RT_INTERNAL_H

/* Boehm GC with thread support; thread calls are made explicitly (GC_pthread_create),
 * never through macro redirection, so it is clear where threads are created. */
#ifndef GC_THREADS
#define GC_THREADS 1
#endif
#ifndef GC_NO_THREAD_REDIRECTS
#define GC_NO_THREAD_REDIRECTS 1
#endif
#include <gc/gc.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osprey_rt.h"

/* ---- heap ------------------------------------------------------------------------- */

/*
 * Initialise the Boehm collector once (fork handling on, warnings silenced, foreign
 * threads allowed to register). Called lazily by every allocating entry point (not by
 * osp_rt_start: a program that never allocates never starts the collector). Must first run
 * on the main thread.
 */
void osp_rt_heap_init(void);

/*
 * Copy `n` bytes of `s` into a new NUL-terminated string on the Osprey heap (pointer-free
 * memory, never freed by the caller). Exits with `fatal: out of memory` on exhaustion.
 */
char *osp_str_dup_n(const char *s, size_t n);
/*
 * A thread's free lists of small heap objects (see osp_gc_alloc in start.c): free_list[g]
 * holds cleared objects of g 16-byte granules, linked through their first word. It must
 * live where the collector scans it for the thread's whole life (static data, or a field
 * of a heap record that stays reachable, like the fiber's), and is private to its thread.
 */
enum { OSP_HEAP_CACHE_CLASSES = 33 }; /* objects up to 511 bytes (a full map node is 272) */
typedef struct osp_heap_cache {
    void *free_list[OSP_HEAP_CACHE_CLASSES];
    void *spare[2]; /* the last large block given back (osp_gc_free), [1] pointer-free */
} osp_heap_cache;

/* Make `c` (cleared here) the calling thread's cache; osp_rt_start does this for the main
 * thread, osp_fiber_entry and the continuation threads' entry for theirs. */
void osp_heap_thread_begin(osp_heap_cache *c);
/* Stop using the calling thread's cache and empty it (its objects become garbage); later
 * allocations of this thread take the collector's general path. */
void osp_heap_thread_end(void);

/* `size` bytes of pointer-free Osprey heap (GC_MALLOC_ATOMIC: never scanned, not cleared),
 * for string bytes; starts the collector first if needed. Never NULL (out of memory is
 * fatal). */
void *osp_gc_alloc_atomic(size_t size);

/* Give `p` (a large block of the Osprey heap that nothing will ever read again) back: the
 * calling thread keeps the last one of each kind (scanned, pointer-free) as its spare for
 * osp_gc_reuse, and gives the one it kept before to the collector (GC_FREE). */
void osp_gc_free(void *p);
/* The thread's spare block of that kind when it has room for `size` bytes and is at most
 * twice as large (cleared unless `atomic`), else a new block as osp_gc_alloc or
 * osp_gc_alloc_atomic would give. Never NULL. */
void *osp_gc_reuse(size_t size, bool atomic);

/* ---- runtime failures --------------------------------------------------------------- */

/*
 * Flush the stdout stream, write `fatal: <formatted message>\n` to stderr in one write,
 * then exit(1) (atexit handlers run, so the profiler still writes its file). Concurrent
 * fatal exits are serialised: the first one wins, later callers block until the process
 * ends.
 */
_Noreturn void osp_fatalf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* `fatal: out of memory` without allocating. */
_Noreturn void osp_fatal_oom(void);

/* The line osp_fatal_oom writes (also written by stream.c, below start.c's layer). */
#define OSP_OOM_LINE "fatal: out of memory\n"

/*
 * Flush the stdout stream and exit(status), serialised with the fatal exits (used after
 * a message the language prints to stdout, e.g. `unhandled effect: E.op`).
 */
_Noreturn void osp_exit(int status);

/* ---- the stdout stream (docs/spec/language.md §8) ------------------------------------------------ */

/*
 * Write `n` bytes of `s` and then "\n" to the stdout stream as one unit under the stream
 * lock. `s` may contain NUL or newline bytes; nothing is interpreted. Buffered when fd 1
 * is not a terminal (flushed when the 64 KiB buffer fills, at exit, before fatal
 * exits and on fatal signals), written at once when it is a terminal. A write error
 * other than EINTR/EAGAIN discards further output and is reported at exit
 * (osp_stream_error); EAGAIN waits with poll(2).
 */
void osp_stream_write_line(const char *s, size_t n);

/* printf-style convenience over osp_stream_write_line (the format excludes the "\n"). */
void osp_stream_printf_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Flush the buffer and re-detect whether fd 1 is a terminal (tests call it after
 * dup2 onto fd 1 in a forked child). Also clears the "exit in progress" state.
 */
void osp_stream_rebind(void);

/* Set up the stream once: terminal detection, exit flush (on_exit), fork handlers. */
void osp_stream_init(void);
/* The bytes of the stream's static output buffer, [*lo, *hi): text, never a pointer, so the
 * collector need not scan them as roots (start.c excludes them). */
void osp_stream_buffer_range(void **lo, void **hi);

/*
 * 0 while every write to fd 1 succeeded; else the errno of the first write that failed
 * for good (output after it is discarded). At exit a failure is reported once on stderr,
 * `fatal: cannot write standard output: <strerror>`, and an exit status of 0 becomes 1
 * (glibc: on_exit sees the status; elsewhere the message only). Cleared by
 * osp_stream_rebind.
 */
int osp_stream_error(void);

/*
 * For the fatal-signal handler (crash.c), async-signal-safe: write the buffered output
 * to fd 1 with write(2). Waits up to about 100 ms for the stream lock (trylock and
 * nanosleep) unless the calling thread holds it, then writes the buffer as it is.
 */
void osp_stream_emergency_flush(void);

/* Write s[0..n) to fd, retrying short writes and EINTR; gives up silently on any other
 * error (used for last words on stderr). Only write(2): async-signal-safe. */
void osp_write_all_fd(int fd, const char *s, size_t n);

/*
 * The one way the runtime ends the process on purpose: flush the stdout stream, write
 * line[0..n) to stderr (nothing when n is 0; `line` is not owned), then exit(status), so
 * atexit handlers run and the profiler still writes its file. Serialised: the first caller
 * wins and later callers block until the process is gone. Used by osp_fatalf,
 * osp_fatal_oom and osp_exit (start.c) and by the stream itself.
 */
_Noreturn void osp_stream_exit(const char *line, size_t n, int status);

/* ---- fatal signals (crash.c) ------------------------------------------------------------- */

/* 1 when a sanitizer runtime owns the fatal signals (ASan, TSan, UBSan, MSan, HWASan):
 * the runtime then installs no handler and no alternate stack. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||   \
    __has_feature(memory_sanitizer) || __has_feature(hwaddress_sanitizer) || \
    __has_feature(undefined_behavior_sanitizer)
#define OSP_RT_SANITIZED 1
#endif
#endif
#if !defined(OSP_RT_SANITIZED) && (defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__))
#define OSP_RT_SANITIZED 1
#endif
#ifndef OSP_RT_SANITIZED
#define OSP_RT_SANITIZED 0
#endif

/*
 * Called once by osp_rt_start on the main thread: give it an alternate signal stack
 * (64 KiB, malloc'd, kept for the process) and install the handler for SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL and SIGABRT (SA_ONSTACK; a signal whose action is not SIG_DFL is left
 * alone). The handler writes the stdout buffer, prints `fatal: stack overflow` when a
 * SIGSEGV/SIGBUS fault address lies in the thread's stack guard area, then restores the
 * default action and re-raises: the process dies of the signal (status 128 + N). Does
 * nothing in sanitizer builds (OSP_RT_SANITIZED).
 */
void osp_crash_init(void);

/*
 * At the entry of a thread the runtime created (fiber, effect continuation): record the
 * thread's stack guard area and give it an alternate signal stack. Pair with
 * osp_crash_thread_end before the entry function returns (it disables and frees the
 * alternate stack). No-ops in sanitizer builds.
 */
void osp_crash_thread_begin(void);
void osp_crash_thread_end(void);

/* Whether osp_crash_init installs handlers in this build (!OSP_RT_SANITIZED; tests). */
bool osp_crash_handlers_enabled(void);

/* ---- lists (list.c) ------------------------------------------------------------------------ */

/* The words of `xs` in order, in its backing array (never changed: views are immutable and a
 * backing only grows past its last written slot); NULL for an empty list. An interior
 * pointer: it keeps the backing alive while it is reachable. (toGpu shares them: gpu.c.) */
const osp_word *osp_list_words(const osp_list *xs);

/* ---- maps (map.c) ------------------------------------------------------------------------- */

/* The 32-bit FNV-1a hash of `key`'s bytes up to its NUL, the hash whose 5-bit chunks order a
 * map's keys (docs/spec/language.md §9.5). Pure; async-signal-safe. */
uint32_t osp_map_hash(const char *key);

/* ---- handle ids shared by fibers and channels (docs/spec/language.md §11.1, §11.3) --------------- */

enum { OSP_HANDLE_FIBER = 1, OSP_HANDLE_CHANNEL = 2 };

/*
 * Take the next id from the one process-wide counter (starting at 1, never reused) and
 * record `object` (an Osprey-heap pointer; the table keeps it alive for the life of the
 * process) under it with `kind`. Thread-safe. Returns the id.
 */
int64_t osp_handle_register(int kind, void *object);

/* The object registered under `id` if it has `kind`, else NULL (unknown id or other kind). */
void *osp_handle_lookup(int64_t id, int kind);

/* ---- fibers --------------------------------------------------------------------------- */

/* Guard area below the stack of every fiber and effect-continuation thread (bytes). */
#define OSP_THREAD_GUARD ((size_t)64 << 10)

/* Id of the fiber running on the calling thread; 0 on the main thread or a foreign one. */
int64_t osp_fiber_current_id(void);

/*
 * Start a fiber on its own thread whatever the fiber mode (deterministic mode, §11.4, only
 * queues what `spawn` starts): the thread registers with the profiler as (id, "fiber"),
 * runs thunk(env) with a copy of the caller's effect handlers, like osp_fiber_spawn. For
 * runtime services that must run in the background (the HTTP server of httpListen, §9.7).
 * Returns the fiber id (taken from the shared counter), or -1 when no thread could be
 * created (the id is used up; awaiting it returns 0).
 */
int64_t osp_fiber_spawn_thread(osp_thunk_fn thunk, void *env);

/* ---- processes (process.c) ----------------------------------------------------------------- */

/*
 * The delivery gate of docs/spec/language.md §16.8: a process's callbacks run only while the
 * thread that spawned it waits inside the runtime. Every blocking wait that user code can
 * reach (await, sleep, channel put/take, awaitProcess) brackets itself with
 * osp_gate_block_begin/end; block_end waits for callbacks in progress. No-ops on a thread
 * that never spawned a process. osp_gate_thread_end opens the gate for good when a fiber's
 * computation has ended.
 */
typedef struct osp_gate osp_gate;
void osp_gate_block_begin(void);
void osp_gate_block_end(void);
void osp_gate_thread_end(void);

/* ---- effect handlers and continuations (effects.c) ---------------------------------------- */

/*
 * Make `*slot` the calling thread's handler-stack top. A thread started by the runtime
 * passes a variable of its entry function (so the collector sees the stack while the
 * thread lives); other threads get a process-lifetime cell on first use.
 */
void osp_eff_bind_slot(osp_eff_entry **slot);
/* The slot last bound with osp_eff_bind_slot on this thread (NULL if none yet), so a caller
 * that runs another computation on this thread can restore it. */
osp_eff_entry **osp_eff_bound_slot(void);

/*
 * Where osp_thread_abandon jumps to: a `jmp_buf *` in the entry function of a fiber or
 * continuation thread (NULL when the entry function returns).
 */
void osp_thread_set_unwind(void *jb);
/* The `jmp_buf *` last set with osp_thread_set_unwind on this thread (NULL if none). */
void *osp_thread_get_unwind(void);

/*
 * Leave the calling thread's computation because a resuming handler abandoned it:
 * longjmp(1) to the thread's entry function, which unregisters from the profiler and
 * reports the exit (a fiber ends as abandoned). On a thread without an entry point (the
 * main thread) this is an internal error (fatal exit).
 */
_Noreturn void osp_thread_abandon(void);

#endif /* OSP_RT_INTERNAL_H */
