/*
 * Inactive profiler: every hook does nothing. Used until the Linux sampler lands, and
 * permanently on targets without a sampler (Windows, Wasm) — PROFILER.md §(a).
 */
#include "osp_prof.h"

void osp_prof_boot(void) {}
void osp_prof_thread_register(int64_t fiber_id, const char *label) { (void)fiber_id; (void)label; }
void osp_prof_thread_unregister(void) {}
void osp_prof_block_begin(void) {}
void osp_prof_block_end(void) {}
bool osp_prof_session_begin(const char *path, uint32_t rate_hz) { (void)path; (void)rate_hz; return false; }
bool osp_prof_session_end(void) { return false; }
