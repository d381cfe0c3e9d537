/*
 * Program start, the Osprey heap, and runtime failures (docs/spec/language.md §2, §14.1, §14.3).
 *
 * The top of runtime/core's start-up layering (see rt_internal.h): this file calls into
 * the stream (stream.c) and the fatal-signal handlers (crash.c); neither calls back here.
 */
#include "rt_internal.h"
#include "osp_prof.h"

#include <gc/gc_inline.h>
#include <gc/gc_mark.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- heap ---------------------------------------------------------------------------- */

enum { OSP_MIN_HEAP_BYTES = 2 << 20 };

static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

static void heap_init_once(void) {
    /* Programs may fork (tests do; T3 processes will): let the collector install its
     * pthread_atfork handlers so a child can keep allocating. Must precede GC_INIT. */
    GC_set_handle_fork(1);
    GC_INIT();
    /* Start the collector's parallel marker threads now rather than at the first spawn (where
     * the collector would start them from inside GC_pthread_create), so they are created
     * here and labelled "gc" in profiles (§(l.2)) — also when libgc is linked statically and
     * their start routine is in the executable, where nothing else tells them apart. */
    osp_prof_label_created_threads("gc");
    GC_start_mark_threads();
    osp_prof_label_created_threads(NULL);
    /* Start with a 2 MiB heap unless GC_INITIAL_HEAP_SIZE says otherwise: the collector's
     * default (a few hundred KiB) makes a program that allocates steadily collect every
     * ~100 KiB, paying the fixed cost of a collection (roots, block headers) thousands of
     * times a second. Pages are touched only as they are allocated. */
    if (getenv("GC_INITIAL_HEAP_SIZE") == NULL && GC_get_heap_size() < OSP_MIN_HEAP_BYTES)
        GC_expand_hp(OSP_MIN_HEAP_BYTES - GC_get_heap_size());
    /* Every collection scans the program's static data for pointers; the stream's 64 KiB
     * output buffer holds only text, and scanning it made up a good part of the fixed cost
     * of a collection in programs that collect often. */
    void *lo, *hi;
    osp_stream_buffer_range(&lo, &hi);
    GC_exclude_static_roots(lo, hi);
    /* Collector warnings ("repeated allocation of very large block", ...) are not the
     * program's output; keep the program's stderr clean. */
    GC_set_warn_proc(GC_ignore_warn_proc);
    /* Threads not created by the runtime (foreign code, T3) may register themselves. */
    GC_allow_register_threads();
}

void osp_rt_heap_init(void) {
    pthread_once(&heap_once, heap_init_once);
}

/*
 * Small objects come from per-thread free lists, one per size in granules, refilled a heap
 * block at a time with GC_generic_malloc_many (the collector's own inline-allocation
 * scheme, gc_inline.h): taking an object is a thread-local load and two stores, instead of
 * GC_malloc's lookup of the collector's thread-local lists through __tls_get_addr. The lists
 * live in an osp_heap_cache that the collector scans (a static for the main thread, a
 * field of the heap-allocated fiber or continuation record for the others), so the objects
 * waiting on them are never reclaimed; they become garbage when the thread ends.
 * Objects have exactly the size GC_MALLOC would give them and are cleared the same way.
 */
static __thread osp_heap_cache *heap_cache;
static osp_heap_cache main_heap_cache;

void osp_heap_thread_begin(osp_heap_cache *c) {
    memset(c, 0, sizeof *c);
    heap_cache = c;
}

void osp_heap_thread_end(void) {
    osp_heap_cache *c = heap_cache;
    heap_cache = NULL;
    /* The objects still on the lists become garbage even if `c` outlives the thread. */
    if (c) memset(c, 0, sizeof *c);
}

static void *gc_alloc_slow(size_t size) {
    osp_rt_heap_init();
    /* GC_MALLOC returns cleared memory, aligned to the 16-byte granule on 64-bit. */
    void *p = GC_MALLOC(size ? size : 1);
    if (p == NULL) osp_fatal_oom();
    return p;
}

static void *gc_alloc_refill(osp_heap_cache *c, size_t granules) {
    osp_rt_heap_init();
    GC_generic_malloc_many(granules * GC_GRANULE_BYTES, GC_I_NORMAL, &c->free_list[granules]);
    void *p = c->free_list[granules];
    if (p == NULL) osp_fatal_oom();
    c->free_list[granules] = *(void **)p;
    *(void **)p = NULL; /* the link word; the rest is cleared already */
    return p;
}

void *osp_gc_alloc(size_t size) {
    osp_heap_cache *c = heap_cache;
    /* The size class GC_MALLOC uses: one byte more than asked (the collector's default
     * GC_all_interior_pointers mode keeps a pointer just past an object inside it, and
     * scans an object of g granules only up to g * 16 - 1 bytes). */
    size_t granules = (size + 1 + GC_GRANULE_BYTES - 1) / GC_GRANULE_BYTES;
    if (__builtin_expect(c == NULL || granules >= OSP_HEAP_CACHE_CLASSES, 0))
        return gc_alloc_slow(size);
    void *p = c->free_list[granules];
    if (__builtin_expect(p == NULL, 0)) return gc_alloc_refill(c, granules);
    /* The store is atomic so a parallel marker never sees a torn link. */
    __atomic_store_n(&c->free_list[granules], *(void **)p, __ATOMIC_RELAXED);
    *(void **)p = NULL;
    return p;
}

