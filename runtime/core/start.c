/*
 * Program start, the Osprey heap, and runtime failures (docs/spec/language.md §2, §14.1, §14.3).
 *
 * The top of runtime/core's start-up layering (see rt_internal.h): this file calls into
 * the stream (stream.c) and the fatal-signal handlers (crash.c); neither calls back here.
 */
#include "rt_internal.h"
#include "osp_prof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- heap ---------------------------------------------------------------------------- */

static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

static void heap_init_once(void) {
    /* Programs may fork (tests do; T3 processes will): let the collector install its
     * pthread_atfork handlers so a child can keep allocating. Must precede GC_INIT. */
    GC_set_handle_fork(1);
    GC_INIT();
    /* Collector warnings ("repeated allocation of very large block", ...) are not the
     * program's output; keep the program's stderr clean. */
    GC_set_warn_proc(GC_ignore_warn_proc);
    /* Threads not created by the runtime (foreign code, T3) may register themselves. */
    GC_allow_register_threads();
}

void osp_rt_heap_init(void) {
    pthread_once(&heap_once, heap_init_once);
}

void *osp_gc_alloc(size_t size) {
    osp_rt_heap_init();
    /* GC_MALLOC returns cleared memory, aligned to the 16-byte granule on 64-bit. */
    void *p = GC_MALLOC(size ? size : 1);
    if (p == NULL) osp_fatal_oom();
    return p;
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
    osp_rt_heap_init();
    osp_stream_init();
    osp_crash_init(); /* after GC_INIT: the collector has set up its own signals */
}

void osp_rt_start(int argc, char **argv) {
    (void)argc;
    (void)argv;
    pthread_once(&start_once, start_once_fn);
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
