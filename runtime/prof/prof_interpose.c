/*
 * prof_interpose.c — the functions the profiler interposes in every program that links
 * it (the runtime archive and libosprey_prof.so alike), and the saved pointers to the C
 * library's own versions:
 *
 *  - pthread_create: every thread the program starts while a session runs is registered
 *    as it starts and unregistered when its start routine returns (§(l.2)). Threads whose
 *    start routine lives in the collector (Boehm GC's marker threads) are labelled "gc",
 *    others "thread". In the runtime archive their fiber ids count down from -2 (fibers
 *    are >= 0, effect continuations -1); in libosprey_prof.so (OSP_PROF_PRELOAD), where
 *    there are no fibers, they count up from 1. A thread that later registers itself
 *    (a fiber or continuation started through GC_pthread_create, which calls this
 *    pthread_create) takes over its registration with its own id and label.
 *  - sigaction: while a session runs, a handler installed with SA_ONSTACK gets SIGPROF
 *    added to its mask, so a profiler signal never lands on a small alternate stack
 *    (§(l.3)); a program installing its own SIGPROF action makes the session stop
 *    sampling first (samples after that are counted lost, §(l.3)).
 *  - signal and bsd_signal: for SIGPROF, through the sigaction above (glibc's call its
 *    internal one); other signals go to the C library's.
 *  - execve, execv, execvp, execvpe (the runtime archive only; libosprey_prof.so has its
 *    own in prof_preload.c): no SIGPROF request of the session crosses the exec
 *    (osp_prof__exec_prepare). Interposed under the sanitizers too.
 *
 * Under AddressSanitizer / ThreadSanitizer only the exec functions are interposed (the
 * sanitizers intercept the others themselves and must see every thread); the real
 * functions are then the ordinary ones. Runs on program threads; takes the registry mutex
 * only through the registry's functions and osp_prof__exec_prepare.
 *
 * Source: docs/spec/profiler.md §(l.2), §(l.3), §(d).
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof_session.h"
#define OSP_PROF_WRAPPER_FILE 1 /* its functions wrap the program's calls */
#include "prof_own_text.h"

#if defined(OSP_PROF_UNDER_ASAN) || defined(OSP_PROF_UNDER_TSAN)
#define OSP_PROF_NO_INTERPOSE 1
#endif

/* The label osp_prof_label_created_threads set for this thread's new threads, or NULL. */
static _Thread_local const char *created_label;

OSP_PROF_PUBLIC void osp_prof_label_created_threads(const char *label) {
    created_label = label;
}

#ifndef OSP_PROF_PRELOAD
/* exec by the program itself: the session's SIGPROF requests are stopped and any pending
 * one discarded first (osp_prof__exec_prepare), or one could reach the new image, which
 * has no handler for it, and end it. libosprey_prof.so has its own exec interposers
 * (prof_preload.c, which also follow the session into the new program); here they are
 * interposed under the sanitizers too (none intercepts exec). glibc's execv and execvp
 * call its internal execve, so they are interposed as well (execl and its kin, fexecve
 * and posix_spawn are not). */
typedef int (*exec_fn)(const char *, char *const[], char *const[]);
static _Atomic(exec_fn) g_real_execve, g_real_execvpe;

static void exec_resolve(void) {
    if (atomic_load_explicit(&g_real_execve, memory_order_acquire) == NULL)
        atomic_store_explicit(&g_real_execve, (exec_fn)dlsym(RTLD_NEXT, "execve"),
                              memory_order_release);
    if (atomic_load_explicit(&g_real_execvpe, memory_order_acquire) == NULL)
        atomic_store_explicit(&g_real_execvpe, (exec_fn)dlsym(RTLD_NEXT, "execvpe"),
                              memory_order_release);
}

