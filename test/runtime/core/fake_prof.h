/*
 * fake_prof.h — a recording stand-in for the profiler hooks (osp_prof.h), linked into
 * the runtime/core unit tests instead of runtime/prof, so the tests can check that the
 * runtime calls the hooks as docs/spec/profiler.md §(d) and docs/spec/language.md §14.5 require:
 * fiber threads register as (id, "fiber") before the body and unregister after it and
 * before completion is signalled; every runtime wait sits inside a balanced blocking
 * region.
 */
#ifndef FAKE_PROF_H
#define FAKE_PROF_H

#include <stdbool.h>
#include <stdint.h>

/* Number of osp_prof_boot calls in this process. */
int64_t fake_prof_boots(void);

/* Whether the calling thread is registered; if so its fiber id and label. */
bool fake_prof_current(int64_t *fiber_id, const char **label);

/* Calling thread: current region nesting depth and outermost regions entered so far. */
int fake_prof_depth(void);
int64_t fake_prof_regions(void);

/* Whether a thread registered as fiber `fiber_id` has unregistered (ids < 65536). */
bool fake_prof_unregistered(int64_t fiber_id);

/* Registrations as (-1, "effect") and unregistrations of such threads, so far. */
int64_t fake_prof_effect_registrations(void);
int64_t fake_prof_effect_unregistrations(void);

/* Protocol violations seen so far (end without begin, register twice, unregister
 * inside a region or unregistered, ...). Must stay 0. */
int64_t fake_prof_violations(void);

#endif
