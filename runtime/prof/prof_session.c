/*
 * prof_session.c — the profiling session (§(a)): activation from the environment at load
 * time, start and stop, the exit hook, the fork child, the test entry points
 * osp_prof_session_begin / _end, and the session state itself. Runs on the session owner
 * (the thread that boots, exits, or calls the entry points; in a forked child, the
 * forking thread), under the session lock, taking the registry mutex inside it for the
 * registry's bookkeeping. The thread map of the whole sampler is at the top of
 * prof_session.h.
 *
 * Source: docs/spec/profiler.md §(a), §(b.3) "Teardown", §(b.5), §(d), §(k) items 1–18;
 * [PROF-ACTIVATE-ENV].
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "prof_cfi.h"
#include "prof_session.h"
#include "prof_own_text.h"

struct osp_prof_session osp_prof__session = {
    .session_lock = PTHREAD_MUTEX_INITIALIZER,
    .reg = PTHREAD_MUTEX_INITIALIZER,
    .init_once = PTHREAD_ONCE_INIT,
    .boot_once = PTHREAD_ONCE_INIT,
};

void (*osp_prof__sigprof_wrapper)(int sig, siginfo_t *si, void *ucv);

/* ---- small helpers --------------------------------------------------------------------- */

uint64_t osp_prof__mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t osp_prof__realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool osp_prof__read_clock(clockid_t id, uint64_t *out) {
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) return false;
    *out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return true;
}

uint64_t osp_prof__session_start_mono_ns(void) {
    return atomic_load(&osp_prof__session.start_mono_ns);
}
bool osp_prof__active(void) {
    return atomic_load_explicit(&osp_prof__session.on, memory_order_acquire) != 0;
}

bool osp_prof__program_takes_sigprof(void) {
    struct osp_prof_session *ps = &osp_prof__session;
    if (atomic_load_explicit(&ps->handler_lost, memory_order_acquire)) return true;
    if (!atomic_load_explicit(&ps->old_action_ready, memory_order_acquire)) return false;
    const struct sigaction *old = &ps->old_action;
    if (old->sa_flags & SA_SIGINFO) return old->sa_sigaction != NULL;
    return old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN;
}

void osp_prof__say(const char *fmt, ...) {
    char line[OSP_PROF_PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    line[len++] = '\n';
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(2, line + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        off += (size_t)w;
    }
}

int osp_prof__fd_high(int fd) {
    if (fd < 0 || fd >= OSP_PROF_FD_MIN) return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, OSP_PROF_FD_MIN);
    int e = errno;
    osp_prof__close_nc(fd);
    errno = e;
    return hi;
}

/* ---- engines ---------------------------------------------------------------------------- */

/* The order the session tries engines in (§(l.3)). */
static const struct osp_prof_engine *const engines[] = {
    &osp_prof__engine_perf_event, &osp_prof__engine_cpu_timer, &osp_prof__engine_sampler};
#define NENGINES (sizeof engines / sizeof *engines)

/* OSPREY_PROFILE_ENGINE (for testing, docs/profiler-runtime.md): the index of the engine
 * to try first, 0 (all, in order) when unset, empty or "auto"; an unknown name is reported
 * once and ignored. */
static size_t engine_from_env(void) {
    const char *v = getenv("OSPREY_PROFILE_ENGINE");
    if (v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0) return 0;
    for (size_t i = 0; i < NENGINES; i++)
        if (strcmp(v, engines[i]->name) == 0) return i;
    char shown[64];
    snprintf(shown, sizeof shown, "%s", v);
    osp_prof__say("osprey profiler: OSPREY_PROFILE_ENGINE=\"%s\" is not perf_event, cpu_timer or "
                  "sampler; choosing automatically",
                  shown);
    return 0;
}

/* ---- termination signals (§(l.5)) ------------------------------------------------------- */

/* SIGPIPE too (beyond §(l.5)): `osprey prog --profile | head` ends the program with it
 * when the reader goes away, and the run's profile was lost. */
