/*
 * prof_engine_timer.c — the kernel-timed sampling engines (§(l.3)): "perf_event" (one
 * perf_event_open software task-clock counter per thread, user-only, whose overflow
 * signal is routed to that thread with F_SETOWN_EX(F_OWNER_TID) + F_SETSIG(SIGPROF)) and
 * "cpu_timer" (one timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) timer per
 * thread). Both timers count the thread's own CPU time, so they fire only while it runs
 * and a blocked thread is never signalled; the handler (prof_handler.c) takes the sample
 * on the thread itself and re-arms the timer with a period drawn from [0.7p, 1.3p).
 * The sampler thread still runs (prof_sampler.c): it drains the rings and records
 * waiting samples, but never signals a thread.
 *
 * Who runs what: start/stop on the session owner under the session lock; the
 * thread_registered / thread_unregistered hooks on the thread itself under the registry
 * mutex (SIGPROF blocked while it unregisters); osp_prof__ktimer_rearm in signal context
 * on the thread; fork_child in a forked child (async-signal-safe calls only).
 *
 * Source: docs/spec/profiler.md §(l.3), §(b.3) "Teardown", §(d).
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "prof_session.h"

/* ---- perf_event ----------------------------------------------------------------------- */

/* A task-clock counter of the calling thread (`tid`) that will signal it with SIGPROF
 * every `period_ns` of its user-mode CPU time, set up but not counting yet (perf_enable
 * starts it). Returns the descriptor (>= OSP_PROF_FD_MIN) or -1 with errno set. */
