/* Recording profiler hooks for the runtime/core tests; see fake_prof.h. */
#include "fake_prof.h"
#include "osp_prof.h"
#include "osprey_rt.h"

#include <stdatomic.h>
#include <string.h>

#define MAX_IDS 65536

static atomic_llong boots;
static atomic_llong violations;
static atomic_bool unregistered[MAX_IDS];
static atomic_llong effect_registrations, effect_unregistrations;

static _Thread_local bool t_registered;
static _Thread_local int64_t t_id;
static _Thread_local char t_label[16];
static _Thread_local int t_depth;
static _Thread_local int64_t t_regions;

void osp_prof_boot(void) {
    atomic_fetch_add(&boots, 1);
}

void osp_prof_thread_register(int64_t fiber_id, const char *label) {
    if (t_registered) {
        atomic_fetch_add(&violations, 1);
        return;
    }
    /* A fiber registers before its body: it must still be running. */
    if (fiber_id > 0 && osp_fiber_state(fiber_id) != 0) atomic_fetch_add(&violations, 1);
    t_registered = true;
    t_id = fiber_id;
    if (fiber_id == -1 && label && strcmp(label, "effect") == 0)
        atomic_fetch_add(&effect_registrations, 1);
    strncpy(t_label, label ? label : "", sizeof t_label - 1);
}

void osp_prof_thread_unregister(void) {
    if (!t_registered || t_depth != 0) atomic_fetch_add(&violations, 1);
    /* ... and unregisters before its completion is signalled. */
    if (t_registered && t_id > 0 && osp_fiber_state(t_id) != 0) atomic_fetch_add(&violations, 1);
    if (t_registered && t_id > 0 && t_id < MAX_IDS) atomic_store(&unregistered[t_id], true);
    if (t_registered && t_id == -1) atomic_fetch_add(&effect_unregistrations, 1);
    t_registered = false;
}

/* Thread labels are the profiler's business; the fake only has to link. */
void osp_prof_label_created_threads(const char *label) {
    (void)label;
}

void osp_prof_set_before_signal_death(void (*fn)(void)) {
    (void)fn;
}

void osp_prof_block_begin(void) {
    if (t_depth++ == 0) t_regions++;
}

void osp_prof_block_end(void) {
    if (t_depth <= 0) {
        atomic_fetch_add(&violations, 1);
        return;
    }
    t_depth--;
}

bool osp_prof_session_begin(const char *path, uint32_t rate_hz) {
    (void)path;
    (void)rate_hz;
    return false;
}
bool osp_prof_session_end(void) {
    return false;
}

int64_t fake_prof_boots(void) {
    return atomic_load(&boots);
}
bool fake_prof_current(int64_t *fiber_id, const char **label) {
    if (fiber_id) *fiber_id = t_id;
    if (label) *label = t_label;
    return t_registered;
}
int fake_prof_depth(void) {
    return t_depth;
}
int64_t fake_prof_regions(void) {
    return t_regions;
}
bool fake_prof_unregistered(int64_t fiber_id) {
    return fiber_id > 0 && fiber_id < MAX_IDS && atomic_load(&unregistered[fiber_id]);
}
int64_t fake_prof_violations(void) {
    return atomic_load(&violations);
}
int64_t fake_prof_effect_registrations(void) {
    return atomic_load(&effect_registrations);
}
int64_t fake_prof_effect_unregistrations(void) {
    return atomic_load(&effect_unregistrations);
}
