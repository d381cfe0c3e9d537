/*
 * Inactive profiler for targets without a sampler (Windows, Wasm, and any platform other
 * than Linux on x86-64 or arm64): every hook exists and does nothing, sessions cannot
 * start (docs/spec/profiler.md §(a) "Platforms"). Compiled everywhere; empty where the
 * Linux sampler (prof_session.c and friends) provides the real hooks.
 */
#include "prof_internal.h"

#if !OSP_PROF_SAMPLER

void osp_prof_boot(void) {}
void osp_prof_thread_register(int64_t fiber_id, const char *label) {
    (void)fiber_id;
    (void)label;
}
void osp_prof_thread_unregister(void) {}
void osp_prof_label_created_threads(const char *label) {
    (void)label;
}
void osp_prof_set_before_signal_death(void (*fn)(void)) {
    (void)fn;
}
void osp_prof_block_begin(void) {}
void osp_prof_block_end(void) {}
bool osp_prof_session_begin(const char *path, uint32_t rate_hz) {
    (void)path;
    (void)rate_hz;
    return false;
}
bool osp_prof_session_end(void) {
    return false;
}

#endif