static int perf_open(pid_t tid, uint64_t period_ns) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = period_ns;
    a.wakeup_events = 1;
    a.disabled = 1;
    /* User-only: allowed at perf_event_paranoid 2, and never a signal that becomes pending
     * inside a system call. Counting kernel mode too (allowed at paranoid <= 1) was
     * measured to make blocking calls return EINTR: an expiry on the way into a wait
     * leaves the signal pending, and the wait returns at once (bench/prof_engines.sh part
     * 1: 992 EINTR in 1.5 s at 10 kHz, 27 at 997 Hz). */
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -1;
    fd = osp_prof__fd_high(fd);
    if (fd < 0) return -1;
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
        fcntl(fd, F_SETFL, fl | O_ASYNC) != 0 || ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0) {
        int e = errno;
        osp_prof__close_nc(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Start a counter of perf_open; on failure it is closed. Returns 0 or -1 with errno. */
static int perf_enable(int fd) {
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0) return 0;
    int e = errno;
    osp_prof__close_nc(fd);
    errno = e;
    return -1;
}

/* ---- per-thread timers ----------------------------------------------------------------- */

/* The shortest period the kernel's software timers accept (perf: 10 µs). */
#define MIN_PERIOD_NS 10000ull
/* CPU time between two new draws of a perf_event counter's period (see below). */
#define REJITTER_NS   4000000ull

/* Samples of a perf_event counter that share one drawn period: one draw per REJITTER_NS
 * of CPU time, at least one per sample. */
static uint32_t rejitter_every(const struct osp_prof_session *ps) {
    uint64_t k = REJITTER_NS / (ps->period_ns ? ps->period_ns : 1);
    return k < 1 ? 1 : k > 1000 ? 1000 : (uint32_t)k;
}

/* Give the calling thread (slot `s`, already active) its timer of `kind`. On failure
 * the slot keeps OSP_KTIMER_NONE. */
static void ktimer_create(struct osp_prof_session *ps, struct osp_prof_slot *s, int kind) {
    s->ktimer_kind = OSP_KTIMER_NONE;
    s->h_rng = osp_prof__mono_ns() ^ ((uint64_t)s->tid << 20) ^ 0x9E3779B97F4A7C15ull;
    if (s->h_rng == 0) s->h_rng = 1;
    s->h_cpu_last = s->sm.cpu_req; /* the CPU clock read at registration */
    /* The first due time comes from the residual distribution of the periods (so the
     * expected count of a thread's samples is its CPU time over the period from its
     * start), but never sooner than half a period: a counter that expires again and
     * again while its thread is still in the kernel (here, on its way out of the ioctl
     * that enabled it) is dropped each time but costs a timer interrupt each time, and
     * with a first period of 10 µs threads were measured spending hundreds of
     * milliseconds of CPU in that interrupt storm (64 threads at 997 Hz on this virtual
     * machine). Flooring it loses 0.125 samples per thread on average; a first period
     * drawn like the others lost 0.5. */
    uint64_t first = osp_prof__first_due_ns(&s->h_rng, ps->period_ns);
    if (first < ps->period_ns / 2) first = ps->period_ns / 2;
    if (first < MIN_PERIOD_NS) first = MIN_PERIOD_NS;
    s->h_next_due = s->h_cpu_last + first;
    /* perf_event: the first sample draws the first real period (the kernel keeps the
     * period it was opened with until told otherwise). */
    s->h_left = 1;
    if (kind == OSP_KTIMER_PERF) {
        int fd = perf_open(s->tid, first);
        if (fd < 0) return;
        /* The slot knows its counter before the counter runs: a signal of it that the
         * handler did not recognise would not re-arm it, and with a period shorter than
         * a signal's round trip (delivery, handler, sigreturn: over 70 µs on a loaded
         * virtual machine) the thread then took signal after signal at the same
         * instruction -- threads were measured spending seconds of CPU inside their
         * registration at 10 kHz. */
        s->perf_fd = fd;
        s->ktimer_kind = kind;
        atomic_store_explicit(&s->ktimer_armed, 1, memory_order_release);
        if (perf_enable(fd) != 0) {
            atomic_store_explicit(&s->ktimer_armed, 0, memory_order_release);
            s->ktimer_kind = OSP_KTIMER_NONE;
        }
        return;
    } else {
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGPROF;
        ev.sigev_value.sival_ptr = s;
#ifdef sigev_notify_thread_id
        ev.sigev_notify_thread_id = s->tid;
#else
        ev._sigev_un._tid = s->tid;
#endif
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &s->posix_timer) != 0) return;
        struct itimerspec its = {{0, 0},
                                 {(time_t)(first / 1000000000ull), (long)(first % 1000000000ull)}};
        if (timer_settime(s->posix_timer, 0, &its, NULL) != 0) {
            timer_delete(s->posix_timer);
            return;
        }
    }
    s->ktimer_kind = kind;
    atomic_store_explicit(&s->ktimer_armed, 1, memory_order_release);
}

