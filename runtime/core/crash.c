/*
 * Fatal signals: SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, and the terminating
 * SIGINT, SIGTERM and SIGHUP (Ctrl-C, kill, a closed terminal), end the program as they
 * would a C program (killed by the signal, exit status 128 + N), but first the handler
 * writes out what the program printed that is still in the stdout buffer (so output
 * redirected to a file is not lost when the program is interrupted), and says
 * `fatal: stack overflow` when the fault hit the faulting thread's stack guard area —
 * deep or endless recursion being the usual cause in a functional language.
 *
 * The handler runs on an alternate signal stack (an overflowed stack has no room left
 * for it): the main thread gets one in osp_rt_start, fiber and effect-continuation
 * threads at their entry (osp_crash_thread_begin / _end). Everything it does is
 * async-signal-safe: write(2), sigaction, raise, a trylock on the stream (see
 * osp_stream_emergency_flush). SIGPROF (the profiler) and the collector's own signals
 * are not touched, and a handler someone else installed first (a sanitizer runtime, a
 * debugging library) is left in place, and so is a signal the program was started with
 * ignored (`nohup`, a background job's SIGINT).
 *
 * Sanitizer builds (ASan, TSan, UBSan, MSan) own these signals and report faults
 * themselves: there nothing is installed (OSP_RT_SANITIZED, rt_internal.h).
 */
#define _GNU_SOURCE 1 /* pthread_getattr_np */
#include "rt_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif

#if !OSP_RT_SANITIZED

#define OSP_ALT_STACK (64u * 1024u) /* room for the kernel's signal frame and the handler */

/* This thread's stack guard area [guard_lo, guard_hi); both 0 when unknown. Read by the
 * signal handler: initial-exec TLS is a plain load, never a call into the loader. */
static _Thread_local uintptr_t guard_lo __attribute__((tls_model("initial-exec")));
static _Thread_local uintptr_t guard_hi __attribute__((tls_model("initial-exec")));
static _Thread_local void *alt_stack; /* malloc'd alternate signal stack, or NULL */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE,  SIGILL,
                                    SIGABRT, SIGINT, SIGTERM, SIGHUP};
static atomic_int crashing;

static void on_fatal_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    int saved_errno = errno;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&crashing, &expected, 1)) {
        /* Another thread is already reporting a fatal signal; it ends the process. */
        for (;;) pause();
    }
    osp_stream_emergency_flush();
    /* si_code > 0: raised by the kernel for a fault, not sent with kill/raise. */
    if ((sig == SIGSEGV || sig == SIGBUS) && si != NULL && si->si_code > 0) {
        uintptr_t a = (uintptr_t)si->si_addr;
        if (guard_hi != 0 && a >= guard_lo && a < guard_hi) {
            static const char msg[] = "fatal: stack overflow\n";
            osp_write_all_fd(2, msg, sizeof msg - 1);
        }
    }
    /* Die of the signal itself: default action, then raise it; it is blocked while this
     * handler runs, so unblock it and it is delivered at once. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    errno = saved_errno;
    _exit(128 + sig); /* not reached */
}

static void alt_stack_begin(void) {
    if (alt_stack != NULL) return;
    void *mem = malloc(OSP_ALT_STACK);
    if (mem == NULL) return; /* no alternate stack: a stack overflow then dies silently */
    stack_t ss = {.ss_sp = mem, .ss_size = OSP_ALT_STACK, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        free(mem);
        return;
    }
    alt_stack = mem;
}

/* The guard area of a thread created by the runtime: glibc reports the usable stack
 * [low, low + size) and a guard of `guard` bytes right below it. */
static void thread_guard_init(void) {
#if defined(__GLIBC__)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void *low = NULL;
    size_t size = 0, guard = 0;
    if (pthread_attr_getstack(&attr, &low, &size) == 0 &&
        pthread_attr_getguardsize(&attr, &guard) == 0 && low != NULL) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if (guard < page) guard = page;
        if ((uintptr_t)low > guard) {
            guard_lo = (uintptr_t)low - guard;
            guard_hi = (uintptr_t)low;
        }
    }
    pthread_attr_destroy(&attr);
#endif
}

/*
 * The main thread's stack grows down from the top of its mapping until it is
 * RLIMIT_STACK bytes long; the first access below that faults. The top is found without
 * reading /proc: the kernel puts the executable's file name (AT_EXECFN) at the very top
 * of the initial stack. The guard area is taken as the 1 MiB below the limit (the
 * kernel's gap to the next mapping) plus 64 KiB above it (growth refused next to
 * another mapping). Unknown (no message) when the limit is unlimited.
 */
static void main_guard_init(void) {
#if defined(__linux__)
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    if (execfn == NULL) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t top = ((uintptr_t)execfn + strlen(execfn) + 1 + page - 1) & ~(page - 1);
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (top <= here || top - here >= rl.rlim_cur || top < rl.rlim_cur + ((uintptr_t)1 << 20))
        return;
    uintptr_t low = top - rl.rlim_cur;
    guard_lo = low - ((uintptr_t)1 << 20);
    guard_hi = low + 64 * 1024;
#endif
}

static void install_handlers(void) {
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], NULL, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue; /* someone else's, or ignored */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal_signal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

void osp_crash_init(void) {
    main_guard_init();
    alt_stack_begin();
    install_handlers();
}

void osp_crash_thread_begin(void) {
    thread_guard_init();
    alt_stack_begin();
}

void osp_crash_thread_end(void) {
    if (alt_stack == NULL) return;
    stack_t ss = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
    free(alt_stack);
    alt_stack = NULL;
    guard_lo = guard_hi = 0;
}

#else /* OSP_RT_SANITIZED: the sanitizer runtime handles fatal signals */

void osp_crash_init(void) {}
void osp_crash_thread_begin(void) {}
void osp_crash_thread_end(void) {}

#endif

bool osp_crash_handlers_enabled(void) {
    return !OSP_RT_SANITIZED;
}
