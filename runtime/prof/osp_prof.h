/*
 * osp_prof.h — the sampling profiler's public hooks.
 *
 * Source: profiler specification [PROF-ACTIVATE-ENV], [PROF-COLLECT-REGISTRY] and
 * docs/spec/profiler.md §(a) and §(d); user guide docs/profiler-runtime.md.
 *
 * Every hook is a no-op unless the profiler is active (OSPREY_PROFILE set at boot, or a
 * test session started); inactive, each costs about one function call. None of them
 * allocate on behalf of the caller or return owned memory. All are thread-safe. None is
 * async-signal-safe except as stated. On targets without a sampler (Windows, Wasm, any
 * platform other than Linux on x86-64 or arm64) every hook exists and does nothing.
 */
#ifndef OSP_PROF_H
#define OSP_PROF_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Boot the profiler ([PROF-ACTIVATE-ENV], docs/spec/profiler.md §(a)). Idempotent: only the first
 * call in a process acts. Called first thing by generated `main` (through osp_rt_start)
 * and from a load-time constructor, so any program linked with the runtime boots before
 * `main`. With OSPREY_PROFILE unset or empty it does nothing else (no thread, no signal
 * handler, no file). Otherwise it reads OSPREY_PROFILE_HZ (rate in Hz, clamped to
 * 10..10000, default 997), resolves the output path against the working directory,
 * removes both variables from the environment, installs a fork handler (forked children
 * are inert), starts the sampler thread, registers the calling thread as fiber 0
 * "main", and arranges for the raw profile (docs/spec/profiler.md §(e)) to be written to the path
 * at normal exit (return from main or exit() from any thread). Problems are one-line
 * warnings on stderr prefixed "osprey profiler: "; the program always continues.
 */
void osp_prof_boot(void);

/*
 * Register the calling thread for sampling as fiber `fiber_id` with `label` (docs/spec/profiler.md
 * §(d)). `label` may be NULL (empty); it is copied, cut to at most 15 bytes on a UTF-8
 * boundary, and the caller keeps ownership. Appends a thread row (fiber_id, label) to
 * the profile. No-op when inactive, when the thread is already registered in this
 * session, or when all 1024 slots are taken (counted as threads_over_limit). Call
 * sites: main thread (0, "main", done by boot), fiber threads (id, "fiber") before the
 * fiber body, effect-continuation threads (-1, "effect").
 */
void osp_prof_thread_register(int64_t fiber_id, const char *label);

/*
 * Unregister the calling thread: after it returns the thread is never signalled or
 * sampled again. Idempotent; no-op when the thread is not registered. A thread that
 * exits registered (return from its start routine, pthread_exit, cancellation) is
 * unregistered automatically by a thread-exit destructor.
 */
void osp_prof_thread_unregister(void);

/*
 * Label the threads the calling thread creates from now on (`label`, a string with static
 * lifetime, e.g. "gc"), until it calls this again with NULL; docs/spec/profiler.md §(l.2).
 * For threads whose start routine does not say who made them: the runtime brackets the
 * collector's start-up with it, so Boehm GC's marker threads are "gc" even when the
 * collector is linked statically. Other threads get "gc" when their start routine lives in
 * libgc, else "thread". Thread-local; never fails; no-op when inactive.
 */
void osp_prof_label_created_threads(const char *label);

/*
 * Set the function the profiler calls just before it ends the process by re-raising a
 * terminating signal it caught (SIGINT, SIGTERM, SIGHUP, SIGPIPE at their default action;
 * docs/spec/profiler.md §(l.5)): after the raw file is written, on the sampler thread, or
 * in the signal handler itself when the profile cannot be written first. The Osprey runtime
 * passes its stdout flush, so what the program printed is not lost when it is interrupted
 * while profiled. `fn` must be async-signal-safe; NULL removes it. Never fails; no-op when
 * the profiler is inactive.
 */
void osp_prof_set_before_signal_death(void (*fn)(void));

/*
 * Mark the start / end of a runtime wait (sleep, await, channel send/receive, the
 * continuation hand-off, any wait on a condition variable or join). begin captures the
 * caller's own stack (frame 0 is begin's return address - 1, the call site) as the
 * thread's blocking stack; while inside the region the thread is sampled as waiting with
 * that stack and is never signalled, so the wait is never interrupted by the profiler.
 * Regions nest by depth: only the outermost begin captures and only the matching end
 * clears. Never lock, never allocate; no-ops when inactive or unregistered. An end
 * without a begin does nothing.
 */
void osp_prof_block_begin(void);
void osp_prof_block_end(void);

/*
 * Test-only sessions (docs/spec/profiler.md §(d)), independent of the environment.
 * osp_prof_session_begin starts sampling at `rate_hz` (clamped to 10..10000), registers
 * the calling thread as fiber 0 "main", and remembers `path` (resolved against the
 * working directory now) for the raw profile. Returns false if a session is already
 * running (including one started by boot), in a forked child of a profiled process, on
 * an empty or too long path, or if the sampler thread cannot start.
 * osp_prof_session_end stops sampling, restores the previous SIGPROF action, writes the
 * raw profile (temporary file in the same directory, mode 0600, renamed into place) and
 * returns true on success; false if no session is running or the file could not be
 * written (then a one-line warning is printed). A later session starts empty. A session
 * still running at exit is ended and written by the exit hook.
 */
bool osp_prof_session_begin(const char *path, uint32_t rate_hz);
bool osp_prof_session_end(void);

#ifdef __cplusplus
}
#endif

#endif /* OSP_PROF_H */