static int exec_through(_Atomic(exec_fn) *real_, const char *what, char *const argv[],
                        char *const envp[]) {
    exec_fn real = atomic_load_explicit(real_, memory_order_acquire);
    if (real == NULL) {
        exec_resolve();
        real = atomic_load_explicit(real_, memory_order_acquire);
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
    }
    struct osp_prof_exec_hold hold;
    osp_prof__exec_prepare(&hold);
    int rc = real(what, argv, envp);
    osp_prof__exec_failed(&hold);
    return rc;
}

OSP_PROF_PUBLIC int execve(const char *path, char *const argv[], char *const envp[]) {
    return exec_through(&g_real_execve, path, argv, envp);
}

OSP_PROF_PUBLIC int execvpe(const char *file, char *const argv[], char *const envp[]) {
    return exec_through(&g_real_execvpe, file, argv, envp);
}

OSP_PROF_PUBLIC int execv(const char *path, char *const argv[]) {
    return execve(path, argv, environ);
}

OSP_PROF_PUBLIC int execvp(const char *file, char *const argv[]) {
    return execvpe(file, argv, environ);
}
#else
static void exec_resolve(void) {}
#endif

#ifdef OSP_PROF_NO_INTERPOSE

int osp_prof__real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*start)(void *),
                                  void *arg) {
    return pthread_create(t, attr, start, arg);
}
int osp_prof__real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    return sigaction(sig, act, old);
}
void osp_prof__interpose_init(void) {
    exec_resolve();
}

#else

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static _Atomic(pthread_create_fn) g_real_create;
static _Atomic(sigaction_fn) g_real_sigaction;

/* Resolve the C library's definitions once (dlsym may allocate: never in a handler; the
 * session resolves them at start through osp_prof__interpose_init). */
void osp_prof__interpose_init(void) {
    exec_resolve();
    if (atomic_load_explicit(&g_real_create, memory_order_acquire) == NULL)
        atomic_store_explicit(&g_real_create, (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create"),
                              memory_order_release);
    if (atomic_load_explicit(&g_real_sigaction, memory_order_acquire) == NULL)
        atomic_store_explicit(&g_real_sigaction, (sigaction_fn)dlsym(RTLD_NEXT, "sigaction"),
                              memory_order_release);
}

int osp_prof__real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*start)(void *),
                                  void *arg) {
    pthread_create_fn real = atomic_load_explicit(&g_real_create, memory_order_acquire);
    if (real == NULL) {
        osp_prof__interpose_init();
        real = atomic_load_explicit(&g_real_create, memory_order_acquire);
        if (real == NULL) return EAGAIN;
    }
    return real(t, attr, start, arg);
}

int osp_prof__real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    sigaction_fn real = atomic_load_explicit(&g_real_sigaction, memory_order_acquire);
    if (real == NULL) {
        osp_prof__interpose_init();
        real = atomic_load_explicit(&g_real_sigaction, memory_order_acquire);
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
    }
    return real(sig, act, old);
}

struct start_args {
    void *(*start)(void *);
    void *arg;
    int64_t fiber;
    const char *label;
};

#ifdef OSP_PROF_PRELOAD
static _Atomic int64_t g_next_fiber = 1;
#define NEXT_FIBER() atomic_fetch_add(&g_next_fiber, 1)
#else
static _Atomic int64_t g_next_fiber = -2;
#define NEXT_FIBER() atomic_fetch_sub(&g_next_fiber, 1)
#endif

static void *start_trampoline(void *p) {
    struct start_args a = *(struct start_args *)p;
    free(p);
    /* Libraries often start their threads with every signal blocked (Boehm GC's marker
     * threads do): SIGPROF, the profiler's own signal while a session runs, is let
     * through, or the thread's kernel timer could never sample it. Not when the program
     * has a SIGPROF action of its own: then which thread takes a process-directed SIGPROF
     * is the program's design (a thread that blocked it before creating others, then
     * waits for it in sigsuspend, hung when the new thread took it); such a thread is
     * sampled by its ring, or its loss is counted. */
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    if (osp_prof__active() && !osp_prof__program_takes_sigprof())
        pthread_sigmask(SIG_UNBLOCK, &prof, NULL);
    osp_prof__register_auto(a.fiber, a.label);
    void *result = a.start(a.arg);
    osp_prof_thread_unregister();
    return result;
}