static const int term_signals[OSP_PROF_TERM_SIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

/* osp_prof_set_before_signal_death's function (the Osprey runtime's stdout flush). */
static void (*_Atomic g_before_death)(void);

OSP_PROF_PUBLIC void osp_prof_set_before_signal_death(void (*fn)(void)) {
    atomic_store(&g_before_death, fn);
}

static void before_death(void) {
    void (*fn)(void) = atomic_load(&g_before_death);
    if (fn != NULL) fn();
}

/* A copy of the first signal arriving within this long after it is the same interrupt
 * delivered twice -- a signal sent to the whole process group (`kill -INT -<pgid>`, a
 * service manager) and forwarded once more by the driver -- not a second request. */
#define TERM_REPEAT_NS 500000000ull
static _Atomic uint64_t g_term_first_ns; /* CLOCK_MONOTONIC of the first one, 0 none */

static uint64_t term_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void osp_prof__raise_default(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    osp_prof__real_sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}

static void die_of(int sig) {
    before_death();
    osp_prof__raise_default(sig);
}

/* Set by osp_prof__terminate once the file is written and the process is about to die of
 * the signal; reset when a session installs its handlers. */
static _Atomic int g_term_dying;

/* How long a thread that received a terminating signal waits for the sampler thread to
 * write the file before it dies of the signal itself (as for _exit, below: the write may
 * be stuck behind a lock the interrupted code held). */
#define TERM_WAIT_NS 5000000000ull

/* Whether the signal was sent by this process to itself (raise, kill(getpid()),
 * pthread_kill): then the receiving thread is inside that call, holding no lock the
 * sampler thread's write could need. A signal from outside may land anywhere (inside
 * malloc, or holding the registry mutex during a thread's start): its thread returns
 * into the program at once, as before, and exit_hook makes a racing exit() die of it. */
static bool self_sent(const siginfo_t *si) {
    return si != NULL && (si->si_code == SI_TKILL || si->si_code == SI_USER) &&
           si->si_pid == getpid();
}

/* Async-signal-safe. Unprofiled, the process would be dead now: a thread that sent itself
 * a terminating signal runs no more of the program's code (raise(SIGTERM) never returns,
 * and code after it never runs) while the sampler thread writes the file and re-raises.
 * Without this wait the thread returned into the program, which could reach exit()
 * first: the process then ended with the program's exit status instead of dying of the
 * signal. */
static void await_death(int sig) {
    uint64_t until = term_now_ns() + TERM_WAIT_NS;
    while (!atomic_load(&g_term_dying) && term_now_ns() < until) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&g_term_dying))
        osp_prof__raise_default(sig); /* the sampler thread has run before_death already */
    else
        die_of(sig);
}

/* Async-signal-safe: note the signal and wake the sampler thread, which writes the file
 * and re-raises. A second one, or one after the session stopped, acts at once. */
static void on_term_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    struct osp_prof_session *ps = &osp_prof__session;
    int saved = errno;
    int expected = 0;
    uint64_t now = term_now_ns(), none = 0;
    atomic_compare_exchange_strong(&g_term_first_ns, &none, now);
    if (atomic_load(&ps->term_sig) == sig && now - atomic_load(&g_term_first_ns) < TERM_REPEAT_NS) {
        /* the same interrupt again at once: the profile is being written, then it acts
         * (the session may already be stopping: `on` is off while the file is written) */
        if (self_sent(si)) await_death(sig);
    } else if (!atomic_load(&ps->on) || !ps->term_sem_ok) {
        die_of(sig);
    } else if (atomic_compare_exchange_strong(&ps->term_sig, &expected, sig)) {
        sem_post(&ps->term_sem);
        if (self_sent(si)) await_death(sig);
    } else {
        die_of(sig); /* a second request (Ctrl-C pressed again): at once */
    }
    errno = saved;
}

int osp_prof__fd_budget(void) {
    struct rlimit rl;
    uint64_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                       ? (uint64_t)rl.rlim_cur
                       : (uint64_t)1 << 20;
    uint64_t b = lim / 8;
    if (b > 1000000) b = 1000000;
    uint64_t held = OSP_PROF_PROBE_FDS + OSP_PROF_RAW_FDS;
    return b > held ? (int)(b - held) : 0;
}

