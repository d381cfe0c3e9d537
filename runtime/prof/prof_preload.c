/*
 * prof_preload.c — only in libosprey_prof.so: profile an unmodified program built with
 * frame pointers by preloading the runtime (docs/profiler-runtime.md):
 *
 *   OSPREY_PROFILE=out.json LD_PRELOAD=/path/to/libosprey_prof.so ./program
 *
 * The library's load-time constructor boots the profiler and registers the main thread
 * (prof_session.c, prof_registry.c). This file interposes pthread_create so every thread
 * the program starts afterwards is registered as it starts (label "thread", fiber ids 1,
 * 2, ... in creation order) and unregistered when its start routine returns; pthread_exit
 * and cancellation are covered by the thread-exit destructor.
 *
 * The library also wraps the common sleeping calls (nanosleep, clock_nanosleep, usleep,
 * sleep, poll, ppoll, select, pselect, epoll_wait, epoll_pwait, pause) in blocking
 * regions: a thread waiting in them is sampled as waiting with the stack it captured on
 * entry and is never signalled, so those calls do not return early with EINTR because
 * of the profiler (docs/spec/profiler.md §(b.3) "No early returns").
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

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

/* Resolve the next definition of `name` once; NULL if there is none. */
static void *next_symbol(_Atomic(void *) *cache, const char *name) {
    void *f = atomic_load_explicit(cache, memory_order_acquire);
    if (f == NULL) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(cache, f, memory_order_release);
    }
    return f;
}

/* A wrapper that runs the real call inside a blocking region. The region is entered
 * from the wrapper's own frame, so the waiting stack reads caller -> <name> (this
 * library) and keeps the caller's frames. errno is the real call's. */
#define OSP_PROF_WAIT_WRAPPER(ret, name, params, args, fail)           \
    OSP_PROF_PUBLIC ret name params {                                  \
        static _Atomic(void *) real_;                                  \
        ret(*real) params = (ret(*) params)next_symbol(&real_, #name); \
        if (real == NULL) {                                            \
            errno = ENOSYS;                                            \
            return fail;                                               \
        }                                                              \
        osp_prof_block_begin();                                        \
        ret result = real args;                                        \
        int saved = errno;                                             \
        osp_prof_block_end();                                          \
        errno = saved;                                                 \
        return result;                                                 \
    }

OSP_PROF_WAIT_WRAPPER(int, nanosleep, (const struct timespec *req, struct timespec *rem),
                      (req, rem), -1)
OSP_PROF_WAIT_WRAPPER(int, clock_nanosleep,
                      (clockid_t clock, int flags, const struct timespec *req,
                       struct timespec *rem),
                      (clock, flags, req, rem), ENOSYS)
OSP_PROF_WAIT_WRAPPER(int, usleep, (useconds_t usec), (usec), -1)
OSP_PROF_WAIT_WRAPPER(unsigned, sleep, (unsigned seconds), (seconds), seconds)
OSP_PROF_WAIT_WRAPPER(int, poll, (struct pollfd * fds, nfds_t n, int timeout), (fds, n, timeout),
                      -1)
OSP_PROF_WAIT_WRAPPER(int, ppoll,
                      (struct pollfd * fds, nfds_t n, const struct timespec *timeout,
                       const sigset_t *mask),
                      (fds, n, timeout, mask), -1)
OSP_PROF_WAIT_WRAPPER(int, select,
                      (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout),
                      (n, r, w, e, timeout), -1)
OSP_PROF_WAIT_WRAPPER(int, pselect,
                      (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                       const sigset_t *mask),
                      (n, r, w, e, timeout, mask), -1)
OSP_PROF_WAIT_WRAPPER(int, epoll_wait, (int fd, struct epoll_event *ev, int max, int timeout),
                      (fd, ev, max, timeout), -1)
OSP_PROF_WAIT_WRAPPER(int, epoll_pwait,
                      (int fd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask),
                      (fd, ev, max, timeout, mask), -1)
OSP_PROF_WAIT_WRAPPER(int, pause, (void), (), -1)

#endif