void *osp_gc_alloc_atomic(size_t size) {
    osp_rt_heap_init();
    void *p = GC_MALLOC_ATOMIC(size ? size : 1);
    if (p == NULL) osp_fatal_oom();
    return p;
}

/*
 * A released block is most likely followed by an allocation of the same size (a list
 * rebuilt every round): keeping it as the thread's spare skips both the collector's free
 * and its large-block search, and the block is still in the cache. The spare lives in the
 * thread's heap cache, where the collector sees it, so it is never reclaimed while kept.
 */
void osp_gc_free(void *p) {
    osp_heap_cache *c = heap_cache;
    int kind = GC_get_kind_and_size(p, NULL);
    if (c == NULL || (kind != GC_I_NORMAL && kind != GC_I_PTRFREE)) {
        GC_FREE(p);
        return;
    }
    bool atomic = kind == GC_I_PTRFREE;
    void *old = c->spare[atomic];
    c->spare[atomic] = p;
    if (old) GC_FREE(old);
}

void *osp_gc_reuse(size_t size, bool atomic) {
    osp_heap_cache *c = heap_cache;
    void *p = c ? c->spare[atomic] : NULL;
    if (p) {
        size_t have = GC_size(p);
        if (have >= size && have / 2 <= size) {
            c->spare[atomic] = NULL;
            if (!atomic) memset(p, 0, have); /* as the collector hands out scanned memory */
            return p;
        }
    }
    return atomic ? osp_gc_alloc_atomic(size) : osp_gc_alloc(size);
}

char *osp_str_dup_n(const char *s, size_t n) {
    osp_rt_heap_init();
    if (n == SIZE_MAX) osp_fatal_oom();
    char *p = GC_MALLOC_ATOMIC(n + 1); /* pointer-free: the collector never scans it */
    if (p == NULL) osp_fatal_oom();
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* ---- program start ----------------------------------------------------------------------- */

static pthread_once_t start_once = PTHREAD_ONCE_INIT;

static void start_once_fn(void) {
    /* The collector starts lazily, at the first allocation (osp_gc_alloc and every other
     * entry to the heap call osp_rt_heap_init first): GC_INIT and its marker threads cost
     * about a quarter of a millisecond, which a program that never allocates need not pay.
     * The first allocation always happens on the main thread or in GC_pthread_create
     * called from it (fibers and continuation threads are created through the collector),
     * so the collector still learns the main thread's stack. The crash handlers do not
     * depend on the collector: it installs no handler for their signals (its temporary
     * SIGSEGV probe restores the handler it found). */
    osp_stream_init();
    osp_crash_init();
    /* A profiled program interrupted by SIGINT/SIGTERM/SIGHUP dies through the profiler
     * (which writes its profile first): the stdout buffer is written out there too. */
    osp_prof_set_before_signal_death(osp_stream_emergency_flush);
}

void osp_rt_start(int argc, char **argv) {
    (void)argc;
    (void)argv;
    pthread_once(&start_once, start_once_fn);
    if (heap_cache == NULL) osp_heap_thread_begin(&main_heap_cache);
    osp_prof_boot(); /* idempotent itself; registers this thread as fiber 0 "main" */
}

/* ---- runtime failures ------------------------------------------------------------------- */

/* Flush stdout, print the message, exit(1) — once per process (osp_stream_exit). */
static _Noreturn void fatal_exit(const char *line, size_t n) {
    osp_stream_exit(line, n, 1);
}

void osp_fatalf(const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int body = vsnprintf(small + 7, sizeof small - 8, fmt, ap);
    va_end(ap);
    memcpy(small, "fatal: ", 7);
    if (body < 0) body = 0;
    if ((size_t)body < sizeof small - 8) {
        small[7 + body] = '\n';
        fatal_exit(small, 7 + (size_t)body + 1);
    }
    /* Long message (e.g. a long path): format again into a heap buffer. */
    char *big = malloc((size_t)body + 9);
    if (big == NULL) {
        small[sizeof small - 1] = '\n';
        fatal_exit(small, sizeof small);
    }
    memcpy(big, "fatal: ", 7);
    va_start(ap, fmt);
    vsnprintf(big + 7, (size_t)body + 1, fmt, ap);
    va_end(ap);
    big[7 + body] = '\n';
    fatal_exit(big, 7 + (size_t)body + 1);
}

void osp_exit(int status) {
    osp_stream_exit(NULL, 0, status);
}

void osp_fatal_oom(void) {
    fatal_exit(OSP_OOM_LINE, sizeof OSP_OOM_LINE - 1);
}

void osp_fatal_no_match(const char *file, int64_t line) {
    osp_fatalf("no match arm matched (%s:%lld)", file ? file : "?", (long long)line);
}