static void term_install(struct osp_prof_session *ps) {
    atomic_store(&ps->term_sig, 0);
    atomic_store(&g_term_dying, 0);
    atomic_store(&g_term_first_ns, 0);
    ps->term_sem_ok = sem_init(&ps->term_sem, 0, 0) == 0;
    for (int i = 0; i < OSP_PROF_TERM_SIGNALS; i++) {
        ps->term_installed[i] = false;
        if (!ps->term_sem_ok) continue;
        if (osp_prof__real_sigaction(term_signals[i], NULL, &ps->term_old[i]) != 0) continue;
        if ((ps->term_old[i].sa_flags & SA_SIGINFO) || ps->term_old[i].sa_handler != SIG_DFL)
            continue; /* the program's own action (or SIG_IGN) is left alone */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_term_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        ps->term_installed[i] = osp_prof__real_sigaction(term_signals[i], &sa, NULL) == 0;
    }
}

/* Put back the default action of the signals we took, unless the program replaced ours. */
static void term_restore(struct osp_prof_session *ps) {
    for (int i = 0; i < OSP_PROF_TERM_SIGNALS; i++) {
        if (!ps->term_installed[i]) continue;
        ps->term_installed[i] = false;
        struct sigaction cur;
        if (osp_prof__real_sigaction(term_signals[i], NULL, &cur) == 0 &&
            (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_term_signal)
            osp_prof__real_sigaction(term_signals[i], &ps->term_old[i], NULL);
    }
}

/* ---- sessions --------------------------------------------------------------------------- */

static void atfork_child(void) {
    /* A forked child is inert for good: it never samples, signals or writes (§(a)). Its
     * copy of the registry (and perhaps of a locked mutex) is never touched again. */
    struct osp_prof_session *ps = &osp_prof__session;
    bool was_on = atomic_load_explicit(&ps->on, memory_order_relaxed) != 0;
    atomic_store(&ps->forked_child, 1);
    atomic_store(&ps->on, 0);
    osp_prof__t_slot = NULL;
    /* The parent's raw body: never written here; the child's copy of the descriptor goes
     * (a raw fork keeps it, unused, until its exec or exit). */
    if (was_on) osp_prof__raw_release(&ps->raw);
    if (was_on && ps->engine != NULL && ps->engine->fork_child != NULL) ps->engine->fork_child(ps);
}

static void exit_hook(void);

static void init_once(void) {
    struct osp_prof_session *ps = &osp_prof__session;
    osp_prof__interpose_init();
    if (pthread_key_create(&ps->key, osp_prof__key_destructor) != 0) return;
    /* About a megabyte, left untouched here (zero pages until a slot is first claimed):
     * registration initialises a slot's fields, including sm.stat_fd, and nothing reads
     * a slot at or above slots_hi. Writing every slot here cost ~300 page faults (about
     * 1 ms of CPU) at each profiled start. */
    ps->slots = calloc(OSP_PROF_NSLOTS, sizeof *ps->slots);
    if (ps->slots == NULL) return;
    if (pthread_atfork(NULL, NULL, atfork_child) != 0) return;
    if (atexit(exit_hook) != 0) return;
    /* quick_exit runs at_quick_exit handlers, not atexit ones, then glibc's internal _exit
     * (which no interposer sees): write the file as _exit does, on the sampler thread (C11
     * lets a signal handler call quick_exit). Registered first, it runs last. */
    if (at_quick_exit(osp_prof__exit_now) != 0) return;
    ps->init_ok = true;
}

/* Start a session writing to absolute path `path` at `rate` Hz with `engine`. `cause`
 * receives the errno value when the engine cannot start. Registers the calling thread as
 * fiber 0 "main". */
static bool session_start(struct osp_prof_session *ps, const char *path, uint32_t rate,
                          int *cause) {
    *cause = 0;
    if (atomic_load(&ps->forked_child)) return false;
    pthread_once(&ps->init_once, init_once);
    if (!ps->init_ok) {
        *cause = ENOMEM;
        return false;
    }
    pthread_mutex_lock(&ps->session_lock);
    pthread_mutex_lock(&ps->reg);
    int state = ps->state;
    pthread_mutex_unlock(&ps->reg);
    if (state != OSP_SESSION_IDLE) {
        pthread_mutex_unlock(&ps->session_lock);
        return false;
    }
    /* The owner's CPU from here to its registration is the profiler's start-up, which no
     * sample carries ("profiler_cpu_ns"). */
    uint64_t cpu_start = 0;
    bool cpu_start_ok = osp_prof__read_clock(CLOCK_THREAD_CPUTIME_ID, &cpu_start);
    ps->own_startup_ns = ps->sampler_cpu_ns = ps->own_stop_cpu_ns = ps->own_thread_ns = 0;
    ps->unsampled_rest_ns = 0;
    ps->own_stop_cpu_ok = false;
    if (rate < OSP_PROF_HZ_MIN) rate = OSP_PROF_HZ_MIN;
    if (rate > OSP_PROF_HZ_MAX) rate = OSP_PROF_HZ_MAX;
    /* §(l.5): a path that cannot be written is reported now, not after the run. */
    int perr = osp_prof__raw_probe(path, &ps->raw);
    if (perr != 0) {
        if (perr < 0)
            osp_prof__say("osprey profiler: cannot write %s: not a regular file, character device "
                          "or FIFO; profiling disabled",
                          path);
        else
            osp_prof__say("osprey profiler: cannot write %s: %s; profiling disabled", path,
                          strerror(perr));
        pthread_mutex_unlock(&ps->session_lock);
        return false;
    }
    /* Atomic: the SIGPROF handler reads it (a late overflow signal of the last session's
     * counter may still arrive on a thread while this one starts). */
    __atomic_store_n(&ps->engine, NULL, __ATOMIC_RELAXED);
    ps->rate_hz = rate;
    ps->fd_budget = osp_prof__fd_budget();
    ps->period_ns = 1000000000ull / rate;
    ps->tick_ns = ps->period_ns;
    snprintf(ps->path, sizeof ps->path, "%s", path);
    osp_prof__store_free(&ps->store);
    ps->ticks = ps->late_ticks = 0;
    memset(ps->unwind_ends, 0, sizeof ps->unwind_ends);
    ps->blocked_reads = ps->blocked_skips = 0;
    /* CFI tables of every loaded image, before the first sample can need them (§(l.1)).
     * Built here, before main, rather than by the sampler thread while the program runs
     * on: under ring delivery the rings would hold the first samples meanwhile, and they
     * hold 25 ms of them at 997 Hz, 5 ms at 10 kHz -- less than the build takes for a
     * large program or under a sanitizer (test_ring's 16 threads of 50 ms lost a fifth of
     * their samples as ring_full under AddressSanitizer when it was tried). */
    osp_prof__cfi_refresh();
    osp_prof__images_note();
    atomic_store(&ps->stop, 0);
    atomic_store(&ps->pid, getpid());

    pthread_mutex_lock(&ps->reg);
    free(ps->rows);
    ps->rows = NULL;
    ps->nrows = ps->rows_cap = 0;
    ps->threads_over_limit = 0;
    memset(ps->reg_dropped, 0, sizeof ps->reg_dropped);
    pthread_mutex_unlock(&ps->reg);

    atomic_store(&ps->start_mono_ns, osp_prof__mono_ns());
    ps->start_unix_ns = osp_prof__realtime_ns();

    pthread_mutex_lock(&ps->reg);
    ps->state = OSP_SESSION_RUNNING;
    ps->epoch++;
    pthread_mutex_unlock(&ps->reg);
    term_install(ps);
    /* The first engine that starts, from the one OSPREY_PROFILE_ENGINE names (§(l.3));
     * a forced engine that cannot start falls back to the next, with one line. */
    size_t first = engine_from_env();
    bool forced = first != 0 || (getenv("OSPREY_PROFILE_ENGINE") != NULL &&
                                 strcmp(getenv("OSPREY_PROFILE_ENGINE"), engines[0]->name) == 0);
    for (size_t i = first; i < NENGINES && ps->engine == NULL; i++) {
        int why = 0;
        ps->tick_ns = osp_prof__tick_ns(ps->period_ns, engines[i] != &osp_prof__engine_sampler);
        if (engines[i]->start(ps, &why)) {
            __atomic_store_n(&ps->engine, engines[i], __ATOMIC_RELAXED);
        } else {
            *cause = why;
            if (forced && i + 1 < NENGINES)
                osp_prof__say("osprey profiler: engine %s unavailable: %s; trying %s",
                              engines[i]->name, strerror(why), engines[i + 1]->name);
        }
    }
    if (ps->engine == NULL) {
        osp_prof__raw_release(&ps->raw);
        term_restore(ps);
        if (ps->term_sem_ok) sem_destroy(&ps->term_sem);
        ps->term_sem_ok = false;
        pthread_mutex_lock(&ps->reg);
        ps->state = OSP_SESSION_IDLE;
        pthread_mutex_unlock(&ps->reg);
        pthread_mutex_unlock(&ps->session_lock);
        return false;
    }
    atomic_store_explicit(&ps->on, 1, memory_order_release);
    uint64_t cpu_reg;
    if (cpu_start_ok && osp_prof__read_clock(CLOCK_THREAD_CPUTIME_ID, &cpu_reg) &&
        cpu_reg > cpu_start)
        ps->own_startup_ns = cpu_reg - cpu_start;
    osp_prof__register_current(ps, 0, "main");
    pthread_mutex_unlock(&ps->session_lock);
    return true;
}

/* Stop the session and write the file; the session lock is held by the caller.
 * `process_ending`: the process ends next (exit, _exit, a terminating signal), so the CFI
 * tables are left for the kernel to unmap: no walk can fault on them, and unmapping them
 * one by one only delays the exit (about half a millisecond for the C library's). */
static bool session_stop_locked(struct osp_prof_session *ps, bool process_ending) {
    pthread_mutex_lock(&ps->reg);
    bool running = ps->state == OSP_SESSION_RUNNING && !atomic_load(&ps->forked_child);
    if (running) ps->state = OSP_SESSION_STOPPING; /* no registrations from now on */
    pthread_mutex_unlock(&ps->reg);
    if (!running) return false;
    atomic_store(&ps->on, 0);
    ps->engine->stop(ps); /* the sampler is joined; the store is ours */
    /* Nothing is sampled from here: the owner's CPU until the file is written is the
     * profiler's ("profiler_cpu_ns"; until now it was in the owner's samples, if it is a
     * registered thread, up to the sampler's last read of its clock). */
    ps->own_stop_cpu_ok = osp_prof__read_clock(CLOCK_THREAD_CPUTIME_ID, &ps->own_stop_cpu_ns);
    /* Ending because of a terminating signal: our handler stays while the file is written,
     * so a copy of that signal arriving meanwhile is absorbed (on_term_signal), and
     * osp_prof__terminate puts the default action back itself to die of it. */
    if (atomic_load(&ps->term_sig) == 0) term_restore(ps);
    /* No sample will be taken: unmap the tables (once no walk still reads them). */
    if (!process_ending) osp_prof__cfi_reset();

    /* No thread is sampled any more: retire every slot (owners free them later). */
    pthread_mutex_lock(&ps->reg);
    for (size_t i = 0; i < ps->slots_hi; i++) {
        struct osp_prof_slot *s = &ps->slots[i];
        if (atomic_load_explicit(&s->state, memory_order_relaxed) != OSP_SLOT_ACTIVE) continue;
        osp_prof__slot_abandon_request(s, ps->store.dropped);
        atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
        atomic_store_explicit(&s->state, OSP_SLOT_RETIRED, memory_order_release);
    }
    for (int i = 0; i < OSP_DROP_COUNT; i++) ps->store.dropped[i] += ps->reg_dropped[i];
    pthread_mutex_unlock(&ps->reg);

    osp_prof__store_sort(&ps->store);
    bool ok = osp_prof__write_raw(ps, ps->path, osp_prof__realtime_ns());

    osp_prof__store_free(&ps->store);
    pthread_mutex_lock(&ps->reg);
    free(ps->rows);
    ps->rows = NULL;
    ps->nrows = ps->rows_cap = 0;
    ps->state = OSP_SESSION_IDLE;
    pthread_mutex_unlock(&ps->reg);
    return ok;
}

static bool session_stop(struct osp_prof_session *ps, bool process_ending) {
    struct osp_prof_nocancel nc;
    osp_prof__nocancel_enter(&nc);
    pthread_mutex_lock(&ps->session_lock);
    bool ok = session_stop_locked(ps, process_ending);
    if (ps->term_sem_ok && ps->state == OSP_SESSION_IDLE) {
        sem_destroy(&ps->term_sem);
        ps->term_sem_ok = false;
    }
    pthread_mutex_unlock(&ps->session_lock);
    osp_prof__nocancel_leave(&nc);
    return ok;
}

void osp_prof__terminate(struct osp_prof_session *ps, int sig) {
    /* The session owner may be stopping the session itself (exit) and joining this
     * thread: never wait for the lock it holds. */
    while (pthread_mutex_trylock(&ps->session_lock) != 0) {
        if (atomic_load(&ps->stop)) {
            /* An exit() is writing the file: a thread in _exit goes ahead (it would have
             * ended that exit() all the same). */
            if (sig == OSP_PROF_TERM_EXIT) atomic_store(&ps->exit_written, 1);
            return;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    session_stop_locked(ps, true);
    if (sig == OSP_PROF_TERM_EXIT) {
        /* The thread in _exit ends the process once it sees this; the lock stays held,
         * so an exit() racing with it waits. */
        atomic_store(&ps->exit_written, 1);
        return;
    }
    before_death();
    atomic_store(&g_term_dying, 1); /* the thread that received it dies too (await_death) */
    /* Die of the signal with the lock held, so an exit() racing with us waits. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    osp_prof__real_sigaction(sig, &dfl, NULL);
    kill(getpid(), sig);
    for (;;) pause(); /* every signal is blocked here: the process ends around us */
}

/* atexit: return from main or exit() from any thread (§(a)). A child made by a raw
 * fork or clone system call (no atfork handler ran) is inert too: its pid is not the
 * session's (§(l.3)). */
static void exit_hook(void) {
    struct osp_prof_session *ps = &osp_prof__session;
    if (atomic_load(&ps->forked_child)) return;
    if (getpid() != atomic_load(&ps->pid)) return;
    session_stop(ps, true);
    /* A terminating signal arrived and the program reached exit() before the sampler
     * thread could end the process with it (its thread returned into the program, see
     * self_sent): the file is written now; die of the signal, as the program would have
     * unprofiled, not with the exit status. */
    int sig = atomic_load(&ps->term_sig);
    for (int i = 0; i < OSP_PROF_TERM_SIGNALS; i++)
        if (sig == term_signals[i]) die_of(sig);
}

/* The _exit interposer of libosprey_prof.so: _exit runs no atexit handler, so the file
 * is written here -- on the sampler thread, as for a termination signal, because _exit
 * may be called from a signal handler that interrupted this thread inside malloc or a
 * lock. The caller waits for the file up to EXIT_WRITE_WAIT_NS, then exits regardless
 * (a write stuck behind a lock the interrupted code held). A forked child, the sampler
 * thread itself or a stopped session: nothing. */
#define EXIT_WRITE_WAIT_NS 5000000000ull

void osp_prof__exit_now(void) {
    struct osp_prof_session *ps = &osp_prof__session;
    if (atomic_load(&ps->forked_child) || !atomic_load(&ps->on) || !ps->term_sem_ok) return;
    if (getpid() != atomic_load(&ps->pid)) return;
    if (pthread_equal(pthread_self(), ps->sampler)) return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&ps->term_sig, &expected, OSP_PROF_TERM_EXIT))
        sem_post(&ps->term_sem);
    else if (expected != OSP_PROF_TERM_EXIT)
        return; /* a termination signal is being handled: it ends the process */
    uint64_t until = term_now_ns() + EXIT_WRITE_WAIT_NS;
    /* Only exit_written ends the wait: `stop` is set as soon as the sampler thread starts
     * stopping the session, before the file is written (waiting for either let this
     * thread end the process first, about one run in six). */
    while (!atomic_load(&ps->exit_written) && term_now_ns() < until) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

bool osp_prof__exec_follow(char *prof, size_t pcap, char *hz, size_t hcap) {
    struct osp_prof_session *ps = &osp_prof__session;
    if (atomic_load(&ps->forked_child) || !atomic_load(&ps->on)) return false;
    if (getpid() != atomic_load(&ps->pid)) return false;
    int n = snprintf(prof, pcap, "OSPREY_PROFILE=%s", ps->path);
    int m = snprintf(hz, hcap, "OSPREY_PROFILE_HZ=%u", (unsigned)ps->rate_hz);
    return n > 0 && (size_t)n < pcap && m > 0 && (size_t)m < hcap;
}

/* How long osp_prof__exec_prepare polls for the registry mutex. */
#define EXEC_HOLD_WAIT_NS 1000000000ull

void osp_prof__exec_prepare(struct osp_prof_exec_hold *h) {
    struct osp_prof_session *ps = &osp_prof__session;
    memset(h, 0, sizeof *h);
    if (atomic_load(&ps->forked_child) || !atomic_load(&ps->on)) return;
    if (getpid() != atomic_load(&ps->pid)) return;
    int saved = errno;
    uint64_t until = osp_prof__mono_ns() + EXEC_HOLD_WAIT_NS;
    long ns = 20000;
    bool held = true;
    while (pthread_mutex_trylock(&ps->reg) != 0) {
        if (osp_prof__mono_ns() >= until) {
            held = false; /* pending requests are still discarded below */
            break;
        }
        struct timespec ts = {0, ns};
        syscall(SYS_nanosleep, &ts, NULL); /* not the preload library's nanosleep */
        if (ns < 1000000) ns *= 2;
    }
    h->held = held;
    struct sigaction cur;
    if (osp_prof__real_sigaction(SIGPROF, NULL, &cur) == 0 && osp_prof__own_sigprof(&cur)) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        osp_prof__real_sigaction(SIGPROF, &ign, NULL); /* discards every pending SIGPROF */
        const struct sigaction *old = &ps->old_action;
        if (atomic_load_explicit(&ps->old_action_ready, memory_order_acquire) &&
            !(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN) {
            h->ign = true;
            h->ours = cur;
        } else {
            osp_prof__real_sigaction(SIGPROF, &cur, NULL);
        }
    }
    errno = saved;
}

void osp_prof__exec_failed(struct osp_prof_exec_hold *h) {
    int saved = errno;
    if (h->ign) osp_prof__real_sigaction(SIGPROF, &h->ours, NULL);
    if (h->held) pthread_mutex_unlock(&osp_prof__session.reg);
    h->ign = false;
    h->held = false;
    errno = saved;
}

static void boot_impl(void) {
    const char *out = getenv("OSPREY_PROFILE");
    if (out == NULL || out[0] == '\0') return; /* inert: nothing else happens */
    const char *hz_text = getenv("OSPREY_PROFILE_HZ");
    bool bad = false, clamped = false;
    uint32_t hz = osp_prof__parse_hz(hz_text, &bad, &clamped);
    if (bad) osp_prof__warn_bad_hz(2, hz_text);
    if (clamped) osp_prof__warn_hz_range(2, hz_text, hz);
    char path[OSP_PROF_PATH_MAX + 1];
    int rc = osp_prof__absolute_path(out, path, sizeof path);
    char shown[256];
    snprintf(shown, sizeof shown, "%s", out);
    /* Children never profile into, or overwrite, this process's file. */
    unsetenv("OSPREY_PROFILE");
    unsetenv("OSPREY_PROFILE_HZ");
    /* OSPREY_PROFILE_ENGINE is read by session_start and removed after it. */
    if (rc == ENAMETOOLONG) {
        osp_prof__say("osprey profiler: output path too long; profiling disabled");
        return;
    }
    if (rc != 0) {
        osp_prof__say("osprey profiler: cannot resolve %s: %s; profiling disabled", shown,
                      strerror(rc));
        return;
    }
    int cause = 0;
    if (!session_start(&osp_prof__session, path, hz, &cause) && cause != 0)
        osp_prof__say("osprey profiler: cannot start sampler: %s; profiling disabled",
                      strerror(cause));
    unsetenv("OSPREY_PROFILE_ENGINE");
    unsetenv("OSPREY_PROFILE_PERF_DELIVERY");
    unsetenv("OSPREY_PROFILE_PERF_KERNEL");
}

OSP_PROF_PUBLIC void osp_prof_boot(void) {
    pthread_once(&osp_prof__session.boot_once, boot_impl);
}

/* Boot at load time too, so any program linked with the runtime can be profiled. */
__attribute__((constructor)) static void osp_prof_load_constructor(void) {
    osp_prof_boot();
}

OSP_PROF_PUBLIC bool osp_prof_session_begin(const char *path, uint32_t rate_hz) {
    if (path == NULL || path[0] == '\0') return false;
    char abs[OSP_PROF_PATH_MAX + 1];
    if (osp_prof__absolute_path(path, abs, sizeof abs) != 0) return false;
    int cause = 0;
    struct osp_prof_nocancel nc;
    osp_prof__nocancel_enter(&nc);
    bool ok = session_start(&osp_prof__session, abs, rate_hz, &cause);
    osp_prof__nocancel_leave(&nc);
    return ok;
}

OSP_PROF_PUBLIC bool osp_prof_session_end(void) {
    return session_stop(&osp_prof__session, false);
}

#endif /* OSP_PROF_SAMPLER */
