/*
 * osp_prof.h — the sampling profiler's public hooks.
 *
 * Source: profiler specification [PROF-ACTIVATE-ENV], [PROF-COLLECT-REGISTRY] and
 * ../shared/spec/PROFILER.md §(a) and §(d). Every hook is a no-op unless the
 * profiler is active (OSPREY_PROFILE set at boot, or a test session started).
 * None of them allocate on behalf of the caller or return owned memory.
 */
#ifndef OSP_PROF_H
#define OSP_PROF_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Boot the profiler ([PROF-ACTIVATE-ENV], PROFILER.md §(a)). Idempotent; called first
 * thing by generated `main` (through osp_rt_start) and from a load-time constructor.
 * When OSPREY_PROFILE is unset or empty it does nothing else. When set it validates
 * OSPREY_PROFILE / OSPREY_PROFILE_HZ, removes both from the environment, starts the
 * sampler thread, registers the calling thread as fiber 0 "main" and arranges for the
 * raw profile to be written at normal exit. Problems are one-line stderr warnings;
 * the program is never stopped.
 */
void osp_prof_boot(void);

/*
 * Register the calling thread for sampling as fiber `fiber_id` with `label`
 * (PROFILER.md §(d)). `label` is copied (cut to at most 15 bytes on a UTF-8 boundary);
 * the caller keeps ownership. No-op when inactive or when the thread is already
 * registered. Call sites: main thread (0, "main"), fiber threads (id, "fiber"),
 * effect-continuation threads (-1, "effect").
 */
void osp_prof_thread_register(int64_t fiber_id, const char *label);

/*
 * Unregister the calling thread: after this returns it is never signalled or sampled
 * again. Idempotent; no-op when inactive. A thread that exits registered is
 * unregistered automatically by a thread-exit destructor.
 */
void osp_prof_thread_unregister(void);

/*
 * Mark the start / end of a runtime wait (sleep, await, channel wait, continuation
 * hand-off). begin captures the caller's own stack as its blocking stack; while inside
 * the region the thread is sampled as waiting with that stack and is never signalled.
 * Nest by depth (only the outermost pair acts). Never lock, never allocate; no-ops when
 * inactive or unregistered. Async-signal-safe is not required of callers.
 */
void osp_prof_block_begin(void);
void osp_prof_block_end(void);

/*
 * Test-only sessions (PROFILER.md §(d)): start sampling at `rate_hz` (clamped to
 * 10..10000) without the environment, registering the calling thread as fiber 0
 * "main"; `path` is where osp_prof_session_end writes the raw profile. Return false
 * on failure (already active, sampler thread could not start, write failed).
 */
bool osp_prof_session_begin(const char *path, uint32_t rate_hz);
bool osp_prof_session_end(void);

#ifdef __cplusplus
}
#endif

#endif /* OSP_PROF_H */
