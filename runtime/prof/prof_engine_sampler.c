/*
 * prof_engine_sampler.c — the "sampler" sampling engine (§(b.1)–(b.3)): a sampler thread
 * (prof_sampler.c) that sends directed SIGPROF requests with tgkill, answered by the
 * handler (prof_handler.c) into per-thread rings. Its start and stop run on the session
 * owner under the session lock (they take the registry mutex for nothing); its fork_child
 * hook runs in a forked child. It needs no per-thread work at registration.
 *
 * Source: docs/spec/profiler.md §(a), §(b.1), §(b.3), §(k) item 9.
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "prof_session.h"
#include "prof_own_text.h"

/* Install the handler, keeping the program's action to chain to and to restore; then
 * start the sampler thread with every asynchronous signal blocked, through the real
 * pthread_create (never an interposer, §(l.2)). */
bool osp_prof__engine_start_common(struct osp_prof_session *ps, int *cause) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = osp_prof__on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART; /* no SA_ONSTACK: the thread's own stack */
    sigemptyset(&sa.sa_mask);
    atomic_store(&ps->old_action_ready, 0);
    atomic_store(&ps->handler_lost, 0);
    struct sigaction old;
    if (sigaction(SIGPROF, NULL, &old) != 0) {
        *cause = errno;
        return false;
    }
    ps->old_action = old;
    atomic_store_explicit(&ps->old_action_ready, 1, memory_order_release);
    osp_prof__real_sigaction(SIGPROF, &sa, NULL);

    /* The sampler blocks SIGPROF (and every other asynchronous signal: it never runs
     * program code); it inherits the mask it is created with. */
    sigset_t all, saved;
    sigfillset(&all);
    int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof sync_signals / sizeof *sync_signals; i++)
        sigdelset(&all, sync_signals[i]);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    int rc = osp_prof__real_pthread_create(&ps->sampler, NULL, osp_prof__sampler_main, ps);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        osp_prof__real_sigaction(SIGPROF, &ps->old_action, NULL);
        *cause = rc;
        return false;
    }
    pthread_setname_np(ps->sampler, "osprey-sampler"); /* visible in top, gdb */
    return true;
}

void osp_prof__engine_stop_thread(struct osp_prof_session *ps) {
    atomic_store_explicit(&ps->stop, 1, memory_order_release);
    if (ps->term_sem_ok) sem_post(&ps->term_sem); /* wake it now */
    if (!pthread_equal(pthread_self(), ps->sampler)) pthread_join(ps->sampler, NULL);
}

void osp_prof__engine_restore_action(struct osp_prof_session *ps) {
    /* Restore the program's SIGPROF action. Passing through SIG_IGN discards any of our
     * signals still pending in some thread, which the restored action (possibly the
     * default: terminate) would otherwise receive. If the program replaced our handler
     * during the session, its own handler stays. */
    struct sigaction cur;
    bool ours = sigaction(SIGPROF, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
                cur.sa_sigaction == osp_prof__on_sigprof;
    /* A program that installs its own SIGPROF action (setitimer(ITIMER_PROF) and a
     * handler, another profiler) takes every sample signal from then on: say so once,
     * rather than hand over a silently empty profile ((k) item 9; issue 3). */
    /* Ring delivery needs no signal: where every thread had it, nothing was lost and
     * nothing is said. */
    if (!ours && (ps->engine != &osp_prof__engine_perf_event || !ps->perf_ring ||
                  ps->store.dropped[OSP_DROP_HANDLER_REPLACED] > 0))
        osp_prof__say("osprey profiler: SIGPROF handler was replaced by the program; samples "
                      "after that point are lost");
    if (ours) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        osp_prof__real_sigaction(SIGPROF, &ign, NULL);
        osp_prof__real_sigaction(SIGPROF, &ps->old_action, NULL);
    }
}

static bool sampler_start(struct osp_prof_session *ps, int *cause) {
    return osp_prof__engine_start_common(ps, cause);
}

/* Stop and join the sampler thread, then restore the program's SIGPROF action. */
static void sampler_stop(struct osp_prof_session *ps) {
    osp_prof__engine_stop_thread(ps);
    osp_prof__engine_restore_action(ps);
}

/* A forked child never samples: give it back the program's SIGPROF action. */
static void sampler_fork_child(struct osp_prof_session *ps) {
    if (atomic_load(&ps->old_action_ready)) sigaction(SIGPROF, &ps->old_action, NULL);
}

const struct osp_prof_engine osp_prof__engine_sampler = {
    .name = OSP_RAW_ENGINE_SAMPLER,
    .start = sampler_start,
    .stop = sampler_stop,
    .thread_prepare = NULL,
    .thread_registered = NULL,
    .thread_unregistered = NULL,
    .fork_child = sampler_fork_child,
};

#endif /* OSP_PROF_SAMPLER */