void osp_prof__ktimer_rearm(struct osp_prof_session *ps, struct osp_prof_slot *s,
                            uint64_t cpu_now) {
    if (!atomic_load_explicit(&s->ktimer_armed, memory_order_acquire)) return;
    if (s->ktimer_kind == OSP_KTIMER_PERF) {
        /* The kernel restarts the counter's timer by itself at every overflow, from the
         * overflow, with the current period, whatever the signal's delivery and this
         * handler cost. Setting a new period (PERF_EVENT_IOC_PERIOD) restarts the timer
         * from the ioctl instead, and the ioctl was measured at about 15 µs of CPU time
         * (two timer reprogrammings; more in a virtual machine): drawn for every sample,
         * it cost 15 % of the CPU and 12 % of the samples at 10 kHz, 1.5 % of both at
         * 997 Hz. So a period is drawn once per REJITTER_NS of CPU time (every 4th sample
         * at 997 Hz, every 40th at 10 kHz) and the samples in between keep it
         * (docs/profiler-runtime.md "Sampling engines").
         *
         * Samples are due on a schedule of CPU-time deadlines, as with cpu_timer: the
         * sample that draws a period was due at h_next_due, and the next one that draws
         * is due k periods later. The period set now is the drawn one less 1/k of
         * this sample's lateness, so the schedule, not the kernel's timer, decides the
         * long-run count: one sample per period of the thread's CPU clock. Without
         * it, 2.5 to 4 % of the samples were missing (measured, bench/prof_engines.sh):
         * expiries the kernel drops while the thread is in kernel mode (exclude_kernel;
         * counting kernel mode too made blocking calls return EINTR), a second overflow
         * while the first signal is pending (coalesced), and the elapsed part of a
         * period each ioctl throws away. A thread more than k periods off the schedule
         * (it ran in the kernel for long) restarts it from now: those samples are lost,
         * and counted (cpu_unsampled). */
        if (s->h_left > 1) {
            s->h_left--;
            return;
        }
        uint32_t k = rejitter_every(ps);
        uint64_t w = osp_prof__jitter_ns(&s->h_rng, ps->period_ns);
        int64_t late = (int64_t)(cpu_now - s->h_next_due);
        int64_t span = (int64_t)k * (int64_t)ps->period_ns;
        if (late > span || late < -span) {
            s->h_next_due = cpu_now;
            late = 0;
        }
        /* Within [0.8w, 1.25w]: the correction makes up a few per cent of lost samples,
         * and never more. Losses grow with the time the thread spends in the kernel, our
         * own signal deliveries included (about 50 µs each, measured on this loaded
         * virtual machine); periods shortened without bound would add deliveries, hence
         * losses, hence shorter periods. What the clamp leaves is counted, as
         * cpu_unsampled. */
        uint64_t period = osp_prof__catch_up_period(w, late, k, MIN_PERIOD_NS);
        /* The schedule advances by k nominal periods, not by the drawn ones: the count
         * then stays within a few samples of CPU time over the period instead of
         * wandering with the sum of the draws (k samples share each draw, so that walk
         * was measured at about 10 samples in 400, test_capture's rate case), and the
         * drawn period still moves every group of samples by up to 0.3 of a group. */
        s->h_next_due += (uint64_t)k * ps->period_ns;
        s->h_left = k;
        ioctl(s->perf_fd, PERF_EVENT_IOC_PERIOD, &period);
        return;
    }
    /* cpu_timer: samples are due at CPU-time deadlines, each a jittered period after the
     * previous one, so the time it takes to deliver the signal and run this handler is
     * not added to every period: the long-run count is CPU time / period. A thread more
     * than two periods behind (samples skipped while it was in the kernel) restarts from
     * now rather than catching up in a burst. A catch-up period is never shorter than 0.3
     * of the period. (The kernel checks CPU-time timers at its scheduler tick only, so
     * this engine samples at most CONFIG_HZ times per CPU-second; each sample's weight
     * is the CPU time measured since the previous one, so CPU time stays right.) */
    uint64_t min_gap =
        ps->period_ns * 3 / 10 > MIN_PERIOD_NS ? ps->period_ns * 3 / 10 : MIN_PERIOD_NS;
    uint64_t due = s->h_next_due + osp_prof__jitter_ns(&s->h_rng, ps->period_ns);
    if (due < cpu_now + min_gap || due > cpu_now + 2 * ps->period_ns) {
        if (due < cpu_now + min_gap && cpu_now + min_gap - due <= 2 * ps->period_ns)
            due = cpu_now + min_gap;
        else
            due = cpu_now + osp_prof__jitter_ns(&s->h_rng, ps->period_ns);
    }
    s->h_next_due = due;
    if (s->ktimer_kind == OSP_KTIMER_POSIX) {
        struct itimerspec its = {{0, 0},
                                 {(time_t)(due / 1000000000ull), (long)(due % 1000000000ull)}};
        timer_settime(s->posix_timer, TIMER_ABSTIME, &its, NULL);
    }
}

