/*
 * prof_preload.c — only in libosprey_prof.so: profile an unmodified program built with
 * frame pointers by preloading the runtime (docs/profiler-runtime.md):
 *
 *   OSPREY_PROFILE=out.json LD_PRELOAD=/path/to/libosprey_prof.so ./program
 *
 * The library's load-time constructor boots the profiler and registers the main thread
 * (prof_linux.c). This file interposes pthread_create so every thread the program starts
 * afterwards is registered as it starts (label "thread", fiber ids 1, 2, ... in creation
 * order) and unregistered when its start routine returns; pthread_exit and cancellation
 * are covered by the thread-exit destructor.
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct start_args {
    void *(*start)(void *);
    void *arg;
    int64_t fiber;
};

static _Atomic int64_t g_next_fiber = 1;
static _Atomic(pthread_create_fn) g_real_create;

static void *start_trampoline(void *p) {
    struct start_args a = *(struct start_args *)p;
    free(p);
    osp_prof_thread_register(a.fiber, "thread");
    void *result = a.start(a.arg);
    osp_prof_thread_unregister();
    return result;
}

OSP_PROF_PUBLIC int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                   void *(*start)(void *), void *arg) {
    pthread_create_fn real = atomic_load_explicit(&g_real_create, memory_order_acquire);
    if (real == NULL) {
        real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (real == NULL) return EAGAIN;
        atomic_store_explicit(&g_real_create, real, memory_order_release);
    }
    if (!osp_prof__active()) return real(thread, attr, start, arg);
    struct start_args *a = malloc(sizeof *a);
    if (a == NULL) return real(thread, attr, start, arg); /* run it, just unprofiled */
    a->start = start;
    a->arg = arg;
    a->fiber = atomic_fetch_add(&g_next_fiber, 1);
    int rc = real(thread, attr, start_trampoline, a);
    if (rc != 0) free(a);
    return rc;
}

#endif
