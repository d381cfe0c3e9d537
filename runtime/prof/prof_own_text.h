/*
 * prof_own_text.h — included last by each of the profiler's source files (never by a
 * test or by the language runtime): every function the file defines after it goes into
 * section `osp_prof_text`, whose bounds the linker provides, so that an on-CPU sample
 * whose pc lies there is known as the profiler's own work on a program thread (a waiting
 * stack's capture, a thread's registration) and is counted in the raw profile's
 * "profiler_cpu_ns" instead of among the program's samples (osp_prof__own_pc in
 * prof_internal.h; docs/profiler-runtime.md "The raw profile").
 */
#include "prof_internal.h"

#if OSP_PROF_OWN_TEXT
#pragma clang section text = "osp_prof_text"
#endif