/* Whether `fn` lives in the collector's image (libgc). */
static bool in_collector(void *(*fn)(void *)) {
    Dl_info info;
    void *addr;
    memcpy(&addr, &fn, sizeof addr);
    if (dladdr(addr, &info) == 0 || info.dli_fname == NULL) return false;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libgc.", 6) == 0 || strncmp(base, "libgc-", 6) == 0;
}

OSP_PROF_PUBLIC int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                   void *(*start)(void *), void *arg) {
    if (!osp_prof__active()) return osp_prof__real_pthread_create(thread, attr, start, arg);
    struct start_args *a = malloc(sizeof *a);
    if (a == NULL) return osp_prof__real_pthread_create(thread, attr, start, arg); /* unprofiled */
    a->start = start;
    a->arg = arg;
    a->fiber = NEXT_FIBER();
    a->label = created_label ? created_label : in_collector(start) ? "gc" : "thread";
    int rc = osp_prof__real_pthread_create(thread, attr, start_trampoline, a);
    if (rc != 0) free(a);
    return rc;
}

OSP_PROF_PUBLIC int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    struct sigaction copy;
    if (act != NULL && osp_prof__active()) {
        if (sig == SIGPROF) {
            if (!osp_prof__own_sigprof(act)) osp_prof__sigprof_replaced(&osp_prof__session);
        } else if ((act->sa_flags & SA_ONSTACK) && act->sa_handler != SIG_DFL &&
                   act->sa_handler != SIG_IGN) {
            copy = *act;
            sigaddset(&copy.sa_mask, SIGPROF);
            act = &copy;
        }
    }
    return osp_prof__real_sigaction(sig, act, old);
}

/* signal() and its BSD alias: glibc's call its internal sigaction, not the one above, so
 * a program that resets every signal with signal(sig, SIG_DFL) (daemons, supervisors and
 * shells do) replaced the profiler's SIGPROF handler unnoticed, and the next profiler
 * signal killed it ("Profiling timer expired") under the cpu_timer and sampler engines.
 * SIGPROF goes through the sigaction above, with glibc's BSD semantics (SA_RESTART, the
 * signal blocked in its handler); every other signal goes to the C library's own. */
typedef void (*signal_handler_fn)(int);
typedef signal_handler_fn (*signal_fn)(int, signal_handler_fn);

static signal_handler_fn bsd_signal_via_sigaction(int sig, signal_handler_fn handler,
                                                  _Atomic(signal_fn) *real_cache,
                                                  const char *name) {
    if (sig == SIGPROF && handler != SIG_ERR) {
        struct sigaction act, old;
        memset(&act, 0, sizeof act);
        act.sa_handler = handler;
        sigemptyset(&act.sa_mask);
        sigaddset(&act.sa_mask, sig);
        act.sa_flags = SA_RESTART;
        if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
        return old.sa_handler;
    }
    signal_fn real = atomic_load_explicit(real_cache, memory_order_acquire);
    if (real == NULL) {
        real = (signal_fn)dlsym(RTLD_NEXT, name);
        atomic_store_explicit(real_cache, real, memory_order_release);
    }
    if (real == NULL) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return real(sig, handler);
}

OSP_PROF_PUBLIC signal_handler_fn signal(int sig, signal_handler_fn handler) {
    static _Atomic(signal_fn) real;
    return bsd_signal_via_sigaction(sig, handler, &real, "signal");
}

OSP_PROF_PUBLIC signal_handler_fn bsd_signal(int sig, signal_handler_fn handler) {
    static _Atomic(signal_fn) real;
    return bsd_signal_via_sigaction(sig, handler, &real, "bsd_signal");
}

#endif /* OSP_PROF_NO_INTERPOSE */

#endif /* OSP_PROF_SAMPLER */