/* Stop a slot's timer; `release` also closes / deletes it. Under the registry mutex. */
static void ktimer_disarm(struct osp_prof_slot *s, bool release) {
    if (s->ktimer_kind == OSP_KTIMER_NONE) return;
    atomic_store_explicit(&s->ktimer_armed, 0, memory_order_release);
    if (s->ktimer_kind == OSP_KTIMER_PERF) {
        ioctl(s->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
        if (release) osp_prof__close_nc(s->perf_fd);
    } else {
        struct itimerspec zero;
        memset(&zero, 0, sizeof zero);
        timer_settime(s->posix_timer, 0, &zero, NULL);
        if (release) timer_delete(s->posix_timer);
    }
    if (release) s->ktimer_kind = OSP_KTIMER_NONE;
}

void osp_prof__ktimer_disarm_all(struct osp_prof_session *ps, bool release) {
    for (size_t i = 0; i < ps->slots_hi; i++) ktimer_disarm(&ps->slots[i], release);
}

/* ---- the engines ------------------------------------------------------------------------ */

/* Probe that the calling thread can get a timer of `kind`, then start like the sampler. */
static bool timer_start(struct osp_prof_session *ps, int kind, int *cause) {
    if (kind == OSP_KTIMER_PERF) {
        int fd = perf_open((pid_t)syscall(SYS_gettid), ps->period_ns);
        if (fd < 0 || perf_enable(fd) != 0) {
            *cause = errno;
            return false;
        }
        osp_prof__close_nc(fd);
    } else {
        timer_t t;
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_NONE;
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) != 0) {
            *cause = errno;
            return false;
        }
        timer_delete(t);
    }
    return osp_prof__engine_start_common(ps, cause);
}

static bool perf_start(struct osp_prof_session *ps, int *cause) {
    return timer_start(ps, OSP_KTIMER_PERF, cause);
}
static bool cpu_timer_start(struct osp_prof_session *ps, int *cause) {
    return timer_start(ps, OSP_KTIMER_POSIX, cause);
}

static void perf_registered(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    if (!atomic_load(&ps->handler_lost)) ktimer_create(ps, s, OSP_KTIMER_PERF);
}
static void cpu_timer_registered(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    if (!atomic_load(&ps->handler_lost)) ktimer_create(ps, s, OSP_KTIMER_POSIX);
}

/* On the thread itself with SIGPROF blocked: no handler of ours is running on it, so the
 * timer can go at once. */
static void timer_unregistered(struct osp_prof_session *ps, struct osp_prof_slot *s) {
    (void)ps;
    ktimer_disarm(s, true);
}

/* The sampler thread first (its teardown drains every ring), then every timer, then the
 * program's action: no signal of ours can be generated after the action is restored. */
static void timer_stop(struct osp_prof_session *ps) {
    osp_prof__engine_stop_thread(ps);
    pthread_mutex_lock(&ps->reg);
    osp_prof__ktimer_disarm_all(ps, true);
    pthread_mutex_unlock(&ps->reg);
    osp_prof__engine_restore_action(ps);
}

/* A forked child: the descriptors are copies of the parent's threads' counters (POSIX
 * timers are not inherited); close them, give back the program's SIGPROF action. */
static void timer_fork_child(struct osp_prof_session *ps) {
    for (size_t i = 0; i < ps->slots_hi; i++) {
        struct osp_prof_slot *s = &ps->slots[i];
        atomic_store_explicit(&s->ktimer_armed, 0, memory_order_relaxed);
        if (s->ktimer_kind == OSP_KTIMER_PERF) osp_prof__close_nc(s->perf_fd);
        s->ktimer_kind = OSP_KTIMER_NONE;
    }
    if (atomic_load(&ps->old_action_ready)) sigaction(SIGPROF, &ps->old_action, NULL);
}

const struct osp_prof_engine osp_prof__engine_perf_event = {
    .name = OSP_RAW_ENGINE_PERF_EVENT,
    .start = perf_start,
    .stop = timer_stop,
    .thread_registered = perf_registered,
    .thread_unregistered = timer_unregistered,
    .fork_child = timer_fork_child,
};

const struct osp_prof_engine osp_prof__engine_cpu_timer = {
    .name = OSP_RAW_ENGINE_CPU_TIMER,
    .start = cpu_timer_start,
    .stop = timer_stop,
    .thread_registered = cpu_timer_registered,
    .thread_unregistered = timer_unregistered,
    .fork_child = timer_fork_child,
};

#endif /* OSP_PROF_SAMPLER */
