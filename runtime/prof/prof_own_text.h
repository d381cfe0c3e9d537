/*
 * prof_own_text.h — included last by each of the profiler's source files (never by a
 * test or by the language runtime): every function the file defines after it goes into
 * section `osp_prof_text` (the profiler's work), or `osp_prof_wrap` in the files of
 * wrappers (prof_preload.c, prof_interpose.c), whose bounds the linker provides, so that
 * an on-CPU sample taken in the profiler's work on a program thread (a waiting stack's
 * capture, a region's clock readings, a thread's registration) is known as such and is
 * counted in the raw profile's "profiler_cpu_ns" instead of among the program's samples
 * (osp_prof__own_stack in prof_internal.h; docs/profiler-runtime.md "The raw profile").
 */
#include "prof_internal.h"

#if OSP_PROF_OWN_TEXT
#if defined(OSP_PROF_WRAPPER_FILE)
/* A file of wrappers (defined before including this header): functions that call the
 * program's code or a real function on the program's behalf go into `osp_prof_wrap`
 * (osp_prof__own_stack: time below them is the program's). */
#pragma clang section text = "osp_prof_wrap"
#else
#pragma clang section text = "osp_prof_text"
#endif
#endif
