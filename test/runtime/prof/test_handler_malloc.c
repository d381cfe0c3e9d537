/*
 * test_handler_malloc.c — the SIGPROF handler never enters the allocator, while dlopen and
 * dlclose add and remove images (and so CFI tables) under load (docs/spec/profiler.md
 * §(l.1): no allocation in the handler). This program defines malloc, calloc, realloc,
 * free, aligned_alloc, memalign and posix_memalign itself (the executable's definitions
 * win for every caller, libc's forward to __libc_*), and wraps the profiler's SIGPROF
 * action so that a thread-local flag marks "inside the handler": an allocator call with
 * the flag set aborts the process. Four registered threads sort strings with qsort (walks
 * through libc's frameless code, CFI steps) while the main thread loads and unloads
 * libraries; the test checks that samples were taken, tables were republished, and the
 * raw profile is valid.
 *
 * Not under sanitizers (they interpose the allocator themselves).
 */
#define _GNU_SOURCE
#include "support.h"

#include "prof_cfi.h"
#include "prof_session.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the allocator, checked ------------------------------------------------------------- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static __thread int t_in_handler __attribute__((tls_model("initial-exec")));

static void check(const char *what) {
    if (t_in_handler) {
        static const char msg[] = "test_handler_malloc: allocator entered inside the handler: ";
        ssize_t r = write(2, msg, sizeof msg - 1);
        r = write(2, what, strlen(what));
        r = write(2, "\n", 1);
        (void)r;
        abort();
    }
}

void *malloc(size_t n) {
    check("malloc");
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    check("calloc");
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    check("realloc");
    return __libc_realloc(p, n);
}
void free(void *p) {
    check("free");
    __libc_free(p);
}
void *memalign(size_t al, size_t n) {
    check("memalign");
    return __libc_memalign(al, n);
}
void *aligned_alloc(size_t al, size_t n) {
    check("aligned_alloc");
    return __libc_memalign(al, n);
}
int posix_memalign(void **out, size_t al, size_t n) {
    check("posix_memalign");
    void *p = __libc_memalign(al, n);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

/* ---- the wrapped handler ---------------------------------------------------------------- */

static struct sigaction g_profiler_action;
static _Atomic long g_handled;

static void wrapped(int sig, siginfo_t *si, void *uc) {
    t_in_handler = 1;
    atomic_fetch_add_explicit(&g_handled, 1, memory_order_relaxed);
    g_profiler_action.sa_sigaction(sig, si, uc);
    t_in_handler = 0;
}

/* ---- load ------------------------------------------------------------------------------- */

static _Atomic int g_stop;

static int by_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void *sorter(void *arg) {
    (void)arg;
    osp_prof_thread_register(100 + (int64_t)(intptr_t)arg, "sorter");
    enum { N = 2000 };
    static __thread char buf[N][16];
    static __thread char *v[N];
    unsigned seed = (unsigned)(uintptr_t)arg + 1;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            snprintf(buf[i], sizeof buf[i], "%08x", seed);
            v[i] = buf[i];
        }
        qsort(v, N, sizeof v[0], by_str);
    }
    osp_prof_thread_unregister();
    return NULL;
}

static void test_no_malloc_in_handler_under_dlopen(void **state) {
    (void)state;
    char dir[256], path[512];
    scratch_dir(dir, sizeof dir, "handler-malloc");
    snprintf(path, sizeof path, "%s/run.osprof.json", dir);
    assert_true(osp_prof_session_begin(path, 4000));
    /* Wrap the profiler's action (installed by the session). */
    struct sigaction cur;
    assert_int_equal(sigaction(SIGPROF, NULL, &cur), 0);
    assert_true(cur.sa_flags & SA_SIGINFO);
    g_profiler_action = cur;
    struct sigaction w = cur;
    w.sa_sigaction = wrapped;
    osp_prof__sigprof_wrapper = wrapped; /* the session keeps sampling through it */
    assert_int_equal(sigaction(SIGPROF, &w, NULL), 0);

    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, sorter, (void *)i), 0);
    static const char *const libs[] = {"libz.so.1",     "libbz2.so.1",  "liblzma.so.5",
                                       "libexpat.so.1", "libzstd.so.1", "libffi.so.8"};
    const struct osp_cfi_set *first = osp_prof__cfi_acquire();
    osp_prof__cfi_release();
    int republished = 0, loads = 0;
    double end = mono_seconds() + 2.0;
    while (mono_seconds() < end) {
        void *h[6];
        for (size_t i = 0; i < 6; i++) {
            h[i] = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
            if (h[i]) loads++;
        }
        struct timespec ts = {0, 3000000}; /* a few sampler ticks with the images loaded */
        nanosleep(&ts, NULL);
        const struct osp_cfi_set *now = osp_prof__cfi_acquire();
        osp_prof__cfi_release();
        if (now != first) republished++;
        for (size_t i = 0; i < 6; i++)
            if (h[i]) dlclose(h[i]);
        nanosleep(&ts, NULL);
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    /* Hand the action back as installed, so the session sees its own handler. */
    assert_int_equal(sigaction(SIGPROF, &g_profiler_action, NULL), 0);
    assert_true(osp_prof_session_end());

    assert_true(loads > 0);
    assert_true(republished > 0);              /* the sampler published tables for new images */
    assert_true(atomic_load(&g_handled) > 10); /* the handler ran (few on a loaded machine) */
    struct raw r;
    raw_load(&r, path);
    assert_true(r.nsamples > 10);
    /* Walks ended at the threads' roots (clone3), not at rules they could not follow. */
    assert_true(r.unwind[1] > 0);
    raw_free(&r);
    scratch_cleanup(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_malloc_in_handler_under_dlopen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
